//! WebAssembly side of pathprof: the CFG builder ([`mod@cfg`]) that turns every
//! defined function of a core module into an abstract control-flow graph, and
//! the one rewriter ([`rewrite`]) that applies instrumentation plans, with the
//! counter-memory layout and its reader.
//!
//! Pipeline: [`analyze`] validates a module and builds a [`FunctionCfg`] per
//! defined function; a profiling technique turns each graph into a
//! `FunctionPlan`; [`instrument`] applies the plans and returns the new module
//! and its [`CounterLayout`]; after a run, [`read_counters`] reads one
//! function's counters back from the exported counter memory
//! ([`counter_layout`] gives the layout ahead of rewriting). [`Instrumenter`]
//! does the same one function at a time, for a caller that builds and plans
//! each function just before it is rewritten.
//!
//! Interprocedural techniques start from [`CallGraph`] (the call graph and
//! its strongly connected components, built from each CFG's call sites) and
//! [`interproc::instrument_with`], where a [`interproc::ModuleTechnique`]
//! sees the whole module before it plans any function.
//!
//! Layout: `cfg/` (builder, rewrite sites, call sites), `rewrite/` (body
//! rewriting with landing pads, action lowering and the hash helper, counter
//! layout, module re-assembly), `callgraph.rs`, `interproc.rs` (the
//! module-level phase), `supergraph/` (the module's Melski-Reps supergraph
//! and a run's edge trace as its execution), `module.rs` (header check, validation, section scan).

pub mod branches;
pub mod callgraph;
pub mod cfg;
mod error;
pub mod interproc;
mod module;
pub mod par;
pub mod rewrite;
pub mod supergraph;
pub mod tables;

pub use branches::BranchStream;
pub use callgraph::CallGraph;
pub use cfg::{
    analyze, BlockInfo, CallSite, Callee, EdgeKind, FunctionCfg, ModuleInfo, Unsupported,
};
pub use error::{Result, WasmError};
pub use module::{
    code_section_size, custom_section, digest_from_hex, module_hash, RESERVED_PREFIX,
};
pub use rewrite::{
    counter_layout, hollow, inline, instrument, instrument_checked, instrument_into,
    instrument_module, read_counters, read_header, trace_accesses, BodyValidators, CodeMap,
    CounterHeader, CounterIdentity, CounterLayout, FunctionLayout, Holes, Hollowed, InlineOutput,
    InlinePlan, InlineTree, Instrumented, Instrumenter, OutputCheck, Scanned, TraceMode, Written,
    ACCESS_LOAD, ACCESS_STORE, COUNTERS_EXPORT, LAYOUT_VERSION, PEEL_MAX_BYTES,
};
