//! Call sites: every reachable call instruction of a function, in code order,
//! with the block that executes it and what it calls.
//!
//! Interprocedural techniques (Melski & Reps 1999, "Interprocedural path
//! profiling", section 4: a path is cut at each call site and resumed after
//! it returns) key their actions and their call-graph edges by a call
//! site's index in [`FunctionCfg::calls`](super::FunctionCfg::calls).
//!
//! A call does not end its block (see the builder's model): the block of a
//! call site is the one whose instructions include it. A tail call
//! (`return_call*`) also ends its block with a [`TailCall`] edge to EXIT.
//! Calls in unreachable code have no block and no call site.
//!
//! [`TailCall`]: super::EdgeKind::TailCall

use pathprof_graph::NodeId;
use serde::{Deserialize, Serialize};

/// What a call instruction calls.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Callee {
    /// `call f` / `return_call f`: function index `f` (imports counted).
    Direct(u32),
    /// `call_indirect` / `return_call_indirect`: a function of type
    /// `type_index` taken from table `table`.
    Indirect { type_index: u32, table: u32 },
    /// `call_ref` / `return_call_ref`: a function reference of type
    /// `type_index`.
    Ref(u32),
}

/// One call instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// Module byte offset of the call instruction.
    pub offset: u32,
    /// The block that executes it.
    pub block: NodeId,
    pub callee: Callee,
    /// A `return_call*`: the caller's frame is gone when the callee runs,
    /// and nothing of the caller runs after it returns.
    pub tail: bool,
}

// 10^5 call sites in a large module take 2.4 MB.
const _: () = assert!(std::mem::size_of::<CallSite>() == 24);
