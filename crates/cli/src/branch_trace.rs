//! A run's branch stream, online: the module instrumented with the buffered
//! trace, its edge events turned into branch events
//! ([`pathprof_wasm::BranchStream`]) as the runner hands them over, so a
//! run of billions of branches is never stored.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use pathprof::branch_trace;
//! use pathprof_runner::RunOptions;
//! let module = std::fs::read("program.wasm")?;
//! let engine = pathprof_runner::engine_without_fuel()?;
//! let mut branches = 0u64;
//! let (outcome, frames) = branch_trace::run_command(
//!     &engine,
//!     &module,
//!     RunOptions::inherited(["program"]),
//!     move |_event| branches += 1,
//! )?;
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use pathprof_runner::{RunOptions, RunOutcome, TraceEvent, TraceSink, TraceTo};
use pathprof_wasm::branches::{BranchEvent, BranchStream, Frame};
use pathprof_wasm::WasmError;

use crate::driver::{self, Technique};

/// A trace sink that turns edge events into branch events for `F`.
pub struct BranchSink<F: FnMut(BranchEvent)> {
    stream: BranchStream<F>,
    /// The first event the stream could not place.
    error: Option<WasmError>,
}

impl<F: FnMut(BranchEvent)> BranchSink<F> {
    /// A sink for runs of `module` (the original, uninstrumented bytes).
    pub fn new(module: &[u8], on_branch: F) -> Result<Self> {
        let info = pathprof_wasm::analyze(module)?;
        Ok(BranchSink {
            stream: BranchStream::new(module, &info, on_branch)?,
            error: None,
        })
    }

    /// Ends the stream once the run has ended: emits what it holds and
    /// returns the frames then live (outermost first), or the first trace
    /// event it could not place.
    pub fn finish(&mut self) -> Result<Vec<Frame>> {
        if let Some(e) = self.error.take() {
            return Err(e.into());
        }
        self.stream.finish();
        Ok(self.stream.frames().to_vec())
    }
}

impl<F: FnMut(BranchEvent) + Send> TraceSink for BranchSink<F> {
    fn events(&mut self, events: &[TraceEvent]) {
        if self.error.is_some() {
            return;
        }
        for e in events {
            if let Err(err) = self.stream.edge(e.func, e.edge) {
                self.error = Some(err);
                return;
            }
        }
    }
}

/// Runs the WASI command `module` with `opts`, its branches passed to
/// `on_branch` as they retire. Returns the run's outcome and the frames
/// live when it ended (empty unless it ended abruptly).
pub fn run_command<F: FnMut(BranchEvent) + Send + 'static>(
    engine: &wasmtime::Engine,
    module: &[u8],
    mut opts: RunOptions,
    on_branch: F,
) -> Result<(RunOutcome, Vec<Frame>)> {
    let sink = Arc::new(Mutex::new(BranchSink::new(module, on_branch)?));
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default())?;
    opts.trace = Some(TraceTo::new(sink.clone()));
    let outcome = pathprof_runner::run_command(engine, &traced.bytes, &opts)
        .context("running the traced module")?;
    let frames = sink
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .finish()?;
    Ok((outcome, frames))
}
