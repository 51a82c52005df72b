//! Hand-made graphs for the corner cases: self loops (4.1), dead ends,
//! unreachable blocks, shared dummy edges, parallel edges, malformed CFGs,
//! stored numberings, and truncation (5.3) worked out by hand.

use crate::oracle;
use pathprof_graph::dag::{Dag, DagEdgeId, DagEdgeKind};
use pathprof_graph::numbering::{build_numbered, number, Numbering};
use pathprof_graph::regenerate::regenerate;
use pathprof_graph::testing::cfg_from_lists;
use pathprof_graph::{Cfg, EdgeId, GraphError, NodeId};

fn n(i: usize) -> NodeId {
    NodeId::new(i)
}

fn e(i: usize) -> EdgeId {
    EdgeId::new(i)
}

fn check_all(cfg: &Cfg, dag: &Dag, num: &Numbering) {
    let weights = vec![1; cfg.num_edges()];
    oracle::check_pipeline(cfg, dag, num, &weights, &[], &[0, u64::MAX / 2]).unwrap();
}

#[test]
fn self_loop_only_block_is_a_dead_end_with_its_own_counter() {
    // ENTRY->A, A->A: an infinite loop. 4.1: the self loop has no DAG edge;
    // A gets an ExitDummy so that its path can be numbered.
    let cfg = cfg_from_lists(&[vec![0]], &[]);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(dag.self_loops, [e(1)]);
    assert!(dag.backedges.is_empty() && dag.loop_heads.is_empty());
    assert_eq!(dag.cfg_to_dag.len(), 2);
    assert_eq!(dag.cfg_to_dag[0], [DagEdgeId::new(0)]);
    assert!(dag.cfg_to_dag[1].is_empty());
    assert_eq!(dag.exit_dummy(n(2)), Some(DagEdgeId::new(1)));
    assert_eq!(num.total(), 1);
    check_all(&cfg, &dag, &num);
}

#[test]
fn self_loop_does_not_split_the_path() {
    // ENTRY->A, A->A, A->EXIT: one path, ENTRY A EXIT.
    let cfg = cfg_from_lists(&[vec![0, 1]], &[]);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(
        (dag.self_loops.clone(), dag.num_edges(), num.total()),
        (vec![e(1)], 2, 1)
    );
    check_all(&cfg, &dag, &num);
}

#[test]
fn unreachable_blocks_get_no_dag_edges() {
    // A->EXIT; B (unreachable) -> A, B -> B, B -> EXIT.
    let cfg = cfg_from_lists(&[vec![2], vec![0, 1, 2]], &[]);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    let b = n(3);
    assert!(!dag.reachable[b.index()]);
    assert!(dag.succs(b).is_empty() && dag.preds(b).is_empty());
    assert!((2..5).all(|i| dag.cfg_to_dag[i].is_empty()));
    assert!(
        dag.self_loops.is_empty(),
        "an unreachable self loop never runs"
    );
    assert_eq!((num.total(), num.num_paths[b.index()]), (1, 0));
    check_all(&cfg, &dag, &num);
}

#[test]
fn empty_function_is_one_path() {
    let cfg = Cfg::new();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(
        dag.edges,
        [pathprof_graph::dag::DagEdge {
            src: Cfg::ENTRY,
            dst: Cfg::EXIT,
            kind: DagEdgeKind::ExitDummy
        }]
    );
    assert_eq!(num.total(), 1);
    check_all(&cfg, &dag, &num);
}

#[test]
fn dummy_edges_are_shared() {
    // A->B, B->C, C->A, C->B, C->EXIT: two backedges out of C share one
    // ExitDummy; heads A and B get one EntryDummy each.
    let cfg = cfg_from_lists(&[vec![1], vec![2], vec![0, 1, 3]], &[]);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(dag.backedges, [e(3), e(4)]);
    assert_eq!(dag.loop_heads, [n(2), n(3)]);
    let exits = dag
        .edges
        .iter()
        .filter(|d| d.kind == DagEdgeKind::ExitDummy)
        .count();
    let entries = dag
        .edges
        .iter()
        .filter(|d| d.kind == DagEdgeKind::EntryDummy)
        .count();
    assert_eq!((exits, entries), (1, 2));
    assert_eq!(dag.cfg_to_dag[3][0], dag.cfg_to_dag[4][0]);
    // Paths from ENTRY, A or B to C, then EXIT or the ExitDummy: 6.
    assert_eq!(num.total(), 6);
    check_all(&cfg, &dag, &num);
}

#[test]
fn parallel_edges_are_distinct_paths() {
    // A->B twice (a br_table with two labels to B), B->EXIT.
    let cfg = cfg_from_lists(&[vec![1, 1], vec![2]], &[]);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!((num.total(), num.val[1], num.val[2]), (2, 0, 1));
    check_all(&cfg, &dag, &num);
}

#[test]
fn malformed_cfgs_are_errors() {
    let mut into_entry = Cfg::new();
    let a = into_entry.add_node();
    into_entry.add_edge(Cfg::ENTRY, a);
    into_entry.add_edge(a, Cfg::ENTRY);
    assert_eq!(
        Dag::new(&into_entry),
        Err(GraphError::EdgeIntoEntry { edge: e(1) })
    );
    let mut out_of_exit = Cfg::new();
    out_of_exit.add_edge(Cfg::ENTRY, Cfg::EXIT);
    out_of_exit.add_edge(Cfg::EXIT, Cfg::EXIT);
    assert_eq!(
        build_numbered(&out_of_exit, 9).map(|_| ()),
        Err(GraphError::EdgeOutOfExit { edge: e(1) })
    );
    assert_eq!(
        Dag::with_cuts(&out_of_exit, &[n(7)]).map(|_| ()),
        Err(GraphError::EdgeOutOfExit { edge: e(1) })
    );
    let fine = cfg_from_lists(&[vec![1]], &[]);
    assert_eq!(
        Dag::with_cuts(&fine, &[n(7)]),
        Err(GraphError::NodeOutOfRange {
            node: n(7),
            num_nodes: 3
        })
    );
}

#[test]
fn stored_numbering_round_trips_and_mismatches_are_errors() {
    let (cfg, _) = pathprof_graph::testing::figure1();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    let edges: Vec<_> = dag.edges.iter().map(|d| (d.src, d.dst, d.kind)).collect();
    let rebuilt = Dag::from_edges(dag.num_nodes, &edges);
    let renum = Numbering::from_val(&rebuilt, num.val.clone());
    assert_eq!(renum, num);
    for p in 0..6 {
        assert_eq!(regenerate(&rebuilt, &renum, p), regenerate(&dag, &num, p));
    }
    // A Val from another build: no panic, no loop.
    let mut wrong = num.clone();
    wrong.val[2] = 1;
    assert!(matches!(
        regenerate(&dag, &wrong, 0),
        Err(GraphError::InvalidNumbering { .. })
    ));
    let short = Numbering {
        val: vec![],
        num_paths: num.num_paths.clone(),
    };
    assert!(matches!(
        regenerate(&dag, &short, 0),
        Err(GraphError::InvalidNumbering { .. })
    ));
    let empty = Numbering {
        val: vec![],
        num_paths: vec![],
    };
    assert_eq!(
        regenerate(&dag, &empty, 0),
        Err(GraphError::PathOutOfRange { path: 0, total: 0 })
    );
}

#[test]
fn cyclic_stored_dag_is_an_error() {
    let a = n(2);
    let edges = [
        (Cfg::ENTRY, a, DagEdgeKind::Real(e(0))),
        (a, a, DagEdgeKind::Real(e(1))),
        (a, Cfg::EXIT, DagEdgeKind::Real(e(2))),
    ];
    let dag = Dag::from_edges(0, &edges);
    assert_eq!(dag.num_nodes, 3);
    assert!(matches!(number(&dag), Err(GraphError::Cyclic { .. })));
    let num = Numbering::from_val(&dag, vec![0, 0, 0]);
    assert!(regenerate(&dag, &num, 0).is_err());
}

/// A chain of `k` diamonds: x_i -> l_i, x_i -> r_i, l_i -> x_{i+1},
/// r_i -> x_{i+1}; x_k -> EXIT. Node of x_i is `2 + 3i`, l_i `3 + 3i`,
/// r_i `4 + 3i`. NumPaths(x_i) = 2^(k-i).
pub fn diamonds(k: usize) -> Cfg {
    cfg_from_lists(&diamond_lists(k), &[])
}

fn diamond_lists(k: usize) -> Vec<Vec<usize>> {
    let mut lists = Vec::new();
    for i in 0..k {
        let x = 3 * i;
        lists.extend([vec![x + 1, x + 2], vec![x + 3], vec![x + 3]]);
    }
    lists.push(vec![3 * k + 1]);
    lists
}

#[test]
fn truncation_not_needed_at_the_threshold() {
    let cfg = diamonds(4);
    let (dag, num) = build_numbered(&cfg, 16).unwrap();
    assert!(dag.cut_nodes.is_empty());
    assert_eq!(num.total(), 16);
}

#[test]
fn truncation_by_hand() {
    // Threshold 9 for 16 paths. At t = 9, x0 (16 paths) is cut; then ENTRY
    // has x0 (1) + l0 (8) + r0 (8) = 17. Next t = min(9/2, 9/3) = 3: x2 (4)
    // is cut, x1 has 2, x0 has 4 and is cut: ENTRY has x0 (1) + l0, r0, l2,
    // r2 (2 each) = 9.
    let cfg = diamonds(4);
    let (dag, num) = build_numbered(&cfg, 9).unwrap();
    let (x0, l0, x2) = (n(2), n(3), n(8));
    assert_eq!(dag.cut_nodes, [x0, x2]);
    assert_eq!(num.total(), 9);
    let x0_to_l0 = cfg.succs(x0)[0];
    assert_eq!(
        dag.cfg_to_dag[x0_to_l0.index()],
        [dag.exit_dummy(x0).unwrap(), dag.entry_dummy(l0).unwrap()]
    );
    check_all(&cfg, &dag, &num);
}

#[test]
fn truncation_cuts_only_above_the_threshold() {
    // Three diamonds, and ENTRY also enters l0: 8 + 4 = 12 paths, limit 8.
    // At t = 8 nothing exceeds 8 (x0 has exactly 8): no cut. At t = 4, x0
    // (8) is cut: ENTRY has x0 (1) + l0 (4) + EntryDummies l0, r0 (4 each) =
    // 13. At t = min(4/2, 8/4) = 2, x1 (4) is cut and x0 keeps 2 (x2 has
    // exactly 2 and stays): ENTRY has x0 (2) + l0 (1) + l1, r1 (2 each) = 7.
    let cfg = cfg_from_lists(&diamond_lists(3), &[1]);
    let (dag, num) = build_numbered(&cfg, 8).unwrap();
    assert_eq!(dag.cut_nodes, [n(5)]);
    assert_eq!(num.total(), 7);
    check_all(&cfg, &dag, &num);
}

#[test]
fn truncation_keeps_real_edges_to_exit() {
    // A -> EXIT three times and A -> B, B -> EXIT; cutting A keeps the three.
    let cfg = cfg_from_lists(&[vec![2, 2, 2, 1], vec![2]], &[]);
    let dag = Dag::with_cuts(&cfg, &[n(2)]).unwrap();
    assert_eq!(dag.cut_nodes, [n(2)]);
    let num = number(&dag).unwrap();
    // A: three real edges and its ExitDummy; plus ENTRY->B->EXIT.
    assert_eq!((num.num_paths[2], num.total()), (4, 5));
    check_all(&cfg, &dag, &num);
}

#[test]
fn truncation_below_the_floor_cuts_everywhere() {
    // Fig. 1 needs at least 6 paths whatever is cut (worked out by hand):
    // below that, every vertex with a real edge is cut (A, B, C, D, E) and
    // the fewest paths are kept rather than failing.
    let (cfg, _) = pathprof_graph::testing::figure1();
    for limit in [0, 5] {
        let (dag, num) = build_numbered(&cfg, limit).unwrap();
        assert_eq!(dag.cut_nodes.len(), 5, "limit {limit}");
        check_all(&cfg, &dag, &num);
    }
    let (dag, num) = build_numbered(&cfg, 6).unwrap();
    assert_eq!(num.total(), 6);
    assert!(dag.cut_nodes.is_empty());
}

#[test]
fn overflow_is_reported_by_number_and_truncated_by_build() {
    // 70 diamonds: 2^70 paths overflow u64.
    let cfg = diamonds(70);
    assert_eq!(
        number(&Dag::new(&cfg).unwrap()),
        Err(GraphError::TooManyPaths)
    );
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert!(!dag.cut_nodes.is_empty());
    oracle::check_pipeline(
        &cfg,
        &dag,
        &num,
        &vec![1; cfg.num_edges()],
        &[],
        &[1, 1 << 40, u64::MAX],
    )
    .unwrap();
}
