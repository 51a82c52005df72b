//! `pathprof export` and `pathprof diff` checked against oracles that
//! share no code with them: every C fixture run's LCOV line and branch
//! records against the counts of a trace of the same run (a block's count
//! is how often an edge entered it; a line's, the largest count of the
//! blocks that begin on it), the summaries Debian's `lcov` and `genhtml`
//! read from the file, and diffs against shares computed from the raw
//! path counts.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_profile::{FunctionData, Profile};

type Lines = BTreeMap<(String, u32), u64>;
type Branches = BTreeMap<(String, u32, u32, u32), Option<u64>>;

/// The DA and BRDA records of an LCOV tracefile.
fn parse_lcov(text: &str) -> (Lines, Branches) {
    let (mut lines, mut branches) = (Lines::new(), Branches::new());
    let mut file = String::new();
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("SF:") {
            file = f.to_string();
        } else if let Some(d) = l.strip_prefix("DA:") {
            let (line, count) = d.split_once(',').unwrap();
            let old = lines.insert(
                (file.clone(), line.parse().unwrap()),
                count.parse().unwrap(),
            );
            assert!(old.is_none(), "line {file}:{line} twice");
        } else if let Some(b) = l.strip_prefix("BRDA:") {
            let v: Vec<&str> = b.split(',').collect();
            let taken = (v[3] != "-").then(|| v[3].parse().unwrap());
            let key = (
                file.clone(),
                v[0].parse().unwrap(),
                v[1].parse().unwrap(),
                v[2].parse().unwrap(),
            );
            let old = branches.insert(key, taken);
            assert!(old.is_none(), "branch {b} twice");
        }
    }
    (lines, branches)
}

/// The records a trace of the run implies, with the profile's blocks,
/// edges and source lines (the module's structure, not its counts).
fn from_trace(profile: &Profile, trace: &[(u32, u32)]) -> (Lines, Branches) {
    let mut taken: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for &e in trace {
        *taken.entry(e).or_insert(0) += 1;
    }
    let (mut lines, mut branches) = (Lines::new(), Branches::new());
    for f in &profile.functions {
        let mut entered = vec![0u64; f.blocks.len()];
        for (e, edge) in f.edges.iter().enumerate() {
            if let Some(c) = entered.get_mut(edge.dst.index()) {
                *c += taken.get(&(f.func_index, e as u32)).copied().unwrap_or(0);
            }
        }
        for (b, block) in f.blocks.iter().enumerate() {
            let Some(src) = block.as_ref().and_then(|b| b.source.clone()) else {
                continue;
            };
            let (file, line @ 1..) = (&src.file, src.line) else {
                continue;
            };
            let l = lines.entry((file.to_string(), line)).or_insert(0);
            *l = (*l).max(entered[b]);
            let outs: Vec<usize> = (0..f.edges.len())
                .filter(|&e| f.edges[e].src.index() == b)
                .collect();
            if outs.len() < 2 {
                continue;
            }
            for (i, &e) in outs.iter().enumerate() {
                let count = taken.get(&(f.func_index, e as u32)).copied().unwrap_or(0);
                let offset = block.as_ref().unwrap().offset;
                let key = (file.to_string(), line, offset, i as u32);
                branches.insert(key, (entered[b] > 0).then_some(count));
            }
        }
    }
    (lines, branches)
}

/// Equal maps, or a failure naming the first keys that differ.
fn assert_same<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    got: &BTreeMap<K, V>,
    want: &BTreeMap<K, V>,
    what: &str,
) {
    let keys: std::collections::BTreeSet<&K> = got.keys().chain(want.keys()).collect();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| got.get(k) != want.get(k))
        .take(8)
        .map(|k| format!("{k:?}: {:?} against {:?}", got.get(k), want.get(k)))
        .collect();
    assert!(differ.is_empty(), "{what}: {}", differ.join("; "));
}

fn fixture(name: &str) -> Vec<u8> {
    let path = programs::root().join(format!("tests/fixtures/c/build/{name}.wasm"));
    std::fs::read(path).expect("run scripts/build-c-fixtures.sh first")
}

/// Every C fixture run, in path and edge mode: the LCOV records equal the
/// trace's.
#[test]
fn lcov_records_equal_the_counts_of_a_trace() {
    let engine = crate::common::programs::engine();
    let mut runs = 0;
    let mut hit_lines = 0;
    for (name, inv) in programs::c_cases() {
        let module = fixture(&format!("{name}.O2"));
        let traced = driver::instrument(&module, Technique::Trace, &Default::default()).unwrap();
        let trace = programs::run(&engine, &traced.bytes, &inv, true).trace;
        for technique in [Technique::Path, Technique::Edge] {
            let (out, profile) =
                programs::profiled_run(&engine, &module, technique, &Default::default(), &inv);
            // A path profile does not count the paths in flight when a run
            // ends abruptly (exit() with a non-zero status, a trap); an
            // edge profile counts every edge.
            if technique == Technique::Path && out.exit.is_abrupt() {
                continue;
            }
            let files = pathprof::export::coverage(&profile).unwrap();
            let (lines, branches) = parse_lcov(&pathprof::export::lcov(&files));
            let (want_lines, want_branches) = from_trace(&profile, &trace);
            let what = format!("{name} {inv:?} {technique:?}");
            assert_same(&lines, &want_lines, &format!("{what}: lines"));
            assert_same(&branches, &want_branches, &format!("{what}: branches"));
            hit_lines += lines.values().filter(|&&c| c > 0).count();
            runs += 1;
        }
    }
    assert!(
        runs >= 60 && hit_lines > 1000,
        "{runs} runs, {hit_lines} lines hit"
    );
}

/// A path profile of `sort.O0 -q 5 3 9 -1 7`, and the trace of the run.
fn sort_run() -> (Profile, Vec<(u32, u32)>) {
    let engine = crate::common::programs::engine();
    let module = fixture("sort.O0");
    let inv = Invocation::command(&["sort", "-q", "5", "3", "9", "-1", "7"]);
    let (_, profile) =
        programs::profiled_run(&engine, &module, Technique::Path, &Default::default(), &inv);
    let traced = driver::instrument(&module, Technique::Trace, &Default::default()).unwrap();
    (
        profile,
        programs::run(&engine, &traced.bytes, &inv, true).trace,
    )
}

/// `lcov --summary` and `genhtml` read the export and count what the trace
/// says.
#[test]
fn lcov_and_genhtml_read_the_export() {
    let (profile, trace) = sort_run();
    let (lines, branches) = from_trace(&profile, &trace);
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("sort.info");
    let files = pathprof::export::coverage(&profile).unwrap();
    let text = pathprof::export::lcov(&files);
    let (got_lines, got_branches) = parse_lcov(&text);
    assert_same(&got_lines, &lines, "lines");
    assert_same(&got_branches, &branches, "branches");
    std::fs::write(&info, text).unwrap();
    let out = Command::new("lcov")
        .args(["--rc", "lcov_branch_coverage=1", "--summary"])
        .arg(&info)
        .output()
        .expect("lcov (Debian's lcov package; scripts/setup.sh installs it)");
    let summary =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let hit = lines.values().filter(|&&c| c > 0).count();
    let taken = branches.values().filter(|&&t| t > Some(0)).count();
    let want_lines = format!("({hit} of {} lines)", lines.len());
    let want_branches = format!("({taken} of {} branches)", branches.len());
    assert!(
        summary.contains(&want_lines),
        "{summary}\nwanted {want_lines}"
    );
    assert!(
        summary.contains(&want_branches),
        "{summary}\nwanted {want_branches}"
    );
    let html = dir.path().join("html");
    let st = Command::new("genhtml")
        .args(["--no-source", "--branch-coverage", "-q", "-o"])
        .arg(&html)
        .arg(&info)
        .status()
        .expect("genhtml");
    assert!(st.success());
    let index = std::fs::read_to_string(html.join("index.html")).unwrap();
    // The header table: lines hit and found, then functions, branches.
    for n in [hit, lines.len(), taken, branches.len()] {
        let cell = format!("headerCovTableEntry\">{n}</td>");
        assert!(index.contains(&cell), "genhtml's index has no {cell}");
    }
}

/// The share of each path (self loops included) in a path profile, from
/// the raw counts.
fn shares(p: &Profile) -> BTreeMap<(u32, bool, u64), f64> {
    let mut counts = BTreeMap::new();
    for f in &p.functions {
        let FunctionData::Path { counts: c, .. } = &f.data else {
            panic!("a path profile")
        };
        for &(n, k) in &c.paths {
            counts.insert((f.func_index, false, n), k);
        }
        for (i, &k) in c.self_loops.iter().enumerate().filter(|(_, &k)| k > 0) {
            counts.insert((f.func_index, true, i as u64), k);
        }
    }
    let total: u64 = counts.values().sum();
    counts
        .into_iter()
        .map(|(key, c)| (key, 100.0 * c as f64 / total as f64))
        .collect()
}

#[test]
fn diff_finds_the_paths_whose_share_changed() {
    let engine = crate::common::programs::engine();
    let module = fixture("sort.O2");
    let run = |i: &Invocation| {
        programs::profiled_run(&engine, &module, Technique::Path, &Default::default(), i).1
    };
    let (a, b) = (
        run(&Invocation::command(&["sort", "-q", "3", "1"])),
        run(&Invocation::command(&[
            "sort", "-i", "9", "8", "7", "6", "5",
        ])),
    );
    let same = pathprof::diff::diff(&a, &a, "a").unwrap();
    assert!((same.overlap - 100.0).abs() < 1e-9 && same.paths.is_empty());
    let d = pathprof::diff::diff(&a, &b, "b").unwrap();
    let (sa, sb) = (shares(&a), shares(&b));
    let appeared = sb.keys().filter(|k| !sa.contains_key(k)).count();
    let disappeared = sa.keys().filter(|k| !sb.contains_key(k)).count();
    let overlap: f64 = sa
        .iter()
        .filter_map(|(k, x)| sb.get(k).map(|y| x.min(*y)))
        .sum();
    assert_eq!((d.appeared, d.disappeared), (appeared, disappeared));
    assert!(appeared > 0 && disappeared > 0);
    assert!(
        (d.overlap - overlap).abs() < 1e-9,
        "{} against {overlap}",
        d.overlap
    );
    let top = &d.paths[0];
    let biggest = sa
        .keys()
        .chain(sb.keys())
        .map(|k| (sb.get(k).unwrap_or(&0.0) - sa.get(k).unwrap_or(&0.0)).abs())
        .fold(0.0, f64::max);
    assert!(((top.percent_b - top.percent_a).abs() - biggest).abs() < 1e-9);
    let recurse = fixture("recurse.O2");
    let (_, r) = programs::profiled_run(
        &engine,
        &recurse,
        Technique::Path,
        &Default::default(),
        &Invocation::command(&["recurse", "3"]),
    );
    let err = pathprof::diff::diff(&a, &r, "r.json").unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "r.json: a profile of another module; diff compares two profiles of one module"
    );
}

/// What export refuses: a profile with no source lines, and the
/// interprocedural modes, whose functions carry no edge counts.
#[test]
fn export_refuses_what_has_no_lines() {
    let engine = crate::common::programs::engine();
    let (module, _) = programs::figure4();
    let inv = programs::export_calls(&engine, &module).remove(0);
    let (_, p) =
        programs::profiled_run(&engine, &module, Technique::Path, &Default::default(), &inv);
    let err = pathprof::export::coverage(&p).unwrap_err().to_string();
    assert!(err.starts_with("the profile has no source lines"), "{err}");
    let (_, c) = programs::profiled_run(
        &engine,
        &module,
        Technique::Context,
        &Default::default(),
        &inv,
    );
    let err = pathprof::export::coverage(&c).unwrap_err().to_string();
    assert!(
        err.starts_with("a context profile counts context paths"),
        "{err}"
    );
}

/// `show`: each listed line's count equals the trace's, `--path` marks the
/// lines of the path's blocks in order, files not found are named, and a
/// module without DWARF gets its blocks.
#[test]
fn show_annotates_the_source_with_the_counts_of_a_trace() {
    let engine = crate::common::programs::engine();
    let (profile, trace) = sort_run();
    // The oracle of main's lines: the trace's counts of main's blocks.
    let mut main_only = profile.clone();
    main_only.functions.retain(|f| f.display_name() == "main");
    let (lines, _) = from_trace(&main_only, &trace);
    let top = pathprof::report::hot_rows(&profile, Some("main")).unwrap()[0].clone();
    let opts = pathprof::show::ShowOptions {
        function: Some("main".into()),
        path: Some(top.path),
        source_dirs: vec![programs::root().join("tests/fixtures/c")],
    };
    let text = pathprof::show::show(&profile, &opts).unwrap();
    let sort_c = lines
        .keys()
        .map(|(file, _)| file.clone())
        .find(|file| file.ends_with("/sort.c"))
        .expect("main's lines are in sort.c");
    let (mut counted, mut marked) = (0, BTreeMap::new());
    for l in text.lines().skip(1).take_while(|l| !l.is_empty()) {
        let (left, _) = l.split_once('|').unwrap();
        let cols: Vec<&str> = left.split_whitespace().collect();
        let n: u32 = cols.last().unwrap().parse().unwrap();
        let want = lines.get(&(sort_c.clone(), n));
        match cols.len() {
            1 => assert_eq!(want, None, "line {n} has a block but no count"),
            _ => {
                assert_eq!(Some(&cols[0].parse::<u64>().unwrap()), want, "line {n}");
                counted += 1;
            }
        }
        if cols.len() == 3 {
            for at in cols[1].split(',') {
                marked.insert(at.parse::<usize>().unwrap(), n);
            }
        }
    }
    assert!(counted >= 25, "{counted} lines counted");
    let want_marks: BTreeMap<usize, u32> = top
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let src = b.source.as_ref()?;
            Some((i + 1, src.line)).filter(|&(_, l)| l > 0)
        })
        .collect();
    assert_eq!(marked, want_marks);
    let all = pathprof::show::ShowOptions {
        function: None,
        path: None,
        source_dirs: vec![],
    };
    let text = pathprof::show::show(&profile, &all).unwrap();
    // sort.c is found where it was built; libc's sources are not here.
    let files: std::collections::BTreeSet<&str> = profile
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter().flatten())
        .filter_map(|b| b.source.as_ref().filter(|s| s.line > 0))
        .map(|s| s.file.as_str())
        .collect();
    assert!(text.starts_with(&format!("{sort_c}:\n")), "{text}");
    let note = format!(
        "note: {} source file(s) not found (give --source-dir DIR): ",
        files.len() - 1
    );
    assert!(text.contains(&note), "{note}\n{text}");
    let (module, _) = programs::figure4();
    let inv = programs::export_calls(&engine, &module).remove(0);
    let (_, p) =
        programs::profiled_run(&engine, &module, Technique::Path, &Default::default(), &inv);
    let text = pathprof::show::show(&p, &all).unwrap();
    assert!(text.starts_with("(the module has no DWARF lines: blocks with their byte offsets)\n"));
}
