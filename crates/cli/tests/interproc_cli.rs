//! Melski & Reps' interprocedural path profiling (TR 1382) as a user meets
//! it: the `pathprof` binary's `run --mode context`, `report`,
//! `report --function`, `stats --interproc` and `--hybrid leaf|cut:...`, on
//! the paper's Fig. 4 (tests/fixtures/interproc/figure4.wat) and on a
//! module with a call to a function that is not a leaf
//! (tests/fixtures/interproc/nonleaf.wat). Every expected line is derived
//! by hand from the fixture's source and the paper (the comments show how),
//! not from pathprof's output.
//!
//! How the blocks and offsets were derived, once for every test below:
//! - Block numbers follow the CFG builder's documented model
//!   (crates/wasm/src/cfg/mod.rs): node 0 is ENTRY, 1 EXIT, then blocks in
//!   the order the body creates them: the first instruction's block; a
//!   loop body's start (the loop head); the not-taken side of a `br_if`;
//!   the arms of an `if`; the join after an `end` that a branch or an arm
//!   reaches. The report names a block when a path steps onto it (an edge
//!   to EXIT names none): `[restart] N` is the surrogate edge into loop
//!   head N (T2), `| call@OFF f:` a call, `| ret g:` its return, `[call@OFF]`
//!   a summary edge over a cut call site (T3), `[end]` a backedge ending the
//!   path (to GExit), `[exit]` the entry function's exit. The
//!   context-prefix is everything up to and including the last surrogate
//!   edge, printed before ` || `; the rest is the active-suffix (3.4). The
//!   block that edge enters (where the active-suffix begins) is printed
//!   once, as the prefix's last.
//! - A call site is named by the byte offset of its `call` instruction in
//!   the module, counted by hand from the binary encoding of the .wat
//!   (header 8 bytes; each section id, a one-byte size, its content; each
//!   body a one-byte size, its local declarations, then one byte per opcode
//!   plus its LEB immediates), and cross-checked below with wasmparser
//!   (`call_offsets`), which shares no code with pathprof's reader.

use crate::common;

use common::bin::{pathprof, stderr};
use common::programs::root;

fn fixture(name: &str) -> String {
    let p = root().join("tests/fixtures/interproc").join(name);
    p.display().to_string()
}

/// `pathprof ARGS`' standard output; the command must succeed.
fn ok(args: &[&str]) -> String {
    let o = pathprof(args);
    assert!(o.status.success(), "pathprof {args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// A context profile of a fixture's `main` and its report.
struct Reported {
    _dir: tempfile::TempDir,
    profile: String,
    report: String,
}

/// Runs `main` of the fixture under `--mode context --hybrid HYBRID` (it
/// must return `returned`) and reports the profile; the report's first
/// line must be `header`.
fn run_and_report(wat: &str, hybrid: &str, returned: &str, header: &str) -> Reported {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("context.profile").display().to_string();
    let wat = fixture(wat);
    let o = pathprof(&[
        "run", "--mode", "context", "--hybrid", hybrid, "--invoke", "main", &wat, "-o", &profile,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("main returned {returned}")));
    let report = ok(&["report", &profile]);
    assert_eq!(report.lines().next(), Some(header), "{report}");
    Reported {
        _dir: dir,
        profile,
        report,
    }
}

/// The rows of a report: the lines after the column heading.
fn report_rows(report: &str) -> Vec<&str> {
    let mut lines = report.lines();
    assert!(lines.by_ref().any(|l| l == "     count      %  path"));
    lines.collect()
}

/// The report's rows are `expected`, in any order among equal counts
/// (ties go by path number, which the paper leaves open); returns the
/// rows' counts.
fn assert_rows(report: &str, expected: &[&str]) -> Vec<u64> {
    let rows = report_rows(report);
    let (mut got, mut want) = (rows.clone(), expected.to_vec());
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "{report}");
    counts(&rows)
}

/// The counts of the rows, which the report sorts most frequent first.
fn counts(rows: &[&str]) -> Vec<u64> {
    let c: Vec<u64> = rows
        .iter()
        .map(|r| r.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(c.windows(2).all(|w| w[0] >= w[1]), "{rows:#?}");
    c
}

/// The byte offsets of the `call` instructions of the module, in code
/// order, read with wasmparser (not pathprof's reader).
fn call_offsets(wat: &str) -> Vec<usize> {
    let bytes = wat::parse_file(fixture(wat)).unwrap();
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(&bytes) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
            let mut ops = body.get_operators_reader().unwrap();
            while !ops.eof() {
                let (op, offset) = ops.read_with_offset().unwrap();
                if matches!(op, wasmparser::Operator::Call { .. }) {
                    out.push(offset);
                }
            }
        }
    }
    out
}

// figure4.wat by hand (see the module doc for the rules):
// - pow (function 0): 2 = `result = 1; j = 0` (0x2b), 3 = loop head
//   `j >= exp?` (0x37), 4 = body `result *= base; j++; br head` (0x3e),
//   5 = after the loop, `return result` (0x50). Backedge 4 -> 3.
// - main (function 1): 2 = `i = 1` (0x57), 3 = loop head `i > 18?` (0x5f),
//   4 = `i % 2 == 0?`, 5 = then-arm with the first call, 6 = join and
//   `i % 3 == 0?`, 7 = then-arm with the second call, 8 = join, `i++; br
//   head` (backedge 8 -> 3), 9 = after the loop (0x93).
// - Offsets: types end at 0x14, functions at 0x19, exports at 0x23; the
//   code section starts at 0x24 (id, size, count), pow's body size is at
//   0x27, its locals at 0x28-0x2a, its code 0x2b-0x52; main's size at
//   0x53, locals 0x54-0x56, code from 0x57: `i32.const 1; local.set; block;
//   loop` (8 bytes) puts the loop head at 0x5f; `local.get i; i32.const
//   18; i32.gt_s; br_if` (7) and `local.get; i32.const 2; i32.rem_s;
//   i32.eqz; if` (8) put the first then-arm at 0x6e and its `local.get i;
//   i32.const 2` (4) the first call at 0x72; `call; local.set; end`
//   (5) and `local.get; i32.const 3; i32.rem_s; i32.eqz; if` (8) put the
//   second then-arm at 0x7f, its call at 0x83.
const FIG4_CALLS: [usize; 2] = [0x72, 0x83];

/// Fig. 4's paths, by hand from its source: i runs 1..18; the first call
/// site calls pow when i is even (9 times), the second when 3 divides i
/// (6 times); pow(i, 2) runs its loop body twice, so each call's path
/// restarts once at pow's loop head (after its first backedge) and leaves
/// by the third test. A context path ends at a backedge or main's exit:
/// - i = 1 from main's entry, no call: 1;
/// - i even, from main's loop head into pow up to pow's first backedge: 9;
/// - pow's second iteration, in the context of the first call site: 9;
/// - pow's exit from the first call site, back in main, then (i % 6 == 0:
///   6, 12, 18) into pow from the second site up to its backedge: 3, or (i
///   = 2, 4, 8, 10, 14, 16) to main's backedge: 6;
/// - i = 3, 9, 15: from the loop head past the first site into pow from
///   the second: 3;
/// - pow's second iteration from the second site, its context through the
///   first call (i % 6 == 0) or not (3, 9, 15): 3 and 3;
/// - pow's exit from the second site back to main's backedge, in those two
///   contexts: 3 and 3;
/// - i = 5, 7, 11, 13, 17: no call: 5; i = 19: the loop head to the exit: 1.
///
/// Twelve paths, 49 executions, as Fig. 9's output; percentages of 49
/// rounded to one place: 9 -> 18.4, 6 -> 12.2, 5 -> 10.2, 3 -> 6.1,
/// 1 -> 2.0. A path that begins at a restart has `main: [restart] 3` as
/// its context-prefix (the surrogate edge Entry_main -> loop head) or,
/// when it restarts in pow, everything up to pow's `[restart] 3`.
const FIG4_ROWS: [&str; 12] = [
    "         9  18.4%  main: [restart] 3 || 4 5 | call@0x72 pow: 2 3 4 [end]",
    "         9  18.4%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 || 4 [end]",
    "         6  12.2%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 || 5 | ret main: 6 8 [end]",
    "         5  10.2%  main: [restart] 3 || 4 6 8 [end]",
    "         3   6.1%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 || 5 | ret main: 6 7 | call@0x83 pow: 2 3 4 [end]",
    "         3   6.1%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 5 | ret main: 6 7 | call@0x83 pow: [restart] 3 || 4 [end]",
    "         3   6.1%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 5 | ret main: 6 7 | call@0x83 pow: [restart] 3 || 5 | ret main: 8 [end]",
    "         3   6.1%  main: [restart] 3 || 4 6 7 | call@0x83 pow: 2 3 4 [end]",
    "         3   6.1%  main: [restart] 3 4 6 7 | call@0x83 pow: [restart] 3 || 4 [end]",
    "         3   6.1%  main: [restart] 3 4 6 7 | call@0x83 pow: [restart] 3 || 5 | ret main: 8 [end]",
    "         1   2.0%  main: 2 3 4 6 8 [end]",
    "         1   2.0%  main: [restart] 3 || 9 [exit]",
];

/// 12 paths executed, 9 of them through a call (all but the three of main
/// alone); 36 potential (Fig. 8's `profile[36]`); no call site cut.
const FIG4_HEADER: &str = "context paths: 36 potential, 12 executed (9 across a call), \
                           49 executions in 1 run(s); 0 of 2 call sites cut";

#[test]
fn figure_4_call_sites_are_where_counted_by_hand() {
    assert_eq!(call_offsets("figure4.wat"), FIG4_CALLS);
    assert_eq!(call_offsets("nonleaf.wat"), NONLEAF_CALLS);
}

/// `report` of a context profile of Fig. 4: the header's totals and every
/// row, each path as its blocks with the calls and returns it crosses, the
/// context-prefix apart from the active-suffix.
#[test]
fn report_of_figure_4_renders_each_path() {
    // pow(18, 2) + pow(18, 2) = 648.
    let report = run_and_report("figure4.wat", "all", "648", FIG4_HEADER).report;
    let rows = report_rows(&report);
    // The count-9 path of the first call site: restarted at main's loop
    // head (the context-prefix), then i % 2 == 0 (4 -> 5), the call at
    // 0x72 into pow, pow's first iteration up to its backedge.
    assert!(
        rows.contains(&"         9  18.4%  main: [restart] 3 || 4 5 | call@0x72 pow: 2 3 4 [end]")
    );
    // Its continuation: pow restarted at its loop head in the context of
    // that call, the second iteration up to the backedge.
    assert!(rows.contains(
        &"         9  18.4%  main: [restart] 3 4 5 | call@0x72 pow: [restart] 3 || 4 [end]"
    ));
    // The path from main's entry has no context-prefix, no `||`.
    assert!(rows.contains(&"         1   2.0%  main: 2 3 4 6 8 [end]"));
    assert_eq!(assert_rows(&report, &FIG4_ROWS).iter().sum::<u64>(), 49);
}

/// `report --function pow`: the nine paths that enter pow (all but main's
/// three of no call), with the same header: totals are of the whole
/// profile, and so are the percentages.
#[test]
fn report_of_one_function_keeps_the_paths_through_it() {
    let run = run_and_report("figure4.wat", "all", "648", FIG4_HEADER);
    let report = ok(&["report", &run.profile, "--function", "pow"]);
    assert_eq!(report.lines().next(), Some(FIG4_HEADER), "{report}");
    let through_pow: Vec<&str> = FIG4_ROWS
        .into_iter()
        .filter(|r| r.contains(" pow: "))
        .collect();
    assert_eq!(through_pow.len(), 9);
    // 49 - 1 - 5 - 1 executions of the paths of main alone.
    assert_eq!(assert_rows(&report, &through_pow).iter().sum::<u64>(), 42);
    // main is on every path.
    assert_eq!(
        report_rows(&ok(&["report", &run.profile, "--function", "main"])).len(),
        12
    );
}

/// `stats --interproc MODE --hybrid POLICY` of each fixture under each of
/// its policies, as printed: the summary, maxEnters per function, which
/// are entry functions, and the call sites cut (T3), where and why.
///
/// Fig. 4, `all` and `leaf` (pow calls nothing: a leaf, so both policies
/// profile both calls across). maxEnters per section 3.2: maxEnters[main]
/// = 1; maxEnters[pow] = sum over callers Q of maxEnters[Q] x (its
/// non-recursive call sites on pow in Q) = 1 x 2 = 2. main, exported, is
/// the one entry function. 36 potential paths by hand (psi of 5.2, x the
/// completions after the function's exit): pow's loop head has x + 1
/// (exit, or body and backedge to GExit), its entry 2(x + 1) (through init
/// or the surrogate edge). In main, after the second site the backedge has
/// 1; block 6 has 1 (skip) + 2(1 + 1) (pow, x = 1) = 5; block 4 has 5
/// (skip) + 2(5 + 1) (pow, x = 5) = 17; the loop head 1 (exit) + 17 = 18;
/// Entry_main 18 (init) + 18 (surrogate) = 36, Fig. 8's `profile[36]`.
/// Piecewise: 8 + 8 + 5 = 21 (section 6's equation for numValidComps([e :
/// Entry_global]) of Fig. 4), with the same maxEnters.
///
/// Fig. 4, `cut:pow` (by callee) and `cut:0x72,0x83` (by site): both sites
/// cut for `hybrid`; pow becomes an entry function (T3: Entry_global ->
/// Entry_pow), entered once per path (no call site left enters it). 14
/// potential paths (interproc_paper.rs derives them: main 5 + 5, pow 2 +
/// 2).
///
/// nonleaf.wat, `all`: leaf has 2 paths (then, else); main's loop head has
/// 1 (exit) + 1 x 2 (mid's one path into leaf's 2) x 2 (leaf) = 5
/// completions, Entry_main 5 + 5 (init or surrogate) = 10. maxEnters: main
/// 1; mid 1 x 1 = 1; leaf 1 x 1 (main's site) + 1 x 1 (mid's site) = 2.
///
/// nonleaf.wat, `leaf`, `cut:mid` and `cut:0x55`: main's call to mid (mid
/// calls leaf: no leaf) is cut at 0x55 for `hybrid`; main's and mid's calls
/// to leaf are kept. A summary edge stands for mid: main's loop head has 1
/// + 2 (leaf) = 3, Entry_main 6; mid is an entry function with 2 (leaf): 8.
/// maxEnters: mid 1 (its own entry), leaf still 1 + 1 = 2.
const STATS: [(&str, &str, &[&str], &str); 5] = [
    (
        "figure4.wat",
        "context",
        &["all", "leaf"],
        "\
Context paths: 36 potential; 2 call sites, 2 profiled across, 0 cut; 0 functions truncated
   index    maxEnters  entry  calls  function
       0            2             0  pow
       1            1    yes      2  main
",
    ),
    (
        "figure4.wat",
        "piecewise",
        &["all"],
        "\
Piecewise paths: 21 potential; 2 call sites, 2 profiled across, 0 cut; 0 functions truncated
   index    maxEnters  entry  calls  function
       0            2             0  pow
       1            1    yes      2  main
",
    ),
    (
        "figure4.wat",
        "context",
        &["cut:pow", "cut:0x72,0x83"],
        "\
Context paths: 14 potential; 2 call sites, 0 profiled across, 2 cut; 0 functions truncated
   index    maxEnters  entry  calls  function
       0            1    yes      0  pow
       1            1    yes      2  main
cut call sites (T3):
  call@0x72 in func[1]: hybrid
  call@0x83 in func[1]: hybrid
",
    ),
    (
        "nonleaf.wat",
        "context",
        &["all"],
        "\
Context paths: 10 potential; 3 call sites, 3 profiled across, 0 cut; 0 functions truncated
   index    maxEnters  entry  calls  function
       0            2             0  leaf
       1            1             1  mid
       2            1    yes      2  main
",
    ),
    (
        "nonleaf.wat",
        "context",
        &["leaf", "cut:mid", "cut:0x55"],
        "\
Context paths: 8 potential; 3 call sites, 2 profiled across, 1 cut; 0 functions truncated
   index    maxEnters  entry  calls  function
       0            2             0  leaf
       1            1    yes      1  mid
       2            1    yes      2  main
cut call sites (T3):
  call@0x55 in func[2]: hybrid
",
    ),
];

#[test]
fn stats_give_potential_paths_max_enters_and_cuts() {
    for (wat, mode, policies, expected) in STATS {
        for policy in policies {
            let args = ["stats", "--interproc", mode, "--hybrid", policy];
            let stats = ok(&[&args[..], &[&fixture(wat)]].concat());
            assert_eq!(stats, expected, "{wat} {mode} {policy}");
        }
    }
}

/// `--hybrid budget:N` on Fig. 4 cuts the largest call sites first until
/// at most N paths remain (section 8). By hand, from [`STATS`]' derivation:
/// the site at 0x72 (block 4) carries 2(5 + 1) = 12 completions, the one
/// at 0x83 (block 6) 2(1 + 1) = 4. Cutting 0x72 makes it a summary edge:
/// block 4 has 5 (skip) + 5 (over the call) = 10, the loop head 11,
/// Entry_main 22, and pow, an entry function, its 2 + 2: 26. Both cut: 14,
/// the fewest any cuts give; a budget below that is a one-line error that
/// says so, not an overflow of 64 bits (which it reported before). The
/// rule is greedy: a budget of 25 cuts both sites, the largest first,
/// though cutting only the smaller one might have fitted.
#[test]
fn hybrid_budget_cuts_the_largest_sites_down_to_the_budget() {
    let fig4 = fixture("figure4.wat");
    for (budget, summary) in [
        ("36", "36 potential; 2 call sites, 2 profiled across, 0 cut"),
        ("35", "26 potential; 2 call sites, 1 profiled across, 1 cut"),
        ("26", "26 potential; 2 call sites, 1 profiled across, 1 cut"),
        ("25", "14 potential; 2 call sites, 0 profiled across, 2 cut"),
        ("14", "14 potential; 2 call sites, 0 profiled across, 2 cut"),
    ] {
        let policy = format!("budget:{budget}");
        let stats = ok(&[
            "stats",
            "--interproc",
            "context",
            "--hybrid",
            &policy,
            &fig4,
        ]);
        let first = stats.lines().next().unwrap_or("");
        assert_eq!(
            first,
            format!("Context paths: {summary}; 0 functions truncated"),
            "{policy}"
        );
    }
    let out = std::env::temp_dir().join(format!("pathprof-budget-{}.wasm", std::process::id()));
    let o = pathprof(&[
        "instrument",
        "--mode",
        "context",
        "--hybrid",
        "budget:13",
        &fig4,
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {fig4}: --hybrid budget:13: 14 interprocedural paths even with \
             every call site cut, more than the budget of 13\n"
        )
    );
    assert!(!out.exists(), "no output on an error");
}

/// `--hybrid cut:pow` on the command line (its stats: [`STATS`]): run, the
/// calls no longer join main's paths to pow's. By hand: main's paths are
/// its own with a summary edge per call: i = 1 from its entry: 1;
/// restarted, i = 2, 4, 8, 10, 14, 16 (first call only): 6; i = 5, 7, 11,
/// 13, 17 (none): 5; i = 6, 12, 18 (both): 3; i = 3, 9, 15 (second only):
/// 3; i = 19 to the exit: 1. pow, an entry function now: its 15 calls each
/// run entry -> backedge, restart -> backedge and restart -> exit once: 15,
/// 15, 15. 64 executions; 15/64 = 23.4%, 6/64 = 9.4%, 5/64 = 7.8%, 3/64 =
/// 4.7%, 1/64 = 1.6%.
#[test]
fn hybrid_cut_on_the_command_line() {
    let header = "context paths: 14 potential, 9 executed (0 across a call), \
                  64 executions in 1 run(s); 2 of 2 call sites cut";
    let report = run_and_report("figure4.wat", "cut:pow", "648", header).report;
    let expected = [
        "        15  23.4%  pow: 2 3 4 [end]",
        "        15  23.4%  pow: [restart] 3 || 4 [end]",
        "        15  23.4%  pow: [restart] 3 || 5 [exit]",
        "         6   9.4%  main: [restart] 3 || 4 5 [call@0x72] 6 8 [end]",
        "         5   7.8%  main: [restart] 3 || 4 6 8 [end]",
        "         3   4.7%  main: [restart] 3 || 4 5 [call@0x72] 6 7 [call@0x83] 8 [end]",
        "         3   4.7%  main: [restart] 3 || 4 6 7 [call@0x83] 8 [end]",
        "         1   1.6%  main: 2 3 4 6 8 [end]",
        "         1   1.6%  main: [restart] 3 || 9 [exit]",
    ];
    assert_rows(&report, &expected);
}

/// `--hybrid leaf` on Fig. 4: pow is a leaf, both calls to it stay
/// interprocedural ([`STATS`]), and the run gives the twelve paths of
/// `all`.
#[test]
fn hybrid_leaf_keeps_calls_to_a_leaf() {
    let report = run_and_report("figure4.wat", "leaf", "648", FIG4_HEADER).report;
    assert_rows(&report, &FIG4_ROWS);
}

// nonleaf.wat by hand (see the module doc for the rules):
// - leaf (function 0): 2 = `x & 1?` (0x29), 3 = then `1` (0x30), 4 = else
//   `2` (0x33), 5 = the join after the `if` (0x36).
// - mid (function 1): 2 = its whole body with the call to leaf (0x39).
// - main (function 2): 2 = `i = 0` (0x42), 3 = loop head `i >= 5?` (0x4a),
//   4 = body with both calls and `br head` (0x51; backedge 4 -> 3), 5 =
//   after the loop (0x6e).
// - Offsets: one type fewer than figure4.wat's (leaf and mid share
//   (i32) -> i32: types end at 0x13), three functions (0x14-0x19), the
//   export (0x1a-0x23), code at 0x24; leaf's body 0x28-0x36 (size 15), mid's
//   size at 0x37, its `local.get 0` at 0x39 and its call at 0x3b; main's
//   size at 0x3e, locals 0x3f-0x41, `i32.const 0; local.set; block; loop`
//   (8) from 0x42 put the loop head at 0x4a; `local.get; i32.const 5;
//   i32.ge_s; br_if` (7) the body at 0x51; `local.get s; local.get i`
//   (4) the call to mid at 0x55; `call; i32.add; local.set; local.get s;
//   local.get i` (9) the call to leaf at 0x5e.
const NONLEAF_CALLS: [usize; 3] = [0x3b, 0x55, 0x5e];

/// `--hybrid leaf` on nonleaf.wat cuts main's call to mid (mid calls leaf)
/// and keeps main's and mid's calls to leaf ([`STATS`] says where and why);
/// the run's counts are the hand-derived ones.
///
/// Counts by hand: i = 0..4; leaf(i) takes its then-arm for odd i (1, 3)
/// and its else-arm for even i (0, 2, 4); mid(i) and leaf(i) take the same
/// arm. Cut: main's paths are i = 0 from the entry (else): 1; restarted,
/// odd: 2; even: 2; i = 5 to the exit: 1; mid's, from its entry through
/// leaf to its exit: then 2, else 3. 11 executions: 3 -> 27.3%, 2 ->
/// 18.2%, 1 -> 9.1%. main returns sum over i of 2 x leaf(i) = 16.
#[test]
fn hybrid_leaf_cuts_a_call_to_a_non_leaf() {
    let header = "context paths: 8 potential, 6 executed (5 across a call), \
                  11 executions in 1 run(s); 1 of 3 call sites cut";
    let run = run_and_report("nonleaf.wat", "leaf", "16", header);
    let mid_rows = [
        "         3  27.3%  mid: 2 | call@0x3b leaf: 2 4 5 | ret mid: [exit]",
        "         2  18.2%  mid: 2 | call@0x3b leaf: 2 3 5 | ret mid: [exit]",
    ];
    let main_rows = [
        "         2  18.2%  main: [restart] 3 || 4 [call@0x55] | call@0x5e leaf: 2 3 5 | ret main: [end]",
        "         2  18.2%  main: [restart] 3 || 4 [call@0x55] | call@0x5e leaf: 2 4 5 | ret main: [end]",
        "         1   9.1%  main: 2 3 4 [call@0x55] | call@0x5e leaf: 2 4 5 | ret main: [end]",
        "         1   9.1%  main: [restart] 3 || 5 [exit]",
    ];
    assert_rows(&run.report, &[&mid_rows[..], &main_rows[..]].concat());
    // mid's own paths are the only ones through it: main passes over it by
    // the summary edge.
    let through_mid = ok(&["report", &run.profile, "--function", "mid"]);
    assert_rows(&through_mid, &mid_rows);

    // Without the cut, main's paths run through mid into leaf (the
    // function's exit is no step of its own: `ret mid: | ret main:`), and
    // mid is no entry: 4 paths (3 through a call: all but i = 5's), 6
    // executions: 2 -> 33.3%, 1 -> 16.7%.
    let header = "context paths: 10 potential, 4 executed (3 across a call), \
                  6 executions in 1 run(s); 0 of 3 call sites cut";
    let report = run_and_report("nonleaf.wat", "all", "16", header).report;
    let through = "| call@0x55 mid: 2 | call@0x3b leaf:";
    let expected = [
        format!("         2  33.3%  main: [restart] 3 || 4 {through} 2 3 5 | ret mid: | ret main: | call@0x5e leaf: 2 3 5 | ret main: [end]"),
        format!("         2  33.3%  main: [restart] 3 || 4 {through} 2 4 5 | ret mid: | ret main: | call@0x5e leaf: 2 4 5 | ret main: [end]"),
        format!("         1  16.7%  main: 2 3 4 {through} 2 4 5 | ret mid: | ret main: | call@0x5e leaf: 2 4 5 | ret main: [end]"),
        "         1  16.7%  main: [restart] 3 || 5 [exit]".to_string(),
    ];
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_rows(&report, &expected);
}
