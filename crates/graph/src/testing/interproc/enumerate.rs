//! Observable paths of an execution by definition, with no numbers: the
//! oracle for [`crate::interproc`]'s walk and decoder.
//!
//! An execution is cut into paths as sections 3.4 (context) and 6
//! (piecewise) define them:
//! - a backedge `w -> v` (of a depth-first search from ENTRY, successors in
//!   order, found here by a search of its own) ends the path at `w`; the
//!   next path is, for context profiling, the path the activation had on
//!   entry followed by the surrogate `Entry_P -> v` (its context-prefix),
//!   for piecewise profiling just the surrogate `GEntry_P -> v`;
//! - a call through a cut site (or from the host) puts the path in flight
//!   aside and starts one at the callee's entry; the callee's return ends
//!   that path, and the one put aside goes on along the summary edge;
//! - an uncut call and its return are steps of the path in flight;
//! - a tail call ends the path where control is and enters the callee
//!   afresh; when it returns, if the tail-calling activation had been
//!   entered through an uncut call, its caller starts a path at the return
//!   site (context: after its own entry path), else what was put aside at
//!   the tail caller's entry goes on;
//! - a throw ends the path where control is; the activation that catches
//!   starts one at its handler, as a backedge into the handler would;
//!   an exception an import throws ends no path (the one in flight is
//!   not observed), and the catcher starts one the same way;
//! - an exception no profiled function catches ends no path: the
//!   activations down to the nearest one the host entered are gone, and
//!   the path that entry put aside goes on;
//! - a path in flight when the execution ends is not observed.

use std::collections::BTreeMap;

use crate::cfg::{Cfg, NodeId};
use crate::interproc::{CallSiteId, Event, FuncId, PathStep, ProfiledPath, Supergraph};

/// Per edge of `cfg`, whether it is a backedge of a depth-first search from
/// ENTRY exploring successors in edge order (explicit stack).
pub fn backedges(cfg: &Cfg) -> Vec<bool> {
    let mut back = vec![false; cfg.num_edges()];
    let mut on_stack = vec![false; cfg.num_nodes()];
    let mut seen = vec![false; cfg.num_nodes()];
    let mut stack = vec![(Cfg::ENTRY, 0usize)];
    seen[0] = true;
    on_stack[0] = true;
    while let Some(&mut (v, ref mut i)) = stack.last_mut() {
        match cfg.succs(v).get(*i) {
            Some(&e) => {
                *i += 1;
                let w = cfg.dst(e);
                if on_stack[w.index()] {
                    back[e.index()] = true;
                } else if !seen[w.index()] {
                    seen[w.index()] = true;
                    on_stack[w.index()] = true;
                    stack.push((w, 0));
                }
            }
            None => {
                on_stack[v.index()] = false;
                stack.pop();
            }
        }
    }
    back
}

struct Activation {
    func: FuncId,
    /// The block control is in.
    block: NodeId,
    /// The path as it was when the activation was entered (context).
    on_entry: Vec<PathStep>,
    /// Entered through this uncut site, or afresh with the path put aside.
    entered: Entered,
    /// Entered from the host (`Call { site: None }`, or a tail call from
    /// such an activation): an exception no profiled function catches is
    /// caught by what entered it.
    hosted: bool,
}

enum Entered {
    Call(CallSiteId),
    Fresh(Vec<PathStep>),
    /// By a tail call from an activation entered through this uncut site.
    TailFrom(CallSiteId),
}

/// Per function, per CFG edge: whether it ends a path as a backedge does
/// (a backedge, or an edge the function truncates, Ball-Larus 5.3).
pub fn path_ends(sg: &Supergraph) -> Vec<Vec<bool>> {
    sg.functions
        .iter()
        .map(|f| {
            let mut back = backedges(&f.cfg);
            for &e in &f.truncated {
                back[e.index()] = true;
            }
            back
        })
        .collect()
}

/// The observable paths `events` makes and how often, given which call
/// sites are cut (`cut`, per call site) and which paths are observed.
pub fn observable_paths(
    sg: &Supergraph,
    cut: &[bool],
    piecewise: bool,
    events: &[Event],
) -> BTreeMap<ProfiledPath, u64> {
    let back = path_ends(sg);
    let mut paths = BTreeMap::new();
    let mut emit = |steps: Vec<PathStep>| {
        let active_start = match piecewise {
            true => 0,
            false => steps
                .iter()
                .rposition(|s| matches!(s, PathStep::Resume { .. } | PathStep::ResumeAfterCall(_)))
                .map_or(0, |i| i + 1),
        };
        *paths
            .entry(ProfiledPath {
                steps,
                active_start,
            })
            .or_insert(0) += 1;
    };
    let mut cur: Vec<PathStep> = Vec::new();
    let mut stack: Vec<Activation> = Vec::new();
    for &event in events {
        match event {
            Event::Call {
                site: Some(site),
                callee,
            } if !cut[site.index()] => {
                cur.push(PathStep::Call { site, callee });
                stack.push(Activation {
                    func: callee,
                    block: Cfg::ENTRY,
                    on_entry: cur.clone(),
                    entered: Entered::Call(site),
                    hosted: false,
                });
            }
            Event::Call { site, callee } => {
                let mut aside = std::mem::take(&mut cur);
                aside.extend(site.map(PathStep::Summary));
                cur.push(PathStep::Begin(callee));
                stack.push(Activation {
                    func: callee,
                    block: Cfg::ENTRY,
                    on_entry: cur.clone(),
                    entered: Entered::Fresh(aside),
                    hosted: site.is_none(),
                });
            }
            Event::Edge(e) => {
                let Some(top) = stack.last_mut() else { break };
                let func = top.func;
                let cfg = &sg.functions[func.index()].cfg;
                if back[func.index()][e.index()] {
                    let mut done = std::mem::take(&mut cur);
                    done.push(PathStep::End {
                        func,
                        node: cfg.src(e),
                    });
                    emit(done);
                    if !piecewise {
                        cur = top.on_entry.clone();
                    }
                    cur.push(PathStep::Resume {
                        func,
                        node: cfg.dst(e),
                    });
                } else {
                    cur.push(PathStep::Edge { func, edge: e });
                }
                top.block = cfg.dst(e);
            }
            Event::TailCall { callee } => {
                let Some(top) = stack.pop() else { break };
                let mut done = std::mem::take(&mut cur);
                done.push(PathStep::End {
                    func: top.func,
                    node: top.block,
                });
                emit(done);
                cur.push(PathStep::Begin(callee));
                stack.push(Activation {
                    func: callee,
                    block: Cfg::ENTRY,
                    on_entry: cur.clone(),
                    entered: match top.entered {
                        Entered::Call(site) => Entered::TailFrom(site),
                        inherited => inherited,
                    },
                    hosted: top.hosted,
                });
            }
            // Counted where it is caught: nowhere. The activations down to
            // the one the host entered are gone; what it put aside goes on.
            Event::Escape => {
                while let Some(top) = stack.pop() {
                    if let (true, Entered::Fresh(aside)) = (top.hosted, top.entered) {
                        cur = aside;
                        break;
                    }
                }
            }
            Event::Throw { unwind, handler } | Event::ImportThrow { unwind, handler } => {
                let Some(top) = stack.last() else { break };
                let mut done = std::mem::take(&mut cur);
                // What an import threw ends no path: nothing ran where it
                // was thrown, and the path in flight is not observed.
                if matches!(event, Event::Throw { .. }) {
                    done.push(PathStep::End {
                        func: top.func,
                        node: top.block,
                    });
                    emit(done);
                }
                stack.truncate(stack.len().saturating_sub(unwind));
                let Some(catcher) = stack.last_mut() else {
                    break;
                };
                if !piecewise {
                    cur = catcher.on_entry.clone();
                }
                cur.push(PathStep::Resume {
                    func: catcher.func,
                    node: handler,
                });
                catcher.block = handler;
            }
            Event::Return => {
                let Some(top) = stack.pop() else { break };
                match top.entered {
                    Entered::Call(site) => cur.push(PathStep::Return(site)),
                    Entered::Fresh(aside) => {
                        let mut done = std::mem::replace(&mut cur, aside);
                        done.push(PathStep::Exit(top.func));
                        emit(done);
                    }
                    Entered::TailFrom(site) => {
                        let mut done = std::mem::take(&mut cur);
                        done.push(PathStep::Exit(top.func));
                        emit(done);
                        let Some(caller) = stack.last() else { break };
                        if !piecewise {
                            cur = caller.on_entry.clone();
                        }
                        cur.push(PathStep::ResumeAfterCall(site));
                    }
                }
            }
        }
    }
    paths
}
