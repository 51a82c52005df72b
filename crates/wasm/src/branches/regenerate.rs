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
//! `Return`, which records no outcome, so a walk never takes one.
//!
//! Where the recorded branches run out, the path goes on through blocks
//! entered by plain fall-throughs (which report nothing) until one ends in a
//! branch, or in a call when the path type ends paths at calls: there the
//! path left its frame (returned, threw, tail-called, called) or the run
//! ended. It does not when its last branch was backward (the path ends at
//! its source block, as a Ball-Larus path ends at a backedge) or when the
//! path was split at its maximum length (the next path starts at the target).
//!
//! Not walked: paths of the extended-call type, which go on into callees
//! (their calls are in the outcome bits, but which call of a block made
//! them is not).

use super::{branch_kind, Function};
use crate::cfg::ModuleInfo;
use crate::error::Result;
use pathprof_graph::{Cfg, EdgeId, NodeId};
use pathprof_simulator::descriptor::{ceil_log2, PathDescriptor, SPLIT_BITS};
use pathprof_simulator::BranchKind;

/// How the path stack was programmed, as far as the walk depends on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WalkRules {
    /// Whether a call ends a path (whole-program paths, Table 5.2).
    pub ends_at_calls: bool,
    /// The maximum path length in branches: a path that reached it (or
    /// [`SPLIT_BITS`] outcome bits) was split after its last branch.
    pub max_len: u32,
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

/// A hardware path as blocks of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegeneratedHwPath {
    /// Module function index.
    pub func: u32,
    /// The blocks it ran through, in order.
    pub blocks: Vec<NodeId>,
    /// The CFG edges between them (one fewer than `blocks`), then the
    /// backward or split edge it ended with, if any.
    pub edges: Vec<EdgeId>,
    /// Whether it began inside its first block (at a return site).
    pub mid_block: bool,
    pub end: PathEnd,
}

/// What the walk needs of one function: the stream's view of its blocks and
/// edges, and each block's out-edges but those into EXIT.
struct Walked {
    f: Function,
    succs: Vec<Vec<EdgeId>>,
    /// Blocks with an edge into EXIT.
    leaves: Vec<bool>,
}

/// A module's blocks and edges as the branch stream reports them.
pub struct Regenerator {
    functions: Vec<Option<Walked>>,
    num_imported: u32,
    /// (first offset, end offset, defined function, node) of every block,
    /// sorted by offset.
    blocks: Vec<(u32, u32, u32, NodeId)>,
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
                    for (i, e) in f.edges.iter().enumerate() {
                        match e.dst == Cfg::EXIT {
                            true => leaves[e.src.index()] = true,
                            false => succs[e.src.index()].push(EdgeId::new(i)),
                        }
                    }
                    Walked { f, succs, leaves }
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

    /// The blocks of the path `p` describes, or `None` when its outcome bits
    /// name no walk of the module's CFGs (a descriptor of another module, or
    /// of an extended-call path).
    pub fn regenerate(&self, p: &PathDescriptor, rules: WalkRules) -> Option<RegeneratedHwPath> {
        let (def, first, at_start) = self.block_at(p.start)?;
        let w = self.functions.get(def as usize)?.as_ref()?;
        let f = &w.f;
        let mut walk = Walk {
            w,
            bits: Bits::new(p),
            left: u32::from(p.len),
            from: p.start,
            rules,
        };
        let split = u32::from(p.len) >= rules.max_len || u32::from(p.nbits) > SPLIT_BITS;
        let mut out = RegeneratedHwPath {
            func: self.num_imported + def,
            blocks: vec![first],
            edges: Vec::new(),
            mid_block: !at_start,
            end: PathEnd::InBlock,
        };
        let mut at = first;
        loop {
            let Some((e, recorded)) = walk.step(at)? else {
                break;
            };
            out.edges.push(e);
            let dst = f.edges[e.index()].dst;
            if recorded && walk.left == 0 {
                if f.edges[e.index()].backward {
                    out.end = PathEnd::Backward;
                    break;
                }
                if split {
                    out.end = PathEnd::Split;
                    break;
                }
            }
            out.blocks.push(dst);
            at = dst;
            walk.from = f.blocks[dst.index()].offset;
            // A walk longer than the CFG's edges with no bit read loops on
            // fall-throughs, which no CFG has: bound it all the same.
            if out.edges.len() > f.edges.len() + usize::from(p.len) {
                return None;
            }
        }
        // Every branch recorded and every bit read, or it is not this path.
        (walk.left == 0 && walk.bits.used == u32::from(p.nbits)).then_some(out)
    }
}

/// The outcome bits of a descriptor, read from the lowest.
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
}

/// One path's walk through one function.
struct Walk<'a> {
    w: &'a Walked,
    bits: Bits,
    /// Branches not yet read.
    left: u32,
    /// Where in the current block the path is: its first instruction, or
    /// a return site inside it.
    from: u32,
    rules: WalkRules,
}

impl Walk<'_> {
    /// The edge the path takes out of `at` and whether it recorded a branch;
    /// `Some(None)` when the path ends in `at`; `None` when no edge fits.
    fn step(&mut self, at: NodeId) -> Option<Option<(EdgeId, bool)>> {
        let f = &self.w.f;
        let outs = &self.w.succs[at.index()];
        let leaves = self.w.leaves[at.index()];
        let reported = |e: EdgeId| branch_kind(&f.edges[e.index()]);
        let from = self.from;
        if self.rules.ends_at_calls
            && f.blocks[at.index()]
                .calls
                .iter()
                .any(|c| c.traced && c.at >= from)
        {
            // A call ends the path: no branch after it is the path's.
            return (self.left == 0).then_some(None);
        }
        let kind = outs.iter().find_map(|&e| reported(e));
        let Some(kind) = kind else {
            // Only a plain fall-through goes on without a branch; a block
            // that may also leave the function ends the path.
            return match outs[..] {
                [e] if !leaves => Some(Some((e, false))),
                _ => (self.left == 0).then_some(None),
            };
        };
        if self.left == 0 {
            // The block ends in a branch no bit records: the path left.
            return Some(None);
        }
        let want = match kind {
            BranchKind::Conditional { .. } => BranchKind::Conditional {
                taken: self.bits.take(1)? == 1,
            },
            BranchKind::Switch { arms, .. } => BranchKind::Switch {
                arm: self.bits.take(ceil_log2(arms))?,
                arms,
            },
            _ => {
                (self.bits.take(1)? == 1).then_some(())?;
                kind
            }
        };
        let e = outs.iter().copied().find(|&e| reported(e) == Some(want))?;
        self.left -= 1;
        Some(Some((e, true)))
    }
}
