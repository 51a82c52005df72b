//! The host side of the trace instrumentation: edge events handed to a
//! [`TraceSink`] as the run makes them, a batch at a time, so that a run of
//! billions of edges is never stored.
//!
//! A traced module reports edges one of two ways (`pathprof_wasm`'s
//! `rewrite::trace` documents the module side):
//!
//! * per edge, calling [`TRACE_FUNC`] with (function, edge): the runner
//!   gathers the events in a batch of [`BATCH`] and hands over each full
//!   batch;
//! * buffered: the module appends 8-byte records to its exported memory
//!   [`TRACE_BUFFER_EXPORT`] (the byte count in the exported global
//!   [`TRACE_POS_EXPORT`]) and calls [`TRACE_FLUSH`] when the buffer is
//!   full; the runner hands over the records and empties the buffer.
//!
//! Either way what is left is handed over when the run ends, by a return, a
//! trap or `proc_exit`, with one exception: when the module's start
//! function ends the run during instantiation there is no instance whose
//! buffer could be read, and the records still in it are lost (as are the
//! counters then).

use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::{AsContextMut, Caller, Extern, Global, Memory, Val};

use crate::State;

/// Module name of the trace imports.
pub const TRACE_MODULE: &str = "__pathprof";
/// Field name of the per-edge trace import, of type `(func (param i32 i32))`.
pub const TRACE_FUNC: &str = "trace";
/// Field name of the buffered trace's flush import, of type `(func)`.
pub const TRACE_FLUSH: &str = "trace_flush";
/// Exported memory of a buffered trace's records.
pub const TRACE_BUFFER_EXPORT: &str = "__pathprof_trace";
/// Exported mutable i32 global: bytes of records in the buffer.
pub const TRACE_POS_EXPORT: &str = "__pathprof_trace_pos";
/// Bytes of one record: u32 function index, u32 edge, little-endian.
const RECORD_BYTES: usize = 8;
/// Events of a per-edge trace handed over at once.
pub const BATCH: usize = 4096;

/// One CFG edge crossed: (function index in the module's function index
/// space, edge index in that function's CFG), as the instrumentation
/// numbered them (the arguments of the per-edge import as u32).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceEvent {
    pub func: u32,
    pub edge: u32,
}

/// Receives a traced run's events, in order, a batch at a time, while the
/// run goes on.
pub trait TraceSink: Send {
    fn events(&mut self, events: &[TraceEvent]);
}

/// A sink that keeps every event: for tests and short runs.
impl TraceSink for Vec<TraceEvent> {
    fn events(&mut self, events: &[TraceEvent]) {
        self.extend_from_slice(events);
    }
}

/// Where [`crate::RunOptions::trace`] sends the events: a sink shared with
/// the caller, who reads what it gathered after the run.
#[derive(Clone)]
pub struct TraceTo(Arc<Mutex<dyn TraceSink>>);

impl TraceTo {
    pub fn new<S: TraceSink + 'static>(sink: Arc<Mutex<S>>) -> Self {
        TraceTo(sink)
    }

    fn deliver(&self, events: &[TraceEvent]) {
        if !events.is_empty() {
            let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            sink.events(events);
        }
    }
}

impl std::fmt::Debug for TraceTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceTo(..)")
    }
}

/// The trace state of a store: the sink, and the events on their way to it.
#[derive(Default)]
pub(crate) struct Tracer {
    to: Option<TraceTo>,
    batch: Vec<TraceEvent>,
}

impl Tracer {
    pub fn new(to: Option<TraceTo>) -> Self {
        Tracer {
            to,
            batch: Vec::new(),
        }
    }

    /// An event of the per-edge import.
    pub fn per_edge(&mut self, func: u32, edge: u32) {
        if let Some(to) = &self.to {
            self.batch.push(TraceEvent { func, edge });
            if self.batch.len() >= BATCH {
                to.deliver(&self.batch);
                self.batch.clear();
            }
        }
    }

    /// Hands over the per-edge events not yet delivered.
    pub fn finish(&mut self) {
        if let Some(to) = &self.to {
            to.deliver(&self.batch);
            self.batch.clear();
        }
    }
}

/// The buffered trace's flush import: hands over the buffer's records and
/// empties it.
pub(crate) fn flush(mut caller: Caller<'_, State>) -> wasmtime::Result<()> {
    let buffer = match (
        caller.get_export(TRACE_BUFFER_EXPORT),
        caller.get_export(TRACE_POS_EXPORT),
    ) {
        (Some(Extern::Memory(m)), Some(Extern::Global(g))) => (m, g),
        _ => wasmtime::bail!(
            "{TRACE_MODULE}.{TRACE_FLUSH} called by a module without the memory \
             {TRACE_BUFFER_EXPORT} and the global {TRACE_POS_EXPORT}"
        ),
    };
    drain(&mut caller, buffer)
}

/// Hands over the records of a buffered trace's `(memory, position)` and
/// empties the buffer.
pub(crate) fn drain(
    mut store: impl AsContextMut<Data = State>,
    (memory, pos): (Memory, Global),
) -> wasmtime::Result<()> {
    let Val::I32(len) = pos.get(&mut store) else {
        wasmtime::bail!("{TRACE_POS_EXPORT} is not an i32");
    };
    let (data, state) = memory.data_and_store_mut(&mut store);
    let Some(records) = data.get(..len as u32 as usize) else {
        wasmtime::bail!("{TRACE_POS_EXPORT} = {len} is past the trace buffer");
    };
    if let Some(to) = &state.tracer.to {
        let batch = &mut state.tracer.batch;
        batch.clear();
        batch.extend(records.chunks_exact(RECORD_BYTES).map(|r| TraceEvent {
            func: u32::from_le_bytes([r[0], r[1], r[2], r[3]]),
            edge: u32::from_le_bytes([r[4], r[5], r[6], r[7]]),
        }));
        to.deliver(batch);
        batch.clear();
    }
    pos.set(&mut store, Val::I32(0))
}

/// The buffer of an instance's buffered trace, if it has one.
pub(crate) fn buffer_of(
    instance: &wasmtime::Instance,
    mut store: impl AsContextMut,
) -> Option<(Memory, Global)> {
    let memory = instance.get_memory(&mut store, TRACE_BUFFER_EXPORT)?;
    let pos = instance.get_global(&mut store, TRACE_POS_EXPORT)?;
    Some((memory, pos))
}
