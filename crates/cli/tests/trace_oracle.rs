//! Proof that the counts are exact: every fixture program (WAT fixtures that
//! cover every control instruction, C programs at -O0 and -O2) is run
//! uninstrumented, with the trace instrumentation, with Ball-Larus path
//! profiling and with edge profiling. The path, self-loop and edge counts
//! recomputed from the trace alone must equal the profiles exactly, and the
//! program's output, results and exit must be the same in every run.

use crate::common;

use common::oracle;
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_runner::{Exit, TraceTo};
use std::sync::{Arc, Mutex};

/// Runs `inv` four ways and checks everything agrees. Returns how many paths
/// the run executed, so callers can assert the fixtures are not trivial.
pub(crate) fn check(
    engine: &wasmtime::Engine,
    name: &str,
    module: &[u8],
    inv: &Invocation,
) -> usize {
    let plain = programs::run(engine, module, inv, false);

    let (p, profile) = programs::profiled_run(
        engine,
        module,
        Technique::Path,
        &driver::Options::default(),
        inv,
    );
    assert_same(name, inv, &plain, &p, "path");

    // The oracle counts the traced run's events as they come (the run's
    // stream is never stored), with the profile's truncation cuts.
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default())
        .expect("trace instrument");
    let sink = Arc::new(Mutex::new(oracle::CountingSink::new(
        programs::graphs_cut_as(module, &profile),
    )));
    let t = programs::run_to(engine, &traced.bytes, inv, Some(TraceTo::new(sink.clone())));
    assert_same(name, inv, &plain, &t, "trace");
    let expected = std::mem::take(&mut sink.lock().unwrap().counter.counts);
    let got = programs::path_counts(&profile);
    assert_counts(
        &got.paths,
        &expected.paths,
        &format!("{name} {inv:?}: path counts differ from the trace"),
    );
    assert_counts(
        &got.self_loops,
        &expected.self_loops,
        &format!("{name} {inv:?}: self-loop counts differ"),
    );

    let (e, profile) = programs::profiled_run(
        engine,
        module,
        Technique::Edge,
        &driver::Options::default(),
        inv,
    );
    assert_same(name, inv, &plain, &e, "edge");
    assert_counts(
        &programs::edge_counts(&profile),
        &expected.edges,
        &format!("{name} {inv:?}: edge counts differ"),
    );
    expected.paths.len()
}

/// Asserts two count maps are equal, showing only the entries that differ.
fn assert_counts<K: Ord + std::fmt::Debug>(
    got: &std::collections::BTreeMap<K, u64>,
    expected: &std::collections::BTreeMap<K, u64>,
    what: &str,
) {
    let diff = oracle::differences(got, expected);
    assert!(diff.is_empty(), "{what}:\n{}", diff.join("\n"));
}

fn assert_same(
    name: &str,
    inv: &Invocation,
    a: &programs::Outcome,
    b: &programs::Outcome,
    what: &str,
) {
    assert_eq!(
        a.exit, b.exit,
        "{name} {inv:?}: exit differs under {what} instrumentation"
    );
    assert_eq!(
        a.stdout, b.stdout,
        "{name} {inv:?}: stdout differs under {what} instrumentation"
    );
    assert_eq!(
        a.results, b.results,
        "{name} {inv:?}: results differ under {what} instrumentation"
    );
}

#[test]
fn wat_fixtures_counts_equal_trace() {
    let engine = crate::common::programs::engine();
    let fixtures = programs::wat_fixtures();
    let mut checked = 0;
    for path in fixtures.iter() {
        let module = pathprof::input::read_module(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        if programs::needs_host_imports(&engine, &module) {
            continue; // exercised by the wasm crate's tests, which provide them
        }
        for inv in programs::export_calls(&engine, &module) {
            check(&engine, &name, &module, &inv);
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} fixture calls were checked");
}

#[test]
fn c_programs_counts_equal_trace() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut runs = 0;
    let mut abrupt = 0;
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let path = build.join(format!("{name}.{opt}.wasm"));
            let module = std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (run scripts/build-c-fixtures.sh first)",
                    path.display()
                )
            });
            let paths = check(&engine, &format!("{name}.{opt}"), &module, &inv);
            assert!(paths > 0, "{name}.{opt} {inv:?} executed no path");
            let plain = programs::run(&engine, &module, &inv, false);
            abrupt += usize::from(!matches!(plain.exit, Exit::Returned));
            runs += 1;
        }
    }
    assert!(runs >= 60, "only {runs} C runs were checked");
    assert!(
        abrupt > 0,
        "no C case ends abruptly (exit() deep in a call chain)"
    );
}

/// Every function's paths counted in an in-module hash table (none in
/// arrays): the counts must still equal the trace's. Then tables of two
/// entries, which overflow into tables grown from the memory: still every
/// count exact, nothing lost.
#[test]
fn hash_tables_count_exactly_even_when_they_overflow() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut overflowed = false;
    for (name, inv) in programs::c_cases()
        .into_iter()
        .filter(|(n, _)| n == "interp" || n == "sort")
    {
        let module = std::fs::read(build.join(format!("{name}.O2.wasm")))
            .expect("run scripts/build-c-fixtures.sh");
        let traced =
            driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
        let trace = programs::run(&engine, &traced.bytes, &inv, true).trace;

        let mut opts = driver::Options::default();
        opts.ball_larus.array_max = 0;
        opts.ball_larus.array_budget = 0;
        for capacity in [opts.ball_larus.hash_capacity, 2] {
            opts.ball_larus.hash_capacity = capacity;
            let (_, profile) =
                programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
            let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
            assert_counts(
                &programs::path_counts(&profile).paths,
                &expected.paths,
                &format!("{name} {inv:?}: counts in hash tables of {capacity}"),
            );
            for f in &profile.functions {
                let pathprof_profile::FunctionData::Path { counts, .. } = &f.data else {
                    unreachable!()
                };
                assert_eq!(counts.lost, 0, "{name} {inv:?} {}", f.display_name());
                overflowed |= counts.paths.len() > capacity as usize;
            }
        }
    }
    assert!(overflowed, "no table of two entries ever overflowed");
}

/// The array budget: functions of more paths than `array_max` count in an
/// array while the budget lasts, in function order, and hash after that.
/// The expected choice is worked out here from the functions' path counts;
/// the counts of both kinds must equal the trace's.
#[test]
fn array_budget_goes_in_function_order_and_counts_stay_exact() {
    let engine = crate::common::programs::engine();
    let (module, inv) = interp();
    let name = "interp";
    let mut opts = driver::Options::default();
    opts.ball_larus.array_max = 4;
    opts.ball_larus.array_budget = 0;
    let (_, hashed) = programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
    // Paths per function, in function order. The budget holds the largest
    // array below 2^16 paths alone, so the order decides: what smaller
    // functions before it take leaves too little for it. (Functions of
    // millions of paths would not fit in a 32-bit memory.)
    let totals = path_totals(&hashed);
    let largest = totals
        .iter()
        .map(|t| t.1)
        .filter(|&t| t <= 1 << 16)
        .max()
        .unwrap();
    opts.ball_larus.array_budget = 8 * largest;
    let mut left = 8 * largest;
    let mut expected = std::collections::BTreeMap::new();
    for &(f, total) in &totals {
        let array = total <= 4 || 8 * total <= left;
        if total > 4 && array {
            left -= 8 * total;
        }
        expected.insert(f, array);
    }

    let inst = driver::instrument(&module, Technique::Path, &opts).unwrap();
    let got: std::collections::BTreeMap<u32, bool> = inst
        .meta()
        .unwrap()
        .layout
        .functions
        .iter()
        .map(|f| {
            let array = matches!(f.paths, pathprof_techniques::PathTable::Array { .. });
            (f.func_index, array)
        })
        .collect();
    assert_eq!(got, expected, "which functions count in arrays");
    let large_arrays = totals.iter().filter(|t| t.1 > 4 && expected[&t.0]).count();
    let large_hashed = totals.iter().filter(|t| t.1 > 4 && !expected[&t.0]).count();
    assert!(
        large_arrays > 0 && large_hashed > 0,
        "{large_arrays} large arrays, {large_hashed} hashed: the budget did not split them"
    );

    let traced =
        driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
    let trace = programs::run(&engine, &traced.bytes, &inv, true).trace;
    let (_, profile) = programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
    let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
    assert_counts(
        &programs::path_counts(&profile).paths,
        &expected.paths,
        &format!("{name} {inv:?}: counts with an array budget"),
    );
}

/// The interp fixture at -O2 and its case.
fn interp() -> (Vec<u8>, programs::Invocation) {
    let module = interp_built("O2");
    let (_, inv) = programs::c_cases()
        .into_iter()
        .find(|(n, _)| n == "interp")
        .unwrap();
    (module, inv)
}

/// The interp fixture's path profile under `opts`, and the trace's counts
/// with its cuts.
fn interp_counts(
    engine: &wasmtime::Engine,
    opts: &driver::Options,
) -> (oracle::Counts, oracle::Counts) {
    let (module, inv) = interp();
    let traced =
        driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
    let trace = programs::run(engine, &traced.bytes, &inv, true).trace;
    let (_, profile) = programs::profiled_run(engine, &module, Technique::Path, opts, &inv);
    let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
    (programs::path_counts(&profile), expected)
}

/// Paths per function of a path profile, in function order.
fn path_totals(profile: &pathprof_profile::Profile) -> Vec<(u32, u64)> {
    profile
        .functions
        .iter()
        .filter_map(|f| match &f.data {
            pathprof_profile::FunctionData::Path { numbered, .. } => {
                Some((f.func_index, numbered.total))
            }
            _ => None,
        })
        .collect()
}

/// A module whose arrays would pass `array_memory_max`: the functions get
/// arrays in function order while the memory lasts, and small hash tables
/// after it (which grow as they fill). The choice is worked out here from
/// the functions' path counts; the counts must equal the trace's.
#[test]
fn array_memory_goes_in_function_order_then_small_hash_tables() {
    use pathprof_techniques::ball_larus::SPILL_HASH_CAPACITY;
    use pathprof_techniques::PathTable;
    let engine = crate::common::programs::engine();
    let (module, inv) = interp();
    let mut opts = driver::Options::default();
    let (_, all_arrays) = programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
    let totals = path_totals(&all_arrays);
    let all: u64 = totals.iter().map(|t| 8 * t.1).sum();
    opts.ball_larus.array_memory_max = all / 2;
    let mut left = all / 2;
    let mut expected = std::collections::BTreeMap::new();
    for &(f, total) in &totals {
        let table = if 8 * total <= left {
            left -= 8 * total;
            PathTable::Array { len: total }
        } else {
            PathTable::Hash {
                capacity: SPILL_HASH_CAPACITY,
            }
        };
        expected.insert(f, table);
    }
    let inst = driver::instrument(&module, Technique::Path, &opts).unwrap();
    let got: std::collections::BTreeMap<u32, PathTable> = inst
        .meta()
        .unwrap()
        .layout
        .functions
        .iter()
        .map(|f| (f.func_index, f.paths))
        .collect();
    assert_eq!(got, expected, "each function's path table");
    let hashed: Vec<u32> = totals
        .iter()
        .filter(|t| matches!(expected[&t.0], PathTable::Hash { .. }))
        .map(|t| t.0)
        .collect();
    assert!(!hashed.is_empty() && hashed.len() < totals.len());

    // Tables of two entries, so that those of the functions that run grow.
    opts.ball_larus.hash_capacity = 2;
    let (got, expected) = interp_counts(&engine, &opts);
    assert_counts(
        &got.paths,
        &expected.paths,
        "interp: counts past the array memory",
    );
    let most = hashed
        .iter()
        .map(|&f| got.paths.keys().filter(|k| k.func == f).count())
        .max();
    assert!(
        most > Some(2),
        "at most {most:?} paths ran in a hashed function: no table grew"
    );
}

/// Hash tables take their memory from `array_memory_max` as arrays do
/// (`--truncate-above` past the array limit makes every large function
/// hash): with every function hashing (`array_max` 0) and memory for two
/// and a half tables, the first two get tables of `hash_capacity`, the
/// others small ones; the counts must equal the trace's.
#[test]
fn hash_tables_draw_on_the_array_memory_too() {
    use pathprof_techniques::ball_larus::SPILL_HASH_CAPACITY;
    use pathprof_techniques::PathTable;
    let engine = crate::common::programs::engine();
    let (module, _) = interp();
    let mut opts = driver::Options::default();
    opts.ball_larus.array_max = 0;
    let full = PathTable::Hash {
        capacity: opts.ball_larus.hash_capacity,
    };
    opts.ball_larus.array_memory_max = (full.bytes() * 5 / 2) as u64;
    let inst = driver::instrument(&module, Technique::Path, &opts).unwrap();
    let tables: Vec<PathTable> = inst
        .meta()
        .unwrap()
        .layout
        .functions
        .iter()
        .map(|f| f.paths)
        .collect();
    let small = PathTable::Hash {
        capacity: SPILL_HASH_CAPACITY,
    };
    let expected: Vec<PathTable> = (0..tables.len())
        .map(|i| if i < 2 { full } else { small })
        .collect();
    assert_eq!(tables, expected);
    assert!(tables.len() > 4);

    let (got, expected) = interp_counts(&engine, &opts);
    assert_counts(
        &got.paths,
        &expected.paths,
        "interp: hashed past the memory",
    );
    assert_counts(&got.self_loops, &expected.self_loops, "interp: self loops");
}

/// Truncation (5.3) at a low threshold cuts paths in many functions; the
/// counts must still equal the trace's, cut exactly where the profile says.
#[test]
fn truncated_paths_count_exactly() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut cuts = 0;
    for (name, inv) in programs::c_cases()
        .into_iter()
        .filter(|(n, _)| n == "interp" || n == "strproc")
    {
        for opt in ["O0", "O2"] {
            let module = std::fs::read(build.join(format!("{name}.{opt}.wasm")))
                .expect("run scripts/build-c-fixtures.sh");
            let mut opts = driver::Options::default();
            opts.ball_larus.truncate_above = 8;
            let (_, profile) =
                programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
            let graphs = programs::graphs_cut_as(&module, &profile);
            for f in &profile.functions {
                let pathprof_profile::FunctionData::Path { numbered, .. } = &f.data else {
                    unreachable!()
                };
                cuts += numbered.cut_nodes.len();
            }
            let traced =
                driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
            let expected = oracle::count(
                &programs::run(&engine, &traced.bytes, &inv, true).trace,
                &graphs,
            );
            assert_counts(
                &programs::path_counts(&profile).paths,
                &expected.paths,
                &format!("{name}.{opt} {inv:?}: truncated counts"),
            );
        }
    }
    assert!(cuts > 10, "only {cuts} cuts: the threshold did not bite");
}

/// `--weights`: an edge profile of a run weights the spanning trees of a
/// later path run. The plan must change (the weights choose other chords)
/// and the counts must stay exact.
#[test]
fn weights_from_a_prior_profile_keep_counts_exact() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let module =
        std::fs::read(build.join("interp.O2.wasm")).expect("run scripts/build-c-fixtures.sh");
    let cases: Vec<_> = programs::c_cases()
        .into_iter()
        .filter(|(n, _)| n == "interp")
        .take(4)
        .collect();
    let (_, train) = programs::profiled_run(
        &engine,
        &module,
        Technique::Edge,
        &driver::Options::default(),
        &cases[0].1,
    );
    let weighted = driver::Options {
        weights: Some(train),
        ..driver::Options::default()
    };
    let plain = driver::instrument(&module, Technique::Path, &driver::Options::default()).unwrap();
    let with = driver::instrument(&module, Technique::Path, &weighted).unwrap();
    assert_ne!(
        plain.bytes, with.bytes,
        "the weights changed no spanning tree"
    );
    for (name, inv) in &cases {
        let traced =
            driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
        let trace = programs::run(&engine, &traced.bytes, inv, true).trace;
        let (_, profile) =
            programs::profiled_run(&engine, &module, Technique::Path, &weighted, inv);
        let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
        assert_counts(
            &programs::path_counts(&profile).paths,
            &expected.paths,
            &format!("{name} {inv:?}: weighted"),
        );
    }
}

/// Of a profile's path executions, those that start or end at a truncation
/// cut, all of them, and the functions with such executions.
fn cut_executions(profile: &pathprof_profile::Profile) -> (u64, u64, usize) {
    let paths = pathprof::report::hot_paths(profile, None).unwrap();
    let cut: Vec<_> = paths
        .iter()
        .filter(|p| p.kind.to_string().contains("cut"))
        .collect();
    let functions: std::collections::BTreeSet<u32> = cut.iter().map(|p| p.func_index).collect();
    (
        cut.iter().map(|p| p.count).sum(),
        paths.iter().map(|p| p.count).sum(),
        functions.len(),
    )
}

/// The interpreter fixture's first three inputs.
fn interp_cases() -> Vec<(String, programs::Invocation)> {
    let all = programs::c_cases().into_iter();
    all.filter(|(n, _)| n == "interp").take(3).collect()
}

/// The interpreter fixture built at `opt`.
fn interp_built(opt: &str) -> Vec<u8> {
    let build = programs::root().join("tests/fixtures/c/build");
    std::fs::read(build.join(format!("interp.{opt}.wasm")))
        .expect("run scripts/build-c-fixtures.sh")
}

/// Options truncating at 1024 paths a function, without and with the
/// weights of an edge profile of a run of `inv`.
fn truncated_at_1024(
    engine: &wasmtime::Engine,
    module: &[u8],
    inv: &programs::Invocation,
) -> (driver::Options, driver::Options) {
    let mut plain = driver::Options::default();
    plain.ball_larus.truncate_above = 1024;
    let train = programs::profiled_run(engine, module, Technique::Edge, &plain, inv);
    let weighted = driver::Options {
        weights: Some(train.1),
        ..plain.clone()
    };
    (plain, weighted)
}

/// `--weights` also guides truncation (5.3): the cuts go to blocks that did
/// not run in the prior profile where that fits, else to the coldest tier
/// that fits (docs/decisions.md#guided-truncation). The interpreter fixture
/// truncated at 1024 paths a function, where the unguided cuts split most
/// path executions: the counts equal the trace's either way; the guided
/// profile cuts fewer executions on every input, and on the input it was
/// trained on leaves fewer functions with a path cut.
#[test]
fn weights_guide_truncation_to_blocks_that_did_not_run() {
    let engine = crate::common::programs::engine();
    let cases = interp_cases();
    for opt in ["O0", "O2"] {
        let module = interp_built(opt);
        let (plain, weighted) = truncated_at_1024(&engine, &module, &cases[0].1);
        let traced =
            driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
        for (i, (_, inv)) in cases.iter().enumerate() {
            let trace = programs::run(&engine, &traced.bytes, inv, true).trace;
            let mut cut = Vec::new();
            for opts in [&plain, &weighted] {
                let (_, profile) =
                    programs::profiled_run(&engine, &module, Technique::Path, opts, inv);
                let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
                assert_counts(
                    &programs::path_counts(&profile).paths,
                    &expected.paths,
                    &format!("interp.{opt} {inv:?}: guided truncation"),
                );
                cut.push(cut_executions(&profile));
            }
            let [(unguided, total, fu), (guided, _, fg)] = cut[..] else {
                unreachable!()
            };
            eprintln!(
                "interp.{opt} {inv:?}: {unguided} (in {fu} functions) then {guided} (in {fg}) \
                 of {total} executions cut"
            );
            assert!(
                unguided * 2 > total,
                "interp.{opt}: the threshold did not bite"
            );
            assert!(
                guided < unguided,
                "interp.{opt} {inv:?}: {guided} >= {unguided}"
            );
            if i == 0 {
                assert!(
                    fg < fu,
                    "interp.{opt}: cuts in {fg} functions, unguided {fu}"
                );
            }
        }
    }
}

/// PPP takes its interesting paths from a path profile guided by weights:
/// the interpreter fixture truncated at 1024 paths a function, where the
/// guided cuts differ from the threshold's, is planned with the profile's
/// cuts (it was refused as "numbered differently" before), and its counts
/// equal the trace's, on the training input (every path that ran is
/// interesting) and on the others (whose new paths are recorded).
#[test]
fn ppp_counts_the_paths_of_a_profile_truncated_by_weights() {
    let engine = crate::common::programs::engine();
    let cases = interp_cases();
    let dir = tempfile::tempdir().unwrap();
    let module = interp_built("O2");
    let (plain, weighted) = truncated_at_1024(&engine, &module, &cases[0].1);
    let (_, guided) =
        programs::profiled_run(&engine, &module, Technique::Path, &weighted, &cases[0].1);
    let spec = dir.path().join("guided.json");
    guided.write(&spec).unwrap();
    let info = pathprof_wasm::analyze(&module).unwrap();
    let interesting = pathprof::interesting::read_specs(&[&spec], &info, 1024).unwrap();
    assert!(
        !interesting.cuts.is_empty(),
        "the weights cut no function elsewhere"
    );
    let mut ppp = plain.clone();
    ppp.ppp.interesting = interesting;
    let traced =
        driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
    for (i, (_, inv)) in cases.iter().enumerate() {
        let trace = programs::run(&engine, &traced.bytes, inv, true).trace;
        let (_, profile) = programs::profiled_run(&engine, &module, Technique::Ppp, &ppp, inv);
        // On the training input, every path that ran is interesting: the
        // ids name the guided numbering's paths.
        let others: u64 = (profile.functions.iter())
            .filter_map(|f| match &f.data {
                pathprof_profile::FunctionData::Path {
                    ppp: Some(info), ..
                } => Some(info.uninteresting),
                _ => None,
            })
            .sum();
        assert!(
            i > 0 || others == 0,
            "{others} training executions not interesting"
        );
        let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
        // The others are recorded (the default policy): exact too.
        let got = programs::path_counts(&profile).paths;
        assert_counts(&got, &expected.paths, &format!("interp.O2 {inv:?}: ppp"));
    }
}

/// The fixture of peeled loops is peeled: its path-mode module with peeling
/// differs from, and is larger than, the one without (the counts of both
/// equal the trace's, `wat_fixtures_counts_equal_trace`).
#[test]
fn peeled_loops_fixture_is_peeled() {
    let path = programs::root().join("tests/fixtures/wat/peeled_loops.wat");
    let module = pathprof::input::read_module(&path).unwrap();
    let peeled = driver::instrument(&module, Technique::Path, &driver::Options::default()).unwrap();
    let plain = driver::instrument(
        &module,
        Technique::Path,
        &driver::Options {
            peel_max_bytes: 0,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        peeled.bytes.len() > plain.bytes.len(),
        "peeling left the fixture as it was ({} against {} bytes)",
        peeled.bytes.len(),
        plain.bytes.len()
    );
}

/// Edge counts derived from a path profile (`report::edge_counts_exact`)
/// with paths cut short nearly everywhere (truncation at 4 paths): a cut
/// edge or backedge ends one path and starts the next, and the profile
/// settles such an edge from what ended at its source and started at its
/// target. Every edge it calls exact, real, self loop, backedge or cut, must
/// equal the trace's count; the guesses must keep the totals. Runs that
/// return only: see below.
#[test]
fn edge_counts_of_truncated_path_profiles_equal_the_trace() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let (mut settled_boundary, mut guessed) = (0, 0);
    for (name, inv) in programs::c_cases() {
        let module = std::fs::read(build.join(format!("{name}.O2.wasm")))
            .expect("run scripts/build-c-fixtures.sh");
        // A run that ends abruptly leaves paths in flight, which a path
        // profile does not count but the trace does.
        if !matches!(
            programs::run(&engine, &module, &inv, false).exit,
            Exit::Returned
        ) {
            continue;
        }
        let traced =
            driver::instrument(&module, Technique::Trace, &driver::Options::default()).unwrap();
        let trace = programs::run(&engine, &traced.bytes, &inv, true).trace;
        let mut opts = driver::Options::default();
        opts.ball_larus.truncate_above = 4;
        let (_, profile) = programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
        let expected = oracle::count(&trace, &programs::graphs_cut_as(&module, &profile));
        for f in &profile.functions {
            let pathprof_profile::FunctionData::Path { numbered, .. } = &f.data else {
                unreachable!()
            };
            let got = pathprof::report::edge_counts_exact(f);
            let real: std::collections::BTreeSet<usize> = numbered
                .dag_edges
                .iter()
                .filter_map(|d| match d.kind {
                    pathprof_techniques::ball_larus::EdgeRole::Real(e) => Some(e.index()),
                    _ => None,
                })
                .chain(numbered.self_loops.iter().map(|e| e.index()))
                .collect();
            let (mut got_sum, mut want_sum) = (0, 0);
            for e in 0..f.edges.len() {
                let want = expected
                    .edges
                    .get(&(f.func_index, e as u32))
                    .copied()
                    .unwrap_or(0);
                let what = format!("{name} {} edge {e}", f.display_name());
                if got.exact[e] {
                    assert_eq!(got.counts[e], want, "{what}");
                    if !real.contains(&e) && want > 0 {
                        settled_boundary += 1;
                    }
                } else {
                    assert!(!real.contains(&e), "{what}: a real edge is always exact");
                    guessed += 1;
                }
                if !real.contains(&e) {
                    got_sum += got.counts[e];
                    want_sum += want;
                }
            }
            assert_eq!(
                got_sum,
                want_sum,
                "{name} {}: boundary totals",
                f.display_name()
            );
        }
    }
    assert!(
        settled_boundary >= 20,
        "only {settled_boundary} boundary edges ran"
    );
    eprintln!("{settled_boundary} boundary edges settled exactly, {guessed} guessed");
}

/// A large function (a `br_table` dispatch over `cases` cases, each with a
/// call that may throw; every fifth call in a `try_table`) in a module that
/// throws: exceptions unwind through it, and some are caught inside it.
fn unwinding_dispatch(cases: u32) -> String {
    let mut big = String::new();
    let labels: String = (0..cases).map(|i| format!(" $c{i}")).collect();
    big.push_str(&format!(
        "(block $next {}(br_table{labels} (i32.rem_u (local.get $n) (i32.const {cases})))",
        (0..cases)
            .rev()
            .map(|i| format!("(block $c{i} "))
            .collect::<String>()
    ));
    for i in 0..cases {
        let call = format!(
            "(local.set $acc (i32.add (local.get $acc) (call $leaf (i32.const {i}) (local.get $n))))"
        );
        let body = if i % 5 == 0 {
            format!(
                "(block $ok{i} (block $caught{i} (try_table (catch_all $caught{i}) {call}) \
                 (br $ok{i})) (local.set $acc (i32.add (local.get $acc) (i32.const 1000))))"
            )
        } else {
            format!(
                "{call} (br_if $next (i32.and (local.get $acc) (i32.const 1))) \
                 (local.set $acc (i32.xor (local.get $acc) (i32.const {})))",
                0x5bd1 + i
            )
        };
        big.push_str(&format!(") {body} (br $next)"));
    }
    big.push(')');
    format!(
        r#"(module
  (tag $oops (param i32))
  (func $leaf (param $case i32) (param $n i32) (result i32)
    (if (i32.eqz (i32.rem_u (i32.add (i32.mul (local.get $n) (i32.const 7)) (local.get $case))
                            (i32.const 13)))
      (then (throw $oops (local.get $case))))
    (i32.add (local.get $case) (local.get $n)))
  (func $big (param $n i32) (result i32) (local $acc i32)
    (loop $top
      {big}
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $top (local.get $n)))
    (i32.and (local.get $acc) (i32.const 0x7fffffff)))
  (func (export "run") (param $n i32) (result i32)
    (block $h (param) (result i32)
      (try_table (result i32) (catch $oops $h) (call $big (local.get $n)))
      (return))
    (local.set $n)
    (i32.sub (i32.const -1) (local.get $n))))"#
    )
}

/// Edge profiling of a large function that exceptions unwind through
/// (`docs/decisions.md#edge-unwinding`): the counts equal the trace's, and
/// the counters are the chords of a spanning tree that holds one virtual
/// edge per block with a call, E - V + 2 + U of them for a connected CFG of
/// E edges and V nodes with U such blocks, where counting every edge (what
/// pathprof did before) took E.
#[test]
fn edge_profiles_of_a_large_function_that_exceptions_unwind_through() {
    let engine = crate::common::programs::engine();
    let cases = 300;
    let module = wat::parse_str(unwinding_dispatch(cases)).unwrap();
    let mut thrown = 0;
    for n in (1..=60).chain([997, 4000]) {
        let inv = Invocation::Call {
            export: "run".into(),
            args: vec![n.to_string()],
        };
        check(&engine, "unwinding_dispatch", &module, &inv);
        let out = programs::run(&engine, &module, &inv, false);
        // Caught in `run`: a negative result; else `$big`'s, masked positive.
        thrown += out.results.iter().filter(|r| r.starts_with('-')).count();
    }
    assert!(thrown >= 10, "only {thrown} runs ended in the catch");
    let inv = Invocation::Call {
        export: "run".into(),
        args: vec!["4000".into()],
    };
    let (_, profile) = programs::profiled_run(
        &engine,
        &module,
        Technique::Edge,
        &driver::Options::default(),
        &inv,
    );
    let big = &profile.functions[1];
    let pathprof_profile::FunctionData::Edge { chords, .. } = &big.data else {
        unreachable!()
    };
    let (v, e) = (big.blocks.len(), big.edges.len());
    assert!(v > 2 * cases as usize, "only {v} nodes");
    assert_eq!(chords.unwinding.len(), cases as usize);
    assert_eq!(chords.chords.len(), e - v + 2 + cases as usize);
    eprintln!(
        "{v} nodes, {e} edges, {} counters (counting every edge: {e})",
        chords.chords.len()
    );
}
