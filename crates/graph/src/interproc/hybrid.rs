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
//! Departures from the paper: the budget policy is ours. A site's size is
//! psi_c(1) = psi_Entry_Q(psi_r(1)), the paths from its call vertex when
//! one completion leaves the caller, estimated with saturating arithmetic
//! so that a graph whose exact numbering overflows can still be ranked.
//! One site is cut per round and the graph numbered again, so a site whose
//! size shrinks as others are cut is judged on its new size. That costs a
//! transformation and a numbering of the whole program per cut site: fine
//! for tens of cuts, slow for thousands (then cut in batches first).

use crate::error::GraphError;
use crate::interproc::callgraph::CallGraph;
use crate::interproc::numbering::estimate_psi;
use crate::interproc::supergraph::{CallSiteId, Callee, Supergraph};
use crate::interproc::{transform, Interproc, Mode};

/// Builds `sg` cutting, besides what must be cut, the fewest call sites
/// (largest first) that bring the number of paths to at most `bound`.
/// Fails with [`GraphError::PathCountOverflow`] if even cutting every call
/// site leaves more paths (the functions' own paths are too many).
pub fn build_within(sg: &Supergraph, mode: Mode, bound: u64) -> Result<Interproc, GraphError> {
    let mut cuts: Vec<CallSiteId> = Vec::new();
    loop {
        match Interproc::build_with_cuts(sg, mode, &cuts) {
            Ok(ip) if ip.total() <= bound => return Ok(ip),
            Ok(_) | Err(GraphError::PathCountOverflow { .. }) => {}
            Err(e) => return Err(e),
        }
        match largest_uncut_site(sg, mode, &cuts) {
            Some(s) => cuts.push(s),
            None => return Err(GraphError::PathCountOverflow { function: None }),
        }
    }
}

/// The uncut call site with the largest estimated psi_c(1) (the first on
/// ties), if any is left.
pub fn largest_uncut_site(sg: &Supergraph, mode: Mode, cuts: &[CallSiteId]) -> Option<CallSiteId> {
    let cg = CallGraph::new(sg, cuts);
    let starts = sg.site_starts();
    let (splits, locals) = transform(sg, &cg, mode);
    let psi = estimate_psi(sg, &cg, &splits, &locals);
    let mut best: Option<(u64, CallSiteId)> = None;
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
            if best.is_none_or(|(b, _)| size > b) {
                best = Some((size, CallSiteId::new(site)));
            }
        }
    }
    best.map(|(_, s)| s)
}
