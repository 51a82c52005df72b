//! The supergraph G* of a module (Melski & Reps, "Interprocedural Path
//! Profiling", UW-Madison TR 1382, 1998, section 2.2) built from the CFG
//! builder's output, for [`pathprof_graph::interproc`], and a run's edge
//! trace as the execution its walk and oracle read ([`events`]).
//!
//! # Model
//! - One supergraph function per *defined* function: supergraph function
//!   `i` is module function `num_imported_funcs + i`.
//! - A call site of the supergraph is a reachable non-tail call of
//!   [`FunctionCfg::calls`] that may enter a profiled function (a defined
//!   function the builder models): `call f` is `Callee::Direct`,
//!   `call_indirect`/`call_ref` are `Callee::Indirect` with the call
//!   graph's possible targets (the graph side cuts them, T3).
//! - A tail call (`return_call*`) that may enter a profiled function is a
//!   [`TailCall`] of its block (section 9).
//! - Throwing blocks: those with a `throw`/`throw_ref` edge to EXIT; handlers:
//!   the targets of `Catch` edges out of ENTRY (9.2.2), EXIT among them for
//!   a catch clause into the function's own label (the caught values are
//!   the function's results: a path starts at EXIT and returns).
//! - Entry functions: `_start` first, then the start function, every
//!   exported function, every function whose reference an import may be
//!   handed ([`crate::tables::escaping_functions`]: a callback), and every
//!   profiled function an unmodelled one may call (control arrives there
//!   with no call site the supergraph knows).
//!
//! # Departures and limits
//! - Imports are opaque leaves (the graph side's model): calls to them are
//!   not call sites, and neither are calls to functions the CFG builder
//!   refuses ([`crate::Unsupported`]): such a function is in the supergraph
//!   only as a placeholder `ENTRY -> EXIT` (no trace event is ever made
//!   in it), so function ids stay the defined-function indices.
//! - An indirect call whose possible targets are all opaque is not a call
//!   site. One that has profiled targets but reaches an opaque function at
//!   run time cannot be told apart in a trace: [`events`] reports it
//!   ([`TraceError::SkippedSite`]).
//!
//! # Cases ([`ModuleSupergraph::with_cases`])
//! A `call_indirect` on a static table ([`crate::tables`]: its slots are
//! known before the run) can only reach the functions its slots hold, and
//! which one the table index names. When at most `max_cases` profiled
//! functions of the call's type are in the table, the call becomes one
//! case per function (`Callee::Direct`, with the slots that select it in
//! [`ModuleSupergraph::case_slots`]), and, if the table also holds opaque
//! functions of the type, a last case `Callee::Indirect(vec![])` for them
//! (cut, as any indirect call): the report's expansion of an indirect call
//! into direct-call dispatch (section 9.2.3). The instrumentation tells the
//! case from the index before the call. Given the functions a prior run
//! ran ([`ModuleSupergraph::with_live_cases`]), only they count towards
//! `max_cases`; the others join the last case, `Callee::Indirect` of them.
//!
//! The same slots tell apart the callees of a tail call through a static
//! table that holds opaque functions as well as profiled ones
//! ([`ModuleSupergraph::tail_slots`]).

pub mod events;

use pathprof_graph::interproc::{
    CallSite as SgCallSite, Callee as SgCallee, FuncId, Function, Supergraph, TailCall,
};
use pathprof_graph::{Cfg, NodeId};
use wasmparser::{ExternalKind, Parser, Payload};

use crate::callgraph::CallGraph;
use crate::cfg::{EdgeKind, FunctionCfg, ModuleInfo};
use crate::error::{Result, WasmError};

pub use events::{events, EventStream, TraceError};

/// A module's supergraph, and where its call sites are in the CFGs.
#[derive(Clone, Debug)]
pub struct ModuleSupergraph {
    pub supergraph: Supergraph,
    pub num_imported_funcs: u32,
    /// Per supergraph function, per supergraph call: its index in the
    /// function's [`FunctionCfg::calls`] (for the instrumentation, which
    /// keys call-site actions by it).
    pub call_index: Vec<Vec<u32>>,
    /// Per supergraph function, per supergraph tail call: its index in the
    /// function's [`FunctionCfg::calls`].
    pub tail_index: Vec<Vec<u32>>,
    /// Tail calls that may enter a profiled function or an opaque one
    /// (an import, an unmodelled function), as (supergraph function, index
    /// in its [`FunctionCfg::calls`]), that no static table tells apart
    /// ([`ModuleSupergraph::tail_slots`]): which one a run takes is only
    /// known at run time.
    pub mixed_tail_calls: Vec<(FuncId, u32)>,
    /// Per supergraph function, per block: the range of its supergraph calls
    /// (a block's calls are contiguous in code order).
    pub block_calls: Vec<Vec<(u32, u32)>>,
    /// Per supergraph function, per edge: its kind (empty for placeholders).
    pub edge_kinds: Vec<Vec<EdgeKind>>,
    /// Per supergraph function: whether the CFG builder modelled it.
    pub modelled: Vec<bool>,
    /// Per supergraph function: the id of its first call site (and one past
    /// the last), as [`Supergraph::site_starts`].
    pub site_start: Vec<usize>,
    /// Per supergraph function, per supergraph call: the slots of the table
    /// that select it, for a case of a `call_indirect` that tells a direct
    /// callee (empty for every other call).
    pub case_slots: Vec<Vec<Vec<u32>>>,
    /// Per supergraph function, per supergraph tail call: for one through
    /// a static table that holds both profiled and opaque functions of its
    /// type, the slots of the profiled ones (the others return for the
    /// caller); `None` for every other tail call.
    pub tail_slots: Vec<Vec<Option<Vec<u32>>>>,
    /// Per supergraph function: the indices in its [`FunctionCfg::calls`]
    /// of the calls (not tail calls) that may enter opaque code (an
    /// import, an unmodelled function), which may call back into profiled
    /// code and catch what it throws: the instrumentation puts the module
    /// registers back as they were when such a call returns
    /// (docs/decisions.md#import-catches).
    pub opaque_calls: Vec<Vec<u32>>,
}

/// The cases of one indirect call.
#[derive(Default)]
struct Cases {
    /// Per profiled callee told apart: its slots.
    by_func: Vec<(FuncId, Vec<u32>)>,
    /// Profiled callees in the table not told apart (they did not run),
    /// with their slots.
    rest: Vec<(FuncId, Vec<u32>)>,
    /// Whether the table holds opaque functions of the call's type too.
    opaque: bool,
}

impl Cases {
    /// Whether a slot may hold a callee no case of its own calls.
    fn others(&self) -> bool {
        self.opaque || !self.rest.is_empty()
    }
}

impl ModuleSupergraph {
    /// The supergraph of the module `bytes` that `info` describes.
    pub fn new(bytes: &[u8], info: &ModuleInfo) -> Result<ModuleSupergraph> {
        ModuleSupergraph::with_cases(bytes, info, 0)
    }

    /// As [`ModuleSupergraph::new`], with the `call_indirect`s on static
    /// tables that may reach at most `max_cases` profiled functions
    /// expanded into cases (module comment; 0: none).
    pub fn with_cases(
        bytes: &[u8],
        info: &ModuleInfo,
        max_cases: usize,
    ) -> Result<ModuleSupergraph> {
        ModuleSupergraph::with_live_cases(bytes, info, max_cases, None)
    }

    /// As [`ModuleSupergraph::with_cases`], counting only the profiled
    /// callees in `live` (module indices: the functions a prior run of the
    /// program ran) towards `max_cases`: the others share the call's last
    /// case, cut (`Callee::Indirect` of them), with any opaque callee.
    pub fn with_live_cases(
        bytes: &[u8],
        info: &ModuleInfo,
        max_cases: usize,
        live: Option<&std::collections::BTreeSet<u32>>,
    ) -> Result<ModuleSupergraph> {
        let cg = CallGraph::new(bytes, info)?;
        // Static tables matter to cases and to tail calls through a table
        // (finding them reads the whole code section).
        let tail_through_table = info.functions.iter().flatten().any(|f| {
            f.calls
                .iter()
                .any(|c| c.tail && matches!(c.callee, crate::Callee::Indirect { .. }))
        });
        let tables = match max_cases > 0 || tail_through_table {
            false => crate::tables::StaticTables::default(),
            true => crate::tables::static_tables(bytes)?,
        };
        let imported = info.num_imported_funcs;
        let profiled = |f: u32| {
            f.checked_sub(imported)
                .and_then(|i| info.functions.get(i as usize))
                .is_some_and(|r| r.is_ok())
        };
        // The profiled targets, and whether an opaque one is possible too.
        let targets = |callee: &crate::Callee| -> (Vec<FuncId>, bool) {
            let all = cg.targets(callee);
            let to: Vec<FuncId> = all
                .iter()
                .filter(|&&f| profiled(f))
                .map(|&f| FuncId::new((f - imported) as usize))
                .collect();
            let opaque = to.len() < all.len();
            (to, opaque)
        };
        // Per profiled function a static table's call may reach, its slots.
        let by_slot = |callee: &crate::Callee| -> Option<Cases> {
            let &crate::Callee::Indirect { table, .. } = callee else {
                return None;
            };
            let mut cases = Cases::default();
            for &f in cg.targets(callee) {
                let slots = tables.slots_of(table, f)?;
                let id = || FuncId::new((f - imported) as usize);
                match (slots.is_empty(), profiled(f)) {
                    (true, _) => {}
                    (false, true) if live.is_none_or(|l| l.contains(&f)) => {
                        cases.by_func.push((id(), slots))
                    }
                    (false, true) => cases.rest.push((id(), slots)),
                    (false, false) => cases.opaque = true,
                }
            }
            Some(cases)
        };
        let mut sg = ModuleSupergraph {
            supergraph: Supergraph::default(),
            num_imported_funcs: imported,
            call_index: Vec::new(),
            tail_index: Vec::new(),
            mixed_tail_calls: Vec::new(),
            block_calls: Vec::new(),
            edge_kinds: Vec::new(),
            modelled: Vec::new(),
            site_start: Vec::new(),
            case_slots: Vec::new(),
            tail_slots: Vec::new(),
            opaque_calls: Vec::new(),
        };
        let mut entries = entry_points(bytes, imported)?;
        // Callbacks: functions an import may call back through a reference.
        let escaping = crate::tables::escaping_functions(bytes)?;
        entries.extend(
            (escaping.into_iter())
                .filter_map(|f| f.checked_sub(imported).map(|i| FuncId::new(i as usize))),
        );
        for (i, func) in info.functions.iter().enumerate() {
            match func {
                Ok(fcfg) => sg.add_modelled(fcfg, (&targets, &by_slot), max_cases),
                Err(_) => {
                    sg.add_placeholder();
                    let module_index = imported + i as u32;
                    entries.extend(
                        cg.callees(module_index)
                            .iter()
                            .filter(|&&f| profiled(f))
                            .map(|&f| FuncId::new((f - imported) as usize)),
                    );
                }
            }
        }
        let mut seen = vec![false; info.functions.len()];
        entries.retain(|f| {
            let fresh = seen.get(f.index()).is_some_and(|s| !s);
            if fresh {
                seen[f.index()] = true;
            }
            fresh && sg.modelled[f.index()]
        });
        sg.supergraph.entries = entries;
        sg.site_start = sg.supergraph.site_starts();
        Ok(sg)
    }

    fn add_modelled(
        &mut self,
        fcfg: &FunctionCfg,
        (targets, by_slot): (
            &dyn Fn(&crate::Callee) -> (Vec<FuncId>, bool),
            &dyn Fn(&crate::Callee) -> Option<Cases>,
        ),
        max_cases: usize,
    ) {
        let f = FuncId::new(self.supergraph.functions.len());
        let mut func = Function::new(fcfg.cfg.clone(), Vec::new());
        let (mut call_index, mut tail_index) = (Vec::new(), Vec::new());
        let (mut case_slots, mut tail_slots) = (Vec::new(), Vec::new());
        let mut block_calls = vec![(0, 0); fcfg.cfg.num_nodes()];
        let mut opaque_calls = Vec::new();
        for (k, call) in fcfg.calls.iter().enumerate() {
            let (to, opaque) = targets(&call.callee);
            if (opaque || to.is_empty()) && !call.tail {
                opaque_calls.push(k as u32);
            }
            if to.is_empty() {
                continue; // opaque: an import or an unmodelled function
            }
            let callee = match call.callee {
                crate::Callee::Direct(_) => SgCallee::Direct(to[0]),
                _ => SgCallee::Indirect(to),
            };
            if call.tail {
                func.tail_calls.push(TailCall {
                    block: call.block,
                    callee,
                });
                tail_index.push(k as u32);
                // Through a static table, the slot tells a profiled callee
                // from an opaque one, if the table holds both.
                let slots = match (opaque, by_slot(&call.callee)) {
                    (false, _) => None,
                    (true, Some(c)) if !c.opaque => None,
                    (true, Some(c)) => {
                        let profiled = c.by_func.into_iter().chain(c.rest);
                        let mut slots: Vec<u32> = profiled.flat_map(|(_, slots)| slots).collect();
                        slots.sort_unstable();
                        Some(slots)
                    }
                    (true, None) => {
                        self.mixed_tail_calls.push((f, k as u32));
                        None
                    }
                };
                tail_slots.push(slots);
                continue;
            }
            // One call, or its cases (the first is the call itself).
            let cases = by_slot(&call.callee)
                .filter(|c| !c.by_func.is_empty() && c.by_func.len() <= max_cases);
            let listed: Vec<(SgCallee, Vec<u32>)> = match cases {
                Some(c) => {
                    let rest = c.rest.iter().map(|&(q, _)| q).collect();
                    let last = c.others().then(|| SgCallee::Indirect(rest));
                    c.by_func
                        .into_iter()
                        .map(|(q, slots)| (SgCallee::Direct(q), slots))
                        .chain(last.map(|callee| (callee, Vec::new())))
                        .collect()
                }
                None => vec![(callee, Vec::new())],
            };
            let range = &mut block_calls[call.block.index()];
            if range.1 == 0 {
                range.0 = func.calls.len() as u32;
            }
            range.1 += listed.len() as u32;
            for (i, (callee, slots)) in listed.into_iter().enumerate() {
                if i > 0 {
                    func.cases.push(func.calls.len() as u32);
                }
                func.calls.push(SgCallSite {
                    block: call.block,
                    callee,
                });
                call_index.push(k as u32);
                case_slots.push(slots);
            }
        }
        for e in fcfg.cfg.edge_ids() {
            let (src, dst) = fcfg.cfg.edge(e);
            match fcfg.edge_kinds[e.index()] {
                EdgeKind::Throw | EdgeKind::ThrowRef => func.throws.push(src),
                EdgeKind::Catch => func.handlers.push(dst),
                _ => {}
            }
        }
        func.throws.sort_unstable();
        func.throws.dedup();
        func.handlers.sort_unstable();
        func.handlers.dedup();
        self.supergraph.functions.push(func);
        self.case_slots.push(case_slots);
        self.tail_slots.push(tail_slots);
        self.call_index.push(call_index);
        self.tail_index.push(tail_index);
        self.opaque_calls.push(opaque_calls);
        self.block_calls.push(block_calls);
        self.edge_kinds.push(fcfg.edge_kinds.clone());
        self.modelled.push(true);
    }

    /// An unmodelled function: `ENTRY -> EXIT`, no calls, never entered by
    /// a trace event.
    fn add_placeholder(&mut self) {
        let cfg = Cfg::from_edges(2, &[(Cfg::ENTRY, Cfg::EXIT)]);
        self.supergraph
            .functions
            .push(Function::new(cfg, Vec::new()));
        self.call_index.push(Vec::new());
        self.case_slots.push(Vec::new());
        self.tail_slots.push(Vec::new());
        self.tail_index.push(Vec::new());
        self.opaque_calls.push(Vec::new());
        self.block_calls.push(vec![(0, 0); 2]);
        self.edge_kinds.push(Vec::new());
        self.modelled.push(false);
    }

    /// The supergraph function of module function `index`, if defined.
    pub fn func_of(&self, index: u32) -> Option<FuncId> {
        let i = index.checked_sub(self.num_imported_funcs)? as usize;
        (i < self.supergraph.functions.len()).then(|| FuncId::new(i))
    }

    /// The function of call site `s` and its local index there.
    pub fn site(&self, s: usize) -> (FuncId, usize) {
        let f = self.site_start.partition_point(|&start| start <= s) - 1;
        (FuncId::new(f), s - self.site_start[f])
    }

    /// The supergraph calls block `b` of `f` makes, as local call indices.
    pub fn calls_of(&self, f: FuncId, b: NodeId) -> std::ops::Range<usize> {
        let (start, len) = self.block_calls[f.index()]
            .get(b.index())
            .copied()
            .unwrap_or((0, 0));
        start as usize..(start + len) as usize
    }
}

/// Entry functions from the module's sections, as supergraph ids: `_start`
/// first, then the start function and the other function exports.
fn entry_points(bytes: &[u8], imported: u32) -> Result<Vec<FuncId>> {
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    let defined = |f: u32| f.checked_sub(imported).map(|i| FuncId::new(i as usize));
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|e| WasmError::invalid(&e))? {
            Payload::StartSection { func, .. } => rest.extend(defined(func)),
            Payload::ExportSection(r) => {
                for export in r {
                    let export = export.map_err(|e| WasmError::invalid(&e))?;
                    if export.kind != ExternalKind::Func {
                        continue;
                    }
                    let to = if export.name == "_start" {
                        &mut first
                    } else {
                        &mut rest
                    };
                    to.extend(defined(export.index));
                }
            }
            _ => {}
        }
    }
    first.extend(rest);
    Ok(first)
}
