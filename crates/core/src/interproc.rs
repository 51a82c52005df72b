//! The `context` and `piecewise` modes: Melski & Reps' interprocedural path
//! profiling (TR 1382) on a whole module. Unlike the intraprocedural
//! techniques, no function can be planned before the module's supergraph is
//! numbered, so the module is analysed whole, then every function planned
//! (`pathprof_techniques::interproc`) and rewritten in one pass.
//!
//! The instrumented module carries, besides `__pathprof.meta` (every
//! function's CFG, as for the other modes), the section
//! [`INTERPROC_SECTION`]: the supergraph and the call sites cut by the
//! hybrid policy, from which `collect` numbers it again (the numbering is
//! deterministic) to decode the path numbers the run counted.

use crate::error::{bail, Context, Result};
use pathprof_graph::interproc::{hybrid, CallSiteId, Callee, FuncId, Interproc, Mode, Supergraph};
use pathprof_graph::{EdgeId, GraphError};
use pathprof_profile::interproc::{InterprocPath, SiteInfo};
use pathprof_profile::Profile;
use pathprof_techniques::{interproc as technique, FunctionPlan, PathTable, RawCounters};
use pathprof_wasm::supergraph::ModuleSupergraph;
use pathprof_wasm::EdgeKind;
use serde::Serialize;

use crate::meta::interproc::cut_reason;
pub use crate::meta::interproc::{read_meta, InterprocMeta, INTERPROC_SECTION};
pub use crate::options::Hybrid;
use crate::options::Options;
use crate::recorder::{instrument_whole, Instrumented};
use crate::technique::{Counters, Profiler};

/// The `context` and `piecewise` techniques: the graph mode they number
/// the supergraph for.
pub(crate) struct Interprocedural(Mode);
pub(crate) static CONTEXT: Interprocedural = Interprocedural(Mode::Context);
pub(crate) static PIECEWISE: Interprocedural = Interprocedural(Mode::Piecewise);

impl Profiler for Interprocedural {
    fn name(&self) -> &'static str {
        match self.0 {
            Mode::Context => "context",
            Mode::Piecewise => "piecewise",
        }
    }

    fn about(&self) -> &'static str {
        match self.0 {
            Mode::Context => "Interprocedural context paths (Melski & Reps): paths across calls, with the context they were reached in",
            Mode::Piecewise => "Interprocedural piecewise paths (Melski & Reps): paths across calls and returns that partition the run",
        }
    }

    fn code(&self) -> u8 {
        match self.0 {
            Mode::Context => 4,
            Mode::Piecewise => 5,
        }
    }

    fn mode(&self) -> pathprof_profile::Mode {
        match self.0 {
            Mode::Context => pathprof_profile::Mode::Context,
            Mode::Piecewise => pathprof_profile::Mode::Piecewise,
        }
    }

    fn planned_whole(&self) -> bool {
        true
    }

    fn instrument_whole(&self, module: &[u8], opts: &Options) -> Result<Instrumented> {
        instrument(module, self, opts)
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        let Some(meta) = &cx.meta.interproc else {
            bail!("corrupt module: no {INTERPROC_SECTION} section");
        };
        let mut raws = Vec::with_capacity(profile.functions.len());
        cx.each_function(profile, |_, raw| {
            raws.push(raw);
            Ok(())
        })?;
        collect(meta, &raws, profile)
    }
}

/// Instruments `module` for context or piecewise profiling.
fn instrument(module: &[u8], profiler: &Interprocedural, opts: &Options) -> Result<Instrumented> {
    let mode = profiler.0;
    pathprof_wasm::Scanned::validated(module)?;
    let Numbered {
        info,
        call_index,
        tail_index,
        case_slots,
        tail_slots,
        opaque_calls,
        exceptions,
        ip,
        meta,
    } = numbered(module, mode, opts, true)?;
    // Planned once with arrays; the functions that count then get the
    // table the whole module can afford.
    let array = PathTable::Array { len: ip.total() };
    let mut plans: Vec<Option<FunctionPlan>> = info
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.as_ref().ok().map(|fcfg| {
                let sites = technique::WasmSites {
                    calls: &call_index[i],
                    tails: &tail_index[i],
                    throws: &exceptions[i].0,
                    catches: &exceptions[i].1,
                    case_slots: &case_slots[i],
                    tail_slots: &tail_slots[i],
                    opaque: &opaque_calls[i],
                };
                technique::plan(&ip, FuncId::new(i), &sites, array)
                    .unwrap_or_else(|| FunctionPlan::empty(fcfg.cfg.num_edges()))
            })
        })
        .collect();
    let counting = plans
        .iter()
        .flatten()
        .filter(|p| p.paths != PathTable::None);
    let table = table_for(ip.total(), counting.count() as u64, opts);
    for plan in plans.iter_mut().flatten() {
        if plan.paths != PathTable::None {
            plan.paths = table;
        }
    }
    let section = serde_json::to_vec(&meta)?;
    let mut inst = instrument_whole(
        module,
        &info,
        profiler,
        opts,
        (&technique::module_plan(), &plans),
        (INTERPROC_SECTION, &section),
    )?;
    // `run` collects with the numbering it planned with.
    inst.keep_also(|kept| kept.interproc = Some(meta.with_numbering(ip)));
    Ok(inst)
}

/// A module analysed and numbered.
struct Numbered {
    info: pathprof_wasm::ModuleInfo,
    /// Per defined function, per supergraph call: its wasm call-site index.
    call_index: Vec<Vec<u32>>,
    /// Per defined function, per supergraph tail call: its wasm call-site
    /// index.
    tail_index: Vec<Vec<u32>>,
    /// Per defined function, per supergraph call: the table slots that
    /// select it, if it is a case of a `call_indirect`.
    case_slots: Vec<Vec<Vec<u32>>>,
    /// Per defined function, per supergraph tail call: the slots of its
    /// profiled callees, if its table holds opaque ones too.
    tail_slots: Vec<Vec<Option<Vec<u32>>>>,
    /// Per defined function: its wasm call sites that may enter opaque
    /// code.
    opaque_calls: Vec<Vec<u32>>,
    /// Per defined function: its throw edges and its catch edges.
    exceptions: Vec<(Vec<EdgeId>, Vec<EdgeId>)>,
    ip: Interproc,
    meta: InterprocMeta,
}

/// Analyses `module` and numbers its supergraph for `mode`; with
/// `instrumenting`, refuses what the instrumentation cannot do yet.
fn numbered(module: &[u8], mode: Mode, opts: &Options, instrumenting: bool) -> Result<Numbered> {
    let info = pathprof_wasm::analyze(module)?;
    // A prior profile says which functions run: only they count towards
    // an indirect call's cases (the report's "a profile shows few targets").
    let live = match &opts.weights {
        Some(w) if w.module_hash != pathprof_wasm::module_hash(module) => {
            bail!("the weights profile is of another module")
        }
        Some(w) => Some(w.ran()),
        None => None,
    };
    let mut msg = ModuleSupergraph::with_live_cases(module, &info, opts.max_cases, live.as_ref())?;
    if instrumenting {
        refuse_unsupported(&msg, &info)?;
    }
    let exceptions = msg.edge_kinds.iter().map(|k| exception_edges(k)).collect();
    let truncate_above = opts.ball_larus.truncate_above;
    let sites = site_offsets(&msg, &info);
    let policy = match &opts.hybrid {
        Hybrid::Cut(list) => Hybrid::Sites(resolve_cuts(list, &sites, &msg, &info)?),
        other => other.clone(),
    };
    let (ip, cuts) = number(&mut msg.supergraph, mode, &policy, truncate_above)?;
    let meta = InterprocMeta {
        mode,
        sites,
        supergraph: msg.supergraph,
        cuts,
        num_imported_funcs: msg.num_imported_funcs,
        numbered: Default::default(),
    };
    Ok(Numbered {
        info,
        call_index: msg.call_index,
        tail_index: msg.tail_index,
        case_slots: msg.case_slots,
        tail_slots: msg.tail_slots,
        opaque_calls: msg.opaque_calls,
        exceptions,
        ip,
        meta,
    })
}

/// The throw edges and the catch edges (not into EXIT) of a function whose
/// edges are of `kinds`.
pub(crate) fn exception_edges(kinds: &[EdgeKind]) -> (Vec<EdgeId>, Vec<EdgeId>) {
    let of = |want: &dyn Fn(EdgeKind) -> bool| {
        (0..kinds.len())
            .filter(|&e| want(kinds[e]))
            .map(EdgeId::new)
            .collect()
    };
    (
        of(&|k| matches!(k, EdgeKind::Throw | EdgeKind::ThrowRef)),
        of(&|k| k == EdgeKind::Catch),
    )
}

/// Refuses what the instrumentation does not handle
/// ([`technique::Unsupported`]): a tail call that may enter a profiled
/// function or an opaque one (a profiled callee starts a path afresh, an
/// opaque one returns for the caller: the call must know which) where no
/// static table tells them apart.
pub(crate) fn refuse_unsupported(
    msg: &ModuleSupergraph,
    info: &pathprof_wasm::ModuleInfo,
) -> Result<()> {
    let described = |f: usize| {
        let fcfg = info.functions[f].as_ref().expect("a modelled function");
        let name = fcfg.name.clone().unwrap_or_else(|| "?".into());
        (fcfg, info.num_imported_funcs + f as u32, name)
    };
    if let Some(&(f, k)) = msg.mixed_tail_calls.first() {
        let (fcfg, function, name) = described(f.index());
        let offset = fcfg.calls[k as usize].offset;
        return Err(technique::Unsupported::MixedTailCall {
            function,
            name,
            offset,
        }
        .into());
    }
    Ok(())
}

/// Numbers `sg` under the hybrid policy; returns the numbering and the
/// sites the policy cut. When even cutting every call site leaves more
/// paths than 64 bits can number (or than `budget:N`), the functions with more than
/// `truncate_above` acyclic paths of their own are truncated first
/// ([`hybrid::truncation`]), which `sg` then records.
pub fn number(
    sg: &mut Supergraph,
    mode: Mode,
    policy: &Hybrid,
    truncate_above: u64,
) -> Result<(Interproc, Vec<CallSiteId>)> {
    match number_as_is(sg, mode, policy) {
        Err(e) if too_many(&e) => {
            let mut truncated = false;
            for f in &mut sg.functions {
                f.truncated = hybrid::truncation(&f.cfg, truncate_above)?;
                truncated |= !f.truncated.is_empty();
            }
            if !truncated {
                return Err(e);
            }
            number_as_is(sg, mode, policy).context(format!(
                "with the functions of more than {truncate_above} acyclic paths truncated (--truncate-above)"
            ))
        }
        done => done,
    }
}

/// Whether cutting call sites could not make the paths few enough: more
/// than 64 bits number, or than a `budget:N` allows.
fn too_many(e: &crate::error::Error) -> bool {
    matches!(
        e.root(),
        crate::error::Error::Graph(
            GraphError::PathCountOverflow { .. } | GraphError::BudgetTooSmall { .. }
        )
    )
}

fn number_as_is(
    sg: &Supergraph,
    mode: Mode,
    policy: &Hybrid,
) -> Result<(Interproc, Vec<CallSiteId>)> {
    // Cuts `first`, then the largest others until at most `bound` paths.
    let within = |first: &[CallSiteId], bound| -> Result<(Interproc, Vec<CallSiteId>)> {
        let ip = hybrid::build_within_from(sg, mode, first, bound)?;
        let cuts = (0..ip.callees.len())
            .map(CallSiteId::new)
            .filter(|&s| cut_reason(&ip, s).as_deref() == Some("hybrid"))
            .collect();
        Ok((ip, cuts))
    };
    // These cuts, and the largest others if the paths overflow 64 bits.
    let at_least = |cuts: &[CallSiteId]| match Interproc::build_with_cuts(sg, mode, cuts) {
        Ok(ip) => Ok((ip, cuts.to_vec())),
        Err(GraphError::PathCountOverflow { .. }) => within(cuts, u64::MAX),
        Err(e) => Err(e.into()),
    };
    match policy {
        Hybrid::All => at_least(&[]),
        Hybrid::Budget(bound) => within(&[], *bound).context(format!("--hybrid budget:{bound}")),
        Hybrid::Leaf => {
            let cuts = non_leaf_sites(sg);
            Ok((Interproc::build_with_cuts(sg, mode, &cuts)?, cuts))
        }
        Hybrid::Sites(cuts) => at_least(cuts),
        Hybrid::Cut(_) => unreachable!("resolved to Hybrid::Sites by `numbered`"),
    }
}

/// The call sites `--hybrid cut:...` names: a module byte offset (`0x1a2`)
/// names the call there, anything else a callee (by name or function
/// index), all of whose call sites are cut. An entry that names nothing is
/// an error.
fn resolve_cuts(
    list: &[String],
    sites: &[(u32, u32)],
    msg: &ModuleSupergraph,
    info: &pathprof_wasm::ModuleInfo,
) -> Result<Vec<CallSiteId>> {
    // A direct call's callee, or a case's (so that `cut:F` cuts the calls
    // to F through an indirect call split into cases too).
    let callee_of = |s: usize| -> Option<u32> {
        let (f, k) = msg.site(s);
        match msg.supergraph.functions[f.index()].calls[k].callee {
            Callee::Direct(q) => Some(msg.num_imported_funcs + q.index() as u32),
            Callee::Indirect(_) => None,
        }
    };
    let name_of = |func: u32| -> Option<&str> {
        let i = func.checked_sub(info.num_imported_funcs)? as usize;
        info.functions.get(i)?.as_ref().ok()?.name.as_deref()
    };
    let mut out = Vec::new();
    for item in list {
        let before = out.len();
        if let Some(hex) = item.strip_prefix("0x") {
            let offset = u32::from_str_radix(hex, 16).map_err(|_| {
                crate::error::invalid!("--hybrid cut: {item:?} is not a byte offset")
            })?;
            out.extend(
                (0..sites.len())
                    .filter(|&s| sites[s].1 == offset)
                    .map(CallSiteId::new),
            );
        } else {
            out.extend((0..sites.len()).map(CallSiteId::new).filter(|s| {
                callee_of(s.index())
                    .is_some_and(|q| q.to_string() == *item || name_of(q) == Some(item.as_str()))
            }));
        }
        if out.len() == before {
            crate::error::bail!("--hybrid cut: no call site at or of {item:?}");
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The direct call sites whose callee calls a profiled function.
fn non_leaf_sites(sg: &Supergraph) -> Vec<CallSiteId> {
    let mut out = Vec::new();
    let mut s = 0;
    for f in &sg.functions {
        for c in &f.calls {
            if let Callee::Direct(q) = c.callee {
                if !sg.functions[q.index()].calls.is_empty() {
                    out.push(CallSiteId::new(s));
                }
            }
            s += 1;
        }
    }
    out
}

/// Where paths are counted: an array of every path number (`total`) when
/// the `counting` functions' arrays fit the array budget, else a hash table
/// each.
fn table_for(total: u64, counting: u64, opts: &Options) -> PathTable {
    let bl = &opts.ball_larus;
    let budget = bl.array_max.max(bl.array_budget / 8);
    if total.saturating_mul(counting.max(1)) <= budget {
        PathTable::Array { len: total }
    } else {
        PathTable::Hash {
            capacity: bl.hash_capacity.max(2).next_power_of_two(),
        }
    }
}

/// Per supergraph call site: its function's module index and byte offset.
fn site_offsets(msg: &ModuleSupergraph, info: &pathprof_wasm::ModuleInfo) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (i, calls) in msg.call_index.iter().enumerate() {
        let Some(Ok(fcfg)) = info.functions.get(i) else {
            continue;
        };
        for &k in calls {
            out.push((fcfg.func_index, fcfg.calls[k as usize].offset));
        }
    }
    out
}

/// Decodes the path counters of every function into `profile`'s
/// interprocedural paths. (The functions' edge counts stay zero: a context
/// path's prefix repeats edges counted before, and a backedge is not one of
/// a path's steps, so edge counts cannot be read off the paths.)
pub fn collect(meta: &InterprocMeta, raw: &[RawCounters], profile: &mut Profile) -> Result<()> {
    let ip = meta.numbering()?;
    let mut ipp = meta.template(&ip);
    let mut counts = std::collections::BTreeMap::<u64, u64>::new();
    for r in raw {
        ipp.lost = ipp.lost.saturating_add(r.lost);
        for &(n, c) in &r.paths {
            let e = counts.entry(n).or_insert(0);
            *e = e.checked_add(c).context("a path count overflows")?;
        }
    }
    for (number, count) in counts {
        let path = ip
            .decode(number)
            .with_context(|| format!("corrupt counters: path number {number}"))?;
        ipp.paths.push(InterprocPath {
            number,
            count,
            path,
        });
    }
    profile.interproc = Some(Box::new(ipp));
    Ok(())
}

/// `pathprof stats --interproc MODE`: what the numbering makes of a module.
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub mode: Mode,
    /// The number of observable paths.
    pub potential: u64,
    /// Functions truncated (Ball-Larus 5.3) because their own paths were
    /// too many to number.
    pub truncated_functions: usize,
    pub functions: Vec<FunctionStats>,
    pub sites: Vec<SiteInfo>,
    /// The indirect calls profiled across as direct calls to the function
    /// their table slot holds (section 9.2.3, `--dispatch-max`).
    pub dispatched: Vec<Dispatched>,
}

/// A `call_indirect` split into cases by its table slot.
#[derive(Clone, Debug, Serialize)]
pub struct Dispatched {
    pub func_index: u32,
    /// Module byte offset of the call instruction.
    pub offset: u32,
    /// The module indices of the functions its cases call.
    pub callees: Vec<u32>,
    /// The profiled functions of its last, cut case (those that did not
    /// run in the `--weights` profile), if it has one; empty when the cut
    /// case stands only for imports in the table.
    pub cut: Option<Vec<u32>>,
}

/// The dispatched indirect calls of the numbered supergraph `meta`.
fn dispatched(meta: &InterprocMeta) -> Vec<Dispatched> {
    let sg = &meta.supergraph;
    let starts = sg.site_starts();
    let mut out = Vec::new();
    for (f, func) in sg.functions.iter().enumerate() {
        for k in (0..func.calls.len()).filter(|&k| !func.is_case(k) && func.is_case(k + 1)) {
            let cases = func.case_group(k);
            let (mut callees, mut cut) = (Vec::new(), None);
            let index = |q: FuncId| meta.num_imported_funcs + q.index() as u32;
            for i in cases {
                match &func.calls[i].callee {
                    Callee::Direct(q) => callees.push(index(*q)),
                    Callee::Indirect(rest) => cut = Some(rest.iter().map(|&q| index(q)).collect()),
                }
            }
            let (func_index, offset) = meta.sites[starts[f] + k];
            out.push(Dispatched {
                func_index,
                offset,
                callees,
                cut,
            });
        }
    }
    out
}

#[derive(Clone, Debug, Serialize)]
pub struct FunctionStats {
    pub func_index: u32,
    pub name: Option<String>,
    /// maxEnters (section 3.2): how often one path may enter it.
    pub max_enters: u64,
    /// Whether it is an entry function (entered afresh: the program's
    /// start, exports, targets of cut and indirect calls).
    pub entry: bool,
    pub call_sites: usize,
}

/// The interprocedural numbering of `module` under `opts`.
pub fn stats(module: &[u8], mode: Mode, opts: &Options) -> Result<Stats> {
    let Numbered { info, ip, meta, .. } = numbered(module, mode, opts, false)?;
    let template = meta.template(&ip);
    let functions = info
        .functions
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let f = f.as_ref().ok()?;
            Some(FunctionStats {
                func_index: f.func_index,
                name: f.name.clone(),
                max_enters: ip.max_enters[i],
                entry: ip.global_entry(FuncId::new(i)).is_some(),
                call_sites: meta.supergraph.functions[i].calls.len(),
            })
        })
        .collect();
    Ok(Stats {
        mode,
        potential: ip.total(),
        truncated_functions: meta
            .supergraph
            .functions
            .iter()
            .filter(|f| !f.truncated.is_empty())
            .count(),
        functions,
        sites: template.sites,
        dispatched: dispatched(&meta),
    })
}

/// Text of [`Stats`].
pub fn render_stats(s: &Stats) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let cut: Vec<&SiteInfo> = s.sites.iter().filter(|x| x.cut.is_some()).collect();
    let _ = writeln!(
        out,
        "{:?} paths: {} potential; {} call sites, {} profiled across, {} cut; {} functions truncated",
        s.mode,
        s.potential,
        s.sites.len(),
        s.sites.len() - cut.len(),
        cut.len(),
        s.truncated_functions
    );
    let _ = writeln!(
        out,
        "{:>8} {:>12} {:>6} {:>6}  function",
        "index", "maxEnters", "entry", "calls"
    );
    for f in &s.functions {
        let name = f
            .name
            .clone()
            .unwrap_or_else(|| format!("func[{}]", f.func_index));
        let entry = if f.entry { "yes" } else { "" };
        let _ = writeln!(
            out,
            "{:>8} {:>12} {:>6} {:>6}  {name}",
            f.func_index, f.max_enters, entry, f.call_sites
        );
    }
    if !s.dispatched.is_empty() {
        let _ = writeln!(
            out,
            "indirect calls profiled across by table slot (9.2.3): {}",
            s.dispatched.len()
        );
        let name = |f: u32| -> String {
            let named = s.functions.iter().find(|x| x.func_index == f);
            named
                .and_then(|x| x.name.clone())
                .unwrap_or_else(|| format!("func[{f}]"))
        };
        for d in &s.dispatched {
            let callees: Vec<String> = d.callees.iter().map(|&f| name(f)).collect();
            let cut = match d.cut.as_deref() {
                None => String::new(),
                Some([]) => ", imports (cut)".into(),
                Some(rest) => format!(", {} more that did not run (cut)", rest.len()),
            };
            let _ = writeln!(
                out,
                "  call_indirect@{:#x} in {}: {}{cut}",
                d.offset,
                name(d.func_index),
                callees.join(", ")
            );
        }
    }
    if !cut.is_empty() {
        let _ = writeln!(out, "cut call sites (T3):");
        for c in cut {
            let _ = writeln!(
                out,
                "  call@{:#x} in func[{}]: {}",
                c.offset,
                c.func_index,
                c.cut.as_deref().unwrap_or("")
            );
        }
    }
    out
}
