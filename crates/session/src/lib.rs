//! What pathprof does on the embedded engine (wasmtime, through
//! `pathprof-runner`), as a library: the `run` pipeline ([`run_cmd`]:
//! instrument in memory, compile, run, collect the counters into a profile),
//! the exact recording of a run's depth-k path segments ([`segments`]), and
//! the hardware path profiler simulated on a run's branch stream
//! ([`simulate`], fed by [`branch_trace`], or by a run's stream saved to a
//! file, [`trace_file`]).
//!
//! `pathprof-core` instruments and decodes without an engine; this crate
//! joins it to the runner and the simulator, so that a Rust program can do
//! what the `pathprof` commands do without the command-line crate.

pub mod branch_trace;
pub mod error;
pub mod run_cmd;
pub mod segments;
pub mod simulate;
pub mod trace_file;

pub use error::{Error, Result};
