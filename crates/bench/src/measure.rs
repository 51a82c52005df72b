//! The measuring protocol (BENCHMARKS.md, "Protocol"):
//!
//! 1. per program, an uninstrumented run on each input gives the reference
//!    output (and warms the file cache), and a path-profiled train run gives
//!    the train profile that PPP takes as its interesting paths;
//! 2. `runs` rounds; in each, every program runs once under every mode on
//!    its ref input, the mode order rotating from round to round, so that a
//!    burst of load on the shared machine spreads over all modes instead of
//!    falling on one;
//! 3. every run's standard output must equal the uninstrumented one, or the
//!    harness stops: a profiler that changes what a program prints is broken,
//!    and its times mean nothing;
//! 4. `pathprof instrument` is timed apart, as a process of its own, for its
//!    CPU time and peak memory, and wasmparser's validator alone is timed
//!    on the same module in this process, as its yardstick;
//! 5. path statistics come from the ref and train path profiles.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::pathprof_cli::{Pathprof, RunOutput};
use crate::paths::path_stats;
use crate::results::{
    InstrumenterResult, Machine, ModeResult, ProgramResult, Results, Unavailable,
};
use crate::validator::time_validation;

/// What to measure.
pub struct Config {
    pub pathprof: Pathprof,
    pub wasm_dir: PathBuf,
    pub results_dir: PathBuf,
    pub modes: Vec<String>,
    pub programs: Vec<String>,
    pub runs: usize,
    pub instrument_runs: usize,
    /// `ippp-inline`'s truncation bound.
    pub inline_truncate_above: u64,
    /// `ippp-inline`'s `--array-max`.
    pub inline_array_max: u64,
}

/// In-process validations of each module, for the yardstick's median.
const VALIDATE_RUNS: usize = 15;

/// The modes the harness knows, in display order.
pub const MODES: [&str; 11] = [
    "none",
    "edge",
    "path",
    "ppp",
    "residual",
    "context",
    "piecewise",
    "intra-context",
    "ippp",
    "ippp-inline",
    "inlined",
];

/// The default truncation bound and array limit of the `ippp-inline`
/// mode's runs: the inlined functions have many more paths. At pathprof's
/// array limit (65,536), even with guided cuts, 32 % of sqlite's ref path
/// executions start or end at a cut; at 2^40 at most 0.3 % of any
/// program's, but the largest functions count in hash tables (+17.7 %
/// geomean); at 2^20, in arrays, 0.01-8.8 % at +8.9 % (BENCHMARKS.md,
/// "Guided cuts"), with up to 760 MB of counter memory (sqlite), which the
/// run touches only where paths ran.
pub const INLINED_BOUND: u64 = 1 << 20;

/// Which optional CLI features exist (from `pathprof run --help`).
struct Caps {
    ppp: bool,
    uninteresting: bool,
}

pub fn run(cfg: &Config) -> Result<Results> {
    let clock = Instant::now();
    check_modes(&cfg.modes)?;
    let help = cfg.pathprof.help("run")?;
    let caps = Caps {
        ppp: help.contains("ppp"),
        uninteresting: help.contains("--uninteresting"),
    };
    let mut res = Results {
        machine: Machine::probe(),
        runs: cfg.runs,
        modes: cfg.modes.clone(),
        ..Results::default()
    };
    // The instrumenter first, while this process is small: a child's peak
    // RSS (ru_maxrss) starts at its parent's RSS at fork time on Linux.
    let mut instrumented = Vec::new();
    for name in &cfg.programs {
        instrumented.push(instrumenter(cfg, name)?);
    }
    let mut progs = Vec::new();
    for (name, mut ins) in cfg.programs.iter().zip(instrumented) {
        // After every instrumenter child: reading the modules grows this
        // process, and with it the children's starting RSS.
        ins.validate_s = time_validation(&module_path(cfg, name)?, VALIDATE_RUNS)?;
        let mut p = Program::prepare(cfg, name)?;
        p.result.instrumenter = Some(ins);
        progs.push(p);
    }
    let modes = available_modes(cfg, &caps, &mut res.unavailable);
    for round in 0..cfg.runs {
        for p in &mut progs {
            p.round(cfg, &modes, round, &caps, &mut res.unavailable)?;
        }
        let secs = clock.elapsed().as_secs_f64();
        eprintln!("round {}/{} done after {secs:.0} s", round + 1, cfg.runs);
    }
    if modes.iter().any(|m| m == "path") {
        for p in &mut progs {
            let (r, t) = (p.profile("path", "ref"), p.profile("path", "train"));
            p.result.paths = Some(path_stats(&r, &t)?);
        }
    }
    res.programs = progs.into_iter().map(|p| p.result).collect();
    res.harness_s = clock.elapsed().as_secs_f64();
    Ok(res)
}

/// The modes asked for, less PPP ones when the CLI has no `ppp` mode (noted
/// in `unavailable`).
fn available_modes(cfg: &Config, caps: &Caps, unavailable: &mut Vec<Unavailable>) -> Vec<String> {
    let mut modes = cfg.modes.clone();
    for m in ["ppp", "residual"] {
        if modes.iter().any(|x| x == m) && !caps.ppp {
            unavailable.push(Unavailable {
                mode: m.into(),
                program: None,
                note: "not available: `pathprof run --help` lists no `ppp` mode".into(),
            });
            modes.retain(|x| x != m);
        }
    }
    modes
}

fn check_modes(modes: &[String]) -> Result<()> {
    if modes.first().map(String::as_str) != Some("none") {
        bail!("--modes must start with `none`, the baseline of every ratio");
    }
    if let Some(m) = modes.iter().find(|m| !MODES.contains(&m.as_str())) {
        bail!("unknown mode `{m}` (known: {})", MODES.join(", "));
    }
    if modes.iter().any(|m| m == "ppp" || m == "residual") && !modes.iter().any(|m| m == "path") {
        bail!("ppp and residual need `path` in --modes (its train profile names the interesting paths)");
    }
    Ok(())
}

/// One program being measured.
struct Program {
    wasm: PathBuf,
    dir: PathBuf,
    /// Uninstrumented standard output on the ref input.
    expected: Vec<u8>,
    result: ProgramResult,
}

impl Program {
    /// Reference outputs and the train profile (protocol step 1).
    fn prepare(cfg: &Config, name: &str) -> Result<Program> {
        let wasm = module_path(cfg, name)?;
        let dir = cfg.results_dir.join(name);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut p = Program {
            wasm,
            dir,
            expected: Vec::new(),
            result: ProgramResult {
                name: name.into(),
                ..ProgramResult::default()
            },
        };
        let train = p.invoke(cfg, &mode_args("none", None, false), "none", "train")?;
        let profiled = p.invoke(cfg, &mode_args("path", None, false), "path", "train")?;
        check_same(name, "path (train)", &train.stdout, &profiled.stdout)?;
        if cfg.modes.iter().any(|m| m.starts_with("ippp")) {
            // The interesting segments: the train input's depth-1 segments.
            let segments = p.profile("segments", "train");
            cfg.pathprof.segments(&p.wasm, 1, "train", &segments)?;
        }
        if cfg
            .modes
            .iter()
            .any(|m| m == "ippp-inline" || m == "inlined")
        {
            p.inline_for_segments(cfg, &train.stdout)?;
        }
        let base = p.invoke(cfg, &mode_args("none", None, false), "none", "ref")?;
        p.result.module_bytes = base.timings.module_bytes;
        p.result.code_bytes = base.timings.code_bytes;
        p.expected = base.stdout;
        eprintln!(
            "{name}: ref {:.2} s, train {:.2} s uninstrumented",
            base.timings.execute_s, train.timings.execute_s
        );
        Ok(p)
    }

    /// The thesis' own IPPP (3.4.4, Fig. 3.15): the call sites of the
    /// train segments inlined, then (stage II) the inlined module's path
    /// profile of the train input, whose paths are the interesting ones;
    /// its truncation cuts are put where the train input's edge profile
    /// of the inlined module says no path runs, where that fits.
    /// `train_stdout`: the original's output on train.
    fn inline_for_segments(&self, cfg: &Config, train_stdout: &[u8]) -> Result<()> {
        let inlined = self.inlined();
        cfg.pathprof
            .inline(&self.wasm, &self.profile("segments", "train"), &inlined)?;
        let edges = self.profile("inline-edge", "train");
        let timings = self.dir.join("inline-edge.train.timings.json");
        let out = (cfg.pathprof).run(
            &inlined,
            &mode_args("edge", None, false),
            "train",
            &edges,
            &timings,
        )?;
        check_same(
            &self.result.name,
            "inlined edges (train)",
            train_stdout,
            &out.stdout,
        )?;
        let profile = self.profile("inline-path", "train");
        let timings = self.dir.join("inline-path.train.timings.json");
        let mut args = mode_args("path", None, false);
        args.extend(["--weights".into(), edges.display().to_string()]);
        args.extend(cfg.inline_bounds());
        let out = cfg
            .pathprof
            .run(&inlined, &args, "train", &profile, &timings)?;
        check_same(
            &self.result.name,
            "inlined (train)",
            train_stdout,
            &out.stdout,
        )
    }

    fn inlined(&self) -> PathBuf {
        self.dir.join("inlined.wasm")
    }

    /// JSON (the name asks for it): paths.rs reads it through its own
    /// mirror of the documented JSON, sharing no code with the profiler.
    fn profile(&self, mode: &str, input: &str) -> PathBuf {
        self.dir.join(format!("{mode}.{input}.json"))
    }

    fn invoke(&self, cfg: &Config, args: &[String], mode: &str, input: &str) -> Result<RunOutput> {
        let timings = self.dir.join(format!("{mode}.{input}.timings.json"));
        cfg.pathprof.run(
            &self.wasm,
            args,
            input,
            &self.profile(mode, input),
            &timings,
        )
    }

    /// One round: every mode once, starting at mode `round` (protocol step
    /// 2). A PPP mode that fails on its first run is noted as not available
    /// for this program; any other failure stops the harness.
    fn round(
        &mut self,
        cfg: &Config,
        modes: &[String],
        round: usize,
        caps: &Caps,
        unavailable: &mut Vec<Unavailable>,
    ) -> Result<()> {
        let name = self.result.name.clone();
        for k in 0..modes.len() {
            let mode = &modes[(k + round) % modes.len()];
            let skipped = unavailable
                .iter()
                .any(|u| &u.mode == mode && u.program.as_ref().is_none_or(|n| *n == name));
            if skipped {
                continue;
            }
            match self.measure(cfg, mode, caps) {
                Ok(()) => {}
                Err(e) if is_ppp(mode) && self.result.mode(mode).is_none() => {
                    eprintln!("  {name} {mode}: not available: {e:#}");
                    unavailable.push(Unavailable {
                        mode: mode.clone(),
                        program: Some(name.clone()),
                        note: format!("not available: {e:#}"),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One timed ref run under `mode` (protocol steps 2 and 3).
    fn measure(&mut self, cfg: &Config, mode: &str, caps: &Caps) -> Result<()> {
        let train = match mode {
            "ippp" => self.profile("segments", "train"),
            "ippp-inline" => self.profile("inline-path", "train"),
            _ => self.profile("path", "train"),
        };
        let mut args = mode_args(mode, Some(&train), caps.uninteresting);
        if mode == "ippp-inline" {
            // PPP plans each function with the cuts the profile records;
            // the bound is for functions the profile does not name.
            args.extend(cfg.inline_bounds());
        }
        // `inlined`: the inlined module uninstrumented, what inlining
        // alone does to the time.
        let out = if mode == "ippp-inline" || mode == "inlined" {
            let timings = self.dir.join(format!("{mode}.ref.timings.json"));
            let profile = self.profile(mode, "ref");
            cfg.pathprof
                .run(&self.inlined(), &args, "ref", &profile, &timings)?
        } else {
            self.invoke(cfg, &args, mode, "ref")?
        };
        check_same(&self.result.name, mode, &self.expected, &out.stdout)?;
        let t = &out.timings;
        eprintln!(
            "  {:<7} {:<9} execute {:.3} s, compile {:.3} s",
            self.result.name, mode, t.execute_s, t.compile_s
        );
        let slot = match self.result.modes.iter().position(|m| m.mode == mode) {
            Some(i) => &mut self.result.modes[i],
            None => {
                self.result.modes.push(ModeResult {
                    mode: mode.into(),
                    ..ModeResult::default()
                });
                self.result.modes.last_mut().expect("just pushed")
            }
        };
        slot.execute_s.push(t.execute_s);
        slot.execute_cpu_s.push(t.execute_cpu_s);
        slot.compile_s.push(t.compile_s);
        slot.instrument_s.push(t.instrument_s);
        slot.run_code_bytes = t.run_code_bytes;
        slot.counter_bytes = t.counter_bytes;
        Ok(())
    }
}

/// `pathprof instrument` as a process of its own (protocol step 4), after
/// the same on an empty module: the process's own floor of time and memory.
fn instrumenter(cfg: &Config, name: &str) -> Result<InstrumenterResult> {
    let wasm = module_path(cfg, name)?;
    let dir = cfg.results_dir.join(name);
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let empty = dir.join("empty.wasm");
    fs::write(&empty, b"\0asm\x01\0\0\0")
        .with_context(|| format!("cannot write {}", empty.display()))?;
    let out = dir.join("path.inst.wasm");
    let baseline = cfg.pathprof.instrument(&empty, "path", &out)?;
    let mut samples = Vec::new();
    for _ in 0..cfg.instrument_runs {
        samples.push(cfg.pathprof.instrument(&wasm, "path", &out)?);
    }
    Ok(InstrumenterResult {
        samples,
        baseline_rss_bytes: baseline.max_rss_bytes,
        baseline_cpu_s: baseline.cpu_s,
        validate_s: Vec::new(),
    })
}

/// The `pathprof run` arguments of a mode. PPP takes the train path profile
/// as its interesting paths; `ppp` counts the other paths in one bucket and
/// `residual` records them (the residual profile of Vaswani et al.), when
/// the CLI has `--uninteresting`; without it both use the CLI's default.
fn mode_args(mode: &str, train: Option<&Path>, uninteresting: bool) -> Vec<String> {
    let mut a = vec!["--mode".to_string()];
    match (mode, train) {
        ("inlined", _) => a.push("none".into()),
        // IPPP counts the train segments; IPPP by inlining, the train paths
        // of the inlined module with PPP.
        ("ippp" | "ippp-inline", Some(t)) => {
            let inlined = mode == "ippp-inline";
            a.extend([
                if inlined { "ppp" } else { "ippp" }.into(),
                "--interesting".into(),
                t.display().to_string(),
                "--uninteresting".into(),
                "count".into(),
            ]);
        }
        ("ppp" | "residual", Some(t)) => {
            a.extend([
                "ppp".into(),
                "--interesting".into(),
                t.display().to_string(),
            ]);
            if uninteresting {
                let policy = if mode == "ppp" { "count" } else { "record" };
                a.extend(["--uninteresting".into(), policy.into()]);
            }
        }
        _ => a.push(mode.into()),
    }
    a
}

impl Config {
    /// The truncation bound and array limit of `ippp-inline`'s runs.
    fn inline_bounds(&self) -> Vec<String> {
        vec![
            "--truncate-above".into(),
            self.inline_truncate_above.to_string(),
            "--array-max".into(),
            self.inline_array_max.to_string(),
        ]
    }
}

/// WASM_DIR/NAME.wasm, which must exist.
fn module_path(cfg: &Config, name: &str) -> Result<PathBuf> {
    let wasm = cfg.wasm_dir.join(format!("{name}.wasm"));
    if !wasm.is_file() {
        bail!(
            "{}: no such module (run bench/build-suite.sh first)",
            wasm.display()
        );
    }
    Ok(wasm)
}

fn is_ppp(mode: &str) -> bool {
    matches!(mode, "ppp" | "residual" | "ippp" | "ippp-inline")
}

fn check_same(program: &str, mode: &str, expected: &[u8], got: &[u8]) -> Result<()> {
    if expected != got {
        bail!(
            "{program}: the output under {mode} differs from the uninstrumented output \
             ({} vs {} bytes): instrumentation changed the program's behaviour",
            got.len(),
            expected.len()
        );
    }
    Ok(())
}
