//! An observable path to its number: Algorithm 5.1 (context) and 6.1
//! (piecewise), sections 5.4 and 6.2, on paths in the producer's terms
//! ([`ProfiledPath`], as [`Interproc::decode`] gives them).
//!
//! The running sum starts at the value of the path's `Entry_global` edge;
//! each intraprocedural edge adds rho_e(numValidCompsFromExit); a call
//! pushes nvc and continues with psi_r(nvc); its return pops it;
//! piecewise, a return taken with no open parenthesis adds edgeValue (eq.
//! 35) and continues with numUnbalRLPaths of the caller's exit.
//!
//! Departures from the paper: the links between two calls of one block are
//! implied, as in decoded paths, and taken (with their rho, always 0) where
//! the next step needs them; the last edge `Exit_P -> Exit_global` adds its
//! edgeValue when no parenthesis is open (Algorithm 6.1 stops before it).

use crate::cfg::{Cfg, NodeId};
use crate::error::GraphError;
use crate::interproc::decode::{push_call, Frame, PathStep, ProfiledPath};
use crate::interproc::local::{EdgeRole, LocalEdgeId, LocalEdgeKind};
use crate::interproc::supergraph::{CallSiteId, Callee, FuncId};
use crate::interproc::{Interproc, Mode};

struct Encoder<'a> {
    ip: &'a Interproc,
    sum: u64,
    frames: Vec<Frame>,
    cnt: u64,
    index: usize,
    done: bool,
}

impl Interproc {
    /// The number of observable path `path`.
    pub fn path_number(&self, path: &ProfiledPath) -> Result<u64, GraphError> {
        let mut enc = Encoder {
            ip: self,
            sum: 0,
            frames: Vec::new(),
            cnt: 0,
            index: 0,
            done: false,
        };
        for (index, &step) in path.steps.iter().enumerate() {
            enc.index = index;
            if enc.done {
                return Err(enc.bad("a step after the path's end"));
            }
            match (index, step) {
                (0, PathStep::Begin(f)) => enc.begin(f)?,
                (0, PathStep::Resume { func, node }) => enc.begin_piecewise(func, node)?,
                (0, PathStep::ResumeAfterCall(site)) => {
                    let at = *self
                        .sites
                        .get(site.index())
                        .ok_or(enc.bad("no such call site"))?;
                    let r = self.splits[at.func.index()].return_site[at.index];
                    enc.begin_piecewise(at.func, r)?
                }
                (0, _) => return Err(enc.bad("a path begins at Entry_global")),
                (_, step) => enc.step(step)?,
            }
        }
        match enc.done {
            true => Ok(enc.sum),
            false => Err(enc.bad("the path does not reach Exit_global")),
        }
    }
}

impl Encoder<'_> {
    fn bad(&self, reason: &'static str) -> GraphError {
        GraphError::NotAPath {
            index: self.index,
            reason,
        }
    }

    fn add(&mut self, x: Option<u64>) -> Result<(), GraphError> {
        self.sum = x
            .and_then(|x| self.sum.checked_add(x))
            .ok_or(GraphError::PathCountOverflow { function: None })?;
        Ok(())
    }

    fn top(&mut self) -> Result<&mut Frame, GraphError> {
        let index = self.index;
        self.frames.last_mut().ok_or(GraphError::NotAPath {
            index,
            reason: "no activation",
        })
    }

    fn begin(&mut self, f: FuncId) -> Result<(), GraphError> {
        let entry = self
            .ip
            .global_entry(f)
            .ok_or(self.bad("not an entry function"))?;
        self.sum = entry.value;
        self.cnt = 1;
        self.frames.push(Frame {
            func: f,
            node: Cfg::ENTRY,
            nvc: 1,
            site: None,
        });
        Ok(())
    }

    fn begin_piecewise(&mut self, f: FuncId, v: NodeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let (Some(entry), Some(pw)) = (ip.global_gentry(f), &ip.numbering.piecewise) else {
            return Err(self.bad("a path starts at GEntry only in piecewise profiling"));
        };
        let gentry = ip.locals[f.index()].gentry.ok_or(self.bad("no GEntry"))?;
        self.sum = entry.value;
        self.frames.push(Frame {
            func: f,
            node: gentry,
            nvc: pw.unbal_rl_exit[f.index()],
            site: None,
        });
        self.resume(f, v)
    }

    fn step(&mut self, step: PathStep) -> Result<(), GraphError> {
        let func = self.top()?.func;
        match step {
            PathStep::Begin(_) => Err(self.bad("Entry_global in the middle of a path")),
            PathStep::Resume { func: f, node } if f == func => self.resume(f, node),
            PathStep::ResumeAfterCall(site) => {
                let at = *self
                    .ip
                    .sites
                    .get(site.index())
                    .ok_or(self.bad("no such call site"))?;
                if at.func != func {
                    return Err(self.bad("a step in another function than control is in"));
                }
                self.resume(func, self.ip.splits[func.index()].return_site[at.index])
            }
            PathStep::Edge { func: f, edge } if f == func => {
                let split = &self.ip.splits[f.index()];
                if !split.is_original(edge) {
                    return Err(self.bad("not an edge of the function's CFG"));
                }
                self.advance_to(split.cfg.src(edge))?;
                match self.ip.locals[f.index()].roles.get(edge.index()) {
                    Some(&EdgeRole::Kept(d)) => self.take(d),
                    _ => Err(self.bad("a backedge or unreachable edge inside a path")),
                }
            }
            PathStep::Call { site, callee } => self.call(site, callee),
            PathStep::Summary(site) => self.summary(site),
            PathStep::Return(site) => self.ret(site),
            PathStep::End { func: f, node } if f == func => {
                self.advance_to(self.ip.splits[f.index()].last[node.index()])?;
                let at = self.top()?.node;
                let exit = self.ip.locals[f.index()].exit_of[at.index()];
                self.take(exit.ok_or(self.bad("no path ends at this block"))?)?;
                self.done = true;
                Ok(())
            }
            PathStep::Exit(f) if f == func => self.exit(f),
            _ => Err(self.bad("a step in another function than control is in")),
        }
    }

    /// Along the surrogate entry edge into `v`.
    fn resume(&mut self, f: FuncId, v: NodeId) -> Result<(), GraphError> {
        let local = &self.ip.locals[f.index()];
        let d = local.entry_of.get(v.index()).copied().flatten();
        let d = d.ok_or(self.bad("no surrogate entry edge into this block"))?;
        if local.edge(d).src != self.top()?.node {
            return Err(self.bad("a surrogate entry edge not at the function's entry"));
        }
        self.take(d)
    }

    /// Takes local edge `d` from where control is: `sum += rho_d(nvc)`.
    fn take(&mut self, d: LocalEdgeId) -> Result<(), GraphError> {
        let ip = self.ip;
        let top = self.top()?;
        let edge = *ip.locals[top.func.index()].edge(d);
        if edge.src != top.node {
            return Err(self.bad("the edge does not leave where control is"));
        }
        let rho = ip.numbering.functions[top.func.index()].rho[d.index()].apply(top.nvc);
        top.node = edge.dst;
        self.add(rho)
    }

    /// On along the implied links between a block's calls until `target`.
    fn advance_to(&mut self, target: NodeId) -> Result<(), GraphError> {
        loop {
            let top = self.top()?;
            if top.node == target {
                return Ok(());
            }
            let (f, v) = (top.func, top.node);
            let split = &self.ip.splits[f.index()];
            let local = &self.ip.locals[f.index()];
            // The links out of `v`: one, or one per case of the call it
            // branches to.
            let links: Vec<_> = local
                .succs(v)
                .iter()
                .copied()
                .filter(|&d| matches!(local.edge(d).kind, LocalEdgeKind::Intra(e) if !split.is_original(e)))
                .collect();
            let link = match links[..] {
                [d] => d,
                _ => *links
                    .iter()
                    .find(|&&d| local.edge(d).dst == target)
                    .ok_or(self.bad("the step does not follow where control is"))?,
            };
            self.take(link)?;
        }
    }

    fn call(&mut self, site: CallSiteId, callee: FuncId) -> Result<(), GraphError> {
        let ip = self.ip;
        let at = *ip
            .sites
            .get(site.index())
            .ok_or(self.bad("no such call site"))?;
        if ip.is_cut(site) || ip.callees[site.index()] != Callee::Direct(callee) {
            return Err(self.bad("a call edge only at an uncut site, to its callee"));
        }
        let split = &ip.splits[at.func.index()];
        self.advance_to(split.call_vertex[at.index])?;
        push_call(ip, &mut self.frames, site, callee)
            .ok_or(GraphError::PathCountOverflow { function: None })?;
        self.cnt += 1;
        Ok(())
    }

    fn summary(&mut self, site: CallSiteId) -> Result<(), GraphError> {
        let ip = self.ip;
        let at = *ip
            .sites
            .get(site.index())
            .ok_or(self.bad("no such call site"))?;
        let split = &ip.splits[at.func.index()];
        self.advance_to(split.call_vertex[at.index])?;
        match ip.locals[at.func.index()].roles[split.call_edge[at.index].index()] {
            EdgeRole::Kept(d) if ip.is_cut(site) => self.take(d),
            _ => Err(self.bad("a summary edge only at a cut call site")),
        }
    }

    fn ret(&mut self, site: CallSiteId) -> Result<(), GraphError> {
        let ip = self.ip;
        let top = self.top()?;
        if top.node != Cfg::EXIT {
            return Err(self.bad("a return not from EXIT"));
        }
        let (f, entered) = (top.func, top.site);
        if entered == Some(site) {
            self.frames.pop();
            self.cnt -= 1;
            return Ok(());
        }
        let pw = match (&ip.numbering.piecewise, entered, self.cnt) {
            (Some(pw), None, 0) if ip.callers(f).contains(&site) => pw,
            _ => return Err(self.bad("a return that does not match the open call")),
        };
        self.add(Some(pw.return_value[site.index()]))?;
        let at = ip.sites[site.index()];
        let frame = self.top()?;
        *frame = Frame {
            func: at.func,
            node: ip.splits[at.func.index()].return_site[at.index],
            nvc: pw.unbal_rl_exit[at.func.index()],
            site: None,
        };
        Ok(())
    }

    fn exit(&mut self, f: FuncId) -> Result<(), GraphError> {
        let ip = self.ip;
        let top = self.top()?;
        if top.node != Cfg::EXIT || top.site.is_some() {
            return Err(self.bad("Exit_global only from an open entry function's EXIT"));
        }
        if let (Mode::Piecewise, Some(pw), 0) = (ip.mode, &ip.numbering.piecewise, self.cnt) {
            let value = pw.exit_global_value[f.index()];
            self.add(Some(value.ok_or(self.bad("not an entry function"))?))?;
        }
        self.done = true;
        Ok(())
    }
}
