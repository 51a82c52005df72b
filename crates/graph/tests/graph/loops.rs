//! Loop nesting depths and the static weights built on them, against
//! hand-worked graphs and against structured programs whose nesting is
//! known by construction.

use proptest::prelude::*;

use pathprof_graph::testing::{arb_cfg, cfg_from_lists};
use pathprof_graph::weights::{loop_nesting_depths, loop_nesting_weights};
use pathprof_graph::{Cfg, NodeId};

#[test]
fn nested_loops_with_a_self_loop() {
    // A (2) heads the outer loop, B (3) the inner one, C (4) loops on itself;
    // D (5) closes the outer loop. Edges: ENTRY->A, A->B, A->EXIT, B->C,
    // B->D, C->C, C->B, D->A.
    let cfg = cfg_from_lists(&[vec![1, 4], vec![2, 3], vec![2, 1], vec![0]], &[]);
    assert_eq!(loop_nesting_depths(&cfg), [0, 0, 1, 2, 3, 1]);
    // 10^min(depth(src), depth(dst)).
    assert_eq!(
        loop_nesting_weights(&cfg),
        [1, 10, 1, 100, 10, 1000, 100, 10]
    );
}

#[test]
fn irreducible_loop_counts_once() {
    // ENTRY enters both A and B, which branch to each other: one loop.
    let cfg = cfg_from_lists(&[vec![1, 2], vec![0]], &[1]);
    assert_eq!(loop_nesting_depths(&cfg), [0, 0, 1, 1]);
}

#[test]
fn sibling_loops_do_not_nest() {
    // A loops on B, then C loops on D; A->B, B->A, B->C, C->D, D->C, D->EXIT.
    let cfg = cfg_from_lists(&[vec![1], vec![0, 2], vec![3], vec![2, 4]], &[]);
    assert_eq!(loop_nesting_depths(&cfg), [0, 0, 1, 1, 1, 1]);
}

#[test]
fn unreachable_edges_weigh_nothing() {
    // A->EXIT; B (unreachable) loops on itself.
    let cfg = cfg_from_lists(&[vec![2], vec![1, 2]], &[]);
    assert_eq!(loop_nesting_depths(&cfg), [0, 0, 0, 0]);
    assert_eq!(loop_nesting_weights(&cfg), [1, 1, 0, 0]);
}

/// `k` nested loops: heads h_0..h_{k-1} in a chain, h_{k-1} -> t_{k-1},
/// t_i -> h_i (backedge), t_i -> t_{i-1}, t_0 -> EXIT. Node of h_i is
/// `2 + i`, of t_i `2 + k + i`.
pub fn nested(k: usize) -> Cfg {
    let mut lists: Vec<Vec<usize>> = (0..k)
        .map(|i| vec![if i + 1 < k { i + 1 } else { 2 * k - 1 }])
        .collect();
    for i in 0..k {
        let out = if i == 0 { 2 * k } else { k + i - 1 };
        lists.push(vec![i, out]);
    }
    cfg_from_lists(&lists, &[])
}

#[test]
fn deep_nesting_saturates() {
    let k = 25;
    let cfg = nested(k);
    let depth = loop_nesting_depths(&cfg);
    for i in 0..k {
        assert_eq!(
            (depth[2 + i], depth[2 + k + i]),
            (i as u32 + 1, i as u32 + 1)
        );
    }
    let weights = loop_nesting_weights(&cfg);
    let innermost_back = cfg.succs(NodeId::new(2 + 2 * k - 1))[0];
    assert_eq!(weights[innermost_back.index()], u64::MAX, "10^25 saturates");
    assert_eq!(weights[cfg.succs(NodeId::new(2 + 3))[0].index()], 10_000);
}

/// A structured program: what lowers to a reducible CFG with known nesting.
#[derive(Clone, Debug)]
enum Stmt {
    Block,
    SelfLoop,
    Seq(Vec<Stmt>),
    If(Box<Stmt>, Box<Stmt>),
    Loop(Box<Stmt>),
}

fn arb_stmt() -> impl Strategy<Value = Stmt> {
    let leaf = prop_oneof![4 => Just(Stmt::Block), 1 => Just(Stmt::SelfLoop)];
    leaf.prop_recursive(5, 40, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Stmt::Seq),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Stmt::If(Box::new(a), Box::new(b))),
            inner.prop_map(|s| Stmt::Loop(Box::new(s))),
        ]
    })
}

/// Lowers `s` after node `from` at nesting `depth`, recording each new
/// node's depth; returns the node control leaves `s` from.
fn lower(s: &Stmt, cfg: &mut Cfg, depths: &mut Vec<u32>, from: NodeId, depth: u32) -> NodeId {
    fn node(cfg: &mut Cfg, depths: &mut Vec<u32>, d: u32) -> NodeId {
        depths.push(d);
        cfg.add_node()
    }
    match s {
        Stmt::Block => {
            let b = node(cfg, depths, depth);
            cfg.add_edge(from, b);
            b
        }
        Stmt::SelfLoop => {
            let b = node(cfg, depths, depth + 1);
            cfg.add_edge(from, b);
            cfg.add_edge(b, b);
            b
        }
        Stmt::Seq(list) => list
            .iter()
            .fold(from, |at, s| lower(s, cfg, depths, at, depth)),
        Stmt::If(a, b) => {
            let cond = node(cfg, depths, depth);
            cfg.add_edge(from, cond);
            let ends = [
                lower(a, cfg, depths, cond, depth),
                lower(b, cfg, depths, cond, depth),
            ];
            let join = node(cfg, depths, depth);
            for end in ends {
                cfg.add_edge(end, join);
            }
            join
        }
        Stmt::Loop(body) => {
            let head = node(cfg, depths, depth + 1);
            cfg.add_edge(from, head);
            let end = lower(body, cfg, depths, head, depth + 1);
            cfg.add_edge(end, head);
            let after = node(cfg, depths, depth);
            cfg.add_edge(end, after);
            after
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn depths_of_structured_programs(program in arb_stmt()) {
        let mut cfg = Cfg::new();
        let mut depths = vec![0, 0];
        let end = lower(&program, &mut cfg, &mut depths, Cfg::ENTRY, 0);
        cfg.add_edge(end, Cfg::EXIT);
        prop_assert_eq!(loop_nesting_depths(&cfg), depths);
    }

    /// On any CFG: both ends of a cycle edge are in a loop, and reachable
    /// edges weigh at least 1.
    #[test]
    fn weights_on_random_cfgs(cfg in arb_cfg(10)) {
        let depth = loop_nesting_depths(&cfg);
        let weights = loop_nesting_weights(&cfg);
        let reach = crate::oracle::cfg_reachable(&cfg);
        for (e, &(v, w)) in cfg.edge_list().iter().enumerate() {
            prop_assert_eq!(weights[e] > 0, reach[v.index()]);
            // v->w on a cycle: w reaches v.
            if reach[v.index()] && reaches(&cfg, w, v) {
                prop_assert!(depth[v.index()] >= 1 && depth[w.index()] >= 1, "edge {} on a cycle", e);
            }
        }
    }
}

fn reaches(cfg: &Cfg, from: NodeId, to: NodeId) -> bool {
    let mut seen = vec![false; cfg.num_nodes()];
    let mut work = vec![from];
    while let Some(v) = work.pop() {
        if v == to {
            return true;
        }
        for &e in cfg.succs(v) {
            let w = cfg.dst(e);
            if !std::mem::replace(&mut seen[w.index()], true) {
                work.push(w);
            }
        }
    }
    false
}
