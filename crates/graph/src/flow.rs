//! Edge profiling with counters on chords only (QPT2, Ball & Larus 1994), the
//! baseline of section 6, and the flow conservation that recovers every edge
//! count from the chord counts.
//!
//! Terms: a maximum spanning tree of the CFG (edges undirected) plus a
//! virtual `EXIT->ENTRY` edge, always in the tree; *chords* are the other
//! edges and carry counters. At every vertex the flow in equals the flow out
//! (the virtual edge carries one unit per activation from EXIT back to
//! ENTRY), so a vertex with one unknown tree edge determines it; peeling the
//! tree from its leaves determines all of them in linear time.
//!
//! Early termination (section 3.6): an activation that never reaches EXIT (a
//! trap, or the program exiting while the vertex was executing) leaves flow
//! in its last vertex. The caller reports those as `abrupt_exits`, each
//! treated as an extra edge `v->EXIT` with a known count.
//!
//! Unwinding: an activation may also leave a vertex with no record of it
//! (an exception thrown by a callee unwinds through it, and the engine says
//! nothing of the frames it passes). The caller names the vertices where that
//! may happen (`unwinding`); each gets a virtual edge `v->EXIT` of unknown
//! count that is always in the tree, as the `EXIT->ENTRY` edge is, so its
//! count is derived like any tree edge's. They form a star at EXIT, so a tree
//! holding all of them exists; each costs one more chord than the plain tree.
//! A departure from QPT2, which assumes every activation reaches EXIT or is
//! reported where it stopped.
//!
//! Self loops are never tree edges (they would close a cycle), so each keeps
//! its own counter. Unreachable parts form trees of their own and get 0.

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::error::GraphError;
use crate::mst::max_spanning_tree;

/// Per CFG edge, whether it is in a maximum spanning tree under `weights`
/// (true = uninstrumented) that also holds the virtual edges of the
/// `unwinding` vertices (a repeated vertex, ENTRY or EXIT adds nothing). Missing weights
/// count as 0; ties go to the lower edge id.
pub fn edge_spanning_tree(cfg: &Cfg, weights: &[u64], unwinding: &[NodeId]) -> Vec<bool> {
    let ends = cfg.edge_list();
    max_spanning_tree(
        cfg.num_nodes(),
        ends.len(),
        |i| ends[i],
        |i| weights.get(i).copied().unwrap_or(0),
        unwinding,
    )
}

/// The vertices of `unwinding` that get a virtual edge, ascending: a
/// repeated vertex, ENTRY or EXIT adds none (as the tree is built).
pub fn unwinding_vertices(unwinding: &[NodeId]) -> Vec<NodeId> {
    let mut out = unwinding.to_vec();
    out.sort_unstable();
    out.dedup();
    out.retain(|&v| v != Cfg::ENTRY && v != Cfg::EXIT);
    out
}

/// The tree edges still unknown, plus the virtual edges (`EXIT->ENTRY` at
/// index `num_edges`, the unwinding ones after it).
struct Unknowns {
    /// Per node, the unknown edges touching it.
    touching: Vec<Vec<usize>>,
    /// Per node, how many of those are still unknown.
    left: Vec<usize>,
}

/// Every edge's count from the counts of the chords (`chord_counts`, per CFG
/// edge, read only where `in_tree` is false), the abrupt exits, and the
/// `unwinding` vertices the tree was built with ([`edge_spanning_tree`]).
///
/// Fails with [`GraphError::InconsistentCounts`] if the counts cannot come
/// from an execution (a derived count would be negative or flow does not
/// balance), and with [`GraphError::NotASpanningForest`] if the tree edges
/// hold a cycle.
pub fn derive_edge_counts(
    cfg: &Cfg,
    in_tree: &[bool],
    chord_counts: &[u64],
    abrupt_exits: &[(NodeId, u64)],
    unwinding: &[NodeId],
) -> Result<Vec<u64>, GraphError> {
    let (n, m) = (cfg.num_nodes(), cfg.num_edges());
    check_len("in_tree", in_tree.len(), m)?;
    check_len("chord_counts", chord_counts.len(), m)?;
    if let Some(&v) = unwinding.iter().find(|v| v.index() >= n) {
        return Err(GraphError::NodeOutOfRange {
            node: v,
            num_nodes: n,
        });
    }
    let unwinding = unwinding_vertices(unwinding);
    let ends = |i: usize| match i.checked_sub(m) {
        None => cfg.edge(EdgeId::new(i)),
        Some(0) => (Cfg::EXIT, Cfg::ENTRY),
        Some(u) => (unwinding[u - 1], Cfg::EXIT),
    };
    let virtuals = 1 + unwinding.len();
    // Per node: known flow in minus known flow out.
    let mut balance = vec![0i128; n];
    let mut counts: Vec<Option<u64>> = vec![None; m + virtuals];
    for e in (0..m).filter(|&e| !in_tree[e]) {
        let c = chord_counts[e];
        counts[e] = Some(c);
        let (v, w) = ends(e);
        balance[v.index()] -= i128::from(c);
        balance[w.index()] += i128::from(c);
    }
    for &(v, c) in abrupt_exits {
        if v.index() >= n {
            return Err(GraphError::NodeOutOfRange {
                node: v,
                num_nodes: n,
            });
        }
        balance[v.index()] -= i128::from(c);
        balance[Cfg::EXIT.index()] += i128::from(c);
    }
    let mut unknowns = Unknowns {
        touching: vec![Vec::new(); n],
        left: vec![0; n],
    };
    for e in (0..m + virtuals).filter(|&e| e >= m || in_tree[e]) {
        let (v, w) = ends(e);
        for x in [v, w] {
            unknowns.touching[x.index()].push(e);
            unknowns.left[x.index()] += 1;
        }
    }
    peel(n, &ends, &mut balance, &mut counts, &mut unknowns)?;
    finish(cfg, counts)
}

fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), GraphError> {
    if got == expected {
        Ok(())
    } else {
        Err(GraphError::LengthMismatch {
            what,
            got,
            expected,
        })
    }
}

/// Resolves tree edges from the leaves in: a vertex with one unknown edge
/// left knows its count from its balance.
fn peel(
    n: usize,
    ends: &dyn Fn(usize) -> (NodeId, NodeId),
    balance: &mut [i128],
    counts: &mut [Option<u64>],
    unknowns: &mut Unknowns,
) -> Result<(), GraphError> {
    for v in (0..n).filter(|&v| unknowns.left[v] == 0) {
        check_balanced(balance, NodeId::new(v))?;
    }
    let mut leaves: Vec<usize> = (0..n).filter(|&v| unknowns.left[v] == 1).collect();
    while let Some(v) = leaves.pop() {
        if unknowns.left[v] != 1 {
            continue;
        }
        let e = *unknowns.touching[v]
            .iter()
            .find(|&&e| counts[e].is_none())
            .expect("one unknown edge left");
        let (src, dst) = ends(e);
        let node = NodeId::new(v);
        // Out of v: in - out - c = 0; into v: in + c - out = 0.
        let c = if src == node { balance[v] } else { -balance[v] };
        let c = u64::try_from(c).map_err(|_| GraphError::InconsistentCounts { node })?;
        counts[e] = Some(c);
        balance[src.index()] -= i128::from(c);
        balance[dst.index()] += i128::from(c);
        let other = if src == node { dst } else { src };
        unknowns.left[v] -= 1;
        unknowns.left[other.index()] -= 1;
        match unknowns.left[other.index()] {
            0 => check_balanced(balance, other)?,
            1 => leaves.push(other.index()),
            _ => {}
        }
    }
    Ok(())
}

fn check_balanced(balance: &[i128], node: NodeId) -> Result<(), GraphError> {
    match balance[node.index()] {
        0 => Ok(()),
        _ => Err(GraphError::InconsistentCounts { node }),
    }
}

/// The counts of the CFG edges, once all are known.
fn finish(cfg: &Cfg, counts: Vec<Option<u64>>) -> Result<Vec<u64>, GraphError> {
    cfg.edge_ids()
        .map(|e| counts[e.index()].ok_or(GraphError::NotASpanningForest { edge: e }))
        .collect()
}
