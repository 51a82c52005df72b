//! One function's part of G*_fn (sections 3.2 and 6): its split CFG after
//! Transformations 0 to 3.
//!
//! - T0 (piecewise only): a vertex `GEntry_P`; surrogate entry edges leave
//!   it instead of `Entry_P`.
//! - T1: a vertex `GExit_P`, a local copy of `Exit_global`.
//! - T2: every backedge `w -> v` of a depth-first search from ENTRY (self
//!   loops included; the graph need not be reducible) is removed and
//!   replaced by the surrogate edges `Entry_P -> v` (or `GEntry_P -> v`)
//!   and `w -> GExit_P`, one per target and one per source.
//! - T3: the `c -> r` edge of a cut call site is a summary edge; that of an
//!   uncut site stands for the call (`c -> Entry_Q ... Exit_Q -> r`).
//!
//! Departures from the paper:
//! - A reached vertex with no way on (a block that ends in a trap, or loops
//!   only on itself) gets a `w -> GExit_P` edge, so every vertex has a path
//!   to an exit and the numbering stays dense; such a path is never counted
//!   at run time (the path in flight at an abrupt end is not counted).
//! - Vertices ENTRY does not reach get no edge.
//! - Successor order, which fixes the numbering (5.2, eq. 24): a vertex's
//!   kept edges in split-CFG edge order, then surrogate entries by target,
//!   then surrogate exits by source. For the paper's example this gives
//!   Figs. 7 and 9 exactly.

use crate::cfg::{id_impl, rows, Cfg, EdgeId, NodeId};
use crate::interproc::supergraph::{Function, Split};

/// An edge of a [`Local`] graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalEdgeId(u32);
id_impl!(LocalEdgeId);

/// What an edge of a [`Local`] graph stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LocalEdgeKind {
    /// A split-CFG edge kept as it is: an original CFG edge, or the link
    /// `r -> c'` between two calls of one block.
    Intra(EdgeId),
    /// `c -> r` of an uncut call site (the local call index): the call, the
    /// callee and the return. It has no rho; psi_c = psi_Entry_Q o psi_r.
    Call(usize),
    /// `c -> r` of a cut call site: the summary edge of T3.
    Summary(usize),
    /// `Entry_P -> v` (context) or `GEntry_P -> v` (piecewise), T2.
    SurrogateEntry,
    /// `w -> GExit_P`, T2 (or a dead end).
    SurrogateExit,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LocalEdge {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: LocalEdgeKind,
}

/// How executing a split-CFG edge shows in the local graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EdgeRole {
    /// The edge is kept.
    Kept(LocalEdgeId),
    /// A backedge `w -> v`: the path ends along `exit` (`w -> GExit_P`) and
    /// a new one starts along `entry` (`Entry_P -> v` or `GEntry_P -> v`).
    Back {
        exit: LocalEdgeId,
        entry: LocalEdgeId,
    },
    /// Its source is never reached.
    Unreachable,
}

/// One function of G*_fn.
#[derive(Clone, Debug)]
pub struct Local {
    /// Split-CFG nodes, then `GExit_P`, then (piecewise) `GEntry_P`.
    pub num_nodes: usize,
    pub gexit: NodeId,
    pub gentry: Option<NodeId>,
    pub edges: Vec<LocalEdge>,
    /// Per split-CFG edge.
    pub roles: Vec<EdgeRole>,
    /// Per node: ENTRY (or GEntry) reaches it.
    pub reachable: Vec<bool>,
    /// Per split node: its surrogate entry edge, if it has one.
    pub entry_of: Vec<Option<LocalEdgeId>>,
    /// Per split node: its surrogate exit edge, if it has one.
    pub exit_of: Vec<Option<LocalEdgeId>>,
    succ_start: Vec<u32>,
    succ: Vec<LocalEdgeId>,
}

impl Local {
    /// The local graph of `func` split as `split`; `cut[i]` says whether
    /// local call `i` is cut; `piecewise` adds `GEntry_P` (T0). Throwing
    /// blocks and handlers get surrogate edges as backedge ends do (9.2.2).
    ///
    /// `restart_after[i]` says whether the return site of local call `i`
    /// gets a surrogate entry: its callee may tail-call, and then the path
    /// restarts there.
    pub fn new(
        func: &Function,
        split: &Split,
        cut: &[bool],
        restart_after: &[bool],
        piecewise: bool,
    ) -> Local {
        let cfg = &split.cfg;
        let dfs = cfg.dfs();
        let n = cfg.num_nodes();
        let gexit = NodeId::new(n);
        let gentry = piecewise.then(|| NodeId::new(n + 1));
        let mut local = Local {
            num_nodes: n + 1 + usize::from(piecewise),
            gexit,
            gentry,
            edges: Vec::new(),
            roles: vec![EdgeRole::Unreachable; cfg.num_edges()],
            reachable: vec![false; n + 1 + usize::from(piecewise)],
            entry_of: vec![None; n],
            exit_of: vec![None; n],
            succ_start: Vec::new(),
            succ: Vec::new(),
        };
        let (mut back_target, mut back_source) = (vec![false; n], vec![false; n]);
        let mut has_succ = vec![false; n];
        // Backedges, and the edges truncation treats as such.
        let mut back = vec![false; cfg.num_edges()];
        for e in cfg.edge_ids() {
            back[e.index()] = dfs.reached(cfg.src(e)) && dfs.is_backedge(cfg, e);
        }
        for &e in &func.truncated {
            back[e.index()] = dfs.reached(cfg.src(e));
        }
        for &u in &func.throws {
            back_source[split.last[u.index()].index()] |= dfs.reached(u);
        }
        for t in &func.tail_calls {
            back_source[split.last[t.block.index()].index()] |= dfs.reached(t.block);
        }
        for &h in &func.handlers {
            back_target[h.index()] = true;
        }
        for (i, _) in restart_after.iter().enumerate().filter(|(_, &r)| r) {
            let r = split.return_site[i];
            back_target[r.index()] |= dfs.reached(r);
        }
        for e in cfg.edge_ids() {
            let (v, w) = cfg.edge(e);
            if !dfs.reached(v) {
                continue;
            }
            if back[e.index()] {
                back_source[v.index()] = true;
                back_target[w.index()] = true;
                continue;
            }
            let kind = match call_of_edge(split, e) {
                Some(i) if cut[i] => LocalEdgeKind::Summary(i),
                Some(i) => LocalEdgeKind::Call(i),
                None => LocalEdgeKind::Intra(e),
            };
            has_succ[v.index()] = true;
            local.roles[e.index()] = EdgeRole::Kept(local.push(v, w, kind));
        }
        let from = gentry.unwrap_or(Cfg::ENTRY);
        let mut entry_of = vec![None; n];
        for v in (0..n).filter(|&v| back_target[v]) {
            entry_of[v] = Some(local.push(from, NodeId::new(v), LocalEdgeKind::SurrogateEntry));
        }
        let mut exit_of = vec![None; n];
        for v in cfg.nodes() {
            let dead_end = dfs.reached(v) && v != Cfg::EXIT && !has_succ[v.index()];
            if back_source[v.index()] || dead_end {
                exit_of[v.index()] = Some(local.push(v, gexit, LocalEdgeKind::SurrogateExit));
            }
        }
        for e in cfg.edge_ids() {
            let (v, w) = cfg.edge(e);
            if back[e.index()] {
                if let (Some(exit), Some(entry)) = (exit_of[v.index()], entry_of[w.index()]) {
                    local.roles[e.index()] = EdgeRole::Back { exit, entry };
                }
            }
        }
        (local.entry_of, local.exit_of) = (entry_of, exit_of);
        (local.succ_start, local.succ) = rows(
            local.num_nodes,
            &local.edges,
            |e| e.src.index(),
            LocalEdgeId::new,
        );
        for v in cfg.nodes() {
            local.reachable[v.index()] = dfs.reached(v);
        }
        local.reachable[gexit.index()] = true;
        if let Some(g) = gentry {
            local.reachable[g.index()] = true;
        }
        local
    }

    fn push(&mut self, src: NodeId, dst: NodeId, kind: LocalEdgeKind) -> LocalEdgeId {
        self.edges.push(LocalEdge { src, dst, kind });
        LocalEdgeId::new(self.edges.len() - 1)
    }

    /// Outgoing edges in successor order.
    pub fn succs(&self, v: NodeId) -> &[LocalEdgeId] {
        let i = v.index();
        &self.succ[self.succ_start[i] as usize..self.succ_start[i + 1] as usize]
    }

    pub fn edge(&self, e: LocalEdgeId) -> &LocalEdge {
        &self.edges[e.index()]
    }

    /// The nodes in a topological order (Kahn's algorithm; `Call` edges
    /// count, so a return site follows its call vertex).
    pub fn topological_order(&self) -> Vec<NodeId> {
        let mut indegree = vec![0usize; self.num_nodes];
        for e in &self.edges {
            indegree[e.dst.index()] += 1;
        }
        let mut ready: Vec<usize> = (0..self.num_nodes).filter(|&v| indegree[v] == 0).collect();
        let mut order = Vec::with_capacity(self.num_nodes);
        while let Some(v) = ready.pop() {
            order.push(NodeId::new(v));
            for &e in self.succs(NodeId::new(v)) {
                let w = self.edges[e.index()].dst.index();
                indegree[w] -= 1;
                if indegree[w] == 0 {
                    ready.push(w);
                }
            }
        }
        debug_assert_eq!(order.len(), self.num_nodes, "T2 leaves no cycle");
        order
    }
}

/// The local call whose `c -> r` edge `e` is: call edges are numbered in
/// call order right after the original edges.
fn call_of_edge(split: &Split, e: EdgeId) -> Option<usize> {
    let i = e.index().checked_sub(split.original_edges)?;
    (i < split.call_edge.len()).then_some(i)
}
