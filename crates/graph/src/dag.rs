//! The DAG a CFG is path-profiled on (Ball & Larus sections 4, 4.1 and 5.3).
//!
//! Terms:
//! - *backedge*: a CFG edge `v->w` whose target is a DFS ancestor of its source
//!   (DFS from ENTRY, successors in insertion order). Every cycle holds one.
//! - *dummy edge*: section 4 replaces backedges by an `ENTRY->w` edge per
//!   vertex `w` that is the target of one or more backedges (an *EntryDummy*,
//!   "reinitialise the path register") and a `v->EXIT` edge per vertex `v`
//!   that is the source of one or more (an *ExitDummy*, "count the path").
//!   Executing backedge `v->w` is executing `ExitDummy(v)` then `EntryDummy(w)`.
//! - *self loop*: a backedge `v->v`. Section 4.1 gives it a counter of its own;
//!   it has no DAG edge and does not split the path through `v`.
//! - *cut*: section 5.3 truncates paths at a vertex `v` with too many paths by
//!   treating every outgoing edge `v->w` (`w != EXIT`) like a backedge.
//!
//! Departures from the paper:
//! - A reachable vertex other than EXIT with no outgoing DAG edge (a block
//!   that only loops on itself, or ends in a trap with no edge to EXIT) gets an
//!   ExitDummy too, so every vertex reaches EXIT and the numbering stays a
//!   bijection. Such a path is only ever counted by an abrupt exit.
//! - Vertices ENTRY does not reach get no DAG edge at all: they never run.
//! - Cutting ENTRY is ignored: its edges would become `ExitDummy(ENTRY)`
//!   followed by an EntryDummy from ENTRY to the same target, which gains nothing.
//!
//! DAG edge ids are assigned in a fixed order, which the numbering's tie
//! breaking (5.2) depends on: first the real edges in CFG edge order, then
//! the EntryDummies by target, then the ExitDummies by source. A vertex's
//! successor list follows the same order.

use serde::{Deserialize, Serialize};

use crate::cfg::{id_impl, Cfg, EdgeId, NodeId};
use crate::dfs::Dfs;
use crate::error::GraphError;

/// An edge of a [`Dag`]. The index is private; conversions are checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DagEdgeId(u32);
id_impl!(DagEdgeId);

/// What a DAG edge stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DagEdgeKind {
    /// A CFG edge kept as it is.
    Real(EdgeId),
    /// `ENTRY->w` for a loop head or the target of a cut edge.
    EntryDummy,
    /// `v->EXIT` for the source of a backedge or cut edge, or a dead end.
    ExitDummy,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DagEdge {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: DagEdgeKind,
}

/// The acyclic graph of section 4, on the same node ids as its CFG.
///
/// The public fields are views for reading; the adjacency lists behind
/// [`Dag::succs`] and [`Dag::preds`] are built with them, so a `Dag` is only
/// made by [`Dag::new`], [`Dag::with_cuts`] or [`Dag::from_edges`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dag {
    /// Same node ids as the CFG.
    pub num_nodes: usize,
    pub edges: Vec<DagEdge>,
    /// CFG backedges found by DFS from ENTRY, self loops excluded, in edge order.
    pub backedges: Vec<EdgeId>,
    /// Self loops of reachable vertices (4.1), in edge order.
    pub self_loops: Vec<EdgeId>,
    /// Targets of backedges (each has an EntryDummy), ascending.
    pub loop_heads: Vec<NodeId>,
    /// Vertices truncated by section 5.3, ascending.
    pub cut_nodes: Vec<NodeId>,
    /// Per CFG edge, the DAG edges that stand for it, in execution order: a
    /// real edge `[Real]`; a backedge or cut edge `v->w` `[ExitDummy(v),
    /// EntryDummy(w)]`; a self loop or an edge out of an unreachable vertex `[]`.
    pub cfg_to_dag: CfgToDag,
    /// Per node, whether ENTRY reaches it in the DAG (EXIT always, for a DAG
    /// built from a CFG). Unreachable nodes have no DAG edges.
    pub reachable: Vec<bool>,
    /// Adjacency in compressed rows, as in [`Cfg`]: node `v`'s outgoing
    /// edges are `succ[succ_start[v]..succ_start[v + 1]]`. Built once every
    /// edge is in, so a DAG costs a few allocations, not two per node.
    succ_start: Vec<u32>,
    succ: Vec<DagEdgeId>,
    pred_start: Vec<u32>,
    pred: Vec<DagEdgeId>,
    entry_dummy_of: DummyOf,
    exit_dummy_of: DummyOf,
}

/// Per node, its dummy edge of one kind, if any: an optional id in 4 bytes
/// (`u32::MAX` for none) rather than 8, for two vectors the size of the
/// graph in every DAG built.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DummyOf(Vec<u32>);

impl DummyOf {
    const NONE: u32 = u32::MAX;

    fn new(n: usize) -> DummyOf {
        DummyOf(vec![Self::NONE; n])
    }

    fn get(&self, v: usize) -> Option<DagEdgeId> {
        match self.0.get(v) {
            Some(&d) if d != Self::NONE => Some(DagEdgeId(d)),
            _ => None,
        }
    }

    /// Sets `v`'s dummy unless it has one.
    fn get_or_set(&mut self, v: usize, d: DagEdgeId) {
        if self.0[v] == Self::NONE {
            self.0[v] = d.0;
        }
    }
}

/// Per CFG edge, the DAG edges that stand for it ([`Dag::cfg_to_dag`]),
/// kept flat: edge `e`'s list is `self[e.index()]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfgToDag {
    start: Vec<u32>,
    list: Vec<DagEdgeId>,
}

impl CfgToDag {
    fn with_capacity(cfg_edges: usize, dag_edges: usize) -> Self {
        let mut start = Vec::with_capacity(cfg_edges + 1);
        start.push(0);
        CfgToDag {
            start,
            list: Vec::with_capacity(dag_edges),
        }
    }

    /// Appends the list of the next CFG edge.
    fn push(&mut self, dag_edges: &[DagEdgeId]) {
        self.list.extend_from_slice(dag_edges);
        self.start.push(self.list.len() as u32);
    }

    /// Number of CFG edges mapped (0 for a DAG rebuilt from its edges).
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The list of CFG edge `index`, if it is mapped.
    pub fn get(&self, index: usize) -> Option<&[DagEdgeId]> {
        let (&from, &to) = (self.start.get(index)?, self.start.get(index + 1)?);
        Some(&self.list[from as usize..to as usize])
    }
}

impl std::ops::Index<usize> for CfgToDag {
    type Output = [DagEdgeId];
    fn index(&self, index: usize) -> &[DagEdgeId] {
        self.get(index).expect("CFG edge index out of range")
    }
}

/// What happens to a CFG edge in the DAG.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Role {
    Unreachable,
    SelfLoop,
    Backedge,
    Cut,
    Real,
}

/// Which vertices get an EntryDummy and which an ExitDummy: one per target
/// and one per source of backedges and cut edges, shared by all of them; an
/// ExitDummy for dead ends (reached vertices with no real outgoing edge).
fn dummy_ends(cfg: &Cfg, roles: &[Role], dfs: &Dfs) -> (Vec<bool>, Vec<bool>) {
    let n = cfg.num_nodes();
    let (mut needs_entry, mut needs_exit) = (vec![false; n], vec![false; n]);
    let mut has_succ = vec![false; n];
    for e in cfg.edge_ids() {
        let (v, w) = cfg.edge(e);
        match roles[e.index()] {
            Role::Backedge | Role::Cut => {
                needs_exit[v.index()] = true;
                needs_entry[w.index()] = true;
            }
            Role::Real => has_succ[v.index()] = true,
            Role::Unreachable | Role::SelfLoop => {}
        }
    }
    for v in cfg.nodes() {
        if dfs.reached(v) && v != Cfg::EXIT && !has_succ[v.index()] {
            needs_exit[v.index()] = true;
        }
    }
    (needs_entry, needs_exit)
}

impl Dag {
    /// The DAG of `cfg` (section 4 with 4.1), without truncation.
    pub fn new(cfg: &Cfg) -> Result<Dag, GraphError> {
        Dag::with_cuts(cfg, &[])
    }

    /// The DAG of `cfg` with the outgoing edges of `cuts` truncated (5.3):
    /// each `v->w` with `w != EXIT` becomes `[ExitDummy(v), EntryDummy(w)]`.
    /// `cut_nodes` lists the reachable vertices where an edge was cut.
    pub fn with_cuts(cfg: &Cfg, cuts: &[NodeId]) -> Result<Dag, GraphError> {
        check_ends(cfg)?;
        let n = cfg.num_nodes();
        let mut cut = vec![false; n];
        for &v in cuts {
            if v.index() >= n {
                return Err(GraphError::NodeOutOfRange {
                    node: v,
                    num_nodes: n,
                });
            }
            cut[v.index()] = v != Cfg::ENTRY;
        }
        let dfs = cfg.dfs();
        let roles: Vec<Role> = cfg.edge_ids().map(|e| role(cfg, dfs, &cut, e)).collect();
        let mut dag = Dag::empty(n);
        let (needs_entry, needs_exit) = dummy_ends(cfg, &roles, dfs);
        // Exactly the DAG's edges: the largest DAGs are where the planning's
        // memory peaks, and a vector doubled past its need holds up to twice
        // their size.
        let reals = roles.iter().filter(|&&r| r == Role::Real).count();
        let dummies = needs_entry
            .iter()
            .chain(&needs_exit)
            .filter(|&&b| b)
            .count();
        dag.edges.reserve_exact(reals + dummies);
        dag.add_real_edges(cfg, &roles);
        dag.add_dummy_edges(cfg, &needs_entry, &needs_exit);
        debug_assert_eq!(dag.edges.len(), reals + dummies);
        dag.map_cfg_edges(cfg, &roles);
        dag.build_adjacency();
        for v in cfg.nodes() {
            dag.reachable[v.index()] = dfs.reached(v);
        }
        dag.reachable[Cfg::EXIT.index()] = true;
        Ok(dag)
    }

    /// A DAG from its edges alone, e.g. rebuilt from a stored profile to
    /// regenerate paths (3.5). The CFG-side fields (`backedges`, `self_loops`,
    /// `loop_heads`, `cut_nodes`, `cfg_to_dag`) are left empty; `num_nodes`
    /// grows to cover every node an edge names. The edges are not checked for
    /// cycles here; [`crate::numbering::number`] reports one.
    pub fn from_edges(num_nodes: usize, edges: &[(NodeId, NodeId, DagEdgeKind)]) -> Dag {
        let named = edges
            .iter()
            .map(|&(s, d, _)| s.index().max(d.index()) + 1)
            .max()
            .unwrap_or(0);
        let mut dag = Dag::empty(num_nodes.max(named).max(2));
        for &(src, dst, kind) in edges {
            let id = dag.push(src, dst, kind);
            // The first dummy of each kind at a vertex is the one looked up.
            match kind {
                DagEdgeKind::EntryDummy => dag.entry_dummy_of.get_or_set(dst.index(), id),
                DagEdgeKind::ExitDummy => dag.exit_dummy_of.get_or_set(src.index(), id),
                DagEdgeKind::Real(_) => {}
            }
        }
        dag.build_adjacency();
        dag.reachable = dag.reachable_from_entry();
        dag
    }

    fn empty(n: usize) -> Dag {
        Dag {
            num_nodes: n,
            edges: Vec::new(),
            backedges: Vec::new(),
            self_loops: Vec::new(),
            loop_heads: Vec::new(),
            cut_nodes: Vec::new(),
            cfg_to_dag: CfgToDag::with_capacity(0, 0),
            reachable: vec![false; n],
            succ_start: Vec::new(),
            succ: Vec::new(),
            pred_start: Vec::new(),
            pred: Vec::new(),
            entry_dummy_of: DummyOf::new(n),
            exit_dummy_of: DummyOf::new(n),
        }
    }

    /// Adds an edge; the adjacency lists wait for [`Dag::build_adjacency`].
    fn push(&mut self, src: NodeId, dst: NodeId, kind: DagEdgeKind) -> DagEdgeId {
        let id = DagEdgeId::new(self.edges.len());
        self.edges.push(DagEdge { src, dst, kind });
        id
    }

    fn build_adjacency(&mut self) {
        let n = self.num_nodes;
        (self.succ_start, self.succ) =
            crate::cfg::rows(n, &self.edges, |e| e.src.index(), DagEdgeId::new);
        (self.pred_start, self.pred) =
            crate::cfg::rows(n, &self.edges, |e| e.dst.index(), DagEdgeId::new);
    }

    fn add_real_edges(&mut self, cfg: &Cfg, roles: &[Role]) {
        for e in cfg.edge_ids() {
            if roles[e.index()] == Role::Real {
                let (v, w) = cfg.edge(e);
                self.push(v, w, DagEdgeKind::Real(e));
            }
        }
    }

    /// The dummy edges of [`dummy_ends`], after the real ones.
    fn add_dummy_edges(&mut self, cfg: &Cfg, needs_entry: &[bool], needs_exit: &[bool]) {
        for w in cfg.nodes().filter(|w| needs_entry[w.index()]) {
            let d = self.push(Cfg::ENTRY, w, DagEdgeKind::EntryDummy);
            self.entry_dummy_of.get_or_set(w.index(), d);
        }
        for v in cfg.nodes().filter(|v| needs_exit[v.index()]) {
            let d = self.push(v, Cfg::EXIT, DagEdgeKind::ExitDummy);
            self.exit_dummy_of.get_or_set(v.index(), d);
        }
    }

    /// Fills `cfg_to_dag` and the per-role lists.
    fn map_cfg_edges(&mut self, cfg: &Cfg, roles: &[Role]) {
        let mut real = self
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, d)| match d.kind {
                DagEdgeKind::Real(_) => Some(DagEdgeId::new(i)),
                _ => None,
            });
        // Exactly: backedges into one head share its EntryDummy, so the
        // lists can outnumber the DAG's edges.
        let listed = roles
            .iter()
            .map(|r| match r {
                Role::Real => 1,
                Role::Backedge | Role::Cut => 2,
                Role::SelfLoop | Role::Unreachable => 0,
            })
            .sum();
        let mut cfg_to_dag = CfgToDag::with_capacity(cfg.num_edges(), listed);
        for e in cfg.edge_ids() {
            let (v, w) = cfg.edge(e);
            let dummies = || {
                let exit = self
                    .exit_dummy_of
                    .get(v.index())
                    .expect("source of a backedge or cut has an ExitDummy");
                let entry = self
                    .entry_dummy_of
                    .get(w.index())
                    .expect("target of a backedge or cut has an EntryDummy");
                [exit, entry]
            };
            match roles[e.index()] {
                // Real edges were pushed in CFG edge order, so they pair up.
                Role::Real => {
                    cfg_to_dag.push(&[real.next().expect("one DAG edge per real CFG edge")])
                }
                Role::Backedge | Role::Cut => cfg_to_dag.push(&dummies()),
                Role::SelfLoop | Role::Unreachable => cfg_to_dag.push(&[]),
            }
            match roles[e.index()] {
                Role::Backedge => {
                    self.backedges.push(e);
                    self.loop_heads.push(w);
                }
                Role::Cut => self.cut_nodes.push(v),
                Role::SelfLoop => self.self_loops.push(e),
                Role::Real | Role::Unreachable => {}
            }
        }
        self.cfg_to_dag = cfg_to_dag;
        for list in [&mut self.loop_heads, &mut self.cut_nodes] {
            list.sort_unstable();
            list.dedup();
        }
    }

    fn reachable_from_entry(&self) -> Vec<bool> {
        let mut seen = vec![false; self.num_nodes];
        let mut work = vec![Cfg::ENTRY];
        seen[Cfg::ENTRY.index()] = true;
        while let Some(v) = work.pop() {
            for &d in self.succs(v) {
                let w = self.edges[d.index()].dst;
                if !seen[w.index()] {
                    seen[w.index()] = true;
                    work.push(w);
                }
            }
        }
        seen
    }

    /// Outgoing DAG edges of `n`, in id order.
    pub fn succs(&self, n: NodeId) -> &[DagEdgeId] {
        let v = n.index();
        &self.succ[self.succ_start[v] as usize..self.succ_start[v + 1] as usize]
    }
    /// Incoming DAG edges of `n`, in id order.
    pub fn preds(&self, n: NodeId) -> &[DagEdgeId] {
        let v = n.index();
        &self.pred[self.pred_start[v] as usize..self.pred_start[v + 1] as usize]
    }
    /// The dummy edge `ENTRY->w`, if `w` is a loop head or a cut target.
    pub fn entry_dummy(&self, w: NodeId) -> Option<DagEdgeId> {
        self.entry_dummy_of.get(w.index())
    }
    /// The dummy edge `v->EXIT`, if `v` is a backedge source, cut or dead end.
    pub fn exit_dummy(&self, v: NodeId) -> Option<DagEdgeId> {
        self.exit_dummy_of.get(v.index())
    }
    pub fn edge(&self, d: DagEdgeId) -> &DagEdge {
        &self.edges[d.index()]
    }
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }
    pub fn edge_ids(&self) -> impl Iterator<Item = DagEdgeId> {
        (0..self.edges.len()).map(DagEdgeId::new)
    }
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> {
        (0..self.num_nodes).map(NodeId::new)
    }

    /// The nodes a DAG path runs through, ENTRY and EXIT included.
    pub fn path_nodes(&self, path: &[DagEdgeId]) -> Vec<NodeId> {
        let mut nodes = Vec::with_capacity(path.len() + 1);
        if let Some(&first) = path.first() {
            nodes.push(self.edge(first).src);
        }
        nodes.extend(path.iter().map(|&d| self.edge(d).dst));
        nodes
    }
}

/// A topological order of every DAG [`Dag::with_cuts`] builds from `cfg`,
/// whatever it cuts, every node included: the DFS that finds the backedges
/// has sorted them already. Each DAG edge is a CFG edge that is not a
/// backedge, whose target the search finished before its source; or a dummy
/// out of ENTRY, the root, finished last; or a dummy into EXIT, put last
/// here. Nodes ENTRY does not reach have no DAG edge and go at the end.
pub fn order_from_dfs(cfg: &Cfg) -> Vec<NodeId> {
    let dfs = cfg.dfs();
    let mut order = Vec::with_capacity(cfg.num_nodes());
    order.extend(dfs.postorder().iter().rev().filter(|&&v| v != Cfg::EXIT));
    order.push(Cfg::EXIT);
    order.extend(cfg.nodes().filter(|&v| !dfs.reached(v) && v != Cfg::EXIT));
    order
}

/// Rejects CFGs that break section 3.1's conventions: ENTRY has no incoming
/// edge and EXIT no outgoing one.
pub(crate) fn check_ends(cfg: &Cfg) -> Result<(), GraphError> {
    if let Some(&edge) = cfg.preds(Cfg::ENTRY).first() {
        return Err(GraphError::EdgeIntoEntry { edge });
    }
    if let Some(&edge) = cfg.succs(Cfg::EXIT).first() {
        return Err(GraphError::EdgeOutOfExit { edge });
    }
    Ok(())
}

fn role(cfg: &Cfg, dfs: &Dfs, cut: &[bool], e: EdgeId) -> Role {
    let (v, w) = cfg.edge(e);
    if !dfs.reached(v) {
        Role::Unreachable
    } else if v == w {
        Role::SelfLoop
    } else if dfs.is_backedge(cfg, e) {
        Role::Backedge
    } else if cut[v.index()] && w != Cfg::EXIT {
        Role::Cut
    } else {
        Role::Real
    }
}
