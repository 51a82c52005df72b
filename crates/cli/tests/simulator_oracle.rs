//! The hardware path profiler (issue 30, thesis ch. 5) against pathprof's
//! exact Ball-Larus profile of the same run, on every C fixture and every
//! call of the WAT fixtures: with a table that never evicts
//! (the simulator's exact table), no path split (paths up to 96 branches)
//! and a stack deep enough for any recursion of the fixtures, the paths the
//! path stack detects in Ball-Larus mode (Table 5.1) are the profile's
//! paths, path for path and count for count, in every function where no
//! self loop ran (see `profile_by_blocks` for why self loops name different
//! paths).
//!
//! The two name paths differently: the hardware by start address and branch
//! outcomes, the profile by path number. Each side is regenerated to the
//! blocks it ran through, by code the other does not use: the profile's
//! path numbers by Ball-Larus' regeneration (`report::hot_paths`), the
//! hardware's outcome bits by walking the CFG back from the start address
//! (`pathprof_wasm::branches::Regenerator`); the oracle compares the two
//! maps from (function, blocks) to count. The simulator's own mapping
//! (path stack, outcome bits, exact table) shares nothing with either
//! but the branch stream.
//!
//! Extended-call paths, which go on into callees, have no software
//! profile to compare with: on the same runs every one walks back, with as
//! many branch edges, calls and returns as its length (edges classified
//! here apart from the walk), and on a loop calling a leaf the walks are
//! the hand-derived paths (`loop_calls_leaf_paths`).

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use common::programs::{self, Invocation};
use pathprof::branch_trace::BranchSink;
use pathprof::driver::{self, Technique};
use pathprof_graph::EdgeId;
use pathprof_runner::TraceTo;
use pathprof_simulator::{BranchEvent, BranchKind, PathType, SimConfig, SimResult, Simulator};
use pathprof_wasm::branches::{HwStep, PathEnd, RegeneratedHwPath, Regenerator, WalkRules};
use pathprof_wasm::cfg::{EdgeKind, FunctionCfg};

/// Start address -> sorted counts of the paths starting there.
type ByStart = BTreeMap<u32, Vec<u64>>;

/// (function index, blocks) -> count.
type ByBlocks = BTreeMap<(u32, Vec<u32>), u64>;

/// The profile's paths as blocks, and the functions left out: those where
/// truncation cut a path (the hardware does not cut), those where a path of
/// no block ran, and those where a self loop ran. A run that traps at
/// `unreachable` (`abort`) is compared too: both count the path that
/// reaches it, and neither the paths of the frames it unwinds.
/// Self loops:
/// Ball-Larus (4.1) counts a self loop's iterations apart and lets the path
/// through its block go on, where the path stack (Table 5.1) ends a path at
/// every backward branch, self loops included, so the two name different
/// paths there by definition.
fn profile_by_blocks(module: &[u8], inv: &Invocation) -> (ByBlocks, HashSet<u32>) {
    let engine = crate::common::programs::engine();
    let opts = driver::Options::default();
    let (_, profile) = programs::profiled_run(&engine, module, Technique::Path, &opts, inv);
    let counts = programs::path_counts(&profile);
    let mut left_out: HashSet<u32> = counts.self_loops.keys().map(|&(f, _)| f).collect();
    // Paths of the same blocks are one path to the hardware, which names a
    // path by its start address and branch outcomes: a function whose first
    // block is a loop head starts its entry->backedge and loop
    // head->backedge paths there alike.
    let mut out = ByBlocks::new();
    for (key, &n) in &counts.paths {
        if key.blocks.is_empty() {
            // A catch into the function's own label: the handler is the
            // function's end, which begins no block the hardware can start
            // at (its path starts at address 0, the host's: u32::MAX stands
            // for it).
            left_out.extend([key.func, u32::MAX]);
        }
        if key.kind.contains("cut") {
            left_out.insert(key.func);
        }
        *out.entry((key.func, key.blocks.clone())).or_default() += n;
    }
    out.retain(|(func, _), _| !left_out.contains(func));
    (out, left_out)
}
/// Runs `inv` on `module` with the trace instrumentation, every branch of
/// its stream fed to a simulator of `config` and to `also`; what the
/// simulator found.
fn simulate(
    module: &[u8],
    inv: &Invocation,
    config: SimConfig,
    mut also: impl FnMut(BranchEvent) + Send + 'static,
) -> SimResult {
    let sim = Arc::new(Mutex::new(Simulator::new(config).unwrap()));
    let feed = sim.clone();
    let sink = BranchSink::new(module, move |ev| {
        also(ev);
        feed.lock().unwrap().feed(&[ev]);
    })
    .unwrap();
    let sink = Arc::new(Mutex::new(sink));
    let engine = crate::common::programs::engine();
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default()).unwrap();
    programs::run_to(
        &engine,
        &traced.bytes,
        inv,
        Some(TraceTo::new(sink.clone())),
    );
    sink.lock().unwrap().finish().unwrap();
    let sim = sim.lock().unwrap();
    sim.result()
}

/// The hardware profile of the same run as blocks, without the functions of
/// `left_out`: every path walked back from its descriptor. No path may be
/// split, unless `splits_allowed`: then the functions where one was are added
/// to `left_out` (a path of more than 96 outcome bits is counted in pieces,
/// which the profile has not).
fn simulated_by_blocks(
    module: &[u8],
    inv: &Invocation,
    left_out: &mut HashSet<u32>,
    splits_allowed: bool,
) -> ByBlocks {
    let config = SimConfig {
        path_type: PathType::Bl,
        max_path_len: 96,
        stack_depth: 1 << 16,
        dynamic_overlap: false,
        ..SimConfig::default()
    };
    let result = simulate(module, inv, config.clone(), |_| {});
    assert_eq!(
        result.detector.stack.overflows, 0,
        "the path stack overflowed"
    );
    assert!(
        splits_allowed || result.detector.splits == 0,
        "a path was split"
    );
    assert!(result.split_starts.len() < pathprof_simulator::detector::MAX_SPLIT_STARTS);
    let info = pathprof_wasm::analyze(module).unwrap();
    let regenerator = Regenerator::new(module, &info).unwrap();
    let rules = WalkRules::new(PathType::Bl, config.max_path_len);
    left_out.extend(
        result
            .split_starts
            .iter()
            .map(|&s| programs::owner(&info, s)),
    );
    let mut out = ByBlocks::new();
    for p in &result.exact_profile {
        if p.path.start == 0 {
            assert!(
                left_out.contains(&u32::MAX),
                "{:?} starts at the host",
                p.path
            );
            continue;
        }
        let r = regenerator
            .regenerate(&p.path, rules)
            .unwrap_or_else(|| panic!("{:?} walks back to no path", p.path));
        assert!(!r.mid_block, "{:?} starts inside a block", p.path);
        if left_out.contains(&r.func) {
            continue;
        }
        assert_ne!(r.end, PathEnd::Split, "{:?}", p.path);
        let blocks = r
            .local_blocks()
            .unwrap_or_else(|| panic!("{:?} leaves its function", p.path));
        // A path ends at a backward branch out of its last block, or in it.
        assert_eq!(
            r.edges().count(),
            blocks.len() - usize::from(r.end == PathEnd::InBlock),
            "{:?}",
            p.path
        );
        let blocks = blocks.iter().map(|b| b.index() as u32).collect();
        *out.entry((r.func, blocks)).or_default() += p.weight;
    }
    out
}

#[test]
fn unbounded_hardware_profile_equals_the_ball_larus_profile() {
    let (mut compared, mut wat, mut paths, mut skipped) = (0, 0, 0, 0);
    for (name, module, inv) in programs::oracle_runs() {
        let (expected, mut left_out) = profile_by_blocks(&module, &inv);
        skipped += left_out.len();
        let got = simulated_by_blocks(&module, &inv, &mut left_out, false);
        assert_eq!(got, expected, "{name} {inv:?}");
        compared += 1;
        wat += usize::from(name.ends_with(".wat"));
        paths += expected.len();
    }
    eprintln!(
        "{compared} runs compared ({wat} of WAT fixtures), {paths} distinct paths, \
         {skipped} functions left out over all runs"
    );
    assert!(
        compared - wat >= 40,
        "only {} C runs were compared",
        compared - wat
    );
    assert!(wat >= 50, "only {wat} WAT fixture calls were compared");
    assert!(paths >= 1000, "only {paths} paths were compared");
}

/// The same comparison on the benchmark suite's `train` runs (issue 30's
/// verification), too long for the test command: build the suite
/// (`bash bench/build-suite.sh DIR`), then
/// `PATHPROF_SUITE=DIR cargo test --release -p pathprof --test simulator_oracle -- --ignored`.
/// Functions where a path of more than 96 outcome bits was split are left
/// out on both sides, as are those `profile_by_blocks` leaves out.
#[test]
#[ignore = "needs the benchmark suite (PATHPROF_SUITE) and minutes in a release build"]
fn unbounded_hardware_profile_equals_the_ball_larus_profile_on_the_suite() {
    let dir = std::env::var_os("PATHPROF_SUITE").expect("PATHPROF_SUITE: the suite's folder");
    for name in ["zlib", "bzip2", "zstd", "lz4", "sqlite", "lua"] {
        let path = std::path::Path::new(&dir).join(format!("{name}.wasm"));
        let module = std::fs::read(&path).expect("the suite's module");
        let inv = Invocation::command(&[name, "train"]);
        let (mut expected, mut left_out) = profile_by_blocks(&module, &inv);
        let before = left_out.len();
        let got = simulated_by_blocks(&module, &inv, &mut left_out, true);
        expected.retain(|(func, _), _| !left_out.contains(func));
        let paths = expected.len();
        let runs: u64 = expected.values().sum();
        eprintln!(
            "{name}: {paths} distinct paths, {runs} path executions compared; \
             {before} functions left out by the profile, {} more for split paths",
            left_out.len() - before
        );
        assert_eq!(got, expected, "{name}");
        assert!(paths > 100, "{name}: only {paths} paths compared");
    }
}

/// A run's branch stream, and the simulator's exact profile of it in
/// whole-program-path mode (Table 5.2), by start address.
fn wpp_run(module: &[u8], inv: &Invocation, module_name: &str) -> (Vec<BranchEvent>, ByStart) {
    let config = SimConfig {
        path_type: PathType::Wpp,
        max_path_len: 96,
        dynamic_overlap: false,
        ..SimConfig::default()
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let record = events.clone();
    let result = simulate(module, inv, config, move |ev| {
        record.lock().unwrap().push(ev)
    });
    assert_eq!(result.detector.splits, 0, "a path was split");
    // Every element walks back to blocks of one function, those after a
    // return from inside its return site's block.
    let info = pathprof_wasm::analyze(module).unwrap();
    let regenerator = Regenerator::new(module, &info).unwrap();
    let rules = WalkRules::new(PathType::Wpp, 96);
    // (A path that starts at the host, address 0, has no block to start at.)
    for p in result.exact_profile.iter().filter(|p| p.path.start != 0) {
        assert!(
            regenerator.regenerate(&p.path, rules).is_some(),
            "{:?} walks back to no path in {module_name}",
            p.path
        );
    }
    let events = std::mem::take(&mut *events.lock().unwrap());
    let mut by_start = ByStart::new();
    for p in &result.exact_profile {
        by_start.entry(p.path.start).or_default().push(p.weight);
    }
    by_start.values_mut().for_each(|v| v.sort_unstable());
    (events, by_start)
}

/// The whole-program-path elements of a branch stream, cut here by Table
/// 5.2's definition and nothing of the simulator: a path runs from a
/// branch's target (or, when none is in flight, from the first branch's
/// own address) through forward branches, and ends, that branch included,
/// at a call, a return, a tail call, a backward branch or an indirect jump;
/// the next one starts at that branch's target. A throw (a trap at
/// `unreachable` too) ends the path in flight, and a catch arrival starts
/// one at the handler (with no catch, caught outside, the next branch
/// starts one); an exception from an import or a callback from one
/// (`Unwind`) ends nothing, and the path in flight is lost. A call or return
/// with no path in flight ends nothing. Paths are told apart by their start and
/// their branches: each one's address and, but for the call or return that
/// ends a path, its target; the path in flight at the end is not counted.
fn wpp_oracle(events: &[BranchEvent]) -> ByStart {
    let mut counts: BTreeMap<(u32, Vec<(u32, u32)>), u64> = BTreeMap::new();
    let mut current: Option<(u32, Vec<(u32, u32)>)> = None;
    for e in events {
        if e.kind == BranchKind::Catch {
            current = Some((e.target, Vec::new()));
            continue;
        }
        if let BranchKind::Unwind { .. } = e.kind {
            // Thrown by an import: the path in flight is cut short.
            current = None;
            continue;
        }
        let ends = match e.kind {
            BranchKind::Throw { .. } => current.is_some(),
            BranchKind::Call { .. } | BranchKind::Return | BranchKind::TailCall { .. } => {
                if current.is_none() {
                    current = Some((e.target, Vec::new()));
                    continue;
                }
                true
            }
            _ => e.backward,
        };
        let (_, branches) = current.get_or_insert_with(|| (e.address, Vec::new()));
        // Where a call or return goes is not part of the path that ends
        // there (a return's caller, an indirect call's callee).
        let to = match e.kind {
            BranchKind::Call { .. } | BranchKind::Return | BranchKind::TailCall { .. } => 0,
            BranchKind::Throw { .. } => 0,
            _ => e.target,
        };
        branches.push((e.address, to));
        if ends {
            let done = current.take().expect("in flight");
            *counts.entry(done).or_insert(0) += 1;
            current = Some((e.target, Vec::new()));
        }
        if matches!(e.kind, BranchKind::Throw { .. }) {
            // Until the catch arrival nothing is in flight; with none (an
            // import caught it and the frame below runs on), the next
            // branch starts a path as after an `Unwind`.
            current = None;
        }
    }
    let mut by_start = ByStart::new();
    for ((start, _), n) in counts {
        by_start.entry(start).or_default().push(n);
    }
    by_start.values_mut().for_each(|v| v.sort_unstable());
    by_start
}

#[test]
fn whole_program_path_elements_equal_an_independent_segmentation() {
    let (mut compared, mut wat, mut paths) = (0, 0, 0);
    for (name, module, inv) in programs::oracle_runs() {
        let (events, got) = wpp_run(&module, &inv, &name);
        let want = wpp_oracle(&events);
        assert_eq!(got, want, "{name} {inv:?}");
        compared += 1;
        wat += usize::from(name.ends_with(".wat"));
        paths += want.values().map(Vec::len).sum::<usize>();
    }
    eprintln!(
        "{compared} runs compared ({wat} of WAT fixtures), {paths} distinct whole-program-path elements"
    );
    assert!(
        compared - wat >= 40,
        "only {} C runs were compared",
        compared - wat
    );
    assert!(wat >= 50, "only {wat} WAT fixture calls were compared");
    assert!(paths >= 1000, "only {paths} paths were compared");
}

/// Whether the stream records a branch where a path crosses edge `e` of
/// `f`, classified here from the CFG's edge kinds apart from the walk's
/// table: either side of a conditional branch (the not-taken fall-through
/// of a `br_if` or `br_on_*` too), a `br_table` arm, a `br`, and any
/// backedge. (Edges into EXIT are no step of a walk.)
fn records_branch(f: &FunctionCfg, e: EdgeId) -> bool {
    use EdgeKind::*;
    let conditional =
        |k: EdgeKind| matches!(k, BrIf | BrOnNull | BrOnNonNull | BrOnCast | BrOnCastFail);
    let kind = f.edge_kinds[e.index()];
    let taken_elsewhere = || {
        let (src, _) = f.cfg.edge(e);
        f.cfg
            .succs(src)
            .iter()
            .any(|&s| conditional(f.edge_kinds[s.index()]))
    };
    conditional(kind)
        || matches!(kind, IfThen | IfElse | BrTable | Br)
        || (kind == Fallthrough && taken_elsewhere())
        || f.cfg.is_backedge(e)
}

/// An extended-call path as `main: 2 3 4 | call f: 2 4 | ret main: 4
/// (backward)`: each function's blocks, the calls and returns between.
fn steps_text(info: &pathprof_wasm::ModuleInfo, r: &RegeneratedHwPath) -> String {
    let name = |func: u32| {
        let f = info.functions[(func - info.num_imported_funcs) as usize]
            .as_ref()
            .unwrap();
        f.name.clone().unwrap_or_else(|| format!("func[{func}]"))
    };
    let mut s = format!("{}:", name(r.func));
    for (i, step) in r.steps.iter().enumerate() {
        match *step {
            HwStep::Block { node, .. } => s += &format!(" {}", node.index()),
            HwStep::Edge { .. } => {}
            HwStep::Call { callee, .. } => s += &format!(" | call {}:", name(callee)),
            HwStep::Return { .. } => {
                let Some(HwStep::Block { func, .. }) = r.steps.get(i + 1) else {
                    s += " | ret";
                    continue;
                };
                s += &format!(" | ret {}:", name(*func));
            }
        }
    }
    s + match r.end {
        PathEnd::Backward => " (backward)",
        PathEnd::Split => " (split)",
        PathEnd::InBlock => "",
    }
}

/// The exact profile of a run in extended-call mode with `max` 1 and 2 (a
/// path stack deep enough for any recursion of the fixtures, paths up to 96
/// branches), one run feeding both simulators; and whether an import called
/// back into the module (an `Unwind { frames: 0 }` then a `Call`).
fn extended_call_runs(module: &[u8], inv: &Invocation) -> ([SimResult; 2], bool) {
    let config = |max| SimConfig {
        path_type: PathType::ExtendedCall { max },
        max_path_len: 96,
        stack_depth: 1 << 16,
        dynamic_overlap: false,
        ..SimConfig::default()
    };
    let second = Arc::new(Mutex::new(Simulator::new(config(2)).unwrap()));
    let callback = Arc::new(Mutex::new((false, false)));
    let (feed, seen) = (second.clone(), callback.clone());
    let first = simulate(module, inv, config(1), move |ev| {
        let mut seen = seen.lock().unwrap();
        let call = matches!(ev.kind, BranchKind::Call { .. });
        seen.1 |= seen.0 && call;
        seen.0 = ev.kind == BranchKind::Unwind { frames: 0 };
        feed.lock().unwrap().feed(&[ev])
    });
    let second = second.lock().unwrap().result();
    for r in [&first, &second] {
        assert_eq!(r.detector.stack.overflows, 0, "the path stack overflowed");
    }
    let callback = callback.lock().unwrap().1;
    ([first, second], callback)
}

/// Every path an extended-call profiler detects on the oracle runs walks
/// back to blocks (the walk reads every outcome bit, each as the branch
/// the stream reports there), and, counted apart from the walk, its
/// conditional, switch and jump edges with its extended calls and returns
/// are its length; it never goes deeper into callees than `max`, nor
/// returns out of the frame it starts in.
///
/// Runs where an import calls back into the module (callbacks.wat,
/// escapes.wat) are checked alike: a callback is an indirect call to the
/// stream (no call site names its callee), which extended-call paths never
/// extend, so every path walks back.
#[test]
fn extended_call_paths_walk_back_to_blocks() {
    let (mut runs, mut paths, mut crossed, mut deepest) = (0, 0, 0, [0; 3]);
    let mut with_callbacks = 0;
    for (name, module, inv) in programs::oracle_runs() {
        let info = pathprof_wasm::analyze(&module).unwrap();
        let regenerator = Regenerator::new(&module, &info).unwrap();
        let (results, callback) = extended_call_runs(&module, &inv);
        with_callbacks += usize::from(callback);
        for result in results {
            let PathType::ExtendedCall { max } = result.config.path_type else {
                unreachable!()
            };
            let rules = WalkRules::new(result.config.path_type, 96);
            // (A path that starts at the host, address 0, has no block to
            // start at.)
            for p in result.exact_profile.iter().filter(|p| p.path.start != 0) {
                let Some(r) = regenerator.regenerate(&p.path, rules) else {
                    panic!(
                        "{:?} walks back to no path in {name} {inv:?} (max {max})",
                        p.path
                    );
                };
                let edges = r
                    .edges()
                    .filter(|&(func, e)| {
                        let f = info.functions[(func - info.num_imported_funcs) as usize]
                            .as_ref()
                            .unwrap();
                        records_branch(f, e)
                    })
                    .count();
                assert_eq!(
                    edges + r.crossings(),
                    usize::from(p.path.len),
                    "{:?} in {name}: {}",
                    p.path,
                    steps_text(&info, &r)
                );
                let (mut depth, mut most) = (0i64, 0i64);
                for step in &r.steps {
                    match step {
                        HwStep::Call { .. } => depth += 1,
                        HwStep::Return { .. } => depth -= 1,
                        _ => continue,
                    }
                    assert!(
                        (0..=i64::from(max)).contains(&depth),
                        "{:?} in {name} (max {max}): {}",
                        p.path,
                        steps_text(&info, &r)
                    );
                    most = most.max(depth);
                }
                paths += 1;
                crossed += usize::from(r.crossings() > 0);
                deepest[most as usize] += 1;
            }
        }
        runs += 1;
    }
    eprintln!(
        "{runs} runs, {paths} distinct extended-call paths walked back (max 1 and 2), \
         {crossed} across a call; by deepest call: {deepest:?}; {with_callbacks} runs \
         with callbacks"
    );
    assert!(runs >= 90, "only {runs} runs");
    assert!(
        runs - with_callbacks >= 600,
        "only {} runs without callbacks",
        runs - with_callbacks
    );
    assert!(crossed >= 1000, "only {crossed} paths crossed a call");
    assert!(
        deepest[2] >= 500,
        "only {} paths went two calls deep",
        deepest[2]
    );
}

/// A loop that calls a leaf with an if/else, directly and through `mid`.
const LOOP_CALLS_LEAF: &str = r#"
(module
  (func $leaf (param $x i32) (result i32)
    (if (result i32) (i32.and (local.get $x) (i32.const 1))
      (then (i32.const 1))
      (else (i32.const 2))))
  (func $mid (param $x i32) (result i32)
    (i32.add (call $leaf (local.get $x)) (i32.const 10)))
  (func $main (export "main") (result i32)
    (local $i i32) (local $s i32)
    (local.set $i (i32.const 0))
    (block $done
      (loop $head
        (br_if $done (i32.ge_s (local.get $i) (i32.const 4)))
        (local.set $s (i32.add (local.get $s) (call $leaf (local.get $i))))
        (local.set $s (i32.add (local.get $s) (call $mid (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $head)))
    (local.get $s)))
"#;

/// The extended-call paths of [`LOOP_CALLS_LEAF`], derived by hand.
///
/// Blocks, numbered in order (ENTRY 0, EXIT 1): leaf 2 the condition and
/// `if`, 3 the then-arm, 4 the else-arm, 5 the join; mid 2, its one block;
/// main 2 up to the loop, 3 the loop head (`br_if $done`), 4 the body with
/// both calls and the `br $head` backedge, 5 after the loop.
///
/// The host calls main on an empty stack: a path starts at main 2. Each
/// iteration i = 0..3 records `br_if` not taken (0); main's call to leaf at
/// counter 0 (1, counter 1); leaf's `if` (1 for odd i: block 3; 0 for even:
/// block 4); leaf's return at counter 1 (1, counter 0, back into main 4 after
/// the call); main's call to mid at counter 0 (1, counter 1); then
/// - max 2: mid's call to leaf at counter 1 < 2 (1, counter 2), leaf's `if`,
///   leaf's return (1, counter 1, into mid 2), mid's return (1, counter 0);
/// - max 1: mid's call to leaf at counter 1 = max is not extended: leaf runs
///   its own path, `leaf: 2 3 5` or `leaf: 2 4 5`, which its return at
///   counter 0 ends; mid's path goes on after the call, and its return is
///   extended (1, counter 0);
///
/// and the `br $head` backedge (1) ends the path; the next starts at main 3.
/// At i = 4 the `br_if` is taken (1) into main 5, whose return to the host
/// at counter 0 ends the path. So i = 0 from main 2 (even), i = 1 and 3
/// from main 3 (odd), i = 2 from main 3 (even), i = 4.
fn loop_calls_leaf_paths(max: u32) -> BTreeMap<String, u64> {
    let (odd, even) = match max {
        2 => (
            "call leaf: 2 3 5 | ret main: 4 | call mid: 2 | call leaf: 2 3 5 | ret mid: 2 | ret main: 4",
            "call leaf: 2 4 5 | ret main: 4 | call mid: 2 | call leaf: 2 4 5 | ret mid: 2 | ret main: 4",
        ),
        _ => (
            "call leaf: 2 3 5 | ret main: 4 | call mid: 2 | ret main: 4",
            "call leaf: 2 4 5 | ret main: 4 | call mid: 2 | ret main: 4",
        ),
    };
    let mut paths: BTreeMap<String, u64> = [
        (format!("main: 2 3 4 | {even} (backward)"), 1),
        (format!("main: 3 4 | {odd} (backward)"), 2),
        (format!("main: 3 4 | {even} (backward)"), 1),
        ("main: 3 5".to_string(), 1),
    ]
    .into();
    if max == 1 {
        paths.insert("leaf: 2 3 5".into(), 2);
        paths.insert("leaf: 2 4 5".into(), 2);
    }
    paths
}

#[test]
fn extended_call_paths_of_a_loop_calling_a_leaf_are_the_hand_derived_ones() {
    let module = wat::parse_str(LOOP_CALLS_LEAF).unwrap();
    let inv = Invocation::Call {
        export: "main".into(),
        args: Vec::new(),
    };
    let info = pathprof_wasm::analyze(&module).unwrap();
    let regenerator = Regenerator::new(&module, &info).unwrap();
    let places = pathprof::simulate::Places::new(&module).unwrap();
    let (results, callback) = extended_call_runs(&module, &inv);
    assert!(!callback);
    for result in results {
        let PathType::ExtendedCall { max } = result.config.path_type else {
            unreachable!()
        };
        let rules = WalkRules::new(result.config.path_type, 96);
        let mut got = BTreeMap::new();
        for p in &result.exact_profile {
            let r = regenerator
                .regenerate(&p.path, rules)
                .unwrap_or_else(|| panic!("{:?} walks back to no path", p.path));
            let text = steps_text(&info, &r);
            // The report shows the same, with where each block and call is:
            // a block returned to runs from just after the call (a `call`
            // of function 0 or 1 is two bytes).
            let shown = places.path_text(&p.path, &result.config);
            assert_eq!(without_offsets(&shown), text, "{shown}");
            let mut call_at = Vec::new();
            for part in shown.split(" | ").skip(1) {
                let at = |s: &str| u32::from_str_radix(s.split(' ').next().unwrap(), 16).unwrap();
                if let Some(rest) = part.strip_prefix("call@0x") {
                    call_at.push(at(rest));
                } else {
                    let resumed = part.split_once("@0x").expect("a block returned to").1;
                    assert_eq!(at(resumed), call_at.pop().unwrap() + 2, "{shown}");
                }
            }
            *got.entry(text).or_default() += p.weight;
        }
        assert_eq!(got, loop_calls_leaf_paths(max), "max {max}");
    }
}

/// `main: 3@0x4a 4@0x51 | call@0x55 f:` as `main: 3 4 | call f:`.
fn without_offsets(s: &str) -> String {
    s.split(' ')
        .map(|w| w.split_once("@0x").map_or(w, |(a, _)| a))
        .collect::<Vec<_>>()
        .join(" ")
}
