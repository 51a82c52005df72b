//! The tests' oracle: every edge reports itself to the host
//! (`pathprof_techniques::trace`). Nothing is counted in memory, so a plan
//! records nothing and there is nothing to decode: the host gathers the
//! events as the run makes them (`pathprof_runner::TraceSink`).

use pathprof_profile::{Mode, Profile};
use pathprof_techniques::trace;

use super::{Counters, FunctionCfg, ModuleFacts, PlanCx, Planned, Profiler};
use crate::error::Result;
use crate::options::Options;

pub(super) struct Trace;
pub(super) static TRACE: Trace = Trace;

impl Profiler for Trace {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn about(&self) -> &'static str {
        "Every edge reported to the host (the tests' oracle)"
    }

    fn code(&self) -> u8 {
        3
    }

    /// The trace is the oracle of Ball-Larus paths.
    fn mode(&self) -> Mode {
        Mode::Path
    }

    fn is_public(&self) -> bool {
        false
    }

    fn facts(&self, _scanned: &pathprof_wasm::Scanned, opts: &Options) -> ModuleFacts {
        ModuleFacts {
            trace: Some(opts.trace_mode),
            ..ModuleFacts::default()
        }
    }

    fn plan(&self, f: &FunctionCfg, _cx: &PlanCx<'_>) -> Result<Planned> {
        Ok(Planned::new(trace::plan(&f.cfg)))
    }

    /// Checks that the counter memory is the module's, and counts nothing.
    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        cx.each_function(profile, |_, _| Ok(()))
    }
}
