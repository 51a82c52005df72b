//! The CFG builder: every defined function of a core module as an abstract
//! control-flow graph ([`pathprof_graph::Cfg`]: node 0 ENTRY, node 1 EXIT).
//!
//! # Model
//! - A basic block is a maximal run of instructions entered only at its first
//!   instruction. Calls do not end blocks. Block boundaries are: the start of
//!   a loop body (branch target), the point after the `end` of a block / if /
//!   try_table that some branch targets (a join block), both arms of `if`,
//!   and the point after every branch instruction.
//! - One edge ENTRY -> first block ([`EdgeKind::Entry`]).
//! - `return`, falling off the function's end, a branch to the function's
//!   label, `unreachable`, tail calls, `throw` and `throw_ref` are edges to
//!   EXIT: the path is counted just before the instruction executes.
//! - Arrival at a `try_table` catch target is an edge ENTRY -> the target
//!   block ([`EdgeKind::Catch`]): a new path begins there. One such edge per
//!   target label, shared by every catch clause that names it (a clause
//!   naming the function's own label gives ENTRY -> EXIT). Legacy exception
//!   handling is the same model: each `catch`/`catch_all` clause of a `try`
//!   begins a block entered by its own `Catch` edge from ENTRY (the code
//!   before the clause falls through to the `try`'s end, as before `else`),
//!   `rethrow` is an edge to EXIT as `throw_ref` is, and `delegate` ends its
//!   `try` as `end` does (where the body's exceptions go is the engine's
//!   business; whichever handler catches them begins a path from ENTRY). When an
//!   exception thrown by a callee (or a trap) unwinds through a function,
//!   the path in flight in that function is lost: nothing counts it. A
//!   `throw` in the function itself is an edge to EXIT, so its path counts.
//! - `br_table` gets one edge per distinct target label.
//! - Unreachable code (after an unconditional branch, up to the `end` or
//!   `else` that makes code reachable again) has no blocks, edges or sites.
//! - Edges are numbered in instruction order of the branch they stand for;
//!   the fall-through into a join block, and the false edge of an `if`
//!   without `else`, are numbered at the `end` that closes the construct.
//! - A loop that never exits (`loop br 0 end`) leaves blocks from which EXIT
//!   cannot be reached; the graph says so as it is.
//! - A block that has executed nothing yet (or only `block`/`loop` openers)
//!   when a `loop` starts becomes the loop header itself; the not-taken side
//!   of a conditional branch always gets a block of its own, even an empty
//!   one, so br_if / br_on_* / if-without-else make no parallel edges.
//! - Every reachable call instruction is a [`CallSite`], in code order
//!   ([`FunctionCfg::calls`]).
//!
//! Functions using instructions outside this model (the stack-switching
//! and custom-descriptor branches, which the validator rejects anyway) are
//! reported [`Unsupported`] and left untouched.

mod builder;
mod calls;
mod checked;
pub(crate) mod site;

use crate::error::Result;
use crate::module::{self, ModuleScan};
use pathprof_graph::{Cfg, EdgeId};
use serde::{Deserialize, Serialize};
use site::Site;

pub use calls::{CallSite, Callee};

/// How control crosses an edge.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EdgeKind {
    /// ENTRY -> first block.
    Entry,
    /// Sequential flow: into `end`/`else`/`loop`, off the end of the function
    /// (to EXIT), and the not-taken side of br_if / br_on_*.
    Fallthrough,
    /// `br` (to EXIT when it names the function's label).
    Br,
    /// Taken `br_if`.
    BrIf,
    /// A `br_table` target (one edge per distinct label).
    BrTable,
    /// `if` condition true: into the then-arm.
    IfThen,
    /// `if` condition false: into the else-arm, or past the `if` without one.
    IfElse,
    /// `return` (to EXIT).
    Return,
    /// `unreachable` (to EXIT).
    Unreachable,
    /// `return_call`, `return_call_indirect`, `return_call_ref` (to EXIT).
    TailCall,
    /// `throw` (to EXIT).
    Throw,
    /// `throw_ref`, or a legacy `rethrow` (to EXIT).
    ThrowRef,
    /// ENTRY -> the target of a try_table catch clause, or the first block
    /// of a legacy `catch`/`catch_all` handler.
    Catch,
    /// Taken `br_on_null`.
    BrOnNull,
    /// Taken `br_on_non_null`.
    BrOnNonNull,
    /// Taken `br_on_cast`.
    BrOnCast,
    /// Taken `br_on_cast_fail`.
    BrOnCastFail,
}

/// Where a basic block lies in the module.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockInfo {
    /// Module byte offset of the block's first instruction.
    pub offset: u32,
    /// Module byte offset just past its last instruction.
    pub end: u32,
    /// Number of instructions (structural ones such as `end` included).
    pub instrs: u32,
}

/// The CFG of one defined function, with what the rewriter needs to place
/// code on its edges.
#[derive(Clone, Debug)]
pub struct FunctionCfg {
    /// Index in the module's function index space (imports counted).
    pub func_index: u32,
    /// Name from the name section.
    pub name: Option<String>,
    pub cfg: Cfg,
    /// Per node; `None` for ENTRY and EXIT.
    pub blocks: Vec<Option<BlockInfo>>,
    /// Per edge.
    pub edge_kinds: Vec<EdgeKind>,
    /// The reachable call instructions (`call*`, `return_call*`), in code
    /// order; interprocedural plans name a call site by its index here.
    pub calls: Vec<CallSite>,
    pub(crate) sites: Vec<Site>,
    pub(crate) pad_edges: Vec<EdgeId>,
    pub(crate) func_pads: (u32, u32),
    /// Indices in `sites` of the constructs whose label has taken edges.
    pub(crate) padded_opens: Vec<u32>,
    /// Module offsets of every instruction, reachable or not, that the
    /// rewriter decodes (labels, branches, `else`, `end`), in code order; it
    /// copies the bytes between them as they are, and finds the extent of
    /// the loops it may peel from their opcodes.
    pub(crate) controls: Vec<u32>,
}

/// A function the builder does not model; it is left untouched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub func_index: u32,
    pub name: Option<String>,
    /// Module byte offset of the first unsupported instruction.
    pub offset: u32,
    pub reason: String,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "function {} at offset {:#x}: {}",
            self.func_index, self.offset, self.reason
        )
    }
}

/// The analysis of a whole module.
#[derive(Clone, Debug)]
pub struct ModuleInfo {
    /// Lower-case hex SHA-256 of the module bytes.
    pub module_hash: String,
    /// Number of imported functions: defined function `i` has module index
    /// `num_imported_funcs + i`.
    pub num_imported_funcs: u32,
    /// Per defined function, in order.
    pub functions: Vec<Result<FunctionCfg, Unsupported>>,
}

/// Validates a core module and builds the CFG of every defined function.
pub fn analyze(bytes: &[u8]) -> Result<ModuleInfo> {
    let module = crate::Scanned::validated(bytes)?;
    let functions = crate::par::map_chunked(&module.body_sizes(), |i| module.build(i))?;
    Ok(ModuleInfo {
        module_hash: module::module_hash(bytes),
        num_imported_funcs: module.num_imported_funcs(),
        functions,
    })
}

/// The CFG of defined function `i` of a scanned module (of `len` bytes), or
/// why it is not modelled; its body is validated with `validator` if given.
pub(crate) fn build_function(
    scan: &ModuleScan<'_>,
    i: usize,
    validator: Option<module::BodyValidator>,
    len: usize,
) -> Result<std::result::Result<FunctionCfg, Unsupported>> {
    let func_index = scan.num_imported_funcs + i as u32;
    let name = scan.names[i].clone();
    let validator = validator.map(|f| f.into_validator(Default::default()));
    Ok(match builder::build(&scan.bodies[i], validator) {
        Ok(b) => Ok(FunctionCfg {
            func_index,
            name,
            cfg: b.cfg,
            blocks: b.blocks,
            edge_kinds: b.edge_kinds,
            calls: b.calls,
            sites: b.sites,
            pad_edges: b.pad_edges,
            func_pads: b.func_pads,
            padded_opens: b.padded_opens,
            controls: b.controls,
        }),
        Err(builder::BuildError::Unsupported { reason, offset }) => Err(Unsupported {
            func_index,
            name,
            offset,
            reason,
        }),
        Err(builder::BuildError::Read(e)) => return Err(module::input_error(&e, len)),
    })
}
