//! The `intra-context` mode: Melski & Reps' intraprocedural context path
//! profiling (TR 1382, section 7). Each function's paths are Ball-Larus
//! paths of its CFG transformed so that a path that starts after a
//! backedge carries, as its context-prefix, the path that entered the
//! loop ([`pathprof_graph::intra_context`]); the plan is
//! [`pathprof_techniques::intra_context`].
//!
//! The module is planned whole, like the interprocedural modes, because
//! every function's CFG is recorded with no technique data: `collect`
//! transforms and numbers each recorded CFG again (deterministically) to
//! decode the path numbers its table counted. A function whose CFG is
//! irreducible (a backedge whose target does not dominate its source, which
//! section 7 needs) is left uninstrumented with a warning.

use crate::error::{bail, Context, Result};
use pathprof_graph::intra_context::{ContextStep, IntraContext};
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::intra_context::{
    ContextPathCount, FunctionContextPaths, IntraContextProfile,
};
use pathprof_profile::{FunctionProfile, Profile};
use pathprof_techniques::{
    ball_larus, intra_context as technique, FunctionPlan, PathTable, RawCounters,
};
use serde::Serialize;

use crate::options::Options;
use crate::recorder::{display_name, Instrumented, Recorder};
use crate::technique::{Counters, Profiler};

/// The `intra-context` technique.
pub(crate) struct IntraContextProfiler;
pub(crate) static INTRA_CONTEXT: IntraContextProfiler = IntraContextProfiler;

impl Profiler for IntraContextProfiler {
    fn name(&self) -> &'static str {
        "intra-context"
    }

    fn about(&self) -> &'static str {
        "Intraprocedural context paths (Melski & Reps section 7): a loop iteration's path with the path that entered the loop"
    }

    fn code(&self) -> u8 {
        6
    }

    fn mode(&self) -> pathprof_profile::Mode {
        pathprof_profile::Mode::IntraContext
    }

    /// Planned whole: the functions are recorded as bare CFGs.
    fn planned_whole(&self) -> bool {
        true
    }

    fn instrument_whole(&self, module: &[u8], opts: &Options) -> Result<Instrumented> {
        instrument(module, opts)
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        let mut functions = Vec::with_capacity(profile.functions.len());
        cx.each_function(profile, |f, raw| {
            let cfg = pathprof_profile::cfg_of(&f.edges, f.blocks.len());
            functions.push((f.func_index, cfg, raw));
            Ok(())
        })?;
        collect(&functions, profile)
    }
}

/// Instruments `module` for intraprocedural context profiling.
pub fn instrument(module: &[u8], opts: &Options) -> Result<Instrumented> {
    pathprof_wasm::Scanned::validated(module)?;
    let info = pathprof_wasm::analyze(module)?;
    let mut rec = Recorder::new(&info.module_hash, module, &INTRA_CONTEXT, opts)?;
    rec.keep_if_asked(&INTRA_CONTEXT, opts);
    let mut plans: Vec<Option<FunctionPlan>> = Vec::new();
    let mut budget = ball_larus::ArrayBudget::new(&opts.ball_larus);
    for f in &info.functions {
        rec.record_cfg(f.as_ref())?;
        let Ok(fcfg) = f else {
            plans.push(None);
            continue;
        };
        plans.push(Some(match IntraContext::new(&fcfg.cfg) {
            Ok(ic) => technique::plan(&ic, table_for(ic.total(), opts, &mut budget)),
            Err(e) => {
                let name = display_name(fcfg.func_index, &fcfg.name);
                rec.warn(format!("{name} left uninstrumented: {e}"));
                FunctionPlan::empty(fcfg.cfg.num_edges())
            }
        }));
    }
    rec.planned_all();
    let out = pathprof_wasm::instrument_module(
        module,
        &info,
        &Default::default(),
        &plans,
        &[],
        opts.output_check(),
        rec.identity(&[])?,
    )?;
    Ok(rec.finish(out))
}

/// An array of every path number when it fits the per-function limit,
/// else a hash table; small hash tables once the module's tables have
/// taken `array_memory_max` (as path mode's, [`ball_larus::ArrayBudget`]).
fn table_for(total: u64, opts: &Options, budget: &mut ball_larus::ArrayBudget) -> PathTable {
    let choose = |bl: &ball_larus::Options| {
        if total <= bl.array_max {
            PathTable::Array { len: total }
        } else {
            PathTable::Hash {
                capacity: bl.hash_capacity.max(2).next_power_of_two(),
            }
        }
    };
    let table = choose(&opts.ball_larus);
    match budget.refuse(table, &opts.ball_larus) {
        None => table,
        Some(again) => {
            let spilled = choose(&again);
            budget.admit(spilled);
            spilled
        }
    }
}

/// Decodes the path counters of each function (its recorded CFG, its
/// counters) into `profile`'s intra-context paths.
pub fn collect(functions: &[(u32, Cfg, RawCounters)], profile: &mut Profile) -> Result<()> {
    let mut icp = IntraContextProfile::default();
    for (func_index, cfg, raw) in functions {
        let Ok(ic) = IntraContext::new(cfg) else {
            continue; // irreducible: left uninstrumented
        };
        icp.lost = icp.lost.saturating_add(raw.lost);
        let mut paths = Vec::new();
        let mut counts = std::collections::BTreeMap::<u64, u64>::new();
        for &(n, c) in &raw.paths {
            let e = counts.entry(n).or_insert(0);
            *e = e.checked_add(c).context("a path count overflows")?;
        }
        for (number, count) in counts.into_iter().filter(|&(_, c)| c > 0) {
            let path = ic.decode(number).with_context(|| {
                format!("corrupt counters: path number {number} of function {func_index}")
            })?;
            paths.push(ContextPathCount {
                number,
                count,
                path,
            });
        }
        icp.functions.push(FunctionContextPaths {
            func_index: *func_index,
            potential: ic.total(),
            paths,
        });
    }
    profile.intra_context = Some(Box::new(icp));
    Ok(())
}

/// One counted path, rendered.
#[derive(Clone, Debug, Serialize)]
pub struct ContextRow {
    pub func_index: u32,
    pub function: String,
    pub number: u64,
    pub count: u64,
    /// Share of all path executions, in percent.
    pub percent: f64,
    /// The context-prefix: the path that entered the loop (empty for a path
    /// from the function's entry).
    pub context: String,
    /// The active-suffix: from the loop head (or the entry) to the end.
    pub active: String,
    /// `file:line` of the active-suffix's first and last block, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The profile's paths, most frequent first (ties by function, then path
/// number); with `function`, only that function's.
pub fn rows(profile: &Profile, function: Option<&str>) -> Result<Vec<ContextRow>> {
    let Some(icp) = profile.intra_context.as_deref() else {
        bail!(
            "the profile has no intra-context paths (mode {})",
            profile.mode
        );
    };
    let wanted = match function {
        Some(name) => Some(crate::report::select(profile, Some(name))?),
        None => None,
    };
    let total: u64 = icp
        .functions
        .iter()
        .flat_map(|f| &f.paths)
        .map(|p| p.count)
        .sum();
    let mut out = Vec::new();
    for fp in &icp.functions {
        if wanted
            .as_ref()
            .is_some_and(|w| w.iter().all(|f| f.func_index != fp.func_index))
        {
            continue;
        }
        let Some(f) = profile.function(fp.func_index) else {
            continue;
        };
        out.extend(fp.paths.iter().map(|p| row(f, p, total)));
    }
    out.sort_by(|a, b| (b.count, a.func_index, a.number).cmp(&(a.count, b.func_index, b.number)));
    Ok(out)
}

fn row(f: &FunctionProfile, p: &ContextPathCount, total: u64) -> ContextRow {
    let (prefix, active) = p.path.steps.split_at(p.path.active_start);
    ContextRow {
        func_index: f.func_index,
        function: f.display_name(),
        number: p.number,
        count: p.count,
        percent: crate::report::percent(p.count, total),
        context: text(f, prefix),
        active: text(f, active),
        source: source(f, active),
    }
}

/// The blocks `steps` enter, `[loop V]` where a path restarts at loop head
/// V (after its context-prefix), `[back]` where it ends at a backedge, and
/// `[exit]` or `[end]` (a dead end) where it leaves.
fn text(f: &FunctionProfile, steps: &[ContextStep]) -> String {
    let mut words: Vec<String> = Vec::new();
    for step in steps {
        match *step {
            ContextStep::Edge(e) => match f.edges.get(e.index()).map(|e| e.dst) {
                Some(Cfg::EXIT) => words.push("[exit]".into()),
                Some(dst) => words.push(dst.index().to_string()),
                None => words.push("?".into()),
            },
            ContextStep::Resume(v) => words.push(format!("[loop {}]", v.index())),
            ContextStep::End(w) if is_backedge_source(f, w) => words.push("[back]".into()),
            ContextStep::End(_) => words.push("[end]".into()),
        }
    }
    words.join(" ")
}

/// Whether a path that ends at `w` ends at a backedge (where section 7
/// ends a path) rather than at a dead end, which has no edge out.
fn is_backedge_source(f: &FunctionProfile, w: NodeId) -> bool {
    f.edges.iter().any(|e| e.src == w)
}

/// The source lines of the first and last blocks `steps` enter.
fn source(f: &FunctionProfile, steps: &[ContextStep]) -> Option<String> {
    let lines = steps.iter().filter_map(|step| {
        let node = match *step {
            ContextStep::Edge(e) => f.edges.get(e.index())?.dst,
            ContextStep::Resume(v) => v,
            ContextStep::End(_) => return None,
        };
        f.blocks.get(node.index())?.as_ref()?.source.clone()
    });
    crate::report::source_range(lines)
}

/// Text: a header with the potential and executed paths, then the rows.
pub fn render(profile: &Profile, rows: &[ContextRow], top: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(icp) = profile.intra_context.as_deref() else {
        return s;
    };
    let all = || icp.functions.iter().flat_map(|f| &f.paths);
    let executions: u64 = all().map(|p| p.count).sum();
    let in_context = all().filter(|p| p.path.active_start > 0).count();
    let potential = icp
        .functions
        .iter()
        .fold(0u64, |a, f| a.saturating_add(f.potential));
    let _ = writeln!(
        s,
        "intra-context paths: {potential} potential in {} functions, {} executed ({in_context} with a loop context), {executions} executions in {} run(s)",
        icp.functions.len(),
        all().count(),
        profile.runs
    );
    let text = rows.iter().map(|r| crate::report::ContextRowText {
        count: r.count,
        percent: r.percent,
        label: Some(&r.function),
        context: &r.context,
        active: &r.active,
        source: r.source.as_deref(),
    });
    crate::report::write_context_rows(&mut s, icp.lost, text, top);
    s
}
