//! Where a function's edge functions are added at run time: the second half
//! of Melski and Reps' section 5.5.1, "moving the increments to rarely
//! executed edges", by Ball and Larus' event counting (their section 3.3,
//! [`crate::spanning`]) on each function's local graph ([`Local`]).
//!
//! The instrumentation reads `pathNum` at a few points only: where a path
//! ends (a backedge's or throw's surrogate exit, a tail call, `Exit_P`) and
//! before an uncut call, which hands it to the callee. Between two such
//! points `numValidCompsFromExit` does not change (it changes only at
//! entry, at a restart and, piecewise, at a return with no parenthesis
//! open), so the rho's along a stretch add up to `(Σa)·nvc + Σb`, and any
//! increments with the same sums of `a` and of `b` along every stretch give
//! the same `pathNum` at every point that reads it.
//!
//! The placement graph is the local graph with each uncut call's `c -> r`
//! edge (which stands for the callee) replaced by two dummies of value
//! zero: `c -> Exit_P`, whose increment is added before the call, and
//! `Entry_P -> r`, whose increment is added after it returns. Every
//! stretch is then a path from `Entry_P` (or `GEntry_P`) to `Exit_P` (or
//! `GExit_P`), and the increments of the chords of a maximum spanning tree
//! (with `Exit_P -> Entry_P`, `GExit_P -> Exit_P` and `GEntry_P -> Exit_P`
//! in the tree, virtual) preserve the sums of every such path, componentwise
//! modulo 2^64: what the register's arithmetic needs.
//!
//! Departure from the paper: 5.5.1 also folds the multiplications out of
//! the edges; that was built and measured slower
//! (docs/decisions.md#no-folding), so each chord adds `a·nvc + b` itself.

use crate::cfg::{Cfg, NodeId};
use crate::interproc::local::{Local, LocalEdgeKind};
use crate::interproc::numbering::Linear;
use crate::mst::max_spanning_tree;
use crate::spanning::{Tree, Wrapping};

impl Wrapping for Linear {
    fn wrapping_add(self, other: Linear) -> Linear {
        Linear::new(self.a.wrapping_add(other.a), self.b.wrapping_add(other.b))
    }
    fn wrapping_neg(self) -> Linear {
        Linear::new(self.a.wrapping_neg(), self.b.wrapping_neg())
    }
}

/// What the instrumentation adds where, in place of the rho's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Per local edge: its increment; zero on tree edges and on `Call`
    /// edges (see `before_call` and `after_call`).
    pub inc: Vec<Linear>,
    /// Per local call: the increment before an uncut call (its dummy
    /// `c -> Exit_P`); zero for a cut one.
    pub before_call: Vec<Linear>,
    /// Per local call: the increment after an uncut call returns (its dummy
    /// `Entry_P -> r`); zero for a cut one.
    pub after_call: Vec<Linear>,
}

impl Placed {
    /// The rho's themselves, where they are: every edge instrumented.
    pub fn unmoved(rho: &[Linear], num_calls: usize) -> Placed {
        Placed {
            inc: rho.to_vec(),
            before_call: vec![Linear::ZERO; num_calls],
            after_call: vec![Linear::ZERO; num_calls],
        }
    }
}

/// The increments of `local`'s edges whose values are `rho` (per local
/// edge), on the chords of a maximum spanning tree under `weight` (per
/// local edge; a `Call` edge's weight goes to both its dummies);
/// `num_calls` local calls.
pub fn place(local: &Local, rho: &[Linear], weight: &[u64], num_calls: usize) -> Placed {
    let m = local.edges.len();
    // Placement edges: the local edges (a `Call` edge as its dummy
    // `c -> Exit_P`), then per `Call` edge, in order, its `Entry_P -> r`.
    let calls: Vec<usize> = (0..m)
        .filter(|&i| matches!(local.edges[i].kind, LocalEdgeKind::Call(_)))
        .collect();
    let ends = |i: usize| match i.checked_sub(m) {
        Some(j) => (Cfg::ENTRY, local.edges[calls[j]].dst),
        None => {
            let e = &local.edges[i];
            match e.kind {
                LocalEdgeKind::Call(_) => (e.src, Cfg::EXIT),
                _ => (e.src, e.dst),
            }
        }
    };
    let val = |i: usize| match i.checked_sub(m) {
        Some(_) => Linear::ZERO,
        None => match local.edges[i].kind {
            LocalEdgeKind::Call(_) => Linear::ZERO,
            _ => rho.get(i).copied().unwrap_or_default(),
        },
    };
    let weight = |i: usize| {
        weight
            .get(i.checked_sub(m).map_or(i, |j| calls[j]))
            .copied()
    };
    let joins: Vec<NodeId> = std::iter::once(local.gexit).chain(local.gentry).collect();
    let num_edges = m + calls.len();
    let in_tree = max_spanning_tree(
        local.num_nodes,
        num_edges,
        ends,
        |i| weight(i).unwrap_or(0),
        &joins,
    );
    let tree = Tree {
        num_nodes: local.num_nodes,
        num_edges,
        in_tree: &in_tree,
        joins: &joins,
    };
    let nodes = (0..local.num_nodes).map(NodeId::new);
    let phi = tree.potentials(ends, val, nodes);
    let inc = |i: usize| match in_tree[i] {
        true => Linear::ZERO,
        false => {
            let (u, v) = ends(i);
            phi[u.index()]
                .wrapping_add(val(i))
                .wrapping_add(phi[v.index()].wrapping_neg())
        }
    };
    let mut placed = Placed {
        inc: (0..m).map(inc).collect(),
        before_call: vec![Linear::ZERO; num_calls],
        after_call: vec![Linear::ZERO; num_calls],
    };
    for (j, &i) in calls.iter().enumerate() {
        let LocalEdgeKind::Call(k) = local.edges[i].kind else {
            unreachable!("calls holds Call edges")
        };
        placed.before_call[k] = placed.inc[i];
        placed.inc[i] = Linear::ZERO;
        placed.after_call[k] = inc(m + j);
    }
    placed
}
