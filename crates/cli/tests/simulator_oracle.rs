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

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use common::programs::{self, Invocation};
use pathprof::branch_trace::BranchSink;
use pathprof::driver::{self, Technique};
use pathprof_runner::TraceTo;
use pathprof_simulator::{BranchEvent, BranchKind, PathType, SimConfig, SimResult, Simulator};
use pathprof_wasm::branches::{PathEnd, Regenerator, WalkRules};

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
    let rules = WalkRules {
        ends_at_calls: false,
        max_len: config.max_path_len,
    };
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
        // A path ends at a backward branch out of its last block, or in it.
        assert_eq!(
            r.edges.len(),
            r.blocks.len() - usize::from(r.end == PathEnd::InBlock),
            "{:?}",
            p.path
        );
        let blocks = r.blocks.iter().map(|b| b.index() as u32).collect();
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
    let rules = WalkRules {
        ends_at_calls: true,
        max_len: 96,
    };
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
