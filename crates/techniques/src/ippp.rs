//! Interprocedural preferential path profiling (K. Vaswani, "Efficient
//! Online Path Profiling", thesis 3.4.4-3.4.5) as plans: the wasm
//! instrumentation of the reference walk [`pathprof_graph::ippp::walk`],
//! from the expanded graphs of [`pathprof_graph::ippp::expand`].
//!
//! The walk keeps a register pair (Ball-Larus, PPP) per open segment. The
//! segments open in one activation are not bounded by `k` (a loop body of
//! `c` calls opens `c` of them), so a fixed set of locals cannot hold them
//! (docs/decisions.md#ips-recorded). What makes them cheap: the segments
//! started in one activation and still open are always in the same copy of
//! their start function's expanded graph, so every edge adds the same
//! increments to all of them. They form a *group*: one accumulator pair,
//! and a list of members in a stack region of the counter memory, each
//! stored as its value minus the accumulator when it joined.
//!
//! State, per activation of function `h`:
//! - the root register of the walk as `A + DELTA`: `A` is the accumulator
//!   of `h`'s own group (copy 0 of `h`'s expanded graph, where the root
//!   register is too), `DELTA` changes only where the root restarts. A
//!   member joining at a call is stored as `DELTA` itself;
//! - per copy of another function's expanded graph that `h` appears in
//!   (static): the accumulator pair of the group in that copy, its member
//!   count and list address; zero members when the activation is not in
//!   that context. At most one group is in a copy at a time: a copy is one
//!   chain of call sites from its start function.
//!
//! Where the rules of the walk run:
//! - entry: take the groups the caller passed for each copy from module
//!   registers (and clear the count, so a later entry from elsewhere sees
//!   none); open `h`'s own list on the stack region if `h` starts segments
//!   that go into calls (its *frame*: a member per such call site, plus one);
//! - an edge: every accumulator adds its copy's increments (3.4.5's
//!   per-context increments, here per copy); a group in a copy that cuts
//!   the edge (a truncated expanded graph, 3.4.4 step 5) is classified
//!   there and emptied, its segments truncated;
//! - a backedge (or a truncated edge): every group adds its copy's dummy
//!   `w -> EXIT` and is *classified* (each member checked as 3.2.3 checks a
//!   path) and emptied; the root restarts along `ENTRY -> v`;
//! - a call at `c` to `g`: the root joins `h`'s group; each group whose
//!   copy inlines `(c, g)` below depth `k` goes to that copy of `g` through
//!   module registers, adding `c -> ENTRY'`; the others add `c -> EXIT` and
//!   are classified. After the call, the groups come back the same way and
//!   the root restarts along `ENTRY -> r`;
//! - exit: `h`'s own group is classified (the function returned); the
//!   others add `EXIT' -> r` and go back to the caller;
//! - a tail call into a profiled function (instead of the edge to EXIT
//!   and the exit actions): every group adds its copy's dummy `u -> EXIT`
//!   of the tail-calling vertex and is classified, as the segmenter closes
//!   the segments there, and `h`'s list leaves the stack region. The
//!   callee is entered with no groups (the pass flag is clear: `h`'s entry
//!   cleared it), and the caller `h` would have returned to reads the
//!   groups it passed as empty (their counts were cleared when `h` took
//!   them). Through a static table that holds opaque functions too, the
//!   table index is captured, and an opaque callee's slot runs the edge to
//!   EXIT and the exit actions instead (it returns for `h`);
//! - a throw (its edge to EXIT, before the `throw`): every group adds its
//!   copy's dummy `u -> EXIT` of the throwing vertex and is classified;
//! - a catch edge `ENTRY -> h`: the activations the exception left are
//!   gone, and with them what this one passed into its callee, so every
//!   group is emptied, the stack pointer goes back to what it was after
//!   this activation's entry (kept in [`SP_AT_ENTRY`]), the pass flag is
//!   cleared, and the root restarts along the catch edge;
//! - a call that may enter opaque code: the stack pointer saved before it
//!   and restored after it, the pass flag cleared: a callback may have
//!   thrown out of activations whose exits never ran, to the import that
//!   called it (docs/decisions.md#import-catches).
//!
//! Counting: a member of start function `f` is counted in `f`'s tables
//! (its PPP table, its hash table of the others) wherever it is classified
//! ([`Action::In`]): a segment's Ball-Larus id is only unique within its
//! start function's expanded graph, whose ids may take all 64 bits.
//!
//! - an indirect call whose table is static (its slots known before the
//!   run: [`Dispatch`]): the table index the call uses is captured, and
//!   each group goes to the copy of the function in that slot, if an
//!   interesting segment goes there ("indirect calls are segment ends
//!   unless a profile resolves them"; the profile's segments name the
//!   callees), else it is classified as at any call no segment extends.
//!
//! Departures from the thesis:
//! - Indirect calls through a table the module or the host may write end
//!   segments: the caller cannot tell the callee's copy before the call.
//!   Interesting segments through one are left out of the interesting set
//!   ([`through_indirect_call`]).
//! - The stack region is of fixed size; a run that nests frames deeper
//!   traps (`unreachable`) rather than count wrongly.
//! - A tail call whose callee may be profiled or opaque where no static
//!   table tells which is refused before planning ([`Sites::tail_slots`]).
//! - Segments closed by a throw are counted at the throw, also when no
//!   profiled function catches the exception, as the segmenter counts
//!   them (docs/decisions.md#ips-exceptions).

use std::collections::BTreeMap;

use pathprof_graph::interproc::{Callee, FuncId};
use pathprof_graph::ippp::subpath::CutRole;
use pathprof_graph::ippp::{Expanded, Ips, SubpathEnd, SubpathNumbering, SubpathTail};
use pathprof_graph::{EdgeId, GraphError};

use crate::plan::{
    if_slot, Action, CallActions, EdgeActions, ForEachMember, FunctionPlan, GlobalReg, IfNonZero,
    In, Interproc, ModulePlan, MulAdd, Otherwise, PathTable, PppEnd, PppTable, Push, Reg, Width,
    PPP_HOLE,
};

const DELTA: (Reg, Reg) = (0, 1);
const ACC: (Reg, Reg) = (2, 3);
const LEN0: Reg = 4;
const PTR0: Reg = 5;
const TMP: (Reg, Reg) = (6, 7);
const INDEX: Reg = 8;
const SCRATCH: Reg = 9;
/// Non-zero while the activation may hold groups of other functions'
/// segments: it was entered with some, and no backedge closed them since.
const ACTIVE: Reg = 10;
/// The stack pointer after entry, for a function that catches.
const SP_AT_ENTRY: Reg = 11;
const FIXED: usize = 12;
/// Registers per copy: accumulator pair, member count, list address.
const PER_COPY: usize = 4;
/// The most copies a function's registers can hold.
pub const MAX_COPIES: usize = (256 - FIXED) / PER_COPY;

/// Module register of the stack pointer (an offset in the stack region).
const G_SP: GlobalReg = 0;
/// Module register set by a caller that passes groups to its callee, which
/// clears it: a callee entered without groups (the common case) reads its
/// copies' registers not at all.
const G_PASS: GlobalReg = 1;
/// The first module register of the copies'.
const G_COPIES: usize = 2;
/// Copy accumulators on an edge above which the edge tests [`ACTIVE`]
/// first: a test costs about what two adds cost.
const GUARD_ABOVE: usize = 2;

/// Bytes of the stack region: 64 Ki members.
pub const STACK_BYTES: u32 = 1 << 20;

/// What the instrumentation cannot do for a module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("function {function}: it appears in {copies} contexts of interesting segments, more than the {max} its registers hold; choose fewer interesting segments or a smaller -k")]
    TooManyContexts {
        function: u32,
        copies: usize,
        max: usize,
    },
}

/// What every function's plan shares: the copies each function appears
/// in and the module registers their groups pass through.
#[derive(Clone, Debug)]
pub struct Layout {
    pub k: usize,
    pub num_imported_funcs: u32,
    /// Per function: the copies of other expanded graphs (or non-root
    /// copies of its own) it appears in, as (start function, copy).
    pub copies: Vec<Vec<(FuncId, usize)>>,
    /// Module register index of each copy's first register, per
    /// (start function, copy).
    global_of: BTreeMap<(FuncId, usize), GlobalReg>,
    /// Per function: the first supergraph call site id of its calls.
    first_site: Vec<usize>,
    globals: usize,
}

/// Where a function's supergraph calls and tail calls are among its wasm
/// call sites.
#[derive(Clone, Copy, Debug)]
pub struct Sites<'a> {
    /// Per supergraph call: its wasm call site.
    pub calls: &'a [u32],
    /// Per supergraph tail call: its wasm call site.
    pub tails: &'a [u32],
    /// Per supergraph tail call: for one through a static table that holds
    /// opaque functions as well as profiled ones, the slots of the
    /// profiled ones; `None` for the others.
    pub tail_slots: &'a [Option<Vec<u32>>],
    /// The indirect calls a static table resolves.
    pub dispatch: &'a Dispatch,
    /// Original edges that `throw` or `throw_ref` to EXIT.
    pub throws: &'a [EdgeId],
    /// Original edges `ENTRY -> h` of catch clauses.
    pub catches: &'a [EdgeId],
    /// The wasm call sites (not tail calls) that may enter opaque code,
    /// in order.
    pub opaque: &'a [u32],
}

/// Per supergraph call site of a function (in its order), for an
/// indirect call through a static table: the table slots of each function
/// it may reach. `None` for a direct call, or one the plan cannot resolve.
pub type Dispatch = Vec<Option<BTreeMap<FuncId, Vec<u32>>>>;

/// The IPS of `list` that pass no indirect call site `dispatch` (per
/// function) does not resolve, in order, and how many do.
pub fn through_indirect_call(
    num: &SubpathNumbering,
    list: &[Ips],
    dispatch: &[Dispatch],
) -> Result<(Vec<Ips>, u64), GraphError> {
    let first_site = first_sites(num);
    let passes = |ips: &Ips| -> Result<bool, GraphError> {
        for (j, s) in ips[..ips.len().saturating_sub(1)].iter().enumerate() {
            if let SubpathEnd::Call(i) = num.decode(*s)?.end {
                let site = first_site[s.func.index()] + i;
                let resolved = dispatch
                    .get(s.func.index())
                    .and_then(|d| d.get(i)?.as_ref())
                    .is_some_and(|m| m.get(&ips[j + 1].func).is_some_and(|v| !v.is_empty()));
                if matches!(num.callees.get(site), Some(Callee::Indirect(_))) && !resolved {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    };
    let mut kept = Vec::with_capacity(list.len());
    for ips in list {
        if !passes(ips)? {
            kept.push(ips.clone());
        }
    }
    let through = (list.len() - kept.len()) as u64;
    Ok((kept, through))
}

fn first_sites(num: &SubpathNumbering) -> Vec<usize> {
    let mut first = vec![0; num.functions.len() + 1];
    for s in &num.sites {
        first[s.func.index() + 1] += 1;
    }
    for f in 0..num.functions.len() {
        first[f + 1] += first[f];
    }
    first
}

impl Layout {
    /// Lays out the module (supergraph function `i` is module function
    /// `num_imported_funcs + i`) for the expanded graphs `x` of depth `k`.
    pub fn new(
        num: &SubpathNumbering,
        x: &[Expanded],
        k: usize,
        num_imported_funcs: u32,
    ) -> Result<Layout, Unsupported> {
        let n = num.functions.len();
        let mut copies = vec![Vec::new(); n];
        let mut global_of = BTreeMap::new();
        let mut globals = G_COPIES;
        for (f, e) in x.iter().enumerate() {
            for (c, copy) in e.copies.iter().enumerate().skip(1) {
                copies[copy.func.index()].push((FuncId::new(f), c));
                global_of.insert((FuncId::new(f), c), globals as GlobalReg);
                globals += PER_COPY;
            }
        }
        if let Some((h, list)) = copies
            .iter()
            .enumerate()
            .find(|(_, l)| l.len() > MAX_COPIES)
        {
            return Err(Unsupported::TooManyContexts {
                function: num_imported_funcs + h as u32,
                copies: list.len(),
                max: MAX_COPIES,
            });
        }
        Ok(Layout {
            k,
            num_imported_funcs,
            copies,
            global_of,
            first_site: first_sites(num),
            globals,
        })
    }

    /// The module registers: the stack pointer, the pass flag, then four
    /// per copy.
    pub fn module_plan(&self) -> ModulePlan {
        ModulePlan {
            globals: vec![Width::I64; self.globals],
            stack_bytes: STACK_BYTES,
        }
    }
}

/// The PPP table of start function `f`'s expanded graph: per PPP id from
/// its smallest, the Ball-Larus id of the interesting segment with it.
fn ppp_table(e: &Expanded) -> Option<PppTable> {
    if e.interesting.is_empty() {
        return None;
    }
    let min = e.ppp.numbering.min;
    let len = (e.ppp.numbering.max - min) as usize + 1;
    let mut expected = vec![PPP_HOLE; len];
    for (&id, &i) in &e.table {
        expected[(id - min) as usize] = e.ball_larus[i];
    }
    Some(PppTable { min: 0, expected })
}

/// What happens to a member that is not interesting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Count its offset Ball-Larus id in the function's hash table.
    Record {
        capacity: u32,
    },
    /// One counter per function.
    Count,
    Ignore,
}

/// A group of segments as one activation holds it.
#[derive(Copy, Clone, Debug)]
struct Group {
    root: FuncId,
    copy: usize,
    acc: (Reg, Reg),
    len: Reg,
    ptr: Reg,
}

struct Planner<'a> {
    num: &'a SubpathNumbering,
    x: &'a [Expanded],
    layout: &'a Layout,
    h: FuncId,
    policy: Policy,
    /// `h`'s indirect calls resolved by slot.
    dispatch: &'a Dispatch,
    /// The i32 registers of a dispatch: the table index, and a scratch.
    index: (Reg, Reg),
    /// Whether `h` starts segments that go into calls (its own group).
    grouped: bool,
    groups: Vec<Group>,
    /// Whether `h` has catch edges.
    catches: bool,
}

/// The plan of function `h`, whose supergraph calls are at wasm call
/// sites `sites`; `None` when it needs no instrumentation (no calls, no
/// copies).
pub fn plan(
    num: &SubpathNumbering,
    x: &[Expanded],
    layout: &Layout,
    h: FuncId,
    sites: Sites<'_>,
    policy: Policy,
) -> Option<FunctionPlan> {
    let dispatch = sites.dispatch;
    let split = &num.functions[h.index()].split;
    let copies = &layout.copies[h.index()];
    // A function that catches resets the stack region, whatever it calls,
    // and one that calls opaque code puts it back after the call.
    let alone = sites.catches.is_empty() && sites.opaque.is_empty();
    if split.call_vertex.is_empty() && copies.is_empty() && alone {
        return None;
    }
    let grouped = !x[h.index()].copies[0].children.is_empty();
    let mut groups = Vec::new();
    if grouped {
        groups.push(Group {
            root: h,
            copy: 0,
            acc: ACC,
            len: LEN0,
            ptr: PTR0,
        });
    }
    for (j, &(root, copy)) in copies.iter().enumerate() {
        let r = (FIXED + PER_COPY * j) as Reg;
        groups.push(Group {
            root,
            copy,
            acc: (r, r + 1),
            len: r + 2,
            ptr: r + 3,
        });
    }
    let fixed = (FIXED + PER_COPY * copies.len()) as Reg;
    let p = Planner {
        num,
        x,
        layout,
        h,
        policy,
        dispatch,
        index: (fixed, fixed + 1),
        grouped,
        groups,
        catches: !sites.catches.is_empty(),
    };
    let own = &x[h.index()];
    let counts = !split.call_vertex.is_empty();
    let tails = &num.functions[h.index()].tails;
    let tail_edges: Vec<EdgeId> = tails.iter().filter_map(|t| p.tail_edge(t.at)).collect();
    let edges = EdgeActions::from_fn(split.original_edges, |e, out| {
        let e = EdgeId::new(e);
        if sites.throws.contains(&e) {
            p.throw(e, out);
        } else if sites.catches.contains(&e) {
            p.catch(e, out);
        } else if !tail_edges.contains(&e) {
            // A tail call's own actions take the edge to EXIT's place.
            p.edge(e, out)
        }
    });
    let mut calls: Vec<CallActions> = (0..split.call_vertex.len())
        .map(|k| p.call(k, sites.calls[k]))
        .collect();
    calls.extend(tails.iter().enumerate().map(|(i, t)| {
        let slots = sites.tail_slots.get(i).and_then(Option::as_deref);
        p.tail_call(t, sites.tails[i], slots)
    }));
    calls.sort_by_key(|c| c.site);
    let mut registers = vec![Width::I64; FIXED + PER_COPY * copies.len()];
    let slotted = sites.tail_slots.iter().any(Option::is_some);
    if dispatch.iter().any(Option::is_some) || slotted {
        registers.extend([Width::I32, Width::I32]);
    }
    if !sites.opaque.is_empty() {
        // An import that called back may have caught an exception thrown
        // out of activations whose exits never took their lists off the
        // stack region, nor cleared the pass flag their callees would have
        // (docs/decisions.md#import-catches).
        let saved = registers.len() as Reg;
        registers.push(Width::I64);
        let restore = [
            to_global(G_SP, saved),
            Action::Set {
                reg: SCRATCH,
                value: 0,
            },
            to_global(G_PASS, SCRATCH),
        ];
        let save = [from_global(saved, G_SP)];
        crate::plan::around_calls(&mut calls, sites.opaque, &save, &restore);
    }
    Some(FunctionPlan {
        registers,
        paths: match policy {
            Policy::Record { capacity } if counts => PathTable::Hash { capacity },
            _ => PathTable::None,
        },
        slots: u32::from(policy == Policy::Count && counts),
        ppp: ppp_table(own).filter(|_| counts),
        edges,
        interproc: Some(Box::new(Interproc {
            entry: p.entry(),
            exit: p.exit(),
            calls,
        })),
    })
}

/// `reg += value` unless it is 0.
fn add(out: &mut Vec<Action>, reg: Reg, value: i64) {
    if value != 0 {
        out.push(Action::Add { reg, value });
    }
}

/// `dst = src + b`.
fn copy_plus(out: &mut Vec<Action>, dst: Reg, src: Reg, b: i64) {
    out.push(Action::Set { reg: dst, value: 0 });
    out.push(Action::MulAdd(Box::new(MulAdd {
        reg: dst,
        a: 1,
        src,
        b,
    })));
}

/// `if reg != 0 { then }`.
fn if_nonzero(reg: Reg, then: Vec<Action>) -> Action {
    Action::IfNonZero(Box::new(IfNonZero {
        reg,
        then,
        otherwise: vec![],
    }))
}

fn to_global(global: GlobalReg, reg: Reg) -> Action {
    Action::LocalToGlobal { global, reg }
}

fn from_global(reg: Reg, global: GlobalReg) -> Action {
    Action::GlobalToLocal { reg, global }
}

impl Planner<'_> {
    fn expanded(&self, f: FuncId) -> &Expanded {
        &self.x[f.index()]
    }

    /// The increments of call-cut DAG edge `d` of `h` in `g`'s copy (0 for
    /// an edge the copy drops: only ENTRY's dummies, which no group takes).
    fn inc(&self, g: (FuncId, usize), d: pathprof_graph::DagEdgeId) -> (i64, i64) {
        let (bl, ppp) = self.expanded(g.0).increment(g.1, d).unwrap_or((0, 0));
        (bl as i64, ppp)
    }

    /// Every accumulator adds its copy's increments of DAG edge `d`; a
    /// group in a copy that cuts `d` (truncation) is classified there and
    /// emptied: its segments end, truncated.
    fn advance(&self, d: pathprof_graph::DagEdgeId, out: &mut Vec<Action>) {
        let (bl, ppp) = self.inc((self.h, 0), d);
        add(out, ACC.0, bl);
        add(out, ACC.1, ppp);
        let mut copies = vec![];
        for g in self.groups.iter().filter(|g| g.len != LEN0) {
            let (bl, ppp) = self.inc((g.root, g.copy), d);
            if self.expanded(g.root).is_cut(g.copy, d) {
                self.close(g, (bl, ppp), &mut copies);
                continue;
            }
            add(&mut copies, g.acc.0, bl);
            add(&mut copies, g.acc.1, ppp);
        }
        if copies.len() > GUARD_ABOVE {
            out.push(if_nonzero(ACTIVE, copies));
        } else {
            out.extend(copies);
        }
    }

    /// The actions that count a value `(bl, ppp) + extra` of start function
    /// `root` held in registers `regs`, in `root`'s tables.
    fn classify(&self, root: FuncId, regs: (Reg, Reg), extra: (i64, i64)) -> Vec<Action> {
        let e = self.expanded(root);
        let otherwise = match self.policy {
            Policy::Record { .. } => Otherwise::Record,
            Policy::Count => Otherwise::Count { slot: 0 },
            Policy::Ignore => Otherwise::Ignore,
        };
        let action = if e.interesting.is_empty() {
            match otherwise {
                Otherwise::Record => Action::CountPath {
                    reg: regs.0,
                    offset: extra.0,
                },
                Otherwise::Count { slot } => Action::CountSlot { index: slot },
                Otherwise::Ignore => return vec![],
            }
        } else {
            Action::CountPpp(Box::new(PppEnd {
                bl: regs.0,
                bl_offset: extra.0,
                ppp: regs.1,
                ppp_offset: extra.1.wrapping_sub(e.ppp.numbering.min),
                otherwise,
            }))
        };
        if root == self.h {
            return vec![action];
        }
        vec![Action::In(Box::new(In {
            func: self.layout.num_imported_funcs + root.index() as u32,
            action,
        }))]
    }

    /// Classifies and empties group `g`, every member plus `extra`. The
    /// constants go with the loop, not its body: every loop that counts in
    /// the same tables then has the same body, which the rewriter emits
    /// once, out of line.
    fn close(&self, g: &Group, extra: (i64, i64), out: &mut Vec<Action>) {
        let body = self.classify(g.root, TMP, (0, 0));
        if body.is_empty() {
            out.push(Action::Set {
                reg: g.len,
                value: 0,
            });
            return;
        }
        out.push(Action::ForEachMember(Box::new(ForEachMember {
            ptr: g.ptr,
            len: g.len,
            index: INDEX,
            acc: g.acc,
            extra,
            tmp: TMP,
            body,
        })));
    }

    /// The increments of the exit dummy `exit` in `g`'s copy.
    fn exit_inc(&self, g: &Group, exit: pathprof_graph::DagEdgeId) -> (i64, i64) {
        self.inc((g.root, g.copy), exit)
    }

    /// The root register restarts along `ENTRY -> v` (DAG edge `entry`);
    /// `kept`: `h`'s own group still has members.
    fn restart(&self, entry: pathprof_graph::DagEdgeId, kept: bool, out: &mut Vec<Action>) {
        let (bl, ppp) = self.inc((self.h, 0), entry);
        if kept {
            for (delta, acc, v) in [(DELTA.0, ACC.0, bl), (DELTA.1, ACC.1, ppp)] {
                out.push(Action::Set {
                    reg: delta,
                    value: v,
                });
                out.push(Action::MulAdd(Box::new(MulAdd {
                    reg: delta,
                    a: -1,
                    src: acc,
                    b: 0,
                })));
            }
        } else {
            out.push(Action::Set {
                reg: ACC.0,
                value: bl,
            });
            out.push(Action::Set {
                reg: ACC.1,
                value: ppp,
            });
            if self.grouped {
                out.push(Action::Set {
                    reg: DELTA.0,
                    value: 0,
                });
                out.push(Action::Set {
                    reg: DELTA.1,
                    value: 0,
                });
            }
        }
    }

    fn edge(&self, e: EdgeId, out: &mut Vec<Action>) {
        match self.num.functions[self.h.index()].roles[e.index()] {
            CutRole::Real(d) => self.advance(d, out),
            CutRole::Cut { exit, entry } => {
                for g in &self.groups {
                    self.close(g, self.exit_inc(g, exit), out);
                }
                if self.groups.iter().any(|g| g.len != LEN0) {
                    // Every other function's group is closed.
                    out.push(Action::Set {
                        reg: ACTIVE,
                        value: 0,
                    });
                }
                self.restart(entry, false, out);
            }
            CutRole::Unreachable => {}
        }
    }

    /// The module register of copy `(f, c)`'s field `i` (0, 1: the
    /// accumulator pair, 2: the member count, 3: the list address).
    fn global(&self, f: FuncId, c: usize, i: u32) -> GlobalReg {
        self.layout.global_of[&(f, c)] + i
    }

    fn call(&self, k: usize, site: u32) -> CallActions {
        let f = &self.num.functions[self.h.index()];
        let CutRole::Cut { exit, entry } = f.roles[f.split.call_edge[k].index()] else {
            // Not reached from ENTRY: never runs.
            return CallActions {
                site,
                ..CallActions::default()
            };
        };
        // The functions the call may enter, each with the table slots that
        // select it (none: a direct call).
        let targets: Vec<(FuncId, Option<&[u32]>)> =
            match &self.num.callees[self.layout.first_site[self.h.index()] + k] {
                Callee::Direct(g) => vec![(*g, None)],
                Callee::Indirect(_) => match self.dispatch.get(k).and_then(Option::as_ref) {
                    Some(by_func) => by_func
                        .iter()
                        .filter(|(_, slots)| !slots.is_empty())
                        .map(|(g, slots)| (*g, Some(&slots[..])))
                        .collect(),
                    None => vec![],
                },
            };
        let (mut before, mut after) = (vec![], vec![]);
        if targets.iter().any(|(_, slots)| slots.is_some()) {
            before.push(Action::CaptureIndex { reg: self.index.0 });
        }
        if self.grouped {
            before.push(Action::Push(Box::new(Push {
                ptr: PTR0,
                len: LEN0,
                bl: DELTA.0,
                ppp: DELTA.1,
            })));
        } else {
            let (bl, ppp) = self.inc((self.h, 0), exit);
            before.extend(self.classify(self.h, ACC, (bl, ppp)));
        }
        let (mut own_kept, mut passes) = (false, false);
        for g in &self.groups {
            let copy = &self.expanded(g.root).copies[g.copy];
            // (slots, child copy) per target this group's copy inlines.
            let children: Vec<(Option<&[u32]>, usize)> = targets
                .iter()
                .filter(|_| copy.depth < self.layout.k)
                .filter_map(|&(q, slots)| Some((slots, *copy.children.get(&(k, q))?)))
                .collect();
            if children.is_empty() {
                self.close(g, self.exit_inc(g, exit), &mut before);
                continue;
            }
            own_kept |= g.len == LEN0;
            passes = true;
            let mut close = vec![];
            self.close(g, self.exit_inc(g, exit), &mut close);
            before.extend(self.on_slot(&children, close, |c| self.pass(g, c)));
            after.extend(self.on_slot(&children, vec![], |c| self.take_back(g, c)));
        }
        if passes {
            before.push(Action::Set {
                reg: SCRATCH,
                value: 1,
            });
            before.push(to_global(G_PASS, SCRATCH));
        }
        self.restart(entry, own_kept, &mut after);
        if let Some(link) = f.split.link_after[k] {
            if let CutRole::Real(d) = f.roles[link.index()] {
                self.advance(d, &mut after);
            }
        }
        CallActions {
            site,
            before,
            after,
            instead_of_exit: false,
        }
    }

    /// Throw edge `e`: every group is classified along the dummy of its
    /// throwing vertex.
    fn throw(&self, e: EdgeId, out: &mut Vec<Action>) {
        let f = &self.num.functions[self.h.index()];
        let Some(exit) = f.throw_at(f.split.cfg.src(e)) else {
            return; // not reached from ENTRY
        };
        for g in &self.groups {
            self.close(g, self.exit_inc(g, exit), out);
        }
    }

    /// Catch edge `e`: what the exception left behind is dropped, and the
    /// root restarts along `e`.
    fn catch(&self, e: EdgeId, out: &mut Vec<Action>) {
        let f = &self.num.functions[self.h.index()];
        let CutRole::Real(d) = f.roles[e.index()] else {
            return;
        };
        for g in &self.groups {
            out.push(Action::Set {
                reg: g.len,
                value: 0,
            });
        }
        out.push(Action::Set {
            reg: ACTIVE,
            value: 0,
        });
        out.push(to_global(G_SP, SP_AT_ENTRY));
        out.push(Action::Set {
            reg: SCRATCH,
            value: 0,
        });
        out.push(to_global(G_PASS, SCRATCH));
        self.restart(d, false, out);
    }

    /// The edge to EXIT of tail-calling vertex `u`, if it has one.
    fn tail_edge(&self, u: pathprof_graph::NodeId) -> Option<EdgeId> {
        let split = &self.num.functions[self.h.index()].split;
        (split.cfg.succs(u).iter().copied())
            .find(|&e| split.is_original(e) && split.cfg.dst(e) == pathprof_graph::Cfg::EXIT)
    }

    /// The actions of tail call `t` at wasm call site `site`, instead of
    /// the edge to EXIT and the exit actions; `slots`: see [`Sites`].
    fn tail_call(&self, t: &SubpathTail, site: u32, slots: Option<&[u32]>) -> CallActions {
        let mut into_profiled = vec![];
        if let Some(exit) = t.exit {
            for g in &self.groups {
                self.close(g, self.exit_inc(g, exit), &mut into_profiled);
                if g.len == LEN0 {
                    into_profiled.push(to_global(G_SP, PTR0));
                }
            }
        }
        let before = match slots {
            None => into_profiled,
            Some(slots) => {
                // An opaque callee returns for `h`.
                let mut returns = vec![];
                let f = &self.num.functions[self.h.index()];
                let edge = self.tail_edge(t.at).map(|e| f.roles[e.index()]);
                if let Some(CutRole::Real(d)) = edge {
                    self.advance(d, &mut returns);
                }
                returns.extend(self.exit());
                if slots.is_empty() {
                    return CallActions {
                        site,
                        before: returns,
                        after: vec![],
                        instead_of_exit: true,
                    };
                }
                let mut out = returns;
                for &slot in slots.iter().rev() {
                    out = if_slot(self.index, slot, into_profiled.clone(), out);
                }
                [vec![Action::CaptureIndex { reg: self.index.0 }], out].concat()
            }
        };
        CallActions {
            site,
            before,
            after: vec![],
            instead_of_exit: true,
        }
    }

    /// `then(c)` for the child `c` whose slots hold the captured table
    /// index (a direct call's only child: at once), `otherwise` when none
    /// does.
    fn on_slot(
        &self,
        children: &[(Option<&[u32]>, usize)],
        otherwise: Vec<Action>,
        then: impl Fn(usize) -> Vec<Action>,
    ) -> Vec<Action> {
        let mut out = otherwise;
        for &(slots, c) in children.iter().rev() {
            let Some(slots) = slots else {
                return then(c);
            };
            for &slot in slots.iter().rev() {
                out = if_slot(self.index, slot, then(c), out);
            }
        }
        out
    }

    /// Group `g` goes into child copy `c` through its module registers,
    /// adding `c -> ENTRY'`.
    fn pass(&self, g: &Group, c: usize) -> Vec<Action> {
        let x = self.expanded(g.root);
        let enter = x.of(x.copies[c].enter.expect("an inlined copy is entered"));
        let mut out = vec![];
        copy_plus(&mut out, TMP.0, g.acc.0, enter.0 as i64);
        copy_plus(&mut out, TMP.1, g.acc.1, enter.1);
        out.push(to_global(self.global(g.root, c, 0), TMP.0));
        out.push(to_global(self.global(g.root, c, 1), TMP.1));
        out.push(to_global(self.global(g.root, c, 2), g.len));
        out.push(to_global(self.global(g.root, c, 3), g.ptr));
        out
    }

    /// Group `g` comes back from child copy `c` after the call.
    fn take_back(&self, g: &Group, c: usize) -> Vec<Action> {
        vec![
            from_global(g.acc.0, self.global(g.root, c, 0)),
            from_global(g.acc.1, self.global(g.root, c, 1)),
            from_global(g.len, self.global(g.root, c, 2)),
            Action::Set {
                reg: SCRATCH,
                value: 0,
            },
            to_global(self.global(g.root, c, 2), SCRATCH),
        ]
    }

    /// Bytes of `h`'s member list: one per call site its own segments go
    /// on from, plus the root joining at a call that ends them.
    fn frame_bytes(&self) -> i64 {
        let sites: std::collections::BTreeSet<usize> = self.expanded(self.h).copies[0]
            .children
            .keys()
            .map(|&(k, _)| k)
            .collect();
        16 * (sites.len() as i64 + 1)
    }

    /// Whether `h` appears in other functions' expanded graphs.
    fn has_copies(&self) -> bool {
        self.groups.iter().any(|g| g.len != LEN0)
    }

    fn entry(&self) -> Vec<Action> {
        let mut out = vec![];
        if self.has_copies() {
            // Only when the caller passed groups: take every copy's
            // (those not passed have no members).
            let mut take = vec![
                Action::Set {
                    reg: SCRATCH,
                    value: 0,
                },
                to_global(G_PASS, SCRATCH),
            ];
            for g in self.groups.iter().filter(|g| g.len != LEN0) {
                take.push(from_global(g.acc.0, self.global(g.root, g.copy, 0)));
                take.push(from_global(g.acc.1, self.global(g.root, g.copy, 1)));
                take.push(from_global(g.len, self.global(g.root, g.copy, 2)));
                take.push(from_global(g.ptr, self.global(g.root, g.copy, 3)));
                take.push(to_global(self.global(g.root, g.copy, 2), SCRATCH));
            }
            out.push(from_global(ACTIVE, G_PASS));
            out.push(if_nonzero(ACTIVE, take));
        }
        if self.grouped {
            out.push(from_global(PTR0, G_SP));
            copy_plus(&mut out, SCRATCH, PTR0, self.frame_bytes());
            out.push(Action::TrapIfAbove {
                reg: SCRATCH,
                limit: STACK_BYTES,
            });
            out.push(to_global(G_SP, SCRATCH));
        }
        if self.catches {
            out.push(from_global(SP_AT_ENTRY, G_SP));
        }
        out
    }

    fn exit(&self) -> Vec<Action> {
        let mut out = vec![];
        let mut back = vec![];
        for g in &self.groups {
            if g.len == LEN0 {
                self.close(g, (0, 0), &mut out);
                out.push(to_global(G_SP, PTR0));
                continue;
            }
            // A group with members goes back; the caller reads an empty
            // one as the count cleared at entry.
            let x = self.expanded(g.root);
            let leave = x.copies[g.copy].leave.expect("an inlined copy is left");
            let (bl, ppp) = x.of(leave);
            let mut give = vec![];
            add(&mut give, g.acc.0, bl as i64);
            add(&mut give, g.acc.1, ppp);
            give.push(to_global(self.global(g.root, g.copy, 0), g.acc.0));
            give.push(to_global(self.global(g.root, g.copy, 1), g.acc.1));
            give.push(to_global(self.global(g.root, g.copy, 2), g.len));
            back.push(if_nonzero(g.len, give));
        }
        if !back.is_empty() {
            out.push(if_nonzero(ACTIVE, back));
        }
        out
    }
}
