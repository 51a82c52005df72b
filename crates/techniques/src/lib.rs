//! Profiling techniques. Each module plans instrumentation on an abstract CFG
//! ([`plan::FunctionPlan`]) and decodes the counters it asked for; none of
//! them edits bytes.
//!
//! - [`ball_larus`]: acyclic intraprocedural path profiling (Ball & Larus 1996).
//! - [`edge`]: edge profiling on spanning-tree chords (QPT2), the baseline.
//! - [`interproc`]: Melski & Reps' interprocedural context and piecewise
//!   paths, from a numbered supergraph.
//! - [`ippp`]: Vaswani's interprocedural preferential path profiling over
//!   depth-k path segments, from the expanded graphs of the graph crate.
//! - [`peel`]: constant-address path ends in the loop proper of a peeled loop.
//! - [`trace`]: the test oracle's every-edge trace.

pub mod ball_larus;
pub mod edge;
pub mod interproc;
pub mod intra_context;
pub mod ippp;
pub mod peel;
pub mod plan;
pub mod ppp;
pub mod trace;

pub use plan::{
    global_export_name, Action, CallActions, EdgeActions, ForEachMember, FunctionPlan, GlobalReg,
    IfNonZero, In, Interproc, ModulePlan, MulAdd, Otherwise, PathTable, PppEnd, PppTable, Push,
    RawCounters, Reg, Width, GLOBAL_EXPORT_PREFIX, PPP_HOLE,
};
