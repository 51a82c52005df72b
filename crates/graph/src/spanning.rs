//! Chords and their increments (Ball & Larus section 3.3).
//!
//! Terms:
//! - *spanning tree*: a maximum spanning tree of the DAG, edges taken as
//!   undirected, plus the virtual edge `EXIT->ENTRY`, which is always in the
//!   tree (3.1 adds it "for technical reasons": it closes every path into a
//!   cycle). Maximum with respect to a weight that estimates how often each
//!   edge runs, so the frequent edges carry no instrumentation.
//! - *chord*: a DAG edge not in the tree; only chords are instrumented.
//! - *Inc(c)*: the increment of chord `c`, by event counting (Ball 1994):
//!   the sum of Val around the unique cycle that `c` closes with the tree,
//!   each edge counted positively if the cycle runs along its direction and
//!   negatively otherwise (the virtual edge has Val 0). Then the sum of Inc
//!   along any ENTRY->EXIT path equals the sum of Val, its path number.
//!
//! Computing each cycle would be quadratic. Instead a potential `phi` is laid
//! on the vertices so that every tree edge `u->v` has
//! `phi(v) = phi(u) + Val(u->v)` (with `phi(ENTRY) = phi(EXIT)` through the
//! virtual edge); the cycle sum of chord `u->v` telescopes to
//! `phi(u) + Val(u->v) - phi(v)`. Linear after the sort.
//!
//! Arithmetic is wrapping, as in the path register: an increment is the true
//! value modulo 2^64, read as `i64`, so path sums are right modulo 2^64 (and
//! modulo 2^32 for a 32-bit register when there are at most 2^32 paths).

use crate::cfg::{rows, Cfg, EdgeId};
use crate::dag::{Dag, DagEdgeId};
use crate::mst::max_spanning_tree;
use crate::numbering::Numbering;

/// Per DAG edge, the weight of the CFG edges it stands for: a real edge has
/// its CFG edge's weight; `EntryDummy(w)` the sum of the weights of the
/// backedges and cut edges into `w`; `ExitDummy(v)` the sum of those out of
/// `v` (saturating). A dead-end ExitDummy stands for no CFG edge and weighs 0.
///
/// Weights only steer the tree, so a `cfg_weights` of the wrong length (a
/// stale profile) is tolerated: missing weights count as 0.
pub fn dag_weights(dag: &Dag, cfg: &Cfg, cfg_weights: &[u64]) -> Vec<u64> {
    dag_weights_by(dag, cfg, |e| {
        cfg_weights.get(e.index()).copied().unwrap_or(0)
    })
}

/// [`dag_weights`] with the CFG edges' weights given by `weight`.
pub fn dag_weights_by(dag: &Dag, cfg: &Cfg, weight: impl Fn(EdgeId) -> u64) -> Vec<u64> {
    let mut weights = vec![0u64; dag.num_edges()];
    for e in cfg.edge_ids() {
        let w = weight(e);
        for &d in dag.cfg_to_dag.get(e.index()).unwrap_or(&[]) {
            weights[d.index()] = weights[d.index()].saturating_add(w);
        }
    }
    weights
}

/// Which DAG edges are chords, and the increment of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increments {
    /// Per DAG edge: true if the edge is a chord (not in the spanning tree).
    pub chord: Vec<bool>,
    /// Per DAG edge: Inc, 0 on tree edges.
    pub inc: Vec<i64>,
}

impl Increments {
    /// The chords, in id order.
    pub fn chords(&self) -> impl Iterator<Item = DagEdgeId> + '_ {
        self.chord
            .iter()
            .enumerate()
            .filter(|(_, &c)| c)
            .map(|(i, _)| DagEdgeId::new(i))
    }
    pub fn num_chords(&self) -> usize {
        self.chord.iter().filter(|&&c| c).count()
    }
}

/// Chooses the maximum spanning tree of `dag` under `weights` (per DAG edge,
/// e.g. from [`dag_weights`]; missing ones count as 0; ties go to the lower
/// edge id) and computes each chord's increment (3.3).
pub fn chord_increments(dag: &Dag, numbering: &Numbering, weights: &[u64]) -> Increments {
    let in_tree = spanning_tree(dag, weights);
    increments_on_tree(dag, &in_tree, &numbering.val)
}

/// The maximum spanning tree of section 3.3 (with the virtual `EXIT->ENTRY`
/// edge in it): `true` for the DAG edges in the tree. The tree depends on the
/// weights only, so several numberings of one DAG (PPP keeps two) can share
/// its chords.
pub fn spanning_tree(dag: &Dag, weights: &[u64]) -> Vec<bool> {
    max_spanning_tree(
        dag.num_nodes,
        dag.edges.len(),
        |i| (dag.edges[i].src, dag.edges[i].dst),
        |i| weights.get(i).copied().unwrap_or(0),
        &[],
    )
}

/// Event-counting increments (3.3) of the edge values `val` (any values whose
/// sums along ENTRY->EXIT paths are the path ids, Val for Ball-Larus, the
/// PPP weights for PPP; wrapping) on the chords of `in_tree`.
pub fn increments_on_tree(dag: &Dag, in_tree: &[bool], val: &[u64]) -> Increments {
    let val = |i: usize| val.get(i).copied().unwrap_or(0);
    let phi = potentials(dag, in_tree, val);
    let inc = dag
        .edges
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if in_tree[i] {
                0
            } else {
                phi[e.src.index()]
                    .wrapping_add(val(i))
                    .wrapping_sub(phi[e.dst.index()]) as i64
            }
        })
        .collect();
    Increments {
        chord: in_tree.iter().map(|&t| !t).collect(),
        inc,
    }
}

fn potentials(dag: &Dag, in_tree: &[bool], val: impl Fn(usize) -> u64) -> Vec<u64> {
    let n = dag.num_nodes;
    // Tree adjacency, both ways, in compressed rows of half-edges: `2i` is
    // DAG edge i forwards, `2i + 1` backwards, and edge `num_edges` is the
    // virtual EXIT->ENTRY one. Four bytes an arc: the largest function's
    // potentials were the instrumenter's peak with (from, to, delta) arcs.
    let m = dag.edges.len();
    let ends = |h: u32| {
        let i = (h / 2) as usize;
        let (src, dst) = dag
            .edges
            .get(i)
            .map_or((Cfg::EXIT, Cfg::ENTRY), |e| (e.src, e.dst));
        if h & 1 == 0 {
            (src, dst)
        } else {
            (dst, src)
        }
    };
    let halves: Vec<u32> = (0..=m as u32)
        .filter(|&i| (i as usize) == m || in_tree[i as usize])
        .flat_map(|i| [2 * i, 2 * i + 1])
        .collect();
    let (start, adj) = rows(n, &halves, |&h| ends(h).0.index(), |k| halves[k]);
    drop(halves);
    // What going along half-edge h adds to phi.
    let delta = |h: u32| {
        let i = (h / 2) as usize;
        let v = if i == m { 0 } else { val(i) };
        if h & 1 == 0 {
            v
        } else {
            v.wrapping_neg()
        }
    };
    let mut phi = vec![0u64; n];
    let mut seen = vec![false; n];
    let mut work = Vec::new();
    let roots = std::iter::once(Cfg::ENTRY).chain(dag.nodes());
    for root in roots {
        if seen[root.index()] {
            continue;
        }
        seen[root.index()] = true;
        work.push(root);
        while let Some(u) = work.pop() {
            let (from, to) = (start[u.index()] as usize, start[u.index() + 1] as usize);
            for &h in &adj[from..to] {
                let v = ends(h).1;
                if !seen[v.index()] {
                    seen[v.index()] = true;
                    phi[v.index()] = phi[u.index()].wrapping_add(delta(h));
                    work.push(v);
                }
            }
        }
    }
    phi
}
