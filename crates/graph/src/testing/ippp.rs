//! A brute-force IPS enumerator sharing no code with [`crate::ippp`]:
//! the run is first cut into subpaths spelt out (edges, start, end) with
//! the activation that made each, then every depth-k IPS is found by
//! following the list forward from each subpath that ends in a call (an
//! activation's subpaths are chained, so following is not a search: runs
//! of real programs have millions of subpaths).

use std::collections::{BTreeMap, BTreeSet};

use crate::interproc::{Event, FuncId, Supergraph};
use crate::ippp::{Subpath, SubpathEnd, SubpathStart};
use crate::testing::interproc::path_ends;
use crate::{Cfg, NodeId};

/// What follows a subpath in call-nesting order.
#[derive(Copy, Clone, Debug)]
pub enum Next {
    /// It called: the callee's activation and function.
    Callee(usize, FuncId),
    /// It returned: the caller's activation, if a call site entered it.
    Caller(Option<usize>),
    /// It ended at a backedge.
    Loop,
    /// It tail-called: the activation ended, the callee's replaced it.
    TailCall,
    /// It threw.
    Throw,
    /// It was in flight when the run ended ([`wpp_unfinished`]).
    Unfinished,
}

/// A subpath of the run: the activation that made it, its function, the
/// subpath and what follows.
#[derive(Clone, Debug)]
pub struct Done {
    pub activation: usize,
    pub func: FuncId,
    pub subpath: Subpath,
    pub next: Next,
}

struct Act {
    id: usize,
    func: FuncId,
    caller: Option<usize>,
    start: SubpathStart,
    edges: Vec<crate::EdgeId>,
}

impl Act {
    /// The activation as it goes on after catching an exception: a new
    /// activation `id` in the same frame, since what waited for its subpath
    /// in flight (cut short) follows no subpath of it.
    fn fresh(&self, id: usize) -> Act {
        Act {
            id,
            func: self.func,
            caller: self.caller,
            start: SubpathStart::Entry,
            edges: Vec::new(),
        }
    }

    /// Ends the subpath in flight.
    fn finish(&mut self, end: SubpathEnd, next: Next) -> Done {
        Done {
            activation: self.id,
            func: self.func,
            subpath: Subpath {
                start: self.start,
                edges: std::mem::take(&mut self.edges),
                end,
            },
            next,
        }
    }
}

/// The run's subpaths in order (the WPP). A subpath in flight at the end
/// is left out.
pub fn wpp(sg: &Supergraph, events: &[Event]) -> Vec<Done> {
    cut_run(sg, events, false)
}

/// As [`wpp`], followed by the subpaths in flight when the run ended
/// (outermost first), as far as they went: where a segment was
/// truncated can be in one of them.
pub fn wpp_unfinished(sg: &Supergraph, events: &[Event]) -> Vec<Done> {
    cut_run(sg, events, true)
}

fn cut_run(sg: &Supergraph, events: &[Event], unfinished: bool) -> Vec<Done> {
    // Truncated edges (Ball-Larus 5.3) end a subpath as backedges do.
    let back = path_ends(sg);
    let starts = sg.site_starts();
    let mut out = Vec::new();
    let mut stack: Vec<Act> = Vec::new();
    let mut next_id = 0;
    for &event in events {
        match event {
            Event::Call { site, callee } => {
                let caller = site.map(|s| {
                    let top = stack.last_mut().expect("a call site has a caller");
                    let local = s.index() - starts[top.func.index()];
                    out.push(top.finish(SubpathEnd::Call(local), Next::Callee(next_id, callee)));
                    top.start = SubpathStart::AfterCall(local);
                    top.id
                });
                stack.push(Act {
                    id: next_id,
                    func: callee,
                    caller,
                    start: SubpathStart::Entry,
                    edges: Vec::new(),
                });
                next_id += 1;
            }
            Event::Edge(e) => {
                let top = stack.last_mut().expect("an activation");
                let cfg = &sg.functions[top.func.index()].cfg;
                if back[top.func.index()][e.index()] {
                    out.push(top.finish(SubpathEnd::Backedge(cfg.src(e)), Next::Loop));
                    top.start = SubpathStart::LoopHead(cfg.dst(e));
                } else {
                    top.edges.push(e);
                }
            }
            Event::Return => {
                let mut top = stack.pop().expect("an activation");
                let caller = top.caller;
                out.push(top.finish(SubpathEnd::Exit, Next::Caller(caller)));
            }
            Event::TailCall { callee } => {
                let mut top = stack.pop().expect("an activation");
                out.push(top.finish(SubpathEnd::TailCall, Next::TailCall));
                // The callee returns where the tail caller would have.
                stack.push(Act {
                    id: next_id,
                    func: callee,
                    caller: top.caller,
                    start: SubpathStart::Entry,
                    edges: Vec::new(),
                });
                next_id += 1;
            }
            Event::Throw { unwind, handler } => {
                let top = stack.last_mut().expect("an activation");
                out.push(top.finish(SubpathEnd::Throw, Next::Throw));
                // The unwound activations between thrower and catcher.
                let mut left = stack.split_off(stack.len() - unwind);
                left.pop();
                let catcher = stack.last_mut().expect("a catcher");
                if unfinished && unwind > 0 {
                    // The catcher's subpath in flight is cut short too.
                    left.push(std::mem::replace(catcher, catcher.fresh(next_id)));
                    next_id += 1;
                } else if unwind > 0 {
                    *catcher = catcher.fresh(next_id);
                    next_id += 1;
                }
                cut_short(&mut out, left, unfinished);
                catch_into(sg, catcher, handler);
            }
            Event::ImportThrow { unwind, handler } => {
                // No subpath ends: every activation the exception reaches,
                // the catcher included, has its subpath in flight cut short.
                let mut left = stack.split_off(stack.len() - unwind);
                let catcher = stack.last_mut().expect("a catcher");
                left.insert(0, std::mem::replace(catcher, catcher.fresh(next_id)));
                next_id += 1;
                cut_short(&mut out, left, unfinished);
                catch_into(sg, catcher, handler);
            }
            Event::Escape => {
                // Caught by what entered the nearest activation the host
                // entered (no caller): those above it and it are left.
                let mut top = stack.pop().expect("an activation");
                out.push(top.finish(SubpathEnd::Throw, Next::Throw));
                let keep = match top.caller {
                    None => stack.len(),
                    Some(_) => stack.iter().rposition(|a| a.caller.is_none()).unwrap_or(0),
                };
                let left = stack.split_off(keep);
                cut_short(&mut out, left, unfinished);
            }
        }
    }
    if unfinished {
        for mut act in stack {
            out.push(act.finish(SubpathEnd::Exit, Next::Unfinished));
        }
    }
    out
}

/// The catcher's new subpath starts along its catch edge into `handler`:
/// the CFG's last `ENTRY -> handler`.
fn catch_into(sg: &Supergraph, catcher: &mut Act, handler: NodeId) {
    let cfg = &sg.functions[catcher.func.index()].cfg;
    let catch = (cfg.edge_ids())
        .filter(|&e| cfg.edge(e) == (Cfg::ENTRY, handler))
        .last()
        .expect("a catch edge");
    catcher.start = SubpathStart::Entry;
    catcher.edges = vec![catch];
}

/// With `unfinished`, the subpaths in flight of activations an exception
/// cut short, as far as they went (a segment truncated in one was
/// truncated there).
fn cut_short(out: &mut Vec<Done>, acts: Vec<Act>, unfinished: bool) {
    if unfinished {
        for mut act in acts {
            out.push(act.finish(SubpathEnd::Exit, Next::Unfinished));
        }
    }
}

/// An IPS spelt out.
pub type Spelt = Vec<(FuncId, Subpath)>;

/// Every depth-`k` IPS of the run and how often, by the rules of
/// [`crate::ippp`]: from each subpath ending in a call, the next subpath of
/// the activation that follows, until a call at depth `k`, a backedge or a
/// return out of the starting function. IPS the run ends before closing
/// are left out.
pub fn ips(wpp: &[Done], k: usize) -> BTreeMap<Spelt, u64> {
    ips_cut(wpp, k, None)
}

/// Contexts of inlined calls: a start function and the (local call,
/// callee) pairs from it.
pub type Marks = BTreeSet<(FuncId, Vec<(usize, FuncId)>)>;

/// The contexts the IPS `interesting` enter.
pub fn marks(interesting: &BTreeSet<Spelt>) -> Marks {
    let mut out = Marks::new();
    for ips in interesting {
        let mut ctx = Vec::new();
        for j in 0..ips.len() - 1 {
            match ips[j].1.end {
                SubpathEnd::Call(i) => {
                    ctx.push((i, ips[j + 1].0));
                    out.insert((ips[0].0, ctx.clone()));
                }
                SubpathEnd::Exit => {
                    ctx.pop();
                }
                SubpathEnd::Backedge(_) | SubpathEnd::TailCall | SubpathEnd::Throw => {}
            }
        }
    }
    out
}

/// The CFG edges the IPS `interesting` take in each context below their
/// start: (start function, context, edge).
pub type EdgeMarks = BTreeSet<(FuncId, Vec<(usize, FuncId)>, crate::EdgeId)>;

/// The [`EdgeMarks`] of `interesting`.
pub fn edge_marks(interesting: &BTreeSet<Spelt>) -> EdgeMarks {
    let mut out = EdgeMarks::new();
    for ips in interesting {
        let mut ctx = Vec::new();
        for (j, (_, sub)) in ips.iter().enumerate() {
            if !ctx.is_empty() {
                out.extend(sub.edges.iter().map(|&e| (ips[0].0, ctx.clone(), e)));
            }
            match sub.end {
                SubpathEnd::Call(i) if j + 1 < ips.len() => ctx.push((i, ips[j + 1].0)),
                SubpathEnd::Exit => {
                    ctx.pop();
                }
                _ => {}
            }
        }
    }
    out
}

/// Truncated expanded graphs: in a context below one of `starts`, an IPS
/// that takes a CFG edge `kept` does not hold ends there.
pub struct Truncation<'a> {
    pub starts: BTreeSet<FuncId>,
    pub kept: &'a EdgeMarks,
}

/// As [`ips`], but with `marks`, an IPS is also cut (closed) at a call
/// into a context that is not marked.
pub fn ips_cut(wpp: &[Done], k: usize, marks: Option<&Marks>) -> BTreeMap<Spelt, u64> {
    ips_truncated(wpp, k, marks, None).0
}

/// As [`ips_cut`], and with `truncation`, an IPS below a truncated start
/// function that takes an edge no interesting IPS takes in that context
/// ends there: returned apart, spelt up to the subpath it ended in.
pub fn ips_truncated(
    wpp: &[Done],
    k: usize,
    marks: Option<&Marks>,
    truncation: Option<&Truncation<'_>>,
) -> (BTreeMap<Spelt, u64>, BTreeMap<Spelt, u64>) {
    // Per subpath, the next one of the same activation; per activation,
    // its first.
    let mut next_same = vec![None; wpp.len()];
    let mut first: BTreeMap<usize, usize> = BTreeMap::new();
    let mut last: BTreeMap<usize, usize> = BTreeMap::new();
    for (j, d) in wpp.iter().enumerate() {
        if let Some(p) = last.insert(d.activation, j) {
            next_same[p] = Some(j);
        }
        first.entry(d.activation).or_insert(j);
    }
    let (mut out, mut truncated) = (BTreeMap::new(), BTreeMap::new());
    let cuts = |start: FuncId, ctx: &Vec<(usize, FuncId)>, sub: &Subpath| {
        truncation.is_some_and(|t| {
            t.starts.contains(&start)
                && sub
                    .edges
                    .iter()
                    .any(|&e| !t.kept.contains(&(start, ctx.clone(), e)))
        })
    };
    for (i, d) in wpp.iter().enumerate() {
        let Next::Callee(..) = d.next else { continue };
        let mut taken = vec![i];
        let mut depth = 0usize;
        let mut ctx: Vec<(usize, FuncId)> = Vec::new();
        // The subpaths that made the calls the segment is in.
        let mut calls: Vec<usize> = Vec::new();
        let closed = loop {
            let at = *taken.last().expect("not empty");
            let cur = &wpp[at];
            if depth > 0 && cuts(d.func, &ctx, &cur.subpath) {
                let spelt = taken
                    .iter()
                    .map(|&j| (wpp[j].func, wpp[j].subpath.clone()))
                    .collect();
                *truncated.entry(spelt).or_insert(0) += 1;
                break false;
            }
            let next = match (cur.next, cur.subpath.end) {
                (Next::Unfinished, _) => break false,
                (Next::Callee(a, g), SubpathEnd::Call(i)) if depth < k => {
                    ctx.push((i, g));
                    if marks.is_some_and(|m| !m.contains(&(d.func, ctx.clone()))) {
                        break true;
                    }
                    depth += 1;
                    calls.push(at);
                    first.get(&a).copied()
                }
                (Next::Caller(Some(_)), _) if depth > 0 => {
                    ctx.pop();
                    depth -= 1;
                    next_same[calls.pop().expect("a call per depth")]
                }
                _ => break true,
            };
            match next {
                Some(j) => taken.push(j),
                None => break false,
            }
        };
        if closed {
            let spelt = taken
                .iter()
                .map(|&j| (wpp[j].func, wpp[j].subpath.clone()))
                .collect();
            *out.entry(spelt).or_insert(0) += 1;
        }
    }
    (out, truncated)
}
