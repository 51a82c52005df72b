//! Measures the CFG builder and the rewriter in MB/s of code section.
//!
//! ```text
//! cargo run --release -p pathprof-wasm --example throughput [module.wasm ...]
//! ```
//! Without arguments it measures synthetic modules: many small functions with
//! mixed control flow, one function of 100 000 sequential branches, and
//! 100 000-deep nests; each with a dense plan (`CountSlot` on every edge) and
//! a sparse one shaped like Ball-Larus instrumentation.

use pathprof_graph::{Cfg, EdgeId};
use pathprof_techniques::{Action, EdgeActions, FunctionPlan, PathTable, Width};
use pathprof_wasm::{analyze, instrument, FunctionCfg};
use std::time::Instant;
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

#[path = "../tests/common/mod.rs"]
mod common;

use common::shapes::{module, nested_ifs, sequential};
use common::slot_plan;

/// A function mixing loops, ifs, br_if, br_table and straight-line code.
fn mixed(seed: u32) -> Function {
    let mut f = Function::new([(2, ValType::I32)]);
    for k in 0..40u32 {
        let c = (seed.wrapping_mul(2654435761).wrapping_add(k)) as i32;
        f.instruction(&I::Block(BlockType::Empty));
        f.instruction(&I::Loop(BlockType::Empty));
        f.instruction(&I::LocalGet(1))
            .instruction(&I::I32Const(c & 7))
            .instruction(&I::I32Add);
        f.instruction(&I::LocalTee(1))
            .instruction(&I::I32Const(100))
            .instruction(&I::I32GtU);
        f.instruction(&I::BrIf(1));
        f.instruction(&I::LocalGet(0))
            .instruction(&I::I32Const(3))
            .instruction(&I::I32And);
        f.instruction(&I::If(BlockType::Empty));
        f.instruction(&I::LocalGet(2))
            .instruction(&I::I32Const(1))
            .instruction(&I::I32Add)
            .instruction(&I::LocalSet(2));
        f.instruction(&I::Else);
        f.instruction(&I::LocalGet(2))
            .instruction(&I::I32Const(c))
            .instruction(&I::I32Xor)
            .instruction(&I::LocalSet(2));
        f.instruction(&I::End);
        f.instruction(&I::Block(BlockType::Empty));
        f.instruction(&I::LocalGet(2))
            .instruction(&I::I32Const(3))
            .instruction(&I::I32And);
        f.instruction(&I::BrTable([0u32, 1, 2].as_slice().into(), 0));
        f.instruction(&I::End);
        f.instruction(&I::LocalGet(1))
            .instruction(&I::I32Const(50))
            .instruction(&I::I32LtU);
        f.instruction(&I::BrIf(0));
        f.instruction(&I::End);
        f.instruction(&I::End);
        for _ in 0..4 {
            f.instruction(&I::LocalGet(0))
                .instruction(&I::I32Const(c))
                .instruction(&I::I32Mul)
                .instruction(&I::LocalSet(0));
        }
    }
    f.instruction(&I::LocalGet(2));
    f.instruction(&I::End);
    f
}

fn code_bytes(bytes: &[u8]) -> usize {
    wasmparser::Parser::new(0)
        .parse_all(bytes)
        .filter_map(|p| match p {
            Ok(wasmparser::Payload::CodeSectionStart { range, .. }) => Some(range.len()),
            _ => None,
        })
        .sum()
}

/// Roughly what Ball-Larus instruments: a register set on entry, an
/// increment on one edge in three (the chords), a count on every exit.
fn sparse(f: &FunctionCfg) -> FunctionPlan {
    let n = f.cfg.num_edges();
    let mut p = FunctionPlan::empty(n);
    p.registers = vec![Width::I64];
    p.paths = PathTable::Array { len: 1024 };
    p.edges = EdgeActions::from_fn(n, |e, a| {
        let (src, dst) = f.cfg.edge(EdgeId::new(e));
        if src == Cfg::ENTRY {
            a.push(Action::Set { reg: 0, value: 0 });
        } else if e % 3 == 0 {
            a.push(Action::Add {
                reg: 0,
                value: e as i64,
            });
        }
        if dst == Cfg::EXIT {
            a.push(Action::CountPath { reg: 0, offset: 0 });
        }
    });
    p
}

fn measure(name: &str, bytes: &[u8]) {
    let mb = code_bytes(bytes) as f64 / 1e6;
    let validate = |b: &[u8]| {
        let t = Instant::now();
        wasmparser::Validator::new().validate_all(b).expect("valid");
        t.elapsed().as_secs_f64()
    };
    let t = Instant::now();
    let info = analyze(bytes).expect("analyze");
    let t_analyze = t.elapsed().as_secs_f64();
    let v_in = validate(bytes);
    println!("{name}: code {mb:.2} MB");
    println!(
        "  analyze            {:7.1} MB/s ({t_analyze:.3} s; {:7.1} MB/s without validating the input)",
        mb / t_analyze,
        mb / (t_analyze - v_in)
    );
    for (plan_name, planner) in [
        (
            "dense (slot/edge)",
            slot_plan as fn(&FunctionCfg) -> FunctionPlan,
        ),
        ("sparse (BL-like)", sparse),
    ] {
        let plans: Vec<Option<FunctionPlan>> = info
            .functions
            .iter()
            .map(|f| f.as_ref().ok().map(planner))
            .collect();
        let t = Instant::now();
        let out = instrument(bytes, &info, &plans, &[]).expect("instrument");
        let t_instrument = t.elapsed().as_secs_f64();
        let v_out = validate(&out.bytes);
        println!(
            "  instrument {plan_name:<17} {:7.1} MB/s ({t_instrument:.3} s; {:7.1} MB/s without validating the output of {:.2} MB)",
            mb / t_instrument,
            mb / (t_instrument - v_out),
            out.bytes.len() as f64 / 1e6
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        for path in args {
            let bytes = std::fs::read(&path).expect("read module");
            measure(&path, &bytes);
        }
        return;
    }
    measure(
        "5000 mixed functions",
        &module(&(0..5000).map(mixed).collect::<Vec<_>>()),
    );
    measure(
        "100000 sequential branches",
        &module(&[sequential(100_000)]),
    );
    measure("100000 nested ifs", &module(&[nested_ifs(100_000)]));
}
