//! The paper's worked examples, with values worked out by hand from the
//! paper's figures (Fig. 1/2/6/7/9 and a loop in the manner of Fig. 10).

use pathprof_graph::dag::{Dag, DagEdgeId, DagEdgeKind};
use pathprof_graph::numbering::{build_numbered, number};
use pathprof_graph::placement::{place, place_with, Counts, Op};
use pathprof_graph::regenerate::regenerate;
use pathprof_graph::spanning::{chord_increments, dag_weights};
use pathprof_graph::testing::{cfg_from_lists, figure1, random_walk, OpMachine};
use pathprof_graph::{Cfg, EdgeId, NodeId};

fn d(i: usize) -> DagEdgeId {
    DagEdgeId::new(i)
}

/// Fig. 1's node names, for readable expectations.
fn names(nodes: &[NodeId]) -> String {
    nodes
        .iter()
        .map(|&n| match n {
            Cfg::ENTRY => '<',
            Cfg::EXIT => '>',
            n => (b'A' + (n.index() - 2) as u8) as char,
        })
        .collect()
}

#[test]
fn figure6_num_paths_and_val() {
    let (cfg, [a, b, c, d_, e, f]) = figure1();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(dag.num_edges(), 10, "an acyclic CFG needs no dummy edge");
    assert!(dag.backedges.is_empty() && dag.cut_nodes.is_empty());
    let np: Vec<u64> = [a, b, c, d_, e, f]
        .iter()
        .map(|n| num.num_paths[n.index()])
        .collect();
    assert_eq!(np, [6, 4, 2, 2, 1, 1]);
    assert_eq!((num.total(), num.num_paths[Cfg::EXIT.index()]), (6, 1));
    // Edge ids: 0 ENTRY->A, 1 A->B, 2 A->C, 3 B->C, 4 B->D, 5 C->D, 6 D->F,
    // 7 D->E, 8 E->F, 9 F->EXIT. 5.2 visits C (2 paths) before B (4) at A;
    // ties at B and D keep edge order.
    assert_eq!(num.val, [0, 2, 0, 0, 2, 0, 0, 1, 0, 0]);
}

#[test]
fn figure2_path_numbers_and_regeneration() {
    let (cfg, _) = figure1();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    let expected = [
        "<ACDF>", "<ACDEF>", "<ABCDF>", "<ABCDEF>", "<ABDF>", "<ABDEF>",
    ];
    for (n, want) in expected.iter().enumerate() {
        let path = regenerate(&dag, &num, n as u64).unwrap();
        assert_eq!(names(&dag.path_nodes(&path)), *want, "path {n}");
    }
    // Section 3.5's walk-through: 3 is ABCDEF, along these edges.
    assert_eq!(
        regenerate(&dag, &num, 3).unwrap(),
        [0, 1, 3, 5, 7, 8, 9].map(d)
    );
}

/// Weights that make Fig. 7's tree: the chords are A->C, B->C, B->D, E->F.
fn figure7_weights() -> Vec<u64> {
    vec![100, 10, 1, 1, 1, 10, 10, 10, 1, 100]
}

#[test]
fn figure7_chord_increments() {
    let (cfg, _) = figure1();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    let incs = chord_increments(&dag, &num, &dag_weights(&dag, &cfg, &figure7_weights()));
    let chords: Vec<usize> = incs.chords().map(|c| c.index()).collect();
    assert_eq!(chords, [2, 3, 4, 8]);
    // Inc(B->D) = Val(A->B) + Val(B->D) + Val(D->F) + Val(F->A) = 2+2+0+0.
    assert_eq!(incs.inc, [0, 0, 0, 2, 4, 0, 0, 0, 1, 0]);
}

#[test]
fn figure9_placement() {
    let (cfg, _) = figure1();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    let incs = chord_increments(&dag, &num, &dag_weights(&dag, &cfg, &figure7_weights()));
    let ops = place_with(&dag, &incs, Counts::Hoisted);
    // A->C: r=0; B->C: r=2; B->D: r=4; D->F: count[r]++; E->F: count[r+1]++.
    let mut want = vec![Vec::new(); 10];
    want[2] = vec![Op::Init(0)];
    want[3] = vec![Op::Init(2)];
    want[4] = vec![Op::Init(4)];
    want[6] = vec![Op::Count(0)];
    want[8] = vec![Op::Count(1)];
    assert!(ops.iter().eq(want.iter().map(Vec::as_slice)), "{ops:?}");
    // The profilers' placement keeps the count on F->EXIT, so that a run
    // ending in F does not count the path: E->F becomes `r += 1`.
    let at_end = place(&dag, &incs);
    want[6] = vec![];
    want[8] = vec![Op::Add(1)];
    want[9] = vec![Op::Count(0)];
    assert!(
        at_end.iter().eq(want.iter().map(Vec::as_slice)),
        "{at_end:?}"
    );
    for (placement, n) in [&ops, &at_end]
        .into_iter()
        .flat_map(|p| (0..6).map(move |n| (p, n)))
    {
        let mut m = OpMachine {
            r: 99,
            counted: Vec::new(),
        };
        m.run_path(placement, &regenerate(&dag, &num, n).unwrap());
        assert_eq!(m.counted, [n]);
    }
}

/// A loop in the manner of Fig. 10: blocks A..F (nodes 2..7), edges 0
/// ENTRY->A, 1 A->B, 2 B->C, 3 B->D, 4 C->E, 5 D->E, 6 E->B (the backedge),
/// 7 E->F, 8 F->EXIT.
fn figure10() -> Cfg {
    cfg_from_lists(
        &[vec![1], vec![2, 3], vec![4], vec![4], vec![1, 5], vec![6]],
        &[],
    )
}

#[test]
fn figure10_dummy_edges() {
    let cfg = figure10();
    let dag = Dag::new(&cfg).unwrap();
    let (b, e) = (NodeId::new(3), NodeId::new(6));
    assert_eq!(dag.backedges, [EdgeId::new(6)]);
    assert_eq!(dag.loop_heads, [b]);
    // Real edges 0..8 in CFG order (the backedge skipped), then the dummies.
    assert_eq!(dag.num_edges(), 10);
    assert_eq!(
        dag.edges[8],
        pathprof_graph::dag::DagEdge {
            src: Cfg::ENTRY,
            dst: b,
            kind: DagEdgeKind::EntryDummy
        }
    );
    assert_eq!(
        dag.edges[9],
        pathprof_graph::dag::DagEdge {
            src: e,
            dst: Cfg::EXIT,
            kind: DagEdgeKind::ExitDummy
        }
    );
    assert_eq!(dag.cfg_to_dag[6], [d(9), d(8)]);
    assert_eq!(dag.cfg_to_dag[7], [d(6)]);
    assert_eq!(
        (dag.entry_dummy(b), dag.exit_dummy(e)),
        (Some(d(8)), Some(d(9)))
    );
}

#[test]
fn figure10_four_kinds_of_paths() {
    let cfg = figure10();
    let dag = Dag::new(&cfg).unwrap();
    let num = number(&dag).unwrap();
    // NumPaths: E 2 (E->F before E->EXIT), C = D = 2, B 4, A 4, ENTRY 8.
    assert_eq!(num.total(), 8);
    assert_eq!(num.val, [0, 0, 0, 2, 0, 0, 0, 0, 4, 1]);
    // The four kinds: ENTRY to EXIT (0, 2), ENTRY to the backedge (1, 3),
    // loop head to EXIT (4, 6), loop head to the backedge (5, 7).
    let expected = [
        "<ABCEF>", "<ABCE>", "<ABDEF>", "<ABDE>", "<BCEF>", "<BCE>", "<BDEF>", "<BDE>",
    ];
    for (n, kind) in [
        (0, (true, true)),
        (1, (true, false)),
        (4, (false, true)),
        (5, (false, false)),
    ] {
        let path = regenerate(&dag, &num, n).unwrap();
        let starts_at_entry = matches!(dag.edge(path[0]).kind, DagEdgeKind::Real(_));
        let ends_at_exit = matches!(dag.edge(*path.last().unwrap()).kind, DagEdgeKind::Real(_));
        assert_eq!((starts_at_entry, ends_at_exit), kind, "path {n}");
    }
    for (n, want) in expected.iter().enumerate() {
        let path = regenerate(&dag, &num, n as u64).unwrap();
        assert_eq!(names(&dag.path_nodes(&path)), *want, "path {n}");
    }
}

#[test]
fn figure10_execution_counts_each_iteration() {
    let cfg = figure10();
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    // A B C E, back to B, D E, back to B, C E F: paths 1, 7, then 4,
    // whatever tree the weights choose.
    let choices = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0];
    let walk = random_walk(&cfg, &choices);
    assert_eq!(walk.end, pathprof_graph::testing::WalkEnd::Exit);
    for weights in [
        vec![1; 9],
        pathprof_graph::weights::loop_nesting_weights(&cfg),
        (0..9).rev().collect(),
    ] {
        let incs = chord_increments(&dag, &num, &dag_weights(&dag, &cfg, &weights));
        let ops = place(&dag, &incs);
        let mut m = OpMachine {
            r: 12345,
            counted: Vec::new(),
        };
        for &e in &walk.edges {
            for &dd in &dag.cfg_to_dag[e.index()] {
                ops[dd.index()].iter().for_each(|&op| m.apply(op));
            }
        }
        assert_eq!(m.counted, [1, 7, 4], "weights {weights:?}");
    }
}
