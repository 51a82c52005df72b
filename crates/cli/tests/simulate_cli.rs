//! `pathprof simulate` end to end (issue 30), as a user runs it: the hot
//! paths of the Hot Path Table shown as the blocks they ran through, the
//! way `pathprof report` shows Ball-Larus paths (checked against `report`
//! of a `pathprof run` of the same program and input: two profilers, two
//! regenerations, one answer); the program's own output passing through
//! unchanged; flags taking precedence over the `--config` file; and a sweep
//! writing its table and chart.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::bin::{pathprof, stderr};
use common::programs::root;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/c/build").join(name)
}

/// The sort fixture's bubble sort of twelve numbers.
const ARGS: [&str; 13] = [
    "-b", "12", "3", "44", "7", "19", "1", "30", "8", "27", "5", "16", "2",
];

fn run(cmd: &str, flags: &[&str], module: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .arg(cmd)
        .args(flags)
        .arg(module)
        .arg("--")
        .args(ARGS)
        .output()
        .expect("pathprof runs");
    // sort exits 0, or 1 when its input was sorted already: not here.
    assert_eq!(out.status.code(), Some(0), "{cmd}: {}", stderr(&out));
    out
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A path as (function, "block@offset ..."), as both reports print it.
fn key(function: &serde_json::Value, blocks: &serde_json::Value) -> (String, String) {
    let blocks: Vec<String> = blocks
        .as_array()
        .unwrap()
        .iter()
        .map(|b| format!("{}@{:#x}", b["block"], b["offset"].as_u64().unwrap()))
        .collect();
    (function.as_str().unwrap().to_string(), blocks.join(" "))
}

#[test]
fn hot_paths_are_the_blocks_report_shows() {
    let dir = tempfile::tempdir().unwrap();
    let module = fixture("sort.O0.wasm");
    let (profile, sim) = (dir.path().join("p.profile"), dir.path().join("sim.json"));
    let p = profile.to_str().unwrap();
    run("run", &["-o", p], &module);
    let report = pathprof(&["report", p, "--json", "--top", "100000"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    // A table that holds every path of this run: no eviction, no split.
    let flags = [
        "--json",
        "--entries",
        "4096",
        "--ways",
        "16",
        "--max-path-len",
        "96",
    ];
    let mut with_out = flags.to_vec();
    with_out.extend(["-o", sim.to_str().unwrap()]);
    run("simulate", &with_out, &module);
    let sim = json(&sim);
    let result = &sim["results"][0];
    assert_eq!(result["hpt"]["evictions"], 0);
    assert_eq!(result["detector"]["splits"], 0);
    // Ball-Larus paths by blocks; functions with a self loop or a cut path
    // name other paths than the path stack (simulator_oracle.rs says why).
    let rows = report.as_array().expect("report --json lists paths");
    let mut left_out = BTreeSet::new();
    let mut expected: BTreeMap<(String, String), u64> = BTreeMap::new();
    for r in rows {
        let kind = r["kind"].as_str().unwrap();
        if kind == "self loop" || kind.contains("cut") {
            left_out.insert(r["function"].as_str().unwrap().to_string());
        }
        *expected
            .entry(key(&r["function"], &r["blocks"]))
            .or_default() += r["count"].as_u64().unwrap();
    }
    expected.retain(|(f, _), _| !left_out.contains(f));
    let weights = result["hardware_profile"].as_array().unwrap();
    let paths = result["hot_paths"].as_array().unwrap();
    assert_eq!(weights.len(), paths.len());
    let mut got: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (w, p) in weights.iter().zip(paths) {
        assert!(p.is_object(), "a Ball-Larus hardware path walks back: {w}");
        let k = key(&p["function"], &p["blocks"]);
        if !left_out.contains(&k.0) {
            *got.entry(k).or_default() += w["weight"].as_u64().unwrap();
        }
    }
    assert!(expected.len() >= 20, "only {} paths", expected.len());
    assert_eq!(got, expected);
    // The text report prints the hottest path's blocks as `report` does.
    let text = run("simulate", &flags[1..], &module);
    let text = String::from_utf8(text.stdout).unwrap();
    let hottest = &paths[0];
    let (function, blocks) = key(&hottest["function"], &hottest["blocks"]);
    let shown = format!("{function}: {blocks}");
    assert!(
        text.lines().any(|l| l.contains(&shown)),
        "{shown} not in\n{text}"
    );
    assert!(
        text.contains("blocks (id@offset)"),
        "the table's heading names its last column"
    );
}

#[test]
fn the_programs_output_passes_through_and_flags_override_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let module = fixture("sort.O2.wasm");
    let plain = run("run", &["--mode", "none"], &module);
    let config = dir.path().join("hpt.toml");
    std::fs::write(
        &config,
        "[hpt]\nentries = 64\nways = 2\nindex = \"address\"\n",
    )
    .unwrap();
    let out = dir.path().join("sim.json");
    let sim = run(
        "simulate",
        &[
            "--config",
            config.to_str().unwrap(),
            "--entries",
            "128",
            "--json",
            "-o",
            out.to_str().unwrap(),
        ],
        &module,
    );
    // The program's standard output is its own: the report went to -o.
    assert_eq!(sim.stdout, plain.stdout);
    let hpt = &json(&out)["results"][0]["config"]["hpt"];
    assert_eq!(hpt["entries"], 128, "the flag wins: {hpt}");
    assert_eq!(hpt["ways"], 2, "the file's value stays: {hpt}");
    assert_eq!(hpt["index"], "address", "the file's value stays: {hpt}");
}

#[test]
fn a_sweep_writes_its_table_and_chart() {
    let dir = tempfile::tempdir().unwrap();
    let module = fixture("sort.O2.wasm");
    let chart = dir.path().join("hpt.svg");
    let out = dir.path().join("sweep.txt");
    let sim = run(
        "simulate",
        &[
            "--sweep",
            "--chart",
            chart.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &module,
    );
    assert!(sim.status.success());
    let table = std::fs::read_to_string(&out).unwrap();
    // The grid of the issue: 6 sizes (128..4096) x 6 ways (1..32) x 2
    // index functions x 2 replacements, less the configurations with more
    // ways than entries (none here), one row each after the heading.
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 144, "{table}");
    for entries in [128, 256, 512, 1024, 2048, 4096] {
        assert!(
            rows.iter().any(|r| r.starts_with(&format!("{entries}"))),
            "{entries} entries missing from\n{table}"
        );
    }
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    // One line per (ways, index, replacement): 6 x 2 x 2.
    assert_eq!(svg.matches("<polyline").count(), 24, "{svg}");
}
