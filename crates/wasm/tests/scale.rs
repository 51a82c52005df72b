//! Functions with 100 000-deep nesting and hundreds of thousands of blocks,
//! generated with wasm-encoder: the builder and the rewriter must not recurse
//! over nesting depth, and the results must stay exact.

mod common;

use common::shapes::{exported, nested_blocks, nested_ifs, nested_loops, sequential};
use common::*;
use pathprof_techniques::FunctionPlan;
use pathprof_wasm::{analyze, instrument, read_counters, EdgeKind};

fn call(x: i64) -> Call {
    Call {
        export: "f".into(),
        args: vec![x],
    }
}

const DEPTH: u32 = 100_000;

#[test]
fn hundred_thousand_nested_blocks() {
    // Built, analysed and instrumented at full depth, executed at RUN_SIZE
    // (Cranelift spent 37 s on the 100 000-deep one: see RUN_SIZE).
    for (depth, execute) in [(DEPTH, false), (RUN_SIZE, true)] {
        let bytes = exported(&nested_blocks(depth));
        let info = analyze(&bytes).unwrap();
        let cfg = info.functions[0].as_ref().unwrap();
        // B2 -BrIf-> J, B2 -> B3 (the `depth` ends) -> J -> EXIT.
        assert_eq!((cfg.cfg.num_nodes(), cfg.cfg.num_edges()), (5, 5));
        let plans = plans_with(&info, slot_plan);
        let out = instrument(&bytes, &info, &plans, &[]).unwrap();
        if !execute {
            continue;
        }
        let calls = [call(0), call(5), call(0)];
        let r = run(&out.bytes, &calls);
        assert_eq!(r.outcomes, run(&bytes, &calls).outcomes);
        let raw = read_counters(&out.layout.functions[0], r.counters.as_ref().unwrap()).unwrap();
        // Edges: Entry, BrIf (taken once), not-taken (twice), B3 -> J (twice), J -> EXIT.
        let mut slots = raw.slots.clone();
        slots.sort();
        assert_eq!(slots, vec![1, 2, 2, 3, 3]);
    }
}

#[test]
fn hundred_thousand_nested_loops_with_a_conditional_backedge() {
    for (depth, execute) in [(DEPTH, false), (RUN_SIZE, true)] {
        let bytes = exported(&nested_loops(depth));
        let info = analyze(&bytes).unwrap();
        let cfg = info.functions[0].as_ref().unwrap();
        // The entry block is the header of every loop: H -BrIf-> H, H -> B3 -> EXIT.
        assert_eq!((cfg.cfg.num_nodes(), cfg.cfg.num_edges()), (4, 4));
        let plans = plans_with(&info, slot_plan);
        let out = instrument(&bytes, &info, &plans, &[]).unwrap();
        if !execute {
            continue;
        }
        let calls = [call(4), call(1)];
        let r = run(&out.bytes, &calls);
        assert_eq!(r.outcomes, run(&bytes, &calls).outcomes);
        let raw = read_counters(&out.layout.functions[0], r.counters.as_ref().unwrap()).unwrap();
        // Entry 2, backedge 3 (x = 3, 2, 1), loop exit 2, function exit 2.
        let mut slots = raw.slots.clone();
        slots.sort();
        assert_eq!(slots, vec![2, 2, 2, 3]);
    }
}

fn sum_by_kind(f: &pathprof_wasm::FunctionCfg, slots: &[u64], k: EdgeKind) -> u64 {
    slots
        .iter()
        .zip(&f.edge_kinds)
        .filter(|(_, &kk)| kk == k)
        .map(|(&c, _)| c)
        .sum()
}

// Cranelift takes minutes on a function of 200 000 blocks, so the largest
// functions are built, analysed, instrumented and validated at full size,
// and executed at a smaller size of the same shape.
const RUN_SIZE: u32 = 3000;

#[test]
fn hundred_thousand_nested_ifs() {
    for (depth, execute) in [(DEPTH, false), (RUN_SIZE, true)] {
        let bytes = exported(&nested_ifs(depth));
        let info = analyze(&bytes).unwrap();
        let cfg = info.functions[0].as_ref().unwrap();
        // Per if: a then-block and a join; edges IfThen, IfElse and the
        // fall-through into the join.
        assert_eq!(cfg.cfg.num_nodes(), 3 + 2 * depth as usize);
        assert_eq!(cfg.cfg.num_edges(), 2 + 3 * depth as usize);
        let plans = plans_with(&info, slot_plan);
        let out = instrument(&bytes, &info, &plans, &[]).unwrap();
        if !execute {
            continue;
        }
        let calls = [call(3), call(-1)];
        let r = run(&out.bytes, &calls);
        assert_eq!(r.outcomes, run(&bytes, &calls).outcomes);
        let raw = read_counters(&out.layout.functions[0], r.counters.as_ref().unwrap()).unwrap();
        // x = 3 passes 3 ifs and fails the 4th; x = -1 fails the first.
        assert_eq!(sum_by_kind(cfg, &raw.slots, EdgeKind::IfThen), 3);
        assert_eq!(sum_by_kind(cfg, &raw.slots, EdgeKind::IfElse), 2);
        assert_eq!(sum_by_kind(cfg, &raw.slots, EdgeKind::Entry), 2);
    }
}

#[test]
fn two_hundred_thousand_blocks_in_sequence() {
    for (units, execute) in [(DEPTH, false), (RUN_SIZE, true)] {
        let bytes = exported(&sequential(units));
        let info = analyze(&bytes).unwrap();
        let cfg = info.functions[0].as_ref().unwrap();
        assert_eq!(cfg.cfg.num_nodes(), 3 + 2 * units as usize);
        assert_eq!(cfg.cfg.num_edges(), 2 + 3 * units as usize);
        let plans: Vec<Option<FunctionPlan>> = plans_with(&info, slot_plan);
        let out = instrument(&bytes, &info, &plans, &[]).unwrap();
        if !execute {
            continue;
        }
        let calls = [call(7), call(units as i64 + 1)];
        let r = run(&out.bytes, &calls);
        assert_eq!(r.outcomes, run(&bytes, &calls).outcomes);
        let raw = read_counters(&out.layout.functions[0], r.counters.as_ref().unwrap()).unwrap();
        // One taken br_if in all (x = 7); every other unit falls through
        // twice (not-taken edge, then into its join), plus one exit per call.
        assert_eq!(sum_by_kind(cfg, &raw.slots, EdgeKind::BrIf), 1);
        assert_eq!(
            sum_by_kind(cfg, &raw.slots, EdgeKind::Fallthrough),
            2 * (2 * units as u64 - 1) + 2
        );
    }
}
