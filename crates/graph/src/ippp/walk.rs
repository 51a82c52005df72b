//! The IPPP instrumentation without inlining (thesis 3.4.5) as an
//! executable reference: a run in, counts of interesting IPS by PPP id
//! out. The wasm instrumentation is to do exactly this.
//!
//! State, as the instrumented program keeps it:
//! - per activation, a *root* register pair (Ball-Larus, PPP) for the
//!   subpath in flight, numbered in the root copy of the function's
//!   expanded graph ([`crate::ippp::expand`]);
//! - per activation, the *open* registers of the segments that take its
//!   next subpath: each knows its start function's expanded graph and the
//!   copy (context) it is in, which the caller passes at the call; a
//!   callee's edge adds, to each, that copy's increments (one per context,
//!   3.4.5's `cnt1 ... cntN`).
//!
//! What happens where:
//! - an edge: every register of the activation adds its copy's increments;
//! - a cut edge of a truncated expanded graph (in a callee's copy): the
//!   registers in that copy end there, *truncated*;
//! - a backedge: the open registers add the copy's dummy `w -> EXIT` and
//!   are *classified*; the root register, a subpath that is no IPS, starts
//!   again at the copy's dummy `ENTRY -> v`;
//! - a call at `c` to `g`: the root register becomes an open one, and each
//!   open register (below depth `k`) goes into the copy inlined at
//!   `(c, g)`, adding its `c -> ENTRY'`; with no such copy it adds the
//!   dummy `c -> EXIT` and is classified (an IPS no interesting one
//!   extends); the callee's activation starts a root register at 0;
//! - a return: open registers at depth 0 are classified (their function
//!   returned), the others add `EXIT' -> r` and go back to the caller,
//!   whose root register starts at its dummy `ENTRY -> r`.
//!
//! *Classified*: as in 3.2.3, the PPP id indexes the path array and the
//! Ball-Larus id stored there must match; else the IPS is not interesting
//! (an untested IPS, in residual profiling).
//!
//! - a tail call: the open registers add the copy's dummy `u -> EXIT` of
//!   the tail-calling vertex and are classified (their segments close, as
//!   the segmenter closes them); the callee's activation starts with a
//!   root register at 0 and none open.
//!
//! - a throw: likewise at the throwing vertex's dummy `u -> EXIT`; the
//!   catching activation drops what it had open and starts a root
//!   register along its catch edge `ENTRY -> h`.
//!
//! Departures from the thesis: tail calls and throws are treated as the
//! segmenter treats them.

use std::collections::BTreeMap;

use crate::cfg::Cfg;
use crate::dag::DagEdgeId;
use crate::error::GraphError;
use crate::interproc::{CallSiteId, Event, FuncId};
use crate::ippp::expand::Expanded;
use crate::ippp::segment::IpsProfile;
use crate::ippp::subpath::{CutRole, SubpathNumbering};
use crate::NodeId;

/// What a run of the IPPP instrumentation counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpppCounts {
    /// Per (start function, PPP id): how often that interesting IPS
    /// occurred.
    pub interesting: BTreeMap<(FuncId, i64), u64>,
    /// Per (start function, Ball-Larus id in its expanded graph): how
    /// often an IPS that is not interesting closed (untested, in residual
    /// profiling); [`Ippp::decode_ball_larus`] spells it out.
    pub uninteresting: BTreeMap<(FuncId, u64), u64>,
    /// Per start function: how many IPS ended at a cut edge of its
    /// truncated expanded graph ([`Expanded::is_cut`]).
    pub truncated: BTreeMap<FuncId, u64>,
}

/// A register pair in one copy of one expanded graph.
#[derive(Copy, Clone, Debug)]
struct Register {
    root: FuncId,
    copy: usize,
    depth: usize,
    bl: u64,
    ppp: i64,
}

impl Register {
    fn at(root: FuncId) -> Register {
        Register {
            root,
            copy: 0,
            depth: 0,
            bl: 0,
            ppp: 0,
        }
    }
}

struct Frame {
    func: FuncId,
    node: NodeId,
    entered: Option<CallSiteId>,
    root: Register,
    open: Vec<Register>,
}

/// The IPPP instrumentation of a supergraph for depth-`k` interesting IPS.
#[derive(Clone, Debug)]
pub struct Ippp<'a> {
    pub subpaths: &'a SubpathNumbering,
    pub k: usize,
    /// Per function, its expanded graph.
    pub expanded: Vec<Expanded>,
}

impl<'a> Ippp<'a> {
    /// Expands and numbers every function for the depth-`k` IPS
    /// `interesting` (see [`crate::ippp::expand::expand_all`]).
    pub fn new(
        subpaths: &'a SubpathNumbering,
        k: usize,
        interesting: &[crate::ippp::Ips],
    ) -> Result<Ippp<'a>, GraphError> {
        Ok(Ippp {
            subpaths,
            k,
            expanded: crate::ippp::expand::expand_all(subpaths, k, interesting)?,
        })
    }

    /// The interesting IPS counted as (`f`, `ppp`).
    pub fn decode(&self, f: FuncId, ppp: i64) -> Option<&crate::ippp::Ips> {
        self.expanded.get(f.index())?.decode(ppp)
    }

    /// The IPS counted as not interesting as (`f`, `bl`).
    pub fn decode_ball_larus(&self, f: FuncId, bl: u64) -> Result<crate::ippp::Ips, GraphError> {
        let x = self
            .expanded
            .get(f.index())
            .ok_or(GraphError::BadSupergraph {
                function: f.index(),
                reason: "no such function",
            })?;
        x.decode_ball_larus(self.subpaths, bl)
    }

    /// Every IPS `counts` holds, interesting or not, with its count: the
    /// field profile residual profiling compares with the tested IPS
    /// (3.5.2, [`crate::ippp::Residual`]).
    pub fn field_profile(&self, counts: &IpppCounts) -> Result<IpsProfile, GraphError> {
        let mut out = IpsProfile::new();
        for (&(f, ppp), &c) in &counts.interesting {
            let ips = self.decode(f, ppp).ok_or(GraphError::InvalidNumbering {
                reason: "a counted PPP id is no interesting IPS",
            })?;
            *out.entry(ips.clone()).or_insert(0) += c;
        }
        for (&(f, bl), &c) in &counts.uninteresting {
            *out.entry(self.decode_ball_larus(f, bl)?).or_insert(0) += c;
        }
        Ok(out)
    }

    /// Runs `events` as the instrumented program would.
    pub fn walk(&self, events: &[Event]) -> Result<IpppCounts, GraphError> {
        let mut w = Walker {
            ip: self,
            frames: Vec::new(),
            counts: IpppCounts::default(),
            index: 0,
        };
        for (index, &event) in events.iter().enumerate() {
            w.index = index;
            match event {
                Event::Call { site, callee } => w.call(site, callee)?,
                Event::Edge(e) => w.edge(e)?,
                Event::Return => w.ret()?,
                Event::TailCall { callee } => w.tail_call(callee)?,
                Event::Throw { unwind, handler } => {
                    w.close_at_throw()?;
                    w.catch(unwind, handler)?
                }
                Event::Escape => {
                    w.close_at_throw()?;
                    w.frames
                        .truncate(hosted_below(&w.frames, |f| f.entered.is_none()));
                }
                Event::ImportThrow { unwind, handler } => w.catch(unwind, handler)?,
            }
        }
        Ok(w.counts)
    }
}

struct Walker<'i, 'a> {
    ip: &'i Ippp<'a>,
    frames: Vec<Frame>,
    counts: IpppCounts,
    index: usize,
}

impl Walker<'_, '_> {
    fn bad(&self, reason: &'static str) -> GraphError {
        GraphError::BadExecution {
            index: self.index,
            reason,
        }
    }

    /// Adds the increments of call-cut DAG edge `d` in the register's copy.
    fn add(&self, r: &mut Register, d: DagEdgeId) -> Result<(), GraphError> {
        let x = &self.ip.expanded[r.root.index()];
        let (bl, ppp) = x
            .increment(r.copy, d)
            .ok_or(self.bad("an edge the register's copy drops"))?;
        r.bl = r.bl.wrapping_add(bl);
        r.ppp = r.ppp.wrapping_add(ppp);
        Ok(())
    }

    /// Adds the increments of expanded-graph edge `x` of the register's graph.
    fn add_x(&self, r: &mut Register, x: Option<DagEdgeId>) {
        let (bl, ppp) = self.ip.expanded[r.root.index()].of(x.expect("a copy's link edge"));
        r.bl = r.bl.wrapping_add(bl);
        r.ppp = r.ppp.wrapping_add(ppp);
    }

    /// Every open register adds the increments of DAG edge `d`; those in a
    /// copy that cuts it end there, truncated.
    fn advance(&mut self, open: &mut Vec<Register>, d: DagEdgeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let mut kept = Vec::with_capacity(open.len());
        for mut r in std::mem::take(open) {
            self.add(&mut r, d)?;
            if ip.expanded[r.root.index()].is_cut(r.copy, d) {
                *self.counts.truncated.entry(r.root).or_insert(0) += 1;
            } else {
                kept.push(r);
            }
        }
        *open = kept;
        Ok(())
    }

    fn classify(&mut self, r: Register) {
        match self.ip.expanded[r.root.index()].lookup(r.ppp, r.bl) {
            Some(_) => *self.counts.interesting.entry((r.root, r.ppp)).or_insert(0) += 1,
            None => *self.counts.uninteresting.entry((r.root, r.bl)).or_insert(0) += 1,
        }
    }

    fn call(&mut self, site: Option<CallSiteId>, callee: FuncId) -> Result<(), GraphError> {
        let num = self.ip.subpaths;
        if num.function(callee).is_none() {
            return Err(self.bad("callee out of range"));
        }
        let mut moved = Vec::new();
        if let Some(s) = site {
            let at = *num
                .sites
                .get(s.index())
                .ok_or(self.bad("call site out of range"))?;
            if !num.callees[s.index()].may_call(callee) {
                return Err(self.bad("the call site cannot call this function"));
            }
            let no_caller = self.bad("a call with no caller");
            let top = self.frames.last_mut().ok_or(no_caller)?;
            let f = &num.functions[at.func.index()];
            if top.func != at.func || f.split.call_vertex[at.index] != top.node {
                return Err(self.bad("control is not at this call site"));
            }
            let CutRole::Cut { exit, .. } = f.roles[f.split.call_edge[at.index].index()] else {
                return Err(self.bad("the call site is not reached"));
            };
            let mut regs = std::mem::take(&mut top.open);
            regs.push(top.root);
            let ip = self.ip;
            for mut r in regs {
                let x = &ip.expanded[r.root.index()];
                let child = x.copies[r.copy].children.get(&(at.index, callee));
                match child {
                    Some(&c) if r.depth < self.ip.k => {
                        self.add_x(&mut r, x.copies[c].enter);
                        r.copy = c;
                        r.depth += 1;
                        moved.push(r);
                    }
                    _ => {
                        self.add(&mut r, exit)?;
                        self.classify(r);
                    }
                }
            }
        }
        self.frames.push(Frame {
            func: callee,
            node: Cfg::ENTRY,
            entered: site,
            root: Register::at(callee),
            open: moved,
        });
        Ok(())
    }

    fn edge(&mut self, e: crate::EdgeId) -> Result<(), GraphError> {
        let num = self.ip.subpaths;
        let top = self
            .frames
            .last()
            .ok_or(self.bad("an edge with no activation"))?;
        let f = &num.functions[top.func.index()];
        if !f.split.is_original(e) || f.split.cfg.src(e) != top.node {
            return Err(self.bad("the edge does not leave where control is"));
        }
        let mut top = self.frames.pop().expect("checked above");
        match f.roles[e.index()] {
            CutRole::Real(d) => {
                self.add(&mut top.root, d)?;
                self.advance(&mut top.open, d)?;
            }
            CutRole::Cut { exit, entry } => {
                for mut r in std::mem::take(&mut top.open) {
                    self.add(&mut r, exit)?;
                    self.classify(r);
                }
                top.root = Register::at(top.func);
                self.add(&mut top.root, entry)?;
            }
            CutRole::Unreachable => return Err(self.bad("an edge ENTRY never reaches")),
        }
        top.node = f.split.cfg.dst(e);
        self.frames.push(top);
        Ok(())
    }

    fn tail_call(&mut self, callee: FuncId) -> Result<(), GraphError> {
        let num = self.ip.subpaths;
        if num.function(callee).is_none() {
            return Err(self.bad("callee out of range"));
        }
        let top = self
            .frames
            .pop()
            .ok_or(self.bad("a tail call with no activation"))?;
        let f = &num.functions[top.func.index()];
        let exit = f.tail_at(top.node, callee).and_then(|t| t.exit);
        let exit = exit.ok_or(self.bad("no tail call to this function where control is"))?;
        for mut r in top.open {
            self.add(&mut r, exit)?;
            self.classify(r);
        }
        self.frames.push(Frame {
            func: callee,
            node: Cfg::ENTRY,
            entered: top.entered,
            root: Register::at(callee),
            open: Vec::new(),
        });
        Ok(())
    }

    /// A profiled `throw`: the groups open on the thrower close there.
    fn close_at_throw(&mut self) -> Result<(), GraphError> {
        let num = self.ip.subpaths;
        let (none, nowhere) = (
            self.bad("a throw with no activation"),
            self.bad("no throw where control is"),
        );
        let top = self.frames.last_mut().ok_or(none)?;
        let f = &num.functions[top.func.index()];
        let exit = f.throw_at(top.node).ok_or(nowhere)?;
        let open = std::mem::take(&mut top.open);
        for mut r in open {
            self.add(&mut r, exit)?;
            self.classify(r);
        }
        Ok(())
    }

    /// `unwind` activations are left, and the one then on top catches at
    /// `handler` with no group open: what was open on the unwound ones and
    /// on the catcher is dropped, as the catch edge's instrumentation does.
    fn catch(&mut self, unwind: usize, handler: NodeId) -> Result<(), GraphError> {
        let num = self.ip.subpaths;
        let left = self.frames.len().checked_sub(unwind + 1);
        let left = left.ok_or(self.bad("no activation catches the exception"))?;
        self.frames.truncate(left + 1);
        let mut catcher = self.frames.pop().expect("checked above");
        let f = &num.functions[catcher.func.index()];
        let d = f.catch_edge(handler);
        let d = d.ok_or(self.bad("the handler is not one of the catching function's"))?;
        catcher.open.clear();
        catcher.root = Register::at(catcher.func);
        self.add(&mut catcher.root, d)?;
        catcher.node = handler;
        self.frames.push(catcher);
        Ok(())
    }

    fn ret(&mut self) -> Result<(), GraphError> {
        let top = match self.frames.pop() {
            Some(top) if top.node == Cfg::EXIT => top,
            _ => return Err(self.bad("a return not at EXIT")),
        };
        let mut back = Vec::new();
        let ip = self.ip;
        for mut r in top.open {
            if r.depth == 0 {
                self.classify(r);
                continue;
            }
            let x = &ip.expanded[r.root.index()];
            let leave = x.copies[r.copy].leave;
            self.add_x(&mut r, leave);
            r.copy = x.copies[r.copy].parent.expect("depth > 0 has a parent").0;
            r.depth -= 1;
            back.push(r);
        }
        let Some(s) = top.entered else {
            return Ok(());
        };
        let num = self.ip.subpaths;
        let at = num.sites[s.index()];
        let mut caller = self
            .frames
            .pop()
            .ok_or(self.bad("a return with no caller"))?;
        let f = &num.functions[at.func.index()];
        let CutRole::Cut { entry, .. } = f.roles[f.split.call_edge[at.index].index()] else {
            return Err(self.bad("the call site is not reached"));
        };
        caller.root = Register::at(caller.func);
        self.add(&mut caller.root, entry)?;
        caller.open.extend(back);
        caller.node = f.split.return_site[at.index];
        // A block's next call: along the link to its call vertex.
        if let Some(link) = f.split.link_after[at.index] {
            if let CutRole::Real(d) = f.roles[link.index()] {
                self.add(&mut caller.root, d)?;
                self.advance(&mut caller.open, d)?;
            }
            caller.node = f.split.cfg.dst(link);
        }
        self.frames.push(caller);
        Ok(())
    }
}

/// How many of `frames` (oldest first) an exception that leaves the
/// profiled code leaves live: those below the nearest one the host
/// entered (`hosted`), whose caller outside caught it
/// ([`Event::Escape`]).
pub(crate) fn hosted_below<F>(frames: &[F], hosted: impl Fn(&F) -> bool) -> usize {
    frames.iter().rposition(hosted).unwrap_or(0)
}
