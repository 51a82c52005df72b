//! The techniques a module can be instrumented for.

/// What to instrument for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Technique {
    Path,
    Edge,
    /// Preferential path profiling, with the interesting paths and policy of
    /// [`Options::ppp`](crate::options::Options::ppp).
    Ppp,
    /// Test-only: every edge reports itself to the host
    /// ([`Options::trace_mode`](crate::options::Options::trace_mode) says how).
    Trace,
    /// Melski & Reps' interprocedural context paths ([`crate::interproc`]).
    Context,
    /// Melski & Reps' interprocedural piecewise paths.
    Piecewise,
    /// Melski & Reps' intraprocedural context paths, section 7
    /// ([`crate::intra_context`]).
    IntraContext,
    /// Interprocedural preferential path profiling of depth-k path
    /// segments ([`crate::ippp`]).
    Ippp,
}

impl Technique {
    /// Whether the module is planned whole rather than one function at a
    /// time (the interprocedural modes, and the intra-context mode, whose
    /// functions are recorded as bare CFGs).
    pub(crate) fn planned_whole(self) -> bool {
        matches!(
            self,
            Technique::Context | Technique::Piecewise | Technique::IntraContext | Technique::Ippp
        )
    }
}
