//! Fixture programs and their inputs, and running them under each technique.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use pathprof::driver::{self, Technique};
use pathprof_profile::{FunctionData, Profile};
use pathprof_runner::{Exit, Preload, RunOptions, TraceEvent, TraceTo};
use sha2::{Digest, Sha256};
use wasmtime::{Engine, ExternType, Module, ValType};

use super::oracle::{Counts, FuncGraph, PathKey};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One way to run a program.
#[derive(Clone, Debug)]
pub enum Invocation {
    /// `_start` with argv (argv[0] included) and stdin.
    Command { args: Vec<String>, stdin: Vec<u8> },
    /// An export with its arguments.
    Call { export: String, args: Vec<String> },
}

impl Invocation {
    /// `_start` with argv `argv` (argv[0] first) and no input.
    pub fn command(argv: &[&str]) -> Invocation {
        Invocation::Command {
            args: argv.iter().map(|a| a.to_string()).collect(),
            stdin: Vec::new(),
        }
    }
}

/// What a run left behind.
pub struct Outcome {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub results: Vec<String>,
    pub counters: Option<Vec<u8>>,
    /// The trace events, when [`run`] was asked to keep them.
    pub trace: Vec<(u32, u32)>,
    pub abrupt_stack: Vec<(u32, u32)>,
}

/// The engine of the tests, one for the whole test binary, so that
/// [`compile`] can reuse what an earlier test compiled. Without fuel
/// metering, as `pathprof run` compiles unless given `--fuel`: metering
/// made the oracles' compiles about a sixth slower (the fuzzer, whose
/// generated modules may loop forever, builds its own engine with fuel).
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| pathprof_runner::engine_without_fuel().expect("engine"))
        .clone()
}

/// [`pathprof_runner::compile`], once per module and engine while it is
/// kept: the oracles run the same fixtures, traced or instrumented the
/// same way, under many tests and invocations (before this, the
/// integration tests compiled 13,822 modules, 1,823 of them distinct,
/// and spent two thirds of their time in Cranelift). Keyed by the
/// module's SHA-256; forgotten all at once when the modules kept reach
/// [`KEPT_WASM_BYTES`] (the same module is mostly asked for again by the
/// same test, soon).
pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<Module, pathprof_runner::RunError> {
    static KEPT: Mutex<Kept> = Mutex::new(Kept {
        engines: Vec::new(),
        wasm_bytes: 0,
    });
    let key: [u8; 32] = Sha256::digest(bytes).into();
    if let Some(m) = KEPT.lock().unwrap().modules(engine).get(&key) {
        return Ok(m.clone());
    }
    // Compiled outside the lock: other tests compile theirs meanwhile.
    let module = pathprof_runner::compile(engine, bytes)?;
    let mut kept = KEPT.lock().unwrap();
    if kept.wasm_bytes + bytes.len() > KEPT_WASM_BYTES {
        kept.engines.clear();
        kept.wasm_bytes = 0;
    }
    kept.wasm_bytes += bytes.len();
    kept.modules(engine).insert(key, module.clone());
    Ok(module)
}

/// How much wasm [`compile`] keeps compiled: the 1,823 distinct modules of
/// the tests are 158 MB of wasm, more than their machine code should hold
/// in one process.
const KEPT_WASM_BYTES: usize = 64 << 20;

/// The modules [`compile`] keeps, per engine.
struct Kept {
    engines: Vec<(Engine, HashMap<[u8; 32], Module>)>,
    wasm_bytes: usize,
}

impl Kept {
    fn modules(&mut self, engine: &Engine) -> &mut HashMap<[u8; 32], Module> {
        let at = match self
            .engines
            .iter()
            .position(|(e, _)| Engine::same(e, engine))
        {
            Some(at) => at,
            None => {
                self.engines.push((engine.clone(), HashMap::new()));
                self.engines.len() - 1
            }
        };
        &mut self.engines[at].1
    }
}

/// `each` over `items` on two threads, each taking the next item not yet
/// taken and adding what it saw to its own `S`; both states come back. A
/// panic on either thread is the caller's.
pub fn on_two_threads<T: Sync, S: Default + Send>(
    items: &[T],
    each: impl Fn(&T, &mut S) + Sync,
) -> Vec<S> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let worker = || {
        let mut state = S::default();
        while let Some(item) = items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            each(item, &mut state);
        }
        state
    };
    std::thread::scope(|scope| {
        let other = scope.spawn(worker);
        let mine = worker();
        let other = other
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        vec![mine, other]
    })
}

/// Runs `inv` on the module `bytes`; with `trace`, every trace event it
/// makes is kept in [`Outcome::trace`].
pub fn run(engine: &Engine, bytes: &[u8], inv: &Invocation, trace: bool) -> Outcome {
    let module = compile(engine, bytes).expect("compile");
    run_compiled(&module, inv, trace)
}

/// Runs `inv` on the module `bytes`, its trace events sent to `trace`.
pub fn run_to(engine: &Engine, bytes: &[u8], inv: &Invocation, trace: Option<TraceTo>) -> Outcome {
    let module = compile(engine, bytes).expect("compile");
    run_compiled_to(&module, inv, trace)
}

/// [`run`] of a module compiled once for several runs.
pub fn run_compiled(module: &Module, inv: &Invocation, trace: bool) -> Outcome {
    let events = Arc::new(Mutex::new(Vec::<TraceEvent>::new()));
    let sink = trace.then(|| TraceTo::new(events.clone()));
    let mut outcome = run_compiled_to(module, inv, sink);
    let events = std::mem::take(&mut *events.lock().unwrap());
    outcome.trace = events.into_iter().map(|e| (e.func, e.edge)).collect();
    outcome
}

/// [`run_to`] of a compiled module.
pub fn run_compiled_to(module: &Module, inv: &Invocation, trace: Option<TraceTo>) -> Outcome {
    match inv {
        Invocation::Command { args, stdin } => {
            let opts = RunOptions {
                stdin: Some(stdin.clone()),
                trace,
                preload: preload_for(module),
                ..RunOptions::captured(args.clone())
            };
            let o = pathprof_runner::run_compiled(module, &opts).expect("run");
            Outcome {
                exit: o.exit,
                stdout: o.stdout,
                results: Vec::new(),
                counters: o.counters,
                trace: Vec::new(),
                abrupt_stack: o.abrupt_stack,
            }
        }
        Invocation::Call { export, args } => {
            let opts = RunOptions {
                trace,
                preload: preload_for(module),
                ..RunOptions::captured(["module"])
            };
            let o = pathprof_runner::invoke_compiled(module, export, args, &opts).expect("invoke");
            Outcome {
                exit: o.exit,
                stdout: o.stdout,
                results: o.results.iter().map(|v| v.to_string()).collect(),
                counters: o.counters,
                trace: Vec::new(),
                abrupt_stack: o.abrupt_stack,
            }
        }
    }
}

/// The libraries the WAT fixtures link against:
/// `tests/fixtures/linked/NAME.wat` provides the imports of module `NAME`.
pub fn linked() -> &'static [Preload] {
    static LINKED: OnceLock<Vec<Preload>> = OnceLock::new();
    LINKED.get_or_init(|| {
        let dir = root().join("tests/fixtures/linked");
        let mut out: Vec<Preload> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "wat"))
            .map(|p| Preload {
                name: p.file_stem().unwrap().to_string_lossy().into_owned(),
                origin: p.display().to_string(),
                bytes: pathprof::input::read_module(&p).unwrap(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    })
}

/// The [`linked`] libraries `module` imports from.
pub fn preload_for(module: &Module) -> Vec<Preload> {
    let names: HashSet<&str> = module.imports().map(|i| i.module()).collect();
    linked()
        .iter()
        .filter(|p| names.contains(p.name.as_str()))
        .cloned()
        .collect()
}

/// Whether the module imports anything but WASI and the [`linked`]
/// libraries (the embedded engine provides nothing else).
pub fn needs_host_imports(engine: &Engine, bytes: &[u8]) -> bool {
    compile(engine, bytes)
        .expect("fixture compiles")
        .imports()
        .any(|i| {
            i.module() != "wasi_snapshot_preview1" && !linked().iter().any(|p| p.name == i.module())
        })
}

/// Calls of every exported function whose parameters are all numbers, each
/// with a few argument vectors.
pub fn export_calls(engine: &Engine, bytes: &[u8]) -> Vec<Invocation> {
    let module = compile(engine, bytes).expect("fixture compiles");
    let mut out = Vec::new();
    for export in module.exports() {
        let ExternType::Func(ft) = export.ty() else {
            continue;
        };
        let params: Vec<ValType> = ft.params().collect();
        if !params
            .iter()
            .all(|p| matches!(p, ValType::I32 | ValType::I64))
        {
            continue;
        }
        for v in ["0", "1", "2", "3", "5", "8", "13", "-1"] {
            out.push(Invocation::Call {
                export: export.name().to_string(),
                args: vec![v.to_string(); params.len()],
            });
        }
    }
    out
}

/// The oracle's view of every instrumentable function.
pub fn graphs(module: &[u8]) -> BTreeMap<u32, FuncGraph> {
    let info = pathprof_wasm::analyze(module).expect("analyze");
    info.functions
        .into_iter()
        .flatten()
        .map(|f| {
            let catch: HashSet<_> = f
                .cfg
                .edge_ids()
                .filter(|e| matches!(f.edge_kinds[e.index()], pathprof_wasm::EdgeKind::Catch))
                .collect();
            (f.func_index, FuncGraph::new(f.cfg, catch))
        })
        .collect()
}

/// The oracle's graphs with the truncation cuts a path profile made: where
/// paths are cut is a parameter of the profile, not something to verify.
pub fn graphs_cut_as(module: &[u8], profile: &Profile) -> BTreeMap<u32, FuncGraph> {
    let mut graphs = graphs(module);
    for f in &profile.functions {
        if let FunctionData::Path { numbered, .. } = &f.data {
            graphs
                .get_mut(&f.func_index)
                .expect("profiled function")
                .cuts = numbered.cut_nodes.iter().copied().collect();
        }
    }
    graphs
}

/// Paths and self loops as a path profile reports them.
pub fn path_counts(profile: &Profile) -> Counts {
    let mut c = Counts::default();
    for p in pathprof::report::hot_paths(profile, None).expect("regenerate") {
        let key = PathKey {
            func: p.func_index,
            kind: p.kind.to_string(),
            blocks: p.blocks.iter().map(|b| b.block.index() as u32).collect(),
        };
        assert!(
            c.paths.insert(key, p.count).is_none(),
            "two path numbers regenerate to the same path"
        );
    }
    for f in &profile.functions {
        if let FunctionData::Path {
            numbered, counts, ..
        } = &f.data
        {
            for (e, &n) in numbered.self_loops.iter().zip(&counts.self_loops) {
                if n > 0 {
                    c.self_loops.insert((f.func_index, e.index() as u32), n);
                }
            }
        }
    }
    c
}

/// Non-zero edge counts of an edge profile.
pub fn edge_counts(profile: &Profile) -> BTreeMap<(u32, u32), u64> {
    let mut out = BTreeMap::new();
    for f in &profile.functions {
        if let FunctionData::Edge { edge_counts, .. } = &f.data {
            for (e, &n) in edge_counts.iter().enumerate() {
                if n > 0 {
                    out.insert((f.func_index, e as u32), n);
                }
            }
        }
    }
    out
}

/// Instruments `module` for `technique`, runs it, and returns the outcome
/// and the profile collected from it.
pub fn profiled_run(
    engine: &Engine,
    module: &[u8],
    technique: Technique,
    opts: &driver::Options,
    inv: &Invocation,
) -> (Outcome, Profile) {
    profiled_run_with(engine, module, technique.profiler(), opts, inv)
}

/// [`profiled_run`] for any technique, pathprof's own or one a test
/// defines.
pub fn profiled_run_with(
    engine: &Engine,
    module: &[u8],
    technique: &'static dyn driver::Profiler,
    opts: &driver::Options,
    inv: &Invocation,
) -> (Outcome, Profile) {
    let inst = driver::instrument_with(module, technique, opts).expect("instrument");
    let out = run(engine, &inst.bytes, inv, false);
    let counters = out
        .counters
        .as_ref()
        .expect("instrumented module exports counters");
    let meta = driver::read_meta_with(&inst.bytes, &[technique]).expect("metadata decodes");
    let profile = driver::collect(
        &meta,
        counters,
        out.exit
            .is_abrupt()
            .then_some(out.exit.unfinished_frames(&out.abrupt_stack)),
    )
    .expect("collect");
    (out, profile)
}

/// Melski & Reps' worked example (TR 1382, Fig. 4;
/// tests/fixtures/interproc/figure4.wat) and the call of its `main`.
pub fn figure4() -> (Vec<u8>, Invocation) {
    let module =
        pathprof::input::read_module(&root().join("tests/fixtures/interproc/figure4.wat")).unwrap();
    let inv = Invocation::Call {
        export: "main".into(),
        args: vec![],
    };
    (module, inv)
}

/// Parses `tests/fixtures/c/cases.txt`: `(fixture name, invocation)`.
pub fn c_cases() -> Vec<(String, Invocation)> {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/c/cases.txt")).expect("cases.txt");
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, '|');
        let name = parts.next().unwrap().trim().to_string();
        let mut args = vec![name.clone()];
        args.extend(
            parts
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from),
        );
        let stdin = unescape(parts.next().unwrap_or("").trim_start());
        out.push((
            name,
            Invocation::Command {
                args,
                stdin: stdin.into_bytes(),
            },
        ));
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every run the oracles compare: each C fixture's cases at -O0 and -O2,
/// then each call of a WAT fixture's exports that needs no host imports (the
/// control instructions C does not give: `br_table` to many labels, tail
/// calls, exceptions thrown and caught).
pub fn oracle_runs() -> Vec<(String, Vec<u8>, Invocation)> {
    let build = root().join("tests/fixtures/c/build");
    let mut out = Vec::new();
    for (name, inv) in c_cases() {
        for opt in ["O0", "O2"] {
            let path = build.join(format!("{name}.{opt}.wasm"));
            let module = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh");
            out.push((format!("{name}.{opt}"), module, inv.clone()));
        }
    }
    let engine = engine();
    for path in wat_fixtures() {
        let module = pathprof::input::read_module(&path).unwrap();
        if needs_host_imports(&engine, &module) {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for inv in export_calls(&engine, &module) {
            out.push((name.clone(), module.clone(), inv));
        }
    }
    out
}

/// The WAT fixtures (`tests/fixtures/wat/*.wat`), sorted.
pub fn wat_fixtures() -> Vec<PathBuf> {
    let dir = root().join("tests/fixtures/wat");
    let mut fixtures: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wat"))
        .collect();
    fixtures.sort();
    fixtures
}

/// The function whose block starts at the module offset `start`
/// (`u32::MAX` for none: a hardware path's start at the host, address 0).
pub fn owner(info: &pathprof_wasm::ModuleInfo, start: u32) -> u32 {
    info.functions
        .iter()
        .flatten()
        .find(|f| f.blocks.iter().flatten().any(|b| b.offset == start))
        .map_or(u32::MAX, |f| f.func_index)
}
