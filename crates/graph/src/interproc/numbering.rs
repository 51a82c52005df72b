//! Numbering with linear edge functions (sections 4, 5.2, 5.3, 6.1).
//!
//! Terms:
//! - *numValidComps(p)*: the number of completions of a path prefix `p`
//!   into an observable path (an unbalanced-left path for context
//!   profiling, unbalanced-right-left for piecewise).
//! - *psi_v* `<a, b>` = `λx. a·x + b`: given numValidComps from `Exit_P`, the
//!   number from `v` (eqs. 19-22): `psi_Exit = id`, `psi_GExit = λx.1`,
//!   `psi_c = psi_Entry_Q o psi_r` at an uncut call vertex, otherwise the sum
//!   over the successors.
//! - *rho_e*: the value of intraprocedural edge `e` given numValidComps from
//!   `Exit_P`: the sum of psi of the earlier successors (eq. 24).
//! - *Entry_global edges* (eq. 27): the `i`-th has the value
//!   `sum_{j<i} numValidComps(Entry_global -> target_j)`.
//! - *`numUnbalRLPaths[Exit_P]`* (piecewise, eqs. 33-34), and
//!   *edgeValue[Exit_P -> r_i]* (eq. 35), the value of a return edge taken
//!   with no open left parenthesis.
//!
//! Functions are visited callees first, each one's vertices in reverse
//! topological order (a return site after its call vertex). Arithmetic is
//! checked in `u64`: a value that does not fit is refused with
//! [`GraphError::PathCountOverflow`], never wrapped. Since every run-time
//! value (a path number, numValidCompsFromExit) is at most the total, a
//! total that fits means the run time never overflows.
//!
//! Departures from the paper:
//! - Piecewise: `Exit_P`'s successors are ordered the return sites of its
//!   uncut call sites by call-site id, then `Exit_global` if `P` is an entry
//!   function; the value of `Exit_P -> Exit_global` taken with no open
//!   parenthesis is kept too (Algorithm 6.1 stops before a path's last edge,
//!   whose value is not always 0).
//! - Piecewise: the `Entry_global` edges are those to the entry functions'
//!   `Entry_P` in [`CallGraph::entries`] order, then to every function's
//!   `GEntry_P` by id (the order of the paper's example, 21 paths).

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, NodeId};
use crate::error::GraphError;
use crate::interproc::callgraph::CallGraph;
use crate::interproc::local::{Local, LocalEdgeKind};
use crate::interproc::supergraph::{Callee, FuncId, Split, Supergraph};

/// The linear function `λx. a·x + b`, written `<a, b>` in the paper.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Linear {
    pub a: u64,
    pub b: u64,
}

impl Linear {
    pub const ZERO: Linear = Linear { a: 0, b: 0 };
    /// `id`: psi of `Exit_P`.
    pub const ID: Linear = Linear { a: 1, b: 0 };
    /// `λx.1`: psi of `GExit_P`.
    pub const ONE: Linear = Linear { a: 0, b: 1 };

    pub fn new(a: u64, b: u64) -> Linear {
        Linear { a, b }
    }

    /// `a·x + b`, `None` on overflow.
    pub fn apply(self, x: u64) -> Option<u64> {
        self.a.checked_mul(x)?.checked_add(self.b)
    }

    /// `self o inner`: `<a, b> o <c, d> = <a·c, a·d + b>`.
    pub fn compose(self, inner: Linear) -> Option<Linear> {
        Some(Linear {
            a: self.a.checked_mul(inner.a)?,
            b: self.a.checked_mul(inner.b)?.checked_add(self.b)?,
        })
    }

    /// `<a + c, b + d>`.
    pub fn checked_add(self, other: Linear) -> Option<Linear> {
        Some(Linear {
            a: self.a.checked_add(other.a)?,
            b: self.b.checked_add(other.b)?,
        })
    }

    /// [`Linear::compose`], saturating: for estimates only.
    fn saturating_compose(self, inner: Linear) -> Linear {
        Linear {
            a: self.a.saturating_mul(inner.a),
            b: self.a.saturating_mul(inner.b).saturating_add(self.b),
        }
    }

    /// [`Linear::checked_add`], saturating: for estimates only.
    fn saturating_add(self, other: Linear) -> Linear {
        Linear {
            a: self.a.saturating_add(other.a),
            b: self.b.saturating_add(other.b),
        }
    }
}

/// Exact (checked) arithmetic, or saturating for the estimates of
/// [`crate::interproc::hybrid`].
#[derive(Copy, Clone, PartialEq, Eq)]
enum Arith {
    Checked,
    Saturating,
}

impl Arith {
    fn compose(self, f: Linear, g: Linear) -> Option<Linear> {
        match self {
            Arith::Checked => f.compose(g),
            Arith::Saturating => Some(f.saturating_compose(g)),
        }
    }
    fn add(self, f: Linear, g: Linear) -> Option<Linear> {
        match self {
            Arith::Checked => f.checked_add(g),
            Arith::Saturating => Some(f.saturating_add(g)),
        }
    }
}

impl std::fmt::Display for Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{}, {}>", self.a, self.b)
    }
}

/// psi per local node and rho per local edge of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionNumbering {
    pub psi: Vec<Linear>,
    /// `ZERO` on `Call` edges, which have no rho.
    pub rho: Vec<Linear>,
}

/// Which vertex of a function an `Entry_global` edge enters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntryKind {
    /// `Entry_global -> Entry_P`, labelled `(P`.
    Entry,
    /// `Entry_global -> GEntry_P` (piecewise, T0).
    GEntry,
}

/// An edge out of `Entry_global`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GlobalEntry {
    pub func: FuncId,
    pub kind: EntryKind,
    /// edgeValueInContext([ε : Entry_global], this edge), eq. (27).
    pub value: u64,
    /// numValidComps(Entry_global -> target): its paths.
    pub paths: u64,
}

/// The values only piecewise profiling needs (section 6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiecewiseValues {
    /// `numUnbalRLPaths[Exit_P]`, per function.
    pub unbal_rl_exit: Vec<u64>,
    /// Per call site: edgeValue[Exit_Q -> r] (eq. 35) for an uncut site,
    /// 0 for a cut one.
    pub return_value: Vec<u64>,
    /// Per function: edgeValue[Exit_P -> Exit_global], if it is an entry.
    pub exit_global_value: Vec<Option<u64>>,
}

/// The whole numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbering {
    pub functions: Vec<FunctionNumbering>,
    /// The `Entry_global` edges in order.
    pub entries: Vec<GlobalEntry>,
    /// numValidComps([ε : Entry_global]): the number of observable paths.
    pub total: u64,
    pub piecewise: Option<PiecewiseValues>,
}

fn overflow(f: FuncId) -> GraphError {
    GraphError::PathCountOverflow {
        function: Some(f.index()),
    }
}

/// Numbers the G*_fn of `locals` (one per function, built with the cuts of
/// `cg`).
pub fn number(
    sg: &Supergraph,
    cg: &CallGraph,
    splits: &[Split],
    locals: &[std::sync::Arc<Local>],
) -> Result<Numbering, GraphError> {
    let functions = psi_rho(sg, cg, splits, locals, Arith::Checked)?;
    let piecewise = locals
        .iter()
        .any(|l| l.gentry.is_some())
        .then(|| piecewise_values(sg, cg, splits, &functions))
        .transpose()?;
    let (entries, total) = global_entries(cg, locals, &functions, piecewise.as_ref())?;
    Ok(Numbering {
        functions,
        entries,
        total,
        piecewise,
    })
}

/// psi with saturating arithmetic: an estimate of each vertex's paths
/// that never fails, for choosing call sites to cut.
pub(crate) fn estimate_psi(
    sg: &Supergraph,
    cg: &CallGraph,
    splits: &[Split],
    locals: &[std::sync::Arc<Local>],
) -> Vec<FunctionNumbering> {
    psi_rho(sg, cg, splits, locals, Arith::Saturating).unwrap_or_default()
}

/// psi and rho of every function, callees first.
fn psi_rho(
    sg: &Supergraph,
    cg: &CallGraph,
    splits: &[Split],
    locals: &[std::sync::Arc<Local>],
    arith: Arith,
) -> Result<Vec<FunctionNumbering>, GraphError> {
    let mut functions: Vec<Option<FunctionNumbering>> = vec![None; sg.functions.len()];
    for &f in cg.callers_first.iter().rev() {
        let entry_psi = |q: FuncId| functions[q.index()].as_ref().map(|g| g.psi[0]);
        let (split, local) = (&splits[f.index()], &locals[f.index()]);
        let num = number_function(sg, f, split, local, &entry_psi, arith)?;
        functions[f.index()] = Some(num);
    }
    Ok(functions
        .into_iter()
        .map(|f| f.expect("callers_first lists every function"))
        .collect())
}

/// psi and rho of one function, its callees done.
fn number_function(
    sg: &Supergraph,
    f: FuncId,
    split: &Split,
    local: &Local,
    entry_psi: &dyn Fn(FuncId) -> Option<Linear>,
    arith: Arith,
) -> Result<FunctionNumbering, GraphError> {
    let mut psi = vec![Linear::ZERO; local.num_nodes];
    let mut rho = vec![Linear::ZERO; local.edges.len()];
    for v in local.topological_order().into_iter().rev() {
        psi[v.index()] = if v == Cfg::EXIT {
            Linear::ID
        } else if v == local.gexit {
            Linear::ONE
        } else if !local.reachable[v.index()] {
            Linear::ZERO
        } else {
            let step = VertexStep {
                sg,
                f,
                split,
                local,
                entry_psi,
                arith,
            };
            step.psi(v, &psi, &mut rho)?
        };
    }
    Ok(FunctionNumbering { psi, rho })
}

/// What a vertex's step of [`number_function`] reads.
struct VertexStep<'a> {
    sg: &'a Supergraph,
    f: FuncId,
    split: &'a Split,
    local: &'a Local,
    entry_psi: &'a dyn Fn(FuncId) -> Option<Linear>,
    arith: Arith,
}

impl VertexStep<'_> {
    /// Eq. (21) at an uncut call vertex, else eqs. (22) and (24).
    fn psi(&self, v: NodeId, psi: &[Linear], rho: &mut [Linear]) -> Result<Linear, GraphError> {
        let (local, f) = (self.local, self.f);
        let succs = local.succs(v);
        if let Some(&e) = succs.first() {
            if let LocalEdgeKind::Call(i) = local.edge(e).kind {
                let Callee::Direct(q) = self.sg.functions[f.index()].calls[i].callee else {
                    unreachable!("indirect call sites are always cut")
                };
                let r = self.split.return_site[i];
                let entry = (self.entry_psi)(q).expect("callees are numbered before callers");
                return self.arith.compose(entry, psi[r.index()]).ok_or(overflow(f));
            }
        }
        let mut sum = Linear::ZERO;
        for &e in succs {
            rho[e.index()] = sum;
            let next = psi[local.edge(e).dst.index()];
            sum = self.arith.add(sum, next).ok_or(overflow(f))?;
        }
        Ok(sum)
    }
}

/// numUnbalRLPaths[Exit_P] (eqs. 33-34), callers first, and the values of
/// the edges out of each `Exit_P` (eq. 35).
fn piecewise_values(
    sg: &Supergraph,
    cg: &CallGraph,
    splits: &[Split],
    functions: &[FunctionNumbering],
) -> Result<PiecewiseValues, GraphError> {
    let n = sg.functions.len();
    let starts = sg.site_starts();
    let mut unbal = vec![0u64; n];
    for f in &cg.entries {
        unbal[f.index()] = 1;
    }
    // numUnbalRLPaths[r] of each uncut site's return site.
    let mut at_return = vec![0u64; *starts.last().unwrap_or(&0)];
    for &s in &cg.callers_first {
        for (i, call) in sg.functions[s.index()].calls.iter().enumerate() {
            let site = starts[s.index()] + i;
            let (Callee::Direct(q), false) = (&call.callee, cg.cut[site]) else {
                continue;
            };
            let r = splits[s.index()].return_site[i];
            let psi_r = functions[s.index()].psi[r.index()];
            at_return[site] = psi_r.apply(unbal[s.index()]).ok_or(overflow(s))?;
            unbal[q.index()] = unbal[q.index()]
                .checked_add(at_return[site])
                .ok_or(overflow(*q))?;
        }
    }
    // Eq. (35): running sums over each Exit_P's successors in order.
    let mut running = vec![0u64; n];
    let mut return_value = vec![0u64; at_return.len()];
    for (f, func) in sg.functions.iter().enumerate() {
        for (i, call) in func.calls.iter().enumerate() {
            let site = starts[f] + i;
            if let (Callee::Direct(q), false) = (&call.callee, cg.cut[site]) {
                return_value[site] = running[q.index()];
                running[q.index()] += at_return[site]; // at most unbal[q]
            }
        }
    }
    let mut exit_global_value = vec![None; n];
    for f in &cg.entries {
        exit_global_value[f.index()] = Some(running[f.index()]);
    }
    Ok(PiecewiseValues {
        unbal_rl_exit: unbal,
        return_value,
        exit_global_value,
    })
}

/// The `Entry_global` edges with their values (eq. 27), and the total.
fn global_entries(
    cg: &CallGraph,
    locals: &[std::sync::Arc<Local>],
    functions: &[FunctionNumbering],
    piecewise: Option<&PiecewiseValues>,
) -> Result<(Vec<GlobalEntry>, u64), GraphError> {
    let mut targets: Vec<(FuncId, EntryKind, u64)> = Vec::new();
    for &f in &cg.entries {
        let paths = functions[f.index()].psi[Cfg::ENTRY.index()].apply(1);
        targets.push((f, EntryKind::Entry, paths.ok_or(overflow(f))?));
    }
    if let Some(pw) = piecewise {
        for (f, local) in locals.iter().enumerate() {
            let g = local.gentry.expect("piecewise locals have GEntry");
            let psi_g = functions[f].psi[g.index()];
            let paths = psi_g.apply(pw.unbal_rl_exit[f]);
            let f = FuncId::new(f);
            targets.push((f, EntryKind::GEntry, paths.ok_or(overflow(f))?));
        }
    }
    let mut total = 0u64;
    let mut entries = Vec::with_capacity(targets.len());
    for (func, kind, paths) in targets {
        entries.push(GlobalEntry {
            func,
            kind,
            value: total,
            paths,
        });
        total = total
            .checked_add(paths)
            .ok_or(GraphError::PathCountOverflow { function: None })?;
    }
    Ok((entries, total))
}
