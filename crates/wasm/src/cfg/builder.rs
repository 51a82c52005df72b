//! One pass over a function body that builds its CFG and its rewrite sites.
//!
//! The control stack mirrors the body's structured control frames, the
//! function's own frame at index 0, and is a plain vector: nothing recurses
//! over nesting depth. Branches to a forward label (block, if, try_table) are
//! created with a placeholder target and kept in a per-frame linked list
//! threaded through `Builder::next`; the label's join block is created at its
//! `end` only if some edge reaches it, and the list is patched then. Every
//! operation is O(1) per instruction, plus O(targets) for `br_table`.

use super::calls::{CallSite, Callee};
use super::checked::Checked;
use super::site::{Construct, Site, SiteKind};
use super::{BlockInfo, EdgeKind};
use pathprof_graph::{Cfg, EdgeId, NodeId};
use wasmparser::{
    BlockType, BrTable, Catch, FuncValidator, FunctionBody, RefType, ResumeTable, TryTable,
    ValidatorResources, VisitOperator, VisitSimdOperator,
};

const NONE: u32 = u32::MAX;

/// Why building stopped.
pub(crate) enum BuildError {
    /// The function uses an instruction the builder does not model.
    Unsupported { reason: String, offset: u32 },
    /// The body could not be read (cannot happen on a validated module).
    Read(wasmparser::BinaryReaderError),
}

impl From<wasmparser::BinaryReaderError> for BuildError {
    fn from(e: wasmparser::BinaryReaderError) -> Self {
        BuildError::Read(e)
    }
}

/// The builder's result, before it is wrapped in a `FunctionCfg`.
pub(crate) struct Built {
    pub cfg: Cfg,
    pub blocks: Vec<Option<BlockInfo>>,
    pub edge_kinds: Vec<EdgeKind>,
    pub sites: Vec<Site>,
    pub pad_edges: Vec<EdgeId>,
    /// Range in `pad_edges` of the taken edges to the function's own label.
    pub func_pads: (u32, u32),
    /// Indices in `sites` of the `Open` sites whose label has taken edges.
    pub padded_opens: Vec<u32>,
    /// Module offsets of the instructions the rewriter must decode.
    pub controls: Vec<u32>,
    /// The reachable call instructions, in code order.
    pub calls: Vec<CallSite>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum FrameKind {
    Function,
    Block,
    Loop,
    If,
    TryTable,
    /// A legacy `try`, up to its `end` or `delegate` (its handlers included).
    Try,
}

#[derive(Copy, Clone, Debug)]
struct Frame {
    kind: FrameKind,
    /// Loop: its header node; If: its condition node; Try: ENTRY, where its
    /// handlers are entered from; NONE when the construct is unreachable.
    node: u32,
    /// Head of the list of edges targeting this label (all of them for a
    /// forward label, only the taken ones for a loop or the function).
    head: u32,
    /// The `Catch` edge ENTRY -> this label, shared by every catch clause
    /// that targets it.
    catch_edge: u32,
    /// Index of this construct's `Open` site, NONE when unreachable.
    open: u32,
    else_seen: bool,
    /// Deduplication mark for br_table targets and catch clauses.
    stamp: u32,
}

impl Frame {
    fn new(kind: FrameKind, node: u32, open: u32) -> Self {
        Frame {
            kind,
            node,
            head: NONE,
            catch_edge: NONE,
            open,
            else_seen: false,
            stamp: 0,
        }
    }
}

pub(super) struct Builder {
    edges: Vec<(NodeId, NodeId)>,
    kinds: Vec<EdgeKind>,
    /// Per edge: the next edge in its target frame's list.
    next: Vec<u32>,
    /// Per edge: a taken conditional edge, which needs a landing pad when it
    /// carries code.
    pad: Vec<bool>,
    blocks: Vec<Option<BlockInfo>>,
    sites: Vec<Site>,
    pad_edges: Vec<EdgeId>,
    padded_opens: Vec<u32>,
    controls: Vec<u32>,
    calls: Vec<CallSite>,
    frames: Vec<Frame>,
    /// The block being filled, NONE in unreachable code.
    cur: u32,
    /// The current block has executed nothing but block/loop openers, so a
    /// `loop` starting now can make it its header.
    cur_plain: bool,
    /// Distinct frames of one br_table or try_table.
    scratch: Vec<u32>,
    stamp: u32,
    /// Module offset of the instruction being visited.
    pub(super) at: usize,
    /// The block that counted the instruction being visited (NONE if
    /// none did): its end moves past the instruction once it is read.
    counted: u32,
    /// Range in `pad_edges` of the taken edges to the function's own
    /// label, known at the function's `end`.
    func_pads: (u32, u32),
}

/// Builds the CFG of one function body, validating it with `validator`
/// if given ([`super::checked`]).
pub(crate) fn build(
    body: &FunctionBody<'_>,
    validator: Option<FuncValidator<ValidatorResources>>,
) -> Result<Built, BuildError> {
    // A rough guess from the body size keeps reallocation rare.
    let guess = body.range().len() / 8 + 4;
    let mut b = Builder {
        edges: Vec::with_capacity(guess),
        kinds: Vec::with_capacity(guess),
        next: Vec::with_capacity(guess),
        pad: Vec::with_capacity(guess),
        blocks: Vec::with_capacity(guess),
        sites: Vec::with_capacity(guess),
        pad_edges: Vec::new(),
        padded_opens: Vec::new(),
        controls: Vec::with_capacity(guess / 2),
        calls: Vec::new(),
        frames: Vec::with_capacity(16),
        cur: NONE,
        cur_plain: true,
        scratch: Vec::new(),
        stamp: 0,
        at: 0,
        counted: NONE,
        func_pads: (0, 0),
    };
    match validator {
        Some(validator) => {
            let (mut checked, mut ops) = Checked::new(validator, &mut b, body.get_binary_reader())?;
            checked.builder().begin(ops.original_position());
            while !ops.eof() {
                checked.visit(&mut ops)?;
            }
            checked.finish(&ops)?;
        }
        None => {
            let mut ops = body.get_operators_reader()?;
            b.begin(ops.original_position());
            while !ops.eof() {
                b.at = ops.original_position();
                ops.visit_operator(&mut b)??;
                b.counted_ends_at(ops.original_position());
            }
        }
    }
    let cfg = Cfg::from_edges(b.blocks.len(), &b.edges);
    // The vectors kept in the CFG lose what the size guess gave them too
    // much: they live through the function's planning and rewrite.
    b.blocks.shrink_to_fit();
    b.sites.shrink_to_fit();
    b.kinds.shrink_to_fit();
    b.controls.shrink_to_fit();
    b.calls.shrink_to_fit();
    Ok(Built {
        cfg,
        blocks: b.blocks,
        edge_kinds: b.kinds,
        sites: b.sites,
        pad_edges: b.pad_edges,
        func_pads: b.func_pads,
        padded_opens: b.padded_opens,
        controls: b.controls,
        calls: b.calls,
    })
}

fn unsupported(what: &str, offset: usize) -> BuildError {
    BuildError::Unsupported {
        reason: format!("`{what}` is not supported (a disabled proposal)"),
        offset: offset as u32,
    }
}

impl Builder {
    /// ENTRY, EXIT, the first block and the edge into it, before the
    /// operators at module offset `at`.
    fn begin(&mut self, at: usize) {
        self.blocks.push(None); // ENTRY
        self.blocks.push(None); // EXIT
        let first = self.node();
        let e = self.edge(0, first, EdgeKind::Entry);
        self.site(at, SiteKind::Before(e));
        self.cur = first;
        self.cur_plain = true;
        self.frames
            .push(Frame::new(FrameKind::Function, NONE, NONE));
    }

    fn node(&mut self) -> u32 {
        self.blocks.push(Some(BlockInfo {
            offset: 0,
            end: 0,
            instrs: 0,
        }));
        (self.blocks.len() - 1) as u32
    }

    /// A new edge; `dst` NONE means "patched when the target label closes".
    fn edge(&mut self, src: u32, dst: u32, kind: EdgeKind) -> EdgeId {
        let e = EdgeId::new(self.edges.len());
        let dst = if dst == NONE {
            Cfg::EXIT
        } else {
            NodeId::new(dst as usize)
        };
        self.edges.push((NodeId::new(src as usize), dst));
        self.kinds.push(kind);
        self.next.push(NONE);
        self.pad.push(false);
        e
    }

    fn site(&mut self, offset: usize, kind: SiteKind) {
        self.sites.push(Site {
            offset: offset as u32,
            kind,
        });
    }

    fn link(&mut self, frame: usize, e: EdgeId) {
        self.next[e.index()] = self.frames[frame].head;
        self.frames[frame].head = e.index() as u32;
    }

    /// Records that the current block executes the instruction being visited.
    fn count(&mut self) {
        self.cur_plain = false;
        self.count_plain();
    }

    /// `count` for an instruction that does nothing at run time (a block or
    /// loop opener): the block stays mergeable with a following loop header.
    fn count_plain(&mut self) {
        if let Some(Some(info)) = self.blocks.get_mut(self.cur as usize) {
            if info.instrs == 0 {
                info.offset = self.at as u32;
            }
            info.instrs += 1;
            self.counted = self.cur;
        }
    }

    /// The instruction just visited ends at `end`.
    pub(super) fn counted_ends_at(&mut self, end: usize) {
        if let Some(Some(info)) = self.blocks.get_mut(self.counted as usize) {
            info.end = end as u32;
        }
        self.counted = NONE;
    }

    /// The frame a relative branch depth names.
    fn frame_at(&self, depth: u32) -> usize {
        // Validation guarantees the depth is in range.
        self.frames.len() - 1 - depth as usize
    }

    /// The node a branch to `frame` arrives at, NONE for a forward label.
    fn label_node(&self, frame: usize) -> u32 {
        match self.frames[frame].kind {
            FrameKind::Function => Cfg::EXIT.index() as u32,
            FrameKind::Loop => self.frames[frame].node,
            _ => NONE,
        }
    }

    /// An edge that is the only way out of the current block: code before `offset`.
    fn jump(&mut self, offset: usize, frame: usize, kind: EdgeKind) {
        let dst = self.label_node(frame);
        let e = self.edge(self.cur, dst, kind);
        if dst == NONE {
            self.link(frame, e);
        }
        self.site(offset, SiteKind::Before(e));
    }

    /// The taken side of a conditional branch from `src` (the current block,
    /// or ENTRY for a catch clause) to `frame`.
    fn taken(&mut self, offset: usize, src: u32, frame: usize, kind: EdgeKind) -> EdgeId {
        let e = self.edge(src, self.label_node(frame), kind);
        self.pad[e.index()] = true;
        self.link(frame, e);
        self.site(
            offset,
            SiteKind::Taken {
                edge: e,
                frame: frame as u32,
            },
        );
        e
    }

    /// The not-taken side of a conditional branch: a new block right after it.
    fn not_taken(&mut self, offset: usize) {
        let n = self.node();
        let e = self.edge(self.cur, n, EdgeKind::Fallthrough);
        self.site(offset, SiteKind::After(e));
        self.cur = n;
        self.cur_plain = true;
    }

    /// An edge to EXIT that ends the current block: code before `offset`.
    fn exit(&mut self, offset: usize, kind: EdgeKind) {
        let e = self.edge(self.cur, Cfg::EXIT.index() as u32, kind);
        self.site(offset, SiteKind::Before(e));
        self.cur = NONE;
    }

    fn conditional(&mut self, offset: usize, depth: u32, kind: EdgeKind) {
        let frame = self.frame_at(depth);
        self.taken(offset, self.cur, frame, kind);
        self.not_taken(offset);
    }

    fn open(&mut self, offset: usize, kind: FrameKind, node: u32, live: bool) {
        let open = if live {
            let construct = match kind {
                FrameKind::Loop => Construct::Loop,
                FrameKind::If => Construct::If,
                FrameKind::TryTable => Construct::TryTable,
                _ => Construct::Block,
            };
            self.site(
                offset,
                SiteKind::Open {
                    construct,
                    pads_start: 0,
                    pads_len: 0,
                },
            );
            (self.sites.len() - 1) as u32
        } else {
            NONE
        };
        self.frames.push(Frame::new(kind, node, open));
    }

    /// Walks a closed frame's edge list: patches forward targets to `join`
    /// (when not NONE) and appends the pad edges to `pad_edges`, in edge order.
    fn close_list(&mut self, head: u32, join: u32) -> (u32, u32) {
        let start = self.pad_edges.len();
        let mut e = head;
        while e != NONE {
            if join != NONE {
                self.edges[e as usize].1 = NodeId::new(join as usize);
            }
            if self.pad[e as usize] {
                self.pad_edges.push(EdgeId::new(e as usize));
            }
            e = self.next[e as usize];
        }
        self.pad_edges[start..].reverse();
        (start as u32, (self.pad_edges.len() - start) as u32)
    }

    fn patch_open(&mut self, open: u32, pads: (u32, u32)) {
        if let Some(Site {
            kind:
                SiteKind::Open {
                    pads_start,
                    pads_len,
                    ..
                },
            ..
        }) = self.sites.get_mut(open as usize)
        {
            *pads_start = pads.0;
            *pads_len = pads.1;
            if pads.1 > 0 {
                self.padded_opens.push(open);
            }
        }
    }

    /// `end` of a block, if or try_table.
    fn close_forward(&mut self, offset: usize, frame: Frame) {
        let synth_else = frame.kind == FrameKind::If && !frame.else_seen && frame.node != NONE;
        if frame.head == NONE && !synth_else {
            // Only the fall-through (if any) reaches the end: not a boundary.
            self.patch_open(frame.open, (0, 0));
            return;
        }
        let mut head = frame.head;
        if self.cur != NONE {
            let e = self.edge(self.cur, NONE, EdgeKind::Fallthrough);
            self.next[e.index()] = head;
            head = e.index() as u32;
            self.site(offset, SiteKind::Before(e));
        }
        if synth_else {
            let e = self.edge(frame.node, NONE, EdgeKind::IfElse);
            self.next[e.index()] = head;
            head = e.index() as u32;
            self.site(offset, SiteKind::SynthElse(e));
        }
        let join = self.node();
        let pads = self.close_list(head, join);
        self.patch_open(frame.open, pads);
        self.cur = join;
        self.cur_plain = true;
    }
}

/// A `visit_*` method for every operator of wasmparser's list that has no
/// case of its own above: the current block runs it ([`Builder::plain`]).
macro_rules! visit_plain {
    ($( @$proposal:ident $op:ident $({ $($arg:ident: $argty:ty),* })? => $visit:ident ($($ann:tt)*))*) => {
        $( visit_plain_one!($visit $( $($arg: $argty),* )?); )*
    };
}

/// One method of [`visit_plain`], or none for the operators with a case
/// of their own.
macro_rules! visit_plain_one {
    (visit_block $($rest:tt)*) => {};
    (visit_loop $($rest:tt)*) => {};
    (visit_if $($rest:tt)*) => {};
    (visit_else $($rest:tt)*) => {};
    (visit_try_table $($rest:tt)*) => {};
    (visit_end $($rest:tt)*) => {};
    (visit_br $($rest:tt)*) => {};
    (visit_br_if $($rest:tt)*) => {};
    (visit_br_on_null $($rest:tt)*) => {};
    (visit_br_on_non_null $($rest:tt)*) => {};
    (visit_br_on_cast $($rest:tt)*) => {};
    (visit_br_on_cast_fail $($rest:tt)*) => {};
    (visit_br_table $($rest:tt)*) => {};
    (visit_return $($rest:tt)*) => {};
    (visit_unreachable $($rest:tt)*) => {};
    (visit_call $($rest:tt)*) => {};
    (visit_call_indirect $($rest:tt)*) => {};
    (visit_call_ref $($rest:tt)*) => {};
    (visit_return_call $($rest:tt)*) => {};
    (visit_return_call_indirect $($rest:tt)*) => {};
    (visit_return_call_ref $($rest:tt)*) => {};
    (visit_throw $($rest:tt)*) => {};
    (visit_throw_ref $($rest:tt)*) => {};
    (visit_try $($rest:tt)*) => {};
    (visit_catch $($rest:tt)*) => {};
    (visit_catch_all $($rest:tt)*) => {};
    (visit_delegate $($rest:tt)*) => {};
    (visit_rethrow $($rest:tt)*) => {};
    (visit_resume $($rest:tt)*) => {};
    (visit_resume_throw $($rest:tt)*) => {};
    (visit_resume_throw_ref $($rest:tt)*) => {};
    (visit_suspend $($rest:tt)*) => {};
    (visit_switch $($rest:tt)*) => {};
    (visit_br_on_cast_desc_eq $($rest:tt)*) => {};
    (visit_br_on_cast_desc_eq_fail $($rest:tt)*) => {};
    ($visit:ident $($arg:ident: $argty:ty),*) => {
        fn $visit(&mut self $(, $arg: $argty)*) -> Visit {
            $( let _ = $arg; )*
            self.plain()
        }
    };
}

impl Builder {
    fn live(&self) -> bool {
        self.cur != NONE
    }

    /// An instruction the rewriter decodes (`Built::controls`).
    fn control(&mut self) {
        self.controls.push(self.at as u32);
    }

    /// Any instruction without a case of its own: the current block runs it.
    fn plain(&mut self) -> Visit {
        if self.live() {
            self.count();
        }
        Ok(())
    }

    fn refuse(&self, what: &str) -> Visit {
        Err(unsupported(what, self.at))
    }

    /// br_if and br_on_*: both sides of a conditional branch.
    fn branch_if(&mut self, depth: u32, kind: EdgeKind) -> Visit {
        self.control();
        if self.live() {
            self.count();
            self.conditional(self.at, depth, kind);
        }
        Ok(())
    }

    /// return, unreachable, tail calls, throw: an edge to EXIT.
    fn leave(&mut self, kind: EdgeKind) -> Visit {
        if self.live() {
            self.count();
            self.exit(self.at, kind);
        }
        Ok(())
    }

    /// A call instruction: the current block runs it, and it is a call
    /// site; a tail call also ends the block with an edge to EXIT.
    fn call(&mut self, callee: Callee, tail: bool) -> Visit {
        if self.live() {
            self.calls.push(CallSite {
                offset: self.at as u32,
                block: NodeId::new(self.cur as usize),
                callee,
                tail,
            });
        }
        if tail {
            self.leave(EdgeKind::TailCall)
        } else {
            self.plain()
        }
    }

    /// `end` of the function's own frame.
    fn close_function(&mut self, frame: Frame) {
        let offset = self.at;
        if self.live() {
            let e = self.edge(self.cur, Cfg::EXIT.index() as u32, EdgeKind::Fallthrough);
            self.site(offset, SiteKind::Before(e));
            self.cur = NONE;
        }
        self.func_pads = self.close_list(frame.head, NONE);
    }

    /// The catch clauses of a try_table: one `Catch` edge per target label,
    /// shared by every clause that names it.
    fn catches(&mut self, try_table: &TryTable) {
        self.stamp += 1;
        for catch in &try_table.catches {
            let label = match *catch {
                Catch::One { label, .. }
                | Catch::OneRef { label, .. }
                | Catch::All { label }
                | Catch::AllRef { label } => label,
            };
            let frame = self.frame_at(label);
            if self.frames[frame].stamp == self.stamp {
                continue;
            }
            self.frames[frame].stamp = self.stamp;
            let shared = self.frames[frame].catch_edge;
            if shared == NONE {
                let e = self.taken(self.at, 0, frame, EdgeKind::Catch);
                self.frames[frame].catch_edge = e.index() as u32;
            } else {
                let edge = EdgeId::new(shared as usize);
                let frame = frame as u32;
                self.site(self.at, SiteKind::Taken { edge, frame });
            }
        }
    }
}

impl Builder {
    /// `catch` or `catch_all` of a legacy `try`: as at `else`, the code
    /// before it falls through to the construct's end, and a new block
    /// begins, entered by a `Catch` edge from ENTRY whose code runs right
    /// after the instruction (the caught values are on the stack; the
    /// edge's code leaves them there).
    fn handler(&mut self) -> Visit {
        let top = self.fall_to_end();
        if self.frames[top].node != NONE {
            self.arm(Cfg::ENTRY.index() as u32, EdgeKind::Catch);
        }
        Ok(())
    }

    /// At `else` or a legacy `catch`/`catch_all`: the code before it falls
    /// through to the end of the innermost construct, whose frame index
    /// this returns; the code after it is unreachable until an arm begins.
    fn fall_to_end(&mut self) -> usize {
        self.control();
        self.count();
        let top = self.frames.len() - 1;
        if self.live() {
            let e = self.edge(self.cur, NONE, EdgeKind::Fallthrough);
            self.link(top, e);
            self.site(self.at, SiteKind::Before(e));
        }
        self.cur = NONE;
        top
    }

    /// A new block right after the instruction, entered from `src` by an
    /// edge whose code goes after the instruction.
    fn arm(&mut self, src: u32, kind: EdgeKind) {
        let n = self.node();
        let e = self.edge(src, n, kind);
        self.site(self.at, SiteKind::After(e));
        self.cur = n;
        self.cur_plain = true;
    }
}

/// What visiting one instruction gives: nothing, or why building stops.
type Visit = Result<(), BuildError>;

/// The builder visits the operators as wasmparser decodes them, without an
/// `Operator` made of each. Instructions with no case of their own are
/// [`Builder::plain`]; those outside the model are refused.
impl<'a> VisitOperator<'a> for Builder {
    type Output = Visit;

    fn simd_visitor(&mut self) -> Option<&mut dyn VisitSimdOperator<'a, Output = Visit>> {
        Some(self)
    }

    fn visit_block(&mut self, _blockty: BlockType) -> Visit {
        self.control();
        self.count_plain();
        let live = self.live();
        self.open(self.at, FrameKind::Block, NONE, live);
        Ok(())
    }

    fn visit_loop(&mut self, _blockty: BlockType) -> Visit {
        self.control();
        let live = self.live();
        let header = if !live {
            NONE
        } else if self.cur_plain {
            // Nothing but block/loop openers ran in the current block: it
            // becomes the header, and all code of its incoming edges is
            // already placed before this `loop`.
            self.count_plain();
            self.cur
        } else {
            self.count();
            let h = self.node();
            let e = self.edge(self.cur, h, EdgeKind::Fallthrough);
            self.site(self.at, SiteKind::Before(e));
            self.cur = h;
            self.cur_plain = true;
            h
        };
        self.open(self.at, FrameKind::Loop, header, live);
        Ok(())
    }

    fn visit_if(&mut self, _blockty: BlockType) -> Visit {
        self.control();
        self.count();
        let live = self.live();
        let cond = self.cur;
        self.open(self.at, FrameKind::If, cond, live);
        if live {
            self.arm(cond, EdgeKind::IfThen);
        }
        Ok(())
    }

    fn visit_else(&mut self) -> Visit {
        let top = self.fall_to_end();
        let frame = &mut self.frames[top];
        frame.else_seen = true;
        let cond = frame.node;
        if cond != NONE {
            self.arm(cond, EdgeKind::IfElse);
        }
        Ok(())
    }

    fn visit_try_table(&mut self, try_table: TryTable) -> Visit {
        self.control();
        self.count();
        let live = self.live();
        if live {
            self.catches(&try_table);
        }
        self.open(self.at, FrameKind::TryTable, NONE, live);
        Ok(())
    }

    fn visit_end(&mut self) -> Visit {
        self.control();
        self.count();
        let Some(frame) = self.frames.pop() else {
            return Ok(()); // unreachable on a validated body
        };
        match frame.kind {
            FrameKind::Function => self.close_function(frame),
            FrameKind::Loop => {
                let pads = self.close_list(frame.head, NONE);
                self.patch_open(frame.open, pads);
            }
            _ => self.close_forward(self.at, frame),
        }
        Ok(())
    }

    fn visit_br(&mut self, relative_depth: u32) -> Visit {
        self.control();
        if self.live() {
            self.count();
            let frame = self.frame_at(relative_depth);
            self.jump(self.at, frame, EdgeKind::Br);
            self.cur = NONE;
        }
        Ok(())
    }

    fn visit_br_if(&mut self, relative_depth: u32) -> Visit {
        self.branch_if(relative_depth, EdgeKind::BrIf)
    }

    fn visit_br_on_null(&mut self, relative_depth: u32) -> Visit {
        self.branch_if(relative_depth, EdgeKind::BrOnNull)
    }

    fn visit_br_on_non_null(&mut self, relative_depth: u32) -> Visit {
        self.branch_if(relative_depth, EdgeKind::BrOnNonNull)
    }

    fn visit_br_on_cast(&mut self, relative_depth: u32, _: RefType, _: RefType) -> Visit {
        self.branch_if(relative_depth, EdgeKind::BrOnCast)
    }

    fn visit_br_on_cast_fail(&mut self, relative_depth: u32, _: RefType, _: RefType) -> Visit {
        self.branch_if(relative_depth, EdgeKind::BrOnCastFail)
    }

    fn visit_br_table(&mut self, targets: BrTable<'a>) -> Visit {
        self.control();
        if !self.live() {
            return Ok(());
        }
        self.count();
        self.stamp += 1;
        self.scratch.clear();
        for depth in targets
            .targets()
            .chain(std::iter::once(Ok(targets.default())))
        {
            let frame = self.frame_at(depth?);
            if self.frames[frame].stamp != self.stamp {
                self.frames[frame].stamp = self.stamp;
                self.scratch.push(frame as u32);
            }
        }
        if let [frame] = self.scratch[..] {
            self.jump(self.at, frame as usize, EdgeKind::BrTable);
        } else {
            for i in 0..self.scratch.len() {
                let frame = self.scratch[i] as usize;
                self.taken(self.at, self.cur, frame, EdgeKind::BrTable);
            }
        }
        self.cur = NONE;
        Ok(())
    }

    fn visit_return(&mut self) -> Visit {
        self.leave(EdgeKind::Return)
    }

    fn visit_unreachable(&mut self) -> Visit {
        self.leave(EdgeKind::Unreachable)
    }

    fn visit_call(&mut self, function_index: u32) -> Visit {
        self.call(Callee::Direct(function_index), false)
    }

    fn visit_call_indirect(&mut self, type_index: u32, table: u32) -> Visit {
        self.call(Callee::Indirect { type_index, table }, false)
    }

    fn visit_call_ref(&mut self, type_index: u32) -> Visit {
        self.call(Callee::Ref(type_index), false)
    }

    fn visit_return_call(&mut self, function_index: u32) -> Visit {
        self.call(Callee::Direct(function_index), true)
    }

    fn visit_return_call_indirect(&mut self, type_index: u32, table: u32) -> Visit {
        self.call(Callee::Indirect { type_index, table }, true)
    }

    fn visit_return_call_ref(&mut self, type_index: u32) -> Visit {
        self.call(Callee::Ref(type_index), true)
    }

    fn visit_throw(&mut self, _: u32) -> Visit {
        self.leave(EdgeKind::Throw)
    }

    fn visit_throw_ref(&mut self) -> Visit {
        self.leave(EdgeKind::ThrowRef)
    }

    // Legacy exception handling, modelled as `try_table` is: a handler is
    // entered from ENTRY, a `rethrow` leaves for EXIT.
    fn visit_try(&mut self, _: BlockType) -> Visit {
        self.control();
        self.count_plain();
        let live = self.live();
        let node = if live {
            Cfg::ENTRY.index() as u32
        } else {
            NONE
        };
        self.open(self.at, FrameKind::Try, node, live);
        Ok(())
    }

    fn visit_catch(&mut self, _: u32) -> Visit {
        self.handler()
    }

    fn visit_catch_all(&mut self) -> Visit {
        self.handler()
    }

    /// Ends the `try` as `end` does: where its body's exceptions go is the
    /// engine's business, and a handler that catches them is entered from
    /// ENTRY wherever it is.
    fn visit_delegate(&mut self, _: u32) -> Visit {
        self.visit_end()
    }

    fn visit_rethrow(&mut self, _: u32) -> Visit {
        self.control();
        self.leave(EdgeKind::ThrowRef)
    }

    // Control transfers the builder does not model.
    fn visit_resume(&mut self, _: u32, _: ResumeTable) -> Visit {
        self.refuse("resume")
    }

    fn visit_resume_throw(&mut self, _: u32, _: u32, _: ResumeTable) -> Visit {
        self.refuse("resume_throw")
    }

    fn visit_resume_throw_ref(&mut self, _: u32, _: ResumeTable) -> Visit {
        self.refuse("resume_throw_ref")
    }

    fn visit_suspend(&mut self, _: u32) -> Visit {
        self.refuse("suspend")
    }

    fn visit_switch(&mut self, _: u32, _: u32) -> Visit {
        self.refuse("switch")
    }

    fn visit_br_on_cast_desc_eq(&mut self, _: u32, _: RefType, _: RefType) -> Visit {
        self.refuse("br_on_cast_desc_eq")
    }

    fn visit_br_on_cast_desc_eq_fail(&mut self, _: u32, _: RefType, _: RefType) -> Visit {
        self.refuse("br_on_cast_desc_eq_fail")
    }

    wasmparser::for_each_visit_operator!(visit_plain);
}

impl<'a> VisitSimdOperator<'a> for Builder {
    wasmparser::for_each_visit_simd_operator!(visit_plain);
}
