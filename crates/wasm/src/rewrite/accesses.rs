//! The data accesses of a run, in the trace: a pass over a module already
//! instrumented with the buffered edge trace ([`super::trace`]) that makes
//! every load and store of the program's memories append a record to the
//! same buffer, so that accesses and edges reach the host in the order the
//! run made them. The hardware path profiler's simulator feeds them to its
//! cache model, whose misses are the metric accumulated per path (Vaswani
//! thesis 5.3: "L1/L2 data-cache misses").
//!
//! A record is the trace's 8 bytes with a tag in place of the function
//! index: `(u32 ACCESS_LOAD or ACCESS_STORE, u32 address)`. No function
//! index comes near the tags (wasmparser limits a module to 10^6
//! functions). The address is the access's effective address, `base +
//! offset`, modulo 2^32: a memory64 access above 4 GiB is recorded by its
//! low 32 bits.
//!
//! ```text
//! ;; before  i32.store offset=O  (operands: addr value)
//! local.set $value  local.tee $addr
//! global.get $pos  local.get $addr  i64.extend_i32_u  i64.const O  i64.add
//! i64.const 32  i64.shl  i64.const ACCESS_STORE  i64.or  i64.store $trace
//! <advance pos, flush when full>
//! local.get $value  i32.store offset=O
//! ```
//!
//! Departures, each a modelling choice of the simulator's cache, which
//! sees one address per access:
//! - an access that spans two cache blocks is one access, at its first byte;
//! - `memory.copy`, `memory.fill`, `memory.init` and atomic accesses are not
//!   recorded (clang's wasm32-wasi C without `-mbulk-memory` copies with
//!   loops of loads and stores, which are);
//! - accesses of several memories share one address space.
//!
//! The pass decodes every instruction and copies each one's bytes as they
//! are: only the new locals (after all others) and the inserted code are
//! new, so no index moves.

use std::ops::Range;

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{CodeSection, Function, InstructionSink, RawSection};
use wasmparser::{
    ExternalKind, FunctionBody, MemArg, Operator, Parser, Payload, TypeRef, ValType as PType,
};

use super::trace::{TraceBuffer, TRACE_BUFFER_EXPORT, TRACE_FLUSH, TRACE_MODULE, TRACE_POS_EXPORT};
use crate::error::{Result, WasmError};

/// The record tag of a load.
pub const ACCESS_LOAD: u32 = u32::MAX;
/// The record tag of a store.
pub const ACCESS_STORE: u32 = u32::MAX - 1;

/// A load or store: where, which way, and the operand above its address
/// that must be set aside while the address is recorded.
#[derive(Copy, Clone)]
struct Access {
    memarg: MemArg,
    store: bool,
    above: Option<PType>,
}

/// Adds an access record before every load and store of `traced`, a
/// module instrumented with the buffered edge trace.
pub fn trace_accesses(traced: &[u8]) -> Result<Vec<u8>> {
    let mut m = ModuleFacts::default();
    let mut out = wasm_encoder::Module::new();
    let mut code: Option<CodeSection> = None;
    let mut func = 0usize;
    for payload in Parser::new(0).parse_all(traced) {
        let payload = payload.map_err(|e| WasmError::invalid(&e))?;
        m.learn(&payload)?;
        match &payload {
            Payload::CodeSectionStart { .. } => code = Some(CodeSection::new()),
            Payload::CodeSectionEntry(body) => {
                let buffer = m.buffer()?;
                let params = m.params_of(func)?;
                let f = rewrite(traced, body, params, &m, buffer)?;
                code.as_mut()
                    .expect("entries follow their start")
                    .function(&f);
                func += 1;
                if func == m.func_types.len() {
                    out.section(&code.take().expect("one code section"));
                }
            }
            Payload::Version { .. } | Payload::End(_) => {}
            other => {
                if let Some((id, range)) = other.as_section() {
                    out.section(&RawSection {
                        id,
                        data: &traced[range],
                    });
                }
            }
        }
    }
    Ok(out.finish())
}

/// What the rewrite needs of the sections before the code.
#[derive(Default)]
struct ModuleFacts {
    /// Parameter types of each type (non-function types: empty).
    type_params: Vec<Vec<PType>>,
    /// Type index of each defined function.
    func_types: Vec<u32>,
    imported_funcs: u32,
    flush: Option<u32>,
    /// Per memory, whether it is 64-bit.
    memory64: Vec<bool>,
    trace_memory: Option<u32>,
    pos: Option<u32>,
}

impl ModuleFacts {
    fn learn(&mut self, payload: &Payload<'_>) -> Result<()> {
        let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
        match payload {
            Payload::TypeSection(r) => {
                for t in r.clone().into_iter_err_on_gc_types() {
                    self.type_params.push(t.map_err(err)?.params().to_vec());
                }
            }
            Payload::ImportSection(r) => {
                for imp in r.clone().into_imports() {
                    let imp = imp.map_err(err)?;
                    match imp.ty {
                        TypeRef::Func(_) => {
                            if imp.module == TRACE_MODULE && imp.name == TRACE_FLUSH {
                                self.flush = Some(self.imported_funcs);
                            }
                            self.imported_funcs += 1;
                        }
                        TypeRef::Memory(t) => self.memory64.push(t.memory64),
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(r) => {
                for t in r.clone() {
                    self.func_types.push(t.map_err(err)?);
                }
            }
            Payload::MemorySection(r) => {
                for t in r.clone() {
                    self.memory64.push(t.map_err(err)?.memory64);
                }
            }
            Payload::ExportSection(r) => {
                for e in r.clone() {
                    let e = e.map_err(err)?;
                    match (e.kind, e.name) {
                        (ExternalKind::Memory, TRACE_BUFFER_EXPORT) => {
                            self.trace_memory = Some(e.index)
                        }
                        (ExternalKind::Global, TRACE_POS_EXPORT) => self.pos = Some(e.index),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn buffer(&self) -> Result<(TraceBuffer, u32)> {
        match (self.trace_memory, self.pos, self.flush) {
            (Some(memory), Some(pos), Some(flush)) => Ok((TraceBuffer { memory, pos }, flush)),
            _ => Err(WasmError::BadPlan {
                func_index: 0,
                reason: "access records need a module with the buffered edge trace".into(),
            }),
        }
    }

    fn params_of(&self, defined: usize) -> Result<&[PType]> {
        let t = self.func_types.get(defined).copied().unwrap_or(u32::MAX);
        self.type_params
            .get(t as usize)
            .map(Vec::as_slice)
            .ok_or_else(|| WasmError::Invalid {
                offset: 0,
                message: format!("function {defined} has no function type"),
            })
    }
}

/// The scratch locals of one body, appended after its own: one per type
/// of address, then one per type of operand set aside (an `i32.store`
/// needs both an i32 for its address and another for its value).
struct Scratch {
    /// Index of the first; then one per entry of `types`, in order.
    first: u32,
    types: Vec<(PType, Role)>,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Role {
    Address,
    Operand,
}

impl Scratch {
    fn of(&self, t: PType, role: Role) -> u32 {
        let i = self.types.iter().position(|&x| x == (t, role));
        self.first + i.expect("every scratch type was collected") as u32
    }
}

fn rewrite(
    bytes: &[u8],
    body: &FunctionBody<'_>,
    params: &[PType],
    m: &ModuleFacts,
    (buffer, flush): (TraceBuffer, u32),
) -> Result<Function> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut locals = Vec::new();
    let mut count = params.len() as u64;
    for l in body.get_locals_reader().map_err(err)? {
        let (n, t) = l.map_err(err)?;
        count += u64::from(n);
        locals.push((n, RoundtripReencoder.val_type(t).map_err(reencode_err)?));
    }
    let ops = operators(body, m, buffer.memory)?;
    let mut types = Vec::new();
    for a in ops.iter().filter_map(|(_, a)| a.as_ref()) {
        let addr = (addr_type(m, a), Role::Address);
        for t in std::iter::once(addr).chain(a.above.map(|t| (t, Role::Operand))) {
            if !types.contains(&t) {
                types.push(t);
            }
        }
    }
    let scratch = Scratch {
        first: count as u32,
        types,
    };
    for &(t, _) in &scratch.types {
        locals.push((1, RoundtripReencoder.val_type(t).map_err(reencode_err)?));
    }
    let mut f = Function::new(locals);
    for (range, access) in ops {
        if let Some(a) = access {
            record(
                &mut f.instructions(),
                &a,
                &scratch,
                addr_type(m, &a),
                buffer,
                flush,
            );
        }
        f.raw(bytes[range].iter().copied());
    }
    Ok(f)
}

fn reencode_err(e: wasm_encoder::reencode::Error) -> WasmError {
    WasmError::Invalid {
        offset: 0,
        message: e.to_string(),
    }
}

/// Each instruction's bytes, and the access it makes, if it is one to record.
fn operators(
    body: &FunctionBody<'_>,
    m: &ModuleFacts,
    trace_memory: u32,
) -> Result<Vec<(Range<usize>, Option<Access>)>> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut reader = body.get_operators_reader().map_err(err)?;
    let mut ops = Vec::new();
    while !reader.eof() {
        let start = reader.original_position();
        let op = reader.read().map_err(err)?;
        let a = access(&op).filter(|a| {
            a.memarg.memory != trace_memory && (a.memarg.memory as usize) < m.memory64.len()
        });
        ops.push((start..reader.original_position(), a));
    }
    Ok(ops)
}

fn addr_type(m: &ModuleFacts, a: &Access) -> PType {
    if m.memory64[a.memarg.memory as usize] {
        PType::I64
    } else {
        PType::I32
    }
}

/// The record of `a`, emitted with its operands on the stack and leaving
/// them there.
fn record(
    sink: &mut InstructionSink<'_>,
    a: &Access,
    scratch: &Scratch,
    addr: PType,
    buffer: TraceBuffer,
    flush: u32,
) {
    if let Some(t) = a.above {
        sink.local_set(scratch.of(t, Role::Operand));
    }
    let at = scratch.of(addr, Role::Address);
    sink.local_tee(at);
    sink.global_get(buffer.pos).local_get(at);
    if addr == PType::I32 {
        sink.i64_extend_i32_u();
    }
    let tag = if a.store { ACCESS_STORE } else { ACCESS_LOAD };
    sink.i64_const(a.memarg.offset as i64)
        .i64_add()
        .i64_const(32)
        .i64_shl()
        .i64_const(i64::from(tag))
        .i64_or()
        .i64_store(buffer.record_at());
    buffer.advance(sink, flush);
    if let Some(t) = a.above {
        sink.local_get(scratch.of(t, Role::Operand));
    }
}

/// The loads and stores recorded, with the operand above the address.
fn access(op: &Operator<'_>) -> Option<Access> {
    use Operator::*;
    let load = |memarg: &MemArg| Access {
        memarg: *memarg,
        store: false,
        above: None,
    };
    let store = |memarg: &MemArg, t: PType| Access {
        memarg: *memarg,
        store: true,
        above: Some(t),
    };
    Some(match op {
        I32Load { memarg }
        | I64Load { memarg }
        | F32Load { memarg }
        | F64Load { memarg }
        | I32Load8S { memarg }
        | I32Load8U { memarg }
        | I32Load16S { memarg }
        | I32Load16U { memarg }
        | I64Load8S { memarg }
        | I64Load8U { memarg }
        | I64Load16S { memarg }
        | I64Load16U { memarg }
        | I64Load32S { memarg }
        | I64Load32U { memarg }
        | V128Load { memarg }
        | V128Load8x8S { memarg }
        | V128Load8x8U { memarg }
        | V128Load16x4S { memarg }
        | V128Load16x4U { memarg }
        | V128Load32x2S { memarg }
        | V128Load32x2U { memarg }
        | V128Load8Splat { memarg }
        | V128Load16Splat { memarg }
        | V128Load32Splat { memarg }
        | V128Load64Splat { memarg }
        | V128Load32Zero { memarg }
        | V128Load64Zero { memarg } => load(memarg),
        V128Load8Lane { memarg, .. }
        | V128Load16Lane { memarg, .. }
        | V128Load32Lane { memarg, .. }
        | V128Load64Lane { memarg, .. } => Access {
            above: Some(PType::V128),
            ..load(memarg)
        },
        I32Store { memarg } | I32Store8 { memarg } | I32Store16 { memarg } => {
            store(memarg, PType::I32)
        }
        I64Store { memarg }
        | I64Store8 { memarg }
        | I64Store16 { memarg }
        | I64Store32 { memarg } => store(memarg, PType::I64),
        F32Store { memarg } => store(memarg, PType::F32),
        F64Store { memarg } => store(memarg, PType::F64),
        V128Store { memarg }
        | V128Store8Lane { memarg, .. }
        | V128Store16Lane { memarg, .. }
        | V128Store32Lane { memarg, .. }
        | V128Store64Lane { memarg, .. } => store(memarg, PType::V128),
        _ => return None,
    })
}
