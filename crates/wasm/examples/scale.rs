//! Scale figures for very large functions (issue 5): builds one of the
//! shapes of `tests/scale.rs` at a given size, times `analyze`, Ball-Larus
//! planning (numbering, spanning tree, placement, truncation) and
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
use wasm_encoder::{
    BlockType, CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction as I,
    Module, TypeSection, ValType,
};

/// A module with one exported function `f(i32) -> i32` built by `body`.
fn module(body: impl FnOnce(&mut Function)) -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    m.section(&types);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    m.section(&funcs);
    let mut exports = ExportSection::new();
    exports.export("f", ExportKind::Func, 0);
    m.section(&exports);
    let mut f = Function::new([]);
    body(&mut f);
    f.instruction(&I::End);
    let mut code = CodeSection::new();
    code.function(&f);
    m.section(&code);
    m.finish()
}

fn nested_blocks(depth: u32) -> Vec<u8> {
    module(|f| {
        for _ in 0..depth {
            f.instruction(&I::Block(BlockType::Empty));
        }
        f.instruction(&I::LocalGet(0))
            .instruction(&I::BrIf(depth - 1));
        for _ in 0..depth {
            f.instruction(&I::End);
        }
        f.instruction(&I::LocalGet(0))
            .instruction(&I::I32Const(1))
            .instruction(&I::I32Add);
    })
}

fn nested_loops(depth: u32) -> Vec<u8> {
    module(|f| {
        for _ in 0..depth {
            f.instruction(&I::Loop(BlockType::Empty));
        }
        f.instruction(&I::LocalGet(0))
            .instruction(&I::I32Const(1))
            .instruction(&I::I32Sub)
            .instruction(&I::LocalTee(0))
            .instruction(&I::I32Const(0))
            .instruction(&I::I32GtS)
            .instruction(&I::BrIf(depth - 1));
        for _ in 0..depth {
            f.instruction(&I::End);
        }
        f.instruction(&I::LocalGet(0));
    })
}

fn nested_ifs(depth: u32) -> Vec<u8> {
    module(|f| {
        for i in 0..depth {
            f.instruction(&I::LocalGet(0))
                .instruction(&I::I32Const(i as i32))
                .instruction(&I::I32GtS);
            f.instruction(&I::If(BlockType::Empty));
        }
        for _ in 0..depth {
            f.instruction(&I::End);
        }
        f.instruction(&I::LocalGet(0));
    })
}

fn sequential(units: u32) -> Vec<u8> {
    module(|f| {
        for k in 0..units {
            f.instruction(&I::Block(BlockType::Empty))
                .instruction(&I::LocalGet(0))
                .instruction(&I::I32Const(k as i32))
                .instruction(&I::I32Eq)
                .instruction(&I::BrIf(0))
                .instruction(&I::End);
        }
        f.instruction(&I::LocalGet(0));
    })
}

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
        "nested-blocks" => nested_blocks(n),
        "nested-loops" => nested_loops(n),
        "nested-ifs" => nested_ifs(n),
        "sequential" => sequential(n),
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
