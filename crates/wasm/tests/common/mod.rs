//! Test support: fixtures, generated modules (`shapes`, which the examples
//! include too), plans, a wasmtime runner with a trace recorder,
//! and the trace oracle (walk reconstruction), which shares no code with the
//! rewriter.
#![allow(dead_code)]

pub mod shapes;

use pathprof_graph::{Cfg, EdgeId};
use pathprof_techniques::{Action, EdgeActions, FunctionPlan, PathTable, Width};
use pathprof_wasm::{analyze, EdgeKind, FunctionCfg, ModuleInfo};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use wasmtime::{Config, Engine, Instance, Linker, Module, Store, Trap, Val, ValType};

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/wat")
}

/// All `.wat` fixtures, sorted by name.
pub fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixture_dir())
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wat"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let bytes = wat::parse_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, bytes)
        })
        .collect();
    out.sort();
    out
}

pub fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_dir().join(format!("{name}.wat"));
    wat::parse_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut c = Config::new();
        c.wasm_multi_memory(true)
            .wasm_tail_call(true)
            .wasm_function_references(true)
            .wasm_gc(true)
            .wasm_exceptions(true);
        Engine::new(&c).expect("engine")
    })
}

/// Result of one call, comparable across runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Values(Vec<String>),
    Trap(String),
    Error,
}

#[derive(Default)]
pub struct Data {
    pub events: Vec<(u32, u32)>,
}

/// A call: export name and arguments.
#[derive(Clone, Debug)]
pub struct Call {
    pub export: String,
    pub args: Vec<i64>,
}

/// Everything a run leaves behind.
pub struct Run {
    pub outcomes: Vec<Outcome>,
    pub events: Vec<(u32, u32)>,
    /// `events[bounds[i]..bounds[i+1]]` happened during call i; events before
    /// `bounds[0]` during instantiation (start function).
    pub bounds: Vec<usize>,
    pub counters: Option<Vec<u8>>,
}

fn arg_val(t: &ValType, v: i64) -> Val {
    match t {
        ValType::I32 => Val::I32(v as i32),
        ValType::I64 => Val::I64(v),
        ValType::F32 => Val::F32((v as f32).to_bits()),
        ValType::F64 => Val::F64((v as f64).to_bits()),
        other => panic!("unsupported parameter type {other:?}"),
    }
}

fn show(v: &Val) -> String {
    match v {
        Val::I32(x) => format!("i32:{x}"),
        Val::I64(x) => format!("i64:{x}"),
        Val::F32(x) => format!("f32:{x:#x}"),
        Val::F64(x) => format!("f64:{x:#x}"),
        Val::V128(x) => format!("v128:{:#x}", x.as_u128()),
        _ => "ref".into(),
    }
}

/// The libraries some fixtures import from (import_throws.wat throws
/// through `thrower`): tests/fixtures/linked/NAME.wat is module NAME.
/// Compiled once per test binary.
fn linked() -> &'static [(String, Module)] {
    static LINKED: OnceLock<Vec<(String, Module)>> = OnceLock::new();
    LINKED.get_or_init(|| {
        let dir = fixture_dir().join("../linked");
        let mut libs = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("linked dir") {
            let p = entry.expect("linked entry").path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let wasm = wat::parse_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            libs.push((name, Module::new(engine(), wasm).expect("library compiles")));
        }
        libs
    })
}

/// Instantiates `bytes` and performs `calls` in order on one instance.
pub fn run(bytes: &[u8], calls: &[Call]) -> Run {
    let engine = engine();
    let module = Module::new(engine, bytes).expect("module compiles");
    let mut linker: Linker<Data> = Linker::new(engine);
    linker
        .func_wrap(
            "__pathprof",
            "trace",
            |mut c: wasmtime::Caller<'_, Data>, f: i32, e: i32| {
                c.data_mut().events.push((f as u32, e as u32));
            },
        )
        .unwrap();
    linker
        .func_wrap("env", "add1", |x: i32| x.wrapping_add(1))
        .unwrap();
    // tail_segments.wat tail-calls it through a table; WASI's returns 0
    // (success) too.
    linker
        .func_wrap("wasi_snapshot_preview1", "sched_yield", || 0i32)
        .unwrap();
    let mut store = Store::new(engine, Data::default());
    for (name, lib) in linked() {
        linker.module(&mut store, name, lib).expect("library links");
    }
    let instance: Instance = linker
        .instantiate(&mut store, &module)
        .expect("instantiate");
    let mut bounds = vec![store.data().events.len()];
    let mut outcomes = Vec::new();
    for call in calls {
        let f = instance.get_func(&mut store, &call.export).expect("export");
        let ty = f.ty(&store);
        let args: Vec<Val> = ty
            .params()
            .zip(&call.args)
            .map(|(t, &v)| arg_val(&t, v))
            .collect();
        let mut results = vec![Val::I32(0); ty.results().len()];
        let outcome = match f.call(&mut store, &args, &mut results) {
            Ok(()) => Outcome::Values(results.iter().map(show).collect()),
            Err(e) => match e.downcast_ref::<Trap>() {
                Some(t) => Outcome::Trap(format!("{t:?}")),
                None => Outcome::Error,
            },
        };
        outcomes.push(outcome);
        bounds.push(store.data().events.len());
    }
    let counters = instance
        .get_memory(&mut store, pathprof_wasm::COUNTERS_EXPORT)
        .map(|m| m.data(&store).to_vec());
    Run {
        outcomes,
        events: std::mem::take(&mut store.data_mut().events),
        bounds,
        counters,
    }
}

/// Asserts equal outcomes, naming the first call that differs.
pub fn assert_same_outcomes(label: &str, calls: &[Call], got: &[Outcome], want: &[Outcome]) {
    assert_eq!(got.len(), want.len(), "{label}: number of outcomes");
    for ((call, g), w) in calls.iter().zip(got).zip(want) {
        assert_eq!(g, w, "{label}: {}({:?})", call.export, call.args);
    }
}

const VALUES: [i64; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 16, 100, -1, -7];
const PAIR_VALUES: [i64; 7] = [0, 1, 2, 3, 7, -1, 13];

/// Calls of every exported function with numeric parameters, over a grid of
/// argument values.
pub fn calls_for(bytes: &[u8]) -> Vec<Call> {
    let module = Module::new(engine(), bytes).expect("module compiles");
    let mut calls = Vec::new();
    for export in module.exports() {
        let Some(ft) = export.ty().func().cloned() else {
            continue;
        };
        let params: Vec<ValType> = ft.params().collect();
        if !params
            .iter()
            .all(|t| matches!(t, ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64))
        {
            continue;
        }
        let name = export.name().to_string();
        match params.len() {
            0 => calls.push(Call {
                export: name,
                args: vec![],
            }),
            1 => calls.extend(VALUES.iter().map(|&v| Call {
                export: name.clone(),
                args: vec![v],
            })),
            _ => {
                for &a in &PAIR_VALUES {
                    for &b in &PAIR_VALUES {
                        let mut args = vec![a, b];
                        args.resize(params.len(), 3);
                        calls.push(Call {
                            export: name.clone(),
                            args,
                        });
                    }
                }
            }
        }
    }
    calls
}

// ---------------------------------------------------------------- plans

pub fn cfgs(info: &ModuleInfo) -> impl Iterator<Item = Option<&FunctionCfg>> {
    info.functions.iter().map(|f| f.as_ref().ok())
}

pub fn plans_with(
    info: &ModuleInfo,
    mut f: impl FnMut(&FunctionCfg) -> FunctionPlan,
) -> Vec<Option<FunctionPlan>> {
    cfgs(info).map(|c| c.map(&mut f)).collect()
}

/// `Trace { edge: e }` on every edge.
pub fn trace_plan(c: &FunctionCfg) -> FunctionPlan {
    let mut p = FunctionPlan::empty(c.cfg.num_edges());
    p.edges = EdgeActions::from_fn(c.cfg.num_edges(), |e, a| {
        a.push(Action::Trace { edge: e as u32 });
    });
    p
}

/// `CountSlot { index: e }` on every edge.
pub fn slot_plan(c: &FunctionCfg) -> FunctionPlan {
    let mut p = FunctionPlan::empty(c.cfg.num_edges());
    p.slots = c.cfg.num_edges() as u32;
    p.edges = EdgeActions::from_fn(c.cfg.num_edges(), |e, a| {
        a.push(Action::CountSlot { index: e as u32 });
    });
    p
}

/// Longest walk the length histogram can hold.
pub const MAX_WALK: u64 = 4096;

/// Walk-length histogram: `r = start` on edges out of ENTRY, `r += 1` on
/// every edge, `count[r + offset]++` on edges into EXIT. With
/// `start = -offset` the counted index is the walk's length in edges.
pub fn length_plan(
    c: &FunctionCfg,
    width: Width,
    start: i64,
    offset: i64,
    paths: PathTable,
) -> FunctionPlan {
    let mut p = FunctionPlan::empty(c.cfg.num_edges());
    p.registers = vec![width];
    p.paths = paths;
    p.edges = EdgeActions::from_fn(c.cfg.num_edges(), |e, a| {
        let (src, dst) = c.cfg.edge(EdgeId::new(e));
        if src == Cfg::ENTRY {
            a.push(Action::Set {
                reg: 0,
                value: start,
            });
        }
        a.push(Action::Add { reg: 0, value: 1 });
        if dst == Cfg::EXIT {
            a.push(Action::CountPath { reg: 0, offset });
        }
    });
    p
}

// ---------------------------------------------------------------- oracle

/// Walks reconstructed from trace events.
#[derive(Default, Debug)]
pub struct Walks {
    /// `(function index, edges)` of every walk that reached EXIT, in order of
    /// completion.
    pub complete: Vec<(u32, Vec<EdgeId>)>,
    /// Walks cut short by an exception from a callee or a trap.
    pub abandoned: usize,
    /// Events per `(function index, edge)`.
    pub edge_counts: BTreeMap<(u32, u32), u64>,
}

struct Frame {
    func: u32,
    walk: Vec<EdgeId>,
    done: bool,
}

pub fn function(info: &ModuleInfo, func: u32) -> &FunctionCfg {
    info.functions[(func - info.num_imported_funcs) as usize]
        .as_ref()
        .expect("supported function")
}

/// Reconstructs per-call walks from the event stream, checking that each is
/// a walk in its CFG from ENTRY to EXIT. Panics on any inconsistency.
pub fn reconstruct(info: &ModuleInfo, run: &Run) -> Walks {
    let mut w = Walks::default();
    let mut starts = vec![0];
    starts.extend(&run.bounds);
    for (call, pair) in starts.windows(2).enumerate() {
        // Window 0 is instantiation (the start function), which succeeded.
        let failed = call > 0 && !matches!(run.outcomes[call - 1], Outcome::Values(_));
        let mut stack: Vec<Frame> = Vec::new();
        for &(func, edge) in &run.events[pair[0]..pair[1]] {
            *w.edge_counts.entry((func, edge)).or_default() += 1;
            let f = function(info, func);
            let e = EdgeId::new(edge as usize);
            let (src, dst) = f.cfg.edge(e);
            let kind = f.edge_kinds[edge as usize];
            if kind == EdgeKind::Entry {
                assert_eq!(src, Cfg::ENTRY);
                stack.push(Frame {
                    func,
                    walk: vec![e],
                    done: false,
                });
            } else if src == Cfg::ENTRY {
                assert_eq!(
                    kind,
                    EdgeKind::Catch,
                    "only Entry and Catch edges leave ENTRY"
                );
                while stack.last().is_some_and(|t| t.func != func) {
                    let t = stack.pop().unwrap();
                    w.abandoned += usize::from(!t.done);
                }
                let top = stack
                    .last_mut()
                    .unwrap_or_else(|| panic!("catch in {func} without a frame"));
                w.abandoned += usize::from(!top.done);
                top.walk = vec![e];
                top.done = false;
            } else {
                // An exception a library caught (after calling back into
                // the module) left the frames above the nearest of `func`.
                if stack.iter().any(|t| t.func == func) {
                    while stack.last().is_some_and(|t| t.func != func) {
                        let t = stack.pop().unwrap();
                        w.abandoned += usize::from(!t.done);
                    }
                }
                let top = stack
                    .last_mut()
                    .unwrap_or_else(|| panic!("edge {edge} of {func} without a frame"));
                assert_eq!(
                    top.func, func,
                    "edge {edge} of {func} while {} is running",
                    top.func
                );
                assert!(!top.done, "edge {edge} of {func} after its walk ended");
                let last = *top.walk.last().unwrap();
                assert_eq!(
                    f.cfg.dst(last),
                    src,
                    "edges {last} then {e} of {func} do not share a node"
                );
                top.walk.push(e);
            }
            if dst == Cfg::EXIT {
                let top = stack.last_mut().unwrap();
                w.complete.push((func, top.walk.clone()));
                top.done = true;
                if !matches!(kind, EdgeKind::Throw | EdgeKind::ThrowRef) {
                    stack.pop();
                }
            }
        }
        let unfinished = stack.iter().filter(|t| !t.done).count();
        // Only a trap or an exception escaping to the host leaves walks
        // unfinished at the end of a call.
        assert!(
            failed || unfinished == 0,
            "call {call} returned with {unfinished} walks not at EXIT"
        );
        w.abandoned += unfinished;
    }
    w
}

/// Walk-length histogram per function from the oracle.
pub fn length_histogram(w: &Walks) -> BTreeMap<u32, BTreeMap<u64, u64>> {
    let mut h: BTreeMap<u32, BTreeMap<u64, u64>> = BTreeMap::new();
    for (func, walk) in &w.complete {
        assert!(
            (walk.len() as u64) < MAX_WALK,
            "walk too long for the histogram"
        );
        *h.entry(*func)
            .or_default()
            .entry(walk.len() as u64)
            .or_default() += 1;
    }
    h
}

/// The kinds along a walk, for hand-derived expectations.
pub fn kinds(f: &FunctionCfg, walk: &[EdgeId]) -> Vec<EdgeKind> {
    walk.iter().map(|e| f.edge_kinds[e.index()]).collect()
}

pub fn analyze_ok(bytes: &[u8]) -> ModuleInfo {
    analyze(bytes).expect("analyze")
}
