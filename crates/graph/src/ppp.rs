//! The numbering core of Preferential Path Profiling (PPP): Vaswani, Nori and
//! Chilimbi, "Preferential Path Profiling: Compactly Numbering Interesting
//! Paths" (POPL 2007), and K. Vaswani's thesis, chapter 3.
//!
//! Terms (thesis 3.3 and 3.3.1):
//! - *interesting paths* `I`: a set of ENTRY->EXIT paths of a [`Dag`].
//! - *edge assignment* `W`: an integer per DAG edge (here [`PppNumbering::inc`]);
//!   the *PPP id* of a path is the sum of `W` along it.
//! - *Problem A*: give the interesting paths unique ids that are as compact as
//!   possible. The thesis measures compactness by the ratio
//!   `(max - min + 1) / |I|`; [`delta`] here is the *difference*
//!   `(max - min + 1) - |I|` (the number of holes), as the caller asked, which
//!   orders two numberings of the same `I` the same way.
//! - *prefix(p, e)*: the part of path `p` from ENTRY to `src(e)`. The thesis
//!   says "the sequence of nodes"; here it is the sequence of *edges*, which
//!   is the same thing without parallel edges and, with them (a wasm
//!   `br_table` can branch twice to one block), keeps two routes through
//!   parallel edges apart, as their Ball-Larus sums do. As in
//!   section 3.6 of the thesis, a prefix is represented by the sum of the
//!   Ball-Larus Val along it, which is unique among the prefixes ending at a
//!   given node.
//! - *pid(p)*: the partial identifier of `p`, the sum of the weights already
//!   assigned along it; *cis(q)*: the cumulative interval size of prefix `q`
//!   over the outgoing edges of `src(e)` processed so far.
//!
//! What is implemented: [`compute_ppp_increments`] is Fig. 3.10
//! (*computePPPIncrements*; Fig. 10 of the POPL paper), read as follows.
//! Nodes are visited in reverse topological order; at node `v`, each outgoing
//! edge `e` carrying at least one interesting path is visited in
//! [`Dag::succs`] order (DAG edge id order). For every prefix `q` among the
//! interesting paths through `e`, `min(e,q)` is the smallest pid of those
//! paths with prefix `q` (line 5) and `q` asks for the weight
//! `cis(q) - min(e,q)` (line 7; this is Eq. 3.1/3.2, compaction: the interval
//! of `q` on `e` starts right after the intervals of `q` on the edges of `v`
//! visited before). The *join* (lines 9-11) gives `e` the largest of these
//! weights. Then every interesting path through `e` has its pid raised by
//! `W(e)` (lines 14-16), and `cis(q)` becomes the largest pid of the paths
//! with prefix `q` through `e`, plus one (lines 17-20).
//!
//! Interpretations (the text extraction garbles formulas; these are read off
//! the pseudo-code and the worked example of 3.3.2, which agree):
//! - `cis` is keyed by the prefix, and a prefix ends at the node being
//!   processed, so `cis` is in effect per node: it starts at 0 for every
//!   prefix at every node (Fig. 3.10 assumption (d); step 4_b of the example,
//!   "cis(sb) = 0"). Here it is a map from the prefix's Ball-Larus sum,
//!   created afresh for each node.
//! - Line 19 *overwrites* `cis(q)` with the end of `q`'s interval on `e`
//!   (step 6_s: "cis(s) = 1 + 1 = 2"). Since the join makes every weight at
//!   least `cis(q) - min(e,q)`, that interval starts at or after the old
//!   `cis(q)`, so `cis(q)` only grows and the intervals of one prefix on the
//!   successive edges of `v` are disjoint and increasing.
//! - The order of a node's outgoing edges is not fixed by the thesis (the
//!   example says "say the edge (c, d) is processed first"); DAG edge id order
//!   reproduces the example. The result does not depend on which reverse
//!   topological order is used: two incomparable nodes share no path.
//! - An edge no interesting path takes keeps `W = ⊥` in Fig. 3.10; it gets
//!   weight 0 here. Such an edge only lies on uninteresting paths, whose PPP
//!   ids are meaningless anyway (3.2.3: they may alias interesting ids, be
//!   negative, or exceed `max`; the Ball-Larus id tells them apart).
//! - Prefixes are keyed by their Ball-Larus sum (wrapping, as the path
//!   register does). If `bl` were not a valid numbering two prefixes into a
//!   node could share a key; that merges their constraints, which changes
//!   compactness (either way: the algorithm is greedy) but never uniqueness
//!   (paths that diverge at their critical node `v` have the same prefix to
//!   `v`, hence the same key).
//! - At ENTRY there is a single (empty) prefix, so the interesting ids are
//!   exactly the interval `[0, cis(ENTRY) - 1]` with no prefix elsewhere:
//!   `min` is always 0 when `I` is not empty. [`PppNumbering`] still reports
//!   `min` and `max` as measured over the interesting ids.
//!
//! Additions to the thesis:
//! - Fig. 3.10 alone can be *less* compact than Ball-Larus for the same set
//!   (its fixed edge order and its join can open holes that Ball-Larus' 5.2
//!   order avoids; a five-path example is in the tests). [`choose`] computes
//!   both and keeps the smaller [`delta`] (PPP on a tie), expressing the
//!   Ball-Larus fallback as a [`PppNumbering`] whose `inc` is Val.
//! - Interesting paths may come in any order and with duplicates (removed);
//!   an empty set gives all-zero increments and `min = max = 0`. A path that
//!   is not ENTRY->EXIT in the DAG is reported as
//!   [`GraphError::InvalidNumbering`] (the error type has no closer variant).
//!
//! Cost: `O(V + E + L log L)` for `L` the total length of the distinct
//! interesting paths (the thesis gives `O(E x P)`), no recursion, and overflow-checked
//! `i64` arithmetic ([`GraphError::TooManyPaths`] on overflow).

use std::collections::HashMap;

use crate::cfg::Cfg;
use crate::dag::{Dag, DagEdgeId};
use crate::error::GraphError;
use crate::numbering::{topological_order, Numbering};

/// The PPP numbering of a DAG for a set of interesting paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PppNumbering {
    /// Per DAG edge, the PPP increment `W(e)`: the PPP id of a path is the sum
    /// of `inc` along it. 0 on edges no interesting path takes.
    pub inc: Vec<i64>,
    /// The smallest and largest PPP id of an interesting path: interesting
    /// paths get unique ids in `[min, max]`. Both 0 when there is none.
    pub min: i64,
    pub max: i64,
}

/// The error for an interesting path that is not an ENTRY->EXIT path of the DAG.
const NOT_A_PATH: GraphError = GraphError::InvalidNumbering {
    reason: "an interesting path is not an ENTRY->EXIT path of the DAG",
};

/// The distinct interesting paths, sorted, each checked to be an ENTRY->EXIT
/// path of `dag`.
fn distinct_paths(
    dag: &Dag,
    interesting: &[Vec<DagEdgeId>],
) -> Result<Vec<Vec<DagEdgeId>>, GraphError> {
    for path in interesting {
        let (Some(first), Some(last)) = (path.first(), path.last()) else {
            return Err(NOT_A_PATH);
        };
        if path.iter().any(|d| d.index() >= dag.num_edges()) {
            return Err(NOT_A_PATH);
        }
        let chained = path
            .windows(2)
            .all(|w| dag.edge(w[0]).dst == dag.edge(w[1]).src);
        if dag.edge(*first).src != Cfg::ENTRY || dag.edge(*last).dst != Cfg::EXIT || !chained {
            return Err(NOT_A_PATH);
        }
    }
    let mut paths = interesting.to_vec();
    paths.sort_unstable();
    paths.dedup();
    Ok(paths)
}

/// Fig. 3.10 of the thesis (*computePPPIncrements*) on `dag` for the paths
/// `interesting` (in any order, duplicates ignored), with prefixes keyed by
/// their sums under the Ball-Larus numbering `bl` (section 3.6).
///
/// Fails with [`GraphError::Cyclic`] if `dag` has a cycle,
/// [`GraphError::LengthMismatch`] if `bl.val` does not have one entry per DAG
/// edge, [`GraphError::InvalidNumbering`] if an interesting path is not an
/// ENTRY->EXIT path of `dag`, and [`GraphError::TooManyPaths`] if an id
/// overflows `i64`.
pub fn compute_ppp_increments(
    dag: &Dag,
    bl: &Numbering,
    interesting: &[Vec<DagEdgeId>],
) -> Result<PppNumbering, GraphError> {
    if bl.val.len() != dag.num_edges() {
        return Err(GraphError::LengthMismatch {
            what: "Ball-Larus Val",
            got: bl.val.len(),
            expected: dag.num_edges(),
        });
    }
    let order = topological_order(dag)?;
    let paths = distinct_paths(dag, interesting)?;
    let mut inc = vec![0i64; dag.num_edges()];
    if paths.is_empty() {
        return Ok(PppNumbering {
            inc,
            min: 0,
            max: 0,
        });
    }
    // paths_I(e), with each path's prefix key at e, is built at src(e)
    // only: the nodes come in reverse topological order, so each path is
    // met at its edges from the last to the first, and waits at the
    // source of the next one (`cursor[p]` edges of it are left), its key
    // the Ball-Larus sum of the edges before that one. Building every
    // paths_I(e) up front took 16 bytes per edge of every interesting
    // path at once (bzip2: 26 MB of a 281 KB module's planning).
    let mut cursor: Vec<usize> = paths.iter().map(Vec::len).collect();
    let mut key: Vec<u64> = paths
        .iter()
        .map(|path| {
            path[..path.len() - 1]
                .iter()
                .fold(0u64, |k, d| k.wrapping_add(bl.val[d.index()]))
        })
        .collect();
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new(); dag.num_nodes];
    for (p, path) in paths.iter().enumerate() {
        waiting[dag.edge(path[path.len() - 1]).src.index()].push(p);
    }
    let mut pid = vec![0i64; paths.len()];
    let mut here: Vec<(DagEdgeId, u64, usize)> = Vec::new();
    for &v in order.iter().rev() {
        let mut cis: HashMap<u64, i64> = HashMap::new();
        // (e, key at e, path) of the paths through v; by edge in id order,
        // which is `dag.succs(v)`'s order.
        here.clear();
        for p in std::mem::take(&mut waiting[v.index()]) {
            here.push((paths[p][cursor[p] - 1], key[p], p));
        }
        here.sort_unstable();
        for by_edge in here.chunk_by(|a, b| a.0 == b.0) {
            let e = by_edge[0].0;
            // Group by prefix: each run of one key is one prefix q.
            let list: Vec<(u64, usize)> = by_edge.iter().map(|&(_, k, p)| (k, p)).collect();
            // Lines 3-12: W(e) = max over q of cis(q) - min(e,q).
            let mut w: Option<i64> = None;
            for group in list.chunk_by(|a, b| a.0 == b.0) {
                let q = group[0].0;
                let min = group
                    .iter()
                    .map(|&(_, p)| pid[p])
                    .min()
                    .expect("a group is not empty");
                let weight = cis
                    .get(&q)
                    .copied()
                    .unwrap_or(0)
                    .checked_sub(min)
                    .ok_or(GraphError::TooManyPaths)?;
                w = Some(w.map_or(weight, |w| w.max(weight)));
            }
            let w = w.expect("the list is not empty");
            // Lines 14-16.
            for &(_, p) in list.iter() {
                pid[p] = pid[p].checked_add(w).ok_or(GraphError::TooManyPaths)?;
            }
            // Lines 17-20.
            for group in list.chunk_by(|a, b| a.0 == b.0) {
                let max = group
                    .iter()
                    .map(|&(_, p)| pid[p])
                    .max()
                    .expect("a group is not empty");
                cis.insert(
                    group[0].0,
                    max.checked_add(1).ok_or(GraphError::TooManyPaths)?,
                );
            }
            inc[e.index()] = w;
        }
        // Each path moves on to the source of its edge before.
        for &(_, _, p) in &here {
            cursor[p] -= 1;
            if let Some(&d) = paths[p][..cursor[p]].last() {
                key[p] = key[p].wrapping_sub(bl.val[d.index()]);
                waiting[dag.edge(d).src.index()].push(p);
            }
        }
    }
    let min = *pid.iter().min().expect("paths is not empty");
    let max = *pid.iter().max().expect("paths is not empty");
    Ok(PppNumbering { inc, min, max })
}

/// The PPP id of a DAG path: the sum of `inc` along it (wrapping; an
/// uninteresting path's id is only compared, never trusted).
pub fn ppp_id(numbering: &PppNumbering, path: &[DagEdgeId]) -> i64 {
    path.iter()
        .fold(0i64, |sum, d| sum.wrapping_add(numbering.inc[d.index()]))
}

/// Compactness (Problem A, as a difference): the size of the id interval
/// `max - min + 1` minus `interesting`, the number of *distinct* interesting
/// paths; 0 when there is none. Saturates at 0 and `u64::MAX`.
pub fn delta(numbering: &PppNumbering, interesting: usize) -> u64 {
    interval_minus(numbering.min as i128, numbering.max as i128, interesting)
}

/// The Ball-Larus delta for the same set: `(max BL id - min BL id + 1) - |I|`
/// over the distinct paths of `interesting`; 0 when there is none.
pub fn ball_larus_delta(bl: &Numbering, interesting: &[Vec<DagEdgeId>]) -> u64 {
    let mut paths: Vec<&Vec<DagEdgeId>> = interesting.iter().collect();
    paths.sort_unstable();
    paths.dedup();
    let ids = paths.iter().map(|p| bl.path_sum(p));
    match (ids.clone().min(), ids.max()) {
        (Some(lo), Some(hi)) => interval_minus(lo as i128, hi as i128, paths.len()),
        _ => 0,
    }
}

fn interval_minus(min: i128, max: i128, count: usize) -> u64 {
    if count == 0 {
        return 0;
    }
    let size = max - min + 1;
    u64::try_from((size - count as i128).max(0)).unwrap_or(u64::MAX)
}

/// Which numbering [`choose`] picked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// [`compute_ppp_increments`].
    Ppp,
    /// The Ball-Larus numbering itself, as increments.
    BallLarus,
}

/// The more compact of PPP and Ball-Larus for one set of interesting paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub scheme: Scheme,
    /// For [`Scheme::BallLarus`], `inc` is Val and `[min, max]` the range of
    /// the interesting paths' Ball-Larus ids.
    pub numbering: PppNumbering,
}

/// Fig. 3.10 does not always beat Ball-Larus: it visits a node's edges in a
/// fixed order and its join can open holes that Ball-Larus' order (5.2, the
/// successor with the most paths last) avoids. So this computes both and
/// returns the one with the smaller [`delta`], PPP on a tie. Errors as
/// [`compute_ppp_increments`]; [`GraphError::TooManyPaths`] also if a Val or
/// Ball-Larus id does not fit `i64`.
pub fn choose(
    dag: &Dag,
    bl: &Numbering,
    interesting: &[Vec<DagEdgeId>],
) -> Result<Chosen, GraphError> {
    let ppp = compute_ppp_increments(dag, bl, interesting)?;
    let distinct = distinct_paths(dag, interesting)?;
    if delta(&ppp, distinct.len()) <= ball_larus_delta(bl, &distinct) {
        return Ok(Chosen {
            scheme: Scheme::Ppp,
            numbering: ppp,
        });
    }
    ball_larus_as_ppp(dag, bl, interesting)
}

/// The Ball-Larus numbering expressed as a PPP numbering of `interesting`:
/// `inc` is Val and `[min, max]` the range of their Ball-Larus ids. What
/// [`choose`] falls back to, and a baseline to compare PPP against.
pub fn ball_larus_as_ppp(
    dag: &Dag,
    bl: &Numbering,
    interesting: &[Vec<DagEdgeId>],
) -> Result<Chosen, GraphError> {
    let distinct = distinct_paths(dag, interesting)?;
    let to_i64 = |x: u64| i64::try_from(x).map_err(|_| GraphError::TooManyPaths);
    let inc = bl
        .val
        .iter()
        .map(|&v| to_i64(v))
        .collect::<Result<Vec<i64>, _>>()?;
    let ids = distinct
        .iter()
        .map(|p| to_i64(bl.path_sum(p)))
        .collect::<Result<Vec<i64>, _>>()?;
    let min = ids.iter().copied().min().unwrap_or(0);
    let max = ids.iter().copied().max().unwrap_or(0);
    Ok(Chosen {
        scheme: Scheme::BallLarus,
        numbering: PppNumbering { inc, min, max },
    })
}
