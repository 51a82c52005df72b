//! Depth-first search of a [`Cfg`] from ENTRY, with an explicit stack.
//!
//! Section 4 identifies backedges "by a depth-first search of the graph": an
//! edge `v->w` is a backedge when `w` is an ancestor of `v` in the DFS tree
//! (equivalently, `w` is still on the stack when the edge is explored). The
//! loop-nesting analysis of [`crate::weights`] uses the same search, so both
//! agree on which edges close loops. Successors are explored in insertion
//! order, which makes the result deterministic.
//!
//! The stack is a `Vec`, not the call stack: a function of 100 000 blocks in a
//! chain would overflow a recursive search.

use crate::cfg::{Cfg, EdgeId, NodeId};

/// Preorder number of a node the search never reached.
const UNREACHED: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub(crate) struct Dfs {
    /// Preorder number per node, `UNREACHED` if ENTRY does not reach it.
    pre: Vec<u32>,
    /// The largest preorder number among the node's DFS-tree descendants
    /// (itself included): `d` descends from `a` iff `pre[a] <= pre[d] <= last[a]`.
    last: Vec<u32>,
    /// Reached nodes in preorder.
    order: Vec<NodeId>,
    /// Reached nodes in the order the search finished them.
    post: Vec<NodeId>,
}

impl Dfs {
    pub(crate) fn run(cfg: &Cfg) -> Dfs {
        let n = cfg.num_nodes();
        let mut dfs = Dfs {
            pre: vec![UNREACHED; n],
            last: vec![0; n],
            order: Vec::with_capacity(n),
            post: Vec::with_capacity(n),
        };
        // Each frame: a node and the index of its next successor edge to explore.
        let mut stack: Vec<(NodeId, usize)> = Vec::new();
        dfs.discover(Cfg::ENTRY, &mut stack);
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            match cfg.succs(v).get(next) {
                Some(&e) => {
                    top.1 += 1;
                    let w = cfg.dst(e);
                    if !dfs.reached(w) {
                        dfs.discover(w, &mut stack);
                    }
                }
                None => {
                    dfs.last[v.index()] = dfs.preorder_len() - 1;
                    dfs.post.push(v);
                    stack.pop();
                }
            }
        }
        dfs
    }

    fn discover(&mut self, v: NodeId, stack: &mut Vec<(NodeId, usize)>) {
        self.pre[v.index()] = self.preorder_len();
        self.order.push(v);
        stack.push((v, 0));
    }

    fn preorder_len(&self) -> u32 {
        // At most `num_nodes` entries, and node ids fit u32.
        self.order.len() as u32
    }

    pub(crate) fn reached(&self, v: NodeId) -> bool {
        self.pre[v.index()] != UNREACHED
    }

    /// Reached nodes in preorder (ENTRY first).
    pub(crate) fn preorder(&self) -> &[NodeId] {
        &self.order
    }

    /// Reached nodes in postorder: the target of every edge that is not a
    /// backedge finishes before its source (ENTRY last).
    pub(crate) fn postorder(&self) -> &[NodeId] {
        &self.post
    }

    /// Preorder number of a reached node.
    pub(crate) fn pre(&self, v: NodeId) -> usize {
        debug_assert!(self.reached(v));
        self.pre[v.index()] as usize
    }

    /// Whether `a` is `d` or a DFS-tree ancestor of `d` (both reached).
    pub(crate) fn is_ancestor(&self, a: NodeId, d: NodeId) -> bool {
        let (pa, pd) = (self.pre[a.index()], self.pre[d.index()]);
        pa != UNREACHED && pd != UNREACHED && pa <= pd && pd <= self.last[a.index()]
    }

    /// Whether `e = v->w` is a backedge: `v` reached and `w` an ancestor of
    /// `v`. Self loops count; section 4.1 sets them apart afterwards.
    pub(crate) fn is_backedge(&self, cfg: &Cfg, e: EdgeId) -> bool {
        let (v, w) = cfg.edge(e);
        self.is_ancestor(w, v)
    }
}
