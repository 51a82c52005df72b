//! The run-time instrumentation of sections 5.5 (context) and 6.3
//! (piecewise) as an executable reference: an execution in, path counts
//! out. The wasm instrumentation is to do exactly this.
//!
//! State, as the instrumented program keeps it:
//! - `pathNum`, one per program (main's local, passed by reference);
//! - per activation `numValidCompsFromExit` (a parameter passed by value:
//!   psi_r of the caller's at an uncut call site, 1 at a fresh start) and,
//!   for context profiling, `pathNumOnEntry` (pathNum on entry);
//! - piecewise: `cntOpenLfParens`, one per program (by reference);
//! - at a cut call site (and a host entry), `pathNumBeforeCall` (and the
//!   count of open parentheses), saved around the call.
//!
//! What happens where:
//! - an intraprocedural edge `e` kept in G*_fn: `pathNum += rho_e(nvc)`;
//! - a backedge `w -> v`: count `pathNum + rho_{w->GExit}(nvc)`; then
//!   context: `pathNum = pathNumOnEntry + rho_{Entry->v}(nvc)`; piecewise:
//!   `cnt = 0`, `nvc = numUnbalRLPaths[Exit_P]`, `pathNum =
//!   value(Entry_global -> GEntry_P) + rho_{GEntry->v}(nvc)`;
//! - an uncut call at `c` (return site `r`): the callee gets
//!   `nvc = psi_r(nvc)` and `pathNumOnEntry = pathNum`; piecewise `cnt += 1`;
//! - its return: context nothing; piecewise, if `cnt == 0`, `pathNum +=
//!   edgeValue[Exit_Q -> r]` and the caller's `nvc = numUnbalRLPaths[Exit_S]`,
//!   else `cnt -= 1`;
//! - a cut call (or the host entering an entry function `Q`): save
//!   pathNum (and cnt), `pathNum = value(Entry_global -> Entry_Q)`, nvc = 1,
//!   cnt = 1; on return (piecewise: plus `edgeValue[Exit_Q -> Exit_global]`
//!   if `cnt == 0`) count pathNum, restore, and take the summary edge.
//!
//! Departures from the paper:
//! - Piecewise, after a return taken with no open parenthesis the caller's
//!   nvc is `numUnbalRLPaths[Exit_S]`: Algorithm 6.1 writes
//!   `psi_r(numUnbalRLPaths[Exit_S])`, the completions from `r`, but rho in
//!   `S` needs those from `Exit_S`, and the report's Fig. 17 sets it to
//!   `numUnbalRLPaths[Exit_main]` ("from vertex v16").
//! - A path in flight when the events end (a trap) is not counted, nor are
//!   the paths saved at pending cut call sites, nor (at a throw) those of
//!   the activations left or put aside by them: section 9.2.1's stack of
//!   pending paths is not kept.
//! - A throw (9.2.2) counts the path along `u -> GExit` where control is
//!   and restarts in the catching activation as a backedge into the
//!   handler does. An exception that an import (or the host) catches
//!   counts nothing: the activations it leaves are gone, and the one that
//!   called the import goes on as after the call. An exception an import throws is caught the same way,
//!   but no path is counted where it was thrown: no instrumentation ran
//!   there (a departure the report's 9.2.2 has no case for: it assumes
//!   every throw is the program's own).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::error::GraphError;
use crate::interproc::local::EdgeRole;
use crate::interproc::supergraph::{CallSiteId, FuncId};
use crate::interproc::{Interproc, Mode};

/// One step of an execution.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Event {
    /// Control enters `callee` at its ENTRY: through call site `site`
    /// (control must be at the site's call vertex, i.e. the block has made
    /// its earlier calls), or from the host (`None`: the program's start, a
    /// callback from an import), which only an entry function allows.
    Call {
        site: Option<CallSiteId>,
        callee: FuncId,
    },
    /// The current function takes edge `e` of its CFG (its source must be
    /// where control is, after the block's calls).
    Edge(EdgeId),
    /// The current function, at EXIT, returns to its caller.
    Return,
    /// The current activation throws where control is (a path must be
    /// able to end there: the end of a throwing block, a dead end, a
    /// backedge source); `unwind` activations are left, and the one then on
    /// top catches at its handler block `handler` (section 9.2.2).
    Throw { unwind: usize, handler: NodeId },
    /// The current activation throws where control is, and no profiled
    /// function catches the exception: it leaves the activations down to
    /// the nearest one entered from the host (`Call { site: None }`, or a
    /// tail call from one), that one included, and whatever entered that
    /// one caught it (an import that called back, or the host). Control
    /// goes on in the activation below, after its call of the import; with
    /// none left, the execution is over unless the host enters again. No
    /// path of the activations left is counted: the thrown path is counted
    /// where a profiled function catches it, and none does
    /// (docs/decisions.md#import-catches).
    Escape,
    /// An exception that no profiled `throw` raised (an import threw it)
    /// is caught: `unwind` activations are left and the one then on top
    /// catches at its handler block `handler`. No instrumentation ran
    /// where it was thrown, so the path in flight there is not counted,
    /// as at a trap; the catcher starts a path at `handler` as after a
    /// [`Event::Throw`] (docs/decisions.md#import-throws).
    ImportThrow { unwind: usize, handler: NodeId },
    /// The current activation, at the end of a block that tail-calls,
    /// tail-calls `callee`: it is replaced by `callee`'s, entered afresh.
    TailCall { callee: FuncId },
}

/// Path number to the number of times it was counted.
pub type Counts = BTreeMap<u64, u64>;

/// How an activation was entered.
#[derive(Copy, Clone, Debug)]
enum Entered {
    /// Through an uncut call site.
    Call(CallSiteId),
    /// Afresh (a cut call site, or the host): what to restore on return.
    Fresh {
        site: Option<CallSiteId>,
        path: u64,
        cnt: u64,
    },
    /// Afresh by a tail call from an activation entered through this
    /// uncut site: its return restarts the caller's path there.
    TailFrom(CallSiteId),
}

#[derive(Clone, Debug)]
struct Frame {
    func: FuncId,
    node: NodeId,
    nvc: u64,
    on_entry: u64,
    entered: Entered,
}

struct Walker<'a> {
    ip: &'a Interproc,
    path: u64,
    cnt: u64,
    frames: Vec<Frame>,
    counts: Counts,
    index: usize,
}

impl Interproc {
    /// Runs `events` as the instrumented program would and returns how often
    /// each path number was counted.
    pub fn walk(&self, events: &[Event]) -> Result<Counts, GraphError> {
        let mut w = Walker {
            ip: self,
            path: 0,
            cnt: 0,
            frames: Vec::new(),
            counts: Counts::new(),
            index: 0,
        };
        for (index, &event) in events.iter().enumerate() {
            w.index = index;
            match event {
                Event::Call { site, callee } => w.call(site, callee)?,
                Event::Edge(e) => w.edge(e)?,
                Event::Return => w.ret()?,
                Event::Throw { unwind, handler } => {
                    w.end_thrown_path()?;
                    w.catch(unwind, handler)?
                }
                Event::ImportThrow { unwind, handler } => w.catch(unwind, handler)?,
                Event::TailCall { callee } => w.tail_call(callee)?,
                Event::Escape => w.escape(),
            }
        }
        Ok(w.counts)
    }
}

impl Walker<'_> {
    fn bad(&self, reason: &'static str) -> GraphError {
        GraphError::BadExecution {
            index: self.index,
            reason,
        }
    }

    fn overflow(&self, f: FuncId) -> GraphError {
        GraphError::PathCountOverflow {
            function: Some(f.index()),
        }
    }

    fn count(&mut self, n: u64) {
        *self.counts.entry(n).or_insert(0) += 1;
    }

    fn call(&mut self, site: Option<CallSiteId>, callee: FuncId) -> Result<(), GraphError> {
        let ip = self.ip;
        if callee.index() >= ip.splits.len() {
            return Err(self.bad("callee out of range"));
        }
        if let Some(s) = site {
            self.enter_case(s)?;
            self.check_site(s, callee)?;
        }
        match site {
            Some(s) if !ip.is_cut(s) => {
                let top = self.frames.last().expect("check_site found a frame");
                let r = ip.splits[top.func.index()].return_site[ip.sites[s.index()].index];
                let nvc = ip.psi(top.func, r).apply(top.nvc);
                let nvc = nvc.ok_or(self.overflow(top.func))?;
                self.cnt += 1;
                self.frames.push(Frame {
                    func: callee,
                    node: Cfg::ENTRY,
                    nvc,
                    on_entry: self.path,
                    entered: Entered::Call(s),
                });
            }
            _ => {
                let entered = Entered::Fresh {
                    site,
                    path: self.path,
                    cnt: self.cnt,
                };
                self.enter_afresh(callee, entered)?;
            }
        }
        Ok(())
    }

    /// Along the link into `s`'s call vertex, if the call is a case (or
    /// follows cases) and control is where the link leaves.
    fn enter_case(&mut self, s: CallSiteId) -> Result<(), GraphError> {
        let ip = self.ip;
        let (Some(top), Some(at)) = (self.frames.last(), ip.sites.get(s.index())) else {
            return Ok(()); // check_site says what is wrong
        };
        let split = &ip.splits[at.func.index()];
        let Some(link) = split.link_before[at.index] else {
            return Ok(());
        };
        if at.func != top.func || split.cfg.src(link) != top.node {
            return Ok(());
        }
        self.take_kept(at.func, link)?;
        self.frames.last_mut().expect("checked above").node = split.cfg.dst(link);
        Ok(())
    }

    /// Control is at `s`'s call vertex and `s` may call `callee`.
    fn check_site(&self, s: CallSiteId, callee: FuncId) -> Result<(), GraphError> {
        let ip = self.ip;
        let (Some(top), Some(at)) = (self.frames.last(), ip.sites.get(s.index())) else {
            return Err(self.bad("a call site with no caller, or out of range"));
        };
        if at.func != top.func || ip.splits[at.func.index()].call_vertex[at.index] != top.node {
            return Err(self.bad("control is not at this call site"));
        }
        if !ip.callees[s.index()].may_call(callee) {
            return Err(self.bad("the call site cannot call this function"));
        }
        Ok(())
    }

    fn edge(&mut self, e: EdgeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let Some(top) = self.frames.last() else {
            return Err(self.bad("an edge with no activation"));
        };
        let (f, nvc) = (top.func, top.nvc);
        let split = &ip.splits[f.index()];
        if !split.is_original(e) || split.cfg.src(e) != top.node {
            return Err(self.bad("the edge does not leave where control is"));
        }
        let local = &ip.locals[f.index()];
        let rho = |d: crate::interproc::LocalEdgeId| {
            ip.numbering.functions[f.index()].rho[d.index()].apply(nvc)
        };
        match local.roles[e.index()] {
            EdgeRole::Kept(_) => self.take_kept(f, e)?,
            EdgeRole::Back { exit, entry } => {
                let end = rho(exit).and_then(|x| self.path.checked_add(x));
                let end = end.ok_or(self.overflow(f))?;
                self.count(end);
                self.restart(f, entry)?;
            }
            EdgeRole::Unreachable => return Err(self.bad("an edge ENTRY never reaches")),
        }
        let top = self.frames.last_mut().expect("checked above");
        top.node = split.cfg.dst(e);
        Ok(())
    }

    /// Starts a new path along the surrogate entry edge `entry` of `f`.
    fn restart(
        &mut self,
        f: FuncId,
        entry: crate::interproc::LocalEdgeId,
    ) -> Result<(), GraphError> {
        let ip = self.ip;
        let top = self.frames.last_mut().expect("restart in an activation");
        let start = match ip.mode {
            Mode::Context => top.on_entry,
            Mode::Piecewise => {
                let pw = ip.numbering.piecewise.as_ref().expect("piecewise values");
                top.nvc = pw.unbal_rl_exit[f.index()];
                self.cnt = 0;
                ip.global_gentry(f)
                    .expect("every function has GEntry")
                    .value
            }
        };
        let rho = ip.numbering.functions[f.index()].rho[entry.index()].apply(top.nvc);
        self.path =
            rho.and_then(|x| start.checked_add(x))
                .ok_or(GraphError::PathCountOverflow {
                    function: Some(f.index()),
                })?;
        Ok(())
    }

    fn ret(&mut self) -> Result<(), GraphError> {
        let ip = self.ip;
        match self.frames.last() {
            Some(top) if top.node == Cfg::EXIT => {}
            _ => return Err(self.bad("a return not at EXIT")),
        }
        let frame = self.frames.pop().expect("checked above");
        let pw = ip.numbering.piecewise.as_ref();
        match frame.entered {
            Entered::Call(s) => {
                let caller = self.frames.last_mut().expect("an uncut call has a caller");
                let at = ip.sites[s.index()];
                caller.node = ip.splits[at.func.index()].return_site[at.index];
                if let Some(pw) = pw {
                    if self.cnt == 0 {
                        self.path = self.path.checked_add(pw.return_value[s.index()]).ok_or(
                            GraphError::PathCountOverflow {
                                function: Some(at.func.index()),
                            },
                        )?;
                        caller.nvc = pw.unbal_rl_exit[at.func.index()];
                    } else {
                        self.cnt -= 1;
                    }
                }
                self.advance_to_next_call(s)?;
            }
            Entered::Fresh { site, path, cnt } => {
                self.count_fresh_path(frame.func)?;
                self.path = path;
                self.cnt = cnt;
                if let Some(s) = site {
                    self.take_summary(s)?;
                }
            }
            Entered::TailFrom(s) => {
                self.count_fresh_path(frame.func)?;
                let at = ip.sites[s.index()];
                let r = ip.splits[at.func.index()].return_site[at.index];
                let entry = ip.locals[at.func.index()].entry_of[r.index()]
                    .expect("return sites of calls to tail-calling functions restart");
                self.restart(at.func, entry)?;
                self.frames.last_mut().expect("a call has a caller").node = r;
                self.advance_to_next_call(s)?;
            }
        }
        Ok(())
    }

    /// Counts the path of an activation entered afresh, which returns along
    /// `Exit_f -> Exit_global` (piecewise, with its edgeValue when no
    /// parenthesis is open).
    fn count_fresh_path(&mut self, f: FuncId) -> Result<(), GraphError> {
        if let (Some(pw), 0) = (self.ip.numbering.piecewise.as_ref(), self.cnt) {
            let value = pw.exit_global_value[f.index()].unwrap_or(0);
            self.path = self.path.checked_add(value).ok_or(self.overflow(f))?;
        }
        let done = self.path;
        self.count(done);
        Ok(())
    }

    /// Ends the path at the tail-calling block and replaces the activation
    /// by `callee`'s, entered afresh.
    fn tail_call(&mut self, callee: FuncId) -> Result<(), GraphError> {
        let ip = self.ip;
        let Some(top) = self.frames.last() else {
            return Err(self.bad("a tail call with no activation"));
        };
        let (f, split) = (top.func, &ip.splits[top.func.index()]);
        let tail = ip.tail_calls[f.index()]
            .iter()
            .find(|t| split.last[t.block.index()] == top.node && t.callee.may_call(callee));
        if tail.is_none() {
            return Err(self.bad("no tail call to this function where control is"));
        }
        self.end_path_here()?;
        let caller = self.frames.pop().expect("checked above");
        let entered = match caller.entered {
            Entered::Call(s) => Entered::TailFrom(s),
            inherited => inherited,
        };
        self.enter_afresh(callee, entered)
    }

    /// An exception leaves the activations down to the nearest one the
    /// host entered: the caller's path and parenthesis count come back as
    /// they were, nothing is counted.
    fn escape(&mut self) {
        while let Some(frame) = self.frames.pop() {
            if let Entered::Fresh {
                site: None,
                path,
                cnt,
            } = frame.entered
            {
                self.path = path;
                self.cnt = cnt;
                break;
            }
        }
    }

    /// Starts a path along `Entry_global -> Entry_callee` in a new
    /// activation (nvc 1, one open parenthesis).
    fn enter_afresh(&mut self, callee: FuncId, entered: Entered) -> Result<(), GraphError> {
        let Some(entry) = self.ip.global_entry(callee) else {
            return Err(self.bad("entered afresh, but not an entry function"));
        };
        self.path = entry.value;
        self.cnt = 1;
        self.frames.push(Frame {
            func: callee,
            node: Cfg::ENTRY,
            nvc: 1,
            on_entry: entry.value,
            entered,
        });
        Ok(())
    }

    /// Counts the path in flight, ended along `u -> GExit` where control is.
    fn end_path_here(&mut self) -> Result<(), GraphError> {
        let ip = self.ip;
        let top = self.frames.last().expect("an activation");
        let (f, nvc) = (top.func, top.nvc);
        let Some(exit) = ip.locals[f.index()].exit_of[top.node.index()] else {
            return Err(self.bad("no path can end where control is"));
        };
        let rho = ip.numbering.functions[f.index()].rho[exit.index()].apply(nvc);
        let end = rho.and_then(|x| self.path.checked_add(x));
        let end = end.ok_or(self.overflow(f))?;
        self.count(end);
        Ok(())
    }

    /// A profiled `throw`: ends the path where control is.
    fn end_thrown_path(&mut self) -> Result<(), GraphError> {
        if self.frames.is_empty() {
            return Err(self.bad("a throw with no activation"));
        }
        self.end_path_here()
    }

    /// Leaves `unwind` activations and starts a path at `handler` in the
    /// one left on top. The paths put aside at cut call sites among those
    /// left are lost, as at a trap.
    fn catch(&mut self, unwind: usize, handler: NodeId) -> Result<(), GraphError> {
        let ip = self.ip;
        if unwind >= self.frames.len() {
            return Err(self.bad("no activation catches the exception"));
        }
        self.frames.truncate(self.frames.len() - unwind);
        let catcher = self.frames.last().expect("checked above").func;
        let local = &ip.locals[catcher.index()];
        let Some(entry) = local.entry_of.get(handler.index()).copied().flatten() else {
            return Err(self.bad("the handler is not one of the catching function's"));
        };
        self.restart(catcher, entry)?;
        self.frames.last_mut().expect("checked above").node = handler;
        Ok(())
    }

    /// The caller moves along the summary edge `c -> r` of cut site `s`.
    fn take_summary(&mut self, s: CallSiteId) -> Result<(), GraphError> {
        let ip = self.ip;
        let at = ip.sites[s.index()];
        let split = &ip.splits[at.func.index()];
        self.take_kept(at.func, split.call_edge[at.index])?;
        let caller = self.frames.last_mut().expect("a cut call has a caller");
        caller.node = split.return_site[at.index];
        self.advance_to_next_call(s)
    }

    /// Back at the return site of `s`: on along the link to the block's
    /// next call vertex, if the block makes another call (its only
    /// successor, so its rho is 0; added all the same).
    fn advance_to_next_call(&mut self, s: CallSiteId) -> Result<(), GraphError> {
        let ip = self.ip;
        let at = ip.sites[s.index()];
        let split = &ip.splits[at.func.index()];
        let Some(link) = split.link_after[at.index] else {
            return Ok(());
        };
        self.take_kept(at.func, link)?;
        let caller = self.frames.last_mut().expect("a call has a caller");
        caller.node = split.cfg.dst(link);
        Ok(())
    }

    /// `pathNum += rho_e(nvc)` for split edge `e` of the current function
    /// `f`, if G*_fn keeps it.
    fn take_kept(&mut self, f: FuncId, e: EdgeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let nvc = self.frames.last().expect("an activation").nvc;
        if let EdgeRole::Kept(d) = ip.locals[f.index()].roles[e.index()] {
            let rho = ip.numbering.functions[f.index()].rho[d.index()].apply(nvc);
            self.path = rho
                .and_then(|x| self.path.checked_add(x))
                .ok_or(self.overflow(f))?;
        }
        Ok(())
    }
}
