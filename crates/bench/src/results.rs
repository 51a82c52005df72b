//! What one harness run measured, as saved in `results.json`: the raw
//! samples of every (program, mode), the instrumenter's resource usage and
//! the path statistics. Medians, ratios and geometric means are derived
//! when rendering, so the raw file can be re-rendered or re-analysed.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::pathprof_cli::Usage;
use crate::paths::PathStats;
use crate::stats::median;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Results {
    pub machine: Machine,
    /// Runs per (program, mode).
    pub runs: usize,
    /// The modes asked for, in order (`none` first).
    pub modes: Vec<String>,
    /// Modes the CLI could not run, with the reason.
    pub unavailable: Vec<Unavailable>,
    pub programs: Vec<ProgramResult>,
    /// Wall time of the whole harness run.
    pub harness_s: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    pub date_utc: String,
    /// `git rev-parse --short HEAD` of the working directory, `+dirty` when
    /// it has uncommitted changes: which pathprof was measured.
    #[serde(default)]
    pub commit: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Unavailable {
    pub mode: String,
    /// The program it failed on; `None`: every program.
    pub program: Option<String>,
    pub note: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProgramResult {
    pub name: String,
    pub module_bytes: u64,
    pub code_bytes: u64,
    pub modes: Vec<ModeResult>,
    pub instrumenter: Option<InstrumenterResult>,
    pub paths: Option<PathStats>,
}

/// Every sample of one (program, mode) on the ref input.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ModeResult {
    pub mode: String,
    /// Wall time of each run.
    pub execute_s: Vec<f64>,
    /// CPU time of the thread that ran the program, per run (empty from a
    /// pathprof that does not report it).
    #[serde(default)]
    pub execute_cpu_s: Vec<f64>,
    pub compile_s: Vec<f64>,
    pub instrument_s: Vec<f64>,
    /// Code section of the module that ran (instrumented or not).
    pub run_code_bytes: u64,
    pub counter_bytes: u64,
}

/// `pathprof instrument --mode path` of one program.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InstrumenterResult {
    pub samples: Vec<Usage>,
    /// Peak RSS of instrumenting an empty module: the process's own floor.
    pub baseline_rss_bytes: u64,
    /// CPU time of instrumenting an empty module (start-up, exit).
    #[serde(default)]
    pub baseline_cpu_s: f64,
    /// Seconds of each in-process `validate_all` of the module, one thread:
    /// the yardstick of [`crate::validator`] (empty from older results).
    #[serde(default)]
    pub validate_s: Vec<f64>,
}

impl ModeResult {
    /// Whether every run reported its thread CPU time.
    pub fn has_cpu(&self) -> bool {
        self.execute_cpu_s.len() == self.execute_s.len()
            && self.execute_cpu_s.iter().all(|&t| t > 0.0)
    }

    /// The samples overheads are computed from: the running thread's CPU
    /// time if `cpu`, else wall time. On a shared machine, other processes
    /// stretch wall time (the program waits for a core) but hardly its CPU
    /// time, so CPU time is the steadier measure of the program's own cost.
    pub fn times(&self, cpu: bool) -> &[f64] {
        if cpu {
            &self.execute_cpu_s
        } else {
            &self.execute_s
        }
    }
}

impl Results {
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self)? + "\n";
        fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))
    }

    pub fn load(path: &Path) -> Result<Results> {
        let text =
            fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a results file", path.display()))
    }
}

impl ProgramResult {
    pub fn mode(&self, mode: &str) -> Option<&ModeResult> {
        self.modes
            .iter()
            .find(|m| m.mode == mode && !m.execute_s.is_empty())
    }

    /// Median execution time of `mode` over that of `none`, by the CPU
    /// time of the running thread where both have it (see
    /// [`ModeResult::times`]).
    pub fn ratio(&self, mode: &str) -> Option<f64> {
        let (m, base) = (self.mode(mode)?, self.mode("none")?);
        let cpu = m.has_cpu() && base.has_cpu();
        Some(median(m.times(cpu))? / median(base.times(cpu))?)
    }

    /// Median wall time of `mode` over that of `none`.
    pub fn ratio_wall(&self, mode: &str) -> Option<f64> {
        Some(median(&self.mode(mode)?.execute_s)? / median(&self.mode("none")?.execute_s)?)
    }

    /// Median compile time of `mode` over that of `none`.
    pub fn compile_ratio(&self, mode: &str) -> Option<f64> {
        let base = median(&self.mode("none")?.compile_s)?;
        Some(median(&self.mode(mode)?.compile_s)? / base)
    }

    /// Instrumented code section over the original one (thesis Table 3.4).
    pub fn code_growth(&self, mode: &str) -> Option<f64> {
        let m = self.mode(mode)?;
        (self.code_bytes > 0).then(|| m.run_code_bytes as f64 / self.code_bytes as f64)
    }
}

impl Machine {
    /// Describes this machine from /proc and uname.
    pub fn probe() -> Machine {
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let date_utc = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M UTC"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        Machine {
            cpu,
            cores,
            kernel,
            date_utc,
            commit: git_commit(),
        }
    }
}

/// The checked-out commit, or "unknown" outside a git work tree.
fn git_commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(changes) if !changes.is_empty() => format!("{head}+dirty"),
            _ => head,
        },
        None => "unknown".into(),
    }
}
