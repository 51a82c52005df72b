//! Melski & Reps' intraprocedural context paths (TR 1382, section 7),
//! instrumented for real (`--mode intra-context`) and run on wasmtime,
//! against an oracle that cuts the run's edge trace into paths by the
//! section's definition and shares no code with the numbering: a path ends
//! at a backedge or at EXIT; the path that starts after a backedge into
//! loop head `v` is, as its context-prefix, the path that was in flight
//! when control last reached `v` along an edge that is not a backedge, then
//! one trip from `v`. Every C fixture run (O0 and O2) and every WAT fixture
//! export: the decoded profile must equal the oracle's paths and counts.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use common::oracle::FuncGraph;
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_graph::intra_context::ContextStep;
use pathprof_graph::{Cfg, EdgeId, NodeId};

/// (function, steps, where the active-suffix starts).
type Key = (u32, Vec<ContextStep>, usize);

struct Activation {
    func: u32,
    steps: Vec<ContextStep>,
    active_start: usize,
    /// Per loop head: the path in flight when control last entered it
    /// along an edge that is not a backedge.
    entered: HashMap<NodeId, Vec<ContextStep>>,
}

/// The paths of `trace` in the functions of `profiled`. As the Ball-Larus
/// oracle, an exception is taken to be caught at most one frame above the
/// thrower, and a catch starts a new path in the catching activation.
fn oracle(
    trace: &[(u32, u32)],
    graphs: &BTreeMap<u32, FuncGraph>,
    profiled: &HashSet<u32>,
) -> BTreeMap<Key, u64> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<Activation> = Vec::new();
    let heads = |g: &FuncGraph| -> HashSet<NodeId> {
        g.backedges().iter().map(|&e| g.cfg.dst(e)).collect()
    };
    let mut emit = |a: &Activation, end: Option<NodeId>| {
        let mut steps = a.steps.clone();
        steps.extend(end.map(ContextStep::End));
        if profiled.contains(&a.func) {
            *out.entry((a.func, steps, a.active_start)).or_insert(0) += 1;
        }
    };
    for &(f, e) in trace {
        let g = &graphs[&f];
        let edge = EdgeId::new(e as usize);
        let (src, dst) = g.cfg.edge(edge);
        if src == Cfg::ENTRY {
            let catch = g.catch_edges.contains(&edge);
            if catch {
                // What an import threw unwinds the activations above the
                // nearest of `f` (a throw already popped its thrower).
                if let Some(at) = stack.iter().rposition(|a| a.func == f) {
                    stack.truncate(at + 1);
                }
            }
            if !catch || stack.last().map(|a| a.func) != Some(f) {
                stack.push(Activation {
                    func: f,
                    steps: Vec::new(),
                    active_start: 0,
                    entered: HashMap::new(),
                });
            }
            let top = stack.last_mut().unwrap();
            top.steps = Vec::new();
            top.active_start = 0;
        }
        // An exception an import caught (after calling back) left the
        // activations above the nearest of `f` unfinished.
        if let Some(at) = stack.iter().rposition(|a| a.func == f) {
            stack.truncate(at + 1);
        }
        let top = stack.last_mut().expect("an edge outside any activation");
        assert_eq!(top.func, f, "an edge of a function not on the stack");
        if g.backedges().contains(&edge) {
            emit(top, Some(src));
            let mut steps = top.entered[&dst].clone();
            steps.push(ContextStep::Resume(dst));
            top.active_start = steps.len();
            top.steps = steps;
            continue;
        }
        top.steps.push(ContextStep::Edge(edge));
        if heads(g).contains(&dst) {
            top.entered.insert(dst, top.steps.clone());
        }
        if dst == Cfg::EXIT {
            emit(top, None);
            stack.pop();
        }
    }
    out
}

/// The instrumented build of a module, compiled, and its metadata.
struct Built {
    bytes: Vec<u8>,
    module: wasmtime::Module,
    meta: driver::Meta,
    traced: wasmtime::Module,
    graphs: BTreeMap<u32, FuncGraph>,
}

fn build(engine: &wasmtime::Engine, bytes: &[u8]) -> Built {
    build_with(engine, bytes, &Default::default())
}

fn build_with(engine: &wasmtime::Engine, bytes: &[u8], opts: &driver::Options) -> Built {
    let inst = driver::instrument(bytes, Technique::IntraContext, opts).expect("instrument");
    let traced = driver::instrument(bytes, Technique::Trace, &Default::default()).unwrap();
    Built {
        module: crate::common::programs::compile(engine, &inst.bytes).unwrap(),
        bytes: inst.bytes.clone(),
        meta: inst.meta().unwrap(),
        traced: crate::common::programs::compile(engine, &traced.bytes).unwrap(),
        graphs: programs::graphs(bytes),
    }
}

/// The paths of a profile's section, with their counts.
fn paths_of(icp: &pathprof_profile::intra_context::IntraContextProfile) -> BTreeMap<Key, u64> {
    icp.functions
        .iter()
        .flat_map(|f| {
            f.paths.iter().map(|p| {
                (
                    (f.func_index, p.path.steps.clone(), p.path.active_start),
                    p.count,
                )
            })
        })
        .collect()
}

/// Runs `inv` both ways and compares; returns the number of distinct
/// paths and how many of them have a context-prefix.
fn check(b: &Built, name: &str, inv: &Invocation) -> (usize, usize) {
    let out = programs::run_compiled(&b.module, inv, false);
    let abrupt = out
        .exit
        .is_abrupt()
        .then_some(out.exit.unfinished_frames(&out.abrupt_stack));
    let counters = out.counters.as_ref().expect("counters");
    let profile = driver::collect(&b.meta, counters, abrupt).expect("collect");
    let icp = profile.intra_context.expect("intra-context paths");
    assert_eq!(icp.lost, 0, "{name} {inv:?}: counts lost");
    let got = paths_of(&icp);
    let profiled: HashSet<u32> = icp.functions.iter().map(|f| f.func_index).collect();
    let trace = programs::run_compiled(&b.traced, inv, true).trace;
    let want = oracle(&trace, &b.graphs, &profiled);
    if got != want {
        let diff = common::oracle::differences(&got, &want);
        panic!(
            "{name} {inv:?}: profile and trace differ:\n{}",
            diff[..diff.len().min(5)].join("\n")
        );
    }
    // The sparse profile (`run --sparse`): the functions with a path,
    // with the same paths; every other instrumented one left out.
    let sparse = driver::collect_sparse(&b.bytes, &[], counters, abrupt, |_| Ok(()))
        .expect("collect sparse");
    let ran: BTreeSet<u32> = want.keys().map(|k| k.0).collect();
    let listed: BTreeSet<u32> = sparse.functions.iter().map(|f| f.func_index).collect();
    assert_eq!(
        listed, ran,
        "{name} {inv:?}: the sparse profile's functions"
    );
    let icp = sparse
        .intra_context
        .as_deref()
        .expect("intra-context paths");
    let sparse_paths = paths_of(icp);
    assert_eq!(
        sparse_paths, want,
        "{name} {inv:?}: the sparse profile's paths"
    );
    let instrumented: BTreeSet<u32> = b
        .meta
        .layout
        .functions
        .iter()
        .map(|f| f.func_index)
        .collect();
    assert_eq!(
        sparse.unrun.iter().copied().collect::<BTreeSet<u32>>(),
        &instrumented - &ran,
        "{name} {inv:?}"
    );
    let in_context = got.keys().filter(|k| k.2 > 0).count();
    (got.len(), in_context)
}

#[test]
fn c_programs_count_exactly_the_context_paths_of_their_runs() {
    let engine = crate::common::programs::engine();
    let dir = programs::root().join("tests/fixtures/c/build");
    let mut built: BTreeMap<String, Built> = BTreeMap::new();
    let (mut runs, mut paths, mut in_context) = (0, 0, 0);
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let build_name = format!("{name}.{opt}");
            let b = built.entry(build_name.clone()).or_insert_with(|| {
                let bytes = std::fs::read(dir.join(format!("{build_name}.wasm")))
                    .expect("run scripts/build-c-fixtures.sh first");
                build(&engine, &bytes)
            });
            let (p, c) = check(b, &build_name, &inv);
            runs += 1;
            paths += p;
            in_context += c;
        }
    }
    assert!(runs >= 60, "only {runs} runs");
    assert!(
        in_context * 5 >= paths,
        "only {in_context} of {paths} paths had a loop context"
    );
    eprintln!("{runs} runs, {paths} distinct paths, {in_context} with a loop context");
}

/// Hash tables draw on `--array-memory-max` as path mode's arrays do
/// (without it, 100,000 functions' tables of 4,096 entries would need 6.6
/// GB): with every function hashing (`array_max` 0) and memory for three
/// and a half tables of 4,096 entries, the first three functions get them
/// and the others tables of 64 entries, which grow as they fill; every
/// count stays the oracle's.
#[test]
fn hash_tables_past_the_array_memory_are_small_and_count_exactly() {
    use pathprof_techniques::PathTable;
    let engine = crate::common::programs::engine();
    let bytes = std::fs::read(programs::root().join("tests/fixtures/c/build/interp.O0.wasm"))
        .expect("run scripts/build-c-fixtures.sh first");
    let mut opts = driver::Options::default();
    opts.ball_larus.array_max = 0;
    let big = PathTable::Hash { capacity: 4096 };
    opts.ball_larus.array_memory_max = (big.bytes() * 7 / 2) as u64;
    let b = build_with(&engine, &bytes, &opts);
    let tables: Vec<PathTable> = b.meta.layout.functions.iter().map(|f| f.paths).collect();
    let mut hashed = 0;
    let expected: Vec<PathTable> = tables
        .iter()
        .map(|t| match t {
            PathTable::None => PathTable::None,
            _ => {
                hashed += 1;
                let capacity = if hashed <= 3 { 4096 } else { 64 };
                PathTable::Hash { capacity }
            }
        })
        .collect();
    assert_eq!(tables, expected);
    assert!(hashed > 6, "only {hashed} functions count paths");
    let mut runs = 0;
    for (name, inv) in programs::c_cases() {
        if name == "interp" {
            check(&b, "interp.O0", &inv);
            runs += 1;
        }
    }
    assert!(runs >= 5, "only {runs} interp runs");
}

#[test]
fn wat_fixtures_count_exactly_the_context_paths_of_their_calls() {
    let engine = crate::common::programs::engine();
    let mut calls = 0;
    for path in programs::wat_fixtures() {
        let bytes = pathprof::input::read_module(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if programs::needs_host_imports(&engine, &bytes) {
            continue;
        }
        let b = build(&engine, &bytes);
        for inv in programs::export_calls(&engine, &bytes) {
            check(&b, &name, &inv);
            calls += 1;
        }
    }
    assert!(calls >= 400, "only {calls} fixture calls");
}

/// The report's Fig. 4 example: pow's two trips around its loop per call,
/// the second one and the exit in the context of the path into the loop;
/// main's 18 iterations, 17 of them after a backedge.
#[test]
fn figure_4_paths_and_counts() {
    let engine = crate::common::programs::engine();
    let (module, inv) = programs::figure4();
    let (_, profile) = programs::profiled_run(
        &engine,
        &module,
        Technique::IntraContext,
        &Default::default(),
        &inv,
    );
    let rows = pathprof::intra_context::rows(&profile, Some("pow")).unwrap();
    let mut got: Vec<(u64, &str, &str)> = rows
        .iter()
        .map(|r| (r.count, r.context.as_str(), r.active.as_str()))
        .collect();
    got.sort_unstable();
    // 15 calls of pow(i, 2) (9 for i % 2 == 0, 6 for i % 3 == 0).
    assert_eq!(
        got,
        [
            (15, "", "2 3 4 [back]"),
            (15, "2 3 [loop 3]", "4 [back]"),
            (15, "2 3 [loop 3]", "5 [exit]"),
        ]
    );
    let main: u64 = pathprof::intra_context::rows(&profile, Some("main"))
        .unwrap()
        .iter()
        .filter(|r| r.active.ends_with("[back]"))
        .map(|r| r.count)
        .sum();
    assert_eq!(main, 18, "one backedge per iteration of main's loop");
}

/// A function whose CFG is irreducible (a catch edge into a loop body
/// bypasses the loop head) is left uninstrumented with a one-line warning,
/// and the others are profiled.
#[test]
fn an_irreducible_function_is_left_alone_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let wat = dir.path().join("irreducible.wat");
    std::fs::write(
        &wat,
        r#"(module
             (tag $e)
             (func $thrower (param i32)
               local.get 0 i32.const 3 i32.rem_u i32.eqz if throw $e end)
             (func (export "main") (param $n i32) (result i32)
               (local $i i32)
               loop $l
                 block $h
                   try_table (catch_all $h)
                     local.get $i
                     call $thrower
                   end
                 end
                 local.get $i i32.const 1 i32.add local.tee $i
                 local.get $n i32.lt_s
                 br_if $l
               end
               local.get $i))"#,
    )
    .unwrap();
    let out = dir.path().join("p.json");
    let o = common::bin::pathprof(&[
        "run",
        "--mode",
        "intra-context",
        "--invoke",
        "main",
        "-o",
        &out.display().to_string(),
        &wat.display().to_string(),
        "--",
        "7",
    ]);
    let err = common::bin::stderr(&o);
    assert!(o.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings,
        ["pathprof: warning: main left uninstrumented: the CFG is irreducible: the target of backedge 3 does not dominate its source"]
    );
    let profile = pathprof_profile::Profile::read(&out).unwrap();
    let icp = profile.intra_context.unwrap();
    // $thrower ran 7 times: i = 0, 3, 6 throw.
    let thrower: Vec<u64> = icp
        .functions
        .iter()
        .flat_map(|f| f.paths.iter().map(|p| p.count))
        .collect();
    assert_eq!(icp.functions.len(), 1);
    assert_eq!(thrower.iter().sum::<u64>(), 7);
    assert_eq!(thrower.len(), 2);
}
