//! A path number back to its observable path: Algorithm 5.2 (context), and
//! its piecewise counterpart, which section 6.3 leaves "as an exercise".
//!
//! At each vertex the decoder takes the valid successor whose
//! edgeValueInContext is the largest not above what is left of the number
//! (5.6): an intraprocedural edge's value is rho_e(nvc); an uncut call
//! vertex has one valid successor, the call; `Exit_Q` has one too (the
//! return matching the last open parenthesis) unless, piecewise, no
//! parenthesis is open, when every return site and `Exit_global` are valid,
//! with the values edgeValue of eq. (35).
//!
//! The path is given in the producer's terms ([`PathStep`]): original CFG
//! edges and blocks, call sites and functions. The links between the calls
//! of one block are implied and not listed.

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, NodeId};
use crate::error::GraphError;
use crate::interproc::local::LocalEdgeKind;
use crate::interproc::numbering::{EntryKind, GlobalEntry};
use crate::interproc::supergraph::{CallSiteId, Callee, FuncId};
use crate::interproc::{Interproc, Mode};
use crate::EdgeId;

/// One edge of an observable path of G*_fn.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PathStep {
    /// `Entry_global -> Entry_f`: the path begins at `f`'s entry (`main`,
    /// the target of a cut call site, a host entry).
    Begin(FuncId),
    /// A surrogate entry edge: `Entry_f -> v` (context; the context-prefix
    /// ends here) or `Entry_global -> GEntry_f -> v` (piecewise): the path
    /// starts over at block `node` of `func`, a backedge target.
    Resume { func: FuncId, node: NodeId },
    /// A surrogate entry edge into the return site of `site` (whose callee
    /// may tail-call): the path starts over where that call returned.
    ResumeAfterCall(CallSiteId),
    /// An edge of `func`'s CFG.
    Edge { func: FuncId, edge: EdgeId },
    /// The call edge of an uncut call site.
    Call { site: CallSiteId, callee: FuncId },
    /// The return edge to the return site of `site`.
    Return(CallSiteId),
    /// The summary edge of a cut call site.
    Summary(CallSiteId),
    /// `w -> GExit_f -> Exit_global`: the path ends at block `node` (a
    /// backedge source, or a dead end).
    End { func: FuncId, node: NodeId },
    /// `Exit_f -> Exit_global`.
    Exit(FuncId),
}

/// An observable path: its steps, and where its active-suffix begins (3.4):
/// `steps[..active_start]` is the context-prefix, which ends with the last
/// surrogate entry edge ([`PathStep::Resume`]); empty for a path with no
/// surrogate entry and for every piecewise path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProfiledPath {
    pub steps: Vec<PathStep>,
    pub active_start: usize,
}

impl ProfiledPath {
    pub fn context_prefix(&self) -> &[PathStep] {
        &self.steps[..self.active_start]
    }
    pub fn active_suffix(&self) -> &[PathStep] {
        &self.steps[self.active_start..]
    }
}

/// An activation on the decoder's (and the encoder's) stack.
pub(super) struct Frame {
    pub func: FuncId,
    pub node: NodeId,
    pub nvc: u64,
    /// The uncut call site that entered it within this path.
    pub site: Option<CallSiteId>,
}

/// The call edge of uncut `site` from the top activation, at its call
/// vertex: the caller goes on at the return site `r`, the callee starts
/// with nvc = psi_r(nvc). `None` if that overflows or there is no caller.
pub(super) fn push_call(
    ip: &Interproc,
    frames: &mut Vec<Frame>,
    site: CallSiteId,
    callee: FuncId,
) -> Option<()> {
    let at = ip.sites[site.index()];
    let r = ip.splits[at.func.index()].return_site[at.index];
    let top = frames.last_mut()?;
    let nvc = ip.psi(at.func, r).apply(top.nvc)?;
    top.node = r;
    frames.push(Frame {
        func: callee,
        node: Cfg::ENTRY,
        nvc,
        site: Some(site),
    });
    Some(())
}

/// The decoder's state: the number left, the stack, the open parentheses.
struct Decoder<'a> {
    ip: &'a Interproc,
    rest: u64,
    frames: Vec<Frame>,
    cnt: u64,
    path: ProfiledPath,
}

const INVALID: GraphError = GraphError::InvalidNumbering {
    reason: "the path number does not decode to a path",
};

impl Interproc {
    /// The observable path numbered `n`.
    pub fn decode(&self, n: u64) -> Result<ProfiledPath, GraphError> {
        let total = self.total();
        if n >= total {
            return Err(GraphError::PathOutOfRange { path: n, total });
        }
        let entries = &self.numbering.entries;
        let first = entries.iter().rposition(|e| e.value <= n).ok_or(INVALID)?;
        let mut d = Decoder {
            ip: self,
            rest: n - entries[first].value,
            frames: Vec::new(),
            cnt: 0,
            path: ProfiledPath {
                steps: Vec::new(),
                active_start: 0,
            },
        };
        d.begin(&entries[first])?;
        // Every step moves forward in an acyclic local graph or through a
        // call or return, which maxEnters bounds; this guards bad numberings.
        let limit: usize = 1 << 26;
        for _ in 0..limit {
            if d.step()? {
                return match d.rest {
                    0 => Ok(d.path),
                    _ => Err(INVALID),
                };
            }
        }
        Err(INVALID)
    }
}

impl Decoder<'_> {
    fn begin(&mut self, e: &GlobalEntry) -> Result<(), GraphError> {
        let (node, nvc) = match e.kind {
            EntryKind::Entry => {
                self.path.steps.push(PathStep::Begin(e.func));
                self.cnt = 1;
                (Cfg::ENTRY, 1)
            }
            EntryKind::GEntry => {
                let pw = self.ip.numbering.piecewise.as_ref().ok_or(INVALID)?;
                let g = self.ip.locals[e.func.index()].gentry.ok_or(INVALID)?;
                (g, pw.unbal_rl_exit[e.func.index()])
            }
        };
        self.frames.push(Frame {
            func: e.func,
            node,
            nvc,
            site: None,
        });
        Ok(())
    }

    /// Takes one edge; `true` once the path has reached `Exit_global`.
    fn step(&mut self) -> Result<bool, GraphError> {
        let top = self.frames.last().ok_or(INVALID)?;
        let (f, v) = (top.func, top.node);
        if v == Cfg::EXIT {
            return self.leave(f);
        }
        if v == self.ip.locals[f.index()].gexit {
            return Ok(true);
        }
        self.intraprocedural(f, v)?;
        Ok(false)
    }

    /// At `Exit_f`: the matching return, or (piecewise, no open
    /// parenthesis) the successor eq. (35) picks.
    fn leave(&mut self, f: FuncId) -> Result<bool, GraphError> {
        let ip = self.ip;
        let frame = self.frames.pop().ok_or(INVALID)?;
        if let Some(s) = frame.site {
            self.path.steps.push(PathStep::Return(s));
            self.cnt = self.cnt.saturating_sub(1);
            return Ok(false);
        }
        let pw = match (ip.mode, &ip.numbering.piecewise) {
            (Mode::Piecewise, Some(pw)) if self.cnt == 0 => pw,
            _ => {
                self.path.steps.push(PathStep::Exit(f));
                return Ok(true);
            }
        };
        // Exit_f's successors in order: uncut sites calling f, Exit_global.
        let calling = ip.callers(f).iter().copied();
        let mut best: Option<(Option<CallSiteId>, u64)> = None;
        let options = calling
            .map(|s| (Some(s), pw.return_value[s.index()]))
            .chain(pw.exit_global_value[f.index()].map(|v| (None, v)));
        for (to, value) in options {
            if value <= self.rest {
                best = Some((to, value));
            }
        }
        let (to, value) = best.ok_or(INVALID)?;
        self.rest -= value;
        match to {
            Some(s) => {
                let at = ip.sites[s.index()];
                self.path.steps.push(PathStep::Return(s));
                self.frames.push(Frame {
                    func: at.func,
                    node: ip.splits[at.func.index()].return_site[at.index],
                    nvc: pw.unbal_rl_exit[at.func.index()],
                    site: None,
                });
                Ok(false)
            }
            None => {
                self.path.steps.push(PathStep::Exit(f));
                Ok(true)
            }
        }
    }

    /// At vertex `v` of `f`: the call of an uncut call vertex, or the
    /// intraprocedural edge with the largest rho not above the rest.
    fn intraprocedural(&mut self, f: FuncId, v: NodeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let (local, split) = (&ip.locals[f.index()], &ip.splits[f.index()]);
        let num = &ip.numbering.functions[f.index()];
        let nvc = self.frames.last().ok_or(INVALID)?.nvc;
        let succs = local.succs(v);
        if let Some(&d) = succs.first() {
            if let LocalEdgeKind::Call(i) = local.edge(d).kind {
                return self.call(f, i);
            }
        }
        let mut best = None;
        for &d in succs {
            let value = num.rho[d.index()].apply(nvc).ok_or(INVALID)?;
            if value <= self.rest {
                best = Some((d, value));
            }
        }
        let (d, value) = best.ok_or(INVALID)?;
        self.rest -= value;
        let edge = *local.edge(d);
        let step = match edge.kind {
            LocalEdgeKind::Intra(e) => split
                .is_original(e)
                .then_some(PathStep::Edge { func: f, edge: e }),
            LocalEdgeKind::Summary(i) => Some(PathStep::Summary(ip.site_id(f, i))),
            LocalEdgeKind::SurrogateEntry => Some(match split.return_of[edge.dst.index()] {
                Some(i) => PathStep::ResumeAfterCall(ip.site_id(f, i)),
                None => PathStep::Resume {
                    func: f,
                    node: split.block_of[edge.dst.index()],
                },
            }),
            LocalEdgeKind::SurrogateExit => Some(PathStep::End {
                func: f,
                node: split.block_of[edge.src.index()],
            }),
            LocalEdgeKind::Call(_) => None,
        };
        self.path.steps.extend(step);
        if edge.kind == LocalEdgeKind::SurrogateEntry && ip.mode == Mode::Context {
            self.path.active_start = self.path.steps.len();
        }
        self.frames.last_mut().ok_or(INVALID)?.node = edge.dst;
        Ok(())
    }

    /// The call edge of local call `i` of `f` (uncut).
    fn call(&mut self, f: FuncId, i: usize) -> Result<(), GraphError> {
        let ip = self.ip;
        let site = ip.site_id(f, i);
        let Callee::Direct(callee) = ip.callees[site.index()] else {
            return Err(INVALID);
        };
        push_call(ip, &mut self.frames, site, callee).ok_or(INVALID)?;
        self.path.steps.push(PathStep::Call { site, callee });
        self.cnt += 1;
        Ok(())
    }
}
