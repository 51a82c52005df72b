//! Proof that preferential path profiling counts and classifies exactly, and
//! that residual path profiling finds exactly the untested paths.
//!
//! For pairs of runs of one C program (a "test" input and a "field" input),
//! the test run's Ball-Larus profile is the SPEC of interesting paths, and the
//! field input runs under PPP with each policy. The oracle is the trace of
//! each run (crates/cli/tests/common/oracle.rs, which shares only the CFG with
//! the code under test): the interesting paths are the test trace's paths, and
//! every count must equal the field trace's.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::oracle::{self, Counts, PathKey};
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_profile::{FunctionData, Profile};
use pathprof_techniques::ppp::Policy;

thread_local! {
    /// How often each numbering was chosen, and PPP beat Ball-Larus.
    static SCHEMES: std::cell::RefCell<BTreeMap<String, usize>> = Default::default();
}

/// The oracle's counts of one run.
fn traced(
    engine: &wasmtime::Engine,
    module: &[u8],
    inv: &Invocation,
    graphs_of: &Profile,
) -> Counts {
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default()).unwrap();
    let trace = programs::run(engine, &traced.bytes, inv, true).trace;
    oracle::count(&trace, &programs::graphs_cut_as(module, graphs_of))
}

/// PPP options whose interesting paths are those of `spec`, read back from a
/// file as `--interesting` reads it.
fn ppp_options(module: &[u8], spec: &Profile, policy: Policy) -> driver::Options {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.json");
    spec.write(&path).unwrap();
    let info = pathprof_wasm::analyze(module).unwrap();
    let mut opts = driver::Options::default();
    opts.ppp.interesting =
        pathprof::interesting::read_specs(&[path], &info, opts.ball_larus.truncate_above).unwrap();
    opts.ppp.policy = policy;
    opts
}

/// The regenerated keys of every function's interesting paths.
fn interesting_keys(profile: &Profile) -> BTreeSet<PathKey> {
    let mut out = BTreeSet::new();
    for f in &profile.functions {
        let FunctionData::Path {
            numbered,
            ppp: Some(info),
            ..
        } = &f.data
        else {
            panic!("not a PPP profile")
        };
        let (dag, numbering) = numbered.to_dag();
        for &id in &info.interesting {
            let p = numbered
                .regenerate(&dag, &numbering, id, |e| f.edges[e.index()].kind == "Catch")
                .unwrap();
            out.insert(PathKey {
                func: f.func_index,
                kind: pathprof::report::PathKind::of(&p).to_string(),
                blocks: p.blocks.iter().map(|b| b.index() as u32).collect(),
            });
        }
    }
    out
}

/// Per function, the `uninteresting` counter of a `count` profile.
fn uninteresting_counts(profile: &Profile) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for f in &profile.functions {
        if let FunctionData::Path {
            ppp: Some(info), ..
        } = &f.data
        {
            if info.uninteresting > 0 {
                out.insert(f.func_index, info.uninteresting);
            }
        }
    }
    out
}

fn split(
    field: &Counts,
    tested: &BTreeSet<PathKey>,
) -> (BTreeMap<PathKey, u64>, BTreeMap<u32, u64>) {
    let mut kept = BTreeMap::new();
    let mut others: BTreeMap<u32, u64> = BTreeMap::new();
    for (k, &c) in &field.paths {
        if tested.contains(k) {
            kept.insert(k.clone(), c);
        } else {
            *others.entry(k.func).or_default() += c;
        }
    }
    (kept, others)
}

/// Checks one (test, field) pair under every policy; returns how many field
/// paths were untested and how many tested, so callers can assert both
/// classes occur.
fn check_pair(
    engine: &wasmtime::Engine,
    name: &str,
    module: &[u8],
    test: &Invocation,
    field: &Invocation,
    force_ball_larus: bool,
    array_max: u64,
) -> (usize, usize) {
    let plain = programs::run(engine, module, field, false);
    let (_, test_profile) = programs::profiled_run(
        engine,
        module,
        Technique::Path,
        &driver::Options::default(),
        test,
    );
    let tested: BTreeSet<PathKey> = traced(engine, module, test, &test_profile)
        .paths
        .into_keys()
        .collect();
    let expected = traced(engine, module, field, &test_profile);
    let what = format!("{name} test {test:?} field {field:?}");

    // record: every path counted exactly, the interesting set is the test run's.
    let mut opts = ppp_options(module, &test_profile, Policy::Record);
    opts.ppp.force_ball_larus = force_ball_larus;
    tables_everywhere_if_zero(&mut opts, array_max);
    let (out, profile) = programs::profiled_run(engine, module, Technique::Ppp, &opts, field);
    assert_eq!(
        (out.exit.clone(), &out.stdout),
        (plain.exit.clone(), &plain.stdout),
        "{what}: run differs"
    );
    assert_eq!(
        interesting_keys(&profile),
        tested,
        "{what}: interesting set"
    );
    for f in &profile.functions {
        if let FunctionData::Path {
            ppp: Some(info), ..
        } = &f.data
        {
            if !info.interesting.is_empty() {
                let kind = if info.recorded {
                    "recorded".into()
                } else {
                    format!("{:?}", info.numbering)
                };
                SCHEMES.with(|s| *s.borrow_mut().entry(kind).or_insert(0) += 1);
                assert!(
                    info.delta <= info.ball_larus_delta,
                    "{what}: PPP less compact than Ball-Larus"
                );
                if info.delta < info.ball_larus_delta {
                    SCHEMES
                        .with(|s| *s.borrow_mut().entry("more compact".into()).or_insert(0) += 1);
                }
            }
        }
    }
    let got = programs::path_counts(&profile);
    assert_eq!(got.paths, expected.paths, "{what}: record counts");
    assert_eq!(got.self_loops, expected.self_loops, "{what}: self loops");

    // Residual: the untested paths are the field's paths the test never ran.
    let r =
        pathprof::residual::residual(&profile, "field.json".as_ref(), &[], &[] as &[&str]).unwrap();
    let untested: BTreeMap<PathKey, u64> = expected
        .paths
        .iter()
        .filter(|(k, _)| !tested.contains(k))
        .map(|(k, &c)| (k.clone(), c))
        .collect();
    let reported: BTreeMap<PathKey, u64> = r
        .paths
        .iter()
        .map(|p| {
            let key = PathKey {
                func: p.func_index,
                kind: p.kind.to_string(),
                blocks: p.blocks.iter().map(|b| b.block.index() as u32).collect(),
            };
            (key, p.count)
        })
        .collect();
    assert_eq!(reported, untested, "{what}: residual paths");
    assert_eq!(
        r.summary.untested_executions - r.self_loops.iter().map(|l| l.iterations).sum::<u64>(),
        untested.values().sum::<u64>()
    );

    // count and ignore: interesting paths exact, the others one sum or nothing.
    let (kept, others) = split(&expected, &tested);
    for policy in [Policy::Count, Policy::Ignore] {
        let mut opts = ppp_options(module, &test_profile, policy);
        opts.ppp.force_ball_larus = force_ball_larus;
        tables_everywhere_if_zero(&mut opts, array_max);
        let (out, profile) = programs::profiled_run(engine, module, Technique::Ppp, &opts, field);
        assert_eq!(out.stdout, plain.stdout, "{what}: {policy} output");
        assert_eq!(
            programs::path_counts(&profile).paths,
            kept,
            "{what}: {policy} counts"
        );
        let expected_others = if policy == Policy::Count {
            others.clone()
        } else {
            BTreeMap::new()
        };
        assert_eq!(
            uninteresting_counts(&profile),
            expected_others,
            "{what}: {policy} uninteresting"
        );
    }
    (untested.len(), kept.len())
}

#[test]
fn ppp_counts_and_classifies_exactly_and_residual_is_the_untested_set() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let cases = programs::c_cases();
    let (mut untested, mut tested, mut pairs) = (0, 0, 0);
    for name in ["sort", "interp", "strproc", "recurse", "fnptr"] {
        let runs: Vec<&Invocation> = cases
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, i)| i)
            .collect();
        for opt in ["O0", "O2"] {
            let module = std::fs::read(build.join(format!("{name}.{opt}.wasm")))
                .expect("run scripts/build-c-fixtures.sh");
            // The first pair with the default options (PPP tables only where
            // Ball-Larus would hash), the others with tables in every
            // function, the last also with the Ball-Larus numbering as the
            // PPP one (one register), which real programs rarely need.
            let default_max = pathprof_techniques::ball_larus::Options::default().array_max;
            for (i, pair) in runs.windows(2).take(3).enumerate() {
                let array_max = if i == 0 { default_max } else { 0 };
                let (u, t) = check_pair(
                    &engine,
                    &format!("{name}.{opt}"),
                    &module,
                    pair[0],
                    pair[1],
                    i == 2,
                    array_max,
                );
                untested += u;
                tested += t;
                pairs += 1;
            }
        }
    }
    assert!(pairs >= 24, "only {pairs} pairs");
    let schemes = SCHEMES.with(|s| s.borrow().clone());
    // A PPP table, a Ball-Larus-numbered table, recorded functions (few
    // paths, or a table too large to keep: classified when decoding), and
    // PPP strictly more compact than Ball-Larus.
    for k in ["Ppp", "BallLarus", "recorded", "more compact"] {
        assert!(
            schemes.get(k).copied().unwrap_or(0) > 0,
            "{k} never occurs: {schemes:?}"
        );
    }
    assert!(
        untested > 50 && tested > 200,
        "untested {untested}, tested {tested}: both classes must occur"
    );
}

/// Residual path profiling against two plain Ball-Larus profiles: the
/// residual set is exactly their set difference (computed here from the
/// profiles' own path numbers, with counts from the field profile).
#[test]
fn residual_of_plain_profiles_is_their_set_difference() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let cases = programs::c_cases();
    let runs: Vec<&Invocation> = cases
        .iter()
        .filter(|(n, _)| n == "interp")
        .map(|(_, i)| i)
        .collect();
    let module =
        std::fs::read(build.join("interp.O2.wasm")).expect("run scripts/build-c-fixtures.sh");
    let opts = driver::Options::default();
    let (_, test) = programs::profiled_run(&engine, &module, Technique::Path, &opts, runs[0]);
    let (_, field) = programs::profiled_run(&engine, &module, Technique::Path, &opts, runs[1]);
    let ids = |p: &Profile| -> BTreeMap<(u32, u64), u64> {
        p.functions
            .iter()
            .flat_map(|f| {
                let FunctionData::Path { counts, .. } = &f.data else {
                    unreachable!()
                };
                counts
                    .paths
                    .iter()
                    .map(move |&(id, c)| ((f.func_index, id), c))
            })
            .collect()
    };
    let (t, f) = (ids(&test), ids(&field));
    let difference: BTreeMap<(u32, u64), u64> = f
        .iter()
        .filter(|(k, _)| !t.contains_key(k))
        .map(|(k, &c)| (*k, c))
        .collect();
    assert!(!difference.is_empty(), "the field input runs no new path");
    let r = pathprof::residual::residual(&field, "field.json".as_ref(), &[test], &["test.json"])
        .unwrap();
    let got: BTreeMap<(u32, u64), u64> = r
        .paths
        .iter()
        .map(|p| ((p.func_index, p.path), p.count))
        .collect();
    assert_eq!(got, difference);
    assert_eq!(
        r.summary.untested_paths as usize,
        difference.len() + r.self_loops.len()
    );
    assert_eq!(
        r.summary.executed_paths as usize,
        f.len() + programs::path_counts(&field).self_loops.len()
    );
}

/// `array_max` 0: no function counts in an array, not even from the budget
/// for large arrays, so PPP tables are used in every function.
fn tables_everywhere_if_zero(opts: &mut driver::Options, array_max: u64) {
    opts.ball_larus.array_max = array_max;
    if array_max == 0 {
        opts.ball_larus.array_budget = 0;
    }
}
