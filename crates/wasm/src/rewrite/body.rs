//! Rewriting one function body in a single pass.
//!
//! Instructions are copied byte for byte unless they must change: branches
//! whose depth moves because pad blocks were inserted (or that are retargeted
//! to a pad), and function references when an import was added. Edge code is
//! inserted where the builder's sites say.
//!
//! Only what may change is decoded: the builder lists the offsets of every
//! label opener, `else`, `end` and branch (`FunctionCfg::controls`), and
//! the bytes between them, most of the body, are copied without being read.
//! When an import shifts the function indices, calls and `ref.func` change
//! too and every instruction is decoded.
//!
//! # Landing pads (label interposition)
//! A taken conditional edge that carries code (br_if, br_table entry,
//! br_on_*, catch clause, conditional branch to the function's label) is
//! retargeted to a pad block of its own around its label:
//! ```text
//! forward label (block/if/try_table, the function body), wrapped outside:
//!   block $after (P'->R)  block $land_1 (P'->R) .. block $land_k (P'->R)
//!     <construct>  br $after
//!   end <code k> br $after  ..  end <code 1>
//!   end
//! loop label, wrapped inside:
//!   loop $L (P->R)  block $exit (P->R)  block $land_1 (P->P) .. block $land_k (P->P)
//!     <body>  br $exit
//!   end <code k> br $L  ..  end <code 1> br $L
//!   end  end
//! ```
//! P' is the construct's params (plus the i32 condition for `if`). Only label
//! types are needed, never an operand type stack. Every original frame
//! remembers the emitted label index of its label and of its pads, so a new
//! branch depth is O(1): `height - 1 - index`.

use super::lower::Lowerer;
use super::peel::{self, Peel};
use super::types::{self, NewTypes, PadKey};
use crate::cfg::site::{open_blockty, Construct, Phase, Site, SiteKind};
use crate::cfg::EdgeKind;
use crate::cfg::FunctionCfg;
use crate::error::{Result, WasmError};
use crate::module::ModuleScan;
use pathprof_graph::{Cfg, EdgeId, NodeId};
use pathprof_techniques::{Action, CallActions, FunctionPlan, Interproc, PathTable};
use std::ops::Range;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Encode, InstructionSink};
use wasmparser::{
    BinaryReader, FunctionBody, Operator, OperatorsReader, OperatorsReaderAllocations,
};

const NONE: u32 = u32::MAX;
/// wasmparser's limit on the locals of one function.
const MAX_LOCALS: u64 = 50_000;

/// What every body rewrite of one module shares.
pub(crate) struct ModuleCtx<'a> {
    pub bytes: &'a [u8],
    pub scan: &'a ModuleScan<'a>,
    /// Added to every defined function's index (1 when the trace import is added).
    pub shift: u32,
    pub types: &'a NewTypes,
    /// Largest loop, in bytes of code, that is peeled (0: none); see `peel`.
    pub peel_max_bytes: u32,
}

impl ModuleCtx<'_> {
    fn func_index(&self, f: u32) -> u32 {
        if f >= self.scan.num_imported_funcs {
            f + self.shift
        } else {
            f
        }
    }
}

fn read_err(e: wasmparser::BinaryReaderError) -> WasmError {
    WasmError::invalid(&e)
}

/// Copies a body unchanged except for shifted function indices.
pub(crate) fn copy_body(
    ctx: &ModuleCtx<'_>,
    body: &FunctionBody<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let range = body.range();
    if ctx.shift == 0 {
        out.extend_from_slice(&ctx.bytes[range]);
        return Ok(());
    }
    let mut ops = body.get_operators_reader().map_err(read_err)?;
    // Unchanged instructions are copied in runs, from `run` to the current one.
    let mut run = range.start;
    while !ops.eof() {
        let start = ops.original_position();
        let op = ops.read().map_err(read_err)?;
        if let Some(f) = shifted_function(ctx, &op) {
            out.extend_from_slice(&ctx.bytes[run..start]);
            encode_shifted(&op, f, out);
            run = ops.original_position();
        }
    }
    out.extend_from_slice(&ctx.bytes[run..range.end]);
    Ok(())
}

/// The new index when `op` refers to a defined function whose index moves.
fn shifted_function(ctx: &ModuleCtx<'_>, op: &Operator<'_>) -> Option<u32> {
    if ctx.shift == 0 {
        return None;
    }
    match *op {
        Operator::Call { function_index }
        | Operator::ReturnCall { function_index }
        | Operator::RefFunc { function_index } => {
            (function_index >= ctx.scan.num_imported_funcs).then(|| ctx.func_index(function_index))
        }
        _ => None,
    }
}

/// Re-encodes a call, return_call or ref.func with function index `f`.
fn encode_shifted(op: &Operator<'_>, f: u32, out: &mut Vec<u8>) {
    let mut sink = InstructionSink::new(out);
    match op {
        Operator::Call { .. } => sink.call(f),
        Operator::ReturnCall { .. } => sink.return_call(f),
        _ => sink.ref_func(f),
    };
}

/// What an `Open` site says of the construct it opens: its kind and range
/// of pad edges.
type Open = (Construct, u32, u32);

/// The instructions of a body the rewriter decodes.
enum Source<'a> {
    /// All of them, in order.
    Every(OperatorsReader<'a>),
    /// Those at the offsets the builder listed (`FunctionCfg::controls`);
    /// the bytes between them are copied without being read.
    Listed {
        bytes: &'a [u8],
        offsets: &'a [u32],
        next: usize,
        /// Where the body ends in `bytes`.
        end: usize,
        /// The frame stack of the reader of one instruction, reused.
        allocs: Option<OperatorsReaderAllocations>,
    },
}

/// Where a [`Source`] is, to come back to.
enum SourceMark<'a> {
    Every(OperatorsReader<'a>),
    Listed(usize),
}

impl<'a> Source<'a> {
    fn mark(&self) -> SourceMark<'a> {
        match self {
            Source::Every(ops) => SourceMark::Every(ops.clone()),
            Source::Listed { next, .. } => SourceMark::Listed(*next),
        }
    }

    fn seek(&mut self, mark: &SourceMark<'a>) {
        match (self, mark) {
            (Source::Every(ops), SourceMark::Every(m)) => *ops = m.clone(),
            (Source::Listed { next, .. }, SourceMark::Listed(m)) => *next = *m,
            _ => unreachable!("a mark of another source"),
        }
    }

    fn listed(bytes: &'a [u8], offsets: &'a [u32], end: usize) -> Self {
        Source::Listed {
            bytes,
            offsets,
            next: 0,
            end,
            allocs: Some(OperatorsReaderAllocations::default()),
        }
    }

    /// Offset of the next instruction to decode.
    fn next(&self) -> Option<usize> {
        match self {
            Source::Every(ops) => (!ops.eof()).then(|| ops.original_position()),
            Source::Listed { offsets, next, .. } => offsets.get(*next).map(|&o| o as usize),
        }
    }

    /// The instruction at `start` and where it ends, when it is one to
    /// decode.
    fn read(&mut self, start: usize) -> Result<Option<(Operator<'a>, usize)>> {
        if self.next() != Some(start) {
            return Ok(None);
        }
        match self {
            Source::Every(ops) => {
                let op = ops.read().map_err(read_err)?;
                Ok(Some((op, ops.original_position())))
            }
            Source::Listed {
                bytes,
                next,
                end,
                allocs,
                ..
            } => {
                *next += 1;
                if let Some(op) = crate::module::frame_op(bytes, start).map_err(read_err)? {
                    return Ok(Some(op));
                }
                let reader = BinaryReader::new(&bytes[start..*end], start);
                let mut ops =
                    OperatorsReader::new_with_allocs(reader, allocs.take().unwrap_or_default());
                let op = ops.read().map_err(read_err)?;
                let at = ops.original_position();
                *allocs = Some(ops.into_allocations());
                Ok(Some((op, at)))
            }
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    Function,
    Forward,
    Loop,
}

/// An original control frame as emitted.
#[derive(Copy, Clone, Debug)]
struct Frame {
    kind: Kind,
    /// Emitted label index of the original label.
    label: u32,
    /// Pad j (from 1) has emitted label index `pad_base + j`; for a forward
    /// construct `pad_base` is `$after`, for a loop `$exit`.
    pad_base: u32,
    /// Range of this frame's pads in `Rewriter::active`.
    pads: (u32, u32),
    /// For the current instruction only: the label a taken branch to this
    /// frame goes to instead, NONE if unchanged.
    retarget: u32,
}

struct Rewriter<'a, 'o> {
    ctx: &'a ModuleCtx<'a>,
    fcfg: &'a FunctionCfg,
    plan: &'a FunctionPlan,
    lower: Lowerer,
    out: &'o mut Vec<u8>,
    frames: Vec<Frame>,
    /// Number of labels open in the emitted code (the function's included).
    height: u32,
    /// Pad edges that carry code, each construct's contiguous.
    active: Vec<EdgeId>,
    /// Per edge: its pad number (from 1) within its target label.
    pad_number: Vec<u32>,
    /// Frames retargeted for the current instruction.
    marked: Vec<u32>,
    depths: Vec<u32>,
    catches: Vec<wasm_encoder::Catch>,
    /// Module byte range of instructions kept unchanged but not yet copied.
    run: (usize, usize),
    /// Original blocks in code order: `(offset of first instruction, node)`.
    block_starts: Vec<(u32, NodeId)>,
    next_block: usize,
    /// Where each block's first instruction landed, relative to the body.
    marks: Vec<(u32, NodeId)>,
    /// The loops to peel, in code order, and the next one to come.
    peels: Vec<Peel>,
    next_peel: usize,
    /// The peeled loop being emitted.
    peeling: Option<Peeling<'a>>,
    /// Index in `Interproc::calls` of the next call site with actions.
    next_call: usize,
}

/// A peeled loop being emitted: its first copy (`proper` false) or the loop
/// proper.
struct Peeling<'a> {
    proper: bool,
    /// Emitted label index of the first copy's `$again`.
    again: u32,
    /// Where the body begins: the source, the site and block cursors, and
    /// the `loop` instruction with its open site.
    source: SourceMark<'a>,
    cursor: usize,
    next_block: usize,
    raw: (usize, usize),
    open: Option<Open>,
}

/// Rewrites the body of one planned function into `out`. `lower` comes with
/// everything but its locals, which are assigned here. Returns where each
/// original block's first instruction is in the new body (byte offset from
/// the body's start, in code order): the map from a frame of the
/// instrumented code back to the block it was executing.
pub(crate) fn rewrite_body(
    ctx: &ModuleCtx<'_>,
    fcfg: &FunctionCfg,
    plan: &FunctionPlan,
    uses: super::PlanUse,
    mut lower: Lowerer,
    body: &FunctionBody<'_>,
    out: &mut Vec<u8>,
) -> Result<Vec<(u32, NodeId)>> {
    let range = body.range();
    // Locals: the original declarations copied, then one declaration per
    // register and, when an array path table is indexed by a register, one
    // for the scratch address.
    let mut locals = body.get_locals_reader().map_err(read_err)?;
    let groups_start = locals.original_position();
    let params = ctx
        .scan
        .func_signature(fcfg.func_index)
        .map_or(0, |s| s.params.len());
    let mut total = params as u64;
    for _ in 0..locals.get_count() {
        total += u64::from(locals.read().map_err(read_err)?.0);
    }
    let ops_start = locals.original_position();
    // Array addresses, PPP table indices and hash entries go through it.
    let scratch = uses.stack
        || uses.foreign
        || (uses.count_path && (plan.paths != PathTable::None || plan.ppp.is_some()));
    let added = plan.registers.len() as u32 + u32::from(scratch);
    if total + u64::from(added) > MAX_LOCALS {
        return Err(WasmError::BadPlan {
            func_index: fcfg.func_index,
            reason: format!("{total} locals plus {added} for the instrumentation exceed the limit of {MAX_LOCALS}"),
        });
    }
    (locals.get_count() + added).encode(out);
    out.extend_from_slice(&ctx.bytes[groups_start..ops_start]);
    let base = total as u32;
    lower.regs = plan
        .registers
        .iter()
        .enumerate()
        .map(|(r, &w)| (base + r as u32, w))
        .collect();
    lower.scratch = base + plan.registers.len() as u32;
    // A module register holds plain values, whichever function reads it.
    lower.scaled =
        Lowerer::scaled(plan.paths, plan.ppp.is_some(), &plan.registers) && !uses.globals;
    for &w in &plan.registers {
        1u32.encode(out);
        types::val_type_for(w).encode(out);
    }
    if scratch {
        1u32.encode(out);
        wasm_encoder::ValType::I32.encode(out);
    }

    let block_starts = block_starts(fcfg);
    let peels = peel::plan_peels(
        ctx.bytes,
        range.end,
        fcfg,
        plan,
        &block_starts,
        ctx.peel_max_bytes,
    );
    // The body once, its instrumentation, and the peeled loops again with
    // theirs. An estimate short by a few bytes would double the buffer,
    // and the old and new buffers of the largest function, alive at once,
    // were the instrumenter's peak (lz4: 69 KB reserved, 74 KB written).
    let peeled: usize = peels.iter().map(|p| (p.end - p.at) as usize).sum();
    out.reserve(range.len() + range.len() / 4 + 24 * uses.actions + 2 * peeled + 64);
    // A peeled loop's blocks are marked in both of its copies.
    let remarked: usize = peels
        .iter()
        .map(|p| {
            let from = block_starts.partition_point(|&(o, _)| o < p.at);
            let to = block_starts.partition_point(|&(o, _)| o <= p.end);
            to - from
        })
        .sum();
    let mut rw = Rewriter {
        ctx,
        fcfg,
        plan,
        lower,
        out,
        frames: Vec::with_capacity(16),
        height: 0,
        active: Vec::new(),
        pad_number: vec![0; fcfg.cfg.num_edges()],
        marked: Vec::new(),
        depths: Vec::new(),
        catches: Vec::new(),
        run: (ops_start, ops_start),
        next_block: 0,
        // One mark per block start, and per block of a peeled loop one
        // more, kept until the module is assembled.
        marks: Vec::with_capacity(block_starts.len() + remarked),
        block_starts,
        peels,
        next_peel: 0,
        peeling: None,
        next_call: 0,
    };
    let source = if ctx.shift == 0 {
        Source::listed(ctx.bytes, &fcfg.controls, range.end)
    } else {
        // Calls and `ref.func` change too: every instruction is decoded.
        Source::Every(body.get_operators_reader().map_err(read_err)?)
    };
    rw.run(source, ops_start..range.end)?;
    Ok(rw.marks)
}

/// Where the call instruction at module offset `start` ends (`end`: where
/// the body ends).
fn call_end(bytes: &[u8], start: usize, end: usize) -> Result<usize> {
    let reader = BinaryReader::new(&bytes[start..end], start);
    let mut ops = OperatorsReader::new(reader);
    ops.read().map_err(read_err)?;
    Ok(ops.original_position())
}

/// The function's non-empty blocks by the offset of their first instruction.
fn block_starts(fcfg: &FunctionCfg) -> Vec<(u32, NodeId)> {
    let mut starts: Vec<(u32, NodeId)> = fcfg
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(n, b)| {
            b.as_ref()
                .filter(|b| b.instrs > 0)
                .map(|b| (b.offset, NodeId::new(n)))
        })
        .collect();
    starts.sort_unstable();
    starts
}

impl<'a> Rewriter<'a, '_> {
    /// Edge `e`'s actions where the code being emitted is: the plan's, or
    /// the loop proper's of a peeled loop.
    fn actions(&self, e: EdgeId) -> &[Action] {
        if let Some(Peeling { proper: true, .. }) = self.peeling {
            if let Some(a) = self.peels[self.next_peel].proper.get(e) {
                return a;
            }
        }
        &self.plan.edges[e.index()]
    }

    fn has_code(&self, e: EdgeId) -> bool {
        let (entry, exit) = self.entry_exit(e);
        !(self.actions(e).is_empty() && entry.is_empty() && exit.is_empty())
    }

    /// The function's entry and exit actions that run on edge `e`
    /// (`Interproc`): the entry edge runs the entry actions first, and an
    /// edge to EXIT that leaves the function normally (not by a trap or a
    /// throw) runs the exit actions last.
    fn entry_exit(&self, e: EdgeId) -> (&'a [Action], &'a [Action]) {
        let Some(inter) = self.plan.interproc.as_deref() else {
            return (&[], &[]);
        };
        match self.fcfg.edge_kinds[e.index()] {
            EdgeKind::Entry => (&inter.entry, &[]),
            EdgeKind::TailCall if self.tail_replaces_exit(inter, e) => (&[], &[]),
            _ if returns(self.fcfg, e) => (&[], &inter.exit),
            _ => (&[], &[]),
        }
    }

    /// Whether the tail call that tail-call edge `e` leaves by has
    /// actions that run instead of the exit actions.
    fn tail_replaces_exit(&self, inter: &Interproc, e: EdgeId) -> bool {
        let block = self.fcfg.cfg.src(e);
        inter.calls.iter().any(|c| {
            c.instead_of_exit
                && self
                    .fcfg
                    .calls
                    .get(c.site as usize)
                    .is_some_and(|site| site.tail && site.block == block)
        })
    }

    fn code(&mut self, e: EdgeId) {
        if self.has_code(e) {
            let (entry, exit) = self.entry_exit(e);
            self.emit(entry);
            self.flush();
            let mut out = std::mem::take(self.out);
            self.lower.emit(&mut out, self.actions(e));
            *self.out = out;
            self.emit(exit);
        }
    }

    /// Emits `actions` where the code being written is.
    fn emit(&mut self, actions: &[Action]) {
        if !actions.is_empty() {
            self.flush();
            self.lower.emit(self.out, actions);
        }
    }

    /// The actions of the call site at module offset `start`, if it has
    /// some (`Interproc::calls`, in code order as the sites are).
    fn call_at(&self, start: usize) -> Option<&'a CallActions> {
        let calls = &self.plan.interproc.as_deref()?.calls;
        let c = calls.get(self.next_call)?;
        let site = self.fcfg.calls.get(c.site as usize)?;
        (site.offset as usize == start).then_some(c)
    }

    /// Module offset of the next call site with actions.
    fn next_call_offset(&self) -> Option<usize> {
        let calls = &self.plan.interproc.as_deref()?.calls;
        let c = calls.get(self.next_call)?;
        Some(self.fcfg.calls.get(c.site as usize)?.offset as usize)
    }

    fn sink(&mut self) -> InstructionSink<'_> {
        self.flush();
        InstructionSink::new(self.out)
    }

    /// Keeps an instruction unchanged; runs of them are copied at once.
    fn copy(&mut self, raw: &[u8]) {
        let start = raw.as_ptr() as usize - self.ctx.bytes.as_ptr() as usize;
        self.keep(start, start + raw.len());
    }

    /// Keeps the module bytes `start..end` unchanged.
    fn keep(&mut self, start: usize, end: usize) {
        if start == end {
            return;
        }
        if start != self.run.1 {
            self.flush();
            self.run = (start, start);
        }
        self.run.1 = end;
    }

    fn flush(&mut self) {
        let (start, end) = self.run;
        if end > start {
            self.out.extend_from_slice(&self.ctx.bytes[start..end]);
        }
        self.run = (end, end);
    }

    /// Keeps the pads of `fcfg.pad_edges[start..start + len]` that carry
    /// code and numbers them from 1; returns their range in `active`.
    fn activate(&mut self, start: u32, len: u32) -> (u32, u32) {
        let first = self.active.len() as u32;
        for &e in &self.fcfg.pad_edges[start as usize..(start + len) as usize] {
            if self.has_code(e) {
                self.active.push(e);
                self.pad_number[e.index()] = self.active.len() as u32 - first;
            }
        }
        (first, self.active.len() as u32 - first)
    }

    /// New relative depth of an original branch of depth `depth`.
    fn depth(&self, depth: u32) -> u32 {
        let f = &self.frames[self.frames.len() - 1 - depth as usize];
        let target = if f.retarget != NONE {
            f.retarget
        } else {
            f.label
        };
        self.height - 1 - target
    }

    fn pad_type(&self, key: Option<PadKey>) -> Option<BlockType> {
        key.and_then(|k| self.ctx.types.pad(k))
            .map(BlockType::FunctionType)
    }

    /// Opens the function's own label and, when taken edges to it carry
    /// code, its pads.
    fn open_function(&mut self) {
        let pads = self.activate(self.fcfg.func_pads.0, self.fcfg.func_pads.1);
        self.frames.push(Frame {
            kind: Kind::Function,
            label: 0,
            pad_base: 1,
            pads,
            retarget: NONE,
        });
        self.height = 1;
        if pads.1 == 0 {
            return;
        }
        let ty = self
            .ctx
            .scan
            .func_types
            .get(self.fcfg.func_index as usize)
            .copied()
            .unwrap_or(0);
        let results = self
            .ctx
            .scan
            .types
            .get(ty as usize)
            .and_then(Option::as_ref)
            .map(|s| &s.results[..]);
        let bt = match results {
            None | Some([]) => BlockType::Empty,
            Some([t]) => BlockType::Result(types::val_type(*t)),
            Some(_) => self
                .pad_type(types::func_pad_key(self.ctx.scan, ty))
                .unwrap_or(BlockType::Empty),
        };
        for _ in 0..=pads.1 {
            self.sink().block(bt);
        }
        self.height += pads.1 + 1;
    }

    /// The site at `cursor` if it is at `offset` in `phase`.
    fn site_at(&self, cursor: usize, offset: usize, phase: Phase) -> Option<Site> {
        self.fcfg
            .sites
            .get(cursor)
            .filter(|s| s.offset as usize == offset && s.kind.phase() == phase)
            .copied()
    }

    /// The next offset where something happens: a site, the start of a
    /// block, or an instruction to decode.
    fn next_event(&self, source: &Source<'_>, cursor: usize) -> Option<usize> {
        // Plain comparisons: this runs once or twice per event, and an
        // iterator over three options was 1.8 % of instrumenting SQLite.
        let min = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let site = self.fcfg.sites.get(cursor).map(|s| s.offset as usize);
        let block = self.block_starts.get(self.next_block).map(|b| b.0 as usize);
        let call = self.next_call_offset();
        min(min(min(site, block), source.next()), call)
    }

    /// One pass over the body: the bytes between events are kept as they
    /// are, sites and block marks are applied at their offsets, and the
    /// instructions the source decodes are rewritten.
    fn run(&mut self, mut source: Source<'a>, ops: Range<usize>) -> Result<()> {
        let mut cursor = 0;
        self.open_function();
        // Everything before `pos` is copied or rewritten.
        let mut pos = ops.start;
        while let Some(start) = self.next_event(&source, cursor) {
            self.keep(pos, start);
            pos = start;
            while let Some(site) = self.site_at(cursor, start, Phase::Before) {
                match site.kind {
                    SiteKind::Before(e) => self.code(e),
                    SiteKind::SynthElse(e) if self.has_code(e) => {
                        self.sink().else_();
                        self.code(e);
                    }
                    _ => {}
                }
                cursor += 1;
            }
            self.mark_blocks(start);
            let call = self.call_at(start);
            if let Some(c) = call {
                self.emit(&c.before);
            }
            let Some((op, end)) = source.read(start)? else {
                if let Some(c) = call {
                    // A call the source does not decode: copied as it is.
                    let end = call_end(self.ctx.bytes, start, ops.end)?;
                    self.keep(start, end);
                    pos = end;
                    self.emit(&c.after);
                    self.next_call += 1;
                    continue;
                }
                if self.next_event(&source, cursor) == Some(start) {
                    break; // an At or After site on an instruction not decoded
                }
                continue;
            };
            pos = end;
            let open = self.take_at_sites(&mut cursor, start);
            let bytes = self.ctx.bytes;
            let peel_here = matches!(op, Operator::Loop { .. })
                && self.peeling.is_none()
                && self
                    .peels
                    .get(self.next_peel)
                    .is_some_and(|p| p.at as usize == start);
            if peel_here {
                self.open_first_copy(open);
            } else {
                self.instruction(&op, &bytes[start..end], open)?;
            }
            for f in self.marked.drain(..) {
                self.frames[f as usize].retarget = NONE;
            }
            while let Some(site) = self.site_at(cursor, start, Phase::After) {
                if let SiteKind::After(e) = site.kind {
                    self.code(e);
                }
                cursor += 1;
            }
            if let Some(c) = call {
                self.emit(&c.after);
                self.next_call += 1;
            }
            if peel_here {
                self.peeling = Some(Peeling {
                    proper: false,
                    again: self.frames.last().map_or(0, |f| f.label),
                    source: source.mark(),
                    cursor,
                    next_block: self.next_block,
                    raw: (start, end),
                    open,
                });
            } else if matches!(op, Operator::End)
                && self
                    .peels
                    .get(self.next_peel)
                    .is_some_and(|p| p.end as usize == start)
            {
                if let Some(body) = self.end_of_peeled_copy(&mut source) {
                    (cursor, pos) = body;
                }
            }
        }
        self.keep(pos, ops.end);
        self.flush();
        if let Some(offset) = self.next_call_offset() {
            return Err(WasmError::InvalidOutput {
                offset,
                message: format!(
                    "the actions of a call site of function {} were not applied",
                    self.fcfg.func_index
                ),
            });
        }
        let sites = &self.fcfg.sites;
        if cursor != sites.len() {
            return Err(WasmError::InvalidOutput {
                offset: sites[cursor].offset as usize,
                message: format!(
                    "rewrite site {:?} of function {} was not applied",
                    sites[cursor].kind, self.fcfg.func_index
                ),
            });
        }
        Ok(())
    }

    /// At a peeled loop's `loop`: `block $after`, then the loop opened as
    /// the block `$again` for its first copy.
    fn open_first_copy(&mut self, open: Option<Open>) {
        self.sink().block(BlockType::Empty);
        self.height += 1;
        self.open_loop(None, wasmparser::BlockType::Empty, open);
    }

    /// At a peeled loop's `end`, just emitted. After the first copy: opens
    /// the loop proper, moves `source` back to its body and returns the
    /// site cursor and the offset there; after the loop proper: closes
    /// `$after`.
    fn end_of_peeled_copy(&mut self, source: &mut Source<'a>) -> Option<(usize, usize)> {
        let p = self.peeling.as_mut()?;
        if p.proper {
            self.peeling = None;
            self.next_peel += 1;
            self.sink().end();
            self.height -= 1;
            return None;
        }
        p.proper = true;
        source.seek(&p.source);
        let (cursor, raw, open) = (p.cursor, p.raw, p.open);
        let body_start = raw.1;
        self.next_block = p.next_block;
        let raw = &self.ctx.bytes[raw.0..raw.1];
        self.open_loop(Some(raw), wasmparser::BlockType::Empty, open);
        Some((cursor, body_start))
    }

    /// Records where the blocks that begin at `start` land in the output.
    fn mark_blocks(&mut self, start: usize) {
        while let Some(&(o, node)) = self.block_starts.get(self.next_block) {
            if o as usize != start {
                break;
            }
            self.flush();
            self.marks.push((self.out.len() as u32, node));
            self.next_block += 1;
        }
    }

    /// Applies the sites that change the instruction at `start`: taken
    /// branches retargeted to pads; returns the construct it opens, if any.
    fn take_at_sites(&mut self, cursor: &mut usize, start: usize) -> Option<Open> {
        let mut open = None;
        while let Some(site) = self.site_at(*cursor, start, Phase::At) {
            match site.kind {
                SiteKind::Taken { edge, frame } if self.has_code(edge) => {
                    let f = &mut self.frames[frame as usize];
                    f.retarget = f.pad_base + self.pad_number[edge.index()];
                    self.marked.push(frame);
                }
                SiteKind::Open {
                    construct,
                    pads_start,
                    pads_len,
                } => {
                    open = Some((construct, pads_start, pads_len));
                }
                _ => {}
            }
            *cursor += 1;
        }
        open
    }

    fn instruction(&mut self, op: &Operator<'_>, raw: &[u8], open: Option<Open>) -> Result<()> {
        match *op {
            Operator::Block { blockty } | Operator::If { blockty } => {
                self.open_forward(raw, blockty, open, None)
            }
            Operator::TryTable { ref try_table } => {
                self.open_forward(raw, try_table.ty, open, Some(try_table))
            }
            Operator::Try { blockty } => self.open_forward(raw, blockty, open, None),
            Operator::Loop { blockty } => {
                self.open_loop(Some(raw), blockty, open);
                Ok(())
            }
            Operator::End => self.close(raw, None),
            Operator::Delegate { relative_depth } => self.close(raw, Some(relative_depth)),
            Operator::Rethrow { relative_depth } => self.branch(raw, relative_depth, |s, d| {
                s.rethrow(d);
            }),
            Operator::Br { relative_depth } => self.branch(raw, relative_depth, |s, d| {
                s.br(d);
            }),
            Operator::BrIf { relative_depth } => self.branch(raw, relative_depth, |s, d| {
                s.br_if(d);
            }),
            Operator::BrOnNull { relative_depth } => self.branch(raw, relative_depth, |s, d| {
                s.br_on_null(d);
            }),
            Operator::BrOnNonNull { relative_depth } => self.branch(raw, relative_depth, |s, d| {
                s.br_on_non_null(d);
            }),
            Operator::BrOnCast {
                relative_depth,
                from_ref_type,
                to_ref_type,
            } => {
                let (from, to) = ref_types(from_ref_type, to_ref_type)?;
                self.branch(raw, relative_depth, |s, d| {
                    s.br_on_cast(d, from, to);
                })
            }
            Operator::BrOnCastFail {
                relative_depth,
                from_ref_type,
                to_ref_type,
            } => {
                let (from, to) = ref_types(from_ref_type, to_ref_type)?;
                self.branch(raw, relative_depth, |s, d| {
                    s.br_on_cast_fail(d, from, to);
                })
            }
            Operator::BrTable { ref targets } => {
                let mut changed = false;
                self.depths.clear();
                for depth in targets.targets() {
                    let depth = depth.map_err(read_err)?;
                    let new = self.depth(depth);
                    changed |= new != depth;
                    self.depths.push(new);
                }
                let default = self.depth(targets.default());
                if changed || default != targets.default() {
                    let depths = std::mem::take(&mut self.depths);
                    self.sink().br_table(depths.iter().copied(), default);
                    self.depths = depths;
                } else {
                    self.copy(raw);
                }
                Ok(())
            }
            ref other => {
                match shifted_function(self.ctx, other) {
                    Some(f) => {
                        self.flush();
                        encode_shifted(other, f, self.out);
                    }
                    None => self.copy(raw),
                }
                Ok(())
            }
        }
    }

    fn branch(
        &mut self,
        raw: &[u8],
        depth: u32,
        encode: impl FnOnce(&mut InstructionSink<'_>, u32),
    ) -> Result<()> {
        let new = self.depth(depth);
        if new == depth {
            self.copy(raw);
        } else {
            encode(&mut self.sink(), new);
        }
        Ok(())
    }

    /// block, if or try_table: pads wrap the construct from outside.
    fn open_forward(
        &mut self,
        raw: &[u8],
        blockty: wasmparser::BlockType,
        open: Option<Open>,
        try_table: Option<&wasmparser::TryTable>,
    ) -> Result<()> {
        let pads = open.map_or((0, 0), |(_, start, len)| self.activate(start, len));
        let pad_base = self.height;
        if pads.1 > 0 {
            let bt = match open {
                Some((Construct::If, ..)) => self
                    .pad_type(types::pad_key(self.ctx.scan, Construct::If, blockty))
                    .unwrap_or(BlockType::Empty),
                _ => types::encoder_block_type(blockty),
            };
            for _ in 0..=pads.1 {
                self.sink().block(bt);
            }
            self.height += pads.1 + 1;
        }
        match try_table {
            Some(tt) if self.catches_move(tt) => {
                self.catches.clear();
                for catch in &tt.catches {
                    let c = match *catch {
                        wasmparser::Catch::One { tag, label } => wasm_encoder::Catch::One {
                            tag,
                            label: self.depth(label),
                        },
                        wasmparser::Catch::OneRef { tag, label } => wasm_encoder::Catch::OneRef {
                            tag,
                            label: self.depth(label),
                        },
                        wasmparser::Catch::All { label } => wasm_encoder::Catch::All {
                            label: self.depth(label),
                        },
                        wasmparser::Catch::AllRef { label } => wasm_encoder::Catch::AllRef {
                            label: self.depth(label),
                        },
                    };
                    self.catches.push(c);
                }
                let catches = std::mem::take(&mut self.catches);
                self.sink()
                    .try_table(types::encoder_block_type(tt.ty), catches.iter().cloned());
                self.catches = catches;
            }
            _ => self.copy(raw),
        }
        self.frames.push(Frame {
            kind: Kind::Forward,
            label: self.height,
            pad_base,
            pads,
            retarget: NONE,
        });
        self.height += 1;
        Ok(())
    }

    /// Whether any catch clause of `tt` gets a new depth.
    fn catches_move(&self, tt: &wasmparser::TryTable) -> bool {
        tt.catches.iter().any(|c| {
            let label = match *c {
                wasmparser::Catch::One { label, .. }
                | wasmparser::Catch::OneRef { label, .. }
                | wasmparser::Catch::All { label }
                | wasmparser::Catch::AllRef { label } => label,
            };
            self.depth(label) != label
        })
    }

    /// loop: pads wrap the body from inside. Without `raw`, the loop label
    /// is a `block` (a peeled loop's first copy).
    fn open_loop(
        &mut self,
        raw: Option<&[u8]>,
        blockty: wasmparser::BlockType,
        open: Option<Open>,
    ) {
        let pads = open.map_or((0, 0), |(_, start, len)| self.activate(start, len));
        match raw {
            Some(raw) => self.copy(raw),
            None => {
                self.sink().block(BlockType::Empty);
            }
        }
        let label = self.height;
        self.height += 1;
        if pads.1 > 0 {
            let land = self
                .pad_type(types::pad_key(self.ctx.scan, Construct::Loop, blockty))
                .unwrap_or(BlockType::Empty);
            self.sink().block(types::encoder_block_type(blockty));
            for _ in 0..pads.1 {
                self.sink().block(land);
            }
            self.height += pads.1 + 1;
        }
        self.frames.push(Frame {
            kind: Kind::Loop,
            label,
            pad_base: label + 1,
            pads,
            retarget: NONE,
        });
    }

    /// The instruction that ends `frame`, just popped: `end` as it is, or
    /// `delegate` with its label renumbered. That label is relative to the
    /// label around the `try`, `frame.label - 1` as emitted (a pad of the
    /// `try`'s own, if it has any: pads are plain blocks, which an
    /// exception passes through as the original's labels).
    fn end(&mut self, raw: &[u8], frame: &Frame, delegate: Option<u32>) {
        let Some(depth) = delegate else {
            return self.copy(raw);
        };
        let target = self.frames[self.frames.len() - 1 - depth as usize].label;
        let new = frame.label - 1 - target;
        if new == depth {
            self.copy(raw);
        } else {
            self.sink().delegate(new);
        }
    }

    /// Before the `end` of a peeled loop's first copy: leave `$after`, as
    /// falling off the loop does, rather than fall into the loop proper.
    fn leave_first_copy(&mut self, frame: &Frame) {
        if let Some(Peeling {
            proper: false,
            again,
            ..
        }) = self.peeling
        {
            if frame.kind == Kind::Loop && frame.label == again {
                self.sink().br(1);
            }
        }
    }

    /// `end`, or the `delegate` to `delegate` that ends a legacy `try`:
    /// closes the frame and emits its pads.
    fn close(&mut self, raw: &[u8], delegate: Option<u32>) -> Result<()> {
        let Some(frame) = self.frames.pop() else {
            return Ok(());
        };
        let (start, k) = frame.pads;
        if k == 0 {
            self.leave_first_copy(&frame);
            self.end(raw, &frame, delegate);
            self.height = frame.label;
            return Ok(());
        }
        if frame.kind == Kind::Forward {
            self.end(raw, &frame, delegate);
        }
        // Inside $land_k: leave to $after (forward) or $exit (loop).
        self.sink().br(k);
        for j in (1..=k).rev() {
            self.sink().end();
            let e = self.active[(start + j - 1) as usize];
            self.code(e);
            match frame.kind {
                // Back to the loop header: past $land_{j-1}..$land_1 and $exit.
                Kind::Loop => {
                    self.sink().br(j);
                }
                _ if j > 1 => {
                    self.sink().br(j - 1);
                }
                _ => {}
            }
        }
        self.sink().end(); // $after or $exit
        if frame.kind != Kind::Forward {
            self.leave_first_copy(&frame);
            self.copy(raw);
        }
        self.height = if frame.kind == Kind::Forward {
            frame.pad_base
        } else {
            frame.label
        };
        Ok(())
    }
}

fn ref_types(
    from: wasmparser::RefType,
    to: wasmparser::RefType,
) -> Result<(wasm_encoder::RefType, wasm_encoder::RefType)> {
    let conv = |t| {
        RoundtripReencoder
            .ref_type(t)
            .map_err(|e| WasmError::Invalid {
                offset: 0,
                message: e.to_string(),
            })
    };
    Ok((conv(from)?, conv(to)?))
}

/// Whether edge `e` leaves the function normally: to EXIT, not by a trap
/// or a throw (the edges that run the exit actions).
fn returns(fcfg: &FunctionCfg, e: EdgeId) -> bool {
    fcfg.cfg.dst(e) == Cfg::EXIT
        && !matches!(
            fcfg.edge_kinds[e.index()],
            EdgeKind::Unreachable | EdgeKind::Throw | EdgeKind::ThrowRef
        )
}

impl types::NewTypes {
    /// Records the new types the plan of one function needs.
    pub(crate) fn add_function(
        &mut self,
        scan: &ModuleScan<'_>,
        fcfg: &FunctionCfg,
        plan: &FunctionPlan,
    ) -> Result<()> {
        // An edge to EXIT also runs the function's exit actions (see
        // `Rewriter::entry_exit`): its pad is needed even if the edge has
        // no actions of its own.
        let exit = plan
            .interproc
            .as_deref()
            .is_some_and(|i| !i.exit.is_empty());
        let has_code =
            |e: &EdgeId| !plan.edges[e.index()].is_empty() || (exit && returns(fcfg, *e));
        let (start, len) = fcfg.func_pads;
        if fcfg.pad_edges[start as usize..(start + len) as usize]
            .iter()
            .any(has_code)
        {
            let ty = scan
                .func_types
                .get(fcfg.func_index as usize)
                .copied()
                .unwrap_or(0);
            if let Some(key) = types::func_pad_key(scan, ty) {
                self.add_pad(scan, key);
            }
        }
        for &i in &fcfg.padded_opens {
            let site = fcfg.sites[i as usize];
            if let SiteKind::Open {
                construct,
                pads_start,
                pads_len,
            } = site.kind
            {
                let pads = &fcfg.pad_edges[pads_start as usize..(pads_start + pads_len) as usize];
                if pads.iter().any(has_code) {
                    let body = &scan.bodies[(fcfg.func_index - scan.num_imported_funcs) as usize];
                    let blockty = open_blockty(body, site.offset).map_err(read_err)?;
                    if let Some(key) = types::pad_key(scan, construct, blockty) {
                        self.add_pad(scan, key);
                    }
                }
            }
        }
        Ok(())
    }
}
