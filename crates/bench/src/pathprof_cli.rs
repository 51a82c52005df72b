//! Runs the `pathprof` command the way a user would, and reads what it
//! reports: the `--timings` JSON of `pathprof run` (instrument, compile and
//! execute times, module and counter sizes), and the wall time, CPU time and
//! peak resident memory of a `pathprof instrument` process (through wait4,
//! since std does not expose a child's resource usage).
//!
//! Driving the CLI rather than the library measures exactly what users run,
//! and lets the harness measure modes the CLI gains later (PPP) without a
//! rebuild.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// What `pathprof run --timings FILE` writes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Timings {
    pub instrument_s: f64,
    pub compile_s: f64,
    pub execute_s: f64,
    /// CPU time of the thread that ran the program (0 from a pathprof
    /// that does not report it).
    #[serde(default)]
    pub execute_cpu_s: f64,
    pub collect_s: f64,
    pub module_bytes: u64,
    pub code_bytes: u64,
    pub run_module_bytes: u64,
    pub run_code_bytes: u64,
    pub counter_bytes: u64,
}

/// One `pathprof run`: the program's standard output and the timings.
pub struct RunOutput {
    pub stdout: Vec<u8>,
    pub timings: Timings,
}

/// Resources used by one child process.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Usage {
    pub wall_s: f64,
    /// User plus system CPU time (all its threads).
    pub cpu_s: f64,
    pub max_rss_bytes: u64,
    /// The most heap live at once, as `pathprof instrument --timings`
    /// reports it (0 where not measured: results of older harness runs).
    #[serde(default)]
    pub peak_heap_bytes: u64,
}

/// The `pathprof` binary under test.
pub struct Pathprof {
    pub bin: PathBuf,
}

impl Pathprof {
    /// `pathprof run MODE_ARGS --timings T --no-compile-cache -o PROFILE WASM -- INPUT`.
    pub fn run(
        &self,
        wasm: &Path,
        mode_args: &[String],
        input: &str,
        profile: &Path,
        timings: &Path,
    ) -> Result<RunOutput> {
        let _ = fs::remove_file(timings);
        let mut args = mode_args.to_vec();
        args.push("--timings".into());
        args.push(timings.display().to_string());
        // Compile times are measured: never read back from the cache.
        args.push("--no-compile-cache".into());
        let stdout = self.run_to(wasm, &args, input, profile)?;
        let text = fs::read_to_string(timings)
            .with_context(|| format!("{}: timings not written", timings.display()))?;
        let timings = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a timings file", timings.display()))?;
        Ok(RunOutput { stdout, timings })
    }

    /// `pathprof run --segments K -o PROFILE WASM -- INPUT` (untimed: the
    /// interesting segments of the `ippp` mode, from the train input).
    pub fn segments(&self, wasm: &Path, k: usize, input: &str, profile: &Path) -> Result<()> {
        let args = ["--segments".to_string(), k.to_string()];
        self.run_to(wasm, &args, input, profile).map(drop)
    }

    /// `pathprof inline --interesting SEGMENTS WASM -o OUT` (untimed).
    pub fn inline(&self, wasm: &Path, segments: &Path, out: &Path) -> Result<()> {
        let args = [
            "--interesting".as_ref(),
            segments.as_os_str(),
            wasm.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--force".as_ref(),
        ];
        self.output("inline", &args).map(drop)
    }

    /// `pathprof run ARGS -o PROFILE WASM -- INPUT`: its standard output.
    fn run_to(&self, wasm: &Path, args: &[String], input: &str, profile: &Path) -> Result<Vec<u8>> {
        let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        all.extend(["-o".as_ref(), profile.as_os_str(), wasm.as_os_str()]);
        all.extend([std::ffi::OsStr::new("--"), std::ffi::OsStr::new(input)]);
        self.output("run", &all)
    }

    /// `pathprof SUBCOMMAND ARGS`, which must succeed: its standard output.
    fn output(&self, subcommand: &str, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>> {
        let out = Command::new(&self.bin)
            .arg(subcommand)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        if !out.status.success() {
            let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
            bail!(
                "pathprof {subcommand} {} failed ({}): {}",
                shown.join(" "),
                out.status,
                last_line(&out.stderr)
            );
        }
        Ok(out.stdout)
    }

    /// `pathprof instrument --mode MODE --timings T WASM -o OUT`, with its
    /// resource usage and the peak heap it reports in T (`OUT.timings.json`).
    pub fn instrument(&self, wasm: &Path, mode: &str, out: &Path) -> Result<Usage> {
        let timings = out.with_extension("timings.json");
        let mut cmd = Command::new(&self.bin);
        cmd.args(["instrument", "--mode", mode, "--timings"])
            .arg(&timings)
            .arg(wasm)
            .arg("-o")
            .arg(out);
        let (status, mut usage) = run_measured(&mut cmd)?;
        if status != 0 {
            bail!(
                "pathprof instrument {} exited with status {status}",
                wasm.display()
            );
        }
        let text =
            fs::read(&timings).with_context(|| format!("cannot read {}", timings.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&text)
            .with_context(|| format!("{}: not JSON", timings.display()))?;
        usage.peak_heap_bytes = v["peak_heap_bytes"].as_u64().unwrap_or(0);
        Ok(usage)
    }

    /// The text of `pathprof SUBCOMMAND --help`, to see which modes it has.
    pub fn help(&self, subcommand: &str) -> Result<String> {
        let out = Command::new(&self.bin)
            .args([subcommand, "--help"])
            .output()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Spawns `cmd` (output discarded), waits with wait4 and returns its exit
/// status (or 128 + signal) and resource usage.
fn run_measured(cmd: &mut Command) -> Result<(i32, Usage)> {
    let clock = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start pathprof")?;
    let pid = libc::pid_t::try_from(child.id()).context("child pid out of range")?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own unwaited child; both pointers are valid for
    // the duration of the call.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall_s = clock.elapsed().as_secs_f64();
    if rc != pid {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let usage = Usage {
        wall_s,
        cpu_s: secs(ru.ru_utime) + secs(ru.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_bytes: u64::try_from(ru.ru_maxrss).unwrap_or(0) * 1024,
        peak_heap_bytes: 0,
    };
    Ok((code, usage))
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)")
        .to_string()
}
