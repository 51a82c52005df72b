//! `pathprof run`: instrument in memory, run on the embedded engine, write
//! the profile, and exit with the program's exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::error::{Context, Result};
use pathprof_runner::{Exit, RunOptions};

use pathprof_core::driver::{self, Technique};

/// Everything `pathprof run` was asked to do.
pub struct Request {
    pub module: Vec<u8>,
    /// `None`: run uninstrumented.
    pub technique: Option<Technique>,
    pub options: driver::Options,
    pub output: PathBuf,
    pub dirs: Vec<(PathBuf, String)>,
    pub env: Vec<(String, String)>,
    /// Call this export instead of `_start`.
    pub invoke: Option<String>,
    /// What stands in for imports the engine does not provide.
    pub unknown_imports: pathprof_runner::UnknownImports,
    /// Modules linked under their names before the program is
    /// instantiated (`--preload`).
    pub preload: Vec<pathprof_runner::Preload>,
    /// The program's arguments given by `--arg` (argv[1..]).
    pub program_args: Vec<String>,
    /// The arguments after `--`: the program's (after `program_args`), or
    /// the export's parameters with `invoke`.
    pub args: Vec<String>,
    /// Where to write the [`Timings`] of this run, as JSON.
    pub timings: Option<PathBuf>,
    /// The directory of wasmtime's compilation cache; `None`: compile.
    pub compile_cache: Option<PathBuf>,
    /// Write a sparse profile: the functions that ran, the others by index
    /// ([`driver::collect_sparse`]).
    pub sparse: bool,
}

/// Where `run` keeps compiled modules: `PATHPROF_COMPILE_CACHE` (a
/// directory, or `off`), else `$XDG_CACHE_HOME/pathprof`, else
/// `$HOME/.cache/pathprof`; `None` when it is off or there is no home.
/// Relative paths are taken from the current directory (the cache wants an
/// absolute one).
pub fn compile_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = match var("PATHPROF_COMPILE_CACHE") {
        Some(d) if d == Path::new("off") => return None,
        Some(d) => d,
        None => var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))?
            .join("pathprof"),
    };
    std::path::absolute(dir).ok()
}

impl Request {
    /// The program's argv (its file name, `--arg`s, then the arguments
    /// after `--` unless they are an export's), environment and folders.
    pub fn run_options(&self, program: &Path) -> RunOptions {
        let name = program.display().to_string();
        let mut argv = vec![program
            .file_name()
            .map_or(name, |f| f.to_string_lossy().into_owned())];
        argv.extend(self.program_args.iter().cloned());
        if self.invoke.is_none() {
            argv.extend(self.args.iter().cloned());
        }
        RunOptions {
            args: argv,
            env: self.env.clone(),
            dirs: self.dirs.clone(),
            inherit_stdio: true,
            unknown_imports: self.unknown_imports,
            preload: self.preload.clone(),
            ..RunOptions::default()
        }
    }
}

/// Where the time of a `pathprof run` went, in seconds, and the sizes that
/// go with it: what the benchmark harness reads (`--timings FILE`). Execution
/// is timed apart from compilation so that overheads are not diluted by the
/// engine's compile time, which instrumentation also changes.
#[derive(Debug, Default, serde::Serialize)]
pub struct Timings {
    /// Instrumenting the module (0 for `--mode none`).
    pub instrument_s: f64,
    /// Compiling the (instrumented) module with wasmtime.
    pub compile_s: f64,
    /// Whether the compilation cache had the machine code (then `compile_s`
    /// is the time it took to read it back).
    pub compile_cached: bool,
    /// Instantiating and running it, to its return, `proc_exit` or trap
    /// (not reading its counters).
    pub execute_s: f64,
    /// The CPU time of the thread that ran it over the same span: wasmtime
    /// runs the guest (and its WASI calls) on the calling thread, so this is
    /// the program's own time, barely touched by other load on the machine,
    /// where `execute_s` grows with every process competing for the cores.
    pub execute_cpu_s: f64,
    /// Reading the counters where they are, turning them into a profile and
    /// writing it.
    pub collect_s: f64,
    /// Size of the input module and of its code section.
    pub module_bytes: usize,
    pub code_bytes: usize,
    /// Size of the module run, and of its code section.
    pub run_module_bytes: usize,
    pub run_code_bytes: usize,
    /// Size of the counter memory after the run (0 without instrumentation).
    pub counter_bytes: usize,
}

/// A spinner on stderr while wasmtime compiles a module of more than 8 MB
/// (seconds to minutes), when stderr is a terminal.
fn compile_spinner(module_bytes: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if module_bytes <= 8 << 20 || !std::io::stderr().is_terminal() {
        return None;
    }
    let spinner = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        spinner.set_style(style);
    }
    spinner.set_message(format!("compiling {} MB with wasmtime", module_bytes >> 20));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(spinner)
}

/// Functions that never ran from which `run` suggests `--sparse`, which is
/// not the default (docs/decisions.md#sparse-opt-in).
pub const SPARSE_HINT: usize = 10_000;

pub fn run(program: &Path, mut req: Request) -> Result<ExitCode> {
    // Collected at once: the metadata planning made serves, undecoded.
    // A sparse profile instead builds only the templates of the functions
    // that ran, from the section: keeping every function's would cost the
    // memory sparseness saves.
    let lazily = req.sparse
        && req
            .technique
            .is_some_and(|t| driver::builds_lazily(t.mode()));
    req.options.keep_meta = !lazily;
    let name = program.display().to_string();
    // Created before any work, so that a path that cannot be written is
    // reported before the program runs, and removed if it fails.
    let create = |p: &Path| pathprof_profile::AtomicFile::create(p);
    let profile_file = req.technique.map(|_| create(&req.output)).transpose()?;
    let timings_file = req.timings.as_deref().map(create).transpose()?;
    let (engine, cache) = engine(&req)?;
    // Before instrumenting and compiling, which take minutes on a large
    // module. Instrumenting adds no import but the trace ones, provided.
    pathprof_runner::check_imports(&engine, &req.module, req.unknown_imports, &req.preload)
        .map_err(unknown_imports_hint)
        .with_context(|| name.clone())?;
    let mut timings = Timings::default();
    let mut instrumented = instrument(&req, &name, &mut timings)?;
    let kept_meta = instrumented.as_mut().and_then(|i| i.take_kept_meta());
    if instrumented.is_some() {
        // Not needed again: freed before compiling, the peak of a large
        // module's run (95 MB of the 100,000-function module's).
        req.module = Vec::new();
    }
    let bytes = instrumented.as_ref().map_or(&req.module, |i| &i.bytes);
    let clock = Instant::now();
    let spinner = compile_spinner(bytes.len());
    let compiled = pathprof_runner::compile(&engine, bytes).with_context(|| name.clone())?;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    timings.compile_s = clock.elapsed().as_secs_f64();
    timings.compile_cached = cache.is_some_and(|c| c.cache_hits() > 0);
    let mut ended = execute(&compiled, &req, program, &mut timings)?;
    let clock = Instant::now();
    let (exit, stack) = (ended.exit.clone(), std::mem::take(&mut ended.abrupt_stack));
    if let Exit::Trap(msg) = &exit {
        eprintln!("pathprof: warning: {name} trapped: {msg}");
    }
    if let (Some(inst), Some(file)) = (&instrumented, profile_file) {
        let counters = ended
            .counters()
            .context("the instrumented module exported no counter memory")?;
        let frames = exit.is_abrupt().then(|| exit.unfinished_frames(&stack));
        let meta = (!lazily).then_some(kept_meta);
        write_profile(inst, meta, counters, frames, (&req, &name), file)?;
        timings.counter_bytes = counters.len();
    }
    timings.collect_s = clock.elapsed().as_secs_f64();
    if let Some(file) = timings_file {
        timings.run_module_bytes = bytes.len();
        timings.run_code_bytes = pathprof_wasm::code_section_size(bytes);
        file.finish((serde_json::to_string_pretty(&timings)? + "\n").as_bytes())?;
    }
    Ok(ExitCode::from(exit.code()))
}

/// The engine `run` compiles with, with wasmtime's compilation cache
/// unless it is off. Compiling the instrumented module of a large program
/// takes a minute (99 MB: 68 s); running it again reads the machine code
/// back. A cache that cannot be made (a read-only home) only costs the time.
fn engine(req: &Request) -> Result<(wasmtime::Engine, Option<wasmtime::Cache>)> {
    let cached = req.compile_cache.as_deref().and_then(|dir| {
        pathprof_runner::engine_cached(dir)
            .map_err(|e| {
                eprintln!(
                    "pathprof: warning: {e}; compiling without it \
                     (PATHPROF_COMPILE_CACHE=off or another directory)"
                )
            })
            .ok()
    });
    Ok(match cached {
        Some((engine, cache)) => (engine, Some(cache)),
        None => (pathprof_runner::engine_without_fuel()?, None),
    })
}

/// The module instrumented as asked (`None`: run uninstrumented), timed.
fn instrument(
    req: &Request,
    name: &str,
    timings: &mut Timings,
) -> Result<Option<driver::Instrumented>> {
    let clock = Instant::now();
    let instrumented = match req.technique {
        Some(t) => {
            let out = driver::instrument(&req.module, t, &req.options)
                .with_context(|| name.to_string())?;
            for w in &out.warnings {
                eprintln!("pathprof: warning: {w}");
            }
            Some(out)
        }
        None => None,
    };
    timings.instrument_s = clock.elapsed().as_secs_f64();
    timings.module_bytes = req.module.len();
    timings.code_bytes = pathprof_wasm::code_section_size(&req.module);
    Ok(instrumented)
}

/// Runs the program to its end and times it: the clock stops when the
/// program has ended, before its counters are read (where they are, not
/// copied: gigabytes for a large module; crates/runner/tests/counters_in_place.rs).
fn execute(
    compiled: &wasmtime::Module,
    req: &Request,
    program: &Path,
    timings: &mut Timings,
) -> Result<pathprof_runner::Ended> {
    let opts = req.run_options(program);
    let clock = Instant::now();
    let cpu = thread_cpu_s();
    let ended = match &req.invoke {
        Some(export) => pathprof_runner::invoke_ended(compiled, export, &req.args, &opts),
        None => pathprof_runner::run_ended(compiled, &opts),
    }
    .with_context(|| program.display().to_string())?;
    timings.execute_s = clock.elapsed().as_secs_f64();
    timings.execute_cpu_s = thread_cpu_s() - cpu;
    if let (Some(export), false) = (&req.invoke, ended.results.is_empty()) {
        // On stderr: stdout is the program's.
        let values: Vec<String> = ended.results.iter().map(|v| v.to_string()).collect();
        eprintln!("pathprof: {export} returned {}", values.join(" "));
    }
    Ok(ended)
}

/// Turns the counters of the run into its profile and writes it to `file`,
/// with notes on stderr: where it went, a hint towards `--sparse`, and
/// paths in flight when the run ended abruptly (`frames`). The profile is
/// collected from the metadata planning made (`meta`: kept, or decoded
/// again when it was not), or else sparse, building the templates of only
/// the functions that ran from the module's section.
fn write_profile(
    inst: &driver::Instrumented,
    meta: Option<Option<driver::Meta>>,
    counters: &[u8],
    frames: Option<&[(u32, u32)]>,
    (req, name): (&Request, &str),
    file: pathprof_profile::AtomicFile,
) -> Result<()> {
    let abrupt = frames.is_some();
    let check = |meta: &driver::Meta| {
        meta.check_counters(counters, "the counter memory of this run", name)
            .map_err(Into::into)
    };
    let profile = match meta {
        None => driver::collect_sparse(&inst.bytes, &[], counters, frames, check)?,
        Some(kept) => {
            let meta = match kept {
                Some(meta) => meta,
                None => inst.meta()?,
            };
            check(&meta)?;
            let profile = driver::collect_owned(meta, counters, frames)?;
            match req.sparse {
                true => driver::sparse(profile)?,
                false => profile,
            }
        }
    };
    let never_ran = if req.sparse || !profile.may_be_sparse() {
        0
    } else {
        profile.never_ran()
    };
    profile.write_to(file)?;
    // Said, as the default (pathprof.profile) lands in the current folder.
    eprintln!("pathprof: profile written to {}", req.output.display());
    if never_ran >= SPARSE_HINT {
        eprintln!(
            "pathprof: note: {never_ran} of its {} functions never ran; --sparse leaves them out (a profile and a collection the size of what ran)",
            profile.functions.len()
        );
    }
    if abrupt {
        eprintln!("pathprof: note: the run ended abruptly; paths in flight then are not counted");
    }
    Ok(())
}

/// An unknown import's error, with the options that run the module anyway.
fn unknown_imports_hint(e: pathprof_runner::RunError) -> crate::error::Error {
    match e {
        pathprof_runner::RunError::UnknownImports { .. } => crate::error::invalid!(
            "{e}; to profile the parts of the program that do not use them, give \
             --unknown-imports trap (calling one traps) or default (it returns zeros)"
        ),
        e => e.into(),
    }
}

/// CPU time consumed by the calling thread, in seconds (0 where the clock
/// is not available).
pub(crate) fn thread_cpu_s() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    0.0
}
