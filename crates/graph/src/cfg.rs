//! The control-flow graph every algorithm in this crate works on.
//!
//! A `Cfg` is a directed multigraph of basic blocks with two distinguished
//! vertices, as in Ball & Larus (1996) section 3.1: `ENTRY` (node 0) and `EXIT`
//! (node 1). Every way a function is left (return, falling off its end, a trap
//! point, a tail call, a throw) is an edge to `EXIT`; every way a path may begin
//! (function entry, arrival at an exception handler) is an edge from `ENTRY`.
//! Parallel edges are allowed: each edge is its own object with its own id.
//! The graph may contain cycles; `crate::dag` turns it into the acyclic graph
//! that path numbering needs.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::dfs::Dfs;

/// A vertex of a [`Cfg`]. The index is private; conversions are checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(u32);

/// An edge of a [`Cfg`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EdgeId(u32);

macro_rules! id_impl {
    ($t:ident) => {
        impl $t {
            /// The id with this index. Panics only past `u32::MAX`, which no
            /// graph built from a WebAssembly function (at most 7.6 MB of code
            /// per function under the engine's limits) can reach.
            pub fn new(index: usize) -> Self {
                $t(u32::try_from(index).expect(concat!(stringify!($t), " index exceeds u32")))
            }
            /// The index, for use with per-node or per-edge vectors.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}
// Shared with `crate::dag` for `DagEdgeId`.
pub(crate) use id_impl;

id_impl!(NodeId);
id_impl!(EdgeId);

/// A control-flow graph with `ENTRY` and `EXIT`.
///
/// The adjacency lists are kept flat (compressed rows: one vector of edge
/// ids per direction, sliced per node) and built on first use after the
/// last change: a function of 100 000 blocks costs four allocations, not two
/// per block. The depth-first search from ENTRY is kept the same way: the
/// DAG (each truncation round of it) and the loop-nesting weights all ask
/// for it, and it is a function of the graph alone.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cfg {
    #[serde(default)]
    num_nodes: usize,
    edges: Vec<(NodeId, NodeId)>,
    #[serde(skip)]
    adjacency: OnceLock<Adjacency>,
    #[serde(skip)]
    dfs: OnceLock<Dfs>,
}

/// Successor and predecessor lists, in edge insertion order: node `v`'s
/// successors are `succ[succ_start[v]..succ_start[v + 1]]`.
#[derive(Clone, Debug, Default)]
struct Adjacency {
    succ_start: Vec<u32>,
    succ: Vec<EdgeId>,
    pred_start: Vec<u32>,
    pred: Vec<EdgeId>,
}

impl Adjacency {
    fn new(num_nodes: usize, edges: &[(NodeId, NodeId)]) -> Self {
        let (succ_start, succ) = rows(num_nodes, edges, |&(s, _)| s.index(), EdgeId::new);
        let (pred_start, pred) = rows(num_nodes, edges, |&(_, d)| d.index(), EdgeId::new);
        Adjacency {
            succ_start,
            succ,
            pred_start,
            pred,
        }
    }
}

/// Edge ids grouped by `key` node (a counting sort, stable in edge order):
/// node `v`'s edges are `list[start[v]..start[v + 1]]`. Shared with
/// `crate::dag` and `crate::spanning`, whose lists are built the same way.
pub(crate) fn rows<E, Id: Copy>(
    num_nodes: usize,
    edges: &[E],
    key: impl Fn(&E) -> usize,
    id: impl Fn(usize) -> Id,
) -> (Vec<u32>, Vec<Id>) {
    let mut start = vec![0u32; num_nodes + 1];
    for e in edges {
        start[key(e) + 1] += 1;
    }
    for v in 0..num_nodes {
        start[v + 1] += start[v];
    }
    // Every slot is overwritten below; `id(0)` only fills it meanwhile
    // (and is not called for an empty list, whose ids may not exist).
    let mut list = match edges.len() {
        0 => Vec::new(),
        len => vec![id(0); len],
    };
    // `start[v]` serves as row v's cursor, and ends where row v + 1
    // begins: shifted by one, it is `start` again, with no vector of
    // cursors beside it.
    for (i, e) in edges.iter().enumerate() {
        let slot = &mut start[key(e)];
        list[*slot as usize] = id(i);
        *slot += 1;
    }
    start.copy_within(..num_nodes, 1);
    start[0] = 0;
    (start, list)
}

/// Graphs are equal when their nodes and edges are, whether or not their
/// adjacency lists have been built.
impl PartialEq for Cfg {
    fn eq(&self, other: &Self) -> bool {
        self.num_nodes == other.num_nodes && self.edges == other.edges
    }
}
impl Eq for Cfg {}

impl Cfg {
    /// The unique source vertex.
    pub const ENTRY: NodeId = NodeId(0);
    /// The unique sink vertex.
    pub const EXIT: NodeId = NodeId(1);

    /// A graph holding only `ENTRY` and `EXIT`.
    pub fn new() -> Self {
        Cfg {
            num_nodes: 2,
            ..Cfg::default()
        }
    }

    /// Adds a basic block and returns its id.
    pub fn add_node(&mut self) -> NodeId {
        self.adjacency.take();
        self.dfs.take();
        self.num_nodes += 1;
        NodeId::new(self.num_nodes - 1)
    }

    /// Adds the edge `src -> dst` and returns its id. Panics if either end
    /// is not a node of the graph.
    pub fn add_edge(&mut self, src: NodeId, dst: NodeId) -> EdgeId {
        assert!(
            src.index() < self.num_nodes && dst.index() < self.num_nodes,
            "edge {src}->{dst} names a node past {}",
            self.num_nodes
        );
        self.adjacency.take();
        self.dfs.take();
        let e = EdgeId::new(self.edges.len());
        self.edges.push((src, dst));
        e
    }

    /// A graph of `num_nodes` nodes (at least ENTRY and EXIT) and these
    /// edges, e.g. after deserialisation. Panics if an edge names a node
    /// past `num_nodes`.
    pub fn from_edges(num_nodes: usize, edges: &[(NodeId, NodeId)]) -> Self {
        let num_nodes = num_nodes.max(2);
        assert!(
            edges
                .iter()
                .all(|&(s, d)| s.index() < num_nodes && d.index() < num_nodes),
            "an edge names a node past {num_nodes}"
        );
        let g = Cfg {
            num_nodes,
            edges: edges.to_vec(),
            adjacency: OnceLock::new(),
            dfs: OnceLock::new(),
        };
        let _ = g.adjacency.set(Adjacency::new(num_nodes, edges));
        g
    }

    fn adjacency(&self) -> &Adjacency {
        self.adjacency
            .get_or_init(|| Adjacency::new(self.num_nodes, &self.edges))
    }

    /// The depth-first search from ENTRY, run on first use after the last
    /// change.
    pub(crate) fn dfs(&self) -> &Dfs {
        self.dfs.get_or_init(|| Dfs::run(self))
    }

    /// Whether `e` is a backedge of the depth-first search from ENTRY
    /// (section 4): its target is an ancestor of its source, or the source
    /// itself (a self loop). In a reducible graph, such as a WebAssembly
    /// function's, exactly the edges into a loop header from inside its loop.
    pub fn is_backedge(&self, e: EdgeId) -> bool {
        self.dfs().is_backedge(self, e)
    }

    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> {
        (0..self.num_nodes()).map(NodeId::new)
    }
    pub fn edge_ids(&self) -> impl Iterator<Item = EdgeId> {
        (0..self.num_edges()).map(EdgeId::new)
    }
    /// `(source, target)` of an edge.
    pub fn edge(&self, e: EdgeId) -> (NodeId, NodeId) {
        self.edges[e.index()]
    }
    pub fn src(&self, e: EdgeId) -> NodeId {
        self.edges[e.index()].0
    }
    pub fn dst(&self, e: EdgeId) -> NodeId {
        self.edges[e.index()].1
    }
    /// Outgoing edges in insertion order.
    pub fn succs(&self, n: NodeId) -> &[EdgeId] {
        let a = self.adjacency();
        let v = n.index();
        &a.succ[a.succ_start[v] as usize..a.succ_start[v + 1] as usize]
    }
    /// Incoming edges in insertion order.
    pub fn preds(&self, n: NodeId) -> &[EdgeId] {
        let a = self.adjacency();
        let v = n.index();
        &a.pred[a.pred_start[v] as usize..a.pred_start[v + 1] as usize]
    }
    /// All edges as `(source, target)` pairs, indexed by `EdgeId`.
    pub fn edge_list(&self) -> &[(NodeId, NodeId)] {
        &self.edges
    }
}
