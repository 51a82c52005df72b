//! `pathprof export --format parquet` (issue 32): every row is a path of
//! the run with the count a trace of the same run gives it (the trace
//! oracle, sharing no code with the exporter), and DuckDB, reading the
//! files of several runs as one table, adds them up to the traces' sums:
//! the fleet query docs/profile-format.md documents.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::bin::{pathprof, stderr};
use common::oracle::count;
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};

/// (function index, kind, blocks as the table spells them) -> count.
type Rows = BTreeMap<(u32, String, String), u64>;

/// The trace oracle's paths of `inv`, with the cuts the profile made.
fn traced_rows(module: &[u8], profile: &pathprof_profile::Profile, inv: &Invocation) -> Rows {
    let engine = crate::common::programs::engine();
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default())
        .unwrap()
        .bytes;
    let trace = programs::run(&engine, &traced, inv, true).trace;
    let counts = count(&trace, &programs::graphs_cut_as(module, profile));
    let mut rows = Rows::new();
    for (k, &c) in &counts.paths {
        let blocks: Vec<String> = k.blocks.iter().map(u32::to_string).collect();
        *rows
            .entry((k.func, k.kind.clone(), blocks.join(" ")))
            .or_insert(0) += c;
    }
    for (&(f, _), &c) in &counts.self_loops {
        *rows
            .entry((f, "self loop".into(), String::new()))
            .or_insert(0) += c;
    }
    rows
}

/// Runs a DuckDB query with the Python package; its rows, tab-separated.
fn duckdb(sql: &str) -> Vec<Vec<String>> {
    let script = format!(
        "import duckdb\nfor r in duckdb.sql({sql:?}).fetchall():\n    print('\\t'.join(str(x) for x in r))\n"
    );
    let o = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "duckdb (pip install duckdb; scripts/setup.sh does): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// The rows as the table holds them (self loops: their iterations per
/// function, as the oracle knows them).
fn table_rows(sql_rows: Vec<Vec<String>>) -> Rows {
    let mut rows = Rows::new();
    for r in sql_rows {
        let (f, kind, blocks, c) = (&r[0], &r[1], &r[2], &r[3]);
        let blocks = if kind == "self loop" {
            String::new()
        } else {
            blocks.clone()
        };
        *rows
            .entry((f.parse().unwrap(), kind.clone(), blocks))
            .or_insert(0) += c.parse::<u64>().unwrap();
    }
    rows
}

#[test]
fn parquet_rows_are_the_traced_paths_and_duckdb_adds_up_runs() {
    let dir = tempfile::tempdir().unwrap();
    let module_path = programs::root().join("tests/fixtures/c/build/sort.O2.wasm");
    let module = std::fs::read(&module_path).expect("run scripts/build-c-fixtures.sh first");
    let engine = crate::common::programs::engine();
    let runs = [
        Invocation::command(&["sort", "-q", "5", "3", "9", "-1", "7"]),
        Invocation::command(&["sort", "-i", "9", "8", "7", "6", "5", "4"]),
        Invocation::command(&["sort", "-q", "2", "2", "1"]),
    ];
    let mut total = Rows::new();
    for (i, inv) in runs.iter().enumerate() {
        let opts = driver::Options::default();
        let (_, profile) = programs::profiled_run(&engine, &module, Technique::Path, &opts, inv);
        let p = dir.path().join(format!("run{i}.profile"));
        profile.write(&p).unwrap();
        let out = dir.path().join(format!("run{i}.parquet"));
        let label = format!("run {i}");
        let (ps, os) = (p.display().to_string(), out.display().to_string());
        let o = pathprof(&[
            "export", &ps, "--format", "parquet", "--label", &label, "-o", &os,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let want = traced_rows(&module, &profile, inv);
        let got = table_rows(duckdb(&format!(
            "select function_index, kind, blocks, count from read_parquet('{os}')"
        )));
        assert_eq!(got, want, "run {i}");
        for (k, c) in want {
            *total.entry(k).or_insert(0) += c;
        }
        // Every row carries the module's hash, the runs and the label.
        let meta = duckdb(&format!(
            "select distinct module_hash, runs, label from read_parquet('{os}')"
        ));
        let hash = pathprof_wasm::module_hash(&module);
        assert_eq!(meta, vec![vec![hash, "1".to_string(), label]]);
    }
    // The fleet query: every run's file as one table, added up.
    let glob = dir.path().join("*.parquet").display().to_string();
    let fleet = duckdb(&format!(
        "select function_index, kind, blocks, sum(count) from read_parquet('{glob}') \
         group by all"
    ));
    assert_eq!(table_rows(fleet), total);
    let labels = duckdb(&format!(
        "select count(distinct label) from read_parquet('{glob}')"
    ));
    assert_eq!(labels, vec![vec!["3".to_string()]]);
}

#[test]
fn parquet_export_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let sort = programs::root().join("tests/fixtures/c/build/sort.O2.wasm");
    let (edge, path) = (
        dir.path().join("edge.profile"),
        dir.path().join("path.profile"),
    );
    for (mode, file) in [("edge", &edge), ("path", &path)] {
        let o = pathprof(&[
            "run",
            "--mode",
            mode,
            "-o",
            &s(file),
            &s(&sort),
            "--",
            "-q",
            "3",
            "1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let out = dir.path().join("t.parquet");
    let o = pathprof(&["export", &s(&path), "--format", "parquet"]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: --format parquet writes a binary file: give -o FILE\n"
    );
    let o = pathprof(&["export", &s(&edge), "--format", "parquet", "-o", &s(&out)]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {}: --format parquet exports the paths of path and PPP profiles (this one is of mode edge)\n",
            s(&edge)
        )
    );
    assert!(!out.exists(), "no output after an error");
}
