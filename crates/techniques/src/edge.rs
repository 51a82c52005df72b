//! Edge profiling with counters on chords only (QPT2, Ball & Larus 1994), the
//! baseline the path-profiling paper compares against (section 6).
//!
//! A maximum spanning tree of the CFG (plus a virtual EXIT->ENTRY edge, kept
//! in the tree) leaves the most frequent edges uninstrumented; each chord gets
//! a slot counter, and every other edge count follows by flow conservation.
//! Activations that never reach EXIT (a trap, `proc_exit`) break conservation;
//! the runner reports the block each such activation was in, which is added as
//! an extra flow to EXIT (the paper's "early termination", 3.6).
//!
//! Departure: an exception that unwinds through an activation also leaves it
//! short of EXIT, and no record says where. In a module that uses exception
//! handling, the caller names the blocks an exception may leave from (those
//! with a call: a `throw` ends its block with an edge of its own); each gets
//! a virtual edge to EXIT in the spanning tree, whose count flow conservation
//! derives (crate `pathprof_graph::flow`). That costs one more counter per
//! such block, where counting every edge (what pathprof did before,
//! docs/decisions.md#edge-unwinding) cost about four times the chords.

use pathprof_graph::{flow, Cfg, EdgeId, GraphError, NodeId};
use serde::{Deserialize, Serialize};

use crate::plan::{Action, EdgeActions, FunctionPlan};

/// What decoding an edge profile needs: which CFG edges carry a counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chords {
    /// Slot i counts `chords[i]`.
    pub chords: Vec<EdgeId>,
    /// The blocks an activation may leave unrecorded (an exception unwinding
    /// through it), in increasing order: the spanning tree holds a virtual
    /// edge from each to EXIT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unwinding: Vec<NodeId>,
}

/// Plans edge profiling of `cfg`. `weights`: per-CFG-edge estimates, or
/// loop-nesting weights when `None`. `unwinding`: the blocks activations
/// may leave without reaching EXIT or being reported (see the module doc).
pub fn plan(cfg: &Cfg, weights: Option<&[u64]>, unwinding: &[NodeId]) -> (FunctionPlan, Chords) {
    let unwinding = flow::unwinding_vertices(unwinding);
    let static_weights;
    let w = match weights {
        Some(w) => w,
        None => {
            static_weights = pathprof_graph::weights::loop_nesting_weights(cfg);
            &static_weights
        }
    };
    let in_tree = flow::edge_spanning_tree(cfg, w, &unwinding);
    let mut plan = FunctionPlan::empty(cfg.num_edges());
    let chords: Vec<EdgeId> = cfg.edge_ids().filter(|e| !in_tree[e.index()]).collect();
    // Chords are in edge order, and slot i counts chord i.
    let mut slot = 0;
    plan.edges = EdgeActions::from_fn(cfg.num_edges(), |e, actions| {
        if !in_tree[e] {
            actions.push(Action::CountSlot { index: slot });
            slot += 1;
        }
    });
    plan.slots = chords.len() as u32;
    (plan, Chords { chords, unwinding })
}

/// Every edge's count from the chord counters (`slots`) and the blocks in
/// which activations ended abruptly.
pub fn decode(
    cfg: &Cfg,
    chords: &Chords,
    slots: &[u64],
    abrupt: &[(NodeId, u64)],
) -> Result<Vec<u64>, GraphError> {
    let mut in_tree = vec![true; cfg.num_edges()];
    let mut chord_counts = vec![0; cfg.num_edges()];
    for (i, e) in chords.chords.iter().enumerate() {
        in_tree[e.index()] = false;
        chord_counts[e.index()] = slots.get(i).copied().unwrap_or(0);
    }
    if chords.chords.len() == cfg.num_edges() {
        return Ok(chord_counts); // every edge counted: nothing to derive
    }
    flow::derive_edge_counts(cfg, &in_tree, &chord_counts, abrupt, &chords.unwinding)
}
