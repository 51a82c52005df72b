//! Instrumenting a module and collecting its counters into a profile.
//!
//! The instrumented module carries a custom section, `__pathprof.meta`
//! ([`crate::meta`]), that holds what decoding needs (every function's CFG,
//! what its plan chose, the counter memory layout), so `pathprof collect` can
//! turn a saved counter memory into a profile without the original module.

use crate::error::{bail, Context, Result};
use pathprof_graph::NodeId;
use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_techniques::{ball_larus, edge, ppp, trace, FunctionPlan};
use pathprof_wasm::{FunctionCfg, Unsupported};
use std::fs::File;
use std::io::Write;

use crate::meta::PlanRecord;
pub use crate::meta::{Meta, META_SECTION};
pub use crate::options::{Hybrid, Options, PppOptions, Progress};
use crate::recorder::{display_name, Done, Recorder};
pub use crate::recorder::{read_meta, Instrumented};
pub use crate::technique::Technique;
pub use pathprof_profile::cfg_of;

/// [`instrument`] for the techniques planned whole.
fn instrument_whole(module: &[u8], technique: Technique, opts: &Options) -> Result<Instrumented> {
    match technique {
        Technique::IntraContext => crate::intra_context::instrument(module, opts),
        Technique::Ippp => crate::ippp::instrument(module, opts),
        _ => crate::interproc::instrument(module, technique, opts),
    }
}

/// The block each frame of an abrupt exit was executing.
fn abrupt_blocks(meta: &Meta, frames: &[(u32, u32)]) -> Vec<(u32, NodeId)> {
    frames
        .iter()
        .filter_map(|&(func, offset)| {
            let map = meta.code_map.iter().find(|m| m.func_index == func)?;
            Some((func, map.block_at(offset)?))
        })
        .collect()
}

/// Instruments `module` (validated here) for `technique`.
///
/// Path and PPP plans need nothing of other functions, so each function is
/// built, planned, recorded and rewritten in turn, and its CFG and plan are
/// dropped before the next one is built. Edge plans ask whether any
/// function of the module throws or catches, and trace plans add an import
/// before the defined functions: both want every CFG first.
pub fn instrument(module: &[u8], technique: Technique, opts: &Options) -> Result<Instrumented> {
    if technique.planned_whole() {
        return instrument_whole(module, technique, opts);
    }
    let (scanned, rec) = validated(module, technique, opts)?;
    match instrument_to(&scanned, rec, technique, opts, None)? {
        Done::Memory(out) => Ok(out),
        Done::Written { .. } => unreachable!("no file was given"),
    }
}

/// [`instrument`] into `out`, a file renamed to its final path when the
/// caller commits it, so that an error leaves no output. The new bodies and
/// the metadata records go to scratch files beside it as they are produced
/// and the module is written piece by piece: the output is never whole in
/// memory. Returns the warnings.
pub fn instrument_to_file(
    module: &[u8],
    technique: Technique,
    opts: &Options,
    out: &mut pathprof_profile::AtomicFile,
) -> Result<Vec<String>> {
    if technique.planned_whole() {
        // Planned and rewritten whole: the module is in memory already.
        let done = instrument_whole(module, technique, opts)?;
        out.file().write_all(&done.bytes)?;
        return Ok(done.warnings);
    }
    let (scanned, rec) = validated(module, technique, opts)?;
    written(&scanned, rec, technique, opts, out, None)
}

/// `module` validated and scanned, and the recorder of its metadata
/// (which hashes the module and reads its source lines).
fn validated<'m>(
    module: &'m [u8],
    technique: Technique,
    opts: &Options,
) -> Result<(pathprof_wasm::Scanned<'m>, Recorder)> {
    let scanned = pathprof_wasm::Scanned::validated(module)?;
    let rec = Recorder::new(&pathprof_wasm::module_hash(module), module, technique, opts)?;
    Ok((scanned, rec))
}

/// [`instrument_to_file`] of a module read from `file`, which then also
/// keeps what the instrumenter only copies: the contents of the custom
/// sections after the code (most of a module built with `-g`) are read
/// once, for the module's hash and source lines, and copied from `file`
/// into the output at the end (`pathprof_wasm::hollow`), never held
/// meanwhile.
pub fn instrument_file_to_file(
    module: Vec<u8>,
    file: File,
    technique: Technique,
    opts: &Options,
    out: &mut pathprof_profile::AtomicFile,
) -> Result<Vec<String>> {
    if technique.planned_whole() {
        drop(file);
        return instrument_to_file(&module, technique, opts, out);
    }
    // Validated whole, so that an invalid module is reported as from the
    // other entry points; the hollowed module is not validated again.
    let (scanned, rec) = validated(&module, technique, opts)?;
    let validators = scanned.into_validators();
    let hollowed = pathprof_wasm::hollow(module, file)?;
    let scanned = pathprof_wasm::Scanned::with_validators(&hollowed.bytes, validators)?;
    written(&scanned, rec, technique, opts, out, Some(&hollowed.holes))
}

/// [`instrument_to`] into `out`.
fn written(
    scanned: &pathprof_wasm::Scanned,
    rec: Recorder,
    technique: Technique,
    opts: &Options,
    out: &mut pathprof_profile::AtomicFile,
    holes: Option<&pathprof_wasm::Holes>,
) -> Result<Vec<String>> {
    let to = FileOutput {
        spill: out.scratch()?,
        meta_spill: out.scratch()?,
        out: out.file(),
        holes,
    };
    match instrument_to(scanned, rec, technique, opts, Some(to))? {
        Done::Written { warnings } => Ok(warnings),
        Done::Memory(_) => unreachable!("a file was given"),
    }
}

/// Where [`instrument_to_file`] writes the module, and its code and
/// metadata records meanwhile; where the input's hollowed custom sections
/// are.
struct FileOutput<'f> {
    spill: File,
    meta_spill: File,
    out: &'f mut File,
    holes: Option<&'f pathprof_wasm::Holes>,
}

/// [`instrument`] one function at a time: each is built, planned (ahead,
/// on worker threads, for a large module), recorded and rewritten, and only
/// its new body and block marks are kept.
fn instrument_to(
    scanned: &pathprof_wasm::Scanned,
    mut rec: Recorder,
    technique: Technique,
    opts: &Options,
    to: Option<FileOutput>,
) -> Result<Done> {
    // Edge profiling gives the blocks where an activation may be unwound a
    // virtual edge to EXIT (see `edge::plan`), in a module that may throw,
    // which must be known before the first function.
    let exceptions = technique == Technique::Edge && scanned.may_throw_or_catch();
    let trace = (technique == Technique::Trace).then_some(opts.trace_mode);
    let mut inst = pathprof_wasm::Instrumenter::new(scanned, trace)?;
    inst.set_peel_max_bytes(opts.peel_max_bytes);
    inst.set_output_check(opts.output_check());
    let out = to.map(|to| {
        inst.spill_code_to(to.spill);
        rec.spill_to(to.meta_spill);
        (to.out, to.holes)
    });
    // Built and planned ahead on worker threads and on this one (when the
    // module is large enough), recorded and rewritten on this thread in
    // function order, where the array budget is given out.
    let ahead = opts.ball_larus.planning();
    let mut budget = ball_larus::ArrayBudget::new(&opts.ball_larus);
    let build_and_plan = |i| -> Result<Result<(FunctionCfg, Planned), Unsupported>> {
        Ok(match scanned.build(i)? {
            Ok(cfg) => {
                let planned = plan_one(&cfg, technique, exceptions, opts, &ahead)?;
                Ok((cfg, planned))
            }
            Err(u) => Err(u),
        })
    };
    let sizes = scanned.body_sizes();
    let (total, mut done) = (sizes.len() as u64, 0);
    pathprof_wasm::par::pipeline(&sizes, build_and_plan, |slot| {
        done += 1;
        opts.progress.report(done, total);
        if let Ok((cfg, planned)) = slot {
            if !budget.admit(planned.plan.paths) {
                *planned = plan_one(cfg, technique, exceptions, opts, &opts.ball_larus)?;
            }
        }
        let slot = slot.as_ref().map(|(cfg, p)| (cfg, p));
        rec.record(slot.map(|(cfg, p)| (cfg, p.record())))?;
        inst.function(slot.ok().map(|(cfg, p)| (cfg, &p.plan)))?;
        Ok(())
    })?;
    rec.planned_all();
    inst.set_identity(rec.identity(&[])?);
    match out {
        Some((out, holes)) => rec.finish_into(inst.finish_into(&[], out, holes)?, out),
        None => Ok(Done::Memory(rec.finish(inst.finish(&[])?))),
    }
}

/// What a function's metadata record needs of its planning, by technique.
enum Chosen {
    /// The cut vertices of the truncated DAG (the cuts may depend on the
    /// weights, which decoding does not have).
    Path(Vec<NodeId>),
    Ppp(ppp::PppInfo),
    Edge(edge::Chords),
    Trace,
}

/// A function's plan and what its metadata record needs of the planning.
struct Planned {
    plan: FunctionPlan,
    chosen: Chosen,
}

impl Planned {
    fn record(&self) -> PlanRecord<'_> {
        match &self.chosen {
            Chosen::Path(cuts) => PlanRecord::Path(cuts),
            Chosen::Ppp(info) => PlanRecord::Ppp(info),
            Chosen::Edge(chords) => PlanRecord::Edge(chords),
            Chosen::Trace => PlanRecord::Trace,
        }
    }
}

/// The plan of a modelled function, with the function named in an error;
/// `bl` replaces `opts.ball_larus` (for the array limit it plans with).
fn plan_one(
    cfg: &FunctionCfg,
    technique: Technique,
    exceptions: bool,
    opts: &Options,
    bl: &ball_larus::Options,
) -> Result<Planned> {
    let weights = opts.weights.as_ref().and_then(|w| weights_of(w, cfg));
    plan_function(cfg, technique, weights.as_deref(), exceptions, opts, bl)
        .with_context(|| format!("function {}", display_name(cfg.func_index, &cfg.name)))
}

fn plan_function(
    f: &FunctionCfg,
    technique: Technique,
    weights: Option<&[u64]>,
    exceptions: bool,
    opts: &Options,
    bl: &ball_larus::Options,
) -> Result<Planned> {
    Ok(match technique {
        Technique::Path => {
            let (plan, cuts) = ball_larus::plan_only(&f.cfg, weights, bl)?;
            Planned {
                plan,
                chosen: Chosen::Path(cuts),
            }
        }
        Technique::Ppp => {
            let chosen = &opts.ppp.interesting;
            let interesting = chosen.paths.get(&f.func_index).map_or(&[][..], |v| &v[..]);
            let ppp_opts = ppp::Options {
                ball_larus: bl.clone(),
                policy: opts.ppp.policy,
                force_ball_larus: opts.ppp.force_ball_larus,
            };
            let mut p = ppp::plan(&f.cfg, weights, &ppp_opts, interesting)?;
            p.info.tested_self_loops = chosen
                .self_loops
                .get(&f.func_index)
                .cloned()
                .unwrap_or_default();
            Planned {
                plan: p.plan,
                chosen: Chosen::Ppp(p.info),
            }
        }
        Technique::Edge => {
            let (plan, chords) = edge::plan(&f.cfg, weights, &unwinding(f, exceptions));
            Planned {
                plan,
                chosen: Chosen::Edge(chords),
            }
        }
        Technique::Trace => Planned {
            plan: trace::plan(&f.cfg),
            chosen: Chosen::Trace,
        },
        Technique::Context | Technique::Piecewise | Technique::IntraContext | Technique::Ippp => {
            bail!("this mode plans the module whole (crate::interproc, crate::intra_context)")
        }
    })
}

/// The blocks of `f` an exception may unwind from, in a module that may
/// throw: those with a call that returns to them (`edge::plan`).
pub fn unwinding(f: &FunctionCfg, exceptions: bool) -> Vec<NodeId> {
    if !exceptions {
        return Vec::new();
    }
    f.calls
        .iter()
        .filter(|c| !c.tail)
        .map(|c| c.block)
        .collect()
}

/// Per-CFG-edge weights for `f` from a prior profile, if it has the function.
fn weights_of(w: &Profile, f: &FunctionCfg) -> Option<Vec<u64>> {
    let fp = w.function(f.func_index)?;
    if fp.edges.len() != f.cfg.num_edges() {
        return None;
    }
    Some(crate::report::edge_counts(fp))
}

/// Fills the template with the counters of one run. `abrupt` is `None` for
/// a run that returned, else the wasm frames live when it ended
/// (`(function index, byte offset in the instrumented module)`, innermost
/// first, as the runner reports them).
pub fn collect(meta: &Meta, counters: &[u8], abrupt: Option<&[(u32, u32)]>) -> Result<Profile> {
    let mut profile = meta.template.clone();
    profile.runs = 1;
    profile.abrupt_runs = u64::from(abrupt.is_some());
    let abrupt = abrupt.map(|frames| abrupt_blocks(meta, frames));
    let (mut raws, mut contexts, mut ippp) = (Vec::new(), Vec::new(), Vec::new());
    for (f, fl) in profile.functions.iter_mut().zip(&meta.layout.functions) {
        if f.func_index != fl.func_index {
            bail!("corrupt __pathprof.meta section: layout and functions disagree");
        }
        let raw = pathprof_wasm::read_counters(fl, counters)?;
        let name = f.display_name();
        match &mut f.data {
            FunctionData::Path {
                numbered,
                counts,
                ppp: None,
            } => {
                *counts = ball_larus::decode(numbered, &raw)
                    .with_context(|| format!("function {name}"))?;
            }
            FunctionData::Path {
                numbered,
                counts,
                ppp: Some(info),
            } => {
                *counts = ppp::decode(numbered, info, &raw)
                    .with_context(|| format!("function {name}"))?;
            }
            FunctionData::Edge {
                chords,
                chord_counts,
                edge_counts,
            } => {
                if chords.chords.is_empty() && chord_counts.is_empty() {
                    // Trace plan: nothing counted in memory; interprocedural
                    // and intra-context plans: paths decoded below.
                    if meta.interproc.is_some() {
                        raws.push(raw);
                    } else if meta.ippp.is_some() {
                        ippp.push((f.func_index, raw));
                    } else if profile.mode == Mode::IntraContext {
                        let cfg = cfg_of(&f.edges, f.blocks.len());
                        contexts.push((f.func_index, cfg, raw));
                    }
                    continue;
                }
                let cfg = cfg_of(&f.edges, f.blocks.len());
                let ends: Vec<(NodeId, u64)> = abrupt
                    .as_ref()
                    .map(|frames| {
                        frames
                            .iter()
                            .filter(|(fi, _)| *fi == f.func_index)
                            .map(|&(_, b)| (b, 1))
                            .collect()
                    })
                    .unwrap_or_default();
                *chord_counts = raw.slots.clone();
                *edge_counts = edge::decode(&cfg, chords, &raw.slots, &ends)
                    .with_context(|| format!("function {name}"))?;
            }
        }
    }
    if let Some(ipm) = &meta.interproc {
        crate::interproc::collect(ipm, &raws, &mut profile)?;
    }
    if profile.mode == Mode::IntraContext {
        crate::intra_context::collect(&contexts, &mut profile)?;
    }
    if let Some(m) = &meta.ippp {
        crate::ippp::collect(m, &ippp, &mut profile)?;
    }
    Ok(profile)
}
