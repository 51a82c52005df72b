//! Sparse profiles (`run --sparse`): the functions that ran, the others by
//! index. Checked against the trace oracle on every fixture run: a function
//! is listed exactly when the trace saw it count something, its counts are
//! the trace's, and every other instrumented function is in `unrun`. Then
//! the command line: `run`, `collect` and `merge --sparse`, and `export
//! --module`, which gives the dense profile's LCOV.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use common::bin::{pathprof, stderr};
use common::oracle;
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_profile::Profile;
use pathprof_runner::TraceTo;

/// `module` instrumented for `technique`, run, and collected sparse; with
/// the indices of the functions its metadata instruments.
fn sparse_run(
    engine: &wasmtime::Engine,
    module: &[u8],
    technique: Technique,
    inv: &Invocation,
) -> (Profile, BTreeSet<u32>) {
    let inst = driver::instrument(module, technique, &driver::Options::default()).unwrap();
    let out = programs::run(engine, &inst.bytes, inv, false);
    let counters = out.counters.as_ref().expect("a counter memory");
    let frames = out
        .exit
        .is_abrupt()
        .then_some(out.exit.unfinished_frames(&out.abrupt_stack));
    let profile = driver::collect_sparse(&inst.bytes, &[], counters, frames, |meta| {
        Ok(meta.check_counters(counters, "run", "module")?)
    })
    .expect("collect sparse");
    let meta = inst.meta().unwrap();
    let instrumented = meta.layout.functions.iter().map(|f| f.func_index).collect();
    (profile, instrumented)
}

fn listed(p: &Profile) -> BTreeSet<u32> {
    p.functions.iter().map(|f| f.func_index).collect()
}

/// What the trace counted: paths, self loops and edges.
fn traced(
    engine: &wasmtime::Engine,
    module: &[u8],
    inv: &Invocation,
    cut_as: &Profile,
) -> oracle::Counts {
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default()).unwrap();
    let sink = Arc::new(Mutex::new(oracle::CountingSink::new(
        programs::graphs_cut_as(module, cut_as),
    )));
    programs::run_to(engine, &traced.bytes, inv, Some(TraceTo::new(sink.clone())));
    let counts = std::mem::take(&mut sink.lock().unwrap().counter.counts);
    counts
}

fn funcs<K>(m: &BTreeMap<K, u64>, func: impl Fn(&K) -> u32) -> BTreeSet<u32> {
    m.iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, _)| func(k))
        .collect()
}

#[test]
fn sparse_profiles_list_the_functions_the_trace_saw_count() {
    let engine = crate::common::programs::engine();
    let (mut runs, mut left_out) = (0, 0);
    for (name, module, inv) in programs::oracle_runs() {
        let what = format!("{name} {inv:?}");
        let (path, instrumented) = sparse_run(&engine, &module, Technique::Path, &inv);
        // The dense profile gives the truncation cuts the oracle counts with
        // (no function of a fixture is truncated differently).
        let (_, dense) = programs::profiled_run(
            &engine,
            &module,
            Technique::Path,
            &driver::Options::default(),
            &inv,
        );
        let expected = traced(&engine, &module, &inv, &dense);

        let got = programs::path_counts(&path);
        assert_eq!(got.paths, expected.paths, "{what}: path counts");
        assert_eq!(got.self_loops, expected.self_loops, "{what}: self loops");
        let mut ran = funcs(&expected.paths, |k| k.func);
        ran.extend(funcs(&expected.self_loops, |k| k.0));
        assert_eq!(listed(&path), ran, "{what}: the path profile's functions");
        let unrun: BTreeSet<u32> = instrumented.difference(&ran).copied().collect();
        assert_eq!(
            path.unrun.iter().copied().collect::<BTreeSet<_>>(),
            unrun,
            "{what}"
        );

        let (edge, _) = sparse_run(&engine, &module, Technique::Edge, &inv);
        assert_eq!(
            programs::edge_counts(&edge),
            expected.edges,
            "{what}: edge counts"
        );
        let ran = funcs(&expected.edges, |k| k.0);
        assert_eq!(listed(&edge), ran, "{what}: the edge profile's functions");
        assert_eq!(
            edge.instrumented(),
            instrumented.iter().copied().collect::<Vec<_>>()
        );

        // The dense profile, made sparse, is the same profile.
        let mut made = dense;
        made.make_sparse().unwrap();
        assert_eq!(made, path, "{what}");
        runs += 1;
        left_out += path.unrun.len();
    }
    assert!(runs >= 100, "only {runs} runs");
    assert!(left_out > 1000, "only {left_out} functions left out in all");
}

fn tmp_file(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = pathprof(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o.stdout
}

/// The command line: a sparse profile's LCOV with `--module` is the dense
/// profile's; merging sparse profiles equals merging dense ones made
/// sparse; `collect --sparse` of saved counters equals `run --sparse`.
#[test]
fn the_command_line_writes_reads_and_merges_sparse_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let program = programs::root()
        .join("tests/fixtures/c/build/sort.O0.wasm")
        .display()
        .to_string();
    let (sparse, dense) = (tmp_file(&dir, "s.profile"), tmp_file(&dir, "d.profile"));
    let inst = tmp_file(&dir, "sort.inst.wasm");
    let args = ["-q", "5", "3", "9", "-1", "7"];
    let run = |more: &[&str]| {
        let mut cmd = vec!["run"];
        cmd.extend_from_slice(more);
        cmd.extend([program.as_str(), "--"]);
        cmd.extend(args);
        ok(&cmd);
    };
    run(&["--sparse", "-o", &sparse]);
    run(&["-o", &dense]);
    ok(&["instrument", &program, "-o", &inst]);
    // `collect --sparse` of the counters a host saved is `run --sparse`'s.
    let engine = crate::common::programs::engine();
    let opts = pathprof_runner::RunOptions::captured(std::iter::once("sort").chain(args));
    let saved = pathprof_runner::run_command(&engine, &std::fs::read(&inst).unwrap(), &opts)
        .unwrap()
        .counters
        .unwrap();
    let counters = tmp_file(&dir, "sort.counters");
    std::fs::write(&counters, saved).unwrap();
    let collected = tmp_file(&dir, "c.profile");
    ok(&["collect", "--sparse", &inst, &counters, "-o", &collected]);
    assert_eq!(
        std::fs::read(&collected).unwrap(),
        std::fs::read(&sparse).unwrap()
    );
    let s = Profile::read(dir.path().join("s.profile").as_path()).unwrap();
    let d = Profile::read(dir.path().join("d.profile").as_path()).unwrap();
    assert!(s.is_sparse() && !d.is_sparse());
    assert_eq!(s.instrumented(), d.instrumented());
    assert!(std::fs::metadata(&sparse).unwrap().len() < std::fs::metadata(&dense).unwrap().len());

    let lcov_dense = ok(&["export", "--format", "lcov", &dense]);
    let lcov_filled = ok(&["export", "--format", "lcov", &sparse, "--module", &inst]);
    assert_eq!(
        String::from_utf8_lossy(&lcov_filled),
        String::from_utf8_lossy(&lcov_dense)
    );
    let o = pathprof(&["export", "--format", "lcov", &sparse]);
    assert!(o.status.success());
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: note: {sparse} is sparse: its {} functions that never ran are left out (give --module with the instrumented module to include them)\n",
            s.unrun.len()
        )
    );
    // `show` takes the module as `export` does.
    let show_dense = ok(&["show", &dense]);
    assert_eq!(ok(&["show", &sparse, "--module", &inst]), show_dense);
    let o = pathprof(&["export", "--format", "lcov", &sparse, "--module", &program]);
    assert_eq!(
        stderr(&o),
        format!("pathprof: error: {program}: not a module instrumented by pathprof (no __pathprof.meta section)\n")
    );

    let (m_sparse, m_dense) = (tmp_file(&dir, "ms.profile"), tmp_file(&dir, "md.profile"));
    ok(&[
        "merge", &sparse, &dense, &sparse, "-o", &m_sparse, "--sparse",
    ]);
    ok(&["merge", &dense, &dense, &dense, "-o", &m_dense, "--sparse"]);
    assert_eq!(
        std::fs::read(&m_sparse).unwrap(),
        std::fs::read(&m_dense).unwrap()
    );

    // Intra-context profiles (paths within a function) are sparse too, and
    // merge as the dense ones do: two runs of other inputs.
    let mut merged = Vec::new();
    for sparse_flag in [true, false] {
        let mut outs = Vec::new();
        for (i, input) in ["-b 4 2 8", "-i 9 8 7 6"].into_iter().enumerate() {
            let out = tmp_file(&dir, &format!("ic{i}{sparse_flag}.profile"));
            let mut cmd = vec!["run", "--mode", "intra-context", "-o", &out];
            if sparse_flag {
                cmd.push("--sparse");
            }
            cmd.extend([program.as_str(), "--"]);
            cmd.extend(input.split(' '));
            ok(&cmd);
            outs.push(out);
        }
        let out = tmp_file(&dir, &format!("ic{sparse_flag}.profile"));
        ok(&["merge", &outs[0], &outs[1], "--sparse", "-o", &out]);
        merged.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(merged[0], merged[1]);
    let ic = Profile::from_bytes(std::path::Path::new("ic"), &merged[0]).unwrap();
    assert!(ic.is_sparse() && !ic.functions.is_empty());

    // Context and piecewise profiles keep the functions their paths run
    // in: the report of the sparse profile is the dense one's, block for
    // block and line for line.
    for mode in ["context", "piecewise"] {
        let (s_out, d_out) = (tmp_file(&dir, "cs.profile"), tmp_file(&dir, "cd.profile"));
        run(&["--mode", mode, "--sparse", "-o", &s_out]);
        run(&["--mode", mode, "-o", &d_out]);
        let (cs, cd) = (
            Profile::read(std::path::Path::new(&s_out)).unwrap(),
            Profile::read(std::path::Path::new(&d_out)).unwrap(),
        );
        assert!(cs.is_sparse() && cs.functions.len() > 3, "{mode}");
        assert_eq!(cs.interproc, cd.interproc, "{mode}");
        assert_eq!(cs.instrumented(), cd.instrumented(), "{mode}");
        let report = |p: &str| ok(&["report", p, "--top", "1000"]);
        assert_eq!(
            String::from_utf8_lossy(&report(&s_out)),
            String::from_utf8_lossy(&report(&d_out)),
            "{mode}"
        );
    }
    let o = pathprof(&["run", "--sparse", "--mode", "ippp", "-o", &sparse, &program]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: --sparse: a segments profile cannot be sparse: its segments are the module's\n"
    );
    assert!(!o.status.success());
}

/// A module of `n` small functions of which `_start` calls the first.
fn many_functions(n: usize) -> String {
    let mut wat = String::from("(module\n");
    for i in 0..n {
        wat += &format!(
            "  (func $f{i} (param i32) (result i32) (if (result i32) (local.get 0) (then (i32.const {i})) (else (i32.const 1))))\n"
        );
    }
    wat += "  (func (export \"_start\") (drop (call $f0 (i32.const 1)))))\n";
    wat
}

/// `run` suggests `--sparse` when at least 10,000 functions never ran, and
/// not below that or with it.
#[test]
fn run_suggests_sparse_for_a_module_that_mostly_never_ran() {
    let dir = tempfile::tempdir().unwrap();
    let out = tmp_file(&dir, "p.profile");
    for (n, note) in [(10_001, true), (10_000, false)] {
        let wat = dir.path().join(format!("many{n}.wat"));
        std::fs::write(&wat, many_functions(n)).unwrap();
        let wat = wat.display().to_string();
        let o = pathprof(&["run", "-o", &out, &wat]);
        assert!(o.status.success(), "{}", stderr(&o));
        let expected = format!(
            "pathprof: profile written to {out}\n{}",
            if note {
                format!("pathprof: note: {} of its {} functions never ran; --sparse leaves them out (a profile and a collection the size of what ran)\n", n - 1, n + 1)
            } else {
                String::new()
            }
        );
        assert_eq!(stderr(&o), expected, "{n} functions");
        let o = pathprof(&["run", "--sparse", "-o", &out, &wat]);
        assert_eq!(stderr(&o), format!("pathprof: profile written to {out}\n"));
        let p = Profile::read(dir.path().join("p.profile").as_path()).unwrap();
        assert_eq!((p.functions.len(), p.unrun.len()), (2, n - 1));
    }
}
