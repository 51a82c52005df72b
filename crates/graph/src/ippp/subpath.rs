//! Subpaths (thesis 3.4.1) and their numbering: Ball-Larus on each
//! function's CFG split at its calls, every call vertex a path end.
//!
//! A *subpath* is an acyclic intraprocedural path that ends at a call, a
//! backedge or the function's return. It is numbered here as a Ball-Larus
//! path of the function's *call-cut DAG*: the [`Split`] CFG (each call site
//! splitting its block into a call vertex `c` and a return site `r`) with
//! - every backedge `w -> v` (self loops included) replaced by the dummy
//!   edges `w -> EXIT` and `ENTRY -> v` (Ball & Larus section 4);
//! - every call edge `c -> r` replaced by `c -> EXIT` and `ENTRY -> r`, as
//!   truncation (5.3) replaces a cut edge: the subpath before the call ends
//!   at `c`, the one after the return starts at `r`;
//! - a dummy `v -> EXIT` at each reached dead end;
//! - every edge the supergraph truncates (Ball-Larus 5.3: a function with
//!   more subpaths than 64 bits number) cut as a backedge is.
//!
//! The *subpath id* is the path's number (Fig. 5 with 5.2's successor order,
//! [`crate::numbering::number`]) in that DAG.
//!
//! Departures from the paper:
//! - Self loops are backedges here (the thesis' DAG conversion does not
//!   single them out; Ball & Larus 4.1 counts them apart).
//! - A subpath ending at a dead end exists in the DAG (so the numbering is
//!   dense) but is never observed: a run that stops there is cut short.

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::dag::{Dag, DagEdgeId, DagEdgeKind};
use crate::error::GraphError;
use crate::interproc::{Callee, FuncId, SiteRef, Split, Supergraph};
use crate::numbering::{number, Numbering};
use crate::regenerate::regenerate;

/// How a subpath begins.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SubpathStart {
    /// At the function's ENTRY (a call or the host entered it).
    Entry,
    /// At a loop head `v`, after a backedge into it.
    LoopHead(NodeId),
    /// At the return site of local call `index`, after the callee returned.
    AfterCall(usize),
}

/// How a subpath ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SubpathEnd {
    /// The function returns (its EXIT).
    Exit,
    /// Local call `index` is made.
    Call(usize),
    /// A backedge leaves the (split) vertex `node`; also, never observed, a
    /// dead end at `node`.
    Backedge(NodeId),
}

/// A subpath spelt out: its start, the original CFG edges it takes (the
/// links between two calls of one block are left out), and its end.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Subpath {
    pub start: SubpathStart,
    pub edges: Vec<EdgeId>,
    pub end: SubpathEnd,
}

/// A subpath `<f, p>` as profiled: the function and the subpath's id in
/// that function's call-cut DAG.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SubpathRef {
    pub func: FuncId,
    pub id: u64,
}

/// What taking a split-CFG edge does in the call-cut DAG.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CutRole {
    /// The edge is a DAG edge.
    Real(DagEdgeId),
    /// A backedge or a call edge: the subpath ends along `exit`, the next
    /// one starts along `entry`.
    Cut { exit: DagEdgeId, entry: DagEdgeId },
    /// Its source is not reached from ENTRY.
    Unreachable,
}

/// One function's call-cut DAG and its Ball-Larus numbering.
#[derive(Clone, Debug)]
pub struct FunctionSubpaths {
    pub split: Split,
    pub dag: Dag,
    pub numbering: Numbering,
    /// Per split-CFG edge.
    pub roles: Vec<CutRole>,
}

/// The subpath numbering of every function of a supergraph.
#[derive(Clone, Debug)]
pub struct SubpathNumbering {
    pub functions: Vec<FunctionSubpaths>,
    /// Per call site, its function and local index.
    pub sites: Vec<SiteRef>,
    /// Per call site, whom it may call.
    pub callees: Vec<Callee>,
}

impl SubpathNumbering {
    /// Splits and numbers every function of `sg`. Fails if `sg` is
    /// malformed ([`GraphError::BadSupergraph`]) or a function has more
    /// subpaths than `u64` counts ([`GraphError::TooManyPaths`]).
    pub fn new(sg: &Supergraph) -> Result<SubpathNumbering, GraphError> {
        sg.check()?;
        let functions = sg
            .functions
            .iter()
            .map(|f| FunctionSubpaths::new(Split::new(f), &f.truncated))
            .collect::<Result<_, _>>()?;
        let callees = sg
            .functions
            .iter()
            .flat_map(|f| f.calls.iter().map(|c| c.callee.clone()))
            .collect();
        Ok(SubpathNumbering {
            functions,
            sites: sg.sites(),
            callees,
        })
    }

    /// The function's numbering, if `f` is in range.
    pub fn function(&self, f: FuncId) -> Option<&FunctionSubpaths> {
        self.functions.get(f.index())
    }

    /// Subpath `r` spelt out (Ball & Larus 3.5 on the call-cut DAG).
    pub fn decode(&self, r: SubpathRef) -> Result<Subpath, GraphError> {
        let f = self.function(r.func).ok_or(GraphError::BadSupergraph {
            function: r.func.index(),
            reason: "no such function",
        })?;
        f.decode(r.id)
    }
}

impl FunctionSubpaths {
    /// `truncated`: original CFG edges that end a subpath as a backedge
    /// does (Ball-Larus 5.3, [`crate::interproc::Function::truncated`]).
    fn new(split: Split, truncated: &[EdgeId]) -> Result<FunctionSubpaths, GraphError> {
        let cfg = &split.cfg;
        let dfs = cfg.dfs();
        let n = cfg.num_nodes();
        let (mut entry_of, mut exit_of) = (vec![None; n], vec![None; n]);
        let mut edges: Vec<(NodeId, NodeId, DagEdgeKind)> = Vec::new();
        let mut roles = vec![CutRole::Unreachable; cfg.num_edges()];
        let mut has_real = vec![false; n];
        let is_call = |e: EdgeId| split.call_edge.contains(&e) || truncated.contains(&e);
        for e in cfg.edge_ids().filter(|&e| dfs.reached(cfg.src(e))) {
            let (v, w) = cfg.edge(e);
            if !dfs.is_backedge(cfg, e) && !is_call(e) {
                roles[e.index()] = CutRole::Real(DagEdgeId::new(edges.len()));
                edges.push((v, w, DagEdgeKind::Real(e)));
                has_real[v.index()] = true;
            }
        }
        let dummy = |edges: &mut Vec<_>, of: &mut Vec<Option<DagEdgeId>>, at: NodeId, edge| {
            *of[at.index()].get_or_insert_with(|| {
                edges.push(edge);
                DagEdgeId::new(edges.len() - 1)
            })
        };
        for e in cfg.edge_ids().filter(|&e| dfs.reached(cfg.src(e))) {
            let (v, w) = cfg.edge(e);
            if dfs.is_backedge(cfg, e) || is_call(e) {
                let exit = dummy(
                    &mut edges,
                    &mut exit_of,
                    v,
                    (v, Cfg::EXIT, DagEdgeKind::ExitDummy),
                );
                let entry = dummy(
                    &mut edges,
                    &mut entry_of,
                    w,
                    (Cfg::ENTRY, w, DagEdgeKind::EntryDummy),
                );
                roles[e.index()] = CutRole::Cut { exit, entry };
            }
        }
        for v in cfg.nodes().filter(|&v| dfs.reached(v) && v != Cfg::EXIT) {
            if !has_real[v.index()] {
                dummy(
                    &mut edges,
                    &mut exit_of,
                    v,
                    (v, Cfg::EXIT, DagEdgeKind::ExitDummy),
                );
            }
        }
        let dag = Dag::from_edges(n, &edges);
        let numbering = number(&dag)?;
        Ok(FunctionSubpaths {
            split,
            dag,
            numbering,
            roles,
        })
    }

    /// The number of subpaths: every id is below it.
    pub fn total(&self) -> u64 {
        self.numbering.total()
    }

    /// Subpath `id` spelt out.
    pub fn decode(&self, id: u64) -> Result<Subpath, GraphError> {
        let path = regenerate(&self.dag, &self.numbering, id)?;
        let split = &self.split;
        let first = self.dag.edge(path[0]);
        let start = match first.kind {
            DagEdgeKind::EntryDummy => match split.return_of[first.dst.index()] {
                Some(i) => SubpathStart::AfterCall(i),
                None => SubpathStart::LoopHead(first.dst),
            },
            _ => SubpathStart::Entry,
        };
        let last = self.dag.edge(*path.last().expect("a path has an edge"));
        let end = match (last.kind, split.call_at[last.src.index()]) {
            (DagEdgeKind::ExitDummy, Some(i)) => SubpathEnd::Call(i),
            (DagEdgeKind::ExitDummy, None) => SubpathEnd::Backedge(last.src),
            _ => SubpathEnd::Exit,
        };
        let edges = path
            .iter()
            .filter_map(|&d| match self.dag.edge(d).kind {
                DagEdgeKind::Real(e) if split.is_original(e) => Some(e),
                _ => None,
            })
            .collect();
        Ok(Subpath { start, edges, end })
    }
}
