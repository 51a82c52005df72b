//! Independent checks of each pipeline stage, shared by the hand-written and
//! the property tests. Each recomputes what it checks by brute force (path
//! enumeration, explicit tree cycles, repeated sink removal, breadth-first
//! searches) without calling the code under test, except to obtain its result.

use std::collections::{BTreeSet, VecDeque};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use pathprof_graph::dag::{Dag, DagEdgeId, DagEdgeKind};
use pathprof_graph::numbering::Numbering;
use pathprof_graph::placement::{self, Placement};
use pathprof_graph::regenerate::regenerate;
use pathprof_graph::spanning::{self, Increments};
use pathprof_graph::testing::{enumerate_paths, OpMachine, Walk, WalkEnd};
use pathprof_graph::{Cfg, EdgeId, GraphError, NodeId};

/// Most paths a check enumerates; beyond, it samples path numbers instead.
pub const ENUM_LIMIT: usize = 2000;

/// Garbage the path register holds when a path starts: placement must not
/// rely on anything left over.
const GARBAGE: u64 = 0xDEAD_BEEF_0BAD_F00D;

type Check = Result<(), TestCaseError>;

/// Nodes ENTRY reaches in the CFG, by breadth-first search.
pub fn cfg_reachable(cfg: &Cfg) -> Vec<bool> {
    let mut seen = vec![false; cfg.num_nodes()];
    let mut work = VecDeque::from([Cfg::ENTRY]);
    seen[Cfg::ENTRY.index()] = true;
    while let Some(v) = work.pop_front() {
        for &e in cfg.succs(v) {
            let w = cfg.dst(e);
            if !std::mem::replace(&mut seen[w.index()], true) {
                work.push_back(w);
            }
        }
    }
    seen
}

/// Section 4's DAG: acyclic, every vertex reaches EXIT, each CFG edge mapped
/// as documented, one dummy of each kind per vertex and none useless.
pub fn check_dag(cfg: &Cfg, dag: &Dag) -> Check {
    let reach = cfg_reachable(cfg);
    prop_assert!(is_acyclic(dag), "the DAG has a cycle");
    for v in cfg.nodes() {
        let expect = reach[v.index()] || v == Cfg::EXIT;
        prop_assert_eq!(dag.reachable[v.index()], expect, "reachability of {}", v);
        if !expect {
            prop_assert!(dag.succs(v).is_empty() && dag.preds(v).is_empty());
        }
    }
    let reaches_exit = reaches_exit(dag);
    for v in cfg.nodes().filter(|v| reach[v.index()]) {
        prop_assert!(reaches_exit[v.index()], "{} does not reach EXIT", v);
    }
    let mut used = vec![0usize; dag.num_edges()];
    for e in cfg.edge_ids() {
        check_mapping(cfg, dag, &reach, e)?;
        for &d in &dag.cfg_to_dag[e.index()] {
            used[d.index()] += 1;
        }
    }
    check_dummies(dag, &used)?;
    let heads: BTreeSet<NodeId> = dag.backedges.iter().map(|&e| cfg.dst(e)).collect();
    prop_assert_eq!(
        dag.loop_heads.iter().copied().collect::<BTreeSet<_>>(),
        heads
    );
    Ok(())
}

fn check_mapping(cfg: &Cfg, dag: &Dag, reach: &[bool], e: EdgeId) -> Check {
    let (v, w) = cfg.edge(e);
    let mapped = &dag.cfg_to_dag[e.index()];
    let is_back = dag.backedges.contains(&e);
    let is_cut = dag.cut_nodes.contains(&v) && w != Cfg::EXIT && v != w && !is_back;
    if !reach[v.index()] || v == w {
        prop_assert!(mapped.is_empty());
        prop_assert_eq!(dag.self_loops.contains(&e), reach[v.index()] && v == w);
    } else if is_back || is_cut {
        prop_assert_eq!(mapped.len(), 2);
        let (x, n) = (dag.edge(mapped[0]), dag.edge(mapped[1]));
        prop_assert_eq!(
            (x.src, x.dst, x.kind),
            (v, Cfg::EXIT, DagEdgeKind::ExitDummy)
        );
        prop_assert_eq!(
            (n.src, n.dst, n.kind),
            (Cfg::ENTRY, w, DagEdgeKind::EntryDummy)
        );
        if is_back {
            // A DFS backedge targets an ancestor: w reaches v by forward edges.
            prop_assert!(
                reaches_forward(cfg, dag, w, v),
                "backedge {} does not close a cycle",
                e
            );
        }
    } else {
        prop_assert_eq!(mapped.len(), 1);
        let d = dag.edge(mapped[0]);
        prop_assert_eq!((d.src, d.dst, d.kind), (v, w, DagEdgeKind::Real(e)));
    }
    Ok(())
}

/// Each real DAG edge stands for one CFG edge; one EntryDummy per target and
/// one ExitDummy per source; an unused ExitDummy only at a dead end.
fn check_dummies(dag: &Dag, used: &[usize]) -> Check {
    let (mut entries, mut exits) = (BTreeSet::new(), BTreeSet::new());
    for d in dag.edge_ids() {
        let e = dag.edge(d);
        match e.kind {
            DagEdgeKind::Real(_) => prop_assert_eq!(used[d.index()], 1),
            DagEdgeKind::EntryDummy => {
                prop_assert!(
                    e.src == Cfg::ENTRY && entries.insert(e.dst),
                    "duplicate EntryDummy"
                );
                prop_assert!(used[d.index()] > 0, "useless EntryDummy");
                prop_assert_eq!(dag.entry_dummy(e.dst), Some(d));
            }
            DagEdgeKind::ExitDummy => {
                prop_assert!(
                    e.dst == Cfg::EXIT && exits.insert(e.src),
                    "duplicate ExitDummy"
                );
                prop_assert!(
                    used[d.index()] > 0 || dag.succs(e.src).len() == 1,
                    "useless ExitDummy"
                );
                prop_assert_eq!(dag.exit_dummy(e.src), Some(d));
            }
        }
    }
    Ok(())
}

/// Acyclic by repeated removal of vertices without outgoing edges (kept
/// linear with out-degree counters, for the big graphs).
fn is_acyclic(dag: &Dag) -> bool {
    let mut out: Vec<usize> = dag.nodes().map(|v| dag.succs(v).len()).collect();
    let mut sinks: Vec<NodeId> = dag.nodes().filter(|v| out[v.index()] == 0).collect();
    let mut removed = 0;
    while let Some(v) = sinks.pop() {
        removed += 1;
        for &d in dag.preds(v) {
            let u = dag.edge(d).src;
            out[u.index()] -= 1;
            if out[u.index()] == 0 {
                sinks.push(u);
            }
        }
    }
    removed == dag.num_nodes
}

fn reaches_exit(dag: &Dag) -> Vec<bool> {
    let mut seen = vec![false; dag.num_nodes];
    let mut work = vec![Cfg::EXIT];
    seen[Cfg::EXIT.index()] = true;
    while let Some(w) = work.pop() {
        for &d in dag.preds(w) {
            let v = dag.edge(d).src;
            if !std::mem::replace(&mut seen[v.index()], true) {
                work.push(v);
            }
        }
    }
    seen
}

/// Whether `from` reaches `to` in the CFG without backedges or self loops
/// (the DFS tree path from an ancestor uses none).
fn reaches_forward(cfg: &Cfg, dag: &Dag, from: NodeId, to: NodeId) -> bool {
    let mut seen = vec![false; cfg.num_nodes()];
    let mut work = vec![from];
    while let Some(v) = work.pop() {
        if v == to {
            return true;
        }
        for &e in cfg.succs(v) {
            let w = cfg.dst(e);
            if w != v
                && !dag.backedges.contains(&e)
                && !std::mem::replace(&mut seen[w.index()], true)
            {
                work.push(w);
            }
        }
    }
    false
}

/// Fig. 5 and 5.2: NumPaths is the sum over successors, the successor with
/// the most paths gets the largest Val, and (when the paths can be listed)
/// the path sums are exactly `0..total` and regeneration inverts them.
/// Returns the enumerated paths, indexed by path number, if few enough.
pub fn check_numbering(
    dag: &Dag,
    num: &Numbering,
) -> Result<Option<Vec<Vec<DagEdgeId>>>, TestCaseError> {
    for v in dag
        .nodes()
        .filter(|v| dag.reachable[v.index()] && *v != Cfg::EXIT)
    {
        let succs = dag.succs(v);
        let np = |d: &DagEdgeId| num.num_paths[dag.edge(*d).dst.index()];
        prop_assert_eq!(num.num_paths[v.index()], succs.iter().map(np).sum::<u64>());
        let last = succs
            .iter()
            .max_by_key(|d| num.val[d.index()])
            .expect("reachable vertices have successors");
        prop_assert_eq!(
            np(last),
            succs.iter().map(np).max().unwrap(),
            "5.2: most paths last at {}",
            v
        );
    }
    let total = num.total();
    prop_assert_eq!(
        regenerate(dag, num, total),
        Err(GraphError::PathOutOfRange { path: total, total })
    );
    let Some(paths) = enumerate_paths(dag, ENUM_LIMIT) else {
        return Ok(None);
    };
    prop_assert_eq!(paths.len() as u64, total);
    let mut by_number: Vec<Option<Vec<DagEdgeId>>> = vec![None; paths.len()];
    for p in paths {
        let sum = p.iter().map(|d| num.val[d.index()]).sum::<u64>() as usize;
        prop_assert!(sum < by_number.len(), "path sum {} out of range", sum);
        prop_assert!(by_number[sum].is_none(), "two paths sum to {}", sum);
        by_number[sum] = Some(p);
    }
    let by_number: Vec<Vec<DagEdgeId>> = by_number.into_iter().map(Option::unwrap).collect();
    for (n, p) in by_number.iter().enumerate() {
        prop_assert_eq!(&regenerate(dag, num, n as u64).unwrap(), p);
    }
    Ok(Some(by_number))
}

/// Section 3.3: the chords are E - V + 1 (virtual edge counted), the tree
/// spans, is maximal for `weights`, and each Inc is its cycle's signed Val sum.
pub fn check_increments(dag: &Dag, num: &Numbering, weights: &[u64], incs: &Increments) -> Check {
    let vertices = dag.reachable.iter().filter(|&&r| r).count();
    let edges = dag.num_edges() + 1;
    prop_assert_eq!(incs.num_chords(), edges - vertices + 1);
    let tree = TreeOracle::new(dag, incs);
    prop_assert!(tree.spans(dag), "tree edges do not connect every vertex");
    for c in incs.chords() {
        let e = dag.edge(c);
        let cycle = tree.path(e.dst, e.src);
        let mut sum = num.val[c.index()];
        for &(d, forward) in &cycle {
            let val = num.val[d.index()];
            sum = if forward {
                sum.wrapping_add(val)
            } else {
                sum.wrapping_sub(val)
            };
            prop_assert!(
                weights[d.index()] >= weights[c.index()],
                "a heavier chord than tree edge"
            );
        }
        prop_assert_eq!(incs.inc[c.index()] as u64, sum, "Inc of chord {}", c);
    }
    for d in dag.edge_ids().filter(|d| !incs.chord[d.index()]) {
        prop_assert_eq!(incs.inc[d.index()], 0);
    }
    Ok(())
}

/// The spanning tree as the test sees it: undirected adjacency of tree edges,
/// each step with its edge (`None` for the virtual `EXIT->ENTRY` edge) and
/// whether the step runs along the edge's direction.
struct TreeOracle {
    adj: Vec<Vec<Step>>,
}

#[derive(Copy, Clone)]
struct Step {
    to: NodeId,
    edge: Option<DagEdgeId>,
    forward: bool,
}

impl TreeOracle {
    fn new(dag: &Dag, incs: &Increments) -> Self {
        let mut adj = vec![Vec::new(); dag.num_nodes];
        for d in dag.edge_ids().filter(|d| !incs.chord[d.index()]) {
            let e = dag.edge(d);
            adj[e.src.index()].push(Step {
                to: e.dst,
                edge: Some(d),
                forward: true,
            });
            adj[e.dst.index()].push(Step {
                to: e.src,
                edge: Some(d),
                forward: false,
            });
        }
        adj[Cfg::ENTRY.index()].push(Step {
            to: Cfg::EXIT,
            edge: None,
            forward: false,
        });
        adj[Cfg::EXIT.index()].push(Step {
            to: Cfg::ENTRY,
            edge: None,
            forward: true,
        });
        TreeOracle { adj }
    }

    /// Breadth-first search tree from `from`: per node, the step that reached it.
    fn parents(&self, from: NodeId) -> Vec<Option<(NodeId, Step)>> {
        let mut parent = vec![None; self.adj.len()];
        let mut seen = vec![false; self.adj.len()];
        seen[from.index()] = true;
        let mut work = VecDeque::from([from]);
        while let Some(v) = work.pop_front() {
            for &step in &self.adj[v.index()] {
                if !std::mem::replace(&mut seen[step.to.index()], true) {
                    parent[step.to.index()] = Some((v, step));
                    work.push_back(step.to);
                }
            }
        }
        parent
    }

    fn spans(&self, dag: &Dag) -> bool {
        let parent = self.parents(Cfg::ENTRY);
        dag.nodes()
            .all(|v| v == Cfg::ENTRY || !dag.reachable[v.index()] || parent[v.index()].is_some())
    }

    /// The tree path from `from` to `to`: each real edge and whether the
    /// path runs along its direction.
    fn path(&self, from: NodeId, to: NodeId) -> Vec<(DagEdgeId, bool)> {
        let parent = self.parents(from);
        let mut steps = Vec::new();
        let mut v = to;
        while v != from {
            let (p, step) = parent[v.index()].expect("the tree connects the cycle");
            if let Some(d) = step.edge {
                steps.push((d, step.forward));
            }
            v = p;
        }
        steps.reverse();
        steps
    }
}

/// Fig. 8: along every path the ops initialise, then count the path number
/// exactly once. `paths[n]` is path number `n`.
pub fn check_placement(paths: &[Vec<DagEdgeId>], ops: &Placement) -> Check {
    for (n, p) in paths.iter().enumerate() {
        let mut m = OpMachine {
            r: GARBAGE,
            counted: Vec::new(),
        };
        m.run_path(ops, p);
        prop_assert_eq!(m.counted, vec![n as u64], "path {}", n);
    }
    Ok(())
}

/// Path number `n` regenerated, summed by Inc, and run through the ops.
pub fn check_sampled_path(
    dag: &Dag,
    num: &Numbering,
    incs: &Increments,
    ops: &Placement,
    n: u64,
) -> Check {
    let p = regenerate(dag, num, n).unwrap();
    prop_assert_eq!(p.first().map(|&d| dag.edge(d).src), Some(Cfg::ENTRY));
    prop_assert_eq!(p.last().map(|&d| dag.edge(d).dst), Some(Cfg::EXIT));
    for w in p.windows(2) {
        prop_assert_eq!(dag.edge(w[0]).dst, dag.edge(w[1]).src);
    }
    prop_assert_eq!(num.path_sum(&p), n);
    let inc_sum = p
        .iter()
        .fold(0u64, |s, d| s.wrapping_add(incs.inc[d.index()] as u64));
    prop_assert_eq!(inc_sum, n);
    check_placement_one(ops, &p, n)
}

fn check_placement_one(ops: &Placement, p: &[DagEdgeId], n: u64) -> Check {
    let mut m = OpMachine {
        r: GARBAGE,
        counted: Vec::new(),
    };
    m.run_path(ops, p);
    prop_assert_eq!(m.counted, vec![n]);
    Ok(())
}

/// Event counting: the Inc sum of every path is its Val sum.
pub fn check_inc_sums(paths: &[Vec<DagEdgeId>], incs: &Increments) -> Check {
    for (n, p) in paths.iter().enumerate() {
        let sum = p
            .iter()
            .fold(0u64, |s, d| s.wrapping_add(incs.inc[d.index()] as u64));
        prop_assert_eq!(sum, n as u64);
    }
    Ok(())
}

/// A CFG execution instrumented through `cfg_to_dag` counts the path numbers
/// of its acyclic pieces (split at backedges and cuts; self loops ignored),
/// in order. An abrupt end counts only the pieces it completed: the path
/// in flight is not counted, even where the rest of it is forced.
pub fn check_walk(dag: &Dag, num: &Numbering, ops: &Placement, walk: &Walk) -> Check {
    let mut m = OpMachine {
        r: GARBAGE,
        counted: Vec::new(),
    };
    let mut expected = Vec::new();
    let mut piece: Vec<DagEdgeId> = Vec::new();
    for &e in &walk.edges {
        for &d in &dag.cfg_to_dag[e.index()] {
            for &op in &ops[d.index()] {
                m.apply(op);
            }
            piece.push(d);
            if dag.edge(d).dst == Cfg::EXIT {
                expected.push(num.path_sum(&piece));
                piece.clear();
            }
        }
    }
    prop_assert_eq!(
        walk.end == WalkEnd::Exit,
        piece.is_empty() && !walk.edges.is_empty()
    );
    prop_assert_eq!(m.counted, expected);
    Ok(())
}

/// Runs chord increments and placement on `dag` and checks them all, with
/// `cfg_weights` per CFG edge and the given executions.
pub fn check_pipeline(
    cfg: &Cfg,
    dag: &Dag,
    num: &Numbering,
    cfg_weights: &[u64],
    walks: &[Walk],
    samples: &[u64],
) -> Check {
    check_dag(cfg, dag)?;
    let paths = check_numbering(dag, num)?;
    let weights = spanning::dag_weights(dag, cfg, cfg_weights);
    let incs = spanning::chord_increments(dag, num, &weights);
    check_increments(dag, num, &weights, &incs)?;
    let ops = placement::place(dag, &incs);
    prop_assert!(ops.iter().all(|o| o.len() <= 1), "at most one op per edge");
    if let Some(paths) = &paths {
        check_inc_sums(paths, &incs)?;
        check_placement(paths, &ops)?;
    }
    for &s in samples {
        // `s` spread over the path numbers: 0, the last, and points between.
        let n = ((u128::from(s) * u128::from(num.total())) >> 64) as u64;
        check_sampled_path(dag, num, &incs, &ops, n)?;
    }
    check_sampled_path(dag, num, &incs, &ops, num.total() - 1)?;
    for w in walks {
        check_walk(dag, num, &ops, w)?;
    }
    Ok(())
}
