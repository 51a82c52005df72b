//! Scale figures for very large functions (issue 5): builds one of the
//! shapes of `tests/scale.rs` (the test support's `shapes`, included here)
//! at a given size, times `analyze`, Ball-Larus planning (numbering,
//! spanning tree, placement, truncation) and
//! `instrument` (rewrite + validation of the output), and optionally writes
//! the module so `pathprof instrument` can be timed on it end to end.
//!
//! ```sh
//! cargo run --release -p pathprof-wasm --example scale -- SHAPE N [OUT.wasm]
//! ```
//!
//! SHAPE: `nested-blocks` (N nested `block`s, one `br_if` to the outermost),
//! `nested-loops` (N nested `loop`s, a conditional backedge to the
//! outermost), `nested-ifs` (N nested `if`s: 2N+3 blocks, nesting depth N),
//! `sequential` (N `block; br_if 0; end` units in a row: 2N+3 blocks and 2^N
//! paths, so truncated (5.3) as soon as 2^N passes the limit, 2^40).
//! Prints one line: `shape n blocks edges paths cuts analyze_ms plan_ms
//! instrument_ms total_ms ns_per_block ns_per_n in_bytes out_bytes`.

use std::time::Instant;

use pathprof_techniques::ball_larus;

#[path = "../tests/common/mod.rs"]
mod common;

use common::shapes::{exported, nested_blocks, nested_ifs, nested_loops, sequential};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scale SHAPE N [OUT.wasm] (SHAPE: nested-blocks, nested-loops, nested-ifs, sequential)";
    let (shape, n) = match (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u32>().ok()),
    ) {
        (Some(s), Some(n)) if n > 0 => (s.as_str(), n),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let bytes = match shape {
        "nested-blocks" => exported(&nested_blocks(n)),
        "nested-loops" => exported(&nested_loops(n)),
        "nested-ifs" => exported(&nested_ifs(n)),
        "sequential" => exported(&sequential(n)),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    if let Some(out) = args.get(2) {
        std::fs::write(out, &bytes).expect("write the module");
    }

    let start = Instant::now();
    let t = Instant::now();
    let info = pathprof_wasm::analyze(&bytes).expect("analyze");
    let analyze_ms = ms(t);
    let cfg = info.functions[0].as_ref().expect("function analysed");
    let t = Instant::now();
    let planned = ball_larus::plan(&cfg.cfg, None, &ball_larus::Options::default()).expect("plan");
    let plan_ms = ms(t);
    let t = Instant::now();
    let out =
        pathprof_wasm::instrument(&bytes, &info, &[Some(planned.plan)], &[]).expect("instrument");
    let instrument_ms = ms(t);
    let total_ms = ms(start);
    let blocks = cfg.cfg.num_nodes();
    println!(
        "{shape} {n} blocks={blocks} edges={} paths={} cuts={} analyze_ms={analyze_ms:.1} plan_ms={plan_ms:.1} instrument_ms={instrument_ms:.1} total_ms={total_ms:.1} ns_per_block={:.0} ns_per_n={:.0} in_bytes={} out_bytes={}",
        cfg.cfg.num_edges(),
        planned.numbered.total,
        planned.numbered.cut_nodes.len(),
        total_ms * 1e6 / blocks as f64,
        total_ms * 1e6 / f64::from(n),
        bytes.len(),
        out.bytes.len(),
    );
}
