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
//! Departure ([`Counts::AtEnd`], what the profilers use): the second walk
//! does not leave EXIT. Fig. 8 moves a path's count back over vertices with
//! one outgoing edge, so the count runs before those vertices' code does. A
//! run that ends there (a trap, `proc_exit` in a callee, an exception
//! unwinding the frame) would have counted a path that never reached its
//! end, where a path in flight must not count. Staying at EXIT costs a
//! `count[c]++` fold on such paths, and arises only where an edge into EXIT
//! is a tree edge: with loop-nesting weights the edges into EXIT come last
//! among equals and close cycles, so nearly all of them are chords.
//! [`Counts::Hoisted`] is Fig. 8 as printed.
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

/// The ops of every DAG edge ([`place`]), indexed by `DagEdgeId::index()`:
/// at most one per edge. Fig. 8's walks reach an edge at most once each, and
/// no edge is reached by both: that would make a chord-free ENTRY->EXIT
/// path, and every path holds a chord (see above). So an edge holds an
/// initialisation, a count, or an addition, and a chord that both
/// initialises and counts holds `count[c]++`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    edges: Vec<Option<Op>>,
}

impl Placement {
    /// Every edge's ops, in edge order.
    pub fn iter(&self) -> impl Iterator<Item = &[Op]> + '_ {
        self.edges.iter().map(Option::as_slice)
    }

    pub fn len(&self) -> usize {
        self.edges.len()
    }

    /// How many edges carry an op.
    pub fn ops(&self) -> usize {
        self.edges.iter().filter(|op| op.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }
}

impl std::ops::Index<usize> for Placement {
    type Output = [Op];
    fn index(&self, d: usize) -> &[Op] {
        self.edges[d].as_slice()
    }
}

/// Where the second walk of Fig. 8 may put a path's count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Counts {
    /// On the edges into EXIT: a path counts when it ends.
    AtEnd,
    /// As far back as the way to EXIT is unique and chord-free (Fig. 8).
    Hoisted,
}

/// The instrumentation of each DAG edge (Fig. 8), counts [`Counts::AtEnd`].
pub fn place(dag: &Dag, incs: &Increments) -> Placement {
    place_with(dag, incs, Counts::AtEnd)
}

/// The instrumentation of each DAG edge (Fig. 8), counts where `counts` says.
pub fn place_with(dag: &Dag, incs: &Increments, counts: Counts) -> Placement {
    let mut ops = vec![None; dag.num_edges()];
    place_inits(dag, incs, &mut ops);
    place_counts(dag, incs, &mut ops, counts);
    for (i, op) in ops.iter_mut().enumerate() {
        if incs.chord[i] && op.is_none() {
            *op = Some(Op::Add(incs.inc[i]));
        }
    }
    Placement { edges: ops }
}

/// The count on an edge whose own increment is `c`, given the op the first
/// walk left on it: after an initialisation `r = x`, which already includes
/// the edge's increment (a chord's `Inc(c)`, a tree edge's 0), the path is
/// known, `count[x]++`; otherwise `count[r + c]++`. Only a chord is reached
/// by both walks, but this is exact on any edge.
fn count_on(op: Option<Op>, c: i64) -> Op {
    match op {
        Some(Op::Init(x)) => Op::CountConst(x),
        _ => Op::Count(c),
    }
}

/// Fig. 8, register initialisation.
fn place_inits(dag: &Dag, incs: &Increments, ops: &mut [Option<Op>]) {
    let mut work = vec![Cfg::ENTRY];
    while let Some(v) = work.pop() {
        for &d in dag.succs(v) {
            let w = dag.edge(d).dst;
            if incs.chord[d.index()] {
                ops[d.index()] = Some(Op::Init(incs.inc[d.index()]));
            } else if dag.preds(w).len() == 1 {
                work.push(w);
            } else {
                ops[d.index()] = Some(Op::Init(0));
            }
        }
    }
}

/// Fig. 8, memory increment, walking the incoming edges of each vertex
/// (only EXIT's under [`Counts::AtEnd`]).
fn place_counts(dag: &Dag, incs: &Increments, ops: &mut [Option<Op>], counts: Counts) {
    let mut work = vec![Cfg::EXIT];
    while let Some(w) = work.pop() {
        for &d in dag.preds(w) {
            let v = dag.edge(d).src;
            let i = d.index();
            if incs.chord[i] {
                ops[i] = Some(count_on(ops[i], incs.inc[i]));
            } else if counts == Counts::Hoisted && dag.succs(v).len() == 1 {
                work.push(v);
            } else {
                ops[i] = Some(count_on(ops[i], 0));
            }
        }
    }
}
