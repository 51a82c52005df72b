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

use serde::{Deserialize, Serialize};

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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cfg {
    edges: Vec<(NodeId, NodeId)>,
    #[serde(skip)]
    succs: Vec<Vec<EdgeId>>,
    #[serde(skip)]
    preds: Vec<Vec<EdgeId>>,
}

impl Cfg {
    /// The unique source vertex.
    pub const ENTRY: NodeId = NodeId(0);
    /// The unique sink vertex.
    pub const EXIT: NodeId = NodeId(1);

    /// A graph holding only `ENTRY` and `EXIT`.
    pub fn new() -> Self {
        Cfg {
            edges: Vec::new(),
            succs: vec![Vec::new(), Vec::new()],
            preds: vec![Vec::new(), Vec::new()],
        }
    }

    /// Adds a basic block and returns its id.
    pub fn add_node(&mut self) -> NodeId {
        self.succs.push(Vec::new());
        self.preds.push(Vec::new());
        NodeId::new(self.succs.len() - 1)
    }

    /// Adds the edge `src -> dst` and returns its id.
    pub fn add_edge(&mut self, src: NodeId, dst: NodeId) -> EdgeId {
        let e = EdgeId::new(self.edges.len());
        self.edges.push((src, dst));
        self.succs[src.index()].push(e);
        self.preds[dst.index()].push(e);
        e
    }

    /// Rebuilds the adjacency lists after deserialisation.
    pub fn from_edges(num_nodes: usize, edges: &[(NodeId, NodeId)]) -> Self {
        let mut g = Cfg::new();
        while g.num_nodes() < num_nodes {
            g.add_node();
        }
        for &(s, d) in edges {
            g.add_edge(s, d);
        }
        g
    }

    pub fn num_nodes(&self) -> usize {
        self.succs.len()
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
        &self.succs[n.index()]
    }
    /// Incoming edges in insertion order.
    pub fn preds(&self, n: NodeId) -> &[EdgeId] {
        &self.preds[n.index()]
    }
    /// All edges as `(source, target)` pairs, indexed by `EdgeId`.
    pub fn edge_list(&self) -> &[(NodeId, NodeId)] {
        &self.edges
    }
}
