//! Path regeneration (Ball & Larus section 3.5): path number to DAG path.
//!
//! Start at ENTRY with `R` the path number; at each vertex follow the
//! outgoing edge with the largest `Val(e) <= R`, subtract its Val, and stop
//! at EXIT. Section 4's note holds: the same DAG (dummy edges added,
//! backedges removed, cuts made) must be used as for numbering, which is why
//! this works on a [`Dag`] and not on the CFG.
//!
//! A stored numbering may not belong to the DAG it is paired with; such a
//! mismatch is reported, never looped on or panicked over.

use crate::cfg::Cfg;
use crate::dag::{Dag, DagEdgeId};
use crate::error::GraphError;
use crate::numbering::Numbering;

/// The DAG edges of path number `path`, from ENTRY to EXIT.
pub fn regenerate(
    dag: &Dag,
    numbering: &Numbering,
    path: u64,
) -> Result<Vec<DagEdgeId>, GraphError> {
    let total = numbering.total();
    if path >= total {
        return Err(GraphError::PathOutOfRange { path, total });
    }
    let mut edges = Vec::new();
    let (mut v, mut rest) = (Cfg::ENTRY, path);
    while v != Cfg::EXIT {
        // A DAG path uses each edge at most once; more steps mean a cycle.
        if edges.len() >= dag.num_edges() {
            return Err(GraphError::InvalidNumbering {
                reason: "regeneration does not reach EXIT",
            });
        }
        let (d, val) = best_edge(dag, numbering, v, rest)?;
        edges.push(d);
        rest -= val;
        v = dag.edge(d).dst;
    }
    if rest != 0 {
        return Err(GraphError::InvalidNumbering {
            reason: "the path number is not a sum of Val",
        });
    }
    Ok(edges)
}

/// The outgoing edge of `v` with the largest `Val <= rest` (the first such
/// edge if a malformed Val repeats).
fn best_edge(
    dag: &Dag,
    numbering: &Numbering,
    v: crate::NodeId,
    rest: u64,
) -> Result<(DagEdgeId, u64), GraphError> {
    let mut best: Option<(DagEdgeId, u64)> = None;
    for &d in dag.succs(v) {
        let val = *numbering
            .val
            .get(d.index())
            .ok_or(GraphError::InvalidNumbering {
                reason: "fewer Val entries than DAG edges",
            })?;
        if val <= rest && best.is_none_or(|(_, b)| val > b) {
            best = Some((d, val));
        }
    }
    best.ok_or(GraphError::InvalidNumbering {
        reason: "no edge fits the path number",
    })
}
