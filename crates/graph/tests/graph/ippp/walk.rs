//! The IPPP numbering and walk: the thesis' WPP example by hand, and a
//! property test on random supergraphs with interesting IPS drawn from a
//! first (train) run and counts from a second (ref) run, against the
//! brute-force enumerator.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::vec;
use proptest::prelude::*;

use super::example::{program, run};
use super::props::{arb_plain_supergraph, spell};
use pathprof_graph::interproc::{Event, FuncId, Supergraph};
use pathprof_graph::ippp::{expand_all_truncated, ips_profile, Ippp, Ips, SubpathNumbering};
use pathprof_graph::testing::interproc::random_execution;
use pathprof_graph::testing::ippp::{
    edge_marks, ips, ips_truncated, marks, wpp_unfinished, Spelt, Truncation,
};

/// f3's expanded graph for the depth-1 IPS of the example (p3p4, p7p8p9):
/// f4 copied at C's call, f5 at D's. NumPaths by hand: r1 1, f5's copy
/// (ENTRY' X EXIT' -> r1) 1, D 2 (its dummy to EXIT, or into f5), r0 2, f4's
/// L 3 (L M and its backedge's dummy to EXIT, or L EXIT' -> r0), C 4 (its
/// dummy, or into f4), ENTRY 4 + 2 + 1 = 7 (to C, to r0, to r1). The two
/// interesting paths get PPP ids 0 and 1.
#[test]
fn example_expanded_graph_by_hand() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let interesting: Vec<Ips> = ips_profile(&num, 1, &run()).unwrap().into_keys().collect();
    let ip = Ippp::new(&num, 1, &interesting).unwrap();
    let f3 = &ip.expanded[2];
    assert_eq!(f3.copies.len(), 3);
    assert_eq!(f3.numbering.total(), 7);
    assert_eq!(f3.interesting.len(), 2);
    let mut ids: Vec<i64> = f3.table.keys().copied().collect();
    ids.sort();
    assert_eq!(ids, [0, 1]);
    // f1 and f2: one interesting IPS each, id 0; f4 and f5 none.
    let sizes: Vec<usize> = ip.expanded.iter().map(|x| x.interesting.len()).collect();
    assert_eq!(sizes, [1, 1, 2, 0, 0]);
    let counts = ip.walk(&run()).unwrap();
    assert!(counts.uninteresting.is_empty());
    assert_eq!(counts.interesting.values().sum::<u64>(), 4);
    for (&(f, id), &c) in &counts.interesting {
        assert_eq!(c, 1);
        let decoded = ip.decode(f, id).unwrap();
        assert_eq!(decoded[0].func, f);
    }
}

/// 3.4.5: f4's edge L -> M carries one increment per context. At depth 2
/// the interesting IPS p2p3p4 puts a copy of f4 in f2's expanded graph
/// (f2 -> f3 -> f4) and p3p4 one in f3's; the edge has an increment in
/// each.
#[test]
fn per_context_increments() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let interesting: Vec<Ips> = ips_profile(&num, 2, &run()).unwrap().into_keys().collect();
    let ip = Ippp::new(&num, 2, &interesting).unwrap();
    let f4 = FuncId::new(3);
    let copies_of_f4: usize = ip
        .expanded
        .iter()
        .map(|x| {
            x.copies
                .iter()
                .filter(|c| c.func == f4 && c.parent.is_some())
                .count()
        })
        .sum();
    // Inlined copies (the root copy of f4's own graph aside): f1 inlines
    // f2 -> f3 (depth 2, no f4); f2 f3 -> f4; f3 f4 and f5.
    assert_eq!(copies_of_f4, 2);
    // L -> M (edge 1 of f4) in each copy of f4: an increment per context.
    let pathprof_graph::ippp::subpath::CutRole::Real(d) = num.functions[3].roles[1] else {
        panic!("L -> M is a DAG edge");
    };
    let per_context = ip
        .expanded
        .iter()
        .flat_map(|x| {
            (0..x.copies.len())
                .filter(|&c| x.copies[c].func == f4 && x.copies[c].parent.is_some())
                .map(move |c| x.increment(c, d))
        })
        .filter(Option::is_some)
        .count();
    assert_eq!(per_context, 2);
    let counts = ip.walk(&run()).unwrap();
    assert_eq!(counts.interesting.values().sum::<u64>(), 4);
    assert!(counts.uninteresting.is_empty());
}

/// The walk of `reference` against the enumerator, with interesting IPS
/// from `train`, for k = 1..3: on the expanded graphs as they are, and on
/// every function's graph truncated (3.4.4 step 5).
fn check(sg: &Supergraph, train: &[Event], reference: &[Event]) -> Result<(), TestCaseError> {
    let num = SubpathNumbering::new(sg).unwrap();
    let all: Vec<FuncId> = (0..num.functions.len()).map(FuncId::new).collect();
    for k in 1..=3 {
        for truncated in [&[][..], &all[..]] {
            check_k(sg, &num, k, truncated, train, reference)?;
        }
    }
    Ok(())
}

fn check_k(
    sg: &Supergraph,
    num: &SubpathNumbering,
    k: usize,
    truncated: &[FuncId],
    train: &[Event],
    reference: &[Event],
) -> Result<(), TestCaseError> {
    // With the subpaths in flight at the end: a segment may be truncated
    // in one, and the walk counts it there.
    let ref_wpp = wpp_unfinished(sg, reference);
    {
        let num = num;
        let interesting: Vec<Ips> = ips_profile(num, k, train).unwrap().into_keys().collect();
        let ip = match expand_all_truncated(num, k, &interesting, truncated) {
            Ok(expanded) => Ippp {
                subpaths: num,
                k,
                expanded,
            },
            Err(pathprof_graph::GraphError::TooManyPaths) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let spelt_interesting: BTreeSet<Spelt> = interesting
            .iter()
            .map(|s| s.iter().map(|&r| spell(&num, r)).collect())
            .collect();
        let counts = ip.walk(reference).unwrap();
        let mut ours: BTreeMap<Spelt, u64> = BTreeMap::new();
        for (&(f, id), &c) in &counts.interesting {
            let seg = ip.decode(f, id).expect("a counted id decodes");
            let spelt: Spelt = seg.iter().map(|&r| spell(&num, r)).collect();
            *ours.entry(spelt).or_insert(0) += c;
        }
        let theirs: BTreeMap<Spelt, u64> = ips(&ref_wpp, k)
            .into_iter()
            .filter(|(s, _)| spelt_interesting.contains(s))
            .collect();
        prop_assert_eq!(&ours, &theirs, "k = {}", k);
        // The others, decoded from their Ball-Larus ids, are the IPS cut
        // at the calls into contexts no interesting IPS enters.
        let mut untested: BTreeMap<Spelt, u64> = BTreeMap::new();
        for (&(f, bl), &c) in &counts.uninteresting {
            let seg = ip.decode_ball_larus(f, bl).unwrap();
            let spelt: Spelt = seg.iter().map(|&r| spell(&num, r)).collect();
            prop_assert!(!spelt_interesting.contains(&spelt));
            *untested.entry(spelt).or_insert(0) += c;
        }
        let kept = edge_marks(&spelt_interesting);
        let truncation = Truncation {
            starts: truncated.iter().copied().collect(),
            kept: &kept,
        };
        let (cut, cut_off) = ips_truncated(
            &ref_wpp,
            k,
            Some(&marks(&spelt_interesting)),
            Some(&truncation),
        );
        let cut_untested: BTreeMap<Spelt, u64> = cut
            .into_iter()
            .filter(|(s, _)| !spelt_interesting.contains(s))
            .collect();
        prop_assert_eq!(&untested, &cut_untested, "k = {}", k);
        let mut per_start: BTreeMap<FuncId, u64> = BTreeMap::new();
        for (s, c) in cut_off {
            *per_start.entry(s[0].0).or_insert(0) += c;
        }
        prop_assert_eq!(&counts.truncated, &per_start, "k = {}", k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn walk_counts_interesting_ips_of_a_second_run(
        sg in arb_plain_supergraph(),
        train in vec(any::<u32>(), 0..300),
        reference in vec(any::<u32>(), 0..300),
        same in any::<bool>(),
    ) {
        let train_events = random_execution(&sg, &train, 6);
        let ref_choices = if same { &train } else { &reference };
        let ref_events = random_execution(&sg, ref_choices, 6);
        check(&sg, &train_events, &ref_events)?;
    }
}

/// Fig. 4's program, trained and run on its one execution: every closed
/// depth-1 IPS is interesting.
#[test]
fn figure4_all_interesting() {
    let sg = pathprof_graph::testing::interproc::figure4();
    let events = pathprof_graph::testing::interproc::figure4_execution();
    check(&sg, &events, &events).unwrap();
}

/// Residual profiling of the example (3.5.2, Table 3.2's columns): trained
/// on the run, with the field run differing in f4, which returns at once
/// (ENTRY L EXIT, subpath q). The field run's depth-1 IPS: p1p2, p2p3, and
/// from p3 on: p3 q (return to f3, depth 0) p7 (a call at depth 0 < 1)
/// p8 (return) p9 (return out of f3): p3 q p7 p8 p9, untested; and p7p8p9.
/// One untested IPS of 4 (25%), one run of 4 (25%).
#[test]
fn residual_of_the_example() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let tested: Vec<Ips> = ips_profile(&num, 1, &run()).unwrap().into_keys().collect();
    let ip = Ippp::new(&num, 1, &tested).unwrap();
    let mut field = run();
    // f4's events (indices 7 to 13: five edges, the return) become
    // ENTRY -> L, L -> EXIT, return.
    field.splice(
        7..14,
        [
            Event::Edge(pathprof_graph::EdgeId::new(0)),
            Event::Edge(pathprof_graph::EdgeId::new(3)),
            Event::Return,
        ],
    );
    let counts = ip.walk(&field).unwrap();
    assert_eq!(counts.interesting.values().sum::<u64>(), 3);
    assert_eq!(counts.uninteresting.values().sum::<u64>(), 1);
    let profile = ip.field_profile(&counts).unwrap();
    let tested_set: BTreeSet<Ips> = tested.into_iter().collect();
    let r = pathprof_graph::ippp::Residual::new(&tested_set, &profile);
    assert_eq!(r.untested_paths(), 1);
    let untested = r.untested.keys().next().unwrap();
    // p3 = f3's 0, q = f4's 1 (ENTRY L EXIT, by hand in the example's
    // numbering), p7 = f3's 1, p8 = f5's 0, p9 = f3's 2.
    let ids: Vec<(usize, u64)> = untested.iter().map(|s| (s.func.index(), s.id)).collect();
    assert_eq!(ids, [(2, 0), (3, 1), (2, 1), (4, 0), (2, 2)]);
    assert_eq!(r.percent_untested_paths(), 25.0);
    assert_eq!(r.percent_untested_flow(), 25.0);
}
