//! The one rewriter: applies instrumentation plans to a module.
//!
//! Plan first, apply at encode time: what a function's new body needs
//! (its counters' place in the layout, the indices of the types it adds,
//! function indices) is settled before its bytes are written, in function
//! order (`stream.rs`, which also takes functions one at a time); each
//! planned body is rewritten in one pass (`body.rs`) and the module is
//! re-assembled with wasm-encoder's `Reencode`, which copies everything
//! else and remaps function indices.
//!
//! What the rewriter adds, all under the reserved `__pathprof` prefix:
//! - a counter memory appended after all existing memories, exported as
//!   [`COUNTERS_EXPORT`], initialised by data segments appended after the
//!   existing ones ([`layout`]);
//! - when some plan traces: one import, `"__pathprof" "trace"` or
//!   `"__pathprof" "trace_flush"` by the [`TraceMode`] ([`trace`]), placed
//!   after the existing imports, which shifts every defined function's
//!   index by one (calls, `ref.func`, elements, exports, start, globals and
//!   the name section are remapped); buffered, also the trace memory after
//!   the counter memory and a global after all globals, both exported;
//! - when some plan uses a hash table: `__pathprof_hash_inc`, appended after
//!   all functions (so no index moves);
//! - function types appended after all existing types;
//! - the module-level registers of a `ModulePlan`: mutable globals, initially
//!   0, appended after all existing globals (so no global index moves) and
//!   exported as `__pathprof_g<i>`.
//!
//! Entry and exit actions are emitted with the code of the entry edge and of
//! the edges to EXIT that leave normally; call-site actions right before and
//! after the call instruction, which is copied as it is. A function with
//! such actions has no loop peeled.
//!
//! The program's own memories, tables, globals and exports are untouched.
//! Custom sections whose contents are code offsets (`metadata.code.*`, such
//! as branch hints) are dropped, as the offsets no longer hold; DWARF
//! sections are kept as they are and go stale.

pub mod accesses;
mod assemble;
mod body;
mod hollow;
pub mod inline;
pub mod layout;
mod lower;
pub(crate) mod peel;
mod stream;
pub mod trace;
mod types;

pub use layout::{
    read_counters, read_header, CounterHeader, CounterIdentity, CounterLayout, FunctionLayout,
    COUNTERS_EXPORT, HEADER_BYTES, LAYOUT_VERSION, MAGIC, MAX_PROBES,
};

pub use accesses::{trace_accesses, ACCESS_LOAD, ACCESS_STORE};
pub use hollow::{hollow, Holes, Hollowed};
pub use inline::{inline, InlineOutput, InlinePlan, InlineTree};
pub use peel::PEEL_MAX_BYTES;
pub use stream::{BodyValidators, Instrumenter, OutputCheck, Scanned};
pub use trace::{
    TraceMode, TRACE_BUFFER_BYTES, TRACE_BUFFER_EXPORT, TRACE_FLUSH, TRACE_MODULE, TRACE_NAME,
    TRACE_POS_EXPORT, TRACE_RECORD_BYTES,
};

use crate::cfg::{FunctionCfg, ModuleInfo};
use crate::error::{Result, WasmError};
use crate::module;
use pathprof_graph::NodeId;
use pathprof_techniques::{
    Action, ForEachMember, FunctionPlan, Interproc, ModulePlan, Otherwise, PathTable, PppEnd, Reg,
    Width,
};

/// An instrumented module and where its counters are.
#[derive(Clone, Debug)]
pub struct Instrumented {
    pub bytes: Vec<u8>,
    pub layout: CounterLayout,
    /// Per instrumented function, where its original blocks begin in `bytes`.
    pub code_map: Vec<CodeMap>,
}

/// Where the counters of an instrumented module written to a file are
/// ([`Instrumenter::finish_into`], [`instrument_into`]).
#[derive(Clone, Debug)]
pub struct Written {
    pub layout: CounterLayout,
    /// As [`Instrumented::code_map`], offsets from where the module begins.
    pub code_map: Vec<CodeMap>,
}

/// Where an instrumented function's original blocks begin in the output
/// module: `(module byte offset of the block's first instruction, block)`,
/// sorted. A wasm frame's offset (a trap, or a call in flight at an abrupt
/// exit) belongs to the last block that begins at or before it. Custom
/// sections are appended after the code, so these offsets do not move when
/// metadata is added.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodeMap {
    pub func_index: u32,
    pub blocks: Vec<(u32, NodeId)>,
}

impl CodeMap {
    /// The block executing at module offset `offset`, if it is in this function.
    pub fn block_at(&self, offset: u32) -> Option<NodeId> {
        let i = self.blocks.partition_point(|&(start, _)| start <= offset);
        Some(self.blocks.get(i.checked_sub(1)?)?.1)
    }
}

/// Applies `plans` (one slot per defined function, `None` = leave it alone)
/// to the module `bytes` that `info` describes, appends `custom_sections`,
/// and validates the result. Trace actions call the host per edge
/// ([`TraceMode::PerEdge`]); [`Instrumenter`] can buffer them. Every plan is checked before a body is
/// rewritten; the bodies are rewritten in parallel when that pays.
pub fn instrument(
    bytes: &[u8],
    info: &ModuleInfo,
    plans: &[Option<FunctionPlan>],
    custom_sections: &[(&str, &[u8])],
) -> Result<Instrumented> {
    instrument_checked(bytes, info, plans, custom_sections, OutputCheck::Validate)
}

/// [`instrument`], with the result validated or not as `check` says.
pub fn instrument_checked(
    bytes: &[u8],
    info: &ModuleInfo,
    plans: &[Option<FunctionPlan>],
    custom_sections: &[(&str, &[u8])],
    check: OutputCheck,
) -> Result<Instrumented> {
    let none = ModulePlan::default();
    instrument_module(
        bytes,
        info,
        &none,
        plans,
        custom_sections,
        check,
        CounterIdentity::default(),
    )
}

/// [`instrument_checked`] for a technique with a module-level part: the
/// plans may use the module registers `module.globals`, which become
/// mutable globals appended after the module's own (so no index moves),
/// initially 0 and exported as `__pathprof_g<i>`
/// ([`pathprof_techniques::global_export_name`]). `identity` goes into the
/// header of the counter memory.
pub fn instrument_module(
    bytes: &[u8],
    info: &ModuleInfo,
    module_plan: &ModulePlan,
    plans: &[Option<FunctionPlan>],
    custom_sections: &[(&str, &[u8])],
    check: OutputCheck,
    identity: CounterIdentity,
) -> Result<Instrumented> {
    check_info(bytes, info)?;
    let module = Scanned::new(bytes)?;
    let mut inst = rewrite_all(&module, info, module_plan, plans, check, None)?;
    inst.set_identity(identity);
    inst.finish(custom_sections)
}

/// [`instrument_checked`], with the module written to `out` and the new
/// bodies to `spill` (an empty file) as they are produced, so that the
/// whole output is never held in memory.
pub fn instrument_into(
    bytes: &[u8],
    info: &ModuleInfo,
    plans: &[Option<FunctionPlan>],
    custom_sections: &[(&str, &[u8])],
    check: OutputCheck,
    spill: std::fs::File,
    out: &mut std::fs::File,
) -> Result<Written> {
    check_info(bytes, info)?;
    let module = Scanned::new(bytes)?;
    let none = ModulePlan::default();
    rewrite_all(&module, info, &none, plans, check, Some(spill))?.finish_into(
        custom_sections,
        out,
        None,
    )
}

fn check_info(bytes: &[u8], info: &ModuleInfo) -> Result<()> {
    let actual = module::module_hash(bytes);
    if actual != info.module_hash {
        return Err(WasmError::InfoMismatch {
            expected: info.module_hash.clone(),
            actual,
        });
    }
    Ok(())
}

/// An instrumenter that took every function of `module` (described by
/// `info`) with its plan, the bodies rewritten in parallel when that pays.
fn rewrite_all<'a>(
    module: &'a Scanned<'a>,
    info: &ModuleInfo,
    module_plan: &ModulePlan,
    plans: &[Option<FunctionPlan>],
    check: OutputCheck,
    spill: Option<std::fs::File>,
) -> Result<Instrumenter<'a>> {
    // `info` was computed by `analyze`, which validated these very bytes.
    let (_, uses) = check_plans(info, plans, &module_plan.globals)?;
    let traces = uses.iter().any(|u| u.traces);
    let mut inst = Instrumenter::new(module, traces.then_some(TraceMode::PerEdge))?;
    inst.set_module_plan(module_plan);
    inst.set_output_check(check);
    if let Some(file) = spill {
        inst.spill_code_to(file);
    }
    let mut prepared = Vec::with_capacity(plans.len());
    for (slot, uses) in info.functions.iter().zip(plans).zip(uses) {
        prepared.push(match slot {
            (Ok(fcfg), Some(plan)) => Some(inst.prepare(fcfg, plan, uses)?),
            _ => None,
        });
    }
    let one = |i: usize| -> Result<(Vec<u8>, Option<BlockMarks>)> {
        let mut out = Vec::new();
        let marks = match (&info.functions[i], &plans[i], &prepared[i]) {
            (Ok(fcfg), Some(plan), Some(p)) => Some(inst.rewrite(i, fcfg, plan, p, &mut out)?),
            _ => {
                inst.copy(i, &mut out)?;
                None
            }
        };
        Ok((out, marks))
    };
    let rewritten = crate::par::map_chunked(&module.body_sizes(), one)?;
    inst.set_bodies(rewritten)?;
    Ok(inst)
}

/// The functions that have a plan, with their plans.
type Planned<'a> = Vec<(&'a FunctionCfg, &'a FunctionPlan)>;

/// The plans that apply, and per defined function what its plan uses, after
/// checking them all.
fn check_plans<'a>(
    info: &'a ModuleInfo,
    plans: &'a [Option<FunctionPlan>],
    globals: &[Width],
) -> Result<(Planned<'a>, Vec<PlanUse>)> {
    if plans.len() != info.functions.len() {
        return Err(WasmError::PlanCount {
            expected: info.functions.len(),
            got: plans.len(),
        });
    }
    let mut planned = Vec::new();
    let mut uses = vec![PlanUse::default(); plans.len()];
    for ((slot, plan), uses) in info.functions.iter().zip(plans).zip(&mut uses) {
        let Some(plan) = plan else { continue };
        match slot {
            Ok(fcfg) => {
                *uses = check_plan(fcfg, plan, globals)?;
                planned.push((fcfg, plan));
            }
            Err(u) => {
                return Err(WasmError::BadPlan {
                    func_index: u.func_index,
                    reason: format!("the function is unsupported ({})", u.reason),
                })
            }
        }
    }
    Ok((planned, uses))
}

/// The counter layout `instrument` will choose for these plans, without
/// rewriting anything (the layout depends only on the plans).
pub fn counter_layout(info: &ModuleInfo, plans: &[Option<FunctionPlan>]) -> Result<CounterLayout> {
    let (planned, _) = check_plans(info, plans, &[])?;
    CounterLayout::new(planned.iter().map(|(f, p)| layout_entry(f, p)))
}

/// What [`CounterLayout::new`] needs of one planned function.
fn layout_entry(f: &FunctionCfg, p: &FunctionPlan) -> (u32, PathTable, u32, u64) {
    let ppp_len = p.ppp.as_ref().map_or(0, |t| t.expected.len() as u64);
    (f.func_index, p.paths, p.slots, ppp_len)
}

/// What a plan uses, learnt while checking it.
#[derive(Default, Clone, Copy)]
pub(crate) struct PlanUse {
    /// Some action is `Trace`.
    pub traces: bool,
    /// Some action is `CountPath` (which needs a scratch local for an array table).
    pub count_path: bool,
    /// Number of actions.
    pub actions: usize,
    /// Some action reads or writes a module-level register.
    pub globals: bool,
    /// The plan has entry, exit or call-site actions.
    pub interproc: bool,
    /// Some action reads or writes the stack region (which needs the
    /// scratch local for addresses).
    pub stack: bool,
    /// Some action counts in another function's tables.
    pub foreign: bool,
}

/// Checks that a plan fits its function's CFG and the module-level
/// registers `globals`.
pub(crate) fn check_plan(
    fcfg: &FunctionCfg,
    plan: &FunctionPlan,
    globals: &[Width],
) -> Result<PlanUse> {
    let mut uses = PlanUse::default();
    let bad = |reason: String| {
        Err(WasmError::BadPlan {
            func_index: fcfg.func_index,
            reason,
        })
    };
    if plan.edges.len() != fcfg.cfg.num_edges() {
        return bad(format!(
            "{} edge entries for a CFG of {} edges",
            plan.edges.len(),
            fcfg.cfg.num_edges()
        ));
    }
    if let PathTable::Hash { capacity } = plan.paths {
        if !capacity.is_power_of_two() {
            return bad(format!("hash capacity {capacity} is not a power of two"));
        }
    }
    for (e, actions) in plan.edges.iter().enumerate() {
        if let Some(reason) = check_actions(plan, globals, actions, &mut uses) {
            return bad(format!("edge {e}: {reason}"));
        }
    }
    if let Some(inter) = &plan.interproc {
        if let Some(reason) = check_interproc(fcfg, plan, globals, inter, &mut uses) {
            return bad(reason);
        }
    }
    Ok(uses)
}

/// What is wrong with the entry, exit and call-site actions of a plan.
fn check_interproc(
    fcfg: &FunctionCfg,
    plan: &FunctionPlan,
    globals: &[Width],
    inter: &Interproc,
    uses: &mut PlanUse,
) -> Option<String> {
    uses.interproc = true;
    if let Some(r) = check_actions(plan, globals, &inter.entry, uses) {
        return Some(format!("entry: {r}"));
    }
    if let Some(r) = check_actions(plan, globals, &inter.exit, uses) {
        return Some(format!("exit: {r}"));
    }
    let mut last = None;
    for c in &inter.calls {
        let Some(site) = fcfg.calls.get(c.site as usize) else {
            return Some(format!(
                "call site {} is outside 0..{}",
                c.site,
                fcfg.calls.len()
            ));
        };
        if last.is_some_and(|l| l >= c.site) {
            return Some(format!("call site {} is not in increasing order", c.site));
        }
        last = Some(c.site);
        if c.instead_of_exit && !site.tail {
            return Some(format!(
                "call site {} is not a tail call: it cannot replace the exit actions",
                c.site
            ));
        }
        if site.tail && !c.after.is_empty() {
            return Some(format!(
                "call site {} is a tail call: nothing runs after it",
                c.site
            ));
        }
        for actions in [&c.before, &c.after] {
            if let Some(r) = check_actions(plan, globals, actions, uses) {
                return Some(format!("call site {}: {r}", c.site));
            }
        }
    }
    None
}

/// What is wrong with one list of actions of `plan`, if anything; records
/// what they use.
fn check_actions(
    plan: &FunctionPlan,
    globals: &[Width],
    actions: &[Action],
    uses: &mut PlanUse,
) -> Option<String> {
    uses.actions += actions.len();
    for action in actions {
        match action {
            Action::Trace { .. } => uses.traces = true,
            Action::CountPath { .. } | Action::CountPpp(_) => uses.count_path = true,
            Action::GlobalToLocal { .. } | Action::LocalToGlobal { .. } => uses.globals = true,
            Action::IfNonZero(branch) => {
                // Counted in `uses.actions` by the recursion.
                for arm in [&branch.then, &branch.otherwise] {
                    if let Some(fault) = check_actions(plan, globals, arm, uses) {
                        return Some(fault);
                    }
                }
            }
            Action::Push(_) => uses.stack = true,
            Action::In(inner) => {
                uses.count_path = true;
                uses.foreign = true;
                if !matches!(
                    inner.action,
                    Action::CountPath { .. } | Action::CountSlot { .. } | Action::CountPpp(_)
                ) {
                    return Some(
                        "only counting actions run against another function's tables".into(),
                    );
                }
            }
            Action::ForEachMember(each) => {
                uses.stack = true;
                if let Some(fault) = member_body_fault(each) {
                    return Some(fault);
                }
                if let Some(fault) = check_actions(plan, globals, &each.body, uses) {
                    return Some(fault);
                }
            }
            _ => {}
        }
        let fault = check_action(plan, globals, action);
        if fault.is_some() {
            return fault;
        }
    }
    None
}

/// What is wrong with one action of `plan`, if anything.
fn check_action(plan: &FunctionPlan, globals: &[Width], action: &Action) -> Option<String> {
    let undeclared = |reg: Reg| {
        (usize::from(reg) >= plan.registers.len())
            .then(|| format!("register {reg} is not declared"))
    };
    match *action {
        Action::Set { reg, .. } | Action::Add { reg, .. } => undeclared(reg),
        Action::CountPath { reg, .. } => undeclared(reg)
            .or_else(|| (plan.paths == PathTable::None).then(|| "no path table".into())),
        Action::CountPathConst { path } => match plan.paths {
            PathTable::None => Some("no path table".into()),
            PathTable::Array { len } if path >= len => {
                Some(format!("path {path} is outside 0..{len}"))
            }
            _ => None,
        },
        Action::CountSlot { index } if index >= plan.slots => {
            Some(format!("slot {index} is outside 0..{}", plan.slots))
        }
        Action::CountPpp(_) | Action::CountInteresting { .. } => check_ppp(plan, action),
        Action::GlobalToLocal { reg, global } | Action::LocalToGlobal { global, reg } => {
            undeclared(reg).or_else(|| match globals.get(global as usize) {
                None => Some(format!("module register {global} is not declared")),
                Some(&w) if w != plan.registers[reg as usize] => Some(format!(
                    "module register {global} and register {reg} differ in width"
                )),
                _ => None,
            })
        }
        Action::IfNonZero(ref branch) => undeclared(branch.reg),
        Action::TrapIfAbove { reg, .. } => undeclared(reg),
        Action::CaptureIndex { reg } => undeclared(reg).or_else(|| {
            (plan.registers[reg as usize] != Width::I32)
                .then(|| format!("register {reg} takes a table index: it must be i32"))
        }),
        Action::Push(ref p) => all_i64(plan, &[p.ptr, p.len, p.bl, p.ppp]),
        Action::ForEachMember(ref m) => all_i64(
            plan,
            &[m.ptr, m.len, m.index, m.acc.0, m.acc.1, m.tmp.0, m.tmp.1],
        ),
        Action::MulAdd(ref m) => undeclared(m.reg.max(m.src)).or_else(|| {
            (plan.registers[m.reg as usize] != plan.registers[m.src as usize])
                .then(|| format!("registers {} and {} differ in width", m.reg, m.src))
        }),
        _ => None,
    }
}

/// What keeps the body of a member loop from running out of line, in a
/// helper function that has only the member's value (`tmp`): an action
/// other than a count, or a register other than `tmp`.
fn member_body_fault(m: &ForEachMember) -> Option<String> {
    let reads_only_tmp = |action: &Action| match action {
        Action::CountPath { reg, .. } => [m.tmp.0, m.tmp.1].contains(reg),
        Action::CountPpp(end) => [end.bl, end.ppp]
            .iter()
            .all(|r| [m.tmp.0, m.tmp.1].contains(r)),
        Action::CountSlot { .. } => true,
        _ => false,
    };
    let fits = m.body.iter().all(|action| match action {
        Action::In(inner) => reads_only_tmp(&inner.action),
        other => reads_only_tmp(other),
    });
    (!fits).then(|| {
        "a member loop's body may only count, and read no register but the member's".into()
    })
}

/// Whether `regs` are not all declared i64 registers of `plan`.
fn all_i64(plan: &FunctionPlan, regs: &[Reg]) -> Option<String> {
    regs.iter()
        .find_map(|&r| match plan.registers.get(usize::from(r)) {
            None => Some(format!("register {r} is not declared")),
            Some(Width::I32) => Some(format!("register {r} is not i64")),
            Some(Width::I64) => None,
        })
}

/// What is wrong with a PPP action of `plan`, if anything.
fn check_ppp(plan: &FunctionPlan, action: &Action) -> Option<String> {
    let Some(table) = &plan.ppp else {
        return Some("no PPP table".into());
    };
    let len = table.expected.len() as u64;
    match *action {
        Action::CountInteresting { index } if index >= len => {
            Some(format!("PPP entry {index} is outside 0..{len}"))
        }
        Action::CountPpp(ref end) => {
            let PppEnd {
                bl, ppp, otherwise, ..
            } = **end;
            if usize::from(bl.max(ppp)) >= plan.registers.len() {
                return Some(format!("register {} is not declared", bl.max(ppp)));
            }
            match otherwise {
                Otherwise::Record if plan.paths == PathTable::None => Some("no path table".into()),
                Otherwise::Count { slot } if slot >= plan.slots => {
                    Some(format!("slot {slot} is outside 0..{}", plan.slots))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Where a rewritten body's original blocks begin, relative to the body.
type BlockMarks = Vec<(u32, NodeId)>;
