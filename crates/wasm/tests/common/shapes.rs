//! Generated functions of very deep nesting or very many blocks, each
//! `f(x: i32) -> i32`, and the modules that hold them: the shapes of
//! tests/scale.rs, which examples/scale.rs times and examples/throughput.rs
//! measures the builder and the rewriter on (the examples include this test
//! support module with `#[path]`).

use wasm_encoder::{
    BlockType, CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction as I,
    Module, TypeSection, ValType,
};

/// A module of `funcs`, each of type `(i32) -> i32`, none exported.
pub fn module(funcs: &[Function]) -> Vec<u8> {
    build(funcs, false)
}

/// A module of one function `f(i32) -> i32`, exported as `f`.
pub fn exported(f: &Function) -> Vec<u8> {
    build(std::slice::from_ref(f), true)
}

fn build(funcs: &[Function], export_first: bool) -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    m.section(&types);
    let mut fs = FunctionSection::new();
    for _ in funcs {
        fs.function(0);
    }
    m.section(&fs);
    if export_first {
        let mut exports = ExportSection::new();
        exports.export("f", ExportKind::Func, 0);
        m.section(&exports);
    }
    let mut code = CodeSection::new();
    for f in funcs {
        code.function(f);
    }
    m.section(&code);
    m.finish()
}

/// A function of no locals beyond `x`, its body written by `body`.
fn function(body: impl FnOnce(&mut Function)) -> Function {
    let mut f = Function::new([]);
    body(&mut f);
    f.instruction(&I::End);
    f
}

/// block x depth; br_if to the outermost block; end x depth; x + 1.
pub fn nested_blocks(depth: u32) -> Function {
    function(|f| {
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

/// loop x depth; x -= 1; br_if (x > 0) to the outermost loop; end x depth; x.
pub fn nested_loops(depth: u32) -> Function {
    function(|f| {
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

/// `if (x > i)` nested `depth` deep, then x: 2 * depth + 3 blocks.
pub fn nested_ifs(depth: u32) -> Function {
    function(|f| {
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

/// `units` x (block; x == k; br_if 0; end), then x: 2 * units + 3 blocks
/// and 2^units paths.
pub fn sequential(units: u32) -> Function {
    function(|f| {
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
