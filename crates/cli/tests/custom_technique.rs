//! The technique interface is the one place a technique touches (issue 28):
//! a technique defined in this file alone, through
//! `pathprof_core::technique::Profiler`, is planned, recorded in the
//! metadata, run and decoded by pathprof's own pipeline, and its counts
//! equal the trace oracle's.
//!
//! Two toys:
//! - the naive edge profiler that Ball & Larus' placement improves on: one
//!   counter on every edge, so every edge's count is read, not derived. Its
//!   record keeps the number of edges it counted, which reading the
//!   metadata back checks;
//! - a count of function entries, by an action at the function's entry
//!   rather than on an edge (the placement interprocedural techniques use);
//! - a count of the entries made from within the module, which keeps the
//!   depth of activations in a module-level register (a global) across
//!   calls;
//! - a count of the entries of the recursive functions alone, which its
//!   per-function plans read from the module plan: the call graph and its
//!   strongly connected components (`Profiler::needs_call_graph`). The
//!   oracle finds the recursive functions by brute-force reachability.

use crate::common;

use common::oracle;
use common::programs::{self, Invocation};
use pathprof::driver::{self, Technique};
use pathprof_core::meta::MetaError;
use pathprof_core::technique::{
    Action, Counters, EdgeActions, FunctionCfg, FunctionPlan, Interproc, ModuleFacts, ModulePlan,
    PlanCx, Planned, Profiler, Reader, Recorded, Width, FIRST_FOREIGN_CODE,
};
use pathprof_graph::Cfg;
use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_runner::TraceTo;
use pathprof_runner::{TraceEvent, TraceSink};
use pathprof_techniques::edge::Chords;
use pathprof_techniques::IfNonZero;
use pathprof_wasm::EdgeKind;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One counter on every edge.
struct EveryEdge;
static EVERY_EDGE: EveryEdge = EveryEdge;

impl Profiler for EveryEdge {
    fn name(&self) -> &'static str {
        "every-edge"
    }

    fn about(&self) -> &'static str {
        "A counter on every edge"
    }

    fn code(&self) -> u8 {
        FIRST_FOREIGN_CODE
    }

    fn mode(&self) -> Mode {
        Mode::Edge
    }

    fn plan(&self, f: &FunctionCfg, _cx: &PlanCx<'_>) -> pathprof_core::Result<Planned> {
        let edges = f.cfg.num_edges();
        let mut plan = FunctionPlan::empty(edges);
        plan.edges = EdgeActions::from_fn(edges, |e, actions| {
            actions.push(Action::CountSlot { index: e as u32 });
        });
        plan.slots = edges as u32;
        let mut planned = Planned::new(plan);
        planned.record.usize(edges);
        Ok(planned)
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        let counted = r.u64()?;
        if counted != f.edges.len() as u64 {
            return Err(f.corrupt(r, format!("{counted} edges counted of {}", f.edges.len())));
        }
        // Every edge is a chord: nothing is left to derive.
        Ok(FunctionData::Edge {
            chords: Chords {
                chords: (0..f.edges.len())
                    .map(pathprof_graph::EdgeId::new)
                    .collect(),
                unwinding: Vec::new(),
            },
            chord_counts: vec![0; f.edges.len()],
            edge_counts: vec![0; f.edges.len()],
        })
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> pathprof_core::Result<()> {
        cx.each_function(profile, |f, raw| {
            if raw.slots.len() != f.edges.len() {
                let found = raw.slots.len();
                return Err(pathprof_core::Error::Invalid(format!(
                    "{found} counters for {} edges",
                    f.edges.len()
                )));
            }
            if let FunctionData::Edge {
                chord_counts,
                edge_counts,
                ..
            } = &mut f.data
            {
                edge_counts.clone_from(&raw.slots);
                *chord_counts = raw.slots;
            }
            Ok(())
        })
    }
}

/// One counter per function, counted by its entry actions; decoded as an
/// edge profile that knows only the entry edge.
struct Entries;
static ENTRIES: Entries = Entries;

impl Profiler for Entries {
    fn name(&self) -> &'static str {
        "entries"
    }

    fn about(&self) -> &'static str {
        "Function entries"
    }

    fn code(&self) -> u8 {
        FIRST_FOREIGN_CODE + 1
    }

    fn mode(&self) -> Mode {
        Mode::Edge
    }

    fn plan(&self, f: &FunctionCfg, _cx: &PlanCx<'_>) -> pathprof_core::Result<Planned> {
        let mut plan = FunctionPlan::empty(f.cfg.num_edges());
        plan.slots = 1;
        plan.interproc = Some(Box::new(Interproc {
            entry: vec![Action::CountSlot { index: 0 }],
            exit: Vec::new(),
            calls: Vec::new(),
        }));
        Ok(Planned::new(plan))
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        entry_edge_data(r, f)
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> pathprof_core::Result<()> {
        decode_entry_edge(cx, profile)
    }
}

/// An edge profile that knows only the entry edge's count, the one slot.
fn entry_edge_data(r: &Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
    let entry = f
        .edges
        .iter()
        .position(|e| e.kind == "Entry")
        .ok_or_else(|| f.corrupt(r, "no entry edge"))?;
    Ok(FunctionData::Edge {
        chords: Chords {
            chords: vec![pathprof_graph::EdgeId::new(entry)],
            unwinding: Vec::new(),
        },
        chord_counts: vec![0],
        edge_counts: vec![0; f.edges.len()],
    })
}

/// The one slot of each function as its entry edge's count (none for a
/// function without it).
fn decode_entry_edge(cx: &Counters<'_>, profile: &mut Profile) -> pathprof_core::Result<()> {
    cx.each_function(profile, |f, raw| {
        if let (
            FunctionData::Edge {
                chords,
                chord_counts,
                edge_counts,
            },
            false,
        ) = (&mut f.data, raw.slots.is_empty())
        {
            edge_counts[chords.chords[0].index()] = raw.slots[0];
            *chord_counts = raw.slots;
        }
        Ok(())
    })
}

/// Entries made while another activation of an instrumented function is
/// live (calls from the module, not from the host): the depth of
/// instrumented activations is kept in a module-level register, raised by
/// every entry and lowered by every return. An exception that unwinds
/// activations would leave it high, so the oracle skips modules that
/// throw.
struct NestedEntries;
static NESTED_ENTRIES: NestedEntries = NestedEntries;

/// Entries of the functions in a cycle of the call graph; the others get
/// no counter. The plan of each function reads the call graph the driver
/// built for the technique; its record says whether it counts.
struct RecursiveEntries;
static RECURSIVE_ENTRIES: RecursiveEntries = RecursiveEntries;

impl Profiler for RecursiveEntries {
    fn name(&self) -> &'static str {
        "recursive-entries"
    }

    fn about(&self) -> &'static str {
        "Entries of recursive functions"
    }

    fn code(&self) -> u8 {
        FIRST_FOREIGN_CODE + 3
    }

    fn mode(&self) -> Mode {
        Mode::Edge
    }

    fn needs_call_graph(&self) -> bool {
        true
    }

    fn plan(&self, f: &FunctionCfg, cx: &PlanCx<'_>) -> pathprof_core::Result<Planned> {
        let graph = cx
            .facts
            .call_graph
            .as_ref()
            .expect("the call graph asked for");
        if !graph.is_recursive(f.func_index) {
            let mut planned = Planned::new(FunctionPlan::empty(f.cfg.num_edges()));
            planned.record.u8(0);
            return Ok(planned);
        }
        let mut planned = ENTRIES.plan(f, cx)?;
        planned.record.u8(1);
        Ok(planned)
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        match r.u8()? {
            1 => entry_edge_data(r, f),
            _ => Ok(pathprof_core::technique::zero_edges(f.edges.len())),
        }
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> pathprof_core::Result<()> {
        decode_entry_edge(cx, profile)
    }
}

/// The functions that can reach themselves through calls, by a search
/// from each function over the call graph's edges (not its components).
fn recursive_functions(module: &[u8]) -> std::collections::BTreeSet<u32> {
    let info = pathprof_wasm::analyze(module).expect("analyze");
    let graph = pathprof_wasm::callgraph::CallGraph::new(module, &info).expect("call graph");
    (0..graph.num_funcs())
        .filter(|&f| {
            let mut seen = std::collections::BTreeSet::new();
            let mut todo: Vec<u32> = graph.callees(f).to_vec();
            while let Some(g) = todo.pop() {
                if g == f {
                    return true;
                }
                if seen.insert(g) {
                    todo.extend_from_slice(graph.callees(g));
                }
            }
            false
        })
        .collect()
}

/// The depth register (a global) and its local copy.
const DEPTH: u32 = 0;
const R: u8 = 0;

impl Profiler for NestedEntries {
    fn name(&self) -> &'static str {
        "nested-entries"
    }

    fn about(&self) -> &'static str {
        "Function entries from within the module"
    }

    fn code(&self) -> u8 {
        FIRST_FOREIGN_CODE + 2
    }

    fn mode(&self) -> Mode {
        Mode::Edge
    }

    fn module_plan(&self, _facts: &ModuleFacts) -> ModulePlan {
        ModulePlan {
            globals: vec![Width::I64],
            stack_bytes: 0,
        }
    }

    fn plan(&self, f: &FunctionCfg, _cx: &PlanCx<'_>) -> pathprof_core::Result<Planned> {
        let mut plan = FunctionPlan::empty(f.cfg.num_edges());
        plan.registers = vec![Width::I64];
        plan.slots = 1;
        let depth_by = |delta: i64| {
            vec![
                Action::GlobalToLocal {
                    reg: R,
                    global: DEPTH,
                },
                Action::Add {
                    reg: R,
                    value: delta,
                },
                Action::LocalToGlobal {
                    global: DEPTH,
                    reg: R,
                },
            ]
        };
        let mut entry = depth_by(1);
        // Counted when the depth before this entry was not zero.
        entry.insert(
            1,
            Action::IfNonZero(Box::new(IfNonZero {
                reg: R,
                then: vec![Action::CountSlot { index: 0 }],
                otherwise: Vec::new(),
            })),
        );
        plan.interproc = Some(Box::new(Interproc {
            entry,
            exit: depth_by(-1),
            calls: Vec::new(),
        }));
        Ok(Planned::new(plan))
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        entry_edge_data(r, f)
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> pathprof_core::Result<()> {
        decode_entry_edge(cx, profile)
    }
}

/// The nested entries of a trace, replayed in order: an entry edge raises
/// the depth, an edge that returns (to EXIT, not by a trap or a throw)
/// lowers it. `None` for a module that may throw.
struct DepthOracle {
    /// Per function, per edge: its kind.
    kinds: BTreeMap<u32, Vec<EdgeKind>>,
    /// Per function, per edge: whether it goes to EXIT.
    to_exit: BTreeMap<u32, Vec<bool>>,
    depth: u64,
    nested: BTreeMap<(u32, u32), u64>,
}

impl DepthOracle {
    fn new(module: &[u8]) -> Option<Self> {
        let info = pathprof_wasm::analyze(module).expect("analyze");
        let (mut kinds, mut to_exit) = (BTreeMap::new(), BTreeMap::new());
        for f in info.functions.iter().flatten() {
            let throws = f
                .edge_kinds
                .iter()
                .any(|k| matches!(k, EdgeKind::Throw | EdgeKind::ThrowRef | EdgeKind::Catch));
            if throws {
                return None;
            }
            let exits = f.cfg.edge_ids().map(|e| f.cfg.dst(e) == Cfg::EXIT);
            to_exit.insert(f.func_index, exits.collect());
            kinds.insert(f.func_index, f.edge_kinds.clone());
        }
        Some(DepthOracle {
            kinds,
            to_exit,
            depth: 0,
            nested: BTreeMap::new(),
        })
    }

    fn event(&mut self, ev: &TraceEvent) {
        let (f, e) = (ev.func, ev.edge as usize);
        let kind = self.kinds[&f][e];
        if kind == EdgeKind::Entry {
            if self.depth > 0 {
                *self.nested.entry((f, ev.edge)).or_insert(0) += 1;
            }
            self.depth += 1;
        }
        let abrupt = matches!(
            kind,
            EdgeKind::Unreachable | EdgeKind::Throw | EdgeKind::ThrowRef
        );
        if self.to_exit[&f][e] && !abrupt {
            self.depth -= 1;
        }
    }
}

/// The trace oracle's counts, and the depth oracle's, from one run.
struct Oracles {
    counting: oracle::CountingSink,
    depth: Option<DepthOracle>,
}

impl TraceSink for Oracles {
    fn events(&mut self, events: &[TraceEvent]) {
        self.counting.events(events);
        if let Some(d) = &mut self.depth {
            events.iter().for_each(|ev| d.event(ev));
        }
    }
}

/// Runs `inv` with the toy techniques and traced: every count must be the
/// trace's, and the program must behave as uninstrumented. Says what it
/// checked.
fn check(engine: &wasmtime::Engine, name: &str, module: &[u8], inv: &Invocation) -> Checked {
    let plain = programs::run(engine, module, inv, false);
    let opts = driver::Options::default();
    let traced = driver::instrument(module, Technique::Trace, &opts).expect("trace instrument");
    let sink = Arc::new(Mutex::new(Oracles {
        counting: oracle::CountingSink::new(programs::graphs(module)),
        depth: DepthOracle::new(module),
    }));
    programs::run_to(engine, &traced.bytes, inv, Some(TraceTo::new(sink.clone())));
    let sink = sink.lock().unwrap();
    let trace = &sink.counting.counter.counts.edges;
    let entry_edges = entry_edges(module);
    let entered: BTreeMap<(u32, u32), u64> = trace
        .iter()
        .filter(|(k, _)| entry_edges.contains(k))
        .map(|(&k, &n)| (k, n))
        .collect();
    let nested = sink.depth.as_ref().map(|d| &d.nested);
    let recursive = recursive_functions(module);
    let recursive_entered: BTreeMap<(u32, u32), u64> = entered
        .iter()
        .filter(|(k, _)| recursive.contains(&k.0))
        .map(|(&k, &n)| (k, n))
        .collect();
    let mut toys: Vec<(&'static dyn Profiler, &BTreeMap<(u32, u32), u64>)> = vec![
        (&EVERY_EDGE, trace),
        (&ENTRIES, &entered),
        (&RECURSIVE_ENTRIES, &recursive_entered),
    ];
    if let Some(nested) = nested {
        toys.push((&NESTED_ENTRIES, nested));
    }
    for (toy, expected) in toys {
        let (run, profile) = programs::profiled_run_with(engine, module, toy, &opts, inv);
        assert_eq!(profile.mode, Mode::Edge);
        let toy = toy.name();
        assert_eq!(
            (&run.exit, &run.stdout, &run.results),
            (&plain.exit, &plain.stdout, &plain.results),
            "{name} {inv:?}: the program behaves otherwise under {toy}"
        );
        let diff = oracle::differences(&programs::edge_counts(&profile), expected);
        assert!(
            diff.is_empty(),
            "{name} {inv:?}: {toy} counts differ from the trace:\n{}",
            diff.join("\n")
        );
    }
    Checked {
        edges: sink.counting.events,
        nested: nested.is_some_and(|n| !n.is_empty()),
        recursive: !recursive_entered.is_empty(),
    }
}

/// What one run checked: the edges it crossed, whether nested entries were
/// checked (the module does not throw) and found, whether a recursive
/// function was entered.
struct Checked {
    edges: u64,
    nested: bool,
    recursive: bool,
}

/// Every function's entry edge, `(function index, edge)`.
fn entry_edges(module: &[u8]) -> std::collections::BTreeSet<(u32, u32)> {
    let info = pathprof_wasm::analyze(module).expect("analyze");
    info.functions
        .iter()
        .flatten()
        .flat_map(|f| {
            f.edge_kinds
                .iter()
                .enumerate()
                .filter(|(_, &k)| k == pathprof_wasm::EdgeKind::Entry)
                .map(move |(e, _)| (f.func_index, e as u32))
        })
        .collect()
}

#[test]
fn a_technique_defined_outside_pathprof_counts_what_the_trace_counts() {
    let engine = crate::common::programs::engine();
    let (mut runs, mut edges, mut nested, mut recursive) = (0, 0, 0, 0);
    for (name, module, inv) in programs::oracle_runs() {
        let checked = check(&engine, &name, &module, &inv);
        edges += checked.edges;
        nested += usize::from(checked.nested);
        recursive += usize::from(checked.recursive);
        runs += 1;
    }
    assert!(
        recursive >= 10,
        "only {recursive} runs entered a recursive function"
    );
    assert!(runs >= 100, "only {runs} runs were checked");
    assert!(edges > 100_000, "the runs crossed only {edges} edges");
    assert!(
        nested >= 40,
        "only {nested} runs had nested entries checked"
    );
}

/// The toy's profile is the built-in edge technique's, which derives most
/// counts from chords.
#[test]
fn the_toy_technique_agrees_with_edge_profiling() {
    let engine = crate::common::programs::engine();
    let opts = driver::Options::default();
    let path = programs::root().join("tests/fixtures/c/build/sort.O0.wasm");
    let module = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh");
    let inv = programs::c_cases()
        .into_iter()
        .find(|(name, _)| name == "sort")
        .expect("a sort case")
        .1;
    let (_, toy) = programs::profiled_run_with(&engine, &module, &EVERY_EDGE, &opts, &inv);
    let (_, edge) = programs::profiled_run(&engine, &module, Technique::Edge, &opts, &inv);
    assert_eq!(programs::edge_counts(&toy), programs::edge_counts(&edge));
    assert!(!programs::edge_counts(&toy).is_empty());
}

/// Its metadata names its code: a reader that does not know the technique
/// says so, and one given it reads the records back.
#[test]
fn metadata_of_a_foreign_technique_needs_its_profiler() {
    let module = wat::parse_str(
        r#"(module (func (export "f") (param i32) (result i32)
             (if (result i32) (local.get 0) (then (i32.const 1)) (else (i32.const 2)))))"#,
    )
    .unwrap();
    let opts = driver::Options::default();
    let inst = driver::instrument_with(&module, &EVERY_EDGE, &opts).unwrap();
    let err = driver::read_meta(&inst.bytes).unwrap_err().to_string();
    assert!(err.contains("technique 128"), "{err}");
    let meta = driver::read_meta_with(&inst.bytes, &[&EVERY_EDGE]).unwrap();
    assert_eq!(meta.technique.name(), "every-edge");
    let f = &meta.template.functions[0];
    match &f.data {
        FunctionData::Edge { chords, .. } => assert_eq!(chords.chords.len(), f.edges.len()),
        other => panic!("not an edge profile: {other:?}"),
    }
}
