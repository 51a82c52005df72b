//! Test-only oracle instrumentation: every edge reports itself to the host.
//!
//! It shares nothing with the profiling techniques but the CFG: the trace of
//! edges is what the tests recompute path and edge counts from.

use pathprof_graph::Cfg;

use crate::plan::{Action, FunctionPlan};

/// A plan with `Action::Trace` on every edge.
pub fn plan(cfg: &Cfg) -> FunctionPlan {
    let mut plan = FunctionPlan::empty(cfg.num_edges());
    for e in cfg.edge_ids() {
        plan.edges[e.index()].push(Action::Trace {
            edge: e.index() as u32,
        });
    }
    plan
}
