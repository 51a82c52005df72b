//! Selective inlining (K. Vaswani, "Efficient Online Path Profiling",
//! thesis 3.4.4 step 2): the call sites that interesting interprocedural
//! path segments pass are inlined, in context, so that each such segment
//! becomes an intraprocedural path of its start function (Fig. 3.12's
//! supergraph `foo_s`), which intraprocedural PPP then numbers. The
//! thesis' own implementation profiles so; pathprof's `ippp` mode avoids
//! the code growth with per-context increments (3.4.5), and this is the
//! other side of that choice (docs/decisions.md#ippp-inlining).
//!
//! A direct `call g` marked in the plan becomes
//!
//! ```text
//! block (type g)          ;; takes g's arguments, gives its results
//!   local.set p_n ... p_1 ;; g's parameters, in fresh locals of the caller
//!   (zero) local.set l_i  ;; g's defaultable locals, as a call starts them
//!   g's body              ;; locals moved, `return` as `br` to the block
//! end
//! ```
//!
//! A marked `return_call g` is inlined the same way and followed by the
//! return it stood for; that copy is in *tail position*: its `return`s
//! return from the function and its own `return_call*` stay tail calls (so
//! deep tail recursion still runs in constant stack). In a copy not in
//! tail position, `return_call*` becomes the call and a `br` out of the
//! block (the tail call's frame is no longer the caller's to replace).
//!
//! Two sites stay calls, as inlining them would change what the program
//! does ([`InlineOutput::kept`]): a `return_call` under an exception
//! handler of its function (the callee's throw leaves the handler behind;
//! inlined code would not), and a call, not in tail position, of a
//! function with such a tail call (it would become a call under the
//! handler).
//!
//! Label depths need no change: the block stands where the body's own
//! function-level label was. A copy may have its own calls inlined, as the
//! plan's tree says, down to the segments' depth.
//!
//! Everything else is copied by wasm-encoder's `Reencode`, the name
//! section included (function indices do not move). The code metadata
//! (`metadata.code.*`) and DWARF (`.debug_*`) sections are dropped: their
//! code offsets no longer hold, and a report would name wrong source lines
//! (an instrumented module keeps its DWARF because its code map leads back
//! to the original offsets; an inlined module is a new original).

use std::collections::BTreeMap;

use wasm_encoder::reencode::{self, Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Function, Instruction};
use wasmparser::{FunctionBody, Operator, ValType};

use crate::error::{Result, WasmError};
use crate::module::{self, ModuleScan};

/// What to inline in one function or inlined copy: per call instruction
/// (its module byte offset in the original module), the function it calls
/// and what to inline in that copy of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InlineTree {
    pub at: BTreeMap<u32, (u32, InlineTree)>,
}

impl InlineTree {
    /// The number of call sites inlined, copies' included.
    pub fn sites(&self) -> usize {
        self.at.values().map(|(_, t)| 1 + t.sites()).sum()
    }
}

/// Per function index (imports counted): its inlining tree.
pub type InlinePlan = BTreeMap<u32, InlineTree>;

/// The most locals a function may declare (wasmparser's and engines' limit).
const MAX_LOCALS: usize = 50_000;

/// Inlines `plan` into `module`. Each call the plan marks must be a direct
/// `call` or `return_call` of the function it names. The input and the
/// output are validated.
pub fn inline(module: &[u8], plan: &InlinePlan) -> Result<InlineOutput> {
    wasmparser::Validator::new_with_features(module::features())
        .validate_all(module)
        .map_err(|e| WasmError::invalid(&e))?;
    let scan = ModuleScan::new(module)?;
    let mut inliner = Inliner {
        scan: &scan,
        plan,
        next: scan.num_imported_funcs,
        failed: None,
        kept: 0,
    };
    let mut out = wasm_encoder::Module::new();
    let parsed = inliner.parse_core_module(&mut out, wasmparser::Parser::new(0), module);
    if let Some(e) = inliner.failed {
        return Err(e);
    }
    parsed.map_err(super::assemble::reencode_error)?;
    let bytes = out.finish();
    wasmparser::Validator::new_with_features(module::features())
        .validate_all(&bytes)
        .map_err(|e| WasmError::InvalidOutput {
            offset: e.offset(),
            message: e.message().to_string(),
        })?;
    Ok(InlineOutput {
        bytes,
        kept: inliner.kept,
    })
}

/// An inlined module.
#[derive(Clone, Debug)]
pub struct InlineOutput {
    pub bytes: Vec<u8>,
    /// Planned call sites left as calls, since inlining them would change
    /// what the program does (a tail call under a handler), with the sites
    /// planned below them.
    pub kept: usize,
}

struct Inliner<'s, 'a> {
    scan: &'s ModuleScan<'a>,
    plan: &'s InlinePlan,
    /// The function index of the next body.
    next: u32,
    /// The first error of a planned body (`Reencode`'s error type is
    /// `Infallible` here).
    failed: Option<WasmError>,
    kept: usize,
}

impl Reencode for Inliner<'_, '_> {
    type Error = std::convert::Infallible;

    fn parse_function_body(
        &mut self,
        code: &mut wasm_encoder::CodeSection,
        func: FunctionBody<'_>,
    ) -> std::result::Result<(), reencode::Error<Self::Error>> {
        let index = self.next;
        self.next += 1;
        let Some(tree) = self.plan.get(&index).filter(|t| !t.at.is_empty()) else {
            return reencode::utils::parse_function_body(self, code, func);
        };
        match Body::build(self.scan, index, tree) {
            Ok((f, kept)) => {
                self.kept += kept;
                code.function(&f)
            }
            Err(e) => {
                self.failed.get_or_insert(e);
                code.function(&Function::new([]))
            }
        };
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> std::result::Result<(), reencode::Error<Self::Error>> {
        if section.name().starts_with("metadata.code.") || section.name().starts_with(".debug_") {
            return Ok(());
        }
        reencode::utils::parse_custom_section(self, module, section)
    }
}

/// A planned function's new body being written.
struct Body<'s, 'a> {
    scan: &'s ModuleScan<'a>,
    func: u32,
    /// The planned function's parameters (locals before `locals`).
    params: u32,
    /// The caller's declared locals, its own first, then each copy's.
    locals: Vec<ValType>,
    code: Vec<Instruction<'a>>,
    /// Per function: whether it has a `return_call*` under a handler.
    handled_tail_calls: std::collections::HashMap<u32, bool>,
    /// Planned sites left as calls (with the sites planned below them).
    kept: usize,
}

impl<'s, 'a> Body<'s, 'a> {
    fn build(scan: &'s ModuleScan<'a>, func: u32, tree: &InlineTree) -> Result<(Function, usize)> {
        let mut b = Body {
            scan,
            func,
            params: 0,
            locals: Vec::new(),
            code: Vec::new(),
            handled_tail_calls: Default::default(),
            kept: 0,
        };
        let body = b.body_of(func)?;
        b.params = b.signature(func)?.0.len() as u32;
        b.locals = locals_of(&body)?;
        b.copy(
            &body,
            tree,
            Copied {
                base: 0,
                tail: true,
            },
        )?;
        let all = b.params as usize + b.locals.len();
        if all > MAX_LOCALS {
            return Err(b.bad(format!(
                "inlining gives it {all} locals, more than {MAX_LOCALS}"
            )));
        }
        let mut f =
            Function::new_with_locals_types(b.locals.iter().map(|&t| super::types::val_type(t)));
        for i in &b.code {
            f.instruction(i);
        }
        Ok((f, b.kept))
    }

    fn bad(&self, reason: String) -> WasmError {
        WasmError::BadPlan {
            func_index: self.func,
            reason,
        }
    }

    fn body_of(&self, f: u32) -> Result<FunctionBody<'a>> {
        let defined = f.checked_sub(self.scan.num_imported_funcs);
        defined
            .and_then(|i| self.scan.bodies.get(i as usize))
            .cloned()
            .ok_or_else(|| self.bad(format!("function {f} has no body to inline")))
    }

    fn signature(&self, f: u32) -> Result<(Vec<ValType>, u32)> {
        let ty = *self.scan.func_types.get(f as usize).ok_or_else(|| {
            self.bad(format!(
                "the plan names function {f}, which the module does not have"
            ))
        })?;
        let sig = self.scan.types.get(ty as usize).and_then(Option::as_ref);
        let sig = sig.ok_or_else(|| self.bad(format!("function {f} has no function type")))?;
        Ok((sig.params.to_vec(), ty))
    }

    /// Copies `body`'s instructions, inlining the calls `tree` marks; an
    /// inlined copy's locals start at `base` and its `return`s leave the
    /// block around it (or the function, for a copy in tail position).
    fn copy(&mut self, body: &FunctionBody<'a>, tree: &InlineTree, how: Copied) -> Result<()> {
        let mut reader = body
            .get_operators_reader()
            .map_err(|e| WasmError::invalid(&e))?;
        // Control frames open inside the copied body (the block of an
        // inlined copy, or the function's own label, is depth 0).
        let mut frames = Frames::default();
        let base = how.base;
        let mut unseen: Vec<u32> = tree.at.keys().copied().collect();
        while !reader.eof() {
            let (op, at) = reader
                .read_with_offset()
                .map_err(|e| WasmError::invalid(&e))?;
            if let Some((g, sub)) = tree.at.get(&(at as u32)) {
                unseen.retain(|&o| o != at as u32);
                if self.inline_site(&op, (*g, sub), how, &frames, at)? {
                    continue;
                }
                self.kept += 1 + sub.sites();
            }
            let depth = frames.depth();
            frames.step(&op);
            let out = match (how.tail, op) {
                (_, Operator::LocalGet { local_index }) => {
                    Instruction::LocalGet(local_index + base)
                }
                (_, Operator::LocalSet { local_index }) => {
                    Instruction::LocalSet(local_index + base)
                }
                (_, Operator::LocalTee { local_index }) => {
                    Instruction::LocalTee(local_index + base)
                }
                (false, Operator::Return) => Instruction::Br(depth),
                (
                    false,
                    op @ (Operator::ReturnCall { .. }
                    | Operator::ReturnCallIndirect { .. }
                    | Operator::ReturnCallRef { .. }),
                ) => {
                    self.code.push(self.as_call(op)?);
                    Instruction::Br(depth)
                }
                (_, op) => RoundtripReencoder
                    .instruction(op)
                    .map_err(super::assemble::reencode_error)?,
            };
            self.code.push(out);
        }
        if let Some(at) = unseen.first() {
            let g = tree.at[at].0;
            return Err(self.bad(format!(
                "the instruction at {at:#x} is not a call of function {g}"
            )));
        }
        Ok(())
    }

    /// Inlines the planned site `op` (a call of `g`) if that keeps the
    /// program's meaning; `false` leaves it a call:
    /// - a `return_call` under a handler of this body: the callee's throws
    ///   leave the handler behind, which inlined code would not;
    /// - a copy not in tail position of a callee with a `return_call*`
    ///   under one of its own handlers, which would become a call.
    fn inline_site(
        &mut self,
        op: &Operator<'a>,
        (g, sub): (u32, &InlineTree),
        how: Copied,
        frames: &Frames,
        at: usize,
    ) -> Result<bool> {
        let tail = match *op {
            Operator::Call { function_index } if function_index == g => false,
            Operator::ReturnCall { function_index } if function_index == g => true,
            _ => {
                return Err(self.bad(format!(
                    "the instruction at {at:#x} is not a call of function {g}"
                )))
            }
        };
        if tail && frames.under_handler() {
            return Ok(false);
        }
        // A tail site in a copy that returns from the function: the copy
        // does too.
        let tail = tail && how.tail;
        if !tail && self.tail_calls_under_handlers(g)? {
            return Ok(false);
        }
        self.inline_call(g, sub, tail)?;
        if matches!(op, Operator::ReturnCall { .. }) {
            self.code.push(match how.tail {
                true => Instruction::Return,
                false => Instruction::Br(frames.depth()),
            });
        }
        Ok(true)
    }

    /// Whether function `g` has a `return_call*` under one of its handlers.
    fn tail_calls_under_handlers(&mut self, g: u32) -> Result<bool> {
        if let Some(&known) = self.handled_tail_calls.get(&g) {
            return Ok(known);
        }
        let body = self.body_of(g)?;
        let mut reader = body
            .get_operators_reader()
            .map_err(|e| WasmError::invalid(&e))?;
        let mut frames = Frames::default();
        let mut found = false;
        while !reader.eof() && !found {
            let op = reader.read().map_err(|e| WasmError::invalid(&e))?;
            found = frames.under_handler()
                && matches!(
                    op,
                    Operator::ReturnCall { .. }
                        | Operator::ReturnCallIndirect { .. }
                        | Operator::ReturnCallRef { .. }
                );
            frames.step(&op);
        }
        self.handled_tail_calls.insert(g, found);
        Ok(found)
    }

    /// A `return_call*` as the plain call.
    fn as_call(&self, op: Operator<'a>) -> Result<Instruction<'a>> {
        let call = match op {
            Operator::ReturnCall { function_index } => Operator::Call { function_index },
            Operator::ReturnCallIndirect {
                type_index,
                table_index,
            } => Operator::CallIndirect {
                type_index,
                table_index,
            },
            Operator::ReturnCallRef { type_index } => Operator::CallRef { type_index },
            op => op,
        };
        RoundtripReencoder
            .instruction(call)
            .map_err(super::assemble::reencode_error)
    }

    /// `call g`, inlined with `tree`'s calls in it; with `tail`, in tail
    /// position (its returns and tail calls are the function's).
    fn inline_call(&mut self, g: u32, tree: &InlineTree, tail: bool) -> Result<()> {
        let body = self.body_of(g)?;
        let (params, ty) = self.signature(g)?;
        let declared = locals_of(&body)?;
        let base = self.params + self.locals.len() as u32;
        self.locals.extend(params.iter().copied());
        self.locals.extend(declared.iter().copied());
        self.code
            .push(Instruction::Block(BlockType::FunctionType(ty)));
        for p in (0..params.len() as u32).rev() {
            self.code.push(Instruction::LocalSet(base + p));
        }
        for (i, &t) in declared.iter().enumerate() {
            if let Some(zero) = zero(t) {
                self.code.push(zero);
                self.code
                    .push(Instruction::LocalSet(base + (params.len() + i) as u32));
            }
        }
        // The body's final `end` closes the block.
        self.copy(&body, tree, Copied { base, tail })
    }
}

/// How a body is copied.
#[derive(Copy, Clone, Debug)]
struct Copied {
    /// Its first local in the function.
    base: u32,
    /// Its `return` returns from the function: the function's own body, or
    /// a copy inlined at a tail call of one.
    tail: bool,
}

/// The control frames open in a body being read, each with whether it is
/// a handler's scope: a `try_table` with catch clauses, or a legacy
/// `try` up to its first `catch`.
#[derive(Default)]
struct Frames(Vec<bool>);

impl Frames {
    fn depth(&self) -> u32 {
        self.0.len() as u32
    }

    fn under_handler(&self) -> bool {
        self.0.contains(&true)
    }

    /// After `op`.
    fn step(&mut self, op: &Operator<'_>) {
        match op {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                self.0.push(false)
            }
            Operator::TryTable { try_table } => self.0.push(!try_table.catches.is_empty()),
            Operator::Try { .. } => self.0.push(true),
            Operator::Catch { .. } | Operator::CatchAll => {
                if let Some(top) = self.0.last_mut() {
                    *top = false;
                }
            }
            Operator::End | Operator::Delegate { .. } => {
                self.0.pop();
            }
            _ => {}
        }
    }
}

/// A body's declared locals (parameters not included), one per local.
fn locals_of(body: &FunctionBody<'_>) -> Result<Vec<ValType>> {
    let mut out = Vec::new();
    for pair in body
        .get_locals_reader()
        .map_err(|e| WasmError::invalid(&e))?
    {
        let (n, t) = pair.map_err(|e| WasmError::invalid(&e))?;
        if out.len() + n as usize > MAX_LOCALS {
            return Err(WasmError::Invalid {
                offset: body.range().start,
                message: format!("more than {MAX_LOCALS} locals"),
            });
        }
        out.extend(std::iter::repeat_n(t, n as usize));
    }
    Ok(out)
}

/// The value a call starts local of type `t` with, if `t` has a default
/// (a non-nullable reference must be set before it is read, which the
/// inlined body, valid on its own, does).
fn zero(t: ValType) -> Option<Instruction<'static>> {
    Some(match t {
        ValType::I32 => Instruction::I32Const(0),
        ValType::I64 => Instruction::I64Const(0),
        ValType::F32 => Instruction::F32Const(0.0.into()),
        ValType::F64 => Instruction::F64Const(0.0.into()),
        ValType::V128 => Instruction::V128Const(0),
        ValType::Ref(r) if r.is_nullable() => {
            Instruction::RefNull(RoundtripReencoder.heap_type(r.heap_type()).ok()?)
        }
        ValType::Ref(_) => return None,
    })
}
