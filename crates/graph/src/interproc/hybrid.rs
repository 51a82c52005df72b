//! Hybrid inter/intraprocedural profiling (section 8): Transformation 3
//! applied to chosen non-recursive call sites too. A cut site's callee is
//! profiled from its own entry (an intraprocedural profile in effect, when
//! it is a leaf), and the number of observable paths usually drops.
//!
//! [`Interproc::build_with_cuts`] is the hook: any policy (the paper's
//! file-scope or leaf-only strategies) hands it the sites it cuts.
//! [`build_within`] is one such policy, a budget: it cuts call sites,
//! largest first, until the number of paths fits a bound (2^64 - 1, or the
//! counters the runtime can hold).
//!
//! Departures from the paper: the budget policy is ours. The cases of an
//! indirect call ([`crate::interproc::Function::cases`]) are cut before
//! any other site: the report would have cut the call anyway, and cutting
//! the largest sites first let the cases cost other calls their context
//! (docs/lab/2026-11-27-indirect-cases.md). A site's size is
//! psi_c(1) = psi_Entry_Q(psi_r(1)), the paths from its call vertex when
//! one completion leaves the caller, estimated with saturating arithmetic
//! so that a graph whose exact numbering overflows can still be ranked.
//! One site is cut per round and the graph numbered again, so a site whose
//! size shrinks as others are cut is judged on its new size. That costs a
//! transformation and a numbering of the whole program per round, so after
//! [`SINGLE_ROUNDS`] rounds the largest sites are cut in batches that double
//! each round, and the batch that makes the paths fit is shrunk by
//! bisection to the shortest prefix that still does: a program needing
//! thousands of cuts takes tens of rounds, and cuts at most the sites a
//! round judged on stale sizes would have left. The rounds share the
//! functions' split CFGs, and the local graphs of the functions whose call
//! sites they did not cut differently ([`Transformed`]).

use crate::error::GraphError;
use crate::interproc::callgraph::CallGraph;
use crate::interproc::numbering::estimate_psi;
use crate::interproc::supergraph::{CallSiteId, Callee, Supergraph};
use crate::interproc::{transform_with, Interproc, Mode, Transformed};

/// Builds `sg` cutting, besides what must be cut, the fewest call sites
/// (largest first) that bring the number of paths to at most `bound`.
/// Fails with [`GraphError::BudgetTooSmall`] if even cutting every call
/// site leaves more paths (the functions' own paths are too many), or with
/// [`GraphError::PathCountOverflow`] if those are more than 64 bits number.
pub fn build_within(sg: &Supergraph, mode: Mode, bound: u64) -> Result<Interproc, GraphError> {
    build_within_from(sg, mode, &[], bound)
}

/// As [`build_within`], cutting `first` before any other site (a policy's
/// explicit choice, which the budget then completes).
pub fn build_within_from(
    sg: &Supergraph,
    mode: Mode,
    first: &[CallSiteId],
    bound: u64,
) -> Result<Interproc, GraphError> {
    let mut cuts: Vec<CallSiteId> = first.to_vec();
    let mut last_batch = 0;
    let cache = &mut Transformed::default();
    for round in 0usize.. {
        if let Some(ip) = within(sg, mode, &cuts, bound, cache)? {
            return shrink_last_batch(sg, mode, bound, (cuts, last_batch), ip, cache);
        }
        let batch = 1usize << round.saturating_sub(SINGLE_ROUNDS).min(20);
        let largest = largest_uncut_sites_with(sg, mode, &cuts, batch, cache);
        if largest.is_empty() {
            // Every call site is cut: as few paths as cuts can make, which
            // either overflow (then a function's own paths do) or are more
            // than the budget.
            return Err(match Interproc::build_reusing(sg, mode, &cuts, cache) {
                Ok(ip) => GraphError::BudgetTooSmall {
                    bound,
                    least: ip.total(),
                },
                Err(e) => e,
            });
        }
        last_batch = largest.len();
        cuts.extend(largest);
    }
    unreachable!("the rounds end when no site is left to cut")
}

/// The numbering with `cuts`, if its paths are at most `bound`.
fn within(
    sg: &Supergraph,
    mode: Mode,
    cuts: &[CallSiteId],
    bound: u64,
    cache: &mut Transformed,
) -> Result<Option<Interproc>, GraphError> {
    match Interproc::build_reusing(sg, mode, cuts, cache) {
        Ok(ip) if ip.total() <= bound => Ok(Some(ip)),
        Ok(_) | Err(GraphError::PathCountOverflow { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The last batch of `cuts` (its final `last` sites, largest first) made
/// the paths fit; keeps the shortest prefix of it that still does, by
/// bisection (the paths only shrink as more sites are cut).
fn shrink_last_batch(
    sg: &Supergraph,
    mode: Mode,
    bound: u64,
    (cuts, last): (Vec<CallSiteId>, usize),
    fitting: Interproc,
    cache: &mut Transformed,
) -> Result<Interproc, GraphError> {
    let base = cuts.len() - last;
    let (mut lo, mut hi, mut best) = (1, last, fitting);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match within(sg, mode, &cuts[..base + mid], bound, cache)? {
            Some(ip) => (hi, best) = (mid, ip),
            None => lo = mid + 1,
        }
    }
    Ok(best)
}

/// Rounds of [`build_within`] that cut one site each before batches.
pub const SINGLE_ROUNDS: usize = 16;

/// The uncut call site with the largest estimated psi_c(1) (the first on
/// ties), if any is left.
pub fn largest_uncut_site(sg: &Supergraph, mode: Mode, cuts: &[CallSiteId]) -> Option<CallSiteId> {
    largest_uncut_sites(sg, mode, cuts, 1).first().copied()
}

/// The `k` uncut call sites with the largest estimated psi_c(1), largest
/// first (the first on ties).
pub fn largest_uncut_sites(
    sg: &Supergraph,
    mode: Mode,
    cuts: &[CallSiteId],
    k: usize,
) -> Vec<CallSiteId> {
    largest_uncut_sites_with(sg, mode, cuts, k, &mut Transformed::default())
}

/// [`largest_uncut_sites`], reusing the local graphs `cache` holds.
fn largest_uncut_sites_with(
    sg: &Supergraph,
    mode: Mode,
    cuts: &[CallSiteId],
    k: usize,
    cache: &mut Transformed,
) -> Vec<CallSiteId> {
    let cg = CallGraph::new(sg, cuts);
    let starts = sg.site_starts();
    let (splits, locals) = transform_with(sg, &cg, mode, cache);
    let psi = estimate_psi(sg, &cg, &splits, &locals);
    let mut sizes: Vec<(bool, u64, CallSiteId)> = Vec::new();
    for (f, func) in sg.functions.iter().enumerate() {
        for (i, call) in func.calls.iter().enumerate() {
            let site = starts[f] + i;
            let (Callee::Direct(_), false) = (&call.callee, cg.cut[site]) else {
                continue;
            };
            let c = splits[f].call_vertex[i];
            let size = psi
                .get(f)
                .map_or(0, |n| n.psi[c.index()].apply(1).unwrap_or(u64::MAX));
            let case = func.case_group(i).len() > 1;
            sizes.push((case, size, CallSiteId::new(site)));
        }
    }
    // Cases first (cutting one gives back no more than the report's cut
    // indirect call), then the largest; on ties, the first site.
    sizes.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    sizes.into_iter().take(k).map(|(_, _, s)| s).collect()
}

/// The edges that truncate a function's own paths to at most `bound`
/// (Ball-Larus section 5.3: every edge out of a cut vertex, except into
/// EXIT, ends the path like a backedge), for [`Function::truncated`]; empty
/// when the function has at most `bound` acyclic paths.
///
/// Departure from the paper: Melski and Reps number every interprocedural
/// path. A function with more acyclic paths than 64 bits can count cannot
/// be numbered whatever call sites are cut; truncating it is the remedy
/// Ball and Larus give intraprocedurally.
///
/// [`Function::truncated`]: crate::interproc::Function::truncated
pub fn truncation(cfg: &crate::Cfg, bound: u64) -> Result<Vec<crate::EdgeId>, GraphError> {
    let (dag, _) = crate::numbering::build_numbered(cfg, bound)?;
    let mut out: Vec<crate::EdgeId> = dag
        .cut_nodes
        .iter()
        .flat_map(|&v| cfg.succs(v).iter().copied())
        .filter(|&e| cfg.dst(e) != crate::Cfg::EXIT)
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
