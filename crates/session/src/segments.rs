//! `pathprof run --segments K`: the depth-K interprocedural path segments
//! (IPS, K. Vaswani's thesis 3.4.2) of a run, recorded exactly.
//!
//! The module runs with the buffered trace instrumentation; on a second
//! thread, its edge events become the supergraph's execution
//! ([`pathprof_wasm::supergraph::EventStream`]) and the segmenter
//! ([`pathprof_graph::ippp::Segmenter`]) cuts it into subpaths and
//! segments as the run goes, so a run of billions of edges is never
//! stored. The same trace gives every edge's count.
//!
//! This is how the interesting set of interprocedural preferential path
//! profiling is taken from a test run (3.5.2's first scheme) and what
//! residual profiling compares. It costs what a trace costs; counting
//! chosen segments without a trace is `--mode ippp` ([`pathprof_core::ippp`]).
//!
//! Departures from the thesis (beyond the segmenter's):
//! - The thesis does not define segments across tail calls or exceptions:
//!   a tail call ends the segments open on the activation it replaces
//!   (docs/decisions.md#ips-tail-calls), a throw closes those open on the
//!   thrower (docs/decisions.md#ips-exceptions), and an exception a library
//!   catches leaves the activations down to its callback
//!   (docs/decisions.md#import-catches).
//! - A function with more subpaths than 64 bits number is truncated (Ball
//!   and Larus 5.3): a truncated edge ends the subpath, and the segments
//!   open on it, as a backedge does.
//! - A segment still open when the run ends (a return never taken, a
//!   trap, `proc_exit`) is not counted, as a Ball-Larus path in flight is
//!   not.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};

use crate::error::{bail, invalid, Context, Result};
use pathprof_graph::interproc::Event;
use pathprof_graph::ippp::{Ips, Segmenter, SubpathNumbering};
use pathprof_profile::segments::{SegmentCount, SegmentProfile};
use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_runner::{Exit, RunOptions, TraceEvent, TraceSink, TraceTo};
use pathprof_wasm::supergraph::{EventStream, ModuleSupergraph};

use pathprof_core::driver::{self, Technique};

pub use pathprof_core::ippp::MAX_K;

/// What a recorded run gives.
pub struct Recorded {
    pub profile: Profile,
    pub exit: Exit,
    /// The export's results, with `invoke`.
    pub results: Vec<pathprof_runner::Value>,
}

/// A module made ready to record the segments of its runs: its supergraph,
/// subpath numbering and traced build.
pub struct Prepared {
    msg: ModuleSupergraph,
    numbering: SubpathNumbering,
    template: Profile,
    traced: wasmtime::Module,
}

impl Prepared {
    /// Functions whose subpaths 64 bits cannot number are truncated to
    /// the default `--truncate-above` acyclic paths of their own.
    pub fn new(engine: &wasmtime::Engine, module: &[u8]) -> Result<Prepared> {
        let bound = driver::Options::default().ball_larus.truncate_above;
        Self::truncating_above(engine, module, bound, false)
    }

    /// As [`Prepared::new`], truncating functions with more than `bound`
    /// acyclic paths of their own: only if the numbering needs it, or
    /// always (`force`, for tests).
    pub fn truncating_above(
        engine: &wasmtime::Engine,
        module: &[u8],
        bound: u64,
        force: bool,
    ) -> Result<Prepared> {
        let info = pathprof_wasm::analyze(module)?;
        let (msg, numbering) = pathprof_core::ippp::numbered(module, &info, bound, force)
            .context("segments cannot be recorded")?;
        let traced = driver::instrument(module, Technique::Trace, &driver::Options::default())?;
        let mut template = traced.meta()?.template;
        template.mode = Mode::Segments;
        let traced = pathprof_runner::compile(engine, &traced.bytes)?;
        Ok(Prepared {
            msg,
            numbering,
            template,
            traced,
        })
    }

    /// The supergraph the segments are of (truncated where it had to be).
    pub fn supergraph(&self) -> &ModuleSupergraph {
        &self.msg
    }

    pub fn numbering(&self) -> &SubpathNumbering {
        &self.numbering
    }

    /// Runs the module (its `_start`, or `invoke` with its arguments) and
    /// records its depth-`k` segments.
    pub fn record(
        &self,
        k: usize,
        mut opts: RunOptions,
        invoke: Option<(&str, &[String])>,
    ) -> Result<Recorded> {
        if !(1..=MAX_K).contains(&k) {
            bail!("--segments {k}: the depth must be 1 to {MAX_K}");
        }
        let (tx, rx) = sync_channel::<Vec<TraceEvent>>(64);
        opts.trace = Some(TraceTo::new(Arc::new(Mutex::new(Channel(tx)))));
        std::thread::scope(|scope| {
            let consumer = scope.spawn(|| {
                let mut r = Recorder::new(self, k);
                for batch in rx {
                    r.take(&batch);
                }
                r.finish()
            });
            let ran = match invoke {
                Some((export, args)) => {
                    pathprof_runner::invoke_compiled(&self.traced, export, args, &opts)
                        .map(|o| (o.exit, o.results))
                }
                None => {
                    pathprof_runner::run_compiled(&self.traced, &opts).map(|o| (o.exit, vec![]))
                }
            };
            // The sink's sender goes with the options: the consumer ends.
            drop(opts);
            let recorder = consumer
                .join()
                .map_err(|_| invalid!("the segment recorder panicked"))?;
            let (exit, results) = ran?;
            let profile = self.profile(k, recorder?, &exit)?;
            Ok(Recorded {
                profile,
                exit,
                results,
            })
        })
    }

    fn profile(&self, k: usize, r: Finished, exit: &Exit) -> Result<Profile> {
        let mut profile = self.template.clone();
        profile.runs = 1;
        profile.abrupt_runs = u64::from(exit.is_abrupt());
        for f in &mut profile.functions {
            let counted = r.edges.get(f.func_index as usize);
            if let (FunctionData::Edge { edge_counts, .. }, Some(c)) = (&mut f.data, counted) {
                edge_counts.clone_from(c);
            }
        }
        // In the order of their subpaths, as the format says.
        let mut closed: Vec<(Ips, u64)> = r.segments.into_iter().collect();
        closed.sort_unstable();
        let segments = closed
            .into_iter()
            .map(|(ips, count)| self.spell(&ips, count))
            .collect::<Result<_>>()?;
        profile.segments = Some(Box::new(SegmentProfile {
            k: k as u32,
            num_imported_funcs: self.msg.num_imported_funcs,
            segments,
            subpaths: r.subpaths,
            ippp: None,
        }));
        Ok(profile)
    }

    fn spell(&self, ips: &Ips, count: u64) -> Result<SegmentCount> {
        Ok(pathprof_core::ippp::spell(&self.numbering, ips, count)?)
    }
}

/// The runner's side: each batch of trace events goes to the recorder's
/// thread (which keeps up with the run: it blocks when 64 batches wait).
struct Channel(SyncSender<Vec<TraceEvent>>);

impl TraceSink for Channel {
    fn events(&mut self, events: &[TraceEvent]) {
        // A recorder that stopped (on a bad trace) has said why.
        let _ = self.0.send(events.to_vec());
    }
}

/// What the recorder counted.
struct Finished {
    /// Hashed, not ordered: a long run closes billions of segments.
    segments: HashMap<Ips, u64>,
    /// Per module function index, per edge: how often it was taken.
    edges: Vec<Vec<u64>>,
    subpaths: u64,
}

struct Recorder<'a> {
    stream: EventStream<'a>,
    segmenter: Segmenter<'a>,
    done: Finished,
    error: Option<crate::error::Error>,
}

impl<'a> Recorder<'a> {
    fn new(p: &'a Prepared, k: usize) -> Recorder<'a> {
        Recorder {
            stream: EventStream::new(&p.msg),
            segmenter: Segmenter::new(&p.numbering, k),
            done: Finished {
                segments: HashMap::new(),
                edges: edge_counters(&p.template),
                subpaths: 0,
            },
            error: None,
        }
    }

    fn take(&mut self, batch: &[TraceEvent]) {
        if self.error.is_some() {
            return;
        }
        for e in batch {
            let counter = self.done.edges.get_mut(e.func as usize);
            match counter.and_then(|f| f.get_mut(e.edge as usize)) {
                Some(c) => *c += 1,
                None => {
                    let (f, edge) = (e.func, e.edge);
                    self.error = Some(invalid!(
                        "the trace names edge {edge} of function {f}, not traced"
                    ));
                    return;
                }
            }
            if let Err(err) = self.stream.edge(e.func, e.edge) {
                self.error = Some(invalid!("{err}"));
                return;
            }
        }
        self.segment();
    }

    /// Hands the events made so far to the segmenter.
    fn segment(&mut self) {
        let events: Vec<Event> = self.stream.drain().collect();
        for event in events {
            match self.segmenter.step(event) {
                Ok(step) => {
                    self.done.subpaths += u64::from(step.subpath.is_some());
                    for ips in step.segments {
                        *self.done.segments.entry(ips).or_insert(0) += 1;
                    }
                }
                Err(e) => {
                    self.error = Some(invalid!("{e}").context("the run's execution"));
                    return;
                }
            }
        }
    }

    fn finish(mut self) -> Result<Finished> {
        if self.error.is_none() {
            self.stream.finish();
            self.segment();
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.done),
        }
    }
}

/// Zeroed edge counters for every traced function, by module index.
fn edge_counters(template: &Profile) -> Vec<Vec<u64>> {
    let n = template
        .functions
        .iter()
        .map(|f| f.func_index as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![Vec::new(); n];
    for f in &template.functions {
        out[f.func_index as usize] = vec![0; f.edges.len()];
    }
    out
}

/// `pathprof run --segments K`: records, writes the profile to `output`,
/// and returns the program's exit code.
pub fn run(
    program: &std::path::Path,
    req: crate::run_cmd::Request,
    k: usize,
) -> Result<std::process::ExitCode> {
    let name = program.display().to_string();
    let file = pathprof_profile::AtomicFile::create(&req.output)?;
    let engine = pathprof_runner::engine_without_fuel()?;
    pathprof_runner::check_imports(&engine, &req.module, req.unknown_imports, &req.preload)
        .with_context(|| name.clone())?;
    let prepared = Prepared::new(&engine, &req.module).with_context(|| name.clone())?;
    let opts = req.run_options(program);
    let invoke = req.invoke.as_deref().map(|e| (e, req.args.as_slice()));
    let rec = prepared
        .record(k, opts, invoke)
        .with_context(|| name.clone())?;
    if let Some(export) = &req.invoke {
        if !rec.results.is_empty() {
            let values: Vec<String> = rec.results.iter().map(|v| v.to_string()).collect();
            eprintln!("pathprof: {export} returned {}", values.join(" "));
        }
    }
    if let Exit::Trap(msg) = &rec.exit {
        eprintln!("pathprof: warning: {name} trapped: {msg}");
    }
    rec.profile.write_to(file)?;
    eprintln!("pathprof: profile written to {}", req.output.display());
    Ok(std::process::ExitCode::from(rec.exit.code()))
}
