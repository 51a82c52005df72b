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
//!   more subpaths than 64 bits number) cut as a backedge is;
//! - a dummy `u -> EXIT` of its own at the last segment `u` of each block
//!   that tail-calls a profiled function (`return_call*`): the subpath
//!   ends there, and the activation with it ([`SubpathEnd::TailCall`]);
//! - likewise at the last segment of each block that throws
//!   ([`SubpathEnd::Throw`]). A subpath of the activation that catches
//!   starts along the catch edge `ENTRY -> h` the CFG has for each handler
//!   `h`.
//!
//! The *subpath id* is the path's number (Fig. 5 with 5.2's successor order,
//! [`crate::numbering::number`]) in that DAG.
//!
//! Departures from the paper:
//! - Self loops are backedges here (the thesis' DAG conversion does not
//!   single them out; Ball & Larus 4.1 counts them apart).
//! - A subpath ending at a dead end exists in the DAG (so the numbering is
//!   dense) but is never observed: a run that stops there is cut short.
//! - Tail calls and exceptions, which the thesis does not consider, end
//!   subpaths of their own kinds (docs/decisions.md#ips-tail-calls,
//!   docs/decisions.md#ips-exceptions).

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::dag::{Dag, DagEdgeId, DagEdgeKind};
use crate::error::GraphError;
use crate::interproc::{Callee, FuncId, Function, SiteRef, Split, Supergraph};
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
    /// The function tail-calls a profiled function (`return_call*`),
    /// whose activation replaces its own.
    TailCall,
    /// The function throws an exception (`throw`, `throw_ref`).
    Throw,
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

/// A tail call of the function, as its subpaths end at it.
#[derive(Clone, Debug)]
pub struct SubpathTail {
    /// The split vertex the tail call leaves from: its block's last
    /// segment.
    pub at: NodeId,
    pub callee: Callee,
    /// The dummy `at -> EXIT` a subpath ending in it takes (`None`: ENTRY
    /// does not reach the block).
    pub exit: Option<DagEdgeId>,
}

/// One function's call-cut DAG and its Ball-Larus numbering.
#[derive(Clone, Debug)]
pub struct FunctionSubpaths {
    pub split: Split,
    pub dag: Dag,
    pub numbering: Numbering,
    /// Per split-CFG edge.
    pub roles: Vec<CutRole>,
    /// Per tail call of the supergraph function, in its order.
    pub tails: Vec<SubpathTail>,
    /// Per reached throwing block: its last segment and the dummy to EXIT
    /// a subpath ending in its throw takes.
    pub throws: Vec<(NodeId, DagEdgeId)>,
    /// Per handler: the catch edge `ENTRY -> h` a subpath of the catching
    /// activation starts along (the last such edge of the CFG).
    pub catches: Vec<(NodeId, EdgeId)>,
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
            .map(|f| FunctionSubpaths::new(Split::new(f), f))
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
    /// The subpaths of `func`, split as `split`: its truncated edges end a
    /// subpath as a backedge does (Ball-Larus 5.3,
    /// [`crate::interproc::Function::truncated`]).
    fn new(split: Split, func: &Function) -> Result<FunctionSubpaths, GraphError> {
        let truncated = &func.truncated;
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
        // A dummy of its own, not the vertex's dead-end or backedge one:
        // the subpath's end says which it was.
        let mut tail_exit: Vec<Option<DagEdgeId>> = vec![None; n];
        let tails = (func.tail_calls.iter())
            .map(|t| {
                let at = split.last[t.block.index()];
                let exit = dfs.reached(at).then(|| {
                    dummy(
                        &mut edges,
                        &mut tail_exit,
                        at,
                        (at, Cfg::EXIT, DagEdgeKind::ExitDummy),
                    )
                });
                SubpathTail {
                    at,
                    callee: t.callee.clone(),
                    exit,
                }
            })
            .collect();
        let mut throw_exit: Vec<Option<DagEdgeId>> = vec![None; n];
        let throws = (func.throws.iter())
            .map(|&b| split.last[b.index()])
            .filter(|&u| dfs.reached(u))
            .map(|u| {
                let edge = (u, Cfg::EXIT, DagEdgeKind::ExitDummy);
                (u, dummy(&mut edges, &mut throw_exit, u, edge))
            })
            .collect();
        let catches = (func.handlers.iter())
            .filter_map(|&h| {
                let from_entry = cfg.succs(Cfg::ENTRY).iter().copied();
                let e = from_entry.filter(|&e| cfg.dst(e) == h).last()?;
                Some((h, e))
            })
            .collect();
        let dag = Dag::from_edges(n, &edges);
        let numbering = number(&dag)?;
        Ok(FunctionSubpaths {
            split,
            dag,
            numbering,
            roles,
            tails,
            throws,
            catches,
        })
    }

    /// Whether DAG edge `d` is the dummy a subpath ending in a tail call
    /// takes.
    pub fn is_tail_exit(&self, d: DagEdgeId) -> bool {
        self.tails.iter().any(|t| t.exit == Some(d))
    }

    /// The tail call at split vertex `at` that may enter `callee`.
    pub fn tail_at(&self, at: NodeId, callee: FuncId) -> Option<&SubpathTail> {
        self.tails
            .iter()
            .find(|t| t.at == at && t.callee.may_call(callee))
    }

    /// The dummy a subpath ending in a throw at split vertex `at` takes.
    pub fn throw_at(&self, at: NodeId) -> Option<DagEdgeId> {
        self.throws.iter().find(|&&(u, _)| u == at).map(|&(_, d)| d)
    }

    /// The DAG edge of the catch edge into handler `h`, which a subpath
    /// of the catching activation starts along.
    pub fn catch_edge(&self, h: NodeId) -> Option<DagEdgeId> {
        let &(_, e) = self.catches.iter().find(|&&(v, _)| v == h)?;
        match self.roles[e.index()] {
            CutRole::Real(d) => Some(d),
            _ => None,
        }
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
        let last_id = *path.last().expect("a path has an edge");
        let last = self.dag.edge(last_id);
        let end = match (last.kind, split.call_at[last.src.index()]) {
            _ if self.is_tail_exit(last_id) => SubpathEnd::TailCall,
            _ if self.throws.iter().any(|&(_, d)| d == last_id) => SubpathEnd::Throw,
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
