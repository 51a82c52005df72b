//! The crate's one error type.
//!
//! Every graph a user's program can produce is handled without panicking;
//! these errors report inputs the algorithms cannot work with (a CFG that
//! breaks the ENTRY/EXIT conventions, more paths than fit, a path number or a
//! profile that does not belong to the graph).

use thiserror::Error;

use crate::cfg::{EdgeId, NodeId};

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GraphError {
    /// NumPaths overflowed `u64`, or truncation (section 5.3) could not bring
    /// the number of paths under the requested threshold.
    #[error(
        "too many acyclic paths: the count overflows or cannot be truncated under the threshold"
    )]
    TooManyPaths,
    /// A path number at or past NumPaths(ENTRY).
    #[error("path number {path} out of range: there are {total} paths")]
    PathOutOfRange { path: u64, total: u64 },
    /// ENTRY is the unique source (section 3.1): nothing may enter it.
    #[error("CFG edge {edge} enters ENTRY")]
    EdgeIntoEntry { edge: EdgeId },
    /// EXIT is the unique sink (section 3.1): nothing may leave it.
    #[error("CFG edge {edge} leaves EXIT")]
    EdgeOutOfExit { edge: EdgeId },
    /// A graph handed over as a DAG (e.g. rebuilt from a stored profile) has
    /// a cycle; `node` is on it or after it.
    #[error("the DAG has a cycle at or before node {node}")]
    Cyclic { node: NodeId },
    /// Val does not encode paths of this DAG (e.g. a profile of another build).
    #[error("the numbering does not fit the DAG: {reason}")]
    InvalidNumbering { reason: &'static str },
    /// A per-edge or per-node slice of the wrong length.
    #[error("{what} has {got} entries, the graph needs {expected}")]
    LengthMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("node {node} out of range: the graph has {num_nodes} nodes")]
    NodeOutOfRange { node: NodeId, num_nodes: usize },
    /// Flow conservation fails at `node`: a derived edge count would be
    /// negative (or not fit `u64`), or the flow in and out cannot balance.
    #[error("edge counts are inconsistent at node {node}: flow is not conserved")]
    InconsistentCounts { node: NodeId },
    /// The edges said to be in the spanning tree contain a cycle, so flow
    /// conservation cannot determine the count of `edge`.
    #[error("tree edges do not form a spanning forest: the count of edge {edge} is undetermined")]
    NotASpanningForest { edge: EdgeId },
    /// Interprocedural profiling (`crate::interproc`): a supergraph that
    /// breaks its conventions (a call site in ENTRY or EXIT, a callee or
    /// block out of range).
    #[error("function {function}: {reason}")]
    BadSupergraph {
        function: usize,
        reason: &'static str,
    },
    /// Interprocedural profiling: a psi or rho function, a number of valid
    /// completions or a path number of `function` (or of the whole program,
    /// `None`) does not fit `u64`. Never wrapped.
    #[error("interprocedural path count overflows u64 ({})", overflow_scope(.function))]
    PathCountOverflow { function: Option<usize> },
    /// Interprocedural profiling under a path budget: even with every call
    /// site cut, the program has `least` paths, more than `bound`.
    #[error("{least} interprocedural paths even with every call site cut, more than the budget of {bound}")]
    BudgetTooSmall { bound: u64, least: u64 },
    /// Interprocedural profiling: event `index` of an execution does not
    /// follow the supergraph.
    #[error("execution event {index}: {reason}")]
    BadExecution { index: usize, reason: &'static str },
    /// Interprocedural profiling: step `index` of a path handed to
    /// `Interproc::path_number` is not a step of an observable path.
    #[error("path step {index}: {reason}")]
    NotAPath { index: usize, reason: &'static str },
    /// Intraprocedural context profiling (section 7) needs a reducible CFG:
    /// the target of backedge `edge` does not dominate its source.
    #[error("the CFG is irreducible: the target of backedge {edge} does not dominate its source")]
    Irreducible { edge: EdgeId },
}

/// Where a path count overflowed: a function, or the whole program.
fn overflow_scope(function: &Option<usize>) -> String {
    match function {
        Some(f) => format!("function {f}"),
        None => "the whole program".to_string(),
    }
}
