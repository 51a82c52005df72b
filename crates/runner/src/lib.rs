//! Runs a (possibly instrumented) core WebAssembly module on the embedded
//! engine: wasmtime with WASI preview 1.
//!
//! * [`engine`] builds the one engine configuration the whole project uses
//!   ([`engine_without_fuel`]: the same without fuel metering, faster).
//! * [`run_command`] runs a WASI command (a module exporting `_start`).
//! * [`invoke`] calls one export of a library module with arguments given as
//!   strings.
//! * [`compile`], [`run_compiled`] and [`invoke_compiled`] do the same in two
//!   steps, to compile a module once and run it many times; [`run_ended`]
//!   and [`invoke_ended`] keep the instance, so that its counters are read
//!   where they are ([`Ended::counters`]) instead of copied.
//! * A module that uses legacy exception handling, which the engine does
//!   not compile, is compiled translated to `try_table` ([`legacy`]); the
//!   frames of its backtraces are given at the original's offsets.
//!
//! Both report how the run ended ([`Exit`]) and, whatever the ending, the
//! data an instrumented module leaves behind:
//!
//! * the bytes of the exported memory [`COUNTERS_EXPORT`]
//!   (`"__pathprof_counters"`), read after the run;
//! * the trace events of a module instrumented to trace its edges, handed to
//!   the [`TraceSink`] of [`RunOptions::trace`] as they happen ([`trace`]
//!   says how); the runner provides the trace imports to any module that
//!   imports them;
//! * the wasm frames that were live when the run ended abruptly (by
//!   `proc_exit` or a trap), innermost first.
//!
//! A trap (or running out of fuel) is not a Rust error: it is
//! [`Exit::Trap`], and the counters are still read. [`RunError`] is for what
//! prevents or breaks the run from the host's side (an invalid module, a
//! component, a missing export, unparsable arguments, ...).
//!
//! # Exit codes
//!
//! [`Exit::code`] gives the code a command-line tool should exit with, the
//! same convention as `wasmtime run` on Unix: `0` when `_start` returns, `n`
//! for `proc_exit(n)`, and [`TRAP_EXIT_CODE`] (`134`, i.e. 128 + SIGABRT)
//! for a trap. Unlike `wasmtime run`, which exits with 1 when a *host* function
//! fails (e.g. `proc_exit` with a status ≥ 126, which WASI forbids), the runner
//! reports every abrupt end other than a valid `proc_exit` as a trap, so such
//! runs also give 134.

mod error;
pub mod legacy;
pub mod trace;
mod value;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use wasmtime::{
    Caller, Config, Engine, Extern, Func, Instance, Linker, Module, OptLevel, ProfilingStrategy,
    Store, Trap, Val, WasmBacktrace, WasmBacktraceDetails,
};
use wasmtime_wasi::p1::{add_to_linker_sync, WasiP1Ctx};
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

pub use error::RunError;
pub use trace::{
    TraceEvent, TraceSink, TraceTo, TRACE_BUFFER_EXPORT, TRACE_FLUSH, TRACE_FUNC, TRACE_MODULE,
    TRACE_POS_EXPORT,
};
pub use value::Value;

/// Name of the exported memory holding an instrumented module's counters.
pub const COUNTERS_EXPORT: &str = "__pathprof_counters";
/// Exit code for a run that ended in a trap (128 + SIGABRT, as `wasmtime run`).
pub const TRAP_EXIT_CODE: u8 = 134;
/// The most wasm frames recorded in [`RunOutcome::abrupt_stack`]. The
/// engine's default wasm stack (512 KiB) cannot hold more frames than this,
/// so the recorded stack is complete.
pub const MAX_BACKTRACE_FRAMES: usize = 1 << 16;

/// The engine configuration used throughout the project.
///
/// Enables multi-memory, tail calls, typed function references, GC and
/// exception handling; wasm backtraces with DWARF details (up to
/// [`MAX_BACKTRACE_FRAMES`] frames); fuel metering (so that
/// [`RunOptions::fuel`] can bound a run; an unbounded run gets `u64::MAX`
/// fuel); Cranelift optimising for speed; and every function aligned to
/// [`FUNCTION_ALIGN`] bytes (or `PATHPROF_FUNCTION_ALIGN`). Fails only on a
/// bad `PATHPROF_FUNCTION_ALIGN`.
pub fn config() -> Result<Config, RunError> {
    let log2 = function_align_log2(std::env::var("PATHPROF_FUNCTION_ALIGN").ok().as_deref())?;
    Ok(config_aligned(log2))
}

/// [`config`] with functions aligned to `2^align_log2` bytes.
fn config_aligned(align_log2: u32) -> Config {
    let mut config = Config::new();
    config
        .wasm_multi_memory(true)
        .wasm_tail_call(true)
        .wasm_function_references(true)
        .wasm_gc(true)
        .wasm_exceptions(true)
        // Shared memories (the threads proposal) are off by default in
        // wasmtime; a module that declares one but runs on one thread (WASI
        // preview 1 spawns none) runs as any other.
        .shared_memory(true)
        .wasm_backtrace_details(WasmBacktraceDetails::Enable)
        .wasm_backtrace_max_frames(NonZeroUsize::new(MAX_BACKTRACE_FRAMES))
        .consume_fuel(true)
        .cranelift_opt_level(OptLevel::Speed)
        // Linear memories are initialised by copying their data segments,
        // not mapped copy-on-write from a sealed memfd: sealing fails with
        // EBUSY when another thread of the process forks while the memfd
        // is mapped writable, which a host that spawns processes (our test
        // harness, a build tool embedding the runner) does at any time
        // (docs/decisions.md#no-memory-cow).
        .memory_init_cow(false)
        .profiler(jit_profiler());
    // SAFETY: wasmtime lists this flag among those that do not change the
    // semantics of compiled code; it only pads between functions.
    unsafe { config.cranelift_flag_set("log2_min_function_alignment", &align_log2.to_string()) };
    config
}

/// Where every compiled function starts: a multiple of this many bytes, a
/// cache line. Cranelift's own choice on x86-64 is 32 bytes, so where a
/// function's hot loop falls against the 64-byte lines and fetch windows
/// depended on the sizes of all the functions before it: two modules with
/// the same code in their hot functions ran 5.7 points apart (lz4's path
/// and PPP modules; docs/decisions.md#function-alignment). Aligned to a line, a function's
/// placement depends on its own code alone.
pub const FUNCTION_ALIGN: u32 = 64;

/// log2 of the function alignment `var` asks for (bytes, a power of two up
/// to a page; below Cranelift's own 32 on x86-64 it has no effect), or of
/// [`FUNCTION_ALIGN`] when unset. An experiment switch, like
/// `PATHPROF_JIT_PROFILER`, for studying code placement.
fn function_align_log2(var: Option<&str>) -> Result<u32, RunError> {
    let Some(v) = var else {
        return Ok(FUNCTION_ALIGN.trailing_zeros());
    };
    match v.parse::<u32>() {
        Ok(b) if b.is_power_of_two() && b <= 4096 => Ok(b.trailing_zeros()),
        _ => Err(RunError::Engine(format!(
            "PATHPROF_FUNCTION_ALIGN={v:?}: not a power of two from 1 to 4096 (bytes)"
        ))),
    }
}

/// The JIT profiling agent named by `PATHPROF_JIT_PROFILER` (`perfmap` or
/// `jitdump`), so that `perf record` can attribute samples to wasm functions
/// (perfmap) or annotate their machine code after `perf inject --jit`
/// (jitdump). Unset or anything else: none. An environment variable rather
/// than a flag because it is a tool for studying the engine's code, not a
/// profiling option (docs/decisions.md#jit-profiler).
fn jit_profiler() -> ProfilingStrategy {
    match std::env::var("PATHPROF_JIT_PROFILER").as_deref() {
        Ok("perfmap") => ProfilingStrategy::PerfMap,
        Ok("jitdump") => ProfilingStrategy::JitDump,
        _ => ProfilingStrategy::None,
    }
}

/// Builds an engine with [`config`].
pub fn engine() -> Result<Engine, RunError> {
    Engine::new(&config()?).map_err(|e| RunError::Engine(error::describe(&e)))
}

/// Builds an engine with [`config`] but without fuel metering, for runs
/// where speed matters: metering costs about a third more time on tight
/// loops (measured on the `interp` fixture). The wasm features are the same,
/// so the same modules validate; [`RunOptions::fuel`] must be `None` with it
/// (else [`RunError::FuelNotEnabled`]).
pub fn engine_without_fuel() -> Result<Engine, RunError> {
    let mut config = config()?;
    config.consume_fuel(false);
    Engine::new(&config).map_err(|e| RunError::Engine(error::describe(&e)))
}

/// [`engine_without_fuel`] with wasmtime's compilation cache in `dir`:
/// compiling a module this engine's settings compiled before reads its
/// machine code back from there (keyed by a hash of the module, the engine
/// settings and the wasmtime version) instead of compiling it again. The
/// returned [`wasmtime::Cache`] counts its hits. docs/decisions.md#compile-cache.
pub fn engine_cached(dir: &Path) -> Result<(Engine, wasmtime::Cache), RunError> {
    let mut cache_config = wasmtime::CacheConfig::new();
    cache_config.with_directory(dir);
    let cache = wasmtime::Cache::new(cache_config).map_err(|e| {
        RunError::Engine(format!(
            "the compilation cache in {}: {}",
            dir.display(),
            error::describe(&e)
        ))
    })?;
    let mut config = config()?;
    config.consume_fuel(false).cache(Some(cache.clone()));
    let engine = Engine::new(&config).map_err(|e| RunError::Engine(error::describe(&e)))?;
    Ok((engine, cache))
}

/// How to run a module: its WASI environment and what to record.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The program's arguments, `argv[0]` included.
    pub args: Vec<String>,
    /// Environment variables, in order.
    pub env: Vec<(String, String)>,
    /// Preopened directories: (host directory, guest path), read-write.
    pub dirs: Vec<(PathBuf, String)>,
    /// Inherit the host's stdin, stdout and stderr. Overridden per stream by
    /// `stdin` and `capture_stdout`. When false (and not overridden), stdin
    /// is empty and output is discarded.
    pub inherit_stdio: bool,
    /// Bytes to serve as stdin (takes precedence over `inherit_stdio`).
    pub stdin: Option<Vec<u8>>,
    /// Capture stdout *and* stderr into [`RunOutcome::stdout`] and
    /// [`RunOutcome::stderr`] (takes precedence over `inherit_stdio`).
    pub capture_stdout: bool,
    /// Fuel limit: the run traps with "all fuel consumed" past it. `None`:
    /// no limit.
    pub fuel: Option<u64>,
    /// Where the trace events go, as the run makes them. `None`: nowhere,
    /// but the trace imports are still provided so that traced modules
    /// instantiate.
    pub trace: Option<TraceTo>,
    /// What stands in for imports the runner does not provide.
    pub unknown_imports: UnknownImports,
    /// Modules instantiated first, in order, whose exports provide the
    /// imports of their name (`wasmtime run --preload NAME=FILE`): a
    /// library the program links against at run time, such as one that
    /// throws the exceptions it catches.
    pub preload: Vec<Preload>,
}

/// A module to instantiate before the program, providing the imports of
/// module name `name` with its exports.
#[derive(Debug, Clone)]
pub struct Preload {
    /// The import module name its exports provide.
    pub name: String,
    /// Where it came from (a file name), for messages.
    pub origin: String,
    /// Its binary (or text) wasm.
    pub bytes: Vec<u8>,
}

/// What stands in for an import that the runner does not provide (it
/// provides WASI preview 1 and the trace imports): `wasmtime run`'s
/// `-Wunknown-imports-trap` and `-Wunknown-imports-default`, so that the
/// parts of a program that do not use such an import can still be run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum UnknownImports {
    /// None: the module is refused ([`RunError::UnknownImports`]), by
    /// [`check_imports`] before it is compiled.
    #[default]
    Refuse,
    /// Functions that trap when called. Other kinds of imports are still
    /// refused.
    Trap,
    /// Functions that return zeros (or nulls), and globals, tables and
    /// memories of default values.
    Default,
}

impl RunOptions {
    /// Options with these arguments (`argv[0]` first), capturing stdout and
    /// stderr, empty stdin, no environment, no directories, no limit, no trace.
    pub fn captured<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Self {
        RunOptions {
            args: args.into_iter().map(Into::into).collect(),
            capture_stdout: true,
            ..RunOptions::default()
        }
    }

    /// Options with these arguments (`argv[0]` first) and inherited stdio,
    /// as a command-line tool runs a program.
    pub fn inherited<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Self {
        RunOptions {
            args: args.into_iter().map(Into::into).collect(),
            inherit_stdio: true,
            ..RunOptions::default()
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The called function (`_start` or the invoked export) returned.
    Returned,
    /// The module called WASI `proc_exit` with this status.
    ProcExit(i32),
    /// The run was aborted: a wasm trap, fuel exhaustion, or a host function
    /// failing. The message describes it (without the backtrace).
    Trap(String),
}

impl Exit {
    /// The process exit code a command-line tool should return: 0 for
    /// [`Exit::Returned`], `n` for [`Exit::ProcExit`]`(n)` and
    /// [`TRAP_EXIT_CODE`] (134) for [`Exit::Trap`]. (WASI allows `proc_exit`
    /// statuses 0..126 only; the low 8 bits are taken, as a Unix shell would.)
    pub fn code(&self) -> u8 {
        match self {
            Exit::Returned => 0,
            Exit::ProcExit(n) => (*n & 0xff) as u8,
            Exit::Trap(_) => TRAP_EXIT_CODE,
        }
    }

    /// Whether the run ended abruptly (`proc_exit` or a trap).
    pub fn is_abrupt(&self) -> bool {
        !matches!(self, Exit::Returned)
    }

    /// Whether the run trapped at a wasm `unreachable` instruction. A path
    /// profiler counts that instruction as an exit (a trap point), so the
    /// innermost frame's activation did complete its path.
    pub fn is_unreachable_trap(&self) -> bool {
        matches!(self, Exit::Trap(m) if m.contains(&Trap::UnreachableCodeReached.to_string()))
    }

    /// Whether the run ended with an exception no handler caught. The
    /// runner's host functions throw none, so the innermost wasm frame is
    /// the one whose `throw` or `throw_ref` threw it.
    pub fn is_uncaught_exception(&self) -> bool {
        matches!(self, Exit::Trap(m) if m.contains(&wasmtime::ThrownException.to_string()))
    }

    /// Of the frames live at an abrupt end (innermost first), those whose
    /// activation stopped in the middle of a path: all of them, less the
    /// innermost when it trapped at `unreachable` or threw the exception
    /// that ended the run (a path profiler counts both instructions as
    /// exits). Empty for a return.
    pub fn unfinished_frames<'a>(&self, frames: &'a [(u32, u32)]) -> &'a [(u32, u32)] {
        match self {
            Exit::Returned => &[],
            _ if self.is_unreachable_trap() || self.is_uncaught_exception() => {
                frames.get(1..).unwrap_or(&[])
            }
            _ => frames,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// How the run ended.
    pub exit: Exit,
    /// Captured stdout (empty unless [`RunOptions::capture_stdout`]).
    pub stdout: Vec<u8>,
    /// Captured stderr (empty unless [`RunOptions::capture_stdout`]).
    pub stderr: Vec<u8>,
    /// Contents of the exported memory `__pathprof_counters` after the run,
    /// if the module exports it (and was instantiated).
    pub counters: Option<Vec<u8>>,
    /// When the run ended by `proc_exit` or a trap: the wasm frames then
    /// live, innermost first, as (function index in the module's function
    /// index space — imports included, module byte offset of the instruction
    /// executing in that frame: the trapping instruction, or the call
    /// instruction in a calling frame). The offset is `u32::MAX` if unknown.
    /// Empty when the run returned.
    pub abrupt_stack: Vec<(u32, u32)>,
}

/// What calling an export produced: its results, and the rest as
/// [`RunOutcome`] describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeOutcome {
    /// The function's results, when it returned ([`Exit::Returned`]);
    /// empty otherwise.
    pub results: Vec<Value>,
    /// How the call ended.
    pub exit: Exit,
    /// Captured stdout (empty unless [`RunOptions::capture_stdout`]).
    pub stdout: Vec<u8>,
    /// Captured stderr (empty unless [`RunOptions::capture_stdout`]).
    pub stderr: Vec<u8>,
    /// As [`RunOutcome::counters`].
    pub counters: Option<Vec<u8>>,
    /// As [`RunOutcome::abrupt_stack`].
    pub abrupt_stack: Vec<(u32, u32)>,
}

impl InvokeOutcome {
    fn new(results: Vec<Value>, run: RunOutcome) -> Self {
        InvokeOutcome {
            results,
            exit: run.exit,
            stdout: run.stdout,
            stderr: run.stderr,
            counters: run.counters,
            abrupt_stack: run.abrupt_stack,
        }
    }
}

/// Runs a WASI command: instantiates `module_bytes` (binary, or text if it
/// parses as WAT) with WASI preview 1 configured from `opts` and calls its
/// `_start`. Same as [`compile`] then [`run_compiled`].
pub fn run_command(
    engine: &Engine,
    module_bytes: &[u8],
    opts: &RunOptions,
) -> Result<RunOutcome, RunError> {
    check_imports(engine, module_bytes, opts.unknown_imports, &opts.preload)?;
    run_compiled(&compile(engine, module_bytes)?, opts)
}

/// Refuses a module that imports what the runner does not provide (unless
/// `unknown` says what stands in for it), in the time it takes to read the
/// import section: compiling a large module takes minutes, and wasmtime
/// finds a missing import only when it instantiates the compiled module.
/// Modules that are not binary wasm (text) are left to [`compile`], and so
/// are malformed ones.
pub fn check_imports(
    engine: &Engine,
    module_bytes: &[u8],
    unknown: UnknownImports,
    preload: &[Preload],
) -> Result<(), RunError> {
    if unknown == UnknownImports::Default || !module_bytes.starts_with(b"\0asm") {
        return Ok(());
    }
    let linker = linker(engine)?;
    let mut store = Store::new(engine, State::new(WasiCtxBuilder::new().build_p1(), None));
    let mut missing = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module_bytes) {
        let imports = match payload {
            Ok(wasmparser::Payload::ImportSection(imports)) => imports,
            Ok(wasmparser::Payload::CodeSectionStart { .. }) | Err(_) => break,
            Ok(_) => continue,
        };
        for import in imports.into_imports() {
            let Ok(import) = import else { return Ok(()) };
            let kind = import_kind(&import.ty);
            // A preloaded module's exports are checked when it is linked.
            let provided = preload.iter().any(|p| p.name == import.module)
                || linker.get(&mut store, import.module, import.name).is_ok();
            let stood_in = unknown == UnknownImports::Trap && kind == "function";
            if !(provided || stood_in) {
                missing.push(format!("{}::{} ({kind})", import.module, import.name));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RunError::UnknownImports { imports: missing })
    }
}

fn import_kind(ty: &wasmparser::TypeRef) -> &'static str {
    match ty {
        wasmparser::TypeRef::Func(_) | wasmparser::TypeRef::FuncExact(_) => "function",
        wasmparser::TypeRef::Table(_) => "table",
        wasmparser::TypeRef::Memory(_) => "memory",
        wasmparser::TypeRef::Global(_) => "global",
        wasmparser::TypeRef::Tag(_) => "tag",
    }
}

/// Compiles a core module for `engine`, to run it several times with
/// [`run_compiled`] or [`invoke_compiled`]. Rejects components with
/// [`RunError::Component`].
pub fn compile(engine: &Engine, module_bytes: &[u8]) -> Result<Module, RunError> {
    if is_component_binary(module_bytes) || looks_like_component_text(module_bytes) {
        return Err(RunError::Component);
    }
    Module::new(engine, module_bytes).or_else(|e| {
        let message = error::describe(&e);
        // Cranelift translates the standard exception handling (try_table)
        // only; wasmtime's legacy-exceptions switch is for its own tests.
        // The module is translated to it (legacy/) and compiled again.
        if message.contains("legacy_exceptions feature required")
            || message.contains("legacy exception")
        {
            compile_translated(engine, module_bytes)
        } else {
            Err(RunError::Compile(message))
        }
    })
}

/// Modules compiled from a translation of legacy exception handling, with
/// the way back to the original's offsets for their backtraces.
static TRANSLATED: std::sync::Mutex<Vec<(Module, std::sync::Arc<legacy::OffsetMap>)>> =
    std::sync::Mutex::new(Vec::new());

fn compile_translated(engine: &Engine, module_bytes: &[u8]) -> Result<Module, RunError> {
    let t = legacy::translate(module_bytes).map_err(|e| RunError::LegacyExceptions(e.0))?;
    let module = Module::new(engine, &t.bytes).map_err(|e| {
        RunError::LegacyExceptions(format!(
            "the translation does not compile: {}",
            error::describe(&e)
        ))
    })?;
    let mut maps = TRANSLATED.lock().unwrap_or_else(|p| p.into_inner());
    maps.push((module.clone(), std::sync::Arc::new(t.offsets)));
    Ok(module)
}

/// The original module's offsets of the frames of a backtrace of `module`.
fn original_offsets(module: &Module, stack: &mut [(u32, u32)]) {
    let maps = TRANSLATED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, map)) = maps.iter().find(|(m, _)| Module::same(m, module)) {
        for (func, offset) in stack {
            if *offset != u32::MAX {
                *offset = map.original(*func, *offset);
            }
        }
    }
}

/// [`run_command`] for a module already compiled (by [`compile`]).
pub fn run_compiled(module: &Module, opts: &RunOptions) -> Result<RunOutcome, RunError> {
    run_ended(module, opts).map(Ended::into_outcome)
}

/// [`run_compiled`], the instance kept: see [`Ended`].
pub fn run_ended(module: &Module, opts: &RunOptions) -> Result<Ended, RunError> {
    let mut prepared = match prepare(module, opts)? {
        Setup::Ready(p) => p,
        Setup::Ended(outcome) => return Ok(Ended::instantiating(outcome)),
    };
    let start = prepared
        .instance
        .get_typed_func::<(), ()>(&mut prepared.store, "_start")
        .map_err(|e| RunError::NoStart(error::describe(&e)))?;
    let (exit, abrupt_stack) = match start.call(&mut prepared.store, ()) {
        Ok(()) => (Exit::Returned, Vec::new()),
        Err(e) => classify(module, &e),
    };
    prepared.end(exit, abrupt_stack, Vec::new())
}

/// Calls the export `export` of a library module with `args` parsed
/// according to its parameter types, and returns its results.
///
/// Parameters must be i32, i64, f32 or f64. Integers are decimal or `0x`
/// hexadecimal, optionally signed, in the signed or the unsigned range of the
/// width (`4294967295` is the i32 `-1`); floats use Rust's syntax (`1.5`,
/// `-2e3`, `inf`, `NaN`). WASI preview 1 is available to the module if it
/// imports it; a module without imports works too. If the module exports a
/// WASI reactor's `_initialize`, that is called first (and if it ends the
/// run, `export` is not called).
pub fn invoke(
    engine: &Engine,
    module_bytes: &[u8],
    export: &str,
    args: &[String],
    opts: &RunOptions,
) -> Result<InvokeOutcome, RunError> {
    check_imports(engine, module_bytes, opts.unknown_imports, &opts.preload)?;
    invoke_compiled(&compile(engine, module_bytes)?, export, args, opts)
}

/// [`invoke`] for a module already compiled (by [`compile`]).
pub fn invoke_compiled(
    module: &Module,
    export: &str,
    args: &[String],
    opts: &RunOptions,
) -> Result<InvokeOutcome, RunError> {
    invoke_ended(module, export, args, opts).map(Ended::into_invoke_outcome)
}

/// [`invoke_compiled`], the instance kept: see [`Ended`].
pub fn invoke_ended(
    module: &Module,
    export: &str,
    args: &[String],
    opts: &RunOptions,
) -> Result<Ended, RunError> {
    // Check the export and the arguments before running anything.
    let func_ty = match module.get_export(export) {
        None => return Err(RunError::MissingExport(export.to_string())),
        Some(wasmtime::ExternType::Func(ty)) => ty,
        Some(other) => {
            return Err(RunError::NotAFunction {
                name: export.to_string(),
                kind: extern_kind(&other),
            })
        }
    };
    let params: Vec<wasmtime::ValType> = func_ty.params().collect();
    let signature = params
        .iter()
        .map(value::type_name)
        .collect::<Vec<_>>()
        .join(", ");
    for (i, ty) in params.iter().enumerate() {
        if !value::is_parsable(ty) {
            return Err(RunError::UnsupportedParam {
                name: export.to_string(),
                index: i + 1,
                ty: value::type_name(ty),
            });
        }
    }
    if params.len() != args.len() {
        return Err(RunError::Arity {
            name: export.to_string(),
            expected: params.len(),
            given: args.len(),
            signature: format!("[{signature}]"),
        });
    }
    let mut vals = Vec::with_capacity(args.len());
    for (i, (ty, arg)) in params.iter().zip(args).enumerate() {
        let val = value::parse_arg(ty, arg).ok_or_else(|| RunError::BadArgument {
            name: export.to_string(),
            index: i + 1,
            value: arg.clone(),
            ty: value::type_name(ty),
        })?;
        vals.push(val);
    }

    let mut prepared = match prepare(module, opts)? {
        Setup::Ready(p) => p,
        Setup::Ended(run) => return Ok(Ended::instantiating(run)),
    };

    // A WASI reactor initialises itself in `_initialize`.
    if export != "_initialize" {
        if let Ok(init) = prepared
            .instance
            .get_typed_func::<(), ()>(&mut prepared.store, "_initialize")
        {
            if let Err(e) = init.call(&mut prepared.store, ()) {
                let (exit, stack) = classify(module, &e);
                return prepared.end(exit, stack, Vec::new());
            }
        }
    }

    let func: Func = prepared
        .instance
        .get_func(&mut prepared.store, export)
        .ok_or_else(|| RunError::MissingExport(export.to_string()))?;
    let mut results = vec![Val::I32(0); func.ty(&prepared.store).results().len()];
    let (exit, stack, results) = match func.call(&mut prepared.store, &vals, &mut results) {
        Ok(()) => (
            Exit::Returned,
            Vec::new(),
            results.iter().map(Value::from_val).collect(),
        ),
        Err(e) => {
            let (exit, stack) = classify(module, &e);
            (exit, stack, Vec::new())
        }
    };
    prepared.end(exit, stack, results)
}

/// Store data.
struct State {
    wasi: WasiP1Ctx,
    tracer: trace::Tracer,
}

impl State {
    fn new(wasi: WasiP1Ctx, trace: Option<TraceTo>) -> Self {
        State {
            wasi,
            tracer: trace::Tracer::new(trace),
        }
    }
}

struct Prepared {
    store: Store<State>,
    instance: Instance,
    stdout: Option<MemoryOutputPipe>,
    stderr: Option<MemoryOutputPipe>,
}

enum Setup {
    Ready(Prepared),
    /// The module's start function trapped or exited during instantiation.
    Ended(RunOutcome),
}

/// Whether the bytes start with a component's binary header: the wasm magic
/// number, any version, and layer 1 (core modules have layer 0).
fn is_component_binary(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[6..8] == [1, 0]
}

/// Whether the bytes are the text format of a component: `(component` after
/// whitespace and comments.
fn looks_like_component_text(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(";;") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
        } else if rest.starts_with("(;") {
            // Block comments nest.
            let mut depth = 0usize;
            let mut i = 0;
            let b = rest.as_bytes();
            while i < b.len() {
                if b[i..].starts_with(b"(;") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b";)") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            rest = rest.get(i..).unwrap_or("");
        } else {
            break;
        }
    }
    match rest.strip_prefix('(') {
        Some(r) => {
            let r = r.trim_start();
            r.starts_with("component")
                && !r["component".len()..]
                    .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-')
        }
        None => false,
    }
}

/// What the runner provides to every module: WASI preview 1 and the trace
/// imports.
fn linker(engine: &Engine) -> Result<Linker<State>, RunError> {
    let mut linker: Linker<State> = Linker::new(engine);
    add_to_linker_sync(&mut linker, |s: &mut State| &mut s.wasi)
        .map_err(|e| RunError::Host(format!("cannot link WASI: {}", error::describe(&e))))?;
    linker
        .func_wrap(
            TRACE_MODULE,
            TRACE_FUNC,
            |mut caller: Caller<'_, State>, func: i32, edge: i32| {
                caller.data_mut().tracer.per_edge(func as u32, edge as u32);
            },
        )
        .and_then(|l| l.func_wrap(TRACE_MODULE, TRACE_FLUSH, trace::flush))
        .map_err(|e| {
            RunError::Host(format!(
                "cannot link the trace imports: {}",
                error::describe(&e)
            ))
        })?;
    Ok(linker)
}

fn prepare(module: &Module, opts: &RunOptions) -> Result<Setup, RunError> {
    let engine = module.engine();
    let mut builder = WasiCtxBuilder::new();
    builder.args(&opts.args);
    builder.envs(&opts.env);
    for (host, guest) in &opts.dirs {
        builder
            .preopened_dir(host, guest, FsPerms::ReadWrite)
            .map_err(|e| RunError::Preopen {
                host: host.clone(),
                guest: guest.clone(),
                message: error::describe(&e),
            })?;
    }
    if let Some(bytes) = &opts.stdin {
        builder.stdin(MemoryInputPipe::new(bytes.clone()));
    } else if opts.inherit_stdio {
        builder.inherit_stdin();
    }
    let (stdout, stderr) = if opts.capture_stdout {
        let out = MemoryOutputPipe::new(usize::MAX);
        let err = MemoryOutputPipe::new(usize::MAX);
        builder.stdout(out.clone());
        builder.stderr(err.clone());
        (Some(out), Some(err))
    } else {
        if opts.inherit_stdio {
            builder.inherit_stdout();
            builder.inherit_stderr();
        }
        (None, None)
    };

    let mut store = Store::new(engine, State::new(builder.build_p1(), opts.trace.clone()));
    match opts.fuel {
        Some(fuel) => store.set_fuel(fuel).map_err(|_| RunError::FuelNotEnabled)?,
        // An engine without fuel metering needs none.
        None => {
            let _ = store.set_fuel(u64::MAX);
        }
    }

    let mut linker = linker(engine)?;
    for p in &opts.preload {
        preload(&mut linker, &mut store, p)?;
    }
    let stand_in = match opts.unknown_imports {
        UnknownImports::Refuse => Ok(()),
        UnknownImports::Trap => linker.define_unknown_imports_as_traps(module),
        UnknownImports::Default => {
            linker.define_unknown_imports_as_default_values(&mut store, module)
        }
    };
    stand_in.map_err(|e| RunError::Instantiate(error::describe(&e)))?;

    match linker.instantiate(&mut store, module) {
        Ok(instance) => Ok(Setup::Ready(Prepared {
            store,
            instance,
            stdout,
            stderr,
        })),
        Err(e) if e.downcast_ref::<Trap>().is_some() || e.downcast_ref::<I32Exit>().is_some() => {
            // The start function ended the run; there is no instance to read
            // counters from.
            let (exit, abrupt_stack) = classify(module, &e);
            store.data_mut().tracer.finish();
            Ok(Setup::Ended(RunOutcome {
                exit,
                stdout: stdout.map(|p| p.contents().to_vec()).unwrap_or_default(),
                stderr: stderr.map(|p| p.contents().to_vec()).unwrap_or_default(),
                counters: None,
                abrupt_stack,
            }))
        }
        Err(e) => Err(RunError::Instantiate(error::describe(&e))),
    }
}

/// Compiles `p` and links its instance's exports under its name. (A
/// command module, one with `_start`, is instantiated afresh for each call
/// of its exports, as [`Linker::module`] does.)
fn preload(
    linker: &mut Linker<State>,
    store: &mut Store<State>,
    p: &Preload,
) -> Result<(), RunError> {
    let fail = |e: wasmtime::Error| RunError::Preload {
        name: p.name.clone(),
        origin: p.origin.clone(),
        message: error::describe(&e),
    };
    let module = Module::new(store.engine(), &p.bytes).map_err(fail)?;
    linker.module(&mut *store, &p.name, &module).map_err(fail)?;
    Ok(())
}

impl Prepared {
    /// The run has ended: the trace events left are handed over, and the
    /// instance is kept for its counters.
    fn end(
        mut self,
        exit: Exit,
        abrupt_stack: Vec<(u32, u32)>,
        results: Vec<Value>,
    ) -> Result<Ended, RunError> {
        if let Some(buffer) = trace::buffer_of(&self.instance, &mut self.store) {
            trace::drain(&mut self.store, buffer)
                .map_err(|e| RunError::Host(error::describe(&e)))?;
        }
        self.store.data_mut().tracer.finish();
        Ok(Ended {
            exit,
            abrupt_stack,
            results,
            end: End::Live(self),
        })
    }
}

/// A run that has ended (its trace events handed over), its instance kept
/// so that the counter memory is read where it is ([`Ended::counters`]):
/// copying it took seconds for a large module's counters (gigabytes in
/// path mode), which a caller timing the run counted as the program's.
pub struct Ended {
    /// How the run ended.
    pub exit: Exit,
    /// As [`RunOutcome::abrupt_stack`].
    pub abrupt_stack: Vec<(u32, u32)>,
    /// As [`InvokeOutcome::results`] (empty for a command).
    pub results: Vec<Value>,
    end: End,
}

enum End {
    Live(Prepared),
    /// Ended while instantiating: there is no instance.
    Instantiating(RunOutcome),
}

impl Ended {
    fn instantiating(run: RunOutcome) -> Self {
        Ended {
            exit: run.exit.clone(),
            abrupt_stack: run.abrupt_stack.clone(),
            results: Vec::new(),
            end: End::Instantiating(run),
        }
    }

    /// The exported memory `__pathprof_counters` where it is, if the
    /// module exports it and was instantiated.
    pub fn counters(&mut self) -> Option<&[u8]> {
        let End::Live(p) = &mut self.end else {
            return None;
        };
        match p.instance.get_export(&mut p.store, COUNTERS_EXPORT) {
            Some(Extern::Memory(m)) => Some(m.data(&p.store)),
            _ => None,
        }
    }

    /// Everything the run left, the counters and the output copied.
    pub fn into_outcome(mut self) -> RunOutcome {
        let counters = self.counters().map(<[u8]>::to_vec);
        let p = match self.end {
            End::Live(p) => p,
            End::Instantiating(run) => return run,
        };
        let contents = |pipe: Option<MemoryOutputPipe>| {
            pipe.map(|p| p.contents().to_vec()).unwrap_or_default()
        };
        RunOutcome {
            exit: self.exit,
            stdout: contents(p.stdout),
            stderr: contents(p.stderr),
            counters,
            abrupt_stack: self.abrupt_stack,
        }
    }

    fn into_invoke_outcome(mut self) -> InvokeOutcome {
        let results = std::mem::take(&mut self.results);
        InvokeOutcome::new(results, self.into_outcome())
    }
}

/// Turns the error that ended a call of `module` into an [`Exit`] and the
/// live frames, at the original module's offsets.
fn classify(module: &Module, err: &wasmtime::Error) -> (Exit, Vec<(u32, u32)>) {
    let exit = match err.downcast_ref::<I32Exit>() {
        Some(I32Exit(code)) => Exit::ProcExit(*code),
        None => Exit::Trap(error::describe(err)),
    };
    let stack = err
        .downcast_ref::<WasmBacktrace>()
        .map(|bt| {
            bt.frames()
                .iter()
                .map(|f| {
                    let offset = f
                        .module_offset()
                        .and_then(|o| u32::try_from(o).ok())
                        .unwrap_or(u32::MAX);
                    (f.func_index(), offset)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut stack: Vec<(u32, u32)> = stack;
    original_offsets(module, &mut stack);
    (exit, stack)
}

fn extern_kind(ty: &wasmtime::ExternType) -> &'static str {
    match ty {
        wasmtime::ExternType::Func(_) => "function",
        wasmtime::ExternType::Global(_) => "global",
        wasmtime::ExternType::Table(_) => "table",
        wasmtime::ExternType::Memory(_) => "memory",
        wasmtime::ExternType::Tag(_) => "tag",
    }
}

#[cfg(test)]
mod tests {
    use super::{config_aligned, function_align_log2, looks_like_component_text, FUNCTION_ALIGN};

    #[test]
    fn function_alignment_from_the_environment() {
        assert_eq!(function_align_log2(None).unwrap(), 6);
        assert_eq!(function_align_log2(Some("32")).unwrap(), 5);
        assert_eq!(function_align_log2(Some("4096")).unwrap(), 12);
        for bad in ["48", "8192", "0", "-64", "x", ""] {
            let e = function_align_log2(Some(bad)).unwrap_err().to_string();
            assert!(
                e.contains(&format!("PATHPROF_FUNCTION_ALIGN={bad:?}")),
                "{e}"
            );
        }
    }

    /// Functions of 1 to 7 multiplications (a few bytes of code each): at
    /// Cranelift's own 32 bytes some start off a 64-byte line; aligned to
    /// [`FUNCTION_ALIGN`], none does.
    #[test]
    fn every_function_starts_on_a_cache_line() {
        let funcs: String = (1..=7)
            .map(|n| {
                let muls = "local.get 0 i32.mul ".repeat(n);
                format!("(func (param i32) (result i32) local.get 0 {muls})")
            })
            .collect();
        let wasm = wat::parse_str(format!("(module {funcs})")).unwrap();
        let offsets = |log2| {
            let engine = wasmtime::Engine::new(&config_aligned(log2)).unwrap();
            let module = wasmtime::Module::new(&engine, &wasm).unwrap();
            let offsets: Vec<usize> = module.functions().map(|f| f.offset).collect();
            assert_eq!(offsets.len(), 7);
            offsets
        };
        let line = FUNCTION_ALIGN as usize;
        assert!(offsets(5).iter().any(|o| o % line != 0), "{:?}", offsets(5));
        let aligned = offsets(FUNCTION_ALIGN.trailing_zeros());
        assert!(aligned.iter().all(|o| o % line == 0), "{aligned:?}");
    }

    #[test]
    fn component_text_detection() {
        assert!(looks_like_component_text(b"(component)"));
        assert!(looks_like_component_text(
            b"  ;; c\n (; a (; b ;) ;) ( component $c)"
        ));
        assert!(!looks_like_component_text(b"(module)"));
        assert!(!looks_like_component_text(b"(componentx)"));
        assert!(!looks_like_component_text(b"\0asm"));
        assert!(!looks_like_component_text(b"(; unterminated"));
    }
}
