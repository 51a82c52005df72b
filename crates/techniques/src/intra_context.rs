//! Intraprocedural context path profiling (D. Melski and T. Reps,
//! "Interprocedural Path Profiling", UW-Madison TR 1382, section 7) as a
//! plan: Ball-Larus path numbers on the CFG transformed by
//! [`pathprof_graph::intra_context`], whose paths after a backedge carry
//! the path that entered the loop as their context-prefix.
//!
//! Registers: [`PATH`] (`pathNum`), then one per loop head, in
//! [`IntraContext::loop_heads`] order (`pathNumOnEntryToV`). What runs on
//! original edge `w -> v` is [`IntraContext::step`], the rules of the
//! reference walk [`IntraContext::walk`]:
//! - an edge that is not a backedge: `pathNum += Val` (the entry edge and
//!   a catch edge, out of ENTRY, set it); into a loop head `v`, then
//!   `pathNumOnEntryToV = pathNum; pathNum += Val(v_a -> v_b)`; into EXIT,
//!   count `pathNum`;
//! - a backedge: count `pathNum + Val(w -> EXIT)`, then `pathNum =
//!   pathNumOnEntryToV + Val(surrogate v_a -> v_b)`.
//!
//! Departures: the increments sit on every edge whose Val is not zero,
//! not on the chords of a spanning tree (the paper's section 7 gives the
//! rules per edge, as here). A catch edge starts a path as the entry edge
//! does; the path in flight at the throw is lost, as for Ball-Larus paths.

use pathprof_graph::intra_context::{IntraContext, Step};
use pathprof_graph::EdgeId;

use crate::plan::{Action, EdgeActions, FunctionPlan, MulAdd, PathTable, Reg, Width};

/// `pathNum`.
pub const PATH: Reg = 0;

/// The register of the `i`-th loop head.
fn on_entry(i: usize) -> Reg {
    1 + i as Reg
}

/// The plan of a function whose transformed, numbered CFG is `ic`; its
/// paths are counted in `table`.
pub fn plan(ic: &IntraContext, table: PathTable) -> FunctionPlan {
    let heads = ic.loop_heads();
    let head_reg = |v| {
        let i = heads.iter().position(|&h| h == v);
        on_entry(i.expect("a loop head"))
    };
    let edges = EdgeActions::from_fn(ic.num_original_edges(), |e, out| {
        edge(ic.step(EdgeId::new(e)), &head_reg, out);
    });
    FunctionPlan {
        registers: vec![Width::I64; 1 + heads.len()],
        paths: table,
        slots: 0,
        ppp: None,
        edges,
        interproc: None,
    }
}

fn edge(step: Step, head_reg: &dyn Fn(pathprof_graph::NodeId) -> Reg, out: &mut Vec<Action>) {
    match step {
        Step::Forward {
            val,
            from_entry,
            head,
            exit,
        } => {
            if from_entry {
                out.push(Action::Set {
                    reg: PATH,
                    value: val as i64,
                });
            } else {
                add(out, val);
            }
            if let Some((v, link)) = head {
                copy(out, head_reg(v), PATH, 0);
                add(out, link);
            }
            if exit {
                out.push(Action::CountPath {
                    reg: PATH,
                    offset: 0,
                });
            }
        }
        Step::Back { end, head, resume } => {
            out.push(Action::CountPath {
                reg: PATH,
                offset: end as i64,
            });
            copy(out, PATH, head_reg(head), resume as i64);
        }
    }
}

/// `pathNum += val`, nothing for 0.
fn add(out: &mut Vec<Action>, val: u64) {
    if val != 0 {
        out.push(Action::Add {
            reg: PATH,
            value: val as i64,
        });
    }
}

/// `dst = src + b`.
fn copy(out: &mut Vec<Action>, dst: Reg, src: Reg, b: i64) {
    out.push(Action::Set { reg: dst, value: 0 });
    out.push(Action::MulAdd(Box::new(MulAdd {
        reg: dst,
        a: 1,
        src,
        b,
    })));
}
