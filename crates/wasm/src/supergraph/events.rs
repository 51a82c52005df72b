//! A run's edge trace (the `trace` technique: one `(function, edge)` per CFG
//! edge crossed, in order) as the execution [`Event`]s of the supergraph.
//!
//! The trace says which edges were taken, not which calls were made; the
//! calls are inferred:
//! - the ENTRY edge of `g` while `f`'s activation is in block `b`: `b`'s
//!   next supergraph call (in code order, after those already started) is
//!   the one that entered `g` (of a call's cases, the one whose callee is
//!   `g`); if `b` has no call left that may call `g`,
//!   `g` was entered from outside the profiled code (an import, an
//!   unmodelled function, the host): `Call { site: None }`;
//! - an edge into EXIT is taken before the instruction runs, so the return
//!   is emitted when the next event shows control left the function (a
//!   trap there ends the trace with no return, as the walk wants);
//! - a tail-call edge becomes [`Event::TailCall`] when the next event is
//!   the callee's ENTRY edge, an ordinary return otherwise (the callee was
//!   opaque);
//! - a `throw` edge becomes [`Event::Throw`] when the next event is a catch
//!   edge: the nearest activation of that function catches (an exception
//!   caught by a recursive activation further down cannot be told apart
//!   without the stack depth). An exception no profiled function catches
//!   is [`Event::Escape`]: it left the profiled code at the nearest
//!   activation entered from outside (a callback from an import, the
//!   host's call), whose caller caught it, and the conversion goes on in
//!   the activation below, if any (the import returned to it, or calls
//!   back again);
//! - a catch edge with no `throw` before it caught what an import the top
//!   activation called threw: [`Event::ImportThrow`], caught by the
//!   nearest activation of the catching function, as above.

use pathprof_graph::interproc::{CallSiteId, Event, FuncId};
use pathprof_graph::{Cfg, EdgeId, NodeId};

use super::ModuleSupergraph;
use crate::cfg::EdgeKind;

/// Why a trace does not fit the supergraph.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    #[error("trace event {index}: function {func} is not a modelled function of the module")]
    NotModelled { index: usize, func: u32 },
    #[error("trace event {index}: edge {edge} of function {func} does not leave where control is")]
    Misplaced { index: usize, func: u32, edge: u32 },
    /// A call of the block was left without entering a profiled function
    /// (an indirect call that reached an import): the supergraph has no
    /// event for it.
    #[error("trace event {index}: call {call} of function {func} ran without entering a profiled function")]
    SkippedSite {
        index: usize,
        func: u32,
        call: usize,
    },
}

/// What the last edge into EXIT left to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Leaving {
    No,
    Return,
    /// `unreachable`: the run ends here, nothing returns.
    Trap,
    Tail(EdgeId),
    Throw,
}

#[derive(Clone, Debug)]
struct Frame {
    func: FuncId,
    block: NodeId,
    /// Local index of the block's next call not yet started.
    next_call: usize,
    leaving: Leaving,
    /// Entered from outside the profiled code (`Call { site: None }`, or a
    /// tail call from such an activation): an exception that leaves it is
    /// caught there, out of sight.
    hosted: bool,
}

struct Converter<'a> {
    sg: &'a ModuleSupergraph,
    out: Vec<Event>,
    frames: Vec<Frame>,
    index: usize,
}

/// The execution `trace` (`(module function index, edge index)` pairs)
/// makes.
pub fn events(sg: &ModuleSupergraph, trace: &[(u32, u32)]) -> Result<Vec<Event>, TraceError> {
    let mut stream = EventStream::new(sg);
    stream.c.out.reserve(trace.len() + trace.len() / 4);
    for &(func, edge) in trace {
        if !stream.edge(func, edge)? {
            break;
        }
    }
    stream.finish();
    Ok(stream.c.out)
}

/// The same conversion one trace event at a time, for runs too long to
/// store: the events made so far are taken with [`EventStream::drain`].
pub struct EventStream<'a> {
    c: Converter<'a>,
    /// A trace event did not fit: later events are ignored.
    over: bool,
}

impl<'a> EventStream<'a> {
    pub fn new(sg: &'a ModuleSupergraph) -> EventStream<'a> {
        EventStream {
            c: Converter {
                sg,
                out: Vec::new(),
                frames: Vec::new(),
                index: 0,
            },
            over: false,
        }
    }

    /// Takes trace event (`func`, `edge`); false once the execution cannot
    /// go on (later events are ignored).
    pub fn edge(&mut self, func: u32, edge: u32) -> Result<bool, TraceError> {
        if self.over {
            return Ok(false);
        }
        let c = &mut self.c;
        let sg = c.sg;
        let f =
            sg.func_of(func)
                .filter(|f| sg.modelled[f.index()])
                .ok_or(TraceError::NotModelled {
                    index: c.index,
                    func,
                })?;
        let e = EdgeId::new(edge as usize);
        let cfg = &sg.supergraph.functions[f.index()].cfg;
        if e.index() >= cfg.num_edges() {
            return Err(c.misplaced(f, e));
        }
        let going = c.step(f, e)?;
        c.index += 1;
        self.over = !going;
        Ok(going)
    }

    /// Whether the execution cannot go on.
    pub fn is_over(&self) -> bool {
        self.over
    }

    /// The events made so far and not yet taken.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Event> {
        self.c.out.drain(..)
    }

    /// Ends the execution (the run is over): the activations that took a
    /// return edge last did return: nothing can trap between a return
    /// edge's trace record and the return. (A tail call left pending never
    /// entered its callee: the run ended in between, in code no trace
    /// sees.)
    pub fn finish(&mut self) {
        if self.over {
            return;
        }
        let c = &mut self.c;
        if c.frames.last().is_some_and(|t| t.leaving == Leaving::Throw) {
            c.escape(); // the run ended with the exception
            return;
        }
        while c
            .frames
            .last()
            .is_some_and(|t| t.leaving == Leaving::Return)
        {
            c.out.push(Event::Return);
            c.frames.pop();
        }
    }

    /// [`EventStream::finish`] for a run known to have returned (no trap,
    /// no `proc_exit`): a tail call left pending then entered an opaque
    /// function (an import), which returned for the tail caller.
    pub fn finish_returned(&mut self) {
        if !self.over {
            self.c.finish_leaving(None);
        }
        self.finish();
    }
}

impl Converter<'_> {
    fn misplaced(&self, f: FuncId, e: EdgeId) -> TraceError {
        TraceError::Misplaced {
            index: self.index,
            func: f.index() as u32 + self.sg.num_imported_funcs,
            edge: e.index() as u32,
        }
    }

    /// One trace event; false when the execution cannot go on.
    fn step(&mut self, f: FuncId, e: EdgeId) -> Result<bool, TraceError> {
        let cfg = &self.sg.supergraph.functions[f.index()].cfg;
        let (src, dst) = cfg.edge(e);
        let kind = self.sg.edge_kinds[f.index()][e.index()];
        if kind == EdgeKind::Catch {
            return Ok(self.catch(f, dst));
        }
        if self
            .frames
            .last()
            .is_some_and(|t| t.leaving == Leaving::Throw)
        {
            // Caught outside the profiled code, which runs on.
            self.escape();
        }
        if src == Cfg::ENTRY {
            self.enter(f)?;
        } else {
            self.finish_leaving(None);
            let top = self.frames.last().filter(|t| t.func == f && t.block == src);
            let Some(top) = top else {
                return Err(self.misplaced(f, e));
            };
            let left = self.sg.calls_of(f, src).end;
            if top.next_call < left {
                return Err(self.skipped(top));
            }
        }
        let top = self.frames.last_mut().expect("entered or checked above");
        top.block = dst;
        top.next_call = self.sg.calls_of(f, dst).start;
        match (dst == Cfg::EXIT, kind) {
            (false, _) => self.out.push(Event::Edge(e)),
            (true, EdgeKind::TailCall) => top.leaving = Leaving::Tail(e),
            (true, EdgeKind::Throw | EdgeKind::ThrowRef) => top.leaving = Leaving::Throw,
            (true, EdgeKind::Unreachable) => {
                top.leaving = Leaving::Trap;
                self.out.push(Event::Edge(e));
            }
            (true, _) => {
                top.leaving = Leaving::Return;
                self.out.push(Event::Edge(e));
            }
        }
        Ok(true)
    }

    fn skipped(&self, top: &Frame) -> TraceError {
        TraceError::SkippedSite {
            index: self.index,
            func: top.func.index() as u32 + self.sg.num_imported_funcs,
            call: top.next_call,
        }
    }

    /// Completes the top activation's exit before another event; at a tail
    /// call, `entering` says whether the next event enters a function.
    fn finish_leaving(&mut self, entering: Option<FuncId>) -> Option<FuncId> {
        let top = self.frames.last()?;
        match top.leaving {
            Leaving::No | Leaving::Throw | Leaving::Trap => None,
            Leaving::Return => {
                self.out.push(Event::Return);
                self.frames.pop();
                self.finish_leaving(entering)
            }
            Leaving::Tail(e) => {
                let sg = &self.sg.supergraph.functions[top.func.index()];
                let block = sg.cfg.src(e);
                let tail = sg.tail_calls.iter().find(|t| t.block == block);
                match (entering, tail) {
                    (Some(g), Some(t)) if t.callee.may_call(g) => {
                        self.out.push(Event::TailCall { callee: g });
                        self.frames.pop();
                        Some(g)
                    }
                    _ => {
                        self.out.push(Event::Edge(e));
                        self.out.push(Event::Return);
                        self.frames.pop();
                        self.finish_leaving(entering)
                    }
                }
            }
        }
    }

    /// `f` is entered at its ENTRY: by a tail call, a call site of the
    /// caller's block, or from outside.
    fn enter(&mut self, f: FuncId) -> Result<(), TraceError> {
        let hosted_before = self.frames.last().is_some_and(|t| t.hosted);
        let tail = self.finish_leaving(Some(f)) == Some(f);
        let hosted = match tail {
            true => hosted_before,
            false => {
                let site = self.site_entering(f)?;
                self.out.push(Event::Call { site, callee: f });
                site.is_none()
            }
        };
        self.frames.push(Frame {
            func: f,
            block: Cfg::ENTRY,
            next_call: 0,
            leaving: Leaving::No,
            hosted,
        });
        Ok(())
    }

    /// The top activation's exception left the profiled code: caught by
    /// whatever entered the nearest activation from outside, which is left
    /// with those above it.
    fn escape(&mut self) {
        self.out.push(Event::Escape);
        while let Some(t) = self.frames.pop() {
            if t.hosted {
                break;
            }
        }
    }

    /// The call site of the top activation that enters `f`, if any.
    fn site_entering(&mut self, f: FuncId) -> Result<Option<CallSiteId>, TraceError> {
        let Some(top) = self.frames.last() else {
            return Ok(None);
        };
        let calls = self.sg.calls_of(top.func, top.block);
        let func = &self.sg.supergraph.functions[top.func.index()];
        let Some(k) = (top.next_call..calls.end).find(|&k| func.calls[k].callee.may_call(f)) else {
            return Ok(None);
        };
        // The call's cases: one of them entered `f`.
        let cases = func.case_group(k);
        if cases.start != top.next_call {
            return Err(self.skipped(top));
        }
        let first = self.sg.site_start[top.func.index()];
        self.frames.last_mut().expect("checked above").next_call = cases.end;
        Ok(Some(CallSiteId::new(first + k)))
    }

    /// A catch edge of `f` into `handler`: the nearest activation of `f`
    /// catches what was thrown, by the top activation's `throw` or by an
    /// import it called. False if no activation of `f` is live.
    fn catch(&mut self, f: FuncId, handler: NodeId) -> bool {
        let thrown = self
            .frames
            .last()
            .is_some_and(|t| t.leaving == Leaving::Throw);
        if !thrown {
            // Thrown by an import the top activation called (no trace
            // event in between). A tail call into an import that threw
            // had returned for its caller, as it does in the
            // instrumentation.
            self.finish_leaving(None);
        }
        let catcher = self.frames.iter().rposition(|a| a.func == f);
        let Some(at) = catcher else {
            if thrown {
                self.escape();
            }
            return false;
        };
        let unwind = self.frames.len() - 1 - at;
        self.out.push(match thrown {
            true => Event::Throw { unwind, handler },
            false => Event::ImportThrow { unwind, handler },
        });
        self.frames.truncate(at + 1);
        let top = self.frames.last_mut().expect("the catcher");
        top.block = handler;
        top.next_call = self.sg.calls_of(f, handler).start;
        // Caught into the function's own label: it returns at once.
        top.leaving = match handler == Cfg::EXIT {
            true => Leaving::Return,
            false => Leaving::No,
        };
        true
    }
}
