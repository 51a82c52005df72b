//! Placing the instrumentation (Ball & Larus section 3.4, Fig. 8).
//!
//! Every ENTRY->EXIT path of the DAG must initialise the path register `r`,
//! add the increments of its chords, and count `r` once. Fig. 8 folds these:
//! - the first loop walks forward from ENTRY while the way there is unique and
//!   chord-free; a chord met this way sets `r = Inc(c)` (it is the first chord
//!   of every path through it), and a tree edge into a vertex with several
//!   incoming edges sets `r = 0`;
//! - the second loop walks backward from EXIT while the way on is unique and
//!   chord-free; a chord met this way counts `count[r + Inc(c)]++`, or
//!   `count[Inc(c)]++` if it also initialises, and a tree edge out of a vertex
//!   with several outgoing edges counts `count[r]++`;
//! - every other chord adds `r += Inc(c)`.
//!
//! Fig. 8's second loop as printed reads "for each edge e = v->w" over the
//! vertex `w` taken from the worklist: it means the incoming edges of `w`.
//!
//! Every path holds a chord (with the virtual `EXIT->ENTRY` edge in the tree,
//! a chord-free path would close a cycle of tree edges), so each path gets
//! exactly one initialisation, before any addition, and one count, after
//! every addition.

use serde::{Deserialize, Serialize};

use crate::cfg::Cfg;
use crate::dag::Dag;
use crate::spanning::Increments;

/// One instrumentation action on a DAG edge; `r` is the path register and
/// arithmetic on it wraps.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// `r = c`
    Init(i64),
    /// `r += c`
    Add(i64),
    /// `count[r + c]++`
    Count(i64),
    /// `count[c]++`
    CountConst(i64),
}

/// The ops of one DAG edge, in execution order: at most an initialisation
/// and a count (each edge is reached once by each of Fig. 8's walks), or an
/// addition. Kept inline, so placing a function allocates once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EdgeOps {
    len: u8,
    ops: [Op; 2],
}

impl EdgeOps {
    const EMPTY: EdgeOps = EdgeOps {
        len: 0,
        ops: [Op::Add(0); 2],
    };

    fn push(&mut self, op: Op) {
        // Fig. 8 gives an edge one Init and one Count at most (see above).
        self.ops[usize::from(self.len)] = op;
        self.len += 1;
    }

    fn last_mut(&mut self) -> Option<&mut Op> {
        let len = usize::from(self.len);
        self.ops[..len].last_mut()
    }
}

impl std::ops::Deref for EdgeOps {
    type Target = [Op];
    fn deref(&self) -> &[Op] {
        &self.ops[..usize::from(self.len)]
    }
}

/// The ops of every DAG edge ([`place`]), indexed by `DagEdgeId::index()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    edges: Vec<EdgeOps>,
}

impl Placement {
    /// Every edge's ops, in edge order.
    pub fn iter(&self) -> impl Iterator<Item = &[Op]> + '_ {
        self.edges.iter().map(|o| &o[..])
    }

    pub fn len(&self) -> usize {
        self.edges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }
}

impl std::ops::Index<usize> for Placement {
    type Output = [Op];
    fn index(&self, d: usize) -> &[Op] {
        &self.edges[d]
    }
}

/// The instrumentation of each DAG edge, in execution order (Fig. 8). With
/// increments from [`crate::spanning::chord_increments`] an edge carries at
/// most one op.
pub fn place(dag: &Dag, incs: &Increments) -> Placement {
    let mut ops = vec![EdgeOps::EMPTY; dag.num_edges()];
    place_inits(dag, incs, &mut ops);
    place_counts(dag, incs, &mut ops);
    for (i, edge_ops) in ops.iter_mut().enumerate() {
        if incs.chord[i] && edge_ops.is_empty() {
            edge_ops.push(Op::Add(incs.inc[i]));
        }
    }
    Placement { edges: ops }
}

/// Fig. 8, register initialisation.
fn place_inits(dag: &Dag, incs: &Increments, ops: &mut [EdgeOps]) {
    let mut work = vec![Cfg::ENTRY];
    while let Some(v) = work.pop() {
        for &d in dag.succs(v) {
            let w = dag.edge(d).dst;
            if incs.chord[d.index()] {
                ops[d.index()].push(Op::Init(incs.inc[d.index()]));
            } else if dag.preds(w).len() == 1 {
                work.push(w);
            } else {
                ops[d.index()].push(Op::Init(0));
            }
        }
    }
}

/// Fig. 8, memory increment, walking the incoming edges of each vertex.
fn place_counts(dag: &Dag, incs: &Increments, ops: &mut [EdgeOps]) {
    let mut work = vec![Cfg::EXIT];
    while let Some(w) = work.pop() {
        for &d in dag.preds(w) {
            let v = dag.edge(d).src;
            let i = d.index();
            if incs.chord[i] {
                // A chord that initialises and counts: `count[Inc(c)]++`.
                match ops[i].last_mut() {
                    Some(op @ Op::Init(_)) => *op = Op::CountConst(incs.inc[i]),
                    _ => ops[i].push(Op::Count(incs.inc[i])),
                }
            } else if dag.succs(v).len() == 1 {
                work.push(v);
            } else {
                ops[i].push(Op::Count(0));
            }
        }
    }
}
