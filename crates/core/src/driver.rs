//! Instrumenting a module and collecting its counters into a profile.
//!
//! The instrumented module carries a custom section, `__pathprof.meta`
//! ([`crate::meta`]), that holds what decoding needs (every function's CFG,
//! what its plan chose, the counter memory layout), so `pathprof collect` can
//! turn a saved counter memory into a profile without the original module.

use crate::error::{Context, Result};
use pathprof_graph::NodeId;
use pathprof_profile::Profile;
use pathprof_techniques::ball_larus;
use pathprof_wasm::{FunctionCfg, Unsupported};
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub use crate::meta::{Meta, META_SECTION};
pub use crate::options::{Hybrid, Options, PppOptions, Progress};
use crate::recorder::{display_name, Done, Recorder};
pub use crate::recorder::{read_meta, read_meta_with, Instrumented};
use crate::technique::{Counters, ModuleFacts, PlanCx, Planned};
pub use crate::technique::{Profiler, Technique};
pub use pathprof_profile::cfg_of;

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
pub fn instrument(module: &[u8], technique: Technique, opts: &Options) -> Result<Instrumented> {
    instrument_with(module, technique.profiler(), opts)
}

/// [`instrument`] for any technique, pathprof's own or one defined outside
/// it.
///
/// A technique planned one function at a time (path, PPP, edge, trace)
/// has each function built, planned, recorded and rewritten in turn, and
/// its CFG and plan dropped before the next one is built.
pub fn instrument_with(
    module: &[u8],
    technique: &'static dyn Profiler,
    opts: &Options,
) -> Result<Instrumented> {
    if technique.planned_whole() {
        return technique.instrument_whole(module, opts);
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
    let technique = technique.profiler();
    if technique.planned_whole() {
        // Planned and rewritten whole: the module is in memory already.
        let done = technique.instrument_whole(module, opts)?;
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
    technique: &dyn Profiler,
    opts: &Options,
) -> Result<(pathprof_wasm::Scanned<'m>, Recorder)> {
    let scanned = pathprof_wasm::Scanned::validated(module)?;
    let rec = Recorder::new(&pathprof_wasm::module_hash(module), module, technique, opts)?;
    Ok((scanned, rec))
}

/// `pathprof instrument`: `module`, read from `program` (with the open
/// file, when it was a binary module file: [`crate::input::read_module_file`]),
/// instrumented into the file `output`. The output is created first, so
/// that one that cannot be written is reported before any work, and is
/// removed on an error. Errors name `program`; returns the warnings.
pub fn instrument_to_path(
    program: &Path,
    (module, input): (Vec<u8>, Option<File>),
    technique: Technique,
    opts: &Options,
    output: &Path,
) -> Result<Vec<String>> {
    let mut file = pathprof_profile::AtomicFile::create(output)?;
    let warnings = match input {
        Some(input) => instrument_file_to_file(module, input, technique, opts, &mut file),
        None => instrument_to_file(&module, technique, opts, &mut file),
    }
    .with_context(|| program.display().to_string())?;
    file.commit()?;
    Ok(warnings)
}

/// What `pathprof instrument --timings FILE` writes (as JSON).
#[derive(Clone, Debug, serde::Serialize)]
pub struct InstrumentTimings {
    /// Reading, instrumenting and writing, in seconds.
    pub instrument_s: f64,
    /// Size of the input module and of its code section.
    pub module_bytes: usize,
    pub code_bytes: usize,
    /// Size of the module written.
    pub output_bytes: u64,
    /// The most heap live at once, from before the input was read.
    pub peak_heap_bytes: u64,
}

impl InstrumentTimings {
    /// The timings of a module of `module_bytes`, `code_bytes` of them
    /// code, instrumented into the file `output` in `elapsed`, with at most
    /// `peak_heap_bytes` of heap live at once (the caller measures it).
    pub fn of(
        elapsed: std::time::Duration,
        (module_bytes, code_bytes): (usize, usize),
        output: &Path,
        peak_heap_bytes: u64,
    ) -> Result<Self> {
        Ok(InstrumentTimings {
            instrument_s: elapsed.as_secs_f64(),
            module_bytes,
            code_bytes,
            output_bytes: std::fs::metadata(output)
                .with_context(|| output.display().to_string())?
                .len(),
            peak_heap_bytes,
        })
    }

    /// Pretty JSON, with a final newline.
    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
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
    if technique.profiler().planned_whole() {
        drop(file);
        return instrument_to_file(&module, technique, opts, out);
    }
    let technique = technique.profiler();
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
    technique: &'static dyn Profiler,
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
    technique: &'static dyn Profiler,
    opts: &Options,
    to: Option<FileOutput>,
) -> Result<Done> {
    let mut facts = technique.facts(scanned, opts);
    if technique.needs_call_graph() {
        let info = pathprof_wasm::analyze(scanned.bytes())?;
        let graph = pathprof_wasm::callgraph::CallGraph::new(scanned.bytes(), &info)?;
        facts.call_graph = Some(std::sync::Arc::new(graph));
    }
    // Kept only for a module returned in memory, whose caller collects.
    let keep = opts.keep_meta && to.is_none();
    if keep {
        rec.keep_template(technique);
    }
    let mut inst = pathprof_wasm::Instrumenter::new(scanned, facts.trace)?;
    let module_plan = technique.module_plan(&facts);
    if module_plan != pathprof_techniques::ModulePlan::default() {
        inst.set_module_plan(&module_plan);
    }
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
                let planned = plan_one(&cfg, technique, (&facts, keep), opts, &ahead)?;
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
            if let Some(again) = budget.refuse(planned.plan.paths, &opts.ball_larus) {
                *planned = plan_one(cfg, technique, (&facts, keep), opts, &again)?;
            }
            rec.keep(cfg, &planned.record.buf, planned.template.take())?;
        }
        let slot = slot.as_ref().map(|(cfg, p)| (cfg, p));
        rec.record(slot.map(|(cfg, p)| (cfg, &p.record.buf[..])))?;
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

/// The plan of a modelled function, with the function named in an error;
/// `bl` replaces `opts.ball_larus` (for the array limit it plans with).
fn plan_one(
    cfg: &FunctionCfg,
    technique: &dyn Profiler,
    (facts, template): (&ModuleFacts, bool),
    opts: &Options,
    bl: &ball_larus::Options,
) -> Result<Planned> {
    let weights = opts.weights.as_ref().and_then(|w| weights_of(w, cfg));
    let cx = PlanCx {
        opts,
        ball_larus: bl,
        weights: weights.as_deref(),
        facts,
        template,
    };
    technique
        .plan(cfg, &cx)
        .with_context(|| format!("function {}", display_name(cfg.func_index, &cfg.name)))
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
    // Left out of a sparse profile: it never ran, every edge weighs 0.
    if w.unrun.binary_search(&f.func_index).is_ok() {
        return Some(vec![0; f.cfg.num_edges()]);
    }
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
    filled(meta, meta.template.clone(), counters, abrupt)
}

/// [`collect`] of metadata that is not needed afterwards: its template
/// becomes the profile instead of a copy of it (on a large module, the
/// template is most of `collect`'s memory).
pub fn collect_owned(
    mut meta: Meta,
    counters: &[u8],
    abrupt: Option<&[(u32, u32)]>,
) -> Result<Profile> {
    let empty = Profile::new(String::new(), meta.template.mode);
    let template = std::mem::replace(&mut meta.template, empty);
    filled(&meta, template, counters, abrupt)
}

/// `pathprof collect`: the profile of the counter memory saved in the file
/// `counters` by a run of the instrumented module in the file
/// `instrumented`, sparse if asked ([`collect_sparse`]). Counters of
/// another module are refused before any is decoded (they would decode into
/// garbage, or fail with a reason that names neither file), with both files
/// named ([`Meta::check_counters`]).
pub fn collect_files(instrumented: &Path, counters: &Path, sparse: bool) -> Result<Profile> {
    let read = |p: &Path| std::fs::read(p).with_context(|| p.display().to_string());
    let (module, memory) = (read(instrumented)?, read(counters)?);
    let (counters_name, module_name) = (
        counters.display().to_string(),
        instrumented.display().to_string(),
    );
    let check = |meta: &Meta| -> Result<()> {
        Ok(meta.check_counters(&memory, &counters_name, &module_name)?)
    };
    if sparse {
        return collect_sparse(&module, &[], &memory, None, check)
            .with_context(|| module_name.clone());
    }
    let meta = read_meta(&module).with_context(|| module_name.clone())?;
    check(&meta)?;
    collect_owned(meta, &memory, None).with_context(|| counters_name.clone())
}

/// `template` (`meta`'s) filled with the counters.
fn filled(
    meta: &Meta,
    mut profile: Profile,
    counters: &[u8],
    abrupt: Option<&[(u32, u32)]>,
) -> Result<Profile> {
    profile.runs = 1;
    profile.abrupt_runs = u64::from(abrupt.is_some());
    let counters = Counters {
        meta,
        memory: counters,
        abrupt: abrupt.map(|frames| abrupt_blocks(meta, frames)),
    };
    meta.technique.decode(&counters, &mut profile)?;
    Ok(profile)
}

/// A sparse profile of one run ([`Profile::make_sparse`]): the functions
/// whose counters are not all zero, and the others listed by index. Only
/// those functions' templates are built from the metadata of
/// `instrumented` (the others' numbering, most of a large module's
/// collecting, is never rebuilt). `check` is given the metadata before any
/// counter is read (for [`Meta::check_counters`], whose error names the
/// files). Refused for segment profiles.
pub fn collect_sparse(
    instrumented: &[u8],
    foreign: &[&'static dyn Profiler],
    counters: &[u8],
    abrupt: Option<&[(u32, u32)]>,
    check: impl FnOnce(&Meta) -> Result<()>,
) -> Result<Profile> {
    let section = crate::recorder::meta_section(instrumented)?;
    let (mut meta, records) = crate::meta::index_with(&section, foreign)?;
    let mode = meta.technique.mode();
    if !mode.may_be_sparse() {
        crate::error::bail!("a {mode} profile cannot be sparse: its segments are the module's");
    }
    if !builds_lazily(mode) {
        // Which functions a path runs in is known once it is decoded.
        records.build_into(&mut meta, |_| true)?;
        crate::recorder::read_module_sections(&mut meta, instrumented)?;
        check(&meta)?;
        return sparse(collect_owned(meta, counters, abrupt)?);
    }
    check(&meta)?;
    let in_abrupt: std::collections::HashSet<u32> =
        abrupt.into_iter().flatten().map(|&(f, _)| f).collect();
    let ran = meta
        .layout
        .functions
        .iter()
        .map(|fl| {
            Ok(in_abrupt.contains(&fl.func_index)
                || !pathprof_wasm::read_counters(fl, counters)?.is_zero())
        })
        .collect::<Result<Vec<bool>>>()?;
    records.build_into(&mut meta, |i| ran[i])?;
    // A function entered by an abrupt run may still have counted nothing.
    sparse(collect_owned(meta, counters, abrupt)?)
}

/// Whether [`collect_sparse`] builds only the templates of the functions
/// whose counters are not all zero: where each function's counts are its
/// own (an interprocedural path counted in one function's table runs in
/// others).
pub fn builds_lazily(mode: pathprof_profile::Mode) -> bool {
    use pathprof_profile::Mode as M;
    matches!(mode, M::Path | M::Edge | M::Ppp | M::IntraContext)
}

/// `profile` without the functions that counted nothing.
pub fn sparse(mut profile: Profile) -> Result<Profile> {
    profile
        .make_sparse()
        .map_err(|e| crate::error::invalid!("{e}"))?;
    Ok(profile)
}

/// Puts back into a sparse `profile` the functions it left out, from the
/// metadata of `instrumented` (the module it was measured on), building
/// only their templates: for the readers that need every function, such
/// as a coverage export's lines that never ran.
pub fn fill_unrun(profile: &mut Profile, instrumented: &[u8]) -> Result<()> {
    if !profile.is_sparse() {
        return Ok(());
    }
    let section = crate::recorder::meta_section(instrumented)?;
    let (mut meta, records) = crate::meta::index_with(&section, &[])?;
    if meta.template.module_hash != profile.module_hash {
        crate::error::bail!(
            "the profile is of another module ({:.12}, this one is {:.12})",
            profile.module_hash,
            meta.template.module_hash
        );
    }
    let wanted: std::collections::HashSet<u32> = profile.unrun.iter().copied().collect();
    let positions: Vec<bool> = meta
        .layout
        .functions
        .iter()
        .map(|fl| wanted.contains(&fl.func_index))
        .collect();
    records.build_into(&mut meta, |i| positions[i])?;
    meta.template.unrun.clear();
    profile
        .fill_unrun(meta.template)
        .map_err(|e| crate::error::invalid!("{e}"))
}
