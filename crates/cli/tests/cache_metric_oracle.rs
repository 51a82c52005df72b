//! The cache-miss metric of the hardware path profiler (issue 30, thesis
//! 5.3): the run's loads and stores, recorded in the trace
//! (`pathprof_wasm::trace_accesses`), fed to the simulator's cache model,
//! and each path's misses accumulated in its event counter.
//!
//! Three oracles, none sharing code with what they check:
//! - a hand-written WAT program whose accesses are known from its source:
//!   the records are its addresses, in order, each between the right edges;
//! - every C fixture at -O0 and -O2: the program's output, exit and edge
//!   trace are those of the run without access records;
//! - every C fixture: with an unbounded table, Ball-Larus paths and the L1
//!   (then L2) miss metric, each path's weight equals the misses of its own
//!   accesses, computed here by a cache model written in this file (Table
//!   5.3's shapes) and a path segmentation of the edge trace (the trace
//!   oracle's `PathCounter`); the simulator's cache totals equal the model's.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use common::oracle::{FuncGraph, PathCounter};
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_runner::{RunOptions, TraceEvent, TraceSink, TraceTo};
use pathprof_simulator::{Metric, PathType, SimConfig, SimResult};
use pathprof_wasm::{ACCESS_LOAD, ACCESS_STORE};

/// The module traced, with its accesses recorded.
fn traced_with_accesses(module: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let traced = driver::instrument(module, Technique::Trace, &driver::Options::default())
        .unwrap()
        .bytes;
    let with = pathprof_wasm::trace_accesses(&traced).unwrap();
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&with)
        .expect("the module with access records validates");
    (traced, with)
}

const LOOP: &str = r#"(module
  (memory 1)
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $sum i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        ;; a[i] at 100 + 4i is read; b[i] at 8 + 8i is written as an i64
        (local.set $sum (i32.add (local.get $sum)
          (i32.load offset=100 (i32.shl (local.get $i) (i32.const 2)))))
        (i64.store offset=8 (i32.shl (local.get $i) (i32.const 3))
          (i64.extend_i32_u (local.get $sum)))
        (f64.store offset=2000 (i32.const 16) (f64.const 1.5))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.store8 offset=3 (i32.const 4000) (local.get $sum))
    (local.get $sum)))"#;

#[test]
fn a_loops_accesses_are_recorded_in_order_between_its_backedges() {
    let module = wat::parse_str(LOOP).unwrap();
    let (_, with) = traced_with_accesses(&module);
    let engine = crate::common::programs::engine();
    let events = Arc::new(Mutex::new(Vec::<TraceEvent>::new()));
    let opts = RunOptions {
        trace: Some(TraceTo::new(events.clone())),
        ..RunOptions::captured(["module"])
    };
    let compiled = crate::common::programs::compile(&engine, &with).unwrap();
    let out =
        pathprof_runner::invoke_compiled(&compiled, "run", &["3".to_string()], &opts).unwrap();
    assert_eq!(out.results.len(), 1);
    let graphs = programs::graphs(&module);
    let backedges: HashSet<(u32, u32)> = graphs
        .iter()
        .flat_map(|(&f, g)| g.backedges().iter().map(move |e| (f, e.index() as u32)))
        .collect();
    // The accesses of each iteration, then the backedge to the loop head.
    let mut want = Vec::new();
    for i in 0..3u32 {
        want.push(format!("load {}", 100 + 4 * i));
        want.push(format!("store {}", 8 + 8 * i));
        want.push("store 2016".to_string());
        want.push("backedge".to_string());
    }
    want.push("store 4003".to_string());
    let got: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e.func {
            ACCESS_LOAD => Some(format!("load {}", e.edge)),
            ACCESS_STORE => Some(format!("store {}", e.edge)),
            f => backedges
                .contains(&(f, e.edge))
                .then(|| "backedge".to_string()),
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn access_records_change_neither_output_nor_the_edge_trace() {
    let engine = crate::common::programs::engine();
    let (mut runs, mut accesses) = (0, 0u64);
    for (name, module, invs) in c_modules() {
        let (traced, with) = traced_with_accesses(&module);
        let traced = crate::common::programs::compile(&engine, &traced).unwrap();
        let with = crate::common::programs::compile(&engine, &with).unwrap();
        for inv in invs {
            let plain = programs::run_compiled(&traced, &inv, true);
            let recorded = programs::run_compiled(&with, &inv, true);
            assert_eq!(recorded.exit, plain.exit, "{name} {inv:?}");
            assert_eq!(recorded.stdout, plain.stdout, "{name} {inv:?}");
            let (edges, acc): (Vec<(u32, u32)>, Vec<(u32, u32)>) =
                recorded.trace.iter().partition(|&&(f, _)| f < ACCESS_STORE);
            assert_eq!(edges, plain.trace, "{name} {inv:?}");
            assert!(!acc.is_empty(), "{name} {inv:?} made no access");
            runs += 1;
            accesses += acc.len() as u64;
        }
    }
    eprintln!("{runs} runs, {accesses} accesses recorded");
    assert!(runs >= 40, "only {runs} runs");
}

/// Each C fixture at -O0 and -O2, with its cases.
fn c_modules() -> Vec<(String, Vec<u8>, Vec<Invocation>)> {
    let build = programs::root().join("tests/fixtures/c/build");
    let mut out: Vec<(String, Vec<u8>, Vec<Invocation>)> = Vec::new();
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let key = format!("{name}.{opt}");
            match out.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, invs)) => invs.push(inv.clone()),
                None => {
                    let path = build.join(format!("{key}.wasm"));
                    let module = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh");
                    out.push((key, module, vec![inv.clone()]));
                }
            }
        }
    }
    out
}

/// A set-associative LRU cache of `size` bytes in blocks of `block`
/// bytes, written from the textbook definition: a set is a list of block
/// numbers, most recently used first.
struct Lru {
    block: u64,
    ways: usize,
    sets: Vec<Vec<u64>>,
}

impl Lru {
    fn new(size: u64, block: u64, ways: usize) -> Lru {
        let sets = (size / block) as usize / ways;
        Lru {
            block,
            ways,
            sets: vec![Vec::new(); sets],
        }
    }

    fn hit(&mut self, addr: u64) -> bool {
        let b = addr / self.block;
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(b % n) as usize];
        let hit = match set.iter().position(|&x| x == b) {
            Some(i) => {
                set.remove(i);
                true
            }
            None => {
                set.truncate(self.ways - 1);
                false
            }
        };
        set.insert(0, b);
        hit
    }
}

/// Table 5.3's caches (L2 blocks of 64 bytes), and what they counted.
struct Caches {
    l1: Lru,
    l2: Lru,
    accesses: u64,
    stores: u64,
    l1_misses: u64,
    l2_misses: u64,
}

/// The oracle's view of a run: paths weighed by their L1 and by their L2
/// misses, from the trace of edges and accesses as it arrives.
struct Oracle {
    graphs: BTreeMap<u32, FuncGraph>,
    l1: PathCounter,
    l2: PathCounter,
    caches: Caches,
}

impl TraceSink for Oracle {
    fn events(&mut self, events: &[TraceEvent]) {
        for e in events {
            if e.func < ACCESS_STORE {
                self.l1.event(&self.graphs, e.func, e.edge, None);
                self.l2.event(&self.graphs, e.func, e.edge, None);
                continue;
            }
            let c = &mut self.caches;
            let addr = u64::from(e.edge);
            c.accesses += 1;
            c.stores += u64::from(e.func == ACCESS_STORE);
            let (l1_miss, l2_miss) = match c.l1.hit(addr) {
                true => (false, false),
                false => (true, !c.l2.hit(addr)),
            };
            c.l1_misses += u64::from(l1_miss);
            c.l2_misses += u64::from(l2_miss);
            self.l1.weigh(u64::from(l1_miss));
            self.l2.weigh(u64::from(l2_miss));
        }
    }
}

/// Start address -> sorted non-zero path weights.
type ByStart = BTreeMap<u32, Vec<u64>>;

/// The oracle's weights by start address, paths of the same blocks merged
/// (the hardware names a path by its start and outcomes); functions where
/// a self loop ran are left out, as the simulator oracle explains.
fn oracle_by_start(module: &[u8], counter: &PathCounter) -> (ByStart, HashSet<u32>) {
    let info = pathprof_wasm::analyze(module).unwrap();
    let offset = |func: u32, node: u32| {
        info.functions
            .iter()
            .flatten()
            .find(|f| f.func_index == func)
            .and_then(|f| f.blocks[node as usize])
            .map(|b| b.offset)
    };
    let c = &counter.counts;
    let left_out: HashSet<u32> = c.self_loops.keys().map(|&(f, _)| f).collect();
    let mut merged: BTreeMap<(u32, &[u32]), u64> = BTreeMap::new();
    for (key, &w) in &c.weights {
        if !left_out.contains(&key.func) {
            *merged.entry((key.func, &key.blocks[..])).or_default() += w;
        }
    }
    let mut out = ByStart::new();
    for ((func, blocks), w) in merged {
        let start = blocks.first().and_then(|&b| offset(func, b));
        out.entry(start.expect("a weighed path has a first block"))
            .or_default()
            .push(w);
    }
    out.values_mut().for_each(|v| v.sort_unstable());
    (out, left_out)
}

/// The simulator's exact-table weights by start address, but for the
/// functions left out.
fn simulated_by_start(module: &[u8], r: &SimResult, left_out: &HashSet<u32>) -> ByStart {
    let info = pathprof_wasm::analyze(module).unwrap();
    let owner = |start: u32| programs::owner(&info, start);
    let mut out = ByStart::new();
    for p in r.exact_profile.iter().filter(|p| p.weight > 0) {
        if !left_out.contains(&owner(p.path.start)) {
            out.entry(p.path.start).or_default().push(p.weight);
        }
    }
    out.values_mut().for_each(|v| v.sort_unstable());
    out
}

fn unbounded(metric: Metric) -> SimConfig {
    SimConfig {
        path_type: PathType::Bl,
        max_path_len: 96,
        stack_depth: 1 << 16,
        dynamic_overlap: false,
        metric,
        ..SimConfig::default()
    }
}

#[test]
fn each_paths_misses_are_those_of_its_own_accesses() {
    let engine = crate::common::programs::engine();
    let (mut runs, mut paths, mut misses) = (0, 0, 0u64);
    for (name, module, invs) in c_modules() {
        let (_, with) = traced_with_accesses(&module);
        let compiled = crate::common::programs::compile(&engine, &with).unwrap();
        // Two cases of each module: `simulate` compiles the module for
        // every run, which is most of this test's time.
        for inv in invs.into_iter().take(2) {
            let (p, m) = compare_misses(&name, &module, &compiled, &inv);
            paths += p;
            misses += m;
            runs += 1;
        }
    }
    eprintln!("{runs} runs, {paths} paths with misses compared, {misses} L1 misses");
    assert!(runs >= 20, "only {runs} runs");
    assert!(paths >= 200, "only {paths} paths with misses");
}

/// One run simulated and recomputed by the oracle; the paths compared and
/// the L1 misses.
fn compare_misses(
    name: &str,
    module: &[u8],
    compiled: &wasmtime::Module,
    inv: &Invocation,
) -> (usize, u64) {
    let Invocation::Command { args, stdin } = inv else {
        unreachable!("C fixtures are commands")
    };
    let opts = || RunOptions {
        stdin: Some(stdin.clone()),
        ..RunOptions::captured(args.clone())
    };
    let configs = vec![unbounded(Metric::L1Misses), unbounded(Metric::L2Misses)];
    let sim = pathprof::simulate::simulate(module, opts(), configs, 1).unwrap();
    let oracle = Arc::new(Mutex::new(Oracle {
        graphs: programs::graphs(module),
        l1: PathCounter::default(),
        l2: PathCounter::default(),
        caches: Caches {
            l1: Lru::new(32 * 1024, 32, 1),
            l2: Lru::new(512 * 1024, 64, 4),
            accesses: 0,
            stores: 0,
            l1_misses: 0,
            l2_misses: 0,
        },
    }));
    let traced = RunOptions {
        trace: Some(TraceTo::new(oracle.clone())),
        ..opts()
    };
    pathprof_runner::run_compiled(compiled, &traced).unwrap();
    let mut paths = 0;
    let o = oracle.lock().unwrap();
    assert_eq!(sim.accesses, Some(o.caches.accesses), "{name} {inv:?}");
    for (r, counter) in sim.results.iter().zip([&o.l1, &o.l2]) {
        assert_eq!(r.detector.splits, 0, "{name}: a path was split");
        let k = &r.caches;
        let c = &o.caches;
        assert_eq!(
            (k.accesses, k.stores, k.l1_misses, k.l2_misses),
            (c.accesses, c.stores, c.l1_misses, c.l2_misses),
            "{name} {inv:?}: cache totals"
        );
        let (want, left_out) = oracle_by_start(module, counter);
        let got = simulated_by_start(module, r, &left_out);
        assert_eq!(got, want, "{name} {inv:?} {:?}", r.config.metric);
        paths += want.values().map(Vec::len).sum::<usize>();
    }
    (paths, o.caches.l1_misses)
}
