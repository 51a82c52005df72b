//! A run's branch stream, online: the module instrumented with the buffered
//! trace, its edge events turned into branch events
//! ([`pathprof_wasm::BranchStream`]) as the runner hands them over, so a
//! run of billions of branches is never stored.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use pathprof_session::branch_trace;
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

use crate::error::{Context, Result};
use pathprof_runner::{RunOptions, RunOutcome, TraceEvent, TraceSink, TraceTo};
use pathprof_wasm::branches::{BranchEvent, BranchStream, Frame};
use pathprof_wasm::{WasmError, ACCESS_STORE};

use pathprof_core::driver::{self, Technique};

/// A trace sink that turns edge events into branch events for `F`, and
/// passes the data accesses of a module traced with them
/// ([`pathprof_wasm::trace_accesses`]) to `A` as (address, is a store), in
/// the order the run made them: an access reaches `A` after the branches
/// before it and before those after it. (One approximation: a tail call or
/// a throw is passed on when the next edge says where it went, so an access
/// made in between, by code the trace does not see, comes before it.)
pub struct BranchSink<F: FnMut(BranchEvent), A: FnMut(u32, bool) = fn(u32, bool)> {
    stream: BranchStream<F>,
    on_access: Option<A>,
    /// The first event the stream could not place.
    error: Option<WasmError>,
}

impl<F: FnMut(BranchEvent)> BranchSink<F> {
    /// A sink for runs of `module` (the original, uninstrumented bytes).
    pub fn new(module: &[u8], on_branch: F) -> Result<Self> {
        BranchSink::build(module, on_branch, None)
    }
}

impl<F: FnMut(BranchEvent), A: FnMut(u32, bool)> BranchSink<F, A> {
    /// A sink that also takes the run's data accesses.
    pub fn with_accesses(module: &[u8], on_branch: F, on_access: A) -> Result<Self> {
        BranchSink::build(module, on_branch, Some(on_access))
    }

    fn build(module: &[u8], on_branch: F, on_access: Option<A>) -> Result<Self> {
        let info = pathprof_wasm::analyze(module)?;
        Ok(BranchSink {
            stream: BranchStream::new(module, &info, on_branch)?,
            on_access,
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

impl<F: FnMut(BranchEvent) + Send, A: FnMut(u32, bool) + Send> TraceSink for BranchSink<F, A> {
    fn events(&mut self, events: &[TraceEvent]) {
        if self.error.is_some() {
            return;
        }
        for e in events {
            if e.func >= ACCESS_STORE {
                if let Some(on_access) = &mut self.on_access {
                    on_access(e.edge, e.func == ACCESS_STORE);
                }
                continue;
            }
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
    opts: RunOptions,
    on_branch: F,
) -> Result<(RunOutcome, Vec<Frame>)> {
    let sink = BranchSink::new(module, on_branch)?;
    run_traced(engine, module, opts, sink, false)
}

/// [`run_command`] that also passes each load and store of the program's
/// memories to `on_access` as (effective address, is a store), in order
/// with the branches (see [`BranchSink`]).
pub fn run_command_with_accesses<F, A>(
    engine: &wasmtime::Engine,
    module: &[u8],
    opts: RunOptions,
    on_branch: F,
    on_access: A,
) -> Result<(RunOutcome, Vec<Frame>)>
where
    F: FnMut(BranchEvent) + Send + 'static,
    A: FnMut(u32, bool) + Send + 'static,
{
    let sink = BranchSink::with_accesses(module, on_branch, on_access)?;
    run_traced(engine, module, opts, sink, true)
}

fn run_traced<F, A>(
    engine: &wasmtime::Engine,
    module: &[u8],
    mut opts: RunOptions,
    sink: BranchSink<F, A>,
    accesses: bool,
) -> Result<(RunOutcome, Vec<Frame>)>
where
    F: FnMut(BranchEvent) + Send + 'static,
    A: FnMut(u32, bool) + Send + 'static,
{
    let sink = Arc::new(Mutex::new(sink));
    let mut traced = driver::instrument(module, Technique::Trace, &driver::Options::default())?;
    if accesses {
        traced.bytes = pathprof_wasm::trace_accesses(&traced.bytes)?;
    }
    opts.trace = Some(TraceTo::new(sink.clone()));
    let outcome = pathprof_runner::run_command(engine, &traced.bytes, &opts)
        .context("running the traced module")?;
    let frames = sink
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .finish()?;
    Ok((outcome, frames))
}
