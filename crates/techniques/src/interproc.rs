//! Interprocedural path profiling (D. Melski and T. Reps, "Interprocedural
//! Path Profiling", UW-Madison TR 1382, 1998): the run-time instrumentation
//! of sections 5.5 (context paths) and 6.3 (piecewise paths) as plans, one
//! per function, from a numbered supergraph ([`pathprof_graph::interproc`]).
//! The reference walk [`Interproc::walk`] executes the same rules; this
//! module says where each rule's code goes.
//!
//! State, and where the instrumented program keeps it (no signature
//! changes: imports, exports, tables and `call_indirect` keep working):
//! - `pathNum` in register [`PATH`] of each activation; handed to an uncut
//!   callee and back through module register [`G_PATH`] (the paper passes
//!   it by reference);
//! - `numValidCompsFromExit` in register [`NVC`], passed to an uncut callee
//!   through [`G_NVC`] (the paper passes it by value);
//! - `pathNumOnEntry` in register [`ON_ENTRY`] (context);
//! - `cntOpenLfParens` in module register [`G_CNT`] (piecewise), saved in
//!   [`SAVED_CNT`] by an activation entered afresh;
//! - whether an activation was entered through an uncut call site, in
//!   [`UNCUT`]: the caller sets [`G_UNCUT`] right before the call and the
//!   callee clears it. Only functions entered both ways read it;
//! - whether the activation an uncut call site entered ended in a tail
//!   call, in module register [`G_TAILED`] (section 9's tail calls, below),
//!   saved around the call in [`TAILED`].
//!
//! Where the rules run:
//! - entry (`entry` actions): through an uncut site, take `pathNum` and
//!   nvc; afresh (a cut site, `call_indirect`, the host), start along
//!   `Entry_global -> Entry_P` with nvc 1 (and, piecewise, one open
//!   parenthesis, the caller's count saved);
//! - a kept edge: `pathNum += a * nvc + b`, its rho;
//! - a backedge: count `pathNum + rho(w -> GExit)`, restart along the
//!   surrogate entry edge (context: from `pathNumOnEntry`; piecewise: from
//!   `Entry_global -> GEntry_P`, no parenthesis open);
//! - an uncut call: `pathNum` and `psi_r(nvc)` out, `pathNum` back in after
//!   (piecewise: one more parenthesis; on return, with none open, the
//!   return edge's value and the caller's nvc `numUnbalRLPaths[Exit_S]`);
//! - a cut call: nothing before (the callee starts afresh and keeps its own
//!   registers), the summary edge's rho after;
//! - the cases of a `call_indirect` ([`pathprof_graph::interproc::Function::cases`]):
//!   the table index the call uses is captured in [`INDEX`]; before the
//!   call and again after it, the case whose slots hold it runs the link
//!   into its call vertex and its own call's actions (the last, cut case,
//!   of imports or of functions a prior run did not run, when none does);
//! - exit: through an uncut site, `pathNum` back to the caller; afresh,
//!   count the path (piecewise: plus `Exit_P -> Exit_global`'s value with no
//!   parenthesis open) and restore the caller's parenthesis count;
//! - a tail call into a profiled function (instead of the exit actions):
//!   count `pathNum + rho(u -> GExit)` at the tail-calling vertex `u`; the
//!   callee is entered afresh (it is an entry function). Entered through an
//!   uncut site, set [`G_TAILED`]: the call site reads it when control comes
//!   back and restarts along its return site's surrogate entry instead of
//!   taking `pathNum` back. Entered afresh, leave [`G_TAILED`] alone (the
//!   callee inherits what the activation would have returned to) and,
//!   piecewise, restore the caller's parenthesis count first, so the callee
//!   saves that one;
//! - an uncut call to a function that may tail-call: clear [`G_TAILED`]
//!   before (keeping its value in [`TAILED`]: this activation may itself be
//!   in a tail-call chain that has not returned yet) and restore it after;
//! - a `throw`/`throw_ref` (9.2.2): the path ends at the throwing vertex
//!   `u` along `u -> GExit`; its number plus one goes to module register
//!   [`G_THROWN`] (zero: nothing thrown);
//! - a catch edge into handler `h`: count what [`G_THROWN`] holds and clear
//!   it, then start a path along the surrogate `Entry_P -> h` (as after a
//!   backedge). [`G_TAILED`] gets back the value it had when the catching
//!   activation was entered, kept in [`TAILED_AT_ENTRY`]: the exception may
//!   have left a tail-call chain that was under way in a callee;
//! - a call that may enter opaque code: [`G_TAILED`] (and piecewise
//!   [`G_CNT`]) saved before it and restored after it, [`G_THROWN`]
//!   cleared after it (and at every fresh entry): a callback may have
//!   thrown out of activations whose exits never ran, to the import that
//!   called it (docs/decisions.md#import-catches).
//!
//! Departures from the paper (beyond those of the walk):
//! - The paper's callee reads how it was entered from its parameters; a
//!   wasm function cannot have two entries, so a function entered both
//!   through uncut sites and afresh tests a flag at entry and exit
//!   (docs/decisions.md#interproc-state).
//! - Paths are counted in the table of the function where they end; the
//!   collector adds the tables up (a path number is module-wide).
//! - The thrown path is counted where it is caught, not at the throw (the
//!   paper's Fig. 8 place): the walk counts it only when a profiled
//!   function catches it, and an exception that ends the run is like a
//!   trap, whose path in flight is not counted.
//! - A tail call through a static table that holds opaque functions as
//!   well as profiled ones of its type: the table index is captured, and
//!   the tail-call actions run only for a profiled function's slot; for
//!   another, the callee returns for this function, so the actions of the
//!   edge to EXIT and the exit actions run instead.
//! - A catch clause into the function's own label: the handler is EXIT,
//!   where the new path starts along the surrogate `Entry_P -> EXIT`; the
//!   exit actions follow the catch edge's, as on any edge into EXIT.
//! - Not instrumented ([`Unsupported`], refused by the caller of this
//!   module, which sees the wasm): a tail call that may enter an opaque
//!   function as well as a profiled one through a table that may be
//!   written, or by `return_call_ref` (which one, only the run knows).

use pathprof_graph::interproc::numbering::PiecewiseValues;
use pathprof_graph::interproc::{
    Callee, EdgeRole, FuncId, Interproc, Linear, LocalEdgeId, Mode, TailCall,
};
use pathprof_graph::EdgeId;

use crate::plan::{
    if_slot, Action, CallActions, EdgeActions, FunctionPlan, GlobalReg, IfNonZero,
    Interproc as Actions, ModulePlan, MulAdd, PathTable, Reg, Width,
};

/// Registers of every plan (all i64).
pub const PATH: Reg = 0;
pub const NVC: Reg = 1;
pub const ON_ENTRY: Reg = 2;
pub const SAVED_CNT: Reg = 3;
pub const TMP: Reg = 4;
pub const UNCUT: Reg = 5;
pub const TAILED: Reg = 6;
pub const TAILED_AT_ENTRY: Reg = 7;
const REGISTERS: usize = 8;
/// The i32 registers of a function that tells a call's cases apart: the
/// table index the `call_indirect` uses, and a scratch.
pub const INDEX: Reg = 8;
pub const INDEX_SCRATCH: Reg = 9;

/// Module registers.
pub const G_PATH: GlobalReg = 0;
pub const G_NVC: GlobalReg = 1;
pub const G_CNT: GlobalReg = 2;
pub const G_UNCUT: GlobalReg = 3;
pub const G_TAILED: GlobalReg = 4;
pub const G_THROWN: GlobalReg = 5;

/// The module registers every plan uses.
pub fn module_plan() -> ModulePlan {
    ModulePlan {
        globals: vec![Width::I64; 6],
        stack_bytes: 0,
    }
}

/// What a module has that the instrumentation does not handle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("function {function} ({name}): the tail call at 0x{offset:x} may enter a profiled function or an imported or unmodelled one, which interprocedural modes cannot tell apart before the call (its table may be written at run time, or it is a return_call_ref)")]
    MixedTailCall {
        function: u32,
        name: String,
        offset: u32,
    },
}

/// Where a function's calls and exception edges are in the wasm function
/// (the supergraph does not say which edges throw or catch).
#[derive(Clone, Copy, Debug)]
pub struct WasmSites<'a> {
    /// Per supergraph call: its index among the wasm function's call sites.
    pub calls: &'a [u32],
    /// Per supergraph tail call: likewise.
    pub tails: &'a [u32],
    /// Original edges that `throw`/`throw_ref` to EXIT.
    pub throws: &'a [EdgeId],
    /// Original edges ENTRY -> handler of catch clauses (not into EXIT).
    pub catches: &'a [EdgeId],
    /// Per supergraph call: the slots of the table that select it, for a
    /// case of a `call_indirect` ([`pathprof_graph::interproc::Function::cases`]);
    /// empty for other calls (and for the last, cut case, taken when no
    /// other case's slot matches). Empty if the function has no cases.
    pub case_slots: &'a [Vec<u32>],
    /// Per supergraph tail call: for one whose table holds both profiled
    /// and opaque functions, the slots of the profiled ones (an opaque
    /// callee returns for the caller); `None` for the others.
    pub tail_slots: &'a [Option<Vec<u32>>],
    /// The wasm call sites (not tail calls) that may enter opaque code,
    /// in order.
    pub opaque: &'a [u32],
}

/// How a function may be entered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Entry {
    Uncut,
    Fresh,
    Both,
}

fn entry_kind(ip: &Interproc, f: FuncId) -> Option<Entry> {
    let uncut = !ip.callers(f).is_empty();
    let fresh = ip.global_entry(f).is_some();
    match (uncut, fresh) {
        (true, true) => Some(Entry::Both),
        (true, false) => Some(Entry::Uncut),
        (false, true) => Some(Entry::Fresh),
        (false, false) => None,
    }
}

/// The plan of supergraph function `f` (`None`: never entered, left
/// alone), whose calls and exception edges are `sites`; `table` is where
/// its paths are counted if any end in it.
pub fn plan(
    ip: &Interproc,
    f: FuncId,
    sites: &WasmSites<'_>,
    table: PathTable,
) -> Option<FunctionPlan> {
    let entry = entry_kind(ip, f)?;
    let p = Planner {
        ip,
        f,
        entry,
        sites: *sites,
    };
    let tails = &ip.tail_calls[f.index()];
    let mut counts = entry != Entry::Uncut || !tails.is_empty();
    let split = &ip.splits[f.index()];
    let edges = EdgeActions::from_fn(split.original_edges, |e, out| {
        counts |= p.edge(EdgeId::new(e), out);
    });
    let num_calls = split.call_vertex.len();
    let mut calls: Vec<CallActions> = Vec::with_capacity(num_calls + tails.len());
    let mut k = 0;
    while k < num_calls {
        let end = (k + 1..num_calls)
            .find(|&j| split.first_case[j] != k)
            .unwrap_or(num_calls);
        calls.push(match end - k {
            1 => p.call(k, sites.calls[k]),
            _ => p.cases(k..end, sites.calls[k]),
        });
        k = end;
    }
    let tail_slots = |i: usize| sites.tail_slots.get(i).and_then(Option::as_deref);
    calls.extend(
        (tails.iter().zip(sites.tails).enumerate())
            .map(|(i, (t, &site))| p.tail_call(t, site, tail_slots(i))),
    );
    calls.sort_by_key(|c| c.site);
    let mut registers = vec![Width::I64; REGISTERS];
    let cased = split
        .first_case
        .iter()
        .enumerate()
        .any(|(k, &first)| first != k);
    if cased || (0..tails.len()).any(|i| tail_slots(i).is_some_and(|s| !s.is_empty())) {
        registers.extend([Width::I32; 2]);
    }
    if !sites.opaque.is_empty() {
        let saved = registers.len() as Reg;
        registers.extend([Width::I64; 2]);
        around_opaque_calls(&mut calls, sites.opaque, saved, p.piecewise());
    }
    Some(FunctionPlan {
        registers,
        paths: if counts { table } else { PathTable::None },
        slots: 0,
        ppp: None,
        edges,
        interproc: Some(Box::new(Actions {
            entry: p.entry(),
            exit: p.exit(),
            calls,
        })),
    })
}

struct Planner<'a> {
    ip: &'a Interproc,
    f: FuncId,
    entry: Entry,
    sites: WasmSites<'a>,
}

/// `reg += rho(src)`, nothing for a zero function.
fn apply(out: &mut Vec<Action>, reg: Reg, rho: Linear, src: Reg) {
    match (rho.a, rho.b) {
        (0, 0) => {}
        (0, b) => out.push(Action::Add {
            reg,
            value: b as i64,
        }),
        (a, b) => out.push(Action::MulAdd(Box::new(MulAdd {
            reg,
            a: a as i64,
            src,
            b: b as i64,
        }))),
    }
}

/// `dst = src`.
fn copy(out: &mut Vec<Action>, dst: Reg, src: Reg) {
    out.push(Action::Set { reg: dst, value: 0 });
    apply(out, dst, Linear::ID, src);
}

/// At each call of `opaque` (wasm call sites, in order), what undoes an
/// exception an import caught (docs/decisions.md#import-catches): code the
/// import called back may have thrown out of activations whose exit
/// actions never ran, so the module registers they change (`G_TAILED`,
/// piecewise `G_CNT`) come back as they were before the call, and a thrown
/// path no profiled function caught is dropped (`G_THROWN` cleared). After
/// a call that returns normally these are the values they have anyway.
/// `saved` and `saved + 1` are the registers that keep them.
fn around_opaque_calls(calls: &mut Vec<CallActions>, opaque: &[u32], saved: Reg, piecewise: bool) {
    let mut kept = vec![(G_TAILED, saved)];
    if piecewise {
        kept.push((G_CNT, saved + 1));
    }
    let save: Vec<Action> = (kept.iter())
        .map(|&(global, reg)| Action::GlobalToLocal { reg, global })
        .collect();
    let mut restore: Vec<Action> = (kept.iter())
        .map(|&(global, reg)| Action::LocalToGlobal { global, reg })
        .collect();
    set_global(&mut restore, G_THROWN, 0);
    crate::plan::around_calls(calls, opaque, &save, &restore);
}

/// `global = value`.
fn set_global(out: &mut Vec<Action>, global: GlobalReg, value: i64) {
    out.push(Action::Set { reg: TMP, value });
    out.push(Action::LocalToGlobal { global, reg: TMP });
}

fn if_nonzero(reg: Reg, then: Vec<Action>, otherwise: Vec<Action>) -> Action {
    Action::IfNonZero(Box::new(IfNonZero {
        reg,
        then,
        otherwise,
    }))
}

impl Planner<'_> {
    fn piecewise(&self) -> bool {
        self.ip.mode == Mode::Piecewise
    }

    fn piecewise_values(&self) -> &PiecewiseValues {
        let pw = self.ip.numbering.piecewise.as_ref();
        pw.expect("a piecewise numbering has its values")
    }

    fn rho(&self, d: LocalEdgeId) -> Linear {
        self.ip.numbering.functions[self.f.index()].rho[d.index()]
    }

    /// The actions of original edge `e`; whether a path is counted there.
    fn edge(&self, e: EdgeId, out: &mut Vec<Action>) -> bool {
        if self.is_tail_edge(e) {
            return false; // the tail call's actions end the path instead
        }
        if self.sites.throws.contains(&e) {
            self.throw(e, out);
            return false;
        }
        if self.sites.catches.contains(&e) {
            self.catch(e, out);
            return true;
        }
        match self.ip.locals[self.f.index()].roles[e.index()] {
            EdgeRole::Kept(d) => {
                apply(out, PATH, self.rho(d), NVC);
                false
            }
            EdgeRole::Back { exit, entry } => {
                apply(out, PATH, self.rho(exit), NVC);
                out.push(Action::CountPath {
                    reg: PATH,
                    offset: 0,
                });
                self.restart(entry, out);
                true
            }
            EdgeRole::Unreachable => false,
        }
    }

    /// Throw edge `e`: `pathNum + rho(u -> GExit) + 1` to [`G_THROWN`].
    fn throw(&self, e: EdgeId, out: &mut Vec<Action>) {
        let u = self.ip.splits[self.f.index()].cfg.src(e);
        // No surrogate exit: ENTRY does not reach the block.
        if let Some(exit) = self.ip.locals[self.f.index()].exit_of[u.index()] {
            apply(out, PATH, self.rho(exit), NVC);
            out.push(Action::Add {
                reg: PATH,
                value: 1,
            });
            out.push(Action::LocalToGlobal {
                global: G_THROWN,
                reg: PATH,
            });
        }
    }

    /// Catch edge `e` into handler `h`: count the thrown path, restart at
    /// `h`.
    fn catch(&self, e: EdgeId, out: &mut Vec<Action>) {
        let h = self.ip.splits[self.f.index()].cfg.dst(e);
        out.push(Action::GlobalToLocal {
            reg: TMP,
            global: G_THROWN,
        });
        let mut count = vec![Action::CountPath {
            reg: TMP,
            offset: -1,
        }];
        set_global(&mut count, G_THROWN, 0);
        out.push(if_nonzero(TMP, count, vec![]));
        out.push(Action::LocalToGlobal {
            global: G_TAILED,
            reg: TAILED_AT_ENTRY,
        });
        if let Some(entry) = self.ip.locals[self.f.index()].entry_of[h.index()] {
            self.restart(entry, out);
        }
    }

    /// Whether `e` is the edge to EXIT of a block ending in a tail call into
    /// a profiled function (the walk never takes it: the path ends along
    /// the tail-calling vertex's surrogate exit).
    fn is_tail_edge(&self, e: EdgeId) -> bool {
        let split = &self.ip.splits[self.f.index()];
        let (u, w) = split.cfg.edge(e);
        w == pathprof_graph::Cfg::EXIT
            && self.ip.tail_calls[self.f.index()]
                .iter()
                .any(|t| split.last[t.block.index()] == u)
    }

    /// The actions of tail call `t`, wasm call site `site`: they replace
    /// the exit actions there. With `slots` (a table that holds opaque
    /// functions too), they run only if the captured table index is one of
    /// them; else the callee returns for this function: the edge to EXIT
    /// and the exit actions run instead.
    fn tail_call(&self, t: &TailCall, site: u32, slots: Option<&[u32]>) -> CallActions {
        let into_profiled = self.tail_into_profiled(t);
        let before = match slots {
            None => into_profiled,
            Some(slots) => {
                let split = &self.ip.splits[self.f.index()];
                let u = split.last[t.block.index()];
                let mut returns = vec![];
                let to_exit = split.cfg.succs(u).iter().copied().find(|&e| {
                    split.is_original(e) && split.cfg.dst(e) == pathprof_graph::Cfg::EXIT
                });
                if let Some(e) = to_exit {
                    self.kept(e, &mut returns);
                }
                returns.extend(self.exit());
                match slots {
                    [] => returns,
                    _ => [
                        vec![Action::CaptureIndex { reg: INDEX }],
                        on_slot(&[(slots, into_profiled), (&[], returns)]),
                    ]
                    .concat(),
                }
            }
        };
        CallActions {
            site,
            before,
            after: vec![],
            instead_of_exit: true,
        }
    }

    /// What a tail call into a profiled function does before it.
    fn tail_into_profiled(&self, t: &TailCall) -> Vec<Action> {
        let u = self.ip.splits[self.f.index()].last[t.block.index()];
        let mut before = vec![];
        // No surrogate exit: ENTRY does not reach the block.
        if let Some(exit) = self.ip.locals[self.f.index()].exit_of[u.index()] {
            apply(&mut before, PATH, self.rho(exit), NVC);
            before.push(Action::CountPath {
                reg: PATH,
                offset: 0,
            });
        }
        let mut uncut = vec![];
        set_global(&mut uncut, G_TAILED, 1);
        let fresh = if self.piecewise() {
            vec![Action::LocalToGlobal {
                global: G_CNT,
                reg: SAVED_CNT,
            }]
        } else {
            vec![]
        };
        match self.entry {
            Entry::Uncut => before.extend(uncut),
            Entry::Fresh => before.extend(fresh),
            Entry::Both => before.push(if_nonzero(UNCUT, uncut, fresh)),
        }
        before
    }

    /// A new path along surrogate entry edge `entry`.
    fn restart(&self, entry: LocalEdgeId, out: &mut Vec<Action>) {
        let rho = self.rho(entry);
        if self.piecewise() {
            let pw = self
                .ip
                .numbering
                .piecewise
                .as_ref()
                .expect("piecewise values");
            let nvc = pw.unbal_rl_exit[self.f.index()];
            let start = self.ip.global_gentry(self.f).expect("GEntry").value;
            // nvc is known here, so is the whole start value (wrapping, as
            // the register's arithmetic: the final sums are exact).
            let value = start.wrapping_add(rho.a.wrapping_mul(nvc).wrapping_add(rho.b));
            out.push(Action::Set {
                reg: NVC,
                value: nvc as i64,
            });
            set_global(out, G_CNT, 0);
            out.push(Action::Set {
                reg: PATH,
                value: value as i64,
            });
        } else {
            copy(out, PATH, ON_ENTRY);
            apply(out, PATH, rho, NVC);
        }
    }

    fn entry(&self) -> Vec<Action> {
        let mut out = vec![];
        if !self.sites.catches.is_empty() {
            out.push(Action::GlobalToLocal {
                reg: TAILED_AT_ENTRY,
                global: G_TAILED,
            });
        }
        out.extend(self.entry_by_kind());
        out
    }

    fn entry_by_kind(&self) -> Vec<Action> {
        match self.entry {
            Entry::Uncut => self.entry_uncut(),
            Entry::Fresh => self.entry_fresh(),
            Entry::Both => {
                let mut uncut = vec![];
                set_global(&mut uncut, G_UNCUT, 0);
                uncut.extend(self.entry_uncut());
                vec![
                    Action::GlobalToLocal {
                        reg: UNCUT,
                        global: G_UNCUT,
                    },
                    if_nonzero(UNCUT, uncut, self.entry_fresh()),
                ]
            }
        }
    }

    fn entry_uncut(&self) -> Vec<Action> {
        let mut out = vec![
            Action::GlobalToLocal {
                reg: NVC,
                global: G_NVC,
            },
            Action::GlobalToLocal {
                reg: PATH,
                global: G_PATH,
            },
        ];
        if !self.piecewise() {
            copy(&mut out, ON_ENTRY, PATH);
        }
        out
    }

    fn entry_fresh(&self) -> Vec<Action> {
        let value = self
            .ip
            .global_entry(self.f)
            .expect("an entry function")
            .value as i64;
        let mut out = vec![
            Action::Set { reg: PATH, value },
            Action::Set { reg: NVC, value: 1 },
            Action::Set {
                reg: ON_ENTRY,
                value,
            },
        ];
        // Nothing thrown is in flight at an entry: a value left here is of
        // an exception an import caught, after which it called back
        // (docs/decisions.md#import-catches).
        set_global(&mut out, G_THROWN, 0);
        if self.piecewise() {
            out.push(Action::GlobalToLocal {
                reg: SAVED_CNT,
                global: G_CNT,
            });
            set_global(&mut out, G_CNT, 1);
        }
        out
    }

    fn exit(&self) -> Vec<Action> {
        match self.entry {
            Entry::Uncut => self.exit_uncut(),
            Entry::Fresh => self.exit_fresh(),
            Entry::Both => vec![if_nonzero(UNCUT, self.exit_uncut(), self.exit_fresh())],
        }
    }

    fn exit_uncut(&self) -> Vec<Action> {
        vec![Action::LocalToGlobal {
            global: G_PATH,
            reg: PATH,
        }]
    }

    fn exit_fresh(&self) -> Vec<Action> {
        let mut out = vec![];
        if let Some(pw) = self.ip.numbering.piecewise.as_ref() {
            if let Some(value) = pw.exit_global_value[self.f.index()].filter(|&v| v != 0) {
                // With no parenthesis open, `Exit_P -> Exit_global`'s value.
                out.push(Action::GlobalToLocal {
                    reg: TMP,
                    global: G_CNT,
                });
                let add = vec![Action::Add {
                    reg: PATH,
                    value: value as i64,
                }];
                out.push(if_nonzero(TMP, vec![], add));
            }
        }
        out.push(Action::CountPath {
            reg: PATH,
            offset: 0,
        });
        if self.piecewise() {
            out.push(Action::LocalToGlobal {
                global: G_CNT,
                reg: SAVED_CNT,
            });
        }
        out
    }

    /// The actions of the local calls `cases`, the cases of the
    /// `call_indirect` at wasm call site `site`: each case's actions (the
    /// link into its call vertex first), chosen by the table index the
    /// call uses, before the call and again after it.
    fn cases(&self, cases: std::ops::Range<usize>, site: u32) -> CallActions {
        let (mut before, mut after) = (vec![], vec![]);
        for k in cases {
            let c = self.call(k, site);
            let slots = &self.sites.case_slots[k][..];
            before.push((slots, c.before));
            after.push((slots, c.after));
        }
        CallActions {
            site,
            before: [vec![Action::CaptureIndex { reg: INDEX }], on_slot(&before)].concat(),
            after: on_slot(&after),
            instead_of_exit: false,
        }
    }

    /// The actions of local call `k`, wasm call site `site`.
    fn call(&self, k: usize, site: u32) -> CallActions {
        let ip = self.ip;
        let s = ip.site_id(self.f, k);
        let split = &ip.splits[self.f.index()];
        let (mut before, mut after) = (vec![], vec![]);
        if let Some(link) = split.link_before[k] {
            self.kept(link, &mut before);
        }
        if ip.is_cut(s) {
            self.kept(split.call_edge[k], &mut after);
        } else {
            let Callee::Direct(q) = ip.callees[s.index()] else {
                unreachable!("indirect call sites are always cut")
            };
            let psi_r = ip.psi(self.f, split.return_site[k]);
            before.push(Action::LocalToGlobal {
                global: G_PATH,
                reg: PATH,
            });
            before.push(Action::Set { reg: TMP, value: 0 });
            apply(&mut before, TMP, psi_r, NVC);
            before.push(Action::LocalToGlobal {
                global: G_NVC,
                reg: TMP,
            });
            if entry_kind(ip, q) == Some(Entry::Both) {
                set_global(&mut before, G_UNCUT, 1);
            }
            after.push(Action::GlobalToLocal {
                reg: PATH,
                global: G_PATH,
            });
            if self.piecewise() {
                self.piecewise_call(s, &mut before, &mut after);
            }
            if !ip.tail_calls[q.index()].is_empty() {
                self.tail_callee(k, &mut before, &mut after);
            }
        }
        if let Some(link) = split.link_after[k] {
            self.kept(link, &mut after);
        }
        CallActions {
            site,
            before,
            after,
            instead_of_exit: false,
        }
    }

    /// Around an uncut call `k` to a function that may tail-call: if the
    /// callee's activation ended in a tail call, the path in flight was
    /// counted there, and a new one starts at the return site `r` along
    /// its surrogate entry (`Entry_S -> r`) instead of `after`.
    fn tail_callee(&self, k: usize, before: &mut Vec<Action>, after: &mut Vec<Action>) {
        let r = self.ip.splits[self.f.index()].return_site[k];
        let entry = self.ip.locals[self.f.index()].entry_of[r.index()];
        let mut save = vec![Action::GlobalToLocal {
            reg: TAILED,
            global: G_TAILED,
        }];
        set_global(&mut save, G_TAILED, 0);
        before.splice(0..0, save);
        let mut restart = vec![];
        // No surrogate entry: ENTRY does not reach the return site.
        if let Some(entry) = entry {
            self.restart(entry, &mut restart);
        }
        let returned = std::mem::take(after);
        after.push(Action::GlobalToLocal {
            reg: TMP,
            global: G_TAILED,
        });
        after.push(Action::LocalToGlobal {
            global: G_TAILED,
            reg: TAILED,
        });
        after.push(if_nonzero(TMP, restart, returned));
    }

    /// One more open parenthesis before the call; on return, close it, or
    /// with none open take the return edge's value (Algorithm 6.1).
    fn piecewise_call(
        &self,
        s: pathprof_graph::interproc::CallSiteId,
        before: &mut Vec<Action>,
        after: &mut Vec<Action>,
    ) {
        let pw = self.piecewise_values();
        before.push(Action::GlobalToLocal {
            reg: TMP,
            global: G_CNT,
        });
        before.push(Action::Add { reg: TMP, value: 1 });
        before.push(Action::LocalToGlobal {
            global: G_CNT,
            reg: TMP,
        });
        let close = vec![
            Action::Add {
                reg: TMP,
                value: -1,
            },
            Action::LocalToGlobal {
                global: G_CNT,
                reg: TMP,
            },
        ];
        let mut none_open = vec![];
        apply(
            &mut none_open,
            PATH,
            Linear::new(0, pw.return_value[s.index()]),
            NVC,
        );
        none_open.push(Action::Set {
            reg: NVC,
            value: pw.unbal_rl_exit[self.f.index()] as i64,
        });
        after.push(Action::GlobalToLocal {
            reg: TMP,
            global: G_CNT,
        });
        after.push(if_nonzero(TMP, close, none_open));
    }

    /// `pathNum += rho(e)` for split edge `e` if G*_fn keeps it.
    fn kept(&self, e: EdgeId, out: &mut Vec<Action>) {
        if let EdgeRole::Kept(d) = self.ip.locals[self.f.index()].roles[e.index()] {
            apply(out, PATH, self.rho(d), NVC);
        }
    }
}

/// The actions of the arm whose slots hold the captured table index
/// ([`INDEX`]); of the arm with no slots (the cut case) when none does.
fn on_slot(arms: &[(&[u32], Vec<Action>)]) -> Vec<Action> {
    let mut out = arms
        .iter()
        .find(|(slots, _)| slots.is_empty())
        .map_or_else(Vec::new, |(_, arm)| arm.clone());
    for (slots, arm) in arms.iter().rev().filter(|(slots, _)| !slots.is_empty()) {
        for &slot in slots.iter().rev() {
            out = if_slot((INDEX, INDEX_SCRATCH), slot, arm.clone(), out);
        }
    }
    out
}
