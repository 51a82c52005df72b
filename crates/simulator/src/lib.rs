//! The programmable hardware path profiler of Vaswani's thesis (chapter 5),
//! simulated on a stream of retired branches.
//!
//! [`event`] is the stream the profiler consumes: one [`event::BranchEvent`]
//! per retiring branch, as the commit stage would hand it to the branch queue.
//! The simulator knows nothing of WebAssembly; `pathprof-wasm` turns a run's
//! edge trace into this stream.

pub mod cache;
pub mod config;
pub mod descriptor;
pub mod detector;
pub mod error;
pub mod event;
pub mod hpt;
pub mod overlap;
pub mod ppcr;
pub mod predictor;
pub mod simulator;
pub mod stack;
pub mod timing;

#[cfg(test)]
mod testing;

pub use event::{BranchEvent, BranchKind};
