//! Maximum spanning trees by Kruskal's algorithm with union-find.
//!
//! Both path profiling (section 3.3) and edge profiling (QPT2) leave the edges
//! of a maximum spanning tree uninstrumented, so the frequent edges cost
//! nothing. The tree spans the graph plus a virtual `EXIT->ENTRY` edge that is
//! always in the tree: the paper needs it for the increments (3.1), and it
//! carries the number of activations in flow conservation.
//!
//! Ties between equal weights go to the lower edge index (a stable sort), so
//! the tree, and everything derived from it, is deterministic. Unreachable
//! parts of the graph simply form further trees of the forest.

use std::cmp::Reverse;

use crate::cfg::{Cfg, NodeId};

/// Disjoint sets of nodes, with path halving and union by size: nearly
/// constant time per operation and no recursion.
pub(crate) struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    pub(crate) fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    pub(crate) fn find(&mut self, x: usize) -> usize {
        let mut x = x;
        while self.parent[x] as usize != x {
            let grandparent = self.parent[self.parent[x] as usize];
            self.parent[x] = grandparent;
            x = grandparent as usize;
        }
        x
    }

    /// Merges the sets of `a` and `b`; false if they were already one set.
    pub(crate) fn union(&mut self, a: usize, b: usize) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        if self.size[ra] < self.size[rb] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb] = ra as u32;
        self.size[ra] += self.size[rb];
        true
    }
}

/// Per edge i of `num_edges`, with `ends(i)` its (source, target), whether
/// it is in a maximum spanning forest that contains the virtual `EXIT->ENTRY`
/// edge and a virtual edge `v->EXIT` for each `v` of `to_exit` (distinct
/// nodes; see [`crate::flow`] on unwinding). `weight(i)` is the weight of
/// edge `i`. Self loops are never tree edges. The edges are ordered by
/// (weight descending, index), the order of a stable sort, without the
/// stable sort's buffer: 4 bytes an edge.
pub(crate) fn max_spanning_tree(
    num_nodes: usize,
    num_edges: usize,
    ends: impl Fn(usize) -> (NodeId, NodeId),
    weight: impl Fn(usize) -> u64,
    to_exit: &[NodeId],
) -> Vec<bool> {
    let num = u32::try_from(num_edges).expect("fewer than 2^32 edges");
    let mut by_weight: Vec<u32> = (0..num).collect();
    by_weight.sort_unstable_by_key(|&i| (Reverse(weight(i as usize)), i));
    let mut sets = UnionFind::new(num_nodes);
    sets.union(Cfg::EXIT.index(), Cfg::ENTRY.index());
    for v in to_exit {
        sets.union(v.index(), Cfg::EXIT.index());
    }
    let mut in_tree = vec![false; num_edges];
    for i in by_weight {
        let (s, d) = ends(i as usize);
        in_tree[i as usize] = sets.union(s.index(), d.index());
    }
    in_tree
}
