//! Property tests of the whole path-profiling pipeline on random CFGs, each
//! stage checked against the brute-force oracles of [`super::oracle`].

use proptest::collection::vec;
use proptest::prelude::*;

use crate::oracle::check_pipeline;
use pathprof_graph::dag::{order_from_dfs, Dag};
use pathprof_graph::numbering::{build_numbered, choose_cuts, number};
use pathprof_graph::testing::{arb_cfg, enumerate_paths, random_walk, Walk};
use pathprof_graph::{Cfg, NodeId};

/// A CFG with per-edge weights (a narrow range, so ties are common),
/// executions as successor choices, and path numbers to sample.
fn arb_case(max_blocks: usize) -> impl Strategy<Value = (Cfg, Vec<u64>, Vec<Vec<u32>>, Vec<u64>)> {
    arb_cfg(max_blocks).prop_flat_map(|cfg| {
        let m = cfg.num_edges();
        (
            Just(cfg),
            vec(0u64..4, m),
            vec(vec(any::<u32>(), 0..40), 0..4),
            vec(any::<u64>(), 0..4),
        )
    })
}

fn walks(cfg: &Cfg, choices: &[Vec<u32>]) -> Vec<Walk> {
    choices.iter().map(|c| random_walk(cfg, c)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Numbering is a bijection onto 0..N, regeneration inverts it, Inc sums
    /// equal Val sums, placed ops count each path's number once, chords are
    /// E - V + 1, and executions count their acyclic pieces.
    #[test]
    fn pipeline_on_random_cfgs((cfg, weights, choices, samples) in arb_case(10)) {
        let (dag, num) = build_numbered(&cfg, u64::MAX).unwrap();
        prop_assert!(dag.cut_nodes.is_empty(), "no truncation without overflow");
        prop_assert_eq!(&num, &number(&Dag::new(&cfg).unwrap()).unwrap());
        check_pipeline(&cfg, &dag, &num, &weights, &walks(&cfg, &choices), &samples)?;
    }

    /// Truncation (5.3) keeps every property above and the total within the
    /// threshold, or, when even cutting everything leaves more, cuts
    /// everything.
    #[test]
    fn truncation_on_random_cfgs((cfg, weights, choices, samples) in arb_case(8), limit in 1u64..200) {
        let base_total = number(&Dag::new(&cfg).unwrap()).unwrap().total();
        match build_numbered(&cfg, limit) {
            Ok((dag, num)) => {
                if num.total() > limit {
                    // Below the floor: the floor is what cutting every vertex gives.
                    let all: Vec<NodeId> = cfg.nodes().collect();
                    let floor = enumerate_paths(&Dag::with_cuts(&cfg, &all).unwrap(), 1 << 20).unwrap().len();
                    prop_assert_eq!(num.total(), floor as u64);
                }
                if base_total <= limit {
                    prop_assert!(dag.cut_nodes.is_empty());
                    prop_assert_eq!(num.total(), base_total);
                } else if num.total() <= limit {
                    prop_assert!(!dag.cut_nodes.is_empty());
                }
                check_pipeline(&cfg, &dag, &num, &weights, &walks(&cfg, &choices), &samples)?;
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    /// The one order every truncation round numbers in, taken from the DFS
    /// of the CFG, holds every node and is topological for the DAG of any
    /// set of cuts.
    #[test]
    fn dfs_order_is_topological_under_any_cuts(cfg in arb_cfg(10), cut in vec(any::<bool>(), 12)) {
        let cuts: Vec<NodeId> = cfg.nodes().filter(|v| cut.get(v.index()) == Some(&true)).collect();
        let dag = Dag::with_cuts(&cfg, &cuts).unwrap();
        let mut position = vec![None; cfg.num_nodes()];
        for (i, v) in order_from_dfs(&cfg).into_iter().enumerate() {
            prop_assert!(position[v.index()].replace(i).is_none(), "{} twice", v);
        }
        prop_assert!(position.iter().all(Option::is_some));
        for e in &dag.edges {
            prop_assert!(position[e.src.index()] < position[e.dst.index()], "{:?} goes back", e);
        }
    }

    /// A truncation round's prediction is what building and numbering its
    /// DAG gives: NumPaths(ENTRY), or overflow, and ENTRY's successors.
    #[test]
    fn round_prediction_matches_the_cut_dag(cfg in arb_cfg(10), t in 1u64..40) {
        let base = Dag::new(&cfg).unwrap();
        let round = choose_cuts(&base, &order_from_dfs(&cfg), t, None);
        let dag = Dag::with_cuts(&cfg, &round.cuts).unwrap();
        prop_assert_eq!(round.total, number(&dag).ok().map(|n| n.total()));
        prop_assert_eq!(round.entry_succs, dag.succs(Cfg::ENTRY).len() as u64);
    }
}
