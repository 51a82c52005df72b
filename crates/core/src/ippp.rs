//! The `ippp` mode: interprocedural preferential path profiling over
//! depth-k path segments (K. Vaswani's thesis, 3.4.4-3.4.5) on a whole
//! module. The interesting segments come from a segment profile of the
//! same module (`run --segments K`, 3.5.2's first scheme); the module's
//! supergraph is numbered as the segment recorder numbers it, every
//! function's expanded graph built, and every function planned
//! (`pathprof_techniques::ippp`) and rewritten in one pass.
//!
//! The instrumented module carries, besides `__pathprof.meta`, the section
//! [`IPPP_SECTION`]: the supergraph, `k`, the policy and the interesting
//! segments, from which `collect` builds the same expanded graphs again
//! (deterministic) to decode what the run counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{bail, invalid, Context, Result};
use pathprof_graph::interproc::FuncId;
use pathprof_graph::ippp::{
    expand_all_fitting, expand_all_truncated, Expanded, Ippp, Ips, SubpathNumbering,
};
use pathprof_graph::GraphError;
use pathprof_profile::segments::{IpppSummary, SegmentCount, SegmentProfile, SubpathStep};
use pathprof_profile::{Mode, Profile};
use pathprof_techniques::ippp::{self as technique, Layout};
use pathprof_techniques::{FunctionPlan, RawCounters};
use pathprof_wasm::supergraph::ModuleSupergraph;

use crate::options::Options;
use crate::recorder::{instrument_whole, Instrumented};
use crate::technique::{Counters, Profiler};

pub use crate::meta::ippp::{read_meta, IpppMeta, IPPP_SECTION};
pub use crate::options::IpppOptions;

/// The deepest segments accepted: a segment holds a subpath per call
/// vertex at each depth, and the thesis measures k up to 3.
pub const MAX_K: usize = 16;

/// A module's supergraph and its subpath numbering, as the segment
/// recorder and IPPP both number it: functions whose subpaths 64 bits
/// cannot number are truncated to `bound` acyclic paths of their own
/// (Ball-Larus 5.3; always, with `force`, for tests). Tail calls and
/// exceptions end segments (docs/decisions.md#ips-tail-calls,
/// docs/decisions.md#ips-exceptions).
pub fn numbered(
    module: &[u8],
    info: &pathprof_wasm::ModuleInfo,
    bound: u64,
    force: bool,
) -> Result<(ModuleSupergraph, SubpathNumbering)> {
    let mut msg = ModuleSupergraph::new(module, info)?;
    let numbering = match SubpathNumbering::new(&msg.supergraph) {
        Ok(n) if !force => n,
        _ => {
            // A truncated edge ends a subpath (and the segments open on
            // it) as a backedge does.
            for f in &mut msg.supergraph.functions {
                f.truncated = pathprof_graph::interproc::hybrid::truncation(&f.cfg, bound)
                    .map_err(|e| invalid!("truncating: {e}"))?;
            }
            SubpathNumbering::new(&msg.supergraph)
                .map_err(|e| invalid!("numbering the subpaths: {e}"))?
        }
    };
    Ok((msg, numbering))
}

/// Interesting segments for a module with no profile to take them from:
/// every other depth-`k` segment of a few random executions of its
/// supergraph ([`pathprof_graph::interproc::sample::random_execution`],
/// from each function in turn, as if exported), seeded by `seed`. Empty
/// for a module that does not number. For tests of the instrumentation
/// (the spec testsuite, generated modules), which check that the module
/// behaves as the original whatever it counts, with segments of both
/// kinds running.
pub fn sampled_segments(module: &[u8], k: usize, seed: u64, bound: u64) -> Vec<Ips> {
    use pathprof_graph::interproc::sample::random_execution;
    use pathprof_graph::ippp::ips_profile;
    let Ok(info) = pathprof_wasm::analyze(module) else {
        return Vec::new();
    };
    let Ok((msg, numbering)) = numbered(module, &info, bound, false) else {
        return Vec::new();
    };
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    // An execution starts at the first entry function: every function in
    // turn (the segmenter does not ask how control got there, and a
    // module's functions are reached through exports, tables and `start`).
    let mut sg = msg.supergraph;
    sg.entries = (0..sg.functions.len()).map(FuncId::new).collect();
    let mut out = Vec::new();
    for _ in 0..sg.entries.len().clamp(4, 64) * 2 {
        if sg.entries.is_empty() {
            break;
        }
        sg.entries.rotate_left(1);
        let choices: Vec<u32> = (0..400)
            .map(|_| {
                // xorshift64: any spread of choices will do.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u32
            })
            .collect();
        let events = random_execution(&sg, &choices, 8);
        if let Ok(profile) = ips_profile(&numbering, k, &events) {
            out.extend(profile.into_keys().step_by(2));
        }
    }
    out
}

fn policy_name(p: pathprof_techniques::ppp::Policy) -> &'static str {
    use pathprof_techniques::ppp::Policy as P;
    match p {
        P::Record => "record",
        P::Count => "count",
        P::Ignore => "ignore",
    }
}

/// The expanded graphs and layout of a module for its interesting segments.
pub(crate) struct Planned {
    num: SubpathNumbering,
    expanded: Vec<Expanded>,
    layout: Layout,
}

/// Plans for the interesting segments, all of them, as `collect` does.
fn planned(num: SubpathNumbering, meta: &IpppMeta) -> Result<Planned> {
    let (k, num_imported_funcs) = (meta.k, meta.num_imported_funcs);
    let truncated: Vec<FuncId> = meta
        .truncated_starts
        .iter()
        .map(|&f| FuncId::new(f.saturating_sub(num_imported_funcs) as usize))
        .collect();
    let expanded = expand_all_truncated(&num, k, &meta.interesting, &truncated)
        .map_err(|e| invalid!("numbering the interesting segments: {e}"))?;
    let layout = Layout::new(&num, &expanded, k, num_imported_funcs)?;
    Ok(Planned {
        num,
        expanded,
        layout,
    })
}

/// Plans for as many of the interesting segments as the numbering and
/// the registers take, the first (hottest) kept first; returns them, and
/// how many were left out for the numbering and for the registers.
///
/// The numbering: [`expand_all_fitting`]. The registers: a function that
/// appears in more contexts than [`technique::MAX_COPIES`] loses the
/// coldest segments that enter it until it fits.
fn planned_fitting(
    num: SubpathNumbering,
    k: usize,
    interesting: &[Ips],
    num_imported_funcs: u32,
) -> Result<(Planned, Vec<Ips>, u64, u64)> {
    let mut list = interesting.to_vec();
    let (mut too_many_paths, mut too_many_contexts) = (0u64, 0u64);
    loop {
        let (expanded, kept) = expand_all_fitting(&num, k, &list)
            .map_err(|e| invalid!("numbering the interesting segments: {e}"))?;
        too_many_paths += (list.len() - kept.len()) as u64;
        match Layout::new(&num, &expanded, k, num_imported_funcs) {
            Ok(layout) => {
                let p = Planned {
                    num,
                    expanded,
                    layout,
                };
                return Ok((p, kept, too_many_paths, too_many_contexts));
            }
            Err(technique::Unsupported::TooManyContexts {
                function,
                copies,
                max,
            }) => {
                let h = FuncId::new((function - num_imported_funcs) as usize);
                let enters = |s: &Ips| s[1..].iter().any(|r| r.func == h);
                // The coldest that enter it: one context each at most.
                let mut drop = copies - max;
                let before = kept.len();
                let mut out: Vec<Ips> = kept
                    .into_iter()
                    .rev()
                    .filter(|s| {
                        let gone = drop > 0 && enters(s);
                        drop -= usize::from(gone);
                        !gone
                    })
                    .collect();
                out.reverse();
                if out.len() == before {
                    bail!("function {function}: {copies} contexts, and no interesting segment to leave out");
                }
                too_many_contexts += (before - out.len()) as u64;
                // Those left out for the numbering are out for good.
                list = out;
            }
        }
    }
}

/// The `ippp` technique.
pub(crate) struct IpppProfiler;
pub(crate) static IPPP: IpppProfiler = IpppProfiler;

impl Profiler for IpppProfiler {
    fn name(&self) -> &'static str {
        "ippp"
    }

    fn about(&self) -> &'static str {
        "Interprocedural PPP (Vaswani 3.4): counts the depth-K path segments named by --interesting (a segment profile of a test run, `run --segments K`)"
    }

    fn code(&self) -> u8 {
        7
    }

    /// Segment profiles, as `run --segments` gives.
    fn mode(&self) -> pathprof_profile::Mode {
        pathprof_profile::Mode::Segments
    }

    fn planned_whole(&self) -> bool {
        true
    }

    fn instrument_whole(&self, module: &[u8], opts: &Options) -> Result<Instrumented> {
        instrument(module, opts)
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        let Some(meta) = &cx.meta.ippp else {
            bail!("corrupt module: no {IPPP_SECTION} section");
        };
        let mut raws = Vec::with_capacity(profile.functions.len());
        cx.each_function(profile, |f, raw| {
            raws.push((f.func_index, raw));
            Ok(())
        })?;
        collect(meta, &raws, profile)
    }
}

/// Instruments `module` for interprocedural PPP.
pub fn instrument(module: &[u8], opts: &Options) -> Result<Instrumented> {
    let o = &opts.ippp;
    check_depth(o.k)?;
    pathprof_wasm::Scanned::validated(module)?;
    let info = pathprof_wasm::analyze(module)?;
    let (msg, num) = numbered(module, &info, opts.ball_larus.truncate_above, false)?;
    crate::interproc::refuse_unsupported(&msg, &info)?;
    let mut seen = std::collections::BTreeSet::new();
    let given: Vec<Ips> = o
        .interesting
        .iter()
        .filter(|i| seen.insert(*i))
        .cloned()
        .collect();
    let dispatch = dispatch(module, &info, &msg)?;
    let (interesting, through_indirect) = technique::through_indirect_call(&num, &given, &dispatch)
        .map_err(|e| invalid!("an interesting segment is not one of this module: {e}"))?;
    let (p, mut interesting, too_many_paths, too_many_contexts) =
        planned_fitting(num, o.k, &interesting, msg.num_imported_funcs)?;
    interesting.sort();
    let meta = IpppMeta {
        k: o.k,
        policy: policy_name(o.policy).into(),
        hash_capacity: opts.ball_larus.hash_capacity.max(2).next_power_of_two(),
        interesting,
        through_indirect,
        too_many_paths,
        too_many_contexts,
        truncated_starts: truncated_starts(&p.expanded, msg.num_imported_funcs),
        supergraph: msg.supergraph.clone(),
        num_imported_funcs: msg.num_imported_funcs,
        planned: Default::default(),
    };
    let policy = meta.technique_policy()?;
    let exceptions: Vec<_> = (msg.edge_kinds.iter())
        .map(|k| crate::interproc::exception_edges(k))
        .collect();
    let plans: Vec<Option<FunctionPlan>> = info
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.as_ref().ok().map(|fcfg| {
                technique::plan(
                    &p.num,
                    &p.expanded,
                    &p.layout,
                    FuncId::new(i),
                    technique::Sites {
                        calls: &msg.call_index[i],
                        tails: &msg.tail_index[i],
                        tail_slots: &msg.tail_slots[i],
                        dispatch: &dispatch[i],
                        throws: &exceptions[i].0,
                        catches: &exceptions[i].1,
                        opaque: &msg.opaque_calls[i],
                    },
                    policy,
                )
                .unwrap_or_else(|| FunctionPlan::empty(fcfg.cfg.num_edges()))
            })
        })
        .collect();
    let section = serde_json::to_vec(&meta)?;
    let mut inst = instrument_whole(
        module,
        &info,
        &IPPP,
        opts,
        (&p.layout.module_plan(), &plans),
        (IPPP_SECTION, &section),
    )?;
    // `run` collects with the graphs it planned with.
    inst.keep_also(|kept| {
        kept.ippp = Some(IpppMeta {
            planned: crate::meta::Kept::new(p),
            ..meta
        })
    });
    Ok(inst)
}

/// Per supergraph function, its indirect calls that a static table
/// resolves by slot ([`pathprof_wasm::tables`]).
fn dispatch(
    module: &[u8],
    info: &pathprof_wasm::ModuleInfo,
    msg: &ModuleSupergraph,
) -> Result<Vec<technique::Dispatch>> {
    let tables = pathprof_wasm::tables::static_tables(module)?;
    let sg = &msg.supergraph;
    Ok((0..sg.functions.len())
        .map(|i| {
            let Some(Ok(fcfg)) = info.functions.get(i) else {
                return vec![None; sg.functions[i].calls.len()];
            };
            sg.functions[i]
                .calls
                .iter()
                .zip(&msg.call_index[i])
                .map(|(call, &w)| {
                    let pathprof_wasm::Callee::Indirect { table, .. } =
                        fcfg.calls.get(w as usize)?.callee
                    else {
                        return None;
                    };
                    let pathprof_graph::interproc::Callee::Indirect(may) = &call.callee else {
                        return None;
                    };
                    may.iter()
                        .map(|&q| {
                            let f = msg.num_imported_funcs + q.index() as u32;
                            Some((q, tables.slots_of(table, f)?))
                        })
                        .collect()
                })
                .collect()
        })
        .collect())
}

/// The module indices of the functions whose expanded graphs `x` are truncated.
fn truncated_starts(x: &[Expanded], num_imported_funcs: u32) -> Vec<u32> {
    (0..x.len() as u32)
        .filter(|&f| x[f as usize].truncated())
        .map(|f| num_imported_funcs + f)
        .collect()
}

/// Decodes the counters of every function (`(module function index, raw
/// counters)`) into `profile`'s segments.
pub fn collect(meta: &IpppMeta, raw: &[(u32, RawCounters)], profile: &mut Profile) -> Result<()> {
    let p = match &meta.planned.0 {
        Some(p) => p.clone(),
        None => {
            let num = SubpathNumbering::new(&meta.supergraph)
                .map_err(|e| invalid!("corrupt {IPPP_SECTION} section: {e}"))?;
            std::sync::Arc::new(planned(num, meta)?)
        }
    };
    let ip = Ippp {
        subpaths: &p.num,
        k: meta.k,
        expanded: p.expanded.clone(),
    };
    let mut interesting: BTreeMap<Ips, u64> =
        meta.interesting.iter().map(|i| (i.clone(), 0)).collect();
    let mut untested: BTreeMap<Ips, u64> = BTreeMap::new();
    let (mut uninteresting, mut lost, mut truncated) = (0u64, 0u64, 0u64);
    for (func_index, r) in raw {
        let f = func_index
            .checked_sub(meta.num_imported_funcs)
            .map(|f| f as usize)
            .filter(|&f| f < p.expanded.len())
            .context("corrupt counters: a function outside the supergraph")?;
        let f = FuncId::new(f);
        lost = lost.saturating_add(r.lost);
        uninteresting = uninteresting.saturating_add(r.slots.first().copied().unwrap_or(0));
        let x = &p.expanded[f.index()];
        for &(bl, count) in &r.paths {
            let corrupt = |e: GraphError| {
                invalid!("corrupt counters: segment {bl} of function {func_index}: {e}")
            };
            if let Some(i) = x.ball_larus.iter().position(|&b| b == bl) {
                let c = interesting.get_mut(&x.interesting[i]).expect("listed");
                *c = c.saturating_add(count);
                continue;
            }
            uninteresting = uninteresting.saturating_add(count);
            if x.ends_cut(bl).map_err(corrupt)? {
                truncated = truncated.saturating_add(count);
                continue;
            }
            let ips = ip.decode_ball_larus(f, bl).map_err(corrupt)?;
            let c = untested.entry(ips).or_insert(0);
            *c = c.saturating_add(count);
        }
    }
    let spell = |(ips, count): (Ips, u64)| spell(&p.num, &ips, count);
    let summary = IpppSummary {
        interesting: meta.interesting.len() as u64,
        through_indirect: meta.through_indirect,
        too_many_paths: meta.too_many_paths,
        too_many_contexts: meta.too_many_contexts,
        truncated_starts: meta.truncated_starts.clone(),
        truncated,
        policy: meta.policy.clone(),
        uninteresting,
        untested: untested.into_iter().map(spell).collect::<Result<_>>()?,
        lost,
    };
    profile.mode = Mode::Segments;
    profile.segments = Some(Box::new(SegmentProfile {
        k: meta.k as u32,
        num_imported_funcs: meta.num_imported_funcs,
        segments: interesting.into_iter().map(spell).collect::<Result<_>>()?,
        subpaths: 0,
        ippp: Some(summary),
    }));
    Ok(())
}

/// Segment `ips` spelt out for the profile.
pub fn spell(num: &SubpathNumbering, ips: &Ips, count: u64) -> Result<SegmentCount> {
    let steps = ips
        .iter()
        .map(|r| {
            let subpath = num
                .decode(*r)
                .map_err(|e| invalid!("decoding subpath {} of {:?}: {e}", r.id, r.func))?;
            Ok(SubpathStep {
                func: r.func,
                id: r.id,
                subpath,
            })
        })
        .collect::<Result<_>>()?;
    Ok(SegmentCount { steps, count })
}

/// The interesting segments of a segment profile: every segment it
/// counted, and its depth.
pub fn interesting_of(profile: &Profile) -> Result<(usize, Vec<Ips>)> {
    let s = profile
        .segments
        .as_deref()
        .context("not a segment profile (make one with `pathprof run --segments K`)")?;
    // Hottest first: the order in which segments are kept when not all fit.
    let mut hot: Vec<&SegmentCount> = s.segments.iter().filter(|c| c.count > 0).collect();
    hot.sort_by_key(|c| std::cmp::Reverse(c.count));
    let ips = hot
        .into_iter()
        .map(|c| {
            c.steps
                .iter()
                .map(|st| pathprof_graph::ippp::SubpathRef {
                    func: st.func,
                    id: st.id,
                })
                .collect()
        })
        .collect();
    Ok((s.k as usize, ips))
}

/// `-k K`, refused unless 1 to [`MAX_K`].
pub fn check_depth(k: usize) -> Result<usize> {
    if !(1..=MAX_K).contains(&k) {
        bail!("-k {k}: the depth must be 1 to {MAX_K}");
    }
    Ok(k)
}

/// The depth and the segments of segment profiles of `module` (at least
/// one; `program` names it in errors), all of depth `depth` if given, else
/// of the first one's.
pub fn interesting_segments(
    program: &Path,
    module: &[u8],
    profiles: &[(&Path, Profile)],
    depth: Option<usize>,
) -> Result<(usize, Vec<Ips>)> {
    let hash = pathprof_wasm::module_hash(module);
    // The depth, and where it comes from: -k or the first profile.
    let mut k = match depth {
        Some(k) => Some((check_depth(k)?, format!("-k {k}"))),
        None => None,
    };
    let mut interesting = Vec::new();
    for (file, profile) in profiles {
        let name = || file.display().to_string();
        if profile.module_hash != hash {
            bail!(
                "{}: a profile of another module than {}",
                name(),
                program.display()
            );
        }
        let (depth, ips) = interesting_of(profile).with_context(name)?;
        match &k {
            Some((k, from)) if *k != depth => bail!(
                "{}: its segments are of depth {depth}, not {k} ({from}); record a profile of depth {k} with `pathprof run --segments {k}`",
                name()
            ),
            Some(_) => {}
            None => k = Some((depth, format!("that of {}", name()))),
        }
        interesting.extend(ips);
    }
    Ok((k.expect("at least one profile").0, interesting))
}

impl IpppOptions {
    /// The options of the `ippp` mode from the segment profiles in `files`
    /// (`run --segments K`; at least one), of depth `depth` if given (see
    /// [`interesting_segments`]), with `policy` for the other segments.
    pub fn from_files(
        program: &Path,
        module: &[u8],
        files: &[PathBuf],
        depth: Option<usize>,
        policy: pathprof_techniques::ppp::Policy,
    ) -> Result<IpppOptions> {
        let profiles = crate::input::read_profiles(files)?;
        let (k, interesting) = interesting_segments(program, module, &profiles, depth)?;
        Ok(IpppOptions {
            k,
            interesting,
            policy,
        })
    }
}
