//! Property tests on random supergraphs and runs (recursion, indirect
//! calls, several calls per block, host callbacks): the segmenter's WPP and
//! depth-k IPS profile, decoded, equal the brute-force enumerator's.

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;

use pathprof_graph::interproc::{Event, FuncId, Supergraph};
use pathprof_graph::ippp::{
    ips_profile, Segmenter, Subpath, SubpathEnd, SubpathNumbering, SubpathRef,
};
use pathprof_graph::testing::interproc::{arb_supergraph, random_execution};
use pathprof_graph::testing::ippp::{ips, wpp, Spelt};

/// Random supergraphs with no cases: interprocedural PPP resolves
/// indirect calls its own way, and a call's cases left in are calls of
/// their own one after the other. Tail calls, throws and handlers stay.
pub fn arb_plain_supergraph() -> impl Strategy<Value = Supergraph> {
    arb_supergraph(4, 6).prop_map(|mut sg| {
        for f in &mut sg.functions {
            f.cases.clear();
        }
        sg
    })
}

/// Subpath `r` spelt out as the oracle spells it: a backedge's source is
/// named by its original block, not its split segment.
pub fn spell(num: &SubpathNumbering, r: SubpathRef) -> (FuncId, Subpath) {
    let mut p = num.decode(r).unwrap();
    if let SubpathEnd::Backedge(n) = p.end {
        p.end = SubpathEnd::Backedge(num.functions[r.func.index()].split.block_of[n.index()]);
    }
    (r.func, p)
}

pub fn spelt_profile(
    num: &SubpathNumbering,
    profile: &BTreeMap<Vec<SubpathRef>, u64>,
) -> BTreeMap<Spelt, u64> {
    profile
        .iter()
        .map(|(seg, &c)| (seg.iter().map(|&r| spell(num, r)).collect(), c))
        .collect()
}

fn check(sg: &Supergraph, events: &[Event]) -> Result<(), TestCaseError> {
    let num = SubpathNumbering::new(sg).unwrap();
    let oracle_wpp = wpp(sg, events);
    let mut seg = Segmenter::new(&num, 1);
    let ours: Vec<(FuncId, Subpath)> = events
        .iter()
        .filter_map(|&e| seg.step(e).unwrap().subpath)
        .map(|r| spell(&num, r))
        .collect();
    let theirs: Vec<(FuncId, Subpath)> = oracle_wpp
        .iter()
        .map(|d| (d.func, d.subpath.clone()))
        .collect();
    prop_assert_eq!(ours, theirs);
    for k in 1..=3 {
        let profile = ips_profile(&num, k, events).unwrap();
        prop_assert_eq!(
            spelt_profile(&num, &profile),
            ips(&oracle_wpp, k),
            "k = {}",
            k
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn segments_match_brute_force(
        sg in arb_plain_supergraph(),
        choices in vec(any::<u32>(), 0..300),
    ) {
        let events = random_execution(&sg, &choices, 6);
        check(&sg, &events)?;
    }
}

/// The same on the report's example program (Fig. 4: a loop calling
/// `pow`, whose loop runs twice per call).
#[test]
fn figure4_segments_match_brute_force() {
    let sg = pathprof_graph::testing::interproc::figure4();
    let events = pathprof_graph::testing::interproc::figure4_execution();
    check(&sg, &events).unwrap();
    let num = SubpathNumbering::new(&sg).unwrap();
    let profile = ips_profile(&num, 1, &events).unwrap();
    // main calls pow 9 times from v6 and 6 times from v10; each call's
    // segment is main's subpath to the call and pow's first, which ends at
    // pow's backedge (exp = 2 > 0): 15 segments.
    assert_eq!(profile.values().sum::<u64>(), 15);
}
