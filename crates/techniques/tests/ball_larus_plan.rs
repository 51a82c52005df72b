//! The Ball-Larus plan, executed action by action along random executions of
//! random CFGs: the paths it counts, regenerated, must be exactly the
//! backedge-free pieces of the execution, in order, and self-loop slots must
//! count the self-loop edges taken.

use std::collections::BTreeMap;

use pathprof_graph::testing::{arb_cfg, random_walk, WalkEnd};
use pathprof_graph::{Cfg, NodeId};
use pathprof_techniques::ball_larus::{self, Options};
use pathprof_techniques::{Action, RawCounters, Width};
use proptest::prelude::*;

/// Runs the actions of each edge of a walk; wrapping at the register width.
fn execute(
    plan: &pathprof_techniques::FunctionPlan,
    edges: &[pathprof_graph::EdgeId],
) -> (Vec<u64>, Vec<u64>) {
    let mask = match plan.registers.first() {
        Some(Width::I32) => u64::from(u32::MAX),
        _ => u64::MAX,
    };
    let (mut r, mut counted, mut slots) = (0u64, Vec::new(), vec![0u64; plan.slots as usize]);
    for e in edges {
        for a in &plan.edges[e.index()] {
            match *a {
                Action::Set { value, .. } => r = value as u64 & mask,
                Action::Add { value, .. } => r = r.wrapping_add(value as u64) & mask,
                Action::CountPath { offset, .. } => {
                    counted.push(r.wrapping_add(offset as u64) & mask)
                }
                Action::CountPathConst { path } => counted.push(path),
                Action::CountSlot { index } => slots[index as usize] += 1,
                Action::Trace { .. }
                | Action::CountPpp(_)
                | Action::CountInteresting { .. }
                | Action::GlobalToLocal { .. }
                | Action::LocalToGlobal { .. }
                | Action::MulAdd(_)
                | Action::IfNonZero(_)
                | Action::Push(_)
                | Action::ForEachMember(_)
                | Action::TrapIfAbove { .. }
                | Action::CaptureIndex { .. }
                | Action::In(_) => {
                    unreachable!("only Ball-Larus actions in a Ball-Larus plan")
                }
            }
        }
    }
    (counted, slots)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn counted_paths_regenerate_to_the_execution(cfg in arb_cfg(10), choices in prop::collection::vec(any::<u32>(), 1..200)) {
        let planned = ball_larus::plan(&cfg, None, &Options::default()).unwrap();
        let walk = random_walk(&cfg, &choices);
        prop_assume!(walk.end == WalkEnd::Exit);
        let (counted, slots) = execute(&planned.plan, &walk.edges);

        // Self-loop slots count exactly the self-loop edges taken.
        for (i, &e) in planned.numbered.self_loops.iter().enumerate() {
            let taken = walk.edges.iter().filter(|&&w| w == e).count() as u64;
            prop_assert_eq!(slots[i], taken);
        }
        // The regenerated paths, concatenated, are the walk's blocks once
        // self-loop repetitions are dropped.
        let mut expected: Vec<NodeId> = Vec::new();
        for &e in &walk.edges {
            let (s, d) = cfg.edge(e);
            if s != d && d != Cfg::EXIT {
                expected.push(d);
            }
        }
        let (dag, numbering) = planned.numbered.to_dag();
        let mut got = Vec::new();
        for &p in &counted {
            prop_assert!(p < planned.numbered.total);
            let regen = planned.numbered.regenerate(&dag, &numbering, p, |_| false).unwrap();
            got.extend(regen.blocks);
        }
        prop_assert_eq!(got, expected);

        // Decoding keeps every count.
        let mut by_path: BTreeMap<u64, u64> = BTreeMap::new();
        for p in counted {
            *by_path.entry(p).or_insert(0) += 1;
        }
        let raw = RawCounters { paths: by_path.clone().into_iter().collect(), slots: slots.clone(), lost: 0 };
        let decoded = ball_larus::decode(&planned.numbered, &raw).unwrap();
        prop_assert_eq!(decoded.paths, by_path.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn a_counter_outside_the_numbering_is_refused() {
    let mut cfg = Cfg::new();
    let a = cfg.add_node();
    cfg.add_edge(Cfg::ENTRY, a);
    cfg.add_edge(a, Cfg::EXIT);
    let planned = ball_larus::plan(&cfg, None, &Options::default()).unwrap();
    let raw = RawCounters {
        paths: vec![(1, 3)],
        slots: vec![],
        lost: 0,
    };
    assert_eq!(
        ball_larus::decode(&planned.numbered, &raw)
            .unwrap_err()
            .to_string(),
        pathprof_graph::GraphError::PathOutOfRange { path: 1, total: 1 }.to_string()
    );
}
