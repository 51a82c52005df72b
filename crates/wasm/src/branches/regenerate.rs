//! Hardware paths back to blocks: the inverse of the branch stream
//! ([`super::BranchStream`]) for one path descriptor (Vaswani thesis 5.2),
//! so that `pathprof simulate` can show a Hot Path Table entry as the blocks
//! and source lines it ran through, as `pathprof report` shows a Ball-Larus
//! path, and a test can compare the two path for path.
//!
//! A descriptor holds the path's start address, its length in branches and
//! the branches' outcome bits (first branch in the lowest bits). The walk
//! starts at the block that begins at the start address (or holds it: a
//! path that begins at a return site begins inside its block) and, at each
//! block, reads from the outcome bits the branch that the stream reports
//! for the edge taken, by the same table as the stream:
//! a conditional branch one bit (1 = taken), a `br_table` `ceil(log2(arms))`
//! bits holding the arm, a `br` (or a backward fall-through) one bit set to
//! 1, and a plain fall-through nothing. An edge into EXIT reports a
//! `Return` (or a throw or tail call), which records no outcome but in an
//! extended callee (below): a walk of any other path never takes one.
//!
//! Extended-call paths ([`PathType::ExtendedCall`]; the rules are
//! `pathprof_simulator::ppcr`'s and `detector`'s) go on into callees, and
//! the walk with them, keeping the extension counter of the path's stack
//! entry (0 where the path starts, whatever frames the entry stands for).
//! Calls do not end blocks: in each block the walk passes its call
//! instructions in order (in a block returned to, those after the return
//! site), then the branch that ends it:
//! * a direct call of a traced function while the counter is below `max`
//!   is an extended call: one bit set to 1, the counter goes up and the
//!   path goes on in the callee's first block;
//! * an indirect call, a call at `max` and a call of an import record
//!   nothing: the callee's paths are other entries, and the path goes on
//!   after the call;
//! * an edge into EXIT that the stream reports as a `Return` (all but a
//!   throw, `unreachable` and a `return_call` of a traced function; a
//!   `return_call_indirect` may be either, and the bits left tell which)
//!   while the counter is non-zero is an extended return: one bit set to
//!   1, the counter goes down and the path goes on in the caller just
//!   after the call instruction. At zero a return ends the path (with or
//!   without the PPCR's push for an entry standing for several frames), as
//!   throws and tail calls always do;
//! * a backward branch ends the path, as in Ball-Larus mode.
//!
//! Where the bits fit two walks the walk gives up rather than guess
//! (`None`): in an extended callee, a block whose `br_table` has an arm into
//! EXIT, when the bits read both as the return (a 1) and as another arm
//! (whose bits begin with a 1). The walk also takes every call to be made by
//! its own call instruction, as the stream does when each indirect call
//! reaches traced code and no import calls back ([`super`]'s departures).
//! A callback from an import is an indirect call to the stream (no call
//! site names its callee), which the PPCR never extends: the path in flight
//! goes on after it with no bit, as past any indirect call.
//!
//! Where the recorded branches run out, the path goes on through blocks
//! entered by plain fall-throughs (which report nothing) and past calls
//! that record nothing until a block ends in a branch, or in a call when
//! the path type ends paths at calls: there the path left its frame
//! (returned, threw, tail-called, called) or the run ended. (A call it
//! would extend, with no bit left for it, names no walk.) It does not
//! when its last branch was backward (the path ends at its source block,
//! as a Ball-Larus path ends at a backedge) or when the path was split at
//! its maximum length (the next path starts at the target, a callee's first
//! block or a return site included).

use super::{branch_kind, CallSite, Function};
use crate::cfg::{EdgeKind, ModuleInfo};
use crate::error::Result;
use pathprof_graph::{Cfg, EdgeId, NodeId};
use pathprof_simulator::descriptor::{ceil_log2, PathDescriptor, SPLIT_BITS};
use pathprof_simulator::{BranchKind, PathType};

/// How the path stack was programmed, as far as the walk depends on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WalkRules {
    /// Whether a call ends a path (whole-program paths, Table 5.2).
    pub ends_at_calls: bool,
    /// The maximum path length in branches: a path that reached it (or
    /// [`SPLIT_BITS`] outcome bits) was split after its last branch.
    pub max_len: u32,
    /// For extended-call paths, the most nested calls a path goes into.
    pub extended_calls: Option<u32>,
    /// Whether a backward branch may leave the path going on (extended
    /// loops); otherwise it ends the path.
    pub extends_loops: bool,
}

impl WalkRules {
    /// The rules of paths of `path_type` of at most `max_len` branches.
    pub fn new(path_type: PathType, max_len: u32) -> WalkRules {
        WalkRules {
            ends_at_calls: path_type == PathType::Wpp,
            max_len,
            extended_calls: match path_type {
                PathType::ExtendedCall { max } => Some(max),
                _ => None,
            },
            extends_loops: matches!(path_type, PathType::ExtendedLoop { .. }),
        }
    }
}

/// How a regenerated path ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathEnd {
    /// At a backward branch out of its last block.
    Backward,
    /// Split after its last branch, at the maximum path length.
    Split,
    /// In its last block: a return, throw, tail call or (for paths that
    /// end at calls) a call, or the end of the run.
    InBlock,
}

/// One step of a hardware path.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HwStep {
    /// Block `node` of function `func` (module index), run from `at`: its
    /// first instruction, or a return site inside it (the path's first
    /// block, when the path began there, and a block returned to).
    Block { func: u32, node: NodeId, at: u32 },
    /// Edge `edge` of function `func` from the block before it to the block
    /// after it, or the backward or split edge the path ends with.
    Edge { func: u32, edge: EdgeId },
    /// An extended call by the call instruction at `at` into `callee`
    /// (module index), whose first block follows unless the path was split
    /// at the call.
    Call { at: u32, callee: u32 },
    /// An extended return to the return site `to` (just after the call
    /// instruction) of the block that follows, unless the path was split at
    /// the return.
    Return { to: u32 },
}

/// A hardware path as blocks: of one function, or of several for an
/// extended-call path that crossed calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegeneratedHwPath {
    /// Module index of the function it starts in.
    pub func: u32,
    /// What it ran through, in order: its first block, then each edge,
    /// call or return with the block it leads to.
    pub steps: Vec<HwStep>,
    /// Whether it began inside its first block (at a return site).
    pub mid_block: bool,
    pub end: PathEnd,
}

impl RegeneratedHwPath {
    /// Its blocks in order, each as (function, node).
    pub fn blocks(&self) -> impl Iterator<Item = (u32, NodeId)> + '_ {
        self.steps.iter().filter_map(|s| match *s {
            HwStep::Block { func, node, .. } => Some((func, node)),
            _ => None,
        })
    }

    /// Its CFG edges in order, each as (function, edge): those between its
    /// blocks and the backward or split edge it ends with.
    pub fn edges(&self) -> impl Iterator<Item = (u32, EdgeId)> + '_ {
        self.steps.iter().filter_map(|s| match *s {
            HwStep::Edge { func, edge } => Some((func, edge)),
            _ => None,
        })
    }

    /// The extended calls and returns it crossed.
    pub fn crossings(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, HwStep::Call { .. } | HwStep::Return { .. }))
            .count()
    }

    /// Its blocks when it stays in the function it starts in (every path
    /// but an extended-call path that crossed a call); `None` otherwise.
    pub fn local_blocks(&self) -> Option<Vec<NodeId>> {
        (self.crossings() == 0).then(|| self.blocks().map(|(_, n)| n).collect())
    }
}

/// What the walk needs of one function: the stream's view of its blocks and
/// edges, and each block's out-edges but those into EXIT.
struct Walked {
    f: Function,
    succs: Vec<Vec<EdgeId>>,
    /// Blocks with an edge into EXIT.
    leaves: Vec<bool>,
    /// Blocks with an edge into EXIT that the stream reports as a `Return`.
    returns: Vec<bool>,
    /// Its first block.
    entry: Option<NodeId>,
}

/// Whether the stream reports an edge of `kind` into EXIT out of `block` as
/// a `Return` (not a throw, nor a tail call of a traced function; a
/// `return_call_indirect` may be either).
fn reports_return(kind: EdgeKind, block: &super::Block) -> bool {
    match kind {
        EdgeKind::Throw | EdgeKind::ThrowRef | EdgeKind::Unreachable | EdgeKind::Catch => false,
        EdgeKind::TailCall => !block.tail_traced,
        _ => true,
    }
}

/// A module's blocks and edges as the branch stream reports them.
pub struct Regenerator {
    functions: Vec<Option<Walked>>,
    num_imported: u32,
    /// (first offset, end offset, defined function, node) of every block,
    /// sorted by offset.
    blocks: Vec<(u32, u32, u32, NodeId)>,
}

/// Where a walk goes back to after an extended return: the caller's
/// (defined function, block) and the return site.
#[derive(Copy, Clone, Debug)]
struct Caller {
    def: u32,
    node: NodeId,
    to: u32,
}

impl Regenerator {
    /// The regenerator of the module `bytes`, which `info` describes.
    pub fn new(bytes: &[u8], info: &ModuleInfo) -> Result<Regenerator> {
        let mut blocks = Vec::new();
        for (i, f) in info.functions.iter().enumerate() {
            for (n, b) in f.iter().flat_map(|f| f.blocks.iter().enumerate()) {
                if let Some(b) = b {
                    blocks.push((b.offset, b.end, i as u32, NodeId::new(n)));
                }
            }
        }
        blocks.sort_unstable_by_key(|b| b.0);
        let functions = super::functions(bytes, info)?
            .into_iter()
            .map(|f| {
                f.map(|f| {
                    let mut succs = vec![Vec::new(); f.blocks.len()];
                    let mut leaves = vec![false; f.blocks.len()];
                    let mut returns = vec![false; f.blocks.len()];
                    let mut entry = None;
                    for (i, e) in f.edges.iter().enumerate() {
                        if e.src == Cfg::ENTRY {
                            if e.kind == EdgeKind::Entry && e.dst != Cfg::EXIT {
                                entry = Some(e.dst);
                            }
                            continue;
                        }
                        match e.dst == Cfg::EXIT {
                            true => {
                                leaves[e.src.index()] = true;
                                returns[e.src.index()] |=
                                    reports_return(e.kind, &f.blocks[e.src.index()]);
                            }
                            false => succs[e.src.index()].push(EdgeId::new(i)),
                        }
                    }
                    Walked {
                        f,
                        succs,
                        leaves,
                        returns,
                        entry,
                    }
                })
            })
            .collect();
        Ok(Regenerator {
            functions,
            num_imported: info.num_imported_funcs,
            blocks,
        })
    }

    /// The block holding the address `at`: (defined function, node, whether
    /// `at` is its first instruction).
    fn block_at(&self, at: u32) -> Option<(u32, NodeId, bool)> {
        let i = self.blocks.partition_point(|b| b.0 <= at).checked_sub(1)?;
        let (start, end, func, node) = self.blocks[i];
        (at < end || at == start).then_some((func, node, at == start))
    }

    fn walked(&self, def: u32) -> Option<&Walked> {
        self.functions.get(def as usize)?.as_ref()
    }

    /// The blocks of the path `p` describes, or `None` when its outcome bits
    /// name no walk of the module's CFGs (a descriptor of another module),
    /// or two (see the module doc).
    pub fn regenerate(&self, p: &PathDescriptor, rules: WalkRules) -> Option<RegeneratedHwPath> {
        let (def, first, at_start) = self.block_at(p.start)?;
        let func = self.num_imported + def;
        let mut walker = Walker {
            regen: self,
            walk: Walk {
                bits: Bits::new(p),
                left: u32::from(p.len),
                rules,
            },
            split: u32::from(p.len) >= rules.max_len || u32::from(p.nbits) > SPLIT_BITS,
            def,
            w: self.walked(def)?,
            at: first,
            from: p.start,
            callers: Vec::new(),
            out: RegeneratedHwPath {
                func,
                steps: vec![HwStep::Block {
                    func,
                    node: first,
                    at: p.start,
                }],
                mid_block: !at_start,
                end: PathEnd::InBlock,
            },
        };
        // Edges crossed since the last branch recorded: a walk that records
        // nothing never loops (a loop's backedge records), so more than the
        // function's edges is no walk.
        let mut idle = 0;
        loop {
            let ext = walker.callers.len() as u32;
            let w = walker.w;
            let recorded = match walker.walk.step(w, walker.at, walker.from, ext)? {
                Move::End => break,
                Move::Edge(e, recorded) => walker.edge(e, recorded)?,
                Move::Call(site) => walker.call(site)?,
                Move::Return => walker.ret()?,
            };
            let Some(recorded) = recorded else { break };
            walker.out.steps.push(HwStep::Block {
                func: self.num_imported + walker.def,
                node: walker.at,
                at: walker.from,
            });
            idle = if recorded { 0 } else { idle + 1 };
            if idle > walker.w.f.edges.len() {
                return None;
            }
        }
        // Every branch recorded and every bit read, or it is not this path.
        let Walker { walk, out, .. } = walker;
        (walk.left == 0 && walk.bits.used == u32::from(p.nbits)).then_some(out)
    }
}

/// One path's walk through the module: where it is, the frames it went
/// into (their number is the extension counter) and the steps so far.
struct Walker<'a> {
    regen: &'a Regenerator,
    walk: Walk,
    /// Whether the path was split at its maximum length.
    split: bool,
    /// The defined function, its walk tables, the block, and where in the
    /// block the walk goes on from (its first instruction or a return site).
    def: u32,
    w: &'a Walked,
    at: NodeId,
    from: u32,
    callers: Vec<Caller>,
    out: RegeneratedHwPath,
}

/// Each move gives `None` when it names no walk, `Some(None)` when the path
/// ends with it, and else whether it recorded a branch.
type Moved = Option<Option<bool>>;

impl Walker<'_> {
    fn func(&self) -> u32 {
        self.regen.num_imported + self.def
    }

    /// Ends the path (`Some(None)`) as `end`.
    fn end(&mut self, end: PathEnd) -> Moved {
        self.out.end = end;
        Some(None)
    }

    /// Along the CFG edge `e`, which recorded a branch or not.
    fn edge(&mut self, e: EdgeId, recorded: bool) -> Moved {
        self.out.steps.push(HwStep::Edge {
            func: self.func(),
            edge: e,
        });
        let w = self.w;
        let edge = &w.f.edges[e.index()];
        let left = self.walk.left;
        if recorded && edge.backward && (left == 0 || !self.walk.rules.extends_loops) {
            // A backward branch ends the path (when loops are not
            // extended, it is the last branch).
            return (left == 0).then(|| self.end(PathEnd::Backward)).flatten();
        }
        if recorded && left == 0 && self.split {
            return self.end(PathEnd::Split);
        }
        self.at = edge.dst;
        self.from = w.f.blocks[self.at.index()].offset;
        Some(Some(recorded))
    }

    /// Into the callee of `site`, by an extended call.
    fn call(&mut self, site: CallSite) -> Moved {
        let callee = site.callee?;
        self.out.steps.push(HwStep::Call {
            at: site.at,
            callee,
        });
        if self.walk.left == 0 && self.split {
            return self.end(PathEnd::Split);
        }
        self.callers.push(Caller {
            def: self.def,
            node: self.at,
            to: site.next,
        });
        self.def = callee.checked_sub(self.regen.num_imported)?;
        self.w = self.regen.walked(self.def)?;
        self.at = self.w.entry?;
        self.from = self.w.f.blocks[self.at.index()].offset;
        Some(Some(true))
    }

    /// Back to the caller, by an extended return.
    fn ret(&mut self) -> Moved {
        let caller = self.callers.pop()?;
        self.out.steps.push(HwStep::Return { to: caller.to });
        if self.walk.left == 0 && self.split {
            return self.end(PathEnd::Split);
        }
        self.def = caller.def;
        self.w = self.regen.walked(self.def)?;
        (self.at, self.from) = (caller.node, caller.to);
        Some(Some(true))
    }
}

/// The outcome bits of a descriptor, read from the lowest.
#[derive(Copy, Clone)]
struct Bits {
    outcomes: u128,
    used: u32,
}

impl Bits {
    fn new(p: &PathDescriptor) -> Bits {
        Bits {
            outcomes: p.outcomes,
            used: 0,
        }
    }

    fn take(&mut self, width: u32) -> Option<u32> {
        if width == 0 {
            return Some(0);
        }
        if self.used + width > 128 {
            return None;
        }
        let v = (self.outcomes >> self.used) & ((1u128 << width) - 1);
        self.used += width;
        u32::try_from(v).ok()
    }

    /// Takes one bit, which must be 1: an unconditional branch's.
    fn take_one(&mut self) -> Option<()> {
        (self.take(1)? == 1).then_some(())
    }
}

/// Where the path goes from where it is in a block.
enum Move {
    /// It ends in the block.
    End,
    /// Along a CFG edge; whether it recorded a branch.
    Edge(EdgeId, bool),
    /// Into a callee, by an extended call of this call site.
    Call(CallSite),
    /// Back to the caller, by an extended return.
    Return,
}

/// One path's walk: the bits it has left to read.
struct Walk {
    bits: Bits,
    /// Branches not yet read.
    left: u32,
    rules: WalkRules,
}

impl Walk {
    /// Where the path goes from `from` (its first instruction, or a return
    /// site inside it) in block `at` of `w`, with extension counter `ext`;
    /// `None` when nothing fits the bits.
    fn step(&mut self, w: &Walked, at: NodeId, from: u32, ext: u32) -> Option<Move> {
        let f = &w.f;
        let calls = f.blocks[at.index()].calls.iter().filter(|c| c.at >= from);
        if self.rules.ends_at_calls && calls.clone().any(|c| c.traced) {
            // A call ends the path: no branch after it is the path's.
            return (self.left == 0).then_some(Move::End);
        }
        if let Some(max) = self.rules.extended_calls {
            // The first direct call of a traced function ahead is extended
            // (the indirect calls and calls of imports before it record
            // nothing); a path that has no bit left for it is not here.
            let extended = calls.clone().find(|c| c.traced && !c.indirect);
            if let Some(&c) = extended.filter(|_| ext < max) {
                if self.left == 0 {
                    return None;
                }
                self.bits.take_one()?;
                self.left -= 1;
                return Some(Move::Call(c));
            }
        }
        let outs = &w.succs[at.index()];
        let reported = |e: EdgeId| branch_kind(&f.edges[e.index()]);
        let kind = outs.iter().find_map(|&e| reported(e));
        // In an extended callee a return records a bit.
        let returns = ext > 0 && w.returns[at.index()];
        if kind.is_none() && !returns {
            // Only a plain fall-through goes on without a branch; a block
            // that may also leave the function ends the path.
            return match outs[..] {
                [e] if !w.leaves[at.index()] => Some(Move::Edge(e, false)),
                _ => (self.left == 0).then_some(Move::End),
            };
        }
        if self.left == 0 {
            // The block ends in a branch no bit records: the path left.
            return Some(Move::End);
        }
        // The branch out of the block, and the return, as the bits read.
        let branch = kind.and_then(|kind| {
            let mut bits = self.bits;
            let want = match kind {
                BranchKind::Conditional { .. } => BranchKind::Conditional {
                    taken: bits.take(1)? == 1,
                },
                BranchKind::Switch { arms, .. } => BranchKind::Switch {
                    arm: bits.take(ceil_log2(arms))?,
                    arms,
                },
                _ => {
                    bits.take_one()?;
                    kind
                }
            };
            let e = outs.iter().copied().find(|&e| reported(e) == Some(want))?;
            Some((e, bits))
        });
        let ret = returns
            .then(|| {
                let mut bits = self.bits;
                bits.take_one().map(|()| bits)
            })
            .flatten();
        let (next, bits) = match (branch, ret) {
            // Both fit: a `br_table` arm into EXIT, or another arm whose
            // bits begin with 1.
            (Some(_), Some(_)) | (None, None) => return None,
            (Some((e, bits)), None) => (Move::Edge(e, true), bits),
            (None, Some(bits)) => (Move::Return, bits),
        };
        self.bits = bits;
        self.left -= 1;
        Some(next)
    }
}
