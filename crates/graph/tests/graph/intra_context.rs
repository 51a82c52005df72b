//! Intraprocedural context profiling (Melski & Reps section 7): a loop
//! worked by hand, and random reducible CFGs against an enumerator that
//! cuts an execution into context paths by the section's definition.

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;

use pathprof_graph::intra_context::{ContextPath, ContextStep, IntraContext};
use pathprof_graph::testing::interproc::backedges;
use pathprof_graph::testing::{arb_cfg, cfg_from_lists, random_walk};
use pathprof_graph::{Cfg, EdgeId, GraphError, NodeId};

fn e(i: usize) -> EdgeId {
    EdgeId::new(i)
}

/// ENTRY -> A; A -> B | C; B, C -> D; D -> E | EXIT; E -> D (the backedge).
/// Blocks A..E are nodes 2..6; edges 0 ENTRY->A, 1 A->B, 2 A->C, 3 B->D,
/// 4 C->D, 5 D->E, 6 D->EXIT, 7 E->D.
fn loop_after_branch() -> Cfg {
    cfg_from_lists(&[vec![1, 2], vec![3], vec![3], vec![4, 5], vec![3]], &[])
}

#[test]
fn a_loop_keeps_the_branch_before_it() {
    let cfg = loop_after_branch();
    assert_eq!(cfg.edge(e(7)), (NodeId::new(6), NodeId::new(5)));
    let ic = IntraContext::new(&cfg).unwrap();
    // D_b -> {E, EXIT}: 2 paths (E -> EXIT is the surrogate end); D ->
    // {D_b, ~D_b}: 4, Val 0 and 2; A -> {B, C}: 8, Val(A->C) = 4.
    assert_eq!(ic.total(), 8);
    // ENTRY A B D E D E D EXIT, then ENTRY A C D EXIT.
    let twice = [0, 1, 3, 5, 7, 5, 7, 6].map(e);
    assert_eq!(
        ic.walk(&twice).unwrap().into_iter().collect::<Vec<_>>(),
        [(0, 1), (2, 1), (3, 1)]
    );
    let straight = [0, 2, 4, 6].map(e);
    assert_eq!(
        ic.walk(&straight).unwrap().into_iter().collect::<Vec<_>>(),
        [(5, 1)]
    );
    let d = NodeId::new(5);
    let prefix = [
        ContextStep::Edge(e(0)),
        ContextStep::Edge(e(1)),
        ContextStep::Edge(e(3)),
    ];
    let path = |tail: &[ContextStep]| {
        let mut steps = prefix.to_vec();
        steps.extend_from_slice(tail);
        steps
    };
    let first = ic.decode(0).unwrap();
    assert_eq!(
        first.steps,
        path(&[ContextStep::Edge(e(5)), ContextStep::End(NodeId::new(6))])
    );
    assert_eq!(first.active_start, 0);
    let again = ic.decode(2).unwrap();
    assert_eq!(
        again.steps,
        path(&[
            ContextStep::Resume(d),
            ContextStep::Edge(e(5)),
            ContextStep::End(NodeId::new(6))
        ])
    );
    // The context-prefix: how the loop was entered (through B).
    assert_eq!(again.active_start, 4);
    assert_eq!(
        ic.decode(3).unwrap().steps,
        path(&[ContextStep::Resume(d), ContextStep::Edge(e(6))])
    );
}

#[test]
fn irreducible_cfgs_are_refused() {
    // ENTRY -> A | B; A <-> B: the loop has two entries.
    let cfg = cfg_from_lists(&[vec![1, 2], vec![0, 2]], &[1]);
    assert!(matches!(
        IntraContext::new(&cfg),
        Err(GraphError::Irreducible { .. })
    ));
}

/// The context paths of one activation's `edges`, by definition: a
/// backedge `w -> v` ends the path at `w`; the next is the path as it was
/// when control last entered `v` from outside the loop, then the surrogate
/// into `v`; EXIT ends a path.
fn context_paths(cfg: &Cfg, edges: &[EdgeId]) -> BTreeMap<ContextPath, u64> {
    let back = backedges(cfg);
    let mut head = vec![false; cfg.num_nodes()];
    for e in cfg.edge_ids().filter(|e| back[e.index()]) {
        head[cfg.dst(e).index()] = true;
    }
    let mut paths = BTreeMap::new();
    let mut emit = |steps: Vec<ContextStep>| {
        let active_start = steps
            .iter()
            .rposition(|s| matches!(s, ContextStep::Resume(_)))
            .map_or(0, |i| i + 1);
        *paths
            .entry(ContextPath {
                steps,
                active_start,
            })
            .or_insert(0) += 1;
    };
    let mut entered: BTreeMap<NodeId, Vec<ContextStep>> = BTreeMap::new();
    let mut cur = Vec::new();
    for &e in edges {
        let (w, v) = cfg.edge(e);
        if back[e.index()] {
            let mut done = std::mem::take(&mut cur);
            done.push(ContextStep::End(w));
            emit(done);
            cur = entered[&v].clone();
            cur.push(ContextStep::Resume(v));
        } else {
            cur.push(ContextStep::Edge(e));
            if head[v.index()] {
                entered.insert(v, cur.clone());
            }
            if v == Cfg::EXIT {
                emit(std::mem::take(&mut cur));
            }
        }
    }
    paths
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn decoded_walk_equals_context_paths(
        cfg in arb_cfg(8),
        runs in vec(vec(any::<u32>(), 0..60), 1..4),
    ) {
        let ic = match IntraContext::new(&cfg) {
            Ok(ic) => ic,
            Err(GraphError::Irreducible { .. }) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        for choices in &runs {
            let walk = random_walk(&cfg, choices);
            let counts = ic.walk(&walk.edges).unwrap();
            let mut decoded = BTreeMap::new();
            for (&n, &c) in &counts {
                *decoded.entry(ic.decode(n).unwrap()).or_insert(0) += c;
            }
            prop_assert_eq!(decoded, context_paths(&cfg, &walk.edges));
        }
        // Dense: every number decodes, to distinct paths.
        if ic.total() <= 2000 {
            let all: std::collections::BTreeSet<_> =
                (0..ic.total()).map(|n| ic.decode(n).unwrap()).collect();
            prop_assert_eq!(all.len() as u64, ic.total());
        }
    }
}
