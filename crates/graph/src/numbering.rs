//! Path numbering: Val and NumPaths (Ball & Larus Fig. 5, section 3.2), with
//! the successor order of 5.2 and the truncation of 5.3.
//!
//! Terms:
//! - *NumPaths(v)*: the number of paths from `v` to EXIT in the DAG.
//! - *Val(e)*: the value of DAG edge `e`; the sum of Val along any
//!   ENTRY->EXIT path (its *path number*) is unique and lies in
//!   `0..NumPaths(ENTRY)`.
//!
//! Fig. 5 visits vertices in reverse topological order and gives the i-th
//! outgoing edge of `v` the sum of NumPaths of the targets of the edges before
//! it. Section 5.2 visits the successor with the most paths last, which
//! minimises the Val of the last edge; here the successors are sorted by
//! NumPaths ascending with a stable sort, so ties keep the DAG's edge order.
//!
//! Departures from the paper:
//! - NumPaths of a vertex ENTRY does not reach is 0 (Fig. 5 would say 1, as it
//!   is a leaf); no path runs through it.
//! - Truncation (5.3) cuts a vertex whose NumPaths exceeds a threshold `t`.
//!   The paper stops there, but the paths then starting at the cut targets add
//!   to NumPaths(ENTRY), which can stay above the threshold; so
//!   [`build_numbered`] lowers `t` and cuts again until NumPaths(ENTRY) fits.

use crate::cfg::{Cfg, NodeId};
use crate::dag::{order_from_dfs, Dag, DagEdgeId, DagEdgeKind};
use crate::error::GraphError;

/// Val per DAG edge and NumPaths per node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbering {
    /// Val, per DAG edge.
    pub val: Vec<u64>,
    /// NumPaths, per node.
    pub num_paths: Vec<u64>,
}

impl Numbering {
    /// NumPaths(ENTRY): every path number is below it.
    pub fn total(&self) -> u64 {
        self.num_paths.get(Cfg::ENTRY.index()).copied().unwrap_or(0)
    }

    /// The numbering whose Val is `val`, e.g. read back from a profile.
    /// NumPaths is recomputed as the largest `Val(e) + NumPaths(w)` over the
    /// outgoing edges `e = v->w` (which is their sum for a numbering made by
    /// [`number`]), saturating, and 0 for nodes on a cycle. `val` is padded
    /// with zeros or cut to the number of DAG edges;
    /// [`crate::regenerate::regenerate`] reports a Val that does not fit.
    pub fn from_val(dag: &Dag, mut val: Vec<u64>) -> Numbering {
        val.resize(dag.num_edges(), 0);
        let mut num_paths = vec![0u64; dag.num_nodes];
        let order = match topological_order(dag) {
            Ok(order) => order,
            Err(_) => return Numbering { val, num_paths },
        };
        for &v in order.iter().rev().filter(|v| dag.reachable[v.index()]) {
            num_paths[v.index()] = if dag.succs(v).is_empty() {
                1
            } else {
                let through = |&d: &DagEdgeId| {
                    val[d.index()].saturating_add(num_paths[dag.edge(d).dst.index()])
                };
                dag.succs(v).iter().map(through).max().unwrap_or(0)
            };
        }
        Numbering { val, num_paths }
    }

    /// The path number of a DAG path: the sum of Val along it (wrapping, as
    /// the path register does).
    pub fn path_sum(&self, path: &[DagEdgeId]) -> u64 {
        path.iter()
            .fold(0u64, |sum, d| sum.wrapping_add(self.val[d.index()]))
    }
}

/// The nodes of `dag` in a topological order (Kahn's algorithm), every node
/// included. ENTRY precedes and EXIT follows every node ENTRY reaches.
pub fn topological_order(dag: &Dag) -> Result<Vec<NodeId>, GraphError> {
    let mut indegree: Vec<usize> = dag.nodes().map(|v| dag.preds(v).len()).collect();
    let mut ready: Vec<NodeId> = dag.nodes().filter(|v| indegree[v.index()] == 0).collect();
    // Pop ENTRY first: it is pushed first and the stack is reversed once.
    ready.reverse();
    let mut order = Vec::with_capacity(dag.num_nodes);
    while let Some(v) = ready.pop() {
        order.push(v);
        for &d in dag.succs(v) {
            let w = dag.edge(d).dst;
            indegree[w.index()] -= 1;
            if indegree[w.index()] == 0 {
                ready.push(w);
            }
        }
    }
    match dag.nodes().find(|v| indegree[v.index()] > 0) {
        Some(node) => Err(GraphError::Cyclic { node }),
        None => Ok(order),
    }
}

/// Fig. 5 with the successor order of 5.2. Fails with
/// [`GraphError::TooManyPaths`] if NumPaths of some node overflows `u64`.
pub fn number(dag: &Dag) -> Result<Numbering, GraphError> {
    number_in(dag, &topological_order(dag)?)
}

/// [`number`] given a topological `order` of `dag`'s nodes.
fn number_in(dag: &Dag, order: &[NodeId]) -> Result<Numbering, GraphError> {
    let mut val = vec![0u64; dag.num_edges()];
    let mut num_paths = vec![0u64; dag.num_nodes];
    let mut sorted: Vec<DagEdgeId> = Vec::new();
    for &v in order.iter().rev().filter(|v| dag.reachable[v.index()]) {
        if dag.succs(v).is_empty() {
            num_paths[v.index()] = 1;
            continue;
        }
        sorted.clear();
        sorted.extend_from_slice(dag.succs(v));
        sorted.sort_by_key(|&d| num_paths[dag.edge(d).dst.index()]);
        let mut sum = 0u64;
        for &d in &sorted {
            val[d.index()] = sum;
            sum = sum
                .checked_add(num_paths[dag.edge(d).dst.index()])
                .ok_or(GraphError::TooManyPaths)?;
        }
        num_paths[v.index()] = sum;
    }
    Ok(Numbering { val, num_paths })
}

/// Builds the DAG of `cfg` and numbers it, truncating (5.3) so that
/// NumPaths(ENTRY) is at most `truncate_above`. When even cutting every
/// vertex leaves more paths than that (the floor is about the number of
/// edges), it cuts every vertex: the fewest paths truncation can give, so a
/// small threshold never makes a function unprofilable. Fails with
/// [`GraphError::TooManyPaths`] only if that still overflows 64 bits.
pub fn build_numbered(cfg: &Cfg, truncate_above: u64) -> Result<(Dag, Numbering), GraphError> {
    build_numbered_guided(cfg, truncate_above, None)
}

/// [`build_numbered`], its cuts chosen by `flow` when given: per node, how
/// often it ran in a prior run. Truncation then cuts only vertices that
/// never ran if that fits (so every path that ran stays whole), else only
/// vertices colder than a rising share of the hottest one's flow, and
/// unguided only when no such tier fits. A departure from 5.3, which cuts
/// wherever NumPaths passes the threshold: in a large function that puts
/// the cuts on the hot paths as often as on cold ones (an interpreter's
/// dispatch loop cut into one-block fragments). The cut vertices are in
/// [`Dag::cut_nodes`]; a decoder rebuilds the DAG with [`Dag::with_cuts`].
pub fn build_numbered_guided(
    cfg: &Cfg,
    truncate_above: u64,
    flow: Option<&[u64]>,
) -> Result<(Dag, Numbering), GraphError> {
    let base = Dag::new(cfg)?;
    // One order serves every round: cutting keeps it topological.
    let order = order_from_dfs(cfg);
    if let Some(numbering) = numbered_within(&base, &order, truncate_above)? {
        return Ok((base, numbering));
    }
    let round = flow
        .and_then(|flow| guided_round(&base, &order, truncate_above, flow))
        .or_else(|| fitting_round(&base, &order, truncate_above, None));
    let (cuts, total) = match round {
        Some(round) => (round.cuts, round.total),
        None => (cut_everywhere(&base, &order), None),
    };
    // The uncut DAG goes first: two DAGs of the largest function alive at
    // once were the instrumenter's peak.
    drop(base);
    let dag = Dag::with_cuts(cfg, &cuts)?;
    let numbering = number_in(&dag, &order)?;
    debug_assert!(total.is_none_or(|n| n == numbering.total()));
    Ok((dag, numbering))
}

/// The first round of lowering thresholds whose cuts fit in `limit`, cutting
/// only vertices `protect` leaves cuttable (all when `None`); `None` if even
/// a threshold of 1 does not fit.
fn fitting_round(
    base: &Dag,
    order: &[NodeId],
    limit: u64,
    protect: Option<&[bool]>,
) -> Option<Round> {
    let mut entry_succs = base.succs(Cfg::ENTRY).len() as u64;
    let mut t = limit;
    loop {
        // A round's DAG is built only when its predicted total fits.
        let round = choose_cuts(base, order, t, protect);
        if !round.cuts.is_empty() {
            if round.total.is_some_and(|n| n <= limit) {
                return Some(round);
            }
            entry_succs = round.entry_succs;
        }
        if t <= 1 {
            return None;
        }
        // After cutting at `t` each target of ENTRY has about `t` paths at
        // most, so the total needs `t <= limit / succs(ENTRY)`; halving at
        // least guarantees progress.
        t = (t / 2).min(limit / entry_succs.max(1)).max(1);
    }
}

/// Shares of the hottest vertex's flow below which a vertex may be cut, in
/// the order [`guided_round`] tries them (after "never ran").
const COLD_SHARES: [u64; 5] = [100_000, 10_000, 1_000, 100, 10];

/// [`fitting_round`] protecting the vertices that ran at least a tier's
/// share of the hottest one's flow, the tiers tried from "ran at all" up.
fn guided_round(base: &Dag, order: &[NodeId], limit: u64, flow: &[u64]) -> Option<Round> {
    let flow_of = |v: usize| flow.get(v).copied().unwrap_or(0);
    let hottest = (0..base.num_nodes).map(flow_of).max().unwrap_or(0);
    let mut floors: Vec<u64> = std::iter::once(1)
        .chain(COLD_SHARES.iter().map(|share| (hottest / share).max(1)))
        .collect();
    floors.dedup();
    floors.into_iter().find_map(|floor| {
        let protect: Vec<bool> = (0..base.num_nodes).map(|v| flow_of(v) >= floor).collect();
        fitting_round(base, order, limit, Some(&protect))
    })
}

/// Every vertex with an edge to cut: the fewest paths truncation can give.
fn cut_everywhere(base: &Dag, order: &[NodeId]) -> Vec<NodeId> {
    order
        .iter()
        .copied()
        .filter(|&v| {
            v != Cfg::ENTRY
                && base.reachable[v.index()]
                && base.succs(v).iter().any(|&d| cuttable_edge(base, d))
        })
        .collect()
}

/// The numbering of `dag` (in topological `order`) if NumPaths(ENTRY) is at
/// most `limit`.
fn numbered_within(
    dag: &Dag,
    order: &[NodeId],
    limit: u64,
) -> Result<Option<Numbering>, GraphError> {
    match number_in(dag, order) {
        Ok(numbering) if numbering.total() <= limit => Ok(Some(numbering)),
        Ok(_) | Err(GraphError::TooManyPaths) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One round of truncation: the vertices cut, and what the DAG they make
/// would count, so that a round that does not fit costs no DAG.
pub struct Round {
    pub cuts: Vec<NodeId>,
    /// NumPaths(ENTRY) of the cut DAG, `None` if some NumPaths overflows.
    pub total: Option<u64>,
    /// The number of ENTRY's successors in the cut DAG.
    pub entry_succs: u64,
}

/// The vertices 5.3 truncates at threshold `t`: in reverse topological order,
/// a vertex whose NumPaths (counted with the cuts below it) exceeds `t` is
/// cut (unless `protect` says it must not be), after which its paths are its real edges to EXIT plus its ExitDummy.
/// Cutting only removes edges `v->w` and adds `ENTRY->w` and `v->EXIT`, so the
/// uncut DAG's topological `order` stays valid, and the count of every vertex
/// but ENTRY is the one the cut DAG's numbering will find.
pub fn choose_cuts(dag: &Dag, order: &[NodeId], t: u64, protect: Option<&[bool]>) -> Round {
    let mut num_paths = vec![0u64; dag.num_nodes];
    let mut cuts = Vec::new();
    let mut overflow = false;
    for &v in order.iter().rev().filter(|v| dag.reachable[v.index()]) {
        let succs = dag.succs(v);
        if succs.is_empty() {
            num_paths[v.index()] = 1;
            continue;
        }
        let sum = succs.iter().try_fold(0u64, |s, &d| {
            s.checked_add(num_paths[dag.edge(d).dst.index()])
        });
        let cuttable = v != Cfg::ENTRY
            && !protect.is_some_and(|p| p[v.index()])
            && succs.iter().any(|&d| cuttable_edge(dag, d));
        num_paths[v.index()] = match sum {
            Some(s) if s <= t => s,
            _ if cuttable => {
                cuts.push(v);
                paths_after_cut(dag, v)
            }
            _ => {
                overflow |= sum.is_none();
                sum.unwrap_or(u64::MAX)
            }
        };
    }
    let total = (!overflow).then_some(num_paths[Cfg::ENTRY.index()]);
    predict_entry(dag, cuts, &num_paths, total)
}

/// Completes a round with ENTRY as the cut DAG has it: besides its edges in
/// the uncut DAG, one EntryDummy per cut target that is not a loop head
/// already (`Dag::with_cuts` shares dummies), each adding that target's
/// paths.
fn predict_entry(dag: &Dag, cuts: Vec<NodeId>, num_paths: &[u64], total: Option<u64>) -> Round {
    let mut targets: Vec<NodeId> = cuts
        .iter()
        .flat_map(|&v| dag.succs(v).iter().copied())
        .filter(|&d| cuttable_edge(dag, d))
        .map(|d| dag.edge(d).dst)
        .filter(|&w| dag.entry_dummy(w).is_none())
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let total = total.and_then(|n| {
        targets
            .iter()
            .try_fold(n, |s, w| s.checked_add(num_paths[w.index()]))
    });
    Round {
        entry_succs: (dag.succs(Cfg::ENTRY).len() + targets.len()) as u64,
        total,
        cuts,
    }
}

/// A real edge not into EXIT: what a cut replaces by dummy edges.
fn cuttable_edge(dag: &Dag, d: DagEdgeId) -> bool {
    let e = dag.edge(d);
    matches!(e.kind, DagEdgeKind::Real(_)) && e.dst != Cfg::EXIT
}

/// NumPaths of a cut vertex: its real edges to EXIT and its one ExitDummy.
fn paths_after_cut(dag: &Dag, v: NodeId) -> u64 {
    let to_exit = dag.succs(v).iter().filter(|&&d| {
        let e = dag.edge(d);
        matches!(e.kind, DagEdgeKind::Real(_)) && e.dst == Cfg::EXIT
    });
    to_exit.count() as u64 + 1
}
