//! The techniques a module can be instrumented for. Each is one type
//! behind one trait, [`Profiler`]: what it plans for each function (or for
//! the module whole), what it records of a plan in the metadata, and how it
//! decodes counters into a profile. [`Technique`] lists pathprof's own and
//! is the one place that registers them ([`Technique::profiler`]): the
//! command line's modes, the metadata's technique code and the profile's
//! mode all come from the profiler it names.
//!
//! Adding a technique to pathprof is a module that implements [`Profiler`]
//! and a variant of [`Technique`] with its line in [`Technique::profiler`].
//! A technique defined outside pathprof instruments with
//! [`driver::instrument_with`](crate::driver::instrument_with) and is read
//! back with [`driver::read_meta_with`](crate::driver::read_meta_with); its
//! code is [`FIRST_FOREIGN_CODE`] or above. crates/cli/tests/custom_technique.rs
//! adds three in a single file and checks them against the trace oracle.

mod edge;
mod path;
mod ppp;
mod trace;

use pathprof_graph::NodeId;
use pathprof_profile::{Block, Edge, FunctionData, FunctionProfile, Mode, Profile};
use pathprof_techniques::ball_larus;

use crate::error::{bail, Context, Result};
use crate::meta::{Meta, MetaError};
use crate::options::Options;
use crate::recorder::Instrumented;

/// What a technique's implementation needs, in one place.
pub use crate::meta::{Reader, Writer};
pub use pathprof_techniques::{
    Action, EdgeActions, FunctionPlan, Interproc, ModulePlan, RawCounters, Width,
};
pub use pathprof_wasm::FunctionCfg;

/// The first metadata code free for techniques defined outside pathprof
/// (pathprof's own take the codes below).
pub const FIRST_FOREIGN_CODE: u8 = 128;

/// A profiling technique: how it plans, records and decodes.
///
/// A technique planned one function at a time implements [`Profiler::plan`],
/// [`Profiler::read_record`] (if its plans record anything) and
/// [`Profiler::decode`]; one planned whole (the interprocedural techniques)
/// implements [`Profiler::instrument_whole`] and [`Profiler::decode`].
pub trait Profiler: Sync {
    /// Its name as a mode of the command line (`--mode NAME`).
    fn name(&self) -> &'static str;

    /// What it counts, in a line (the command line's help of its mode).
    fn about(&self) -> &'static str;

    /// Its code in the metadata and the counter memory's header: fixed
    /// once released, since it is a file format's (docs/profile-format.md).
    fn code(&self) -> u8;

    /// The mode of the profiles it gives.
    fn mode(&self) -> Mode;

    /// Whether a user asks for it (the trace is the tests' oracle).
    fn is_public(&self) -> bool {
        true
    }

    /// What it needs to know of the module before the first function is
    /// planned.
    fn facts(&self, _scanned: &pathprof_wasm::Scanned, _opts: &Options) -> ModuleFacts {
        ModuleFacts::default()
    }

    /// Whether its plans read the module's call graph and its strongly
    /// connected components ([`ModuleFacts::call_graph`]), which are then
    /// built before the first function is planned (from every function's
    /// CFG at once, which a large module's planning otherwise avoids).
    fn needs_call_graph(&self) -> bool {
        false
    }

    /// The module-level registers its plans may use
    /// ([`Action::GlobalToLocal`], [`Action::LocalToGlobal`]): state that
    /// crosses calls without changing any function's signature. None by
    /// default.
    fn module_plan(&self, _facts: &ModuleFacts) -> ModulePlan {
        ModulePlan::default()
    }

    /// The plan of one function, and what its metadata record keeps of
    /// the planning (what decoding depends on beyond the function's CFG,
    /// which the metadata holds already).
    fn plan(&self, _f: &FunctionCfg, _cx: &PlanCx<'_>) -> Result<Planned> {
        bail!("the {} mode plans the module whole", self.name())
    }

    /// Whether [`Profiler::instrument_whole`] instruments the module
    /// instead of [`Profiler::plan`] one function at a time.
    fn planned_whole(&self) -> bool {
        false
    }

    /// The instrumented module of a technique planned whole.
    fn instrument_whole(&self, _module: &[u8], _opts: &Options) -> Result<Instrumented> {
        bail!("the {} mode plans one function at a time", self.name())
    }

    /// A function's data in the zero-count profile template, from what its
    /// [`Planned::record`] wrote (read with `r`). By default a plan records
    /// nothing and the function's data is an edge profile of zeros.
    fn read_record(
        &self,
        _r: &mut Reader<'_>,
        f: &Recorded<'_>,
    ) -> std::result::Result<FunctionData, MetaError> {
        Ok(zero_edges(f.edges.len()))
    }

    /// Fills `profile` (the template, counting one run) from the counters.
    fn decode(&self, counters: &Counters<'_>, profile: &mut Profile) -> Result<()>;
}

impl std::fmt::Debug for dyn Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (technique {})", self.name(), self.code())
    }
}

/// Two profilers are one technique when their codes are.
impl PartialEq for dyn Profiler {
    fn eq(&self, other: &Self) -> bool {
        self.code() == other.code()
    }
}

/// What a technique learns of the module before planning its functions:
/// the module plan its per-function plans read.
#[derive(Clone, Debug, Default)]
pub struct ModuleFacts {
    /// The module may throw or catch (edge profiling then gives the blocks
    /// an activation may be unwound from a virtual edge to EXIT).
    pub exceptions: bool,
    /// The plans report edges to the host, this way (an import is added
    /// before the defined functions).
    pub trace: Option<pathprof_wasm::TraceMode>,
    /// The call graph (direct, indirect by type, tail calls, imports as
    /// leaves) and its strongly connected components, when the technique
    /// asks ([`Profiler::needs_call_graph`]).
    pub call_graph: Option<std::sync::Arc<pathprof_wasm::callgraph::CallGraph>>,
}

/// What planning one function is given.
pub struct PlanCx<'a> {
    pub opts: &'a Options,
    /// Ball-Larus' options, `opts.ball_larus` or a stricter array limit
    /// when the module's array budget ran out.
    pub ball_larus: &'a ball_larus::Options,
    /// Per-CFG-edge weights from a prior profile (`--weights`).
    pub weights: Option<&'a [u64]>,
    pub facts: &'a ModuleFacts,
    /// The caller keeps the profile template ([`Planned::template`]).
    pub template: bool,
}

/// A function's plan and its metadata record.
pub struct Planned {
    pub plan: FunctionPlan,
    /// Read back by [`Profiler::read_record`].
    pub record: Writer,
    /// When [`PlanCx::template`] asks for it, the function's data in the
    /// profile template, as [`Profiler::read_record`] would rebuild it,
    /// from what planning computed anyway; `None` leaves it to
    /// `read_record`.
    pub template: Option<FunctionData>,
}

impl Planned {
    /// A plan that records nothing.
    pub fn new(plan: FunctionPlan) -> Self {
        Planned {
            plan,
            record: Writer::default(),
            template: None,
        }
    }
}

/// A function's record, as [`Profiler::read_record`] is given it.
pub struct Recorded<'a> {
    pub func_index: u32,
    pub blocks: &'a [Option<Block>],
    pub edges: &'a [Edge],
    /// The truncation threshold the module was planned with.
    pub truncate_above: u64,
}

impl Recorded<'_> {
    /// A corrupt record of this function, at `r`'s position.
    pub fn corrupt(&self, r: &Reader<'_>, reason: impl std::fmt::Display) -> MetaError {
        r.corrupt(format!("function {}: {reason}", self.func_index))
    }
}

/// An edge profile of zeros: the data of a function whose technique counts
/// nothing of its own per function.
pub fn zero_edges(edges: usize) -> FunctionData {
    FunctionData::Edge {
        chords: pathprof_techniques::edge::Chords {
            chords: Vec::new(),
            unwinding: Vec::new(),
        },
        chord_counts: Vec::new(),
        edge_counts: vec![0; edges],
    }
}

/// One run's counters, as [`Profiler::decode`] is given them.
pub struct Counters<'a> {
    pub meta: &'a Meta,
    /// The counter memory.
    pub memory: &'a [u8],
    /// For a run that ended abruptly, the block each live frame was in.
    pub abrupt: Option<Vec<(u32, NodeId)>>,
}

impl Counters<'_> {
    /// Calls `each` with every recorded function of `profile` and its raw
    /// counters, naming the function in an error.
    pub fn each_function(
        &self,
        profile: &mut Profile,
        mut each: impl FnMut(&mut FunctionProfile, RawCounters) -> Result<()>,
    ) -> Result<()> {
        let layout = &self.meta.layout.functions;
        // A sparse profile lists some of the layout's functions.
        let by_index: std::collections::HashMap<u32, usize> = if profile.is_sparse() {
            layout
                .iter()
                .enumerate()
                .map(|(i, fl)| (fl.func_index, i))
                .collect()
        } else {
            Default::default()
        };
        for (i, f) in profile.functions.iter_mut().enumerate() {
            let at = if by_index.is_empty() {
                Some(i)
            } else {
                by_index.get(&f.func_index).copied()
            };
            let Some(fl) = at.and_then(|i| layout.get(i)) else {
                bail!("corrupt __pathprof.meta section: layout and functions disagree");
            };
            if f.func_index != fl.func_index {
                bail!("corrupt __pathprof.meta section: layout and functions disagree");
            }
            let raw = pathprof_wasm::read_counters(fl, self.memory)?;
            let name = f.display_name();
            each(f, raw).with_context(|| format!("function {name}"))?;
        }
        Ok(())
    }

    /// The blocks of `func_index` a run that ended abruptly was in, each
    /// once per frame.
    pub fn abrupt_ends(&self, func_index: u32) -> Vec<(NodeId, u64)> {
        let Some(frames) = &self.abrupt else {
            return Vec::new();
        };
        frames
            .iter()
            .filter(|(f, _)| *f == func_index)
            .map(|&(_, b)| (b, 1))
            .collect()
    }
}

/// What to instrument for: pathprof's own techniques.
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
    /// Its implementation: the registration of pathprof's techniques.
    pub fn profiler(self) -> &'static dyn Profiler {
        match self {
            Technique::Path => &path::PATH,
            Technique::Edge => &edge::EDGE,
            Technique::Ppp => &ppp::PPP,
            Technique::Trace => &trace::TRACE,
            Technique::Context => &crate::interproc::CONTEXT,
            Technique::Piecewise => &crate::interproc::PIECEWISE,
            Technique::IntraContext => &crate::intra_context::INTRA_CONTEXT,
            Technique::Ippp => &crate::ippp::IPPP,
        }
    }

    /// The techniques a user can ask for, in the order the command line
    /// lists them (all but [`Technique::Trace`], the tests' oracle).
    pub const PUBLIC: [Technique; 7] = [
        Technique::Path,
        Technique::Edge,
        Technique::Ppp,
        Technique::Context,
        Technique::Piecewise,
        Technique::IntraContext,
        Technique::Ippp,
    ];

    /// Every technique: [`Technique::PUBLIC`], then the trace.
    pub fn all() -> impl Iterator<Item = Technique> {
        Technique::PUBLIC.into_iter().chain([Technique::Trace])
    }

    /// [`Profiler::name`].
    pub fn name(self) -> &'static str {
        self.profiler().name()
    }

    /// [`Profiler::about`].
    pub fn about(self) -> &'static str {
        self.profiler().about()
    }

    /// [`Profiler::is_public`].
    pub fn is_public(self) -> bool {
        self.profiler().is_public()
    }

    /// The technique named `name` ([`Technique::name`]).
    pub fn from_name(name: &str) -> Option<Technique> {
        Technique::all().find(|t| t.name() == name)
    }

    /// [`Profiler::code`].
    pub fn code(self) -> u8 {
        self.profiler().code()
    }

    /// The technique of metadata code `code` ([`Technique::code`]).
    pub fn from_code(code: u8) -> Option<Technique> {
        Technique::all().find(|t| t.code() == code)
    }

    /// [`Profiler::mode`].
    pub fn mode(self) -> Mode {
        self.profiler().mode()
    }
}

/// The technique of metadata code `code`: pathprof's own, else one of
/// `foreign`.
pub fn profiler_of(code: u8, foreign: &[&'static dyn Profiler]) -> Option<&'static dyn Profiler> {
    Technique::from_code(code)
        .map(Technique::profiler)
        .or_else(|| foreign.iter().copied().find(|p| p.code() == code))
}

#[cfg(test)]
mod tests {
    use super::Technique;

    /// The codes are a file format's: docs/profile-format.md lists them
    /// (`0 path, 1 edge, ...`), and each must name the technique it lists.
    #[test]
    fn codes_are_the_documented_ones() {
        let doc = include_str!("../../../../docs/profile-format.md");
        let at = doc
            .find("u8 technique ")
            .expect("the metadata's technique line");
        let listed: String = doc[at..].lines().take(2).collect::<Vec<_>>().join(" ");
        let mut seen = 0;
        for item in listed.split(',') {
            let words: Vec<&str> = item.split_whitespace().collect();
            let Some(i) = words.iter().position(|w| w.parse::<u8>().is_ok()) else {
                continue;
            };
            let code: u8 = words[i].parse().unwrap();
            let t = Technique::from_code(code).expect("a documented code");
            assert_eq!(t.name(), words[i + 1], "code {code}");
            assert_eq!(t.code(), code);
            seen += 1;
        }
        assert_eq!(seen, Technique::all().count(), "{listed}");
        assert_eq!(Technique::from_code(8), None);
        assert!(Technique::all().all(|t| t.code() < super::FIRST_FOREIGN_CODE));
    }

    #[test]
    fn every_technique_has_its_own_name() {
        let mut names: Vec<&str> = Technique::all().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 8);
        for t in Technique::all() {
            assert_eq!(Technique::from_name(t.name()), Some(t));
        }
        assert_eq!(Technique::from_name("none"), None);
        assert!(!Technique::Trace.is_public());
        for t in Technique::all() {
            assert_eq!(super::profiler_of(t.code(), &[]), Some(t.profiler()));
        }
        assert!(Technique::PUBLIC.iter().all(|t| t.is_public()));
    }
}
