//! Edge profiling (QPT2): the spanning tree of the CFG and edge counts
//! recovered by flow conservation, by hand and on random executions.

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;

use pathprof_graph::flow::{derive_edge_counts, edge_spanning_tree};
use pathprof_graph::testing::{arb_cfg, figure1, random_walk, WalkEnd};
use pathprof_graph::{Cfg, GraphError, NodeId};

/// Fig. 1 weighted so that the chords are A->C, B->C, B->D, E->F (edges 2,
/// 3, 4, 8), as in Fig. 3.
fn figure3() -> (Cfg, Vec<bool>) {
    let (cfg, _) = figure1();
    let in_tree = edge_spanning_tree(&cfg, &[100, 10, 1, 1, 1, 10, 10, 10, 1, 100], &[]);
    (cfg, in_tree)
}

/// Chord counts only: tree edges get garbage, which must be ignored.
fn chord_counts(in_tree: &[bool], counts: &[u64]) -> Vec<u64> {
    in_tree
        .iter()
        .zip(counts)
        .map(|(&t, &c)| if t { 777 } else { c })
        .collect()
}

#[test]
fn figure3_counts_from_chords() {
    let (cfg, in_tree) = figure3();
    let chords: Vec<usize> = (0..10).filter(|&e| !in_tree[e]).collect();
    assert_eq!(chords, [2, 3, 4, 8]);
    // ABCDEF x3, ACDF x2, ABDF x1, counted by hand per edge: ENTRY->A, A->B,
    // A->C, B->C, B->D, C->D, D->F, D->E, E->F, F->EXIT.
    let counts = [6, 4, 2, 3, 1, 5, 3, 3, 3, 6];
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &chord_counts(&in_tree, &counts), &[], &[]),
        Ok(counts.to_vec())
    );
}

#[test]
fn abrupt_exits_keep_counts_exact() {
    let (cfg, in_tree) = figure3();
    let c = NodeId::new(4);
    // ABCDEF once, and once A->C then a trap in C.
    let counts = [2, 1, 1, 1, 0, 1, 0, 1, 1, 1];
    let chords = chord_counts(&in_tree, &counts);
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &chords, &[(c, 1)], &[]),
        Ok(counts.to_vec())
    );
}

/// An exception unwinding through C leaves no record; with C named as a
/// vertex that may be unwound, the tree holds a virtual C->EXIT edge and
/// one more edge is a chord (5 against Fig. 3's 4), and the counts are exact.
#[test]
fn unwound_activations_keep_counts_exact() {
    let (cfg, _) = figure1();
    let c = NodeId::new(4);
    let in_tree = edge_spanning_tree(&cfg, &[100, 10, 1, 1, 1, 10, 10, 10, 1, 100], &[c]);
    assert_eq!(in_tree.iter().filter(|&&t| !t).count(), 5);
    // ABCDEF once, and once A->C then unwound from C.
    let counts = [2, 1, 1, 1, 0, 1, 0, 1, 1, 1];
    let chords = chord_counts(&in_tree, &counts);
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &chords, &[], &[c]),
        Ok(counts.to_vec())
    );
    // Without the virtual edge the same counters cannot balance.
    assert!(derive_edge_counts(&cfg, &in_tree, &chords, &[], &[]).is_err());
}

#[test]
fn inconsistent_counts_are_errors() {
    let (cfg, in_tree) = figure3();
    // E->F ran 10 times but only 6 paths reach D: D->F would be -4.
    let chords = chord_counts(&in_tree, &[0, 0, 2, 3, 1, 0, 0, 0, 10, 0]);
    let got = derive_edge_counts(&cfg, &in_tree, &chords, &[], &[]);
    assert!(
        matches!(got, Err(GraphError::InconsistentCounts { .. })),
        "{got:?}"
    );
    // Flow into a vertex with no tree edge that does not balance.
    let mut lone = Cfg::new();
    let a = lone.add_node();
    let e0 = lone.add_edge(Cfg::ENTRY, a);
    lone.add_edge(a, Cfg::EXIT);
    let got = derive_edge_counts(&lone, &[false, false], &[3, 2], &[], &[]);
    assert!(
        matches!(got, Err(GraphError::InconsistentCounts { .. })),
        "{got:?}"
    );
    assert_eq!(
        derive_edge_counts(&lone, &[true, false], &[0, 2], &[], &[]),
        Ok(vec![2, 2])
    );
    assert_eq!(e0.index(), 0);
}

#[test]
fn malformed_inputs_are_errors() {
    let (cfg, in_tree) = figure3();
    let counts = vec![0; 10];
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree[..9], &counts, &[], &[]),
        Err(GraphError::LengthMismatch {
            what: "in_tree",
            got: 9,
            expected: 10
        })
    );
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &counts[..3], &[], &[]),
        Err(GraphError::LengthMismatch {
            what: "chord_counts",
            got: 3,
            expected: 10
        })
    );
    let far = NodeId::new(99);
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &counts, &[(far, 1)], &[]),
        Err(GraphError::NodeOutOfRange {
            node: far,
            num_nodes: 8
        })
    );
    // Every edge in the "tree": the cycles leave counts undetermined.
    let got = derive_edge_counts(&cfg, &[true; 10], &counts, &[], &[]);
    assert!(
        matches!(got, Err(GraphError::NotASpanningForest { .. })),
        "{got:?}"
    );
}

#[test]
fn self_loops_are_always_chords() {
    let mut cfg = Cfg::new();
    let a = cfg.add_node();
    cfg.add_edge(Cfg::ENTRY, a);
    cfg.add_edge(a, a);
    cfg.add_edge(a, Cfg::EXIT);
    // With the virtual EXIT->ENTRY edge, ENTRY->A->EXIT closes a cycle too,
    // so the lighter of those two is a chord as well.
    assert_eq!(
        edge_spanning_tree(&cfg, &[1, u64::MAX, 0], &[]),
        [true, false, false]
    );
}

/// Connected components by relabelling: slow and obviously right.
struct Components {
    label: Vec<usize>,
}

impl Components {
    fn new(n: usize) -> Self {
        Components {
            label: (0..n).collect(),
        }
    }

    /// Joins the components of `a` and `b`; false if already one.
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (la, lb) = (self.label[a], self.label[b]);
        for l in self.label.iter_mut().filter(|l| **l == lb) {
            *l = la;
        }
        la != lb
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Counting only chords recovers every edge count of random executions,
    /// including activations that stop early: reported where they stopped
    /// (a trap), or, at the `unwinding` vertices, not at all (an exception
    /// unwinding through the frame). The tree is a maximal forest that holds
    /// the virtual edges.
    #[test]
    fn derive_recovers_random_executions(
        (cfg, weights, unwinds) in arb_cfg(12).prop_flat_map(|cfg| {
            let (n, m) = (cfg.num_nodes(), cfg.num_edges());
            (Just(cfg), vec(0u64..5, m), vec(any::<bool>(), n))
        }),
        runs in vec(vec(any::<u32>(), 0..60), 0..8),
    ) {
        let m = cfg.num_edges();
        let unwinding: Vec<NodeId> = (0..cfg.num_nodes())
            .filter(|&v| unwinds[v])
            .map(NodeId::new)
            .collect();
        let in_tree = edge_spanning_tree(&cfg, &weights, &unwinding);
        // A forest with the virtual edges, and maximal: every chord closes a cycle.
        let mut sets = Components::new(cfg.num_nodes());
        sets.union(Cfg::EXIT.index(), Cfg::ENTRY.index());
        for v in &unwinding {
            sets.union(v.index(), Cfg::EXIT.index());
        }
        for (e, &(s, d)) in cfg.edge_list().iter().enumerate().filter(|&(e, _)| in_tree[e]) {
            prop_assert!(sets.union(s.index(), d.index()), "tree edge {} closes a cycle", e);
        }
        for &(s, d) in cfg.edge_list().iter().enumerate().filter(|&(e, _)| !in_tree[e]).map(|(_, x)| x) {
            prop_assert_eq!(sets.label[s.index()], sets.label[d.index()]);
        }
        let mut counts = vec![0u64; m];
        let mut abrupt: BTreeMap<NodeId, u64> = BTreeMap::new();
        for choices in &runs {
            let walk = random_walk(&cfg, choices);
            for e in &walk.edges {
                counts[e.index()] += 1;
            }
            // Where a frame may be unwound, stopping there leaves no record
            // half of the time.
            if let WalkEnd::Abrupt(v) = walk.end {
                if !(unwinds[v.index()] && choices.len() % 2 == 0) {
                    *abrupt.entry(v).or_default() += 1;
                }
            }
        }
        let abrupt: Vec<(NodeId, u64)> = abrupt.into_iter().collect();
        let chords = chord_counts(&in_tree, &counts);
        let derived = derive_edge_counts(&cfg, &in_tree, &chords, &abrupt, &unwinding);
        prop_assert_eq!(derived, Ok(counts));
    }
}
