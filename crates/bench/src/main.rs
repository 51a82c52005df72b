//! `pathprof-bench`: the benchmark harness of issue 4. `run` measures the
//! suite built by bench/build-suite.sh with the `pathprof` command and saves
//! the raw figures as JSON; `render` turns them into the tables of
//! BENCHMARKS.md and the overhead chart. `bash scripts/bench.sh` does all of
//! it; BENCHMARKS.md describes the protocol.

mod big_module;
mod bootstrap;
mod chart;
mod measure;
mod pathprof_cli;
mod paths;
mod render;
mod results;
mod stats;
mod validator;

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "pathprof-bench",
    about = "Benchmark harness of pathprof (overhead, instrumenter, path statistics)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the suite; write RESULTS/results.json.
    Run(RunArgs),
    /// Render a results file into BENCHMARKS.md (between its markers) and an SVG chart.
    Render(RenderArgs),
    /// Time reading profile files (binary or JSON) as every command reads them.
    ProfileRead(ProfileReadArgs),
    /// Generate a large module (most of it never runs) for the scale figures.
    BigModule(big_module::BigModuleArgs),
}

#[derive(clap::Args)]
struct ProfileReadArgs {
    /// Profiles to read.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Reads of each file; the median and the fastest are shown.
    #[arg(long, default_value_t = 21)]
    reads: usize,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The `pathprof` binary to measure.
    #[arg(long)]
    pathprof: PathBuf,
    /// Where bench/build-suite.sh wrote NAME.wasm.
    #[arg(long)]
    wasm_dir: PathBuf,
    /// Where to write results.json and the profiles.
    #[arg(long)]
    results: PathBuf,
    /// Modes, `none` first (known: none, edge, path, ppp, residual, context, piecewise, intra-context, ippp, ippp-inline, inlined).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,edge,path,ppp,residual,context,piecewise"
    )]
    modes: Vec<String>,
    /// Programs of the suite to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "zlib,bzip2,zstd,lz4,sqlite,lua"
    )]
    programs: Vec<String>,
    /// Timed runs per (program, mode): 7 rounds give 95 % intervals of a
    /// few points on this suite (docs/decisions.md#harness-rounds).
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Timed `pathprof instrument` processes per program.
    #[arg(long, default_value_t = 3)]
    instrument_runs: usize,
    /// `ippp-inline`: the truncation bound of the inlined module's path
    /// profiles (its cuts guided by a train edge profile).
    #[arg(long, default_value_t = measure::INLINED_BOUND)]
    inline_truncate_above: u64,
    /// `ippp-inline`: count paths in an array up to this many paths a
    /// function (`pathprof run --array-max`).
    #[arg(long, default_value_t = measure::INLINED_BOUND)]
    inline_array_max: u64,
}

#[derive(clap::Args)]
struct RenderArgs {
    /// A results.json written by `run`.
    results: PathBuf,
    /// The Markdown file whose generated section is replaced (created if missing).
    #[arg(long)]
    markdown: PathBuf,
    /// Where to write the overhead chart.
    #[arg(long)]
    svg: PathBuf,
}

fn main() -> ExitCode {
    match dispatch(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pathprof-bench: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Run(a) => run(a),
        Command::Render(a) => render(a),
        Command::ProfileRead(a) => profile_read(a),
        Command::BigModule(a) => big_module::run(&a),
    }
}

/// Per file: its size, and the median and fastest of `reads` reads by
/// `Profile::read` (file read, decoding, consistency checks), the work every
/// command that takes a profile starts with.
fn profile_read(a: ProfileReadArgs) -> Result<()> {
    println!(
        "{:<40} {:>12} {:>11} {:>11}",
        "profile", "bytes", "median ms", "fastest ms"
    );
    for f in &a.files {
        let bytes = fs::metadata(f)
            .with_context(|| f.display().to_string())?
            .len();
        let mut ms = Vec::with_capacity(a.reads);
        for _ in 0..a.reads.max(1) {
            let t = std::time::Instant::now();
            let profile = std::hint::black_box(pathprof_profile::Profile::read(f)?);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            // Freed outside the timing: a command frees it at exit, if at all.
            drop(profile);
        }
        ms.sort_by(f64::total_cmp);
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "{name:<40} {bytes:>12} {:>11.1} {:>11.1}",
            ms[ms.len() / 2],
            ms[0]
        );
    }
    Ok(())
}

fn run(a: RunArgs) -> Result<()> {
    fs::create_dir_all(&a.results)
        .with_context(|| format!("cannot create {}", a.results.display()))?;
    let cfg = measure::Config {
        pathprof: pathprof_cli::Pathprof { bin: a.pathprof },
        wasm_dir: a.wasm_dir,
        results_dir: a.results.clone(),
        modes: a.modes,
        programs: a.programs,
        runs: a.runs.max(1),
        instrument_runs: a.instrument_runs.max(1),
        inline_truncate_above: a.inline_truncate_above,
        inline_array_max: a.inline_array_max,
    };
    let results = measure::run(&cfg)?;
    let path = a.results.join("results.json");
    results.save(&path)?;
    eprintln!(
        "wrote {} ({:.1} min)",
        path.display(),
        results.harness_s / 60.0
    );
    Ok(())
}

fn render(a: RenderArgs) -> Result<()> {
    let results = results::Results::load(&a.results)?;
    let doc = fs::read_to_string(&a.markdown).unwrap_or_default();
    let doc = render::splice(&doc, &render::section(&results));
    fs::write(&a.markdown, doc)
        .with_context(|| format!("cannot write {}", a.markdown.display()))?;
    if let Some(dir) = a.svg.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(&a.svg, chart::overhead_svg(&results))
        .with_context(|| format!("cannot write {}", a.svg.display()))?;
    eprintln!("wrote {} and {}", a.markdown.display(), a.svg.display());
    Ok(())
}
