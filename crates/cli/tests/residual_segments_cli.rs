//! `pathprof residual --tested SEGMENTS -k K` through the binary (issue 31,
//! thesis 3.5.2): the field build of a segment profile, with the depth
//! given or taken from the profile, run on an engine of its own, collected
//! and reported; and the errors of a depth that does not fit the profile.
//! That the build counts the right segments is proved in ippp_oracle.rs.

use crate::common;

use std::path::{Path, PathBuf};

use common::bin::{pathprof, stderr};
use common::programs::root;

const TEST_ARGS: [&str; 3] = ["-q", "3", "1"];
const FIELD_ARGS: [&str; 6] = ["-i", "9", "8", "7", "6", "5"];

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn sort_o2() -> String {
    s(&root().join("tests/fixtures/c/build/sort.O2.wasm"))
}

/// `pathprof ARGS`, which must succeed.
fn ok(args: &[&str]) -> std::process::Output {
    let o = pathprof(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// A profile of sort.O2's test run in `dir`, recorded with `run MODE`.
fn tested(dir: &Path, name: &str, mode: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let (o, w) = (s(&out), sort_o2());
    ok(&[&["run", "-o", &o][..], mode, &[&w, "--"], &TEST_ARGS].concat());
    out
}

/// The field build given `-k` matches its segment profile: the build is
/// the one without `-k` (`--depth` alike), it runs, `collect` reads its
/// counters, and `residual-report` of that profile alone gives the
/// untested depth-2 segments, as `run --mode ippp` of the same segments.
#[test]
fn residual_with_the_profiles_depth_builds_what_it_builds_without() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| s(&dir.path().join(n));
    let seg = s(&tested(dir.path(), "tested.profile", &["--segments", "2"]));
    let build = |out: &str, k: &[&str]| {
        let (o, w) = (d(out), sort_o2());
        ok(&[&["residual", "--tested", &seg][..], k, &["-o", &o, &w]].concat());
        std::fs::read(&o).unwrap()
    };
    let plain = build("plain.wasm", &[]);
    assert_eq!(build("k.wasm", &["-k", "2"]), plain, "-k 2");
    assert_eq!(build("depth.wasm", &["--depth", "2"]), plain, "--depth 2");

    let engine = common::programs::engine();
    let args = std::iter::once("sort").chain(FIELD_ARGS);
    let opts = pathprof_runner::RunOptions::captured(args);
    let run = pathprof_runner::run_command(&engine, &plain, &opts).unwrap();
    std::fs::write(d("counters.bin"), run.counters.unwrap()).unwrap();
    ok(&[
        "collect",
        &d("plain.wasm"),
        &d("counters.bin"),
        "-o",
        &d("field.json"),
    ]);
    let embedded = d("embedded.json");
    let (w, field) = (sort_o2(), FIELD_ARGS);
    let ippp = ["run", "--mode", "ippp", "--interesting", &seg, "-k", "2"];
    ok(&[&ippp[..], &["-o", &embedded, &w, "--"], &field].concat());

    let report = |p: &str| -> serde_json::Value {
        let o = ok(&["residual-report", p, "--json", "--top", "1000"]);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let standalone = report(&d("field.json"));
    assert_eq!(standalone, report(&embedded));
    assert_eq!(standalone["summary"]["k"], 2);
    assert!(standalone["summary"]["untested_segments"].as_u64().unwrap() > 0);
    let o = ok(&["residual-report", &d("field.json")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("untested depth-2 segments: "), "{text}");
}

/// A depth other than the segment profile's, out of range, or given with
/// a path profile: a one-line error that names the profile, a failure,
/// and no field build.
#[test]
fn residual_refuses_a_depth_its_profile_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let seg = s(&tested(dir.path(), "seg.profile", &["--segments", "2"]));
    let path = s(&tested(dir.path(), "path.profile", &["--mode", "path"]));
    let out = dir.path().join("field.wasm");
    let refused = [
        (&seg, "3", format!("{seg}: its segments are of depth 2, not 3 (-k 3); record a profile of depth 3 with `pathprof run --segments 3`")),
        (&seg, "17", "-k 17: the depth must be 1 to 16".to_string()),
        (&path, "2", format!("{path}: not a segment profile, and -k 2 is a depth of segments: they need a segment profile (`pathprof run --segments 2`); leave out -k for a residual build of paths")),
    ];
    for (profile, k, want) in refused {
        let (o, w) = (s(&out), sort_o2());
        let o = pathprof(&["residual", "--tested", profile, "-k", k, "-o", &o, &w]);
        assert_eq!(stderr(&o), format!("pathprof: error: {want}\n"));
        assert!(!o.status.success());
        assert!(!out.exists(), "no output after an error");
    }
}
