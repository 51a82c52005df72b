//! Property tests on random supergraphs (recursion, mutual recursion,
//! indirect calls, several calls per block, host callbacks, throws caught
//! up the stack, hybrid cuts):
//! the walk's counts decoded equal the observable paths the enumerator of
//! [`pathprof_graph::testing::interproc`] cuts the same execution into, by the
//! definitions alone, and Algorithms 5.1/6.1 number those paths as the walk
//! did; numbers are dense and decoding inverts numbering; the call graph's classification
//! agrees with brute-force reachability.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::vec;
use proptest::prelude::*;

use pathprof_graph::interproc::hybrid::build_within;
use pathprof_graph::interproc::{CallSiteId, Callee, Interproc, Mode, ProfiledPath, Supergraph};
use pathprof_graph::testing::interproc::{arb_supergraph, observable_paths, random_execution};
use pathprof_graph::GraphError;

fn mode(piecewise: bool) -> Mode {
    match piecewise {
        true => Mode::Piecewise,
        false => Mode::Context,
    }
}

/// Builds with the hybrid cuts `extra` (indices wrapped to the sites); `None`
/// when the paths do not fit u64 (tiny graphs rarely get there).
fn build(sg: &Supergraph, mode: Mode, extra: &[usize]) -> Option<Interproc> {
    let sites = sg.sites().len();
    let cuts: Vec<CallSiteId> = match sites {
        0 => Vec::new(),
        n => extra.iter().map(|&x| CallSiteId::new(x % n)).collect(),
    };
    match Interproc::build_with_cuts(sg, mode, &cuts) {
        Ok(ip) => Some(ip),
        Err(GraphError::PathCountOverflow { .. }) => None,
        Err(e) => panic!("a random supergraph is well formed: {e}"),
    }
}

/// Per function, the functions it reaches through one or more calls.
fn reaches(sg: &Supergraph) -> Vec<BTreeSet<usize>> {
    let n = sg.functions.len();
    let direct: Vec<BTreeSet<usize>> = sg
        .functions
        .iter()
        .map(|f| {
            f.calls
                .iter()
                .flat_map(|c| c.callee.targets())
                .map(|g| g.index())
                .collect()
        })
        .collect();
    let mut reach = direct.clone();
    // Transitive closure by iteration to a fixed point: n is tiny.
    for _ in 0..n {
        for r in reach.iter_mut() {
            let more: BTreeSet<usize> = r.iter().flat_map(|&g| direct[g].clone()).collect();
            r.extend(more);
        }
    }
    reach
}

/// Walks random executions of `sg`; decoded, their counts must be the
/// enumerator's, and Algorithms 5.1/6.1 must number each enumerated path
/// as the walk did.
fn check_runs(
    sg: &Supergraph,
    ip: &Interproc,
    piecewise: bool,
    runs: &[Vec<u32>],
) -> Result<(), TestCaseError> {
    for choices in runs {
        let events = random_execution(sg, choices, 6);
        let counts = ip.walk(&events).unwrap();
        let mut decoded: BTreeMap<ProfiledPath, u64> = BTreeMap::new();
        for (&n, &c) in &counts {
            prop_assert!(n < ip.total());
            *decoded.entry(ip.decode(n).unwrap()).or_insert(0) += c;
        }
        let want = observable_paths(sg, &ip.call_graph.cut, piecewise, &events);
        for (path, &c) in &want {
            let n = ip.path_number(path).unwrap();
            prop_assert_eq!(counts.get(&n), Some(&c));
        }
        prop_assert_eq!(decoded, want);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn decoded_walk_equals_enumerated_paths(
        sg in arb_supergraph(4, 6),
        runs in vec(vec(any::<u32>(), 0..150), 1..4),
        extra in vec(any::<usize>(), 0..2),
        piecewise in any::<bool>(),
    ) {
        let Some(ip) = build(&sg, mode(piecewise), &extra) else { return Ok(()) };
        check_runs(&sg, &ip, piecewise, &runs)?;
    }

    /// Section 8's budget on larger supergraphs: the total fits the bound,
    /// or even cutting every call site leaves more paths; the profile is
    /// still exact.
    #[test]
    fn budget_on_larger_supergraphs(
        sg in arb_supergraph(6, 8),
        runs in vec(vec(any::<u32>(), 0..200), 1..3),
        piecewise in any::<bool>(),
        bound in 1u64..3000,
    ) {
        match build_within(&sg, mode(piecewise), bound) {
            Ok(ip) => {
                prop_assert!(ip.total() <= bound);
                check_runs(&sg, &ip, piecewise, &runs)?;
            }
            // Every site cut leaves `least` paths, more than the budget.
            Err(GraphError::BudgetTooSmall { bound: b, least }) => {
                let all: Vec<CallSiteId> = (0..sg.sites().len()).map(CallSiteId::new).collect();
                let ip = Interproc::build_with_cuts(&sg, mode(piecewise), &all);
                prop_assert_eq!(b, bound);
                prop_assert!(least > bound);
                prop_assert_eq!(ip.map(|ip| ip.total()), Ok(least));
            }
            // Or more than 64 bits number, whatever is cut.
            Err(GraphError::PathCountOverflow { .. }) => {
                let all: Vec<CallSiteId> = (0..sg.sites().len()).map(CallSiteId::new).collect();
                let ip = Interproc::build_with_cuts(&sg, mode(piecewise), &all);
                let overflows = matches!(ip, Err(GraphError::PathCountOverflow { .. }));
                prop_assert!(overflows);
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn every_number_decodes_to_a_distinct_path_and_back(
        sg in arb_supergraph(3, 5),
        extra in vec(any::<usize>(), 0..2),
        piecewise in any::<bool>(),
    ) {
        let Some(ip) = build(&sg, mode(piecewise), &extra) else { return Ok(()) };
        prop_assume!(ip.total() <= 5000);
        let mut paths = BTreeSet::new();
        for n in 0..ip.total() {
            let p = ip.decode(n).unwrap();
            prop_assert_eq!(ip.path_number(&p).unwrap(), n);
            paths.insert(p);
        }
        prop_assert_eq!(paths.len() as u64, ip.total());
        prop_assert!(ip.decode(ip.total()).is_err());
    }

    #[test]
    fn call_graph_classification(sg in arb_supergraph(5, 3), extra in vec(any::<usize>(), 0..2)) {
        let Some(ip) = build(&sg, Mode::Context, &extra) else { return Ok(()) };
        let cg = &ip.call_graph;
        // Uncut direct calls go forward in callers_first: no cycle is left.
        let pos: BTreeMap<usize, usize> =
            cg.callers_first.iter().enumerate().map(|(i, f)| (f.index(), i)).collect();
        prop_assert_eq!(pos.len(), sg.functions.len());
        for (s, at) in sg.sites().iter().enumerate() {
            let callee = &sg.functions[at.func.index()].calls[at.index].callee;
            match callee {
                Callee::Indirect(_) => prop_assert!(cg.cut[s]),
                Callee::Direct(g) if !cg.cut[s] => prop_assert!(pos[&at.func.index()] < pos[&g.index()]),
                Callee::Direct(g) => prop_assert!(cg.entries.contains(g)),
            }
            // A recursive site closes a cycle.
            if cg.recursive[s] {
                let Callee::Direct(g) = callee else { unreachable!() };
                let reach = reaches(&sg);
                prop_assert!(g == &at.func || reach[g.index()].contains(&at.func.index()));
            }
        }
        // Same component iff each reaches the other.
        let reach = reaches(&sg);
        for f in 0..sg.functions.len() {
            for g in 0..sg.functions.len() {
                let mutual = f == g || (reach[f].contains(&g) && reach[g].contains(&f));
                prop_assert_eq!(cg.scc[f] == cg.scc[g], mutual, "{} {}", f, g);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The hybrid rounds' cache of local graphs (`Transformed`) gives,
    /// cut set after cut set, the numbering a fresh transform gives.
    #[test]
    fn reused_local_graphs_number_as_fresh_ones(
        sg in arb_supergraph(5, 6),
        piecewise in any::<bool>(),
        rounds in vec(vec(0usize..64, 0..4), 1..5),
    ) {
        let mode = mode(piecewise);
        let sites = sg.sites().len();
        let cache = &mut pathprof_graph::interproc::Transformed::default();
        for extra in rounds {
            let cuts: Vec<CallSiteId> = match sites {
                0 => Vec::new(),
                n => extra.iter().map(|&x| CallSiteId::new(x % n)).collect(),
            };
            let fresh = Interproc::build_with_cuts(&sg, mode, &cuts);
            let reused = Interproc::build_reusing(&sg, mode, &cuts, cache);
            prop_assert_eq!(format!("{fresh:?}"), format!("{reused:?}"));
        }
    }
}
