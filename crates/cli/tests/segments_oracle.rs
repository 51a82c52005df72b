//! `run --segments K` checked on real runs: every C fixture (recursion,
//! indirect calls, loops, deep call chains, `exit()` deep in a chain, tail
//! calls direct and through a table) at
//! -O0 and -O2 and every WAT fixture export the mode takes, for k = 1, 2
//! and 3. The recorded profile must hold exactly the depth-k segments of
//! the run, with their counts, as a brute-force enumerator that shares no
//! code with the segmenter finds them in a trace of another run
//! ([`pathprof_graph::testing::ippp`]: the run cut into its spelt-out
//! subpaths, each segment followed forward from a subpath ending in a
//! call), and every edge count the trace gives.

use crate::common;

use std::collections::BTreeMap;

use common::programs::{self, Invocation};
use pathprof_graph::interproc::Event;
use pathprof_graph::ippp::SubpathEnd;
use pathprof_graph::testing::ippp::{ips, wpp};
use pathprof_profile::Profile;
use pathprof_wasm::supergraph::events;

use common::segments::{module, prepared, record, wat_modules, Module, Spelt};

/// The recorded segments spelt as the oracle spells them.
fn spelt(m: &Module, profile: &Profile) -> BTreeMap<Spelt, u64> {
    let sp = profile.segments.as_ref().expect("a segment profile");
    common::segments::spelt(m.prepared.numbering(), &sp.segments)
}

/// Checks the run at depths 1 to 3; its distinct segments per depth, the
/// segments closed by a tail call and a throw, and whether a profiled
/// function caught what an import threw.
pub(crate) fn check(m: &Module, inv: &Invocation) -> ([usize; 3], [usize; 2], bool) {
    let run = programs::run_compiled(&m.traced, inv, true);
    let exec = events(m.msg(), &run.trace).unwrap();
    let subpaths = wpp(&m.msg().supergraph, &exec);
    let mut edges: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for &e in &run.trace {
        *edges.entry(e).or_insert(0) += 1;
    }
    let mut distinct = [0; 3];
    let mut closed_by = [0; 2];
    for k in 1..=3 {
        let profile = record(m, inv, k);
        let want = ips(&subpaths, k);
        let got = spelt(m, &profile);
        assert!(
            got == want,
            "{} {inv:?} k={k}: recorded {} segments ({} runs of them), the oracle {} ({})",
            m.name,
            got.len(),
            got.values().sum::<u64>(),
            want.len(),
            want.values().sum::<u64>()
        );
        let sp = profile.segments.as_ref().unwrap();
        assert_eq!(sp.subpaths, subpaths.len() as u64, "{} {inv:?}", m.name);
        assert_eq!(programs::edge_counts(&profile), edges, "{} {inv:?}", m.name);
        distinct[k - 1] = want.len();
        for (n, end) in closed_by
            .iter_mut()
            .zip([SubpathEnd::TailCall, SubpathEnd::Throw])
        {
            *n += (want.keys())
                .filter(|s| s.len() > 1 && s.last().unwrap().1.end == end)
                .count();
        }
    }
    let import_thrown = exec.iter().any(|e| matches!(e, Event::ImportThrow { .. }));
    (distinct, closed_by, import_thrown)
}

#[test]
fn c_programs_record_exactly_the_segments_of_their_runs() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut modules: BTreeMap<String, Option<Module>> = BTreeMap::new();
    let mut runs = 0;
    let mut deeper = 0;
    let mut at_tail_call = 0;
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let build_name = format!("{name}.{opt}");
            let m = modules.entry(build_name.clone()).or_insert_with(|| {
                let bytes = std::fs::read(build.join(format!("{build_name}.wasm")))
                    .expect("run scripts/build-c-fixtures.sh first");
                module(&engine, &build_name, &bytes)
            });
            let m = m.as_ref().unwrap_or_else(|| panic!("{build_name} refused"));
            let (distinct, tail, _) = check(m, &inv);
            at_tail_call += tail[0];
            assert!(distinct[0] > 0, "{build_name} {inv:?}: no segment");
            deeper += usize::from(distinct[2] > distinct[0]);
            runs += 1;
        }
    }
    assert!(runs >= 60, "only {runs} C runs were checked");
    // The `tailcall` fixture's segments run into its tail calls.
    assert!(at_tail_call > 0, "no segment closed at a tail call");
    assert!(
        deeper > runs / 2,
        "depth changed the segments of only {deeper} runs"
    );
}

#[test]
fn wat_fixtures_record_exactly_the_segments_of_their_runs() {
    let engine = crate::common::programs::engine();
    let (mut checked, mut closed_by, mut import_thrown) = (0, [0, 0], 0);
    for (name, bytes, m) in wat_modules(&engine) {
        let m = m.unwrap_or_else(|| panic!("{name} refused"));
        for inv in programs::export_calls(&engine, &bytes) {
            let (_, by, imported) = check(&m, &inv);
            closed_by = [closed_by[0] + by[0], closed_by[1] + by[1]];
            import_thrown += usize::from(imported);
            checked += 1;
        }
    }
    // import_throws.wat: 31 calls catch what its library threw.
    assert_eq!(import_thrown, 31, "calls that caught what an import threw");
    assert!(checked >= 20, "only {checked} WAT runs checked");
    // tail_segments.wat; exceptions.wat.
    assert!(closed_by[0] > 0, "no segment closed at a tail call");
    assert!(closed_by[1] > 0, "no segment closed at a throw");
}

/// Interprocedural residual profiling (thesis 3.5.2, Table 3.2): a field
/// run of `sort` against a test run, both recorded; the untested segments
/// and the columns computed by the test from the oracle's segments.
#[test]
fn residual_of_segments_is_the_oracles_set_difference() {
    let engine = crate::common::programs::engine();
    let path = programs::root().join("tests/fixtures/c/build/sort.O2.wasm");
    let bytes = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh first");
    let m = module(&engine, "sort.O2", &bytes).unwrap();
    let (train, field) = (
        Invocation::command(&["sort", "-q", "3", "1"]),
        Invocation::command(&["sort", "-i", "9", "8", "7", "6", "5"]),
    );
    for k in 1..=2 {
        let oracle = |inv: &Invocation| {
            let run = programs::run_compiled(&m.traced, inv, true);
            ips(
                &wpp(&m.msg().supergraph, &events(m.msg(), &run.trace).unwrap()),
                k,
            )
        };
        let (tested, fielded) = (oracle(&train), oracle(&field));
        let untested: BTreeMap<&Spelt, u64> = fielded
            .iter()
            .filter(|(s, _)| !tested.contains_key(*s))
            .map(|(s, &c)| (s, c))
            .collect();
        assert!(!untested.is_empty() && untested.len() < fielded.len());
        let (t, f) = (record(&m, &train, k), record(&m, &field, k));
        // diff: segments that appeared and disappeared, and the overlap of
        // the two distributions, from the oracle's counts.
        let d = pathprof::diff::diff(&t, &f, "field").unwrap();
        let (ta, tb) = (
            tested.values().sum::<u64>() as f64,
            fielded.values().sum::<u64>() as f64,
        );
        let overlap: f64 = tested
            .iter()
            .filter_map(|(s, &a)| {
                fielded
                    .get(s)
                    .map(|&b| (100.0 * a as f64 / ta).min(100.0 * b as f64 / tb))
            })
            .sum();
        let gone = tested.keys().filter(|s| !fielded.contains_key(*s)).count();
        assert_eq!((d.appeared, d.disappeared), (untested.len(), gone), "k={k}");
        assert!(
            (d.overlap - overlap).abs() < 1e-9,
            "k={k}: {} against {overlap}",
            d.overlap
        );
        assert!(d
            .paths
            .iter()
            .all(|p| p.kind == "segment" && p.path.is_none()));
        let r =
            pathprof::residual_segments::residual(&f, "field".as_ref(), &[t], &["test"]).unwrap();
        let s = &r.summary;
        assert_eq!(s.untested_segments, untested.len(), "k={k}");
        assert_eq!(s.field_segments, fielded.len(), "k={k}");
        assert_eq!(s.untested_executions, untested.values().sum::<u64>());
        assert_eq!(s.field_executions, fielded.values().sum::<u64>());
        let want = 100.0 * untested.len() as f64 / fielded.len() as f64;
        assert!((s.percent_untested - want).abs() < 1e-9);
        let mut counts: Vec<u64> = untested.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<u64> = r.untested.iter().map(|row| row.count).collect();
        assert_eq!(got, counts, "k={k}");
    }
}

/// What the mode refuses, with the file and the reason.
#[test]
fn segment_residuals_refuse_what_they_cannot_compare() {
    let engine = crate::common::programs::engine();
    let path = programs::root().join("tests/fixtures/c/build/recurse.O0.wasm");
    let bytes = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh first");
    let m = module(&engine, "recurse.O0", &bytes).unwrap();
    let inv = Invocation::command(&["recurse", "3"]);
    let (one, two) = (record(&m, &inv, 1), record(&m, &inv, 2));
    let err = |tested: Vec<Profile>| {
        let paths: Vec<&str> = tested.iter().map(|_| "t.json").collect();
        let r = pathprof::residual_segments::residual(&one, "f.json".as_ref(), &tested, &paths);
        format!("{:#}", r.err().expect("refused"))
    };
    assert_eq!(
        err(vec![two]),
        "t.json: segments of depth 2, the field profile's are of depth 1"
    );
    assert!(err(vec![]).starts_with("f.json: a segment profile needs --tested PROFILE"));
    let dir = tempfile::tempdir().unwrap();
    let seg = dir.path().join("seg.json");
    one.write(&seg).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["run", "--mode", "ppp", "--interesting"])
        .arg(&seg)
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("pathprof: error: {}: a segments profile holds interprocedural path segments, not paths of one function; give a path or PPP profile (a segment profile names the interesting segments of --mode ippp, and residual-report compares segment profiles)\n", seg.display())
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["run", "--mode", "edge", "--segments", "2"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "pathprof: error: --segments records segments from a trace of the run: it goes with --mode path, not --mode edge\n"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["run", "--segments", "0"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "pathprof: error: --segments 0: the depth must be 1 to 16\n"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["run", "--segments", "1", "--timings", "t.json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses the pair");
}

/// `merge` of two segment profiles: every segment of either run, with the
/// sum of its counts, as the oracle counts the two runs.
#[test]
fn merged_segment_profiles_add_the_runs() {
    let engine = crate::common::programs::engine();
    let path = programs::root().join("tests/fixtures/c/build/recurse.O2.wasm");
    let bytes = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh first");
    let m = module(&engine, "recurse.O2", &bytes).unwrap();
    let inv = |n: &str| Invocation::command(&["recurse", n]);
    let (a, b) = (inv("3"), inv("5"));
    let mut want: BTreeMap<Spelt, u64> = BTreeMap::new();
    for i in [&a, &b] {
        let run = programs::run_compiled(&m.traced, i, true);
        let exec = events(m.msg(), &run.trace).unwrap();
        for (s, c) in ips(&wpp(&m.msg().supergraph, &exec), 2) {
            *want.entry(s).or_insert(0) += c;
        }
    }
    let merged = pathprof_profile::merge(&[record(&m, &a, 2), record(&m, &b, 2)]).unwrap();
    assert_eq!(merged.runs, 2);
    assert_eq!(spelt(&m, &merged), want);
    let err = pathprof_profile::merge(&[record(&m, &a, 2), record(&m, &a, 1)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge: the segment profiles differ in depth (2 and 1)"
    );
}

/// Functions truncated (Ball-Larus 5.3, as the suite's largest functions
/// must be): a truncated edge ends a subpath as a backedge does, and the
/// oracle, told which edges are truncated, agrees.
#[test]
fn truncated_functions_end_subpaths_at_their_cuts() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut truncated = 0;
    for name in ["interp.O2", "sort.O0", "strproc.O2"] {
        let bytes = std::fs::read(build.join(format!("{name}.wasm"))).unwrap();
        let m = prepared(&engine, name, &bytes, Some(8)).unwrap();
        truncated += m
            .msg()
            .supergraph
            .functions
            .iter()
            .filter(|f| !f.truncated.is_empty())
            .count();
        let cases = programs::c_cases();
        let stem = name.split('.').next().unwrap();
        for (_, inv) in cases.iter().filter(|(n, _)| n == stem).take(3) {
            check(&m, inv);
        }
    }
    assert!(truncated >= 10, "only {truncated} functions were truncated");
}

/// Segments that a tail call and a throw close, as `report` prints them,
/// recorded and counted by IPPP (every recorded segment interesting).
/// `outer(3)` calls `caller(3)` twice; each calls `leaf(3)`, then
/// tail-calls `target(4)`, which calls `leaf(4)` and returns to `outer`:
/// two segments close at the tail call, and `target`'s own two at its
/// return. `catch_caller(3)` calls `maybe_throw(3)`, which throws: its one
/// segment closes at the throw. (Worked by hand.)
#[test]
fn report_names_the_tail_call_or_throw_a_segment_ends_in() {
    let tail = [
        (1, "outer: 2 >call 0 | caller: 2 >call 0"),
        (1, "outer: [after call 0] >call 1 | caller: 2 >call 0"),
        (
            2,
            "caller: 2 >call 0 | leaf: 2 4 5 <ret | caller: [after call 0] 3 >tail call",
        ),
        (
            2,
            "target: 2 >call 0 | leaf: 2 3 5 <ret | target: [after call 0] <ret",
        ),
    ];
    check_report("tail_segments.wat", "outer", &tail);
    let throw = [(1, "catch_caller: 2 >call 0 | maybe_throw: 2 3 >throw")];
    check_report("exceptions.wat", "catch_caller", &throw);
}

/// `report` of `--segments 1` and of `--mode ippp` runs of `export(3)` of
/// WAT fixture `fixture`: both are the rows `want` (count, segment).
fn check_report(fixture: &str, export: &str, want: &[(u64, &str)]) {
    use common::bin::{pathprof, stderr};
    let dir = tempfile::tempdir().unwrap();
    let wat = programs::root().join("tests/fixtures/wat").join(fixture);
    let (seg, ippp) = (dir.path().join("seg.json"), dir.path().join("ippp.json"));
    let (wat, seg_s, ippp_s) = (
        wat.display().to_string(),
        seg.display().to_string(),
        ippp.display().to_string(),
    );
    let rows = |profile: &str| {
        let o = pathprof(&["report", profile]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        let mut rows: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let count = parts.next()?.parse().ok()?;
                parts.next()?; // the percentage
                Some((count, parts.collect::<Vec<_>>().join(" ")))
            })
            .collect();
        rows.sort();
        rows
    };
    let run = |args: &[&str]| {
        let o = pathprof(args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let invoke = ["--invoke", export, &wat, "--", "3"];
    run(&[&["run", "--segments", "1", "-o", &seg_s][..], &invoke].concat());
    let mut want: Vec<(u64, String)> = want.iter().map(|&(c, s)| (c, s.to_string())).collect();
    want.sort();
    assert_eq!(rows(&seg_s), want, "{fixture} {export}");
    let args = [
        "run",
        "--mode",
        "ippp",
        "--interesting",
        &seg_s,
        "-o",
        &ippp_s,
    ];
    run(&[&args[..], &invoke].concat());
    assert_eq!(rows(&ippp_s), want, "{fixture} {export}: ippp");
}
