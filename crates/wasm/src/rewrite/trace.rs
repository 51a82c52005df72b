//! How `Action::Trace` (the test oracle's every-edge trace) reaches the host.
//!
//! Two modes, one per module ([`TraceMode`]):
//!
//! * [`TraceMode::PerEdge`]: each edge calls the import
//!   `"__pathprof" "trace" (func (param i32 i32))` with (function index,
//!   edge). The host sees every event while the edge's frame is live, so it
//!   can look at the wasm stack (the wasm-smith differential test records
//!   the stack depth of each event); one host call per edge is slow.
//! * [`TraceMode::Buffered`]: each edge appends an 8-byte record, the
//!   little-endian pair (u32 function index, u32 edge), to a memory of its
//!   own, exported as [`TRACE_BUFFER_EXPORT`]; the byte position of the next
//!   record is the mutable i32 global exported as [`TRACE_POS_EXPORT`].
//!   When the buffer is full the module calls the import
//!   `"__pathprof" "trace_flush" (func)`, whose host reads the records
//!   `[0, pos)` and sets `pos` back to 0. When the run ends, however it
//!   ends (return, trap, `proc_exit`), the host reads the records left.
//!
//! ```text
//! ;; on every traced edge
//! global.get $pos  i64.const (edge << 32 | func)  i64.store $buffer
//! global.get $pos  i32.const 8  i32.add  global.set $pos
//! global.get $pos  i32.const TRACE_BUFFER_BYTES  i32.eq
//! if  call $trace_flush  end
//! ```
//!
//! The pair rather than a module-wide edge number: a record then says what
//! it is without a table to decode it, at 4 more bytes per record, which
//! stay in the cache (the buffer is [`TRACE_BUFFER_BYTES`]). The host, not
//! the module, resets `pos`: a run stopped between the flush and the reset
//! (fuel runs out at any instruction) would otherwise report the buffer
//! twice.

use wasm_encoder::{BlockType, InstructionSink, MemArg};

/// How the trace instrumentation reports edges.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TraceMode {
    /// One host call per edge.
    PerEdge,
    /// Records in a buffer of the module's own, a host call per full buffer.
    #[default]
    Buffered,
}

/// Module name of the trace imports.
pub const TRACE_MODULE: &str = "__pathprof";
/// Field name of the import a [`TraceMode::PerEdge`] module calls.
pub const TRACE_NAME: &str = "trace";
/// Field name of the import a [`TraceMode::Buffered`] module calls when its
/// buffer is full, of type `(func)`.
pub const TRACE_FLUSH: &str = "trace_flush";
/// Name of the exported memory that holds the trace records.
pub const TRACE_BUFFER_EXPORT: &str = "__pathprof_trace";
/// Name of the exported mutable i32 global: bytes of records in the buffer.
pub const TRACE_POS_EXPORT: &str = "__pathprof_trace_pos";
/// Bytes of one record: u32 function index, u32 edge, little-endian.
pub const TRACE_RECORD_BYTES: u32 = 8;
/// Pages of the trace memory; the buffer is the whole memory.
pub const TRACE_BUFFER_PAGES: u64 = 4;
/// Bytes of the buffer: 32768 records, a flush per 32768 edges.
pub const TRACE_BUFFER_BYTES: u32 = (TRACE_BUFFER_PAGES as u32) << 16;

/// Where a buffered module keeps its records.
#[derive(Copy, Clone, Debug)]
pub(crate) struct TraceBuffer {
    /// Index of the trace memory.
    pub memory: u32,
    /// Index of the position global.
    pub pos: u32,
}

impl TraceBuffer {
    /// Appends the record of `(func, edge)`, flushing through the import
    /// `flush` when the buffer fills (see the module documentation).
    pub fn emit(&self, sink: &mut InstructionSink<'_>, flush: u32, func: u32, edge: u32) {
        let record = (u64::from(edge) << 32) | u64::from(func);
        let at = self.record_at();
        sink.global_get(self.pos)
            .i64_const(record as i64)
            .i64_store(at);
        self.advance(sink, flush);
    }

    /// The record's memory argument: 8-byte aligned, in the trace memory.
    pub fn record_at(&self) -> MemArg {
        MemArg {
            offset: 0,
            align: 3,
            memory_index: self.memory,
        }
    }

    /// Moves past the record just stored, flushing through `flush` when
    /// the buffer is full.
    pub fn advance(&self, sink: &mut InstructionSink<'_>, flush: u32) {
        sink.global_get(self.pos)
            .i32_const(TRACE_RECORD_BYTES as i32)
            .i32_add()
            .global_set(self.pos);
        sink.global_get(self.pos)
            .i32_const(TRACE_BUFFER_BYTES as i32)
            .i32_eq()
            .if_(BlockType::Empty)
            .call(flush)
            .end();
    }
}
