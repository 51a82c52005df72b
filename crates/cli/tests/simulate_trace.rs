//! `simulate --save-trace FILE` and `simulate --trace FILE` (issue 30: "no
//! trace is stored on disk unless asked"): a run's branch stream saved, then
//! simulated from the file without running the program, gives the live
//! run's results exactly (every field but the clocks), with a cache metric
//! too; and every kind of bad trace is a one-line error naming the file,
//! with no output left.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::bin::{pathprof, stderr};
use common::programs::{c_cases, root, Invocation};

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/c/build").join(name)
}

/// `pathprof simulate ARGS MODULE -- PROGRAM_ARGS`, with `stdin` fed.
fn simulate(args: &[&str], module: &Path, program_args: &[String], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .arg("simulate")
        .args(args)
        .arg(module)
        .arg("--")
        .args(program_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pathprof runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The JSON document without its clocks.
fn results(path: &Path) -> serde_json::Value {
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let obj = doc.as_object_mut().unwrap();
    for clock in ["seconds", "cpu_seconds", "simulator_cpu_seconds"] {
        assert!(obj.remove(clock).is_some(), "{clock} is reported");
    }
    doc
}

#[test]
fn a_saved_trace_simulates_as_the_live_run() {
    let dir = tempfile::tempdir().unwrap();
    // One run of each of the first fixtures, both optimisation levels.
    let mut seen = std::collections::BTreeSet::new();
    let cases: Vec<(String, Invocation)> = c_cases()
        .into_iter()
        .filter(|(name, _)| seen.insert(name.clone()))
        .take(4)
        .collect();
    assert_eq!(cases.len(), 4);
    let mut checked = 0;
    for (i, (name, inv)) in cases.iter().enumerate() {
        let Invocation::Command { args, stdin } = inv else {
            unreachable!("C cases are commands")
        };
        for (opt, metric) in [("O0", "frequency"), ("O2", "l2-misses")] {
            let module = fixture(&format!("{name}.{opt}.wasm"));
            let what = format!("{name}.{opt} --metric {metric}");
            let (live, replay, trace) = (
                dir.path().join(format!("{i}{opt}.live.json")),
                dir.path().join(format!("{i}{opt}.replay.json")),
                dir.path().join(format!("{i}{opt}.trace")),
            );
            let common = [
                "--json",
                "--metric",
                metric,
                "--entries",
                "128",
                "--ways",
                "2",
            ];
            let run = |out: &Path, trace_flag: &str, args: &[String], stdin: &[u8]| {
                let files = [
                    "-o",
                    out.to_str().unwrap(),
                    trace_flag,
                    trace.to_str().unwrap(),
                ];
                simulate(&[&common[..], &files[..]].concat(), &module, args, stdin)
            };
            let o = run(&live, "--save-trace", &args[1..], stdin);
            assert!(o.status.code().is_some(), "{what}: {}", stderr(&o));
            let o2 = run(&replay, "--trace", &[], b"");
            assert_eq!(o2.status.code(), o.status.code(), "{what}: the run's exit");
            assert!(o2.stdout.is_empty(), "{what}: nothing runs");
            let (live, replay) = (results(&live), results(&replay));
            assert!(live["branches"].as_u64().unwrap() > 100, "{what}");
            assert_eq!(
                live["accesses"].is_u64(),
                metric != "frequency",
                "{what}: accesses only under a cache metric"
            );
            assert_eq!(live, replay, "{what}: the replay differs from the run");
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

#[test]
fn bad_traces_are_one_line_errors_and_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    let sort = fixture("sort.O2.wasm");
    let args: Vec<String> = ["-q", "5", "3", "9"].map(String::from).to_vec();
    let saved = path("sort.trace");
    let o = simulate(
        &["--save-trace", saved.to_str().unwrap()],
        &sort,
        &args,
        b"",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&saved).unwrap();

    std::fs::write(path("cut.trace"), &bytes[..bytes.len() - 3]).unwrap();
    std::fs::write(path("text.trace"), "not a trace\n").unwrap();
    let cases: [(&str, PathBuf, &[&str]); 4] = [
        ("cut.trace", sort.clone(), &[]),
        ("text.trace", sort.clone(), &[]),
        ("sort.trace", fixture("sort.O0.wasm"), &[]),
        ("sort.trace", sort.clone(), &["--metric", "l1-misses"]),
    ];
    let expected = [
        "truncated",
        "not a pathprof branch trace",
        "a trace of another module",
        "save it with --metric l1-misses or l2-misses",
    ];
    for ((trace, module, extra), why) in cases.iter().zip(expected) {
        let out = path("out.json");
        let trace = path(trace);
        let o = pathprof(
            &[
                &["simulate", "--json", "-o", out.to_str().unwrap()][..],
                extra,
                &["--trace", trace.to_str().unwrap(), module.to_str().unwrap()],
            ]
            .concat(),
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{trace:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(trace.to_str().unwrap()),
            "names the file: {err}"
        );
        assert!(err.contains(why), "{why:?} in {err}");
        assert!(!out.exists(), "no output after an error");
    }

    // A trace is not given program arguments, and a missing folder for a
    // trace to save is reported before the program runs.
    let o = pathprof(&[
        "simulate",
        "--trace",
        "t",
        sort.to_str().unwrap(),
        "--",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let missing = path("no/such/dir/t.trace");
    let o = simulate(
        &["--save-trace", missing.to_str().unwrap()],
        &sort,
        &args,
        b"",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "the program did not run");
    assert!(stderr(&o).contains("no/such/dir"), "{}", stderr(&o));
}
