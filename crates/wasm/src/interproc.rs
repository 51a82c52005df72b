//! The module-level phase of an interprocedural technique: it sees every
//! function's CFG and the call graph before any function is planned
//! (Melski & Reps 1999, section 4: the supergraph's numbering needs every
//! procedure's paths before any call site's edge functions are known).
//!
//! A technique implements [`ModuleTechnique`]: [`plan_module`] decides the
//! module-level registers and keeps, in the technique itself, whatever it
//! learnt (per-function path counts, call-site numbering); then
//! [`plan_function`] is called for each defined function in order. The
//! intraprocedural techniques need none of this and keep planning one
//! function at a time.
//!
//! [`plan_module`]: ModuleTechnique::plan_module
//! [`plan_function`]: ModuleTechnique::plan_function

use crate::callgraph::CallGraph;
use crate::cfg::{FunctionCfg, ModuleInfo};
use crate::error::Result;
use crate::rewrite::{Instrumented, OutputCheck};
use pathprof_techniques::{FunctionPlan, ModulePlan};

/// A profiling technique that plans the module as a whole.
pub trait ModuleTechnique {
    /// Sees the whole module; returns the module-level registers.
    fn plan_module(&mut self, info: &ModuleInfo, calls: &CallGraph) -> ModulePlan;
    /// Plans one defined function (in function order), or leaves it alone.
    fn plan_function(&mut self, f: &FunctionCfg) -> Option<FunctionPlan>;
}

/// What [`instrument_with`] produced: the module and the module plan its
/// counters and globals are read back with.
#[derive(Clone, Debug)]
pub struct Interprocedural {
    pub instrumented: Instrumented,
    pub module_plan: ModulePlan,
    pub info: ModuleInfo,
    pub call_graph: CallGraph,
}

/// Analyses `bytes`, builds its call graph, lets `technique` plan the
/// module and then each function, and applies the plans.
pub fn instrument_with(
    bytes: &[u8],
    technique: &mut impl ModuleTechnique,
    custom_sections: &[(&str, &[u8])],
    check: OutputCheck,
) -> Result<Interprocedural> {
    let info = crate::analyze(bytes)?;
    let call_graph = CallGraph::new(bytes, &info)?;
    let module_plan = technique.plan_module(&info, &call_graph);
    let plans: Vec<Option<FunctionPlan>> = info
        .functions
        .iter()
        .map(|f| f.as_ref().ok().and_then(|f| technique.plan_function(f)))
        .collect();
    let instrumented = crate::rewrite::instrument_module(
        bytes,
        &info,
        &module_plan,
        &plans,
        custom_sections,
        check,
        crate::CounterIdentity::default(),
    )?;
    Ok(Interprocedural {
        instrumented,
        module_plan,
        info,
        call_graph,
    })
}
