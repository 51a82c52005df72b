//! Graphs of 10^5+ nodes: nothing may recurse that deep or take quadratic
//! time. Each test also checks a value known by construction.

use crate::{cases::diamonds, loops::nested, oracle};
use pathprof_graph::flow::{derive_edge_counts, edge_spanning_tree};
use pathprof_graph::numbering::build_numbered;
use pathprof_graph::placement::place;
use pathprof_graph::spanning::{chord_increments, dag_weights};
use pathprof_graph::testing::{cfg_from_lists, random_walk, WalkEnd};
use pathprof_graph::weights::{loop_nesting_depths, loop_nesting_weights};
use pathprof_graph::Cfg;

/// A chain of `n` blocks, the last looping back to the first, a self loop
/// in the middle: 200 000 frames deep for a recursive search.
fn long_loop(n: usize) -> Cfg {
    let mut lists: Vec<Vec<usize>> = (0..n).map(|i| vec![i + 1]).collect();
    lists[n / 2].push(n / 2);
    lists[n - 1] = vec![0, n];
    cfg_from_lists(&lists, &[])
}

#[test]
fn long_loop_pipeline() {
    let n = 200_000;
    let cfg = long_loop(n);
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    // ENTRY or the loop head, to EXIT or the backedge.
    assert_eq!(num.total(), 4);
    assert_eq!(dag.self_loops.len(), 1);
    let weights = loop_nesting_weights(&cfg);
    assert_eq!(loop_nesting_depths(&cfg)[2 + n / 2], 2);
    // Twice round the loop, once round the self loop, then out.
    let mut choices = vec![0u32; 3 * n + 10];
    choices[2 * n] = 1;
    choices[3 * n + 2] = 1;
    let walk = random_walk(&cfg, &choices);
    assert_eq!(walk.end, WalkEnd::Exit);
    oracle::check_pipeline(&cfg, &dag, &num, &weights, std::slice::from_ref(&walk), &[]).unwrap();
    let in_tree = edge_spanning_tree(&cfg, &weights, &[]);
    let mut counts = vec![0u64; cfg.num_edges()];
    walk.edges.iter().for_each(|e| counts[e.index()] += 1);
    let chords: Vec<u64> = (0..counts.len())
        .map(|e| if in_tree[e] { 0 } else { counts[e] })
        .collect();
    assert_eq!(
        derive_edge_counts(&cfg, &in_tree, &chords, &[], &[]),
        Ok(counts)
    );
}

#[test]
fn many_diamonds_truncate_quickly() {
    // 2^50000 paths: truncation must cut, and stay within the limit.
    let cfg = diamonds(50_000);
    for limit in [u64::MAX, 1 << 32] {
        let (dag, num) = build_numbered(&cfg, limit).unwrap();
        assert!(num.total() <= limit && !dag.cut_nodes.is_empty());
        let weights = vec![1; cfg.num_edges()];
        let incs = chord_increments(&dag, &num, &dag_weights(&dag, &cfg, &weights));
        let ops = place(&dag, &incs);
        for n in [0, 1, num.total() / 3, num.total() - 1] {
            oracle::check_sampled_path(&dag, &num, &incs, &ops, n).unwrap();
        }
    }
}

#[test]
fn deep_nesting_is_linear() {
    let k = 50_000;
    let cfg = nested(k);
    let depth = loop_nesting_depths(&cfg);
    assert_eq!(
        (depth[2 + k - 1], depth[2 + 2 * k - 1]),
        (k as u32, k as u32)
    );
    let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(dag.backedges.len(), k);
    let incs = chord_increments(
        &dag,
        &num,
        &dag_weights(&dag, &cfg, &loop_nesting_weights(&cfg)),
    );
    let ops = place(&dag, &incs);
    oracle::check_sampled_path(&dag, &num, &incs, &ops, num.total() - 1).unwrap();
}

#[test]
fn wide_branch_is_fast() {
    // One block with 100 000 successors (a huge br_table), each to EXIT.
    let fan = 100_000;
    let mut lists = vec![(1..=fan).collect::<Vec<_>>()];
    lists.extend((0..fan).map(|_| vec![fan + 1]));
    let cfg = cfg_from_lists(&lists, &[]);
    let (_, num) = build_numbered(&cfg, u64::MAX).unwrap();
    assert_eq!(num.total(), fan as u64);
}
