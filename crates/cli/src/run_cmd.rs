//! `pathprof run`: instrument in memory, run on the embedded engine, write
//! the profile, and exit with the program's exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use pathprof_runner::{Exit, RunOptions};

use crate::driver::{self, Technique};

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
    pub args: Vec<String>,
}

pub fn run(program: &Path, req: Request) -> Result<ExitCode> {
    let name = program.display().to_string();
    let instrumented = match req.technique {
        Some(t) => {
            let out = driver::instrument(&req.module, t, &req.options).with_context(|| name.clone())?;
            for w in &out.warnings {
                eprintln!("pathprof: warning: {w}");
            }
            Some(out)
        }
        None => None,
    };
    let bytes = instrumented.as_ref().map_or(&req.module, |i| &i.bytes);
    let engine = pathprof_runner::engine_without_fuel()?;
    let mut argv = vec![program.file_name().map_or(name.clone(), |f| f.to_string_lossy().into_owned())];
    argv.extend(req.args.iter().cloned());
    let opts = RunOptions {
        args: argv,
        env: req.env.clone(),
        dirs: req.dirs.clone(),
        inherit_stdio: true,
        ..RunOptions::default()
    };
    let (exit, counters, stack) = match &req.invoke {
        Some(export) => {
            let out = pathprof_runner::invoke(&engine, bytes, export, &req.args, &opts).with_context(|| name.clone())?;
            for v in &out.results {
                println!("{v}");
            }
            (out.exit, out.counters, out.abrupt_stack)
        }
        None => {
            let out = pathprof_runner::run_command(&engine, bytes, &opts).with_context(|| name.clone())?;
            (out.exit, out.counters, out.abrupt_stack)
        }
    };
    if let Exit::Trap(msg) = &exit {
        eprintln!("pathprof: warning: {name} trapped: {msg}");
    }
    if let Some(inst) = &instrumented {
        let counters = counters.context("the instrumented module exported no counter memory")?;
        let abrupt = exit.is_abrupt();
        let profile = driver::collect(&inst.meta, &counters, abrupt.then_some(exit.unfinished_frames(&stack)))?;
        profile.write(&req.output)?;
        if abrupt {
            eprintln!("pathprof: note: the run ended abruptly; paths in flight then are not counted");
        }
    }
    Ok(ExitCode::from(exit.code()))
}
