//! `pathprof-bench big-module`: a generated module of the size of a large
//! real program (issue 28, point 9: a 99 MB interpreter), to measure how
//! instrumenting, running and collecting scale with the module rather than
//! with what ran.
//!
//! `functions` workers `w(n: i32) -> i32`, each a loop of `n` iterations
//! over `chunks` four-way `br_table` dispatches and a two-way `if`, with
//! constants that differ per function so that no two bodies are equal.
//! `_start` calls `hot` of them, spread over the index space, `rounds`
//! times with `n` = `iterations`, and drops the results: most of the
//! module never runs, as in a large program on one workload. The module
//! has no imports: any engine runs it.

use wasm_encoder::{
    BlockType, CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction as I,
    MemorySection, MemoryType, Module, TypeSection, ValType,
};

/// What to generate.
#[derive(clap::Args, Clone, Debug)]
pub struct BigModuleArgs {
    /// Worker functions.
    #[arg(long, default_value_t = 100_000)]
    pub functions: u32,
    /// Dispatches per worker's loop body (each about 60 bytes of code).
    #[arg(long, default_value_t = 10)]
    pub chunks: u32,
    /// Workers `_start` calls.
    #[arg(long, default_value_t = 400)]
    pub hot: u32,
    /// Times `_start` calls each of them.
    #[arg(long, default_value_t = 50)]
    pub rounds: u32,
    /// Loop iterations of each call.
    #[arg(long, default_value_t = 2000)]
    pub iterations: u32,
    /// Where to write the module.
    #[arg(short = 'o', long)]
    pub output: std::path::PathBuf,
}

/// Writes the module; prints its size.
pub fn run(a: &BigModuleArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.functions > 0 && a.hot <= a.functions,
        "--hot must be at most --functions"
    );
    let bytes = module(a);
    std::fs::write(&a.output, &bytes)?;
    println!(
        "{}: {} functions, {:.1} MB",
        a.output.display(),
        a.functions + 1,
        bytes.len() as f64 / 1e6
    );
    Ok(())
}

fn module(a: &BigModuleArgs) -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    types.ty().function([], []);
    m.section(&types);
    let mut funcs = FunctionSection::new();
    for _ in 0..a.functions {
        funcs.function(0);
    }
    funcs.function(1);
    m.section(&funcs);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    m.section(&memories);
    let mut exports = ExportSection::new();
    exports.export("_start", ExportKind::Func, a.functions);
    exports.export("memory", ExportKind::Memory, 0);
    m.section(&exports);
    let mut code = CodeSection::new();
    for i in 0..a.functions {
        code.function(&worker(i, a.chunks));
    }
    code.function(&start(a));
    m.section(&code);
    m.finish()
}

/// Locals: 0 n (param), 1 acc, 2 i.
fn worker(seed: u32, chunks: u32) -> Function {
    let mut f = Function::new([(2, ValType::I32)]);
    let k = |j: u32, c: u32| (seed.wrapping_mul(2654435761) ^ (j * 97 + c * 13)) as i32 & 0xffff;
    f.instruction(&I::Loop(BlockType::Empty));
    for j in 0..chunks {
        // block b3 { block b2 { block b1 { block b0 { br_table on (acc + i) & 3 } ... } }
        for _ in 0..4 {
            f.instruction(&I::Block(BlockType::Empty));
        }
        f.instruction(&I::LocalGet(1));
        f.instruction(&I::LocalGet(2));
        f.instruction(&I::I32Add);
        f.instruction(&I::I32Const(3));
        f.instruction(&I::I32And);
        f.instruction(&I::BrTable(vec![0, 1, 2].into(), 3));
        for c in 0..4 {
            f.instruction(&I::End);
            add_const(&mut f, k(j, c));
            if c < 3 {
                f.instruction(&I::Br(2 - c));
            }
        }
        // if acc & 1 { acc ^= K } else { acc += i }
        f.instruction(&I::LocalGet(1));
        f.instruction(&I::I32Const(1));
        f.instruction(&I::I32And);
        f.instruction(&I::If(BlockType::Empty));
        f.instruction(&I::LocalGet(1));
        f.instruction(&I::I32Const(k(j, 7)));
        f.instruction(&I::I32Xor);
        f.instruction(&I::LocalSet(1));
        f.instruction(&I::Else);
        f.instruction(&I::LocalGet(1));
        f.instruction(&I::LocalGet(2));
        f.instruction(&I::I32Add);
        f.instruction(&I::LocalSet(1));
        f.instruction(&I::End);
    }
    // i += 1; loop while i < n
    f.instruction(&I::LocalGet(2));
    f.instruction(&I::I32Const(1));
    f.instruction(&I::I32Add);
    f.instruction(&I::LocalTee(2));
    f.instruction(&I::LocalGet(0));
    f.instruction(&I::I32LtS);
    f.instruction(&I::BrIf(0));
    f.instruction(&I::End);
    f.instruction(&I::LocalGet(1));
    f.instruction(&I::End);
    f
}

/// `acc += value`.
fn add_const(f: &mut Function, value: i32) {
    f.instruction(&I::LocalGet(1));
    f.instruction(&I::I32Const(value));
    f.instruction(&I::I32Add);
    f.instruction(&I::LocalSet(1));
}

/// `rounds` times: call each hot worker with `iterations`, dropping the
/// result. Local 0 counts the rounds.
fn start(a: &BigModuleArgs) -> Function {
    let mut f = Function::new([(1, ValType::I32)]);
    f.instruction(&I::Loop(BlockType::Empty));
    for h in 0..a.hot {
        let callee = (u64::from(h) * u64::from(a.functions) / u64::from(a.hot.max(1))) as u32;
        f.instruction(&I::I32Const(a.iterations as i32));
        f.instruction(&I::Call(callee));
        f.instruction(&I::Drop);
    }
    f.instruction(&I::LocalGet(0));
    f.instruction(&I::I32Const(1));
    f.instruction(&I::I32Add);
    f.instruction(&I::LocalTee(0));
    f.instruction(&I::I32Const(a.rounds as i32));
    f.instruction(&I::I32LtS);
    f.instruction(&I::BrIf(0));
    f.instruction(&I::End);
    f.instruction(&I::End);
    f
}
