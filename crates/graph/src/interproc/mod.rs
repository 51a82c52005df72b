//! Interprocedural path profiling: the graph side of D. Melski and T. Reps,
//! "Interprocedural Path Profiling", UW-Madison TR 1382 (1998), sections
//! 2-8. Knows nothing of WebAssembly.
//!
//! The pipeline, one module per step:
//! - [`supergraph`]: the input G* (2.2), per function a [`Cfg`] and the
//!   calls each block makes, split into call and return-site vertices;
//! - [`callgraph`]: recursive call sites (DFS backedges of the call graph),
//!   cut sites, entry functions, SCCs, maxEnters (3.2);
//! - [`local`]: each function's part of G*_fn after Transformations 0-3
//!   (GEntry, GExit, surrogate edges for backedges, summary edges);
//! - [`numbering`]: psi and rho as linear functions `<a, b>` (4, 5.2, 5.3)
//!   and the piecewise values numUnbalRLPaths and edgeValue (6.1);
//! - [`walk`]: the run-time instrumentation of 5.5 and 6.3 as an executable
//!   reference: an execution (a sequence of [`Event`]s) to path counts;
//! - [`encode`]: a path to its number (Algorithms 5.1 and 6.1);
//! - [`decode`]: a path number back to its path (Algorithm 5.2, and its
//!   piecewise counterpart, which the report leaves as an exercise);
//! - [`hybrid`]: section 8, cutting chosen non-recursive call sites, and a
//!   budget that cuts the largest until the number of paths fits.
//!
//! A typical use: `main` (ENTRY -> B -> EXIT) whose block B calls `leaf`
//! (ENTRY -> X -> EXIT, X branching twice to EXIT):
//! ```
//! use pathprof_graph::interproc::{
//!     CallSite, CallSiteId, Callee, Event, FuncId, Function, Interproc, Mode, PathStep,
//!     Supergraph,
//! };
//! use pathprof_graph::{Cfg, EdgeId};
//! let mut main = Cfg::new();
//! let b = main.add_node();
//! main.add_edge(Cfg::ENTRY, b);
//! main.add_edge(b, Cfg::EXIT);
//! let mut leaf = Cfg::new();
//! let x = leaf.add_node();
//! leaf.add_edge(Cfg::ENTRY, x);
//! leaf.add_edge(x, Cfg::EXIT);
//! leaf.add_edge(x, Cfg::EXIT);
//! let (main_id, leaf_id) = (FuncId::new(0), FuncId::new(1));
//! let sg = Supergraph {
//!     functions: vec![
//!         Function::new(main, vec![CallSite { block: b, callee: Callee::Direct(leaf_id) }]),
//!         Function::new(leaf, Vec::new()),
//!     ],
//!     entries: vec![main_id],
//! };
//! let ip = Interproc::build(&sg, Mode::Context)?;
//! assert_eq!(ip.total(), 2);
//! let run = [
//!     Event::Call { site: None, callee: main_id },
//!     Event::Edge(EdgeId::new(0)),
//!     Event::Call { site: Some(CallSiteId::new(0)), callee: leaf_id },
//!     Event::Edge(EdgeId::new(0)),
//!     Event::Edge(EdgeId::new(2)), // the second edge X -> EXIT
//!     Event::Return,
//!     Event::Edge(EdgeId::new(1)),
//!     Event::Return,
//! ];
//! let counts = ip.walk(&run)?;
//! assert_eq!(counts.into_iter().collect::<Vec<_>>(), [(1, 1)]);
//! let path = ip.decode(1)?;
//! assert_eq!(path.steps[4], PathStep::Edge { func: leaf_id, edge: EdgeId::new(2) });
//! assert_eq!(ip.path_number(&path)?, 1);
//! # Ok::<(), pathprof_graph::GraphError>(())
//! ```
//!
//! Two kinds of observable path, chosen by [`Mode`]: *context* paths
//! (section 5), unbalanced-left paths whose context-prefix says how the
//! active-suffix was reached, and *piecewise* paths (section 6),
//! unbalanced-right-left paths that partition an execution.
//!
//! Other language features (section 9), for the producer of a supergraph:
//! - An indirect call is a call site with [`Callee::Indirect`]: always cut
//!   (9.2.3), its possible callees become entry functions.
//! - An imported function is an opaque leaf: its calls are not call sites.
//!   If the host calls back into the program, that is an [`Event::Call`]
//!   without a site: the callee must be an entry function, and the path in
//!   flight is saved and resumed around it as at a recursive call site.
//! - A trap ends the execution: the paths in flight are not counted (the
//!   walk stops at the end of its events).
//! - Exceptions (9.2.2): a function lists its throwing blocks and its
//!   handlers ([`Function::throws`], [`Function::handlers`]); a throw
//!   ([`Event::Throw`]) ends the path at the throwing vertex `u` along a
//!   surrogate `u -> GExit`, and the catching activation starts one at its
//!   handler `v` along a surrogate `Entry_P -> v` (`GEntry_P -> v`), the
//!   two edges T2 adds for a backedge `u -> v`. The paths put aside at cut
//!   call sites between thrower and catcher are lost (no stack of pending
//!   paths, 9.2.1). An exception an import throws ([`Event::ImportThrow`])
//!   is caught the same way, its path in flight lost as at a trap.
//! - Tail calls ([`Function::tail_calls`], [`Event::TailCall`]): the
//!   caller's path ends at the tail-calling vertex (a surrogate
//!   `u -> GExit`) and the callee is entered afresh as an entry function.
//!   If the caller was entered through an uncut call site, the callee's
//!   return reaches the return site `r` of that site, whose function's path
//!   was counted with the caller's: it restarts at `r` along a surrogate
//!   `Entry_S -> r` (`GEntry_S -> r`), which every return site of an uncut
//!   call to a tail-calling function gets. If the caller was entered
//!   afresh, the callee inherits what was put aside, and its return goes on
//!   as the caller's would have.
//! - Intraprocedural context profiling (section 7) is Ball-Larus on a
//!   transformed CFG, with no supergraph: [`crate::intra_context`].

pub mod callgraph;
pub mod decode;
pub mod encode;
pub mod hybrid;
pub mod local;
pub mod numbering;
pub mod sample;
pub mod supergraph;
pub mod walk;

pub use callgraph::CallGraph;
pub use decode::{PathStep, ProfiledPath};
pub use local::{EdgeRole, Local, LocalEdge, LocalEdgeId, LocalEdgeKind};
pub use numbering::{EntryKind, FunctionNumbering, GlobalEntry, Linear, Numbering};
pub use supergraph::{
    CallSite, CallSiteId, Callee, FuncId, Function, SiteRef, Split, Supergraph, TailCall,
};
pub use walk::Event;

use std::sync::Arc;

use crate::cfg::Cfg;
use crate::error::GraphError;

/// The split CFGs and local graphs of earlier [`transform_with`]s of one
/// supergraph, so that a transform with other cuts (a round of the hybrid
/// policy, [`hybrid`]) builds again only the local graphs of the functions
/// whose own call sites were cut differently: on a module of 100,000
/// functions, a round rebuilt every one of them.
#[derive(Default)]
pub struct Transformed {
    mode: Option<Mode>,
    splits: Option<Arc<Vec<Split>>>,
    /// Per function: the cuts of its call sites and its local graph.
    locals: Vec<Option<(Vec<bool>, Arc<Local>)>>,
}

/// Each function split at its calls, and its part of G*_fn (T0-T3) given
/// the cuts of `cg`, reusing what `cache` holds of the same supergraph.
pub(crate) fn transform_with(
    sg: &Supergraph,
    cg: &CallGraph,
    mode: Mode,
    cache: &mut Transformed,
) -> (Arc<Vec<Split>>, Vec<Arc<Local>>) {
    if cache.mode != Some(mode) {
        *cache = Transformed {
            mode: Some(mode),
            ..Transformed::default()
        };
    }
    let starts = sg.site_starts();
    let splits = cache
        .splits
        .get_or_insert_with(|| Arc::new(sg.functions.iter().map(Split::new).collect()))
        .clone();
    cache.locals.resize(sg.functions.len(), None);
    let locals = splits
        .iter()
        .enumerate()
        .map(|(f, split)| {
            let cut = &cg.cut[starts[f]..starts[f + 1]];
            if let Some((was, local)) = &cache.locals[f] {
                if was == cut {
                    return local.clone();
                }
            }
            let func = &sg.functions[f];
            // A return site is restarted at when its callee may tail-call.
            let restart_after: Vec<bool> = func
                .calls
                .iter()
                .zip(cut)
                .map(|(c, &cut)| match c.callee {
                    Callee::Direct(q) => !cut && !sg.functions[q.index()].tail_calls.is_empty(),
                    Callee::Indirect(_) => false,
                })
                .collect();
            let local = Arc::new(Local::new(
                func,
                split,
                cut,
                &restart_after,
                mode == Mode::Piecewise,
            ));
            cache.locals[f] = Some((cut.to_vec(), local.clone()));
            local
        })
        .collect();
    (splits, locals)
}

/// Which observable paths are profiled.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Unbalanced-left paths of G*_fn (section 5).
    Context,
    /// Unbalanced-right-left paths of G*_fn with GEntry vertices (section 6).
    Piecewise,
}

/// A supergraph transformed and numbered: everything the instrumentation,
/// the reference walk and the decoder need.
#[derive(Clone, Debug)]
pub struct Interproc {
    pub mode: Mode,
    pub call_graph: CallGraph,
    /// Per call site, its function and local index.
    pub sites: Vec<SiteRef>,
    /// Per call site, its possible callees.
    pub callees: Vec<Callee>,
    /// Per function, its tail calls.
    pub tail_calls: Vec<Vec<TailCall>>,
    /// Per function, the id of its first call site (and one past the last).
    pub site_start: Vec<usize>,
    /// Shared with the other numberings of one hybrid policy's rounds.
    pub splits: Arc<Vec<Split>>,
    pub locals: Vec<Arc<Local>>,
    pub numbering: Numbering,
    /// maxEnters per function (3.2).
    pub max_enters: Vec<u64>,
    /// Per function, the index in `numbering.entries` of its
    /// `Entry_global -> Entry_P` and `Entry_global -> GEntry_P` edges.
    entry_index: Vec<[Option<usize>; 2]>,
    /// Per function, its uncut call sites: `Exit_P`'s return edges in order.
    callers: Vec<Vec<CallSiteId>>,
}

impl Interproc {
    /// Transforms (T0-T3) and numbers `sg`, cutting only what must be cut.
    pub fn build(sg: &Supergraph, mode: Mode) -> Result<Interproc, GraphError> {
        Interproc::build_with_cuts(sg, mode, &[])
    }

    /// As [`Interproc::build`], also cutting `cuts` (section 8's hook: the
    /// sites a hybrid policy treats like recursive ones).
    pub fn build_with_cuts(
        sg: &Supergraph,
        mode: Mode,
        cuts: &[CallSiteId],
    ) -> Result<Interproc, GraphError> {
        Interproc::build_reusing(sg, mode, cuts, &mut Transformed::default())
    }

    /// [`Interproc::build_with_cuts`], reusing the local graphs `cache`
    /// holds of the same supergraph.
    pub fn build_reusing(
        sg: &Supergraph,
        mode: Mode,
        cuts: &[CallSiteId],
        cache: &mut Transformed,
    ) -> Result<Interproc, GraphError> {
        sg.check()?;
        let call_graph = CallGraph::new(sg, cuts);
        let starts = sg.site_starts();
        let (splits, locals) = transform_with(sg, &call_graph, mode, cache);
        let numbering = numbering::number(sg, &call_graph, &splits, &locals)?;
        let max_enters = call_graph.max_enters(sg)?;
        let callees: Vec<Callee> = sg
            .functions
            .iter()
            .flat_map(|f| f.calls.iter().map(|c| c.callee.clone()))
            .collect();
        let mut entry_index = vec![[None; 2]; sg.functions.len()];
        for (i, e) in numbering.entries.iter().enumerate() {
            entry_index[e.func.index()][e.kind as usize] = Some(i);
        }
        let mut callers = vec![Vec::new(); sg.functions.len()];
        for (s, callee) in callees.iter().enumerate() {
            if let (Callee::Direct(q), false) = (callee, call_graph.cut[s]) {
                callers[q.index()].push(CallSiteId::new(s));
            }
        }
        Ok(Interproc {
            tail_calls: sg.functions.iter().map(|f| f.tail_calls.clone()).collect(),
            entry_index,
            callers,
            mode,
            sites: sg.sites(),
            callees,
            site_start: starts,
            call_graph,
            splits,
            locals,
            numbering,
            max_enters,
        })
    }

    /// The number of observable paths: every path number is below it.
    pub fn total(&self) -> u64 {
        self.numbering.total
    }

    /// psi of node `v` (a split-CFG node, `GExit` or `GEntry`) of `f`.
    pub fn psi(&self, f: FuncId, v: crate::NodeId) -> Linear {
        self.numbering.functions[f.index()].psi[v.index()]
    }

    /// psi of `f`'s ENTRY.
    pub fn entry_psi(&self, f: FuncId) -> Linear {
        self.psi(f, Cfg::ENTRY)
    }

    /// The `Entry_global` edge into `f`'s ENTRY, if `f` is an entry function.
    pub fn global_entry(&self, f: FuncId) -> Option<&GlobalEntry> {
        let i = self.entry_index.get(f.index())?[EntryKind::Entry as usize]?;
        self.numbering.entries.get(i)
    }

    /// The `Entry_global -> GEntry_f` edge (piecewise).
    pub fn global_gentry(&self, f: FuncId) -> Option<&GlobalEntry> {
        let i = self.entry_index.get(f.index())?[EntryKind::GEntry as usize]?;
        self.numbering.entries.get(i)
    }

    /// The uncut call sites that call `f`, by id: where `Exit_f` returns to.
    pub fn callers(&self, f: FuncId) -> &[CallSiteId] {
        &self.callers[f.index()]
    }

    /// The id of local call `index` of `f`.
    pub fn site_id(&self, f: FuncId, index: usize) -> CallSiteId {
        CallSiteId::new(self.site_start[f.index()] + index)
    }

    /// Whether call site `s` is cut (summary edge, T3).
    pub fn is_cut(&self, s: CallSiteId) -> bool {
        self.call_graph.cut[s.index()]
    }
}
