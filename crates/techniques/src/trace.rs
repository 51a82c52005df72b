//! Test-only oracle instrumentation: every edge reports itself to the host.
//!
//! It shares nothing with the profiling techniques but the CFG: the trace of
//! edges is what the tests recompute path and edge counts from.

use pathprof_graph::Cfg;

use crate::plan::{Action, EdgeActions, FunctionPlan};

/// A plan with `Action::Trace` on every edge.
pub fn plan(cfg: &Cfg) -> FunctionPlan {
    let mut plan = FunctionPlan::empty(cfg.num_edges());
    plan.edges = EdgeActions::from_fn(cfg.num_edges(), |e, actions| {
        actions.push(Action::Trace { edge: e as u32 });
    });
    plan
}
