//! The segmenter: a run (a sequence of [`Event`]s) in, its subpaths (the
//! whole program path, thesis 3.4.1) and its depth-k interprocedural path
//! segments (3.4.2) out, one event at a time.
//!
//! Rules (from the example of 3.4.2; see [`crate::ippp`] for why):
//! - every subpath that ends in a call *opens* a segment; the segment then
//!   takes the subpaths that follow it in the run, in call-nesting order:
//!   after a subpath ending in a call, the callee's first subpath; after
//!   one ending in a return, the caller's continuation;
//! - a segment keeps its call depth (calls entered minus returns taken);
//! - taking a subpath that ends in a call at depth `k`, or ends at a
//!   backedge, or ends in a return at depth 0 (out of the function the
//!   segment started in) *closes* the segment, that subpath included.
//!
//! The host entering a function (a callback from an import) starts a new
//! activation whose subpaths belong to no open segment of the interrupted
//! activation, which waits for its own next subpath. A segment still open
//! when the run ends is not reported, nor is the subpath in flight.
//!
//! Memory: per activation, the segments open on it; a segment holds at
//! most one subpath per call vertex of an acyclic path through its
//! function at each depth up to `k` (it closes at a backedge).
//!
//! A tail call (`return_call*` into a profiled function) ends the
//! activation's subpath ([`crate::ippp::SubpathEnd::TailCall`]) and closes
//! every segment open on it, that subpath included; the callee starts an
//! activation as the host's callbacks do, and when it returns, the caller
//! the tail-calling activation would have returned to continues with a
//! new subpath (docs/decisions.md#ips-tail-calls).
//!
//! A throw ends the thrower's subpath ([`crate::ippp::SubpathEnd::Throw`])
//! and closes every segment open on it, whether a profiled function
//! catches the exception or not ([`Event::Escape`]); the activations it
//! unwinds have none open (a caller's went into its callee), and the
//! catching one starts a new subpath along its catch edge into the
//! handler (docs/decisions.md#ips-exceptions). An exception an import
//! throws ([`Event::ImportThrow`]) ends no subpath: the subpaths in flight
//! it cuts short and the segments waiting for them are dropped, and the
//! catcher starts afresh as after a throw.

use std::collections::BTreeMap;

use crate::cfg::Cfg;
use crate::error::GraphError;
use crate::interproc::{CallSiteId, Event, FuncId};
use crate::ippp::subpath::{CutRole, SubpathNumbering, SubpathRef};
use crate::NodeId;

/// An interprocedural path segment: its subpaths `<f, p>` in run order.
pub type Ips = Vec<SubpathRef>;

/// How often each depth-k IPS occurred in a run.
pub type IpsProfile = BTreeMap<Ips, u64>;

/// A segment being built.
#[derive(Clone, Debug)]
pub struct OpenSegment {
    pub subpaths: Ips,
    /// Calls entered minus returns taken: the call depth of the subpath
    /// it takes next, relative to the one it started in.
    pub depth: usize,
}

/// What one event completed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The subpath it ended, if any.
    pub subpath: Option<SubpathRef>,
    /// The segments it closed, in the order they were opened.
    pub segments: Vec<Ips>,
}

#[derive(Clone, Debug)]
struct Frame {
    func: FuncId,
    /// The split-CFG vertex control is at.
    node: NodeId,
    /// The Ball-Larus sum of the subpath in flight.
    sum: u64,
    /// Through which call site it was entered (`None`: the host).
    entered: Option<CallSiteId>,
    /// The segments that take this activation's next subpath.
    open: Vec<OpenSegment>,
}

/// The streaming segmenter of one run.
#[derive(Clone, Debug)]
pub struct Segmenter<'a> {
    numbering: &'a SubpathNumbering,
    k: usize,
    frames: Vec<Frame>,
    index: usize,
}

impl<'a> Segmenter<'a> {
    /// A segmenter for depth-`k` segments (`k = 0` gives the subpaths that
    /// end in a call, alone).
    pub fn new(numbering: &'a SubpathNumbering, k: usize) -> Segmenter<'a> {
        Segmenter {
            numbering,
            k,
            frames: Vec::new(),
            index: 0,
        }
    }

    fn bad(&self, reason: &'static str) -> GraphError {
        GraphError::BadExecution {
            index: self.index,
            reason,
        }
    }

    /// Takes the next event of the run.
    pub fn step(&mut self, event: Event) -> Result<Step, GraphError> {
        let mut step = Step::default();
        match event {
            Event::Call { site, callee } => self.call(site, callee, &mut step)?,
            Event::Edge(e) => self.edge(e, &mut step)?,
            Event::Return => self.ret(&mut step)?,
            Event::TailCall { callee } => self.tail_call(callee, &mut step)?,
            Event::Throw { unwind, handler } => {
                self.close_at_throw(&mut step)?;
                self.catch(unwind, handler)?
            }
            Event::Escape => {
                self.close_at_throw(&mut step)?;
                let keep = crate::ippp::walk::hosted_below(&self.frames, |f| f.entered.is_none());
                self.frames.truncate(keep);
            }
            Event::ImportThrow { unwind, handler } => self.catch(unwind, handler)?,
        }
        self.index += 1;
        Ok(step)
    }

    fn call(
        &mut self,
        site: Option<CallSiteId>,
        callee: FuncId,
        step: &mut Step,
    ) -> Result<(), GraphError> {
        if self.numbering.function(callee).is_none() {
            return Err(self.bad("callee out of range"));
        }
        let mut open = Vec::new();
        if let Some(s) = site {
            let at = *self
                .numbering
                .sites
                .get(s.index())
                .ok_or(self.bad("call site out of range"))?;
            if !self.numbering.callees[s.index()].may_call(callee) {
                return Err(self.bad("the call site cannot call this function"));
            }
            let f = self.top_function(at.func)?;
            let top = self.frames.last_mut().expect("checked by top_function");
            if f.split.call_vertex[at.index] != top.node {
                return Err(self.bad("control is not at this call site"));
            }
            let CutRole::Cut { exit, .. } = f.roles[f.split.call_edge[at.index].index()] else {
                return Err(self.bad("the call site is not reached"));
            };
            let done = end_subpath(top, f.numbering.val[exit.index()]);
            step.subpath = Some(done);
            let mut waiting = std::mem::take(&mut top.open);
            waiting.push(OpenSegment {
                subpaths: Vec::new(),
                depth: 0,
            });
            for mut seg in waiting {
                seg.subpaths.push(done);
                if seg.depth < self.k {
                    seg.depth += 1;
                    open.push(seg);
                } else {
                    step.segments.push(seg.subpaths);
                }
            }
        }
        self.frames.push(Frame {
            func: callee,
            node: Cfg::ENTRY,
            sum: 0,
            entered: site,
            open,
        });
        Ok(())
    }

    /// The current activation tail-calls `callee`: its subpath ends, the
    /// segments open on it close, and `callee`'s activation takes its place
    /// with none open.
    fn tail_call(&mut self, callee: FuncId, step: &mut Step) -> Result<(), GraphError> {
        if self.numbering.function(callee).is_none() {
            return Err(self.bad("callee out of range"));
        }
        let mut top = self
            .frames
            .pop()
            .ok_or(self.bad("a tail call with no activation"))?;
        let f = &self.numbering.functions[top.func.index()];
        let exit = f.tail_at(top.node, callee).and_then(|t| t.exit);
        let exit = exit.ok_or(self.bad("no tail call to this function where control is"))?;
        let done = end_subpath(&mut top, f.numbering.val[exit.index()]);
        step.subpath = Some(done);
        for mut seg in top.open {
            seg.subpaths.push(done);
            step.segments.push(seg.subpaths);
        }
        self.frames.push(Frame {
            func: callee,
            node: Cfg::ENTRY,
            sum: 0,
            entered: top.entered,
            open: Vec::new(),
        });
        Ok(())
    }

    /// The current activation throws: its subpath ends and the segments
    /// open on it close.
    fn close_at_throw(&mut self, step: &mut Step) -> Result<(), GraphError> {
        let (none, nowhere) = (
            self.bad("a throw with no activation"),
            self.bad("no throw where control is"),
        );
        let top = self.frames.last_mut().ok_or(none)?;
        let f = &self.numbering.functions[top.func.index()];
        let exit = f.throw_at(top.node).ok_or(nowhere)?;
        let done = end_subpath(top, f.numbering.val[exit.index()]);
        step.subpath = Some(done);
        for mut seg in std::mem::take(&mut top.open) {
            seg.subpaths.push(done);
            step.segments.push(seg.subpaths);
        }
        Ok(())
    }

    /// `unwind` activations are left and the one then on top catches at
    /// `handler`, starting a new subpath along its catch edge.
    fn catch(&mut self, unwind: usize, handler: NodeId) -> Result<(), GraphError> {
        let (no_catcher, no_handler) = (
            self.bad("no activation catches the exception"),
            self.bad("the handler is not one of the catching function's"),
        );
        let at = self
            .frames
            .len()
            .checked_sub(unwind + 1)
            .ok_or(no_catcher)?;
        self.frames.truncate(at + 1);
        let catcher = &mut self.frames[at];
        let f = &self.numbering.functions[catcher.func.index()];
        let d = f.catch_edge(handler).ok_or(no_handler)?;
        // What an unwound callee took closed at a profiled throw. What
        // waited for the subpath the catch cuts short (a host callback's
        // caller's, or everything an import's exception cut short) is
        // dropped, as a path in flight is.
        catcher.open.clear();
        catcher.sum = f.numbering.val[d.index()];
        catcher.node = handler;
        Ok(())
    }

    /// The subpath numbering of the current function, which must be `f`.
    fn top_function(
        &self,
        f: FuncId,
    ) -> Result<&'a crate::ippp::subpath::FunctionSubpaths, GraphError> {
        match self.frames.last() {
            Some(top) if top.func == f => Ok(&self.numbering.functions[f.index()]),
            _ => Err(self.bad("control is not in the call site's function")),
        }
    }

    fn edge(&mut self, e: crate::EdgeId, step: &mut Step) -> Result<(), GraphError> {
        let func = self
            .frames
            .last()
            .ok_or(self.bad("an edge with no activation"))?
            .func;
        let f = self.top_function(func)?;
        let top = self.frames.last_mut().expect("checked by top_function");
        if !f.split.is_original(e) || f.split.cfg.src(e) != top.node {
            return Err(self.bad("the edge does not leave where control is"));
        }
        match f.roles[e.index()] {
            CutRole::Real(d) => top.sum = top.sum.wrapping_add(f.numbering.val[d.index()]),
            CutRole::Cut { exit, entry } => {
                let done = end_subpath(top, f.numbering.val[exit.index()]);
                step.subpath = Some(done);
                for mut seg in std::mem::take(&mut top.open) {
                    seg.subpaths.push(done);
                    step.segments.push(seg.subpaths);
                }
                top.sum = f.numbering.val[entry.index()];
            }
            CutRole::Unreachable => return Err(self.bad("an edge ENTRY never reaches")),
        }
        top.node = f.split.cfg.dst(e);
        Ok(())
    }

    fn ret(&mut self, step: &mut Step) -> Result<(), GraphError> {
        let mut top = match self.frames.pop() {
            Some(top) if top.node == Cfg::EXIT => top,
            _ => return Err(self.bad("a return not at EXIT")),
        };
        let done = end_subpath(&mut top, 0);
        step.subpath = Some(done);
        let mut back = Vec::new();
        for mut seg in top.open {
            seg.subpaths.push(done);
            if seg.depth > 0 {
                seg.depth -= 1;
                back.push(seg);
            } else {
                step.segments.push(seg.subpaths);
            }
        }
        let Some(s) = top.entered else {
            return Ok(());
        };
        let at = self.numbering.sites[s.index()];
        let f = self.top_function(at.func)?;
        let caller = self.frames.last_mut().expect("checked by top_function");
        caller.open.extend(back);
        let CutRole::Cut { entry, .. } = f.roles[f.split.call_edge[at.index].index()] else {
            return Err(self.bad("the call site is not reached"));
        };
        caller.sum = f.numbering.val[entry.index()];
        caller.node = f.split.return_site[at.index];
        // A block's next call: along the link to its call vertex.
        if let Some(link) = f.split.link_after[at.index] {
            if let CutRole::Real(d) = f.roles[link.index()] {
                caller.sum = caller.sum.wrapping_add(f.numbering.val[d.index()]);
            }
            caller.node = f.split.cfg.dst(link);
        }
        Ok(())
    }
}

/// The subpath of `frame` ended by an edge of Val `last`.
fn end_subpath(frame: &mut Frame, last: u64) -> SubpathRef {
    SubpathRef {
        func: frame.func,
        id: frame.sum.wrapping_add(last),
    }
}

/// The depth-`k` IPS profile of a run.
pub fn ips_profile(
    numbering: &SubpathNumbering,
    k: usize,
    events: &[Event],
) -> Result<IpsProfile, GraphError> {
    let mut seg = Segmenter::new(numbering, k);
    let mut profile = IpsProfile::new();
    for &event in events {
        for ips in seg.step(event)?.segments {
            *profile.entry(ips).or_insert(0) += 1;
        }
    }
    Ok(profile)
}
