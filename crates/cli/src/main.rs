//! `pathprof`: path profiler for WebAssembly. See `pathprof --help`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use pathprof::driver::{self, Technique};
use pathprof::{report, stats};
use pathprof_profile::Profile;
use pathprof_techniques::ball_larus;

#[derive(Parser)]
#[command(
    name = "pathprof",
    version,
    about = "Ball-Larus path profiler for WebAssembly programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Instrument in memory, run on the embedded engine (wasmtime, WASI preview 1), write the profile.
    Run(RunArgs),
    /// Write an instrumented module that runs on any engine with multi-memory.
    Instrument(InstrumentArgs),
    /// Turn a saved `__pathprof_counters` memory into a profile.
    Collect(CollectArgs),
    /// Hot paths, most frequent first, regenerated to blocks.
    Report(ReportArgs),
    /// Per function: blocks, edges, backedges, potential paths, storage, truncations.
    Stats(StatsArgs),
    /// Add up profiles of the same module.
    Merge(MergeArgs),
    /// Run spec-testsuite `.wast` scripts on the original and the instrumented modules; report regressions.
    Conformance(ConformanceArgs),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum RunMode {
    /// Ball-Larus path profiling.
    Path,
    /// Edge profiling (counters on spanning-tree chords).
    Edge,
    /// No instrumentation: the baseline for overhead measurements.
    None,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum InstrumentMode {
    Path,
    Edge,
}

#[derive(Args)]
struct Tuning {
    /// Prior edge or path profile of the same module: weights the spanning trees.
    #[arg(long, value_name = "PROFILE")]
    weights: Option<PathBuf>,
    /// Truncate paths at a block whose path count passes N (Ball-Larus 5.3).
    #[arg(long, value_name = "N", default_value_t = ball_larus::Options::default().truncate_above)]
    truncate_above: u64,
    /// Count paths in an array when a function has at most N paths, else in a hash table.
    #[arg(long, value_name = "N", default_value_t = ball_larus::Options::default().array_max)]
    array_max: u64,
    /// Entries of each function's hash table (a power of two).
    #[arg(long, value_name = "N", default_value_t = ball_larus::Options::default().hash_capacity)]
    hash_capacity: u32,
}

#[derive(Args)]
struct RunArgs {
    /// The program: a core wasm module (.wasm) or its text (.wat).
    program: PathBuf,
    #[arg(long, value_enum, default_value = "path")]
    mode: RunMode,
    /// Where to write the profile.
    #[arg(short, long, default_value = "pathprof.json")]
    output: PathBuf,
    /// Preopen a host directory, as HOST or HOST::GUEST.
    #[arg(long, value_name = "HOST[::GUEST]")]
    dir: Vec<String>,
    /// Set an environment variable for the program.
    #[arg(long, value_name = "K=V")]
    env: Vec<String>,
    /// Call this export instead of `_start`; ARGS are its arguments.
    #[arg(long, value_name = "NAME")]
    invoke: Option<String>,
    #[command(flatten)]
    tuning: Tuning,
    /// Write where the time went (instrument, compile, execute, collect) and the module sizes, as JSON.
    #[arg(long, value_name = "FILE")]
    timings: Option<PathBuf>,
    /// Arguments passed to the program (after `--`).
    #[arg(last = true)]
    args: Vec<String>,
}

#[derive(Args)]
struct InstrumentArgs {
    program: PathBuf,
    #[arg(short, long)]
    output: PathBuf,
    #[arg(long, value_enum, default_value = "path")]
    mode: InstrumentMode,
    #[command(flatten)]
    tuning: Tuning,
}

#[derive(Args)]
struct CollectArgs {
    /// The module written by `pathprof instrument`.
    instrumented: PathBuf,
    /// The bytes of its exported `__pathprof_counters` memory, saved by the host.
    counters: PathBuf,
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Args)]
struct ReportArgs {
    profile: PathBuf,
    /// Show the N hottest paths.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Only this function (its name or index).
    #[arg(long)]
    function: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StatsArgs {
    program: PathBuf,
    #[command(flatten)]
    tuning: Tuning,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ConformanceArgs {
    /// A directory of `.wast` scripts (e.g. the WebAssembly testsuite's `core`).
    dir: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Args)]
struct MergeArgs {
    #[arg(required = true)]
    profiles: Vec<PathBuf>,
    #[arg(short, long)]
    output: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pathprof: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn dispatch(command: Command) -> Result<ExitCode> {
    match command {
        Command::Run(a) => pathprof::run_cmd::run(&a.program, run_request(&a)?),
        Command::Instrument(a) => instrument(a).map(|_| ExitCode::SUCCESS),
        Command::Collect(a) => collect(a).map(|_| ExitCode::SUCCESS),
        Command::Report(a) => report_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Stats(a) => stats_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Merge(a) => merge(a).map(|_| ExitCode::SUCCESS),
        Command::Conformance(a) => {
            let summary = pathprof::conformance::run_dir(&a.dir, a.threads)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                print!("{}", summary.render());
            }
            Ok(if summary.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn options(t: &Tuning, module_hash: Option<&str>) -> Result<driver::Options> {
    let weights = match &t.weights {
        Some(p) => {
            let profile = Profile::read(p)?;
            if let Some(h) = module_hash {
                profile.check_module(p, h)?;
            }
            Some(profile)
        }
        None => None,
    };
    if t.hash_capacity == 0 || !t.hash_capacity.is_power_of_two() {
        bail!(
            "--hash-capacity must be a power of two, not {}",
            t.hash_capacity
        );
    }
    let ball_larus = ball_larus::Options {
        truncate_above: t.truncate_above,
        array_max: t.array_max,
        hash_capacity: t.hash_capacity,
    };
    Ok(driver::Options {
        ball_larus,
        weights,
    })
}

fn run_request(a: &RunArgs) -> Result<pathprof::run_cmd::Request> {
    let module = pathprof::input::read_module(&a.program)?;
    let hash = pathprof_wasm::module_hash(&module);
    let technique = match a.mode {
        RunMode::Path => Some(Technique::Path),
        RunMode::Edge => Some(Technique::Edge),
        RunMode::None => None,
    };
    let mut dirs = Vec::new();
    for d in &a.dir {
        let (host, guest) = d.split_once("::").unwrap_or((d.as_str(), d.as_str()));
        dirs.push((PathBuf::from(host), guest.to_string()));
    }
    let mut env = Vec::new();
    for kv in &a.env {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--env {kv}: expected K=V"))?;
        env.push((k.to_string(), v.to_string()));
    }
    Ok(pathprof::run_cmd::Request {
        module,
        technique,
        options: options(&a.tuning, Some(&hash))?,
        output: a.output.clone(),
        dirs,
        env,
        invoke: a.invoke.clone(),
        args: a.args.clone(),
        timings: a.timings.clone(),
    })
}

fn instrument(a: InstrumentArgs) -> Result<()> {
    let module = pathprof::input::read_module(&a.program)?;
    let opts = options(&a.tuning, Some(&pathprof_wasm::module_hash(&module)))?;
    let technique = match a.mode {
        InstrumentMode::Path => Technique::Path,
        InstrumentMode::Edge => Technique::Edge,
    };
    let out = driver::instrument(&module, technique, &opts)
        .with_context(|| a.program.display().to_string())?;
    for w in &out.warnings {
        eprintln!("pathprof: warning: {w}");
    }
    pathprof_profile::write_atomically(&a.output, &out.bytes)?;
    Ok(())
}

fn collect(a: CollectArgs) -> Result<()> {
    let module = read(&a.instrumented)?;
    let meta = driver::read_meta(&module).with_context(|| a.instrumented.display().to_string())?;
    let counters = read(&a.counters)?;
    let profile = driver::collect(&meta, &counters, None)
        .with_context(|| a.counters.display().to_string())?;
    profile.write(&a.output)?;
    Ok(())
}

fn report_cmd(a: ReportArgs) -> Result<()> {
    let profile = Profile::read(&a.profile)?;
    let paths = report::hot_paths(&profile, a.function.as_deref())?;
    if a.json {
        let top: Vec<_> = paths.into_iter().take(a.top).collect();
        println!("{}", serde_json::to_string_pretty(&top)?);
    } else {
        print!("{}", report::render(&profile, &paths, a.top));
    }
    Ok(())
}

fn stats_cmd(a: StatsArgs) -> Result<()> {
    let module = pathprof::input::read_module(&a.program)?;
    let info = pathprof_wasm::analyze(&module).with_context(|| a.program.display().to_string())?;
    let opts = options(&a.tuning, None)?;
    let s = stats::module_stats(&info, &opts.ball_larus);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", stats::render(&s));
    }
    Ok(())
}

fn merge(a: MergeArgs) -> Result<()> {
    let profiles = a
        .profiles
        .iter()
        .map(|p| Profile::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = pathprof_profile::merge(&profiles)?;
    merged.write(&a.output)?;
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| path.display().to_string())
}
