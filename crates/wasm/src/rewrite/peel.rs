//! Which loops the rewriter peels, and the loop proper's actions
//! ([`pathprof_techniques::peel`]).
//!
//! A peeled loop is emitted as
//! ```text
//! block $after
//!   block $again  <body: the first iteration, the plan's actions>  br $after  end
//!   loop $L       <body: later iterations, specialized actions>              end
//! end
//! ```
//! A branch to the loop label in the first copy leaves `$again` and enters
//! the loop proper; falling off the first copy's end leaves both, as falling
//! off the loop does. Only innermost loops without parameters or results
//! and without exception handling inside are peeled, up to a size, and only
//! when some backedge's count gets a constant address.

use crate::cfg::site::{Construct, SiteKind};
use crate::cfg::FunctionCfg;
use pathprof_graph::{EdgeId, NodeId};
use pathprof_techniques::peel::{self, LoopBody, Specialized};
use pathprof_techniques::FunctionPlan;

/// The default of [`Peeling::max_bytes`].
pub const PEEL_MAX_BYTES: u32 = 256;

/// A loop to emit twice.
pub(crate) struct Peel {
    /// Module offset of the `loop` instruction.
    pub at: u32,
    /// Module offset of its `end`.
    pub end: u32,
    pub proper: Specialized,
}

/// The loops of one function to peel, in code order. `body_end` is the
/// module offset where the function's body ends; `starts` its non-empty
/// blocks by first instruction, sorted.
pub(crate) fn plan_peels(
    bytes: &[u8],
    body_end: usize,
    fcfg: &FunctionCfg,
    plan: &FunctionPlan,
    starts: &[(u32, NodeId)],
    max_bytes: u32,
) -> Vec<Peel> {
    // Peeling specializes edge actions by the registers' values on entry
    // to the loop; entry, exit and call-site actions are not edge actions
    // and may change registers behind its back, so such plans keep their
    // loops whole.
    if max_bytes == 0 || plan.registers.is_empty() || plan.interproc.is_some() {
        return Vec::new();
    }
    let mut peels = Vec::new();
    for site in &fcfg.sites {
        // Loops of the empty block type only (0x40 after the opcode).
        let SiteKind::Open {
            construct: Construct::Loop,
            ..
        } = site.kind
        else {
            continue;
        };
        if bytes.get(site.offset as usize + 1) != Some(&0x40) {
            continue;
        }
        let extent = innermost_extent(bytes, &fcfg.controls, site.offset, body_end, max_bytes);
        let Some((first, end)) = extent else {
            continue;
        };
        let Some((head, nodes)) = body_nodes(fcfg, starts, site.offset, first, end) else {
            continue;
        };
        let cfg = &fcfg.cfg;
        let backedges: Vec<EdgeId> = cfg
            .preds(head)
            .iter()
            .copied()
            .filter(|&e| nodes.contains(&cfg.src(e)))
            .collect();
        let body = LoopBody {
            head,
            nodes: &nodes,
            backedges: &backedges,
        };
        if let Some(proper) = peel::specialize(cfg, plan, &body) {
            peels.push(Peel {
                at: site.offset,
                end,
                proper,
            });
        }
    }
    peels
}

/// For the `loop` at `at`, whose block type is empty: the offset of its
/// first body instruction and of its `end`, if it holds no other loop, no
/// exception handling, and ends within `max_bytes`. Nothing is decoded: the
/// builder listed every label opener and `end` (`FunctionCfg::controls`),
/// and the opcodes that matter here are one byte each.
fn innermost_extent(
    bytes: &[u8],
    controls: &[u32],
    at: u32,
    body_end: usize,
    max_bytes: u32,
) -> Option<(u32, u32)> {
    let limit = body_end.min(at as usize + max_bytes as usize);
    let listed = controls.binary_search(&at).ok()?;
    if bytes.get(at as usize) != Some(&LOOP_OPCODE) {
        return None;
    }
    // `loop` and the empty block type (0x40) are a byte each.
    let first = at + 2;
    let mut depth = 1u32;
    for &offset in &controls[listed + 1..] {
        // The one-byte `end` must lie below `limit`.
        if offset as usize >= limit {
            return None;
        }
        match bytes[offset as usize] {
            // block, if
            0x02 | 0x04 => depth += 1,
            // end
            0x0b => {
                depth -= 1;
                if depth == 0 {
                    return Some((first, offset));
                }
            }
            // loop, try_table; legacy try, catch, rethrow, delegate, catch_all
            0x03 | 0x1f | 0x06 | 0x07 | 0x09 | 0x18 | 0x19 => return None,
            _ => {}
        }
    }
    None
}

const LOOP_OPCODE: u8 = 0x03;

/// The loop head (the block holding the loop's first body instruction) and
/// the body's nodes: the head and every block that begins inside the loop.
/// `None` if an empty block (whose place is unknown) is linked to them.
fn body_nodes(
    fcfg: &FunctionCfg,
    starts: &[(u32, NodeId)],
    at: u32,
    first: u32,
    end: u32,
) -> Option<(NodeId, Vec<NodeId>)> {
    let i = starts
        .partition_point(|&(o, _)| o <= first)
        .checked_sub(1)?;
    let head = starts[i].1;
    let info = fcfg.blocks[head.index()].as_ref()?;
    if info.end <= first {
        return None;
    }
    let lo = starts.partition_point(|&(o, _)| o <= at);
    let hi = starts.partition_point(|&(o, _)| o < end);
    let mut nodes = vec![head];
    nodes.extend(
        starts[lo..hi]
            .iter()
            .map(|&(_, n)| n)
            .filter(|&n| n != head),
    );
    let cfg = &fcfg.cfg;
    let empty = |n: NodeId| matches!(&fcfg.blocks[n.index()], Some(b) if b.instrs == 0);
    let linked_to_empty = nodes.iter().any(|&n| {
        cfg.preds(n).iter().any(|&e| empty(cfg.src(e)))
            || cfg.succs(n).iter().any(|&e| empty(cfg.dst(e)))
    });
    (!linked_to_empty).then_some((head, nodes))
}
