//! The rewriter one function at a time.
//!
//! [`Instrumenter`] takes the defined functions in order, each with its plan
//! or none, rewrites its body at once and keeps only the new bytes: a caller
//! that builds, plans and hands over one function at a time never holds more
//! than one function's CFG and plan. What a function's rewrite needs of the
//! others is settled by the functions before it: its counters follow theirs
//! in the layout, and a new type gets the next index when first needed (the
//! hash helper's type when the first function with a hash table comes). The
//! type section and the helper are written last, when the module is
//! assembled, so nothing is needed up front but whether a trace import
//! shifts the function indices.

use super::assemble::{
    reencode_error, splice_code, write_code, Assembler, CodeEntries, Deferred, DeferredFrom,
};
use super::body::{self, ModuleCtx};
use super::hollow::Holes;
use super::layout::CounterLayout;
use super::layout::{FunctionLayout, LayoutBuilder};
use super::lower::{self, CloserKey, Foreign, Lowerer};
use super::trace::{TraceBuffer, TraceMode};
use super::types::NewTypes;
use super::{check_plan, layout_entry, BlockMarks, CodeMap, Instrumented, PlanUse, Written};
use crate::cfg::FunctionCfg;
use crate::error::{Result, WasmError};
use crate::module::{self, ModuleScan};
use pathprof_techniques::{Action, ForEachMember, FunctionPlan, ModulePlan, PathTable, Width};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use wasm_encoder::reencode::Reencode;
use wasmparser::ValType;

/// The validators of a module's function bodies
/// ([`Scanned::into_validators`]).
pub struct BodyValidators(Vec<module::BodyValidator>);

/// A module scanned once, whose functions are built one at a time, from
/// any thread.
pub struct Scanned<'a> {
    bytes: &'a [u8],
    scan: ModuleScan<'a>,
    /// Per defined function, the validator its body is built with; empty
    /// for a module taken as valid.
    validators: Vec<module::BodyValidator>,
}

impl<'a> Scanned<'a> {
    /// The module's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Scans the module `bytes`, which must be valid.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        Ok(Scanned {
            bytes,
            scan: ModuleScan::new(bytes)?,
            validators: Vec::new(),
        })
    }

    /// Validates the module `bytes` and scans it. The function bodies are
    /// validated as they are built: every caller builds every function
    /// before it uses the module, and stops at the first error.
    pub fn validated(bytes: &'a [u8]) -> Result<Self> {
        let validators = module::validate_sections(bytes)?;
        Ok(Scanned {
            validators,
            ..Scanned::new(bytes)?
        })
    }

    /// The validators of the module's bodies, to scan the module again
    /// once [`hollow`](super::hollow())ed ([`Scanned::with_validators`]):
    /// its sections, validated here, are not validated twice.
    pub fn into_validators(self) -> BodyValidators {
        BodyValidators(self.validators)
    }

    /// Scans `bytes`, the module whose validation gave `validators` with
    /// the contents of some custom sections taken out (which no validator
    /// reads): its sections are taken as valid, its bodies are validated as
    /// they are built. Fails if the body counts differ.
    pub fn with_validators(bytes: &'a [u8], validators: BodyValidators) -> Result<Self> {
        let scanned = Scanned::new(bytes)?;
        if scanned.scan.bodies.len() != validators.0.len() {
            return Err(WasmError::Invalid {
                offset: 0,
                message: "the validators are of another module".into(),
            });
        }
        Ok(Scanned {
            validators: validators.0,
            ..scanned
        })
    }

    /// Bytes of each defined function's body in the module.
    pub fn body_sizes(&self) -> Vec<usize> {
        self.scan.bodies.iter().map(|b| b.range().len()).collect()
    }

    /// Builds the CFG of defined function `i` (as [`crate::analyze`] does),
    /// validating its body on the way unless the module was taken as valid.
    pub fn build(&self, i: usize) -> Result<std::result::Result<FunctionCfg, crate::Unsupported>> {
        let validator = self.validators.get(i).map(|f| wasmparser::FuncToValidate {
            resources: f.resources.clone(),
            index: f.index,
            ty: f.ty,
            features: f.features,
        });
        crate::cfg::build_function(&self.scan, i, validator, self.bytes.len())
    }

    /// Whether any body throws or catches a wasm exception (`throw`,
    /// `throw_ref`, a `try_table` with a catch clause), reachable or not:
    /// then an activation may end without reaching EXIT or being recorded,
    /// which edge profiling must know before it plans the first function.
    /// The bodies are decoded, not validated; one that does not decode
    /// counts as throwing (its build reports the error).
    pub fn may_throw_or_catch(&self) -> bool {
        self.scan.bodies.iter().any(body_may_throw_or_catch)
    }

    pub(crate) fn num_imported_funcs(&self) -> u32 {
        self.scan.num_imported_funcs
    }
}

fn body_may_throw_or_catch(body: &wasmparser::FunctionBody<'_>) -> bool {
    use wasmparser::Operator;
    let Ok(mut ops) = body.get_operators_reader() else {
        return true;
    };
    while !ops.eof() {
        match ops.read() {
            Ok(
                Operator::Throw { .. }
                | Operator::ThrowRef
                | Operator::Try { .. }
                | Operator::Rethrow { .. },
            ) => return true,
            Ok(Operator::TryTable { try_table }) if !try_table.catches.is_empty() => return true,
            Ok(_) => {}
            Err(_) => return true,
        }
    }
    false
}

/// A module being instrumented, function by function.
pub struct Instrumenter<'a> {
    bytes: &'a [u8],
    scan: &'a ModuleScan<'a>,
    /// 1 when the trace import is added before the defined functions.
    shift: u32,
    types: NewTypes,
    /// The trace import's type, and how traces reach the host.
    trace_ty: Option<u32>,
    trace_mode: Option<TraceMode>,
    helper_ty: Option<u32>,
    /// The member loops' helper functions, after the hash helper, and their
    /// type.
    closers: lower::Closers,
    closer_ty: Option<u32>,
    layout: LayoutBuilder,
    /// The PPP tables' initial contents, in function order.
    ppp_segments: Vec<(u32, Vec<u8>)>,
    /// Per defined function taken so far: its new body, and where its
    /// original blocks begin in it when it was instrumented.
    code: CodeEntries,
    marks: Vec<Option<BlockMarks>>,
    /// The body being rewritten, reused from one function to the next.
    scratch: Vec<u8>,
    /// See [`Instrumenter::set_peel_max_bytes`].
    peel_max_bytes: u32,
    check: OutputCheck,
    /// The module-level registers ([`Instrumenter::set_module_plan`]).
    globals: Vec<Width>,
    /// Bytes of the stack region ([`Instrumenter::set_module_plan`]).
    stack_bytes: u32,
}

/// Whether [`Instrumenter::finish`] validates the module it assembled.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum OutputCheck {
    /// Validate it with wasmparser, as a check of the rewriter itself.
    #[default]
    Validate,
    /// Return it unchecked: for a caller whose next step validates it anyway
    /// (an engine compiling it), or that trusts the rewriter, which the test
    /// suites check on every module they instrument.
    Trust,
}

/// What a function's rewrite needs beyond its CFG and plan, settled in
/// function order by [`Instrumenter::prepare`].
pub(crate) struct Prepared {
    uses: PlanUse,
    layout: FunctionLayout,
    /// The helper of each member loop of the plan.
    closers: Vec<(CloserKey, u32)>,
}

impl<'a> Instrumenter<'a> {
    /// An instrumenter for `module`. `trace`: whether some plan will
    /// trace, which adds the trace import, and how (see [`super::trace`]).
    pub fn new(module: &'a Scanned<'a>, trace: Option<TraceMode>) -> Result<Self> {
        let scan = &module.scan;
        if let Some(name) = scan.reserved_clash.clone() {
            return Err(WasmError::ReservedName { name });
        }
        let mut types = NewTypes::new(scan.num_types);
        let trace_ty = trace.map(|mode| match mode {
            TraceMode::PerEdge => types.intern(&[ValType::I32, ValType::I32], &[]),
            TraceMode::Buffered => types.intern(&[], &[]),
        });
        Ok(Instrumenter {
            bytes: module.bytes,
            shift: u32::from(trace.is_some()),
            types,
            trace_ty,
            trace_mode: trace,
            helper_ty: None,
            closers: lower::Closers::default(),
            closer_ty: None,
            layout: LayoutBuilder::new(),
            ppp_segments: Vec::new(),
            code: CodeEntries::default(),
            marks: Vec::with_capacity(scan.bodies.len()),
            scratch: Vec::new(),
            peel_max_bytes: super::peel::PEEL_MAX_BYTES,
            check: OutputCheck::Validate,
            globals: Vec::new(),
            stack_bytes: 0,
            scan,
        })
    }

    /// Adds the module-level registers of `plan` (mutable globals after
    /// the module's own, exported as `__pathprof_g<i>`), which the plans
    /// of the functions taken after this may use.
    pub fn set_module_plan(&mut self, plan: &ModulePlan) {
        self.globals = plan.globals.clone();
        self.stack_bytes = plan.stack_bytes;
        self.layout.reserve_stack(plan.stack_bytes);
    }

    /// Peels innermost loops of up to `max_bytes` bytes of code so that
    /// their later iterations count their paths at constant addresses
    /// (`pathprof_techniques::peel`); 0 peels none. The counts are the same
    /// either way.
    pub fn set_peel_max_bytes(&mut self, max_bytes: u32) {
        self.peel_max_bytes = max_bytes;
    }

    /// Whose counters the counter memory holds, written into its header
    /// when the module is assembled (by default all zero): set it before
    /// [`Instrumenter::finish`].
    pub fn set_identity(&mut self, identity: super::CounterIdentity) {
        self.layout.identity = identity;
    }

    /// Whether [`Instrumenter::finish`] validates its output (by default it does).
    pub fn set_output_check(&mut self, check: OutputCheck) {
        self.check = check;
    }

    /// Writes each new body to `file` (empty) as it is produced instead of
    /// keeping it, for [`Instrumenter::finish_into`]: the largest part of the
    /// output then never sits in memory.
    pub fn spill_code_to(&mut self, file: File) {
        self.code.spill_to(file);
    }

    /// Number of defined functions.
    pub fn num_functions(&self) -> usize {
        self.scan.bodies.len()
    }

    /// Takes the next defined function: rewrites it by `planned` (its CFG
    /// and plan), or copies it when `None`.
    pub fn function(&mut self, planned: Option<(&FunctionCfg, &FunctionPlan)>) -> Result<()> {
        let i = self.code.len();
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        let marks = match planned {
            Some((fcfg, plan)) => {
                let uses = check_plan(fcfg, plan, &self.globals)?;
                let prepared = self.prepare(fcfg, plan, uses)?;
                Some(self.rewrite(i, fcfg, plan, &prepared, &mut body)?)
            }
            None => {
                self.copy(i, &mut body)?;
                None
            }
        };
        self.code.push(&body)?;
        self.marks.push(marks);
        // A buffer grown by one large body is not kept for the next: it
        // would stay that large through every later function (lz4: 122 KB
        // held while its next large function was planned).
        if body.capacity() <= SCRATCH_KEEP {
            self.scratch = body;
        }
        Ok(())
    }

    /// Settles what the next planned function's rewrite needs: its types,
    /// its counters and its PPP table's contents. Functions must be prepared
    /// in order.
    pub(crate) fn prepare(
        &mut self,
        fcfg: &FunctionCfg,
        plan: &FunctionPlan,
        uses: PlanUse,
    ) -> Result<Prepared> {
        if uses.traces && self.trace_ty.is_none() {
            return Err(WasmError::BadPlan {
                func_index: fcfg.func_index,
                reason: "traces, but the module was not set up with the trace import".into(),
            });
        }
        if uses.stack && self.stack_bytes == 0 {
            return Err(WasmError::BadPlan {
                func_index: fcfg.func_index,
                reason: "uses the stack region, but the module plan reserves none".into(),
            });
        }
        if matches!(plan.paths, PathTable::Hash { .. }) && self.helper_ty.is_none() {
            self.helper_ty = Some(self.types.intern(&[ValType::I32, ValType::I64], &[]));
        }
        self.types.add_function(self.scan, fcfg, plan)?;
        let layout = self.layout.push(layout_entry(fcfg, plan))?.clone();
        if let Some(table) = &plan.ppp {
            // Each entry's Ball-Larus id; its count starts at zero.
            let mut bytes = Vec::with_capacity(16 * table.expected.len());
            for &bl in &table.expected {
                bytes.extend_from_slice(&bl.to_le_bytes());
                bytes.extend_from_slice(&0u64.to_le_bytes());
            }
            self.ppp_segments.push((layout.ppp_offset, bytes));
        }
        let closers = self.settle_closers(fcfg, plan, &layout)?;
        Ok(Prepared {
            uses,
            layout,
            closers,
        })
    }

    /// The helper function of each member loop of `plan`, made when no
    /// function before needed the same one. The helpers follow the hash
    /// helper, which is then added even if no table hashes, so that its
    /// index, already in earlier bodies, stays right.
    fn settle_closers(
        &mut self,
        fcfg: &FunctionCfg,
        plan: &FunctionPlan,
        layout: &FunctionLayout,
    ) -> Result<Vec<(CloserKey, u32)>> {
        let mut loops = Vec::new();
        each_action_list(plan, |actions| member_loops(actions, &mut loops));
        if loops.is_empty() {
            return Ok(Vec::new());
        }
        if self.helper_ty.is_none() {
            self.helper_ty = Some(self.types.intern(&[ValType::I32, ValType::I64], &[]));
        }
        if self.closer_ty.is_none() {
            self.closer_ty = Some(self.types.intern(&[ValType::I64; 4], &[]));
        }
        let first = self.hash_helper_index() + 1;
        let mut used: Vec<(CloserKey, u32)> = Vec::new();
        for m in loops {
            let key = CloserKey::of(m, fcfg.func_index);
            if used.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let at = match self.closers.index.get(&key) {
                Some(&at) => at,
                None => {
                    let at = self.closers.loops.len() as u32;
                    let base = self.lowerer(fcfg, plan, layout);
                    self.closers.loops.push((base, m.clone()));
                    self.closers.index.insert(key.clone(), at);
                    at
                }
            };
            used.push((key, first + at));
        }
        Ok(used)
    }

    /// The member loops' helpers, lowered now that every function's tables
    /// are laid out.
    fn closer_bodies(&mut self) -> Result<Vec<wasm_encoder::Function>> {
        let loops = std::mem::take(&mut self.closers.loops);
        loops
            .into_iter()
            .map(|(mut lower, m)| {
                let mut funcs = std::collections::BTreeSet::new();
                foreign_funcs(&m.body, &mut funcs);
                lower.foreign = self.foreign_of(lower.func_index, funcs)?;
                Ok(lower.closer_body(&m))
            })
            .collect()
    }

    /// The index of the hash helper in the new module: after every
    /// defined function.
    fn hash_helper_index(&self) -> u32 {
        self.scan.num_imported_funcs + self.shift + self.num_functions() as u32
    }

    fn ctx(&self) -> ModuleCtx<'_> {
        ModuleCtx {
            bytes: self.bytes,
            scan: self.scan,
            shift: self.shift,
            types: &self.types,
            peel_max_bytes: self.peel_max_bytes,
        }
    }

    /// Rewrites the body of defined function `i`, prepared, into `out`;
    /// returns where its original blocks begin in it.
    pub(crate) fn rewrite(
        &self,
        i: usize,
        fcfg: &FunctionCfg,
        plan: &FunctionPlan,
        prepared: &Prepared,
        out: &mut Vec<u8>,
    ) -> Result<BlockMarks> {
        let mut lower = self.lowerer(fcfg, plan, &prepared.layout);
        lower.foreign = self.foreign_tables(fcfg.func_index, plan)?;
        lower.closers = prepared.closers.clone();
        let body = &self.scan.bodies[i];
        body::rewrite_body(&self.ctx(), fcfg, plan, prepared.uses, lower, body, out)
    }

    /// The lowering of `plan`'s actions, laid out at `fl`, before its
    /// registers have locals and the other functions' tables are known.
    fn lowerer(&self, fcfg: &FunctionCfg, plan: &FunctionPlan, fl: &FunctionLayout) -> Lowerer {
        Lowerer {
            regs: Vec::new(),
            scaled: false,
            scratch: 0,
            memory: self.scan.num_memories,
            paths: plan.paths,
            paths_offset: fl.paths_offset,
            slots_offset: fl.slots_offset,
            ppp_offset: fl.ppp_offset,
            ppp_min: plan.ppp.as_ref().map_or(0, |t| t.min),
            ppp_len: fl.ppp_len,
            hash_helper: self.hash_helper_index(),
            trace: self.scan.num_imported_funcs,
            trace_buffer: self.trace_buffer(),
            func_index: fcfg.func_index,
            // After the buffered trace's position global (`trace_buffer`).
            globals_base: self.scan.num_globals + u32::from(self.trace_buffer().is_some()),
            stack_base: super::layout::STACK_BASE as u32,
            foreign: Vec::new(),
            closers: Vec::new(),
        }
    }

    /// The tables of the functions `plan` counts in with [`Action::In`]:
    /// they must be laid out already (every function is, when the whole
    /// module is instrumented at once).
    fn foreign_tables(&self, func_index: u32, plan: &FunctionPlan) -> Result<Vec<(u32, Foreign)>> {
        let mut funcs = std::collections::BTreeSet::new();
        each_action_list(plan, |actions| foreign_funcs(actions, &mut funcs));
        self.foreign_of(func_index, funcs)
    }

    /// The tables of `funcs`, which function `func_index` counts in.
    fn foreign_of(
        &self,
        func_index: u32,
        funcs: std::collections::BTreeSet<u32>,
    ) -> Result<Vec<(u32, Foreign)>> {
        funcs
            .into_iter()
            .map(|f| {
                let fl = self.layout.function(f).ok_or_else(|| WasmError::BadPlan {
                    func_index,
                    reason: format!(
                        "counts in the tables of function {f}, which has no plan laid out"
                    ),
                })?;
                Ok((
                    f,
                    Foreign {
                        paths: fl.paths,
                        paths_offset: fl.paths_offset,
                        slots_offset: fl.slots_offset,
                        ppp_offset: fl.ppp_offset,
                        ppp_len: fl.ppp_len,
                    },
                ))
            })
            .collect()
    }

    /// Where a buffered trace keeps its records: the memory after the
    /// counter memory, the global after all others.
    fn trace_buffer(&self) -> Option<TraceBuffer> {
        (self.trace_mode == Some(TraceMode::Buffered)).then_some(TraceBuffer {
            memory: self.scan.num_memories + 1,
            pos: self.scan.num_globals,
        })
    }

    /// Copies defined function `i` into `out`, with its function indices
    /// shifted.
    pub(crate) fn copy(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        body::copy_body(&self.ctx(), &self.scan.bodies[i], out)
    }

    /// Sets every body at once (for a caller that rewrote them in parallel).
    pub(crate) fn set_bodies(
        &mut self,
        rewritten: Vec<(Vec<u8>, Option<BlockMarks>)>,
    ) -> Result<()> {
        for (body, marks) in rewritten {
            self.code.push(&body)?;
            self.marks.push(marks);
        }
        Ok(())
    }

    /// Assembles the module once every function was taken, appends
    /// `custom_sections`, and validates the result unless told not to
    /// ([`Instrumenter::set_output_check`]).
    pub fn finish(self, custom_sections: &[(&str, &[u8])]) -> Result<Instrumented> {
        let check = self.check;
        let a = self.assemble(custom_sections, false, None)?;
        let (out, body_starts) = match a.code_at {
            Some(at) => splice_code(&a.module, at, a.code, a.helpers)?,
            None => (a.module, Vec::new()),
        };
        let code_map = code_map(a.marks, &body_starts, a.num_imported);
        if check == OutputCheck::Validate {
            validate_streamed(&out[..])?;
        }
        Ok(Instrumented {
            bytes: out,
            layout: a.layout,
            code_map,
        })
    }

    /// [`Instrumenter::finish`], with the module written to `out` from its
    /// current position (the code copied from its spill file, if it has
    /// one, and the contents of the custom sections from the `holes` left
    /// in the input file, if the module was [`hollow`](super::hollow())ed)
    /// instead of returned. Validating it reads it back.
    pub fn finish_into(
        self,
        custom_sections: &[(&str, &[u8])],
        out: &mut File,
        holes: Option<&Holes>,
    ) -> Result<Written> {
        let check = self.check;
        let input = self.bytes;
        let a = self.assemble(custom_sections, true, holes)?;
        let start = out.stream_position()?;
        let deferred = DeferredFrom {
            deferred: &a.deferred,
            input,
            holes,
        };
        let body_starts = write_code(&a.module, a.code_at, a.code, a.helpers, deferred, out)?;
        let code_map = code_map(a.marks, &body_starts, a.num_imported);
        if check == OutputCheck::Validate {
            let end = out.stream_position()?;
            out.seek(SeekFrom::Start(start))?;
            validate_streamed(Read::by_ref(out).take(end - start))?;
        }
        Ok(Written {
            layout: a.layout,
            code_map,
        })
    }

    /// Everything but the code, assembled once every function was taken;
    /// with `defer_custom`, the unchanged custom sections' contents are left
    /// to be written from the input ([`Deferred`]).
    fn assemble(
        mut self,
        custom_sections: &[(&str, &[u8])],
        defer_custom: bool,
        holes: Option<&Holes>,
    ) -> Result<Assembled> {
        if self.code.len() != self.num_functions() {
            return Err(WasmError::PlanCount {
                expected: self.num_functions(),
                got: self.code.len(),
            });
        }
        let trace_buffer = self.trace_buffer();
        let closers = self.closer_bodies()?;
        let layout = self.layout.finish()?;
        let mut segments = layout.init_segments();
        segments.extend(self.ppp_segments);
        let memory = self.scan.num_memories;
        let mut asm = Assembler {
            scan: self.scan,
            shift: self.shift,
            types: &self.types,
            trace_ty: self.trace_ty,
            trace_buffer,
            helper_ty: self.helper_ty,
            closer_ty: self.closer_ty,
            num_closers: closers.len(),
            memory,
            pages: layout.pages(),
            segments,
            custom_sections,
            code_at: None,
            defer_custom,
            deferred: Vec::new(),
            holes,
            globals: &self.globals,
        };
        let mut module = wasm_encoder::Module::new();
        asm.parse_core_module(&mut module, wasmparser::Parser::new(0), self.bytes)
            .map_err(reencode_error)?;
        Ok(Assembled {
            module: module.finish(),
            code_at: asm.code_at,
            deferred: asm.deferred,
            helpers: asm
                .helper_ty
                .map(|_| lower::hash_helper_body(memory))
                .into_iter()
                .chain(closers)
                .collect(),
            layout,
            code: self.code,
            marks: self.marks,
            num_imported: self.scan.num_imported_funcs,
        })
    }
}

/// The module around its code, and the code.
struct Assembled {
    /// Every section but the code, with an empty code section at `code_at`.
    module: Vec<u8>,
    code_at: Option<usize>,
    /// Custom sections whose contents are still in the input.
    deferred: Vec<Deferred>,
    /// The hash helper's body and the member loops' helpers, the last
    /// entries of the code section.
    helpers: Vec<wasm_encoder::Function>,
    layout: CounterLayout,
    code: CodeEntries,
    marks: Vec<Option<BlockMarks>>,
    num_imported: u32,
}

/// Validates the module read from `input` a piece at a time (the check
/// of the rewriter, [`OutputCheck::Validate`]):
/// wasmparser's incremental parser asks for one section (the code section
/// one function body) at a time, so no more than the largest of them, or
/// [`VALIDATE_CHUNK`], is held; reading the module back whole would hold
/// all of it, more than the instrumenter's whole working set for a small
/// module.
fn validate_streamed(mut input: impl Read) -> Result<()> {
    let invalid = |e: wasmparser::BinaryReaderError| WasmError::InvalidOutput {
        offset: e.offset(),
        message: e.message().to_string(),
    };
    let mut validator = wasmparser::Validator::new_with_features(module::features());
    let mut parser = wasmparser::Parser::new(0);
    let mut allocs = wasmparser::FuncValidatorAllocations::default();
    let (mut buf, mut pos, mut eof) = (Vec::new(), 0, false);
    loop {
        let (consumed, payload) = match parser.parse(&buf[pos..], eof).map_err(invalid)? {
            wasmparser::Chunk::NeedMoreData(hint) => {
                buf.drain(..pos);
                pos = 0;
                let want = usize::try_from(hint)
                    .unwrap_or(usize::MAX)
                    .max(VALIDATE_CHUNK);
                eof = Read::by_ref(&mut input)
                    .take(want as u64)
                    .read_to_end(&mut buf)?
                    == 0;
                continue;
            }
            wasmparser::Chunk::Parsed { consumed, payload } => (consumed, payload),
        };
        let end = matches!(payload, wasmparser::Payload::End(_));
        if let wasmparser::Payload::CodeSectionEntry(body) = &payload {
            let func = validator.code_section_entry(body).map_err(invalid)?;
            let mut v = func.into_validator(std::mem::take(&mut allocs));
            v.validate(body).map_err(invalid)?;
            allocs = v.into_allocations();
        } else {
            validator.payload(&payload).map_err(invalid)?;
        }
        pos += consumed;
        if end {
            return Ok(());
        }
    }
}

/// The largest buffer [`Instrumenter::function`] keeps from one body to
/// the next.
const SCRATCH_KEEP: usize = 16 << 10;

/// Bytes [`validate_streamed`] reads at least at once.
const VALIDATE_CHUNK: usize = 16 << 10;

/// The code maps of the instrumented functions: their block marks moved to
/// where their bodies begin in the module.
fn code_map(
    marks: Vec<Option<BlockMarks>>,
    body_starts: &[usize],
    num_imported: u32,
) -> Vec<CodeMap> {
    marks
        .into_iter()
        .zip(body_starts)
        .enumerate()
        .filter_map(|(i, (m, &base))| {
            let blocks = m?
                .into_iter()
                .map(|(rel, n)| (base as u32 + rel, n))
                .collect();
            Some(CodeMap {
                func_index: num_imported + i as u32,
                blocks,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module of `n` functions, the last returning `last` (an `i32`, or
    /// an `i64` that makes it invalid), bigger than [`VALIDATE_CHUNK`] for
    /// a few hundred functions.
    fn functions(n: usize, last: &str) -> Vec<u8> {
        let mut wat = String::from("(module (memory 1) (@custom \"c\" (after code) \"x\")");
        for i in 0..n {
            let ret = if i + 1 == n { last } else { "(i32.const 7)" };
            wat.push_str(&format!(
                "(func (param i32) (result i32) (if (local.get 0) (then (drop (i32.load (local.get 0))))) {ret})"
            ));
        }
        wat::parse_str(wat + ")").unwrap()
    }

    fn streamed(module: &[u8]) -> std::result::Result<(), String> {
        validate_streamed(module).map_err(|e| e.to_string())
    }

    /// The oracle: wasmparser's whole-module validation, in the message
    /// the rewriter's error gives.
    fn whole(module: &[u8]) -> std::result::Result<(), String> {
        wasmparser::Validator::new_with_features(module::features())
            .validate_all(module)
            .map(|_| ())
            .map_err(|e| {
                WasmError::InvalidOutput {
                    offset: e.offset(),
                    message: e.message().to_string(),
                }
                .to_string()
            })
    }

    fn may_throw_or_catch(body: &str) -> bool {
        let wat = format!("(module (tag $t) (func {body}) (func))");
        let module = wat::parse_str(wat).unwrap();
        Scanned::validated(&module).unwrap().may_throw_or_catch()
    }

    #[test]
    fn throwing_or_catching_anywhere_is_found() {
        assert!(!may_throw_or_catch("nop"));
        assert!(!may_throw_or_catch("(block (try_table (nop)))"));
        assert!(may_throw_or_catch(
            "(block $h (try_table (catch_all $h) (nop)))"
        ));
        assert!(may_throw_or_catch("(throw $t)"));
        // Unreachable code counts too: the answer must not need a CFG.
        assert!(may_throw_or_catch("(return) (throw $t)"));
        assert!(may_throw_or_catch(
            "(block $h (result exnref) (try_table (catch_all_ref $h) (nop)) (unreachable)) (throw_ref)"
        ));
    }

    #[test]
    fn validators_carry_over_to_the_same_module_only() {
        let (two, three) = (functions(2, "(i32.const 1)"), functions(3, "(i32.const 1)"));
        let invalid = functions(2, "(i64.const 1)");
        let validators = |m: &[u8]| Scanned::validated(m).unwrap().into_validators();
        let err = Scanned::with_validators(&three, validators(&two)).err();
        assert!(err.is_some_and(|e| e.to_string().contains("another module")));
        // The bodies are still validated as they are built: the validators
        // of a valid module with the same types find the last one invalid.
        let scanned = Scanned::with_validators(&invalid, validators(&two)).unwrap();
        assert!(scanned.build(0).unwrap().is_ok());
        let err = scanned.build(1).unwrap_err().to_string();
        assert!(err.contains("type mismatch"), "{err}");
    }

    #[test]
    fn streamed_validation_agrees_with_validate_all() {
        let valid = functions(3000, "(i32.const 1)");
        assert!(valid.len() > 2 * VALIDATE_CHUNK, "read in several chunks");
        assert_eq!(streamed(&valid), Ok(()));
        let invalid = functions(3000, "(i64.const 1)");
        let err = whole(&invalid).unwrap_err();
        assert!(err.contains("type mismatch"), "{err}");
        assert_eq!(streamed(&invalid), Err(err));
        for cut in [4, 9, valid.len() / 2, valid.len() - 1] {
            let truncated = &valid[..cut];
            assert_eq!(streamed(truncated), whole(truncated), "cut at {cut}");
            assert!(streamed(truncated).is_err());
        }
    }
}

/// Calls `visit` with each list of actions of `plan`.
fn each_action_list<'p>(plan: &'p FunctionPlan, mut visit: impl FnMut(&'p [Action])) {
    plan.edges.iter().for_each(&mut visit);
    if let Some(inter) = &plan.interproc {
        visit(&inter.entry);
        visit(&inter.exit);
        for c in &inter.calls {
            visit(&c.before);
            visit(&c.after);
        }
    }
}

/// The member loops of `actions`, in order.
fn member_loops<'p>(actions: &'p [Action], out: &mut Vec<&'p ForEachMember>) {
    for a in actions {
        match a {
            Action::ForEachMember(m) => out.push(m),
            Action::IfNonZero(b) => {
                member_loops(&b.then, out);
                member_loops(&b.otherwise, out);
            }
            _ => {}
        }
    }
}

/// The functions whose tables `actions` count in ([`Action::In`]).
fn foreign_funcs(actions: &[Action], out: &mut std::collections::BTreeSet<u32>) {
    for a in actions {
        match a {
            Action::In(inner) => {
                out.insert(inner.func);
            }
            Action::ForEachMember(m) => foreign_funcs(&m.body, out),
            Action::IfNonZero(b) => {
                foreign_funcs(&b.then, out);
                foreign_funcs(&b.otherwise, out);
            }
            _ => {}
        }
    }
}
