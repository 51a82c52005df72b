//! `pathprof conformance`'s progress (a run takes minutes): a bar on
//! stderr when it is a terminal, cleared at the end.
//!
//! When stderr is not a terminal (CI, a pipe, a log file), a line
//! `pathprof: conformance: 120/260 scripts, 31 s` instead, at the first
//! script finished 10 s or more after the last such line (or the start).
//! The environment variable `PATHPROF_PROGRESS_EVERY_FILES=N` adds one
//! after every N scripts finished (the tests use 1, to see lines without
//! waiting).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{ScriptReport, Summary, Totals};

/// The longest wait between two lines when stderr is not a terminal.
const EVERY: Duration = Duration::from_secs(10);

/// [`crate::run_dir`], showing its progress on stderr (see the module's
/// documentation).
pub fn run_dir(dir: &Path, threads: usize) -> Result<Summary> {
    let clock = Instant::now();
    let bar = ProgressBar::hidden();
    let terminal = std::io::stderr().is_terminal();
    let every_files = std::env::var("PATHPROF_PROGRESS_EVERY_FILES")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0);
    // Scripts finished, and when the last line was printed: the workers
    // report from their own threads.
    let lines = Mutex::new((0usize, clock));
    let on_event = |scripts: usize, done: Option<&ScriptReport>| match done {
        None if terminal => {
            bar.set_length(scripts as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{pos}/{len} scripts {bar:30} {elapsed} {msg}")
            {
                bar.set_style(style);
            }
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        None => {}
        Some(report) if terminal => {
            bar.set_message(report.script.clone());
            bar.inc(1);
        }
        Some(_) => {
            let mut l = lines.lock().unwrap_or_else(|e| e.into_inner());
            l.0 += 1;
            let now = Instant::now();
            if now - l.1 >= EVERY || every_files.is_some_and(|n| l.0 % n == 0) {
                l.1 = now;
                eprintln!(
                    "pathprof: conformance: {}/{scripts} scripts, {} s",
                    l.0,
                    clock.elapsed().as_secs()
                );
            }
        }
    };
    let summary = crate::run_dir_with(dir, threads, &on_event);
    bar.finish_and_clear();
    summary
}

impl Totals {
    /// The one-line summary of a run that took `seconds`: scripts,
    /// modules, assertions, regressions and errors.
    pub fn line(&self, seconds: f64) -> String {
        format!(
            "{} scripts, {} modules, {} assertions ({} pass on the original), {} regressions, {} errors, {seconds:.1} s",
            self.scripts, self.modules, self.assertions, self.passed, self.regressions, self.errors,
        )
    }
}
