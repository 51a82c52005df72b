//! An instrumentation plan: what code runs on which CFG edge.
//!
//! Every profiling technique produces one [`FunctionPlan`] per function; the
//! rewriter in `pathprof-wasm` is the only code that turns plans into bytes.
//! Plans speak of path registers, a per-function path-counter table and
//! per-function slot counters; the rewriter chooses where they live (locals and
//! a counter memory of their own) and records the layout it chose.
//!
//! Interprocedural techniques (Melski & Reps 1999) also place actions at
//! call sites, at function entry and before function exits
//! ([`Interproc`]), and keep state across calls in module-level registers,
//! [`ModulePlan::globals`], which the rewriter makes mutable wasm globals.

use serde::{Deserialize, Serialize};

/// Width of a path register. Register arithmetic wraps: a path's final sum is
/// exact modulo 2^width, so `I32` is enough whenever every path number of the
/// function is below 2^32, even when partial sums on chords are not.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Width {
    I32,
    I64,
}

/// Index of a path register within a function's plan (0 for Ball-Larus; PPP
/// keeps a second register beside it).
pub type Reg = u8;

/// Index of a module-level register in [`ModulePlan::globals`]: the
/// rewriter keeps it in a mutable global, exported as
/// `__pathprof_g<index>` ([`global_export_name`]) so a host can read it.
pub type GlobalReg = u32;

/// One step executed when control crosses an edge. The steps on an edge run in
/// the order given; register values are unsigned path numbers, increments may
/// be negative, and all arithmetic wraps at the register's width.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// `r = value` (Fig. 8: register initialisation, pushed to first chords).
    Set { reg: Reg, value: i64 },
    /// `r += value` (a chord increment).
    Add { reg: Reg, value: i64 },
    /// `count[r + offset]++` in the function's path table (Fig. 8: counter
    /// update folded into the last chord; `offset` 0 is plain `count[r]++`).
    CountPath { reg: Reg, offset: i64 },
    /// `count[path]++` in the path table for a path number known statically
    /// (Fig. 8: a chord that both initialises and counts).
    CountPathConst { path: u64 },
    /// `slot[index]++` in the function's slot counters (self-loop counters of
    /// section 4.1, edge-profile chord counters).
    CountSlot { index: u32 },
    /// End of a path under preferential path profiling (Vaswani thesis
    /// 3.2.3): with `b = bl + bl_offset` (the path's Ball-Larus id) and
    /// `p = ppp + ppp_offset - table.min` (its PPP id, as an index), the path
    /// is interesting iff `p < table.len` and `table[p].bl == b`; then
    /// `table[p].count++`, else `otherwise` applies. `bl` and `ppp` may be the
    /// same register (a function whose PPP numbering is its Ball-Larus one).
    /// Boxed: its operands would make every action 32 bytes instead of 16,
    /// and a large function's actions are alive through its rewrite.
    CountPpp(Box<PppEnd>),
    /// `table[index].count++` in the function's PPP table: the end of a path
    /// whose identity, and so its classification, is known statically.
    CountInteresting { index: u64 },
    /// Test-only oracle hook: reports `(function index, edge)` to the host.
    Trace { edge: u32 },
    /// `r = global` (a module-level register read into a path register of
    /// the same width): how a callee takes over state its caller left.
    GlobalToLocal { reg: Reg, global: GlobalReg },
    /// `global = r` (same width).
    LocalToGlobal { global: GlobalReg, reg: Reg },
    /// `r += a * s + b` (wrapping), `s` another register or `r` itself:
    /// Melski & Reps' linear edge functions. Boxed to keep actions 16 bytes.
    MulAdd(Box<MulAdd>),
    /// `if r != 0 { then } else { otherwise }`: what an interprocedural
    /// technique does when a function's callers differ at run time (entered
    /// through an uncut call site, or afresh). Boxed to keep actions 16 bytes.
    IfNonZero(Box<IfNonZero>),
    /// `stack[ptr + 16 * len] = (bl, ppp); len += 1` in the module's stack
    /// region ([`ModulePlan::stack_bytes`]; all four registers i64): a
    /// segment joins a group of interprocedural PPP ([`crate::ippp`]).
    /// Boxed to keep actions 16 bytes.
    Push(Box<Push>),
    /// For each of the `len` members of the group stored at `ptr` in the
    /// stack region: `tmp = member + acc + extra` (Ball-Larus and PPP
    /// halves), then `body`; afterwards `len = 0`. `body` only counts
    /// (`CountPath`, `CountSlot`, `CountPpp`, or one of them `In` another
    /// function's tables) and reads no register but `tmp`: the rewriter
    /// runs the loop out of line, in a helper function shared by every
    /// loop with the same body (docs/decisions.md#member-loops-out-of-line).
    /// Boxed to keep actions 16 bytes.
    ForEachMember(Box<ForEachMember>),
    /// Traps (`unreachable`) if `reg`, unsigned, is above `limit`: the
    /// stack region of [`Action::Push`] overflowed.
    TrapIfAbove { reg: Reg, limit: u32 },
    /// The i32 on top of the operand stack into `reg` (an i32 register),
    /// the stack unchanged: the first action before a `call_indirect`, it
    /// takes the table index the call will use, so that later actions can
    /// dispatch on the slot (a static table's slot names its function).
    CaptureIndex { reg: Reg },
    /// A counting action (`CountPath`, `CountSlot` or `CountPpp`) against
    /// the tables of another function's plan: interprocedural PPP counts a
    /// segment in the tables of the function it started in, wherever it
    /// ends. That function's PPP table must have `min` 0 (the action's
    /// offsets say where ids start). Boxed to keep actions 16 bytes.
    In(Box<In>),
}

/// `then` if i32 register `index` holds `slot`, else `otherwise` (with
/// `scratch`, an i32 register, as `index - slot`): how a technique
/// dispatches on the table index an [`Action::CaptureIndex`] took.
pub fn if_slot(
    (index, scratch): (Reg, Reg),
    slot: u32,
    then: Vec<Action>,
    otherwise: Vec<Action>,
) -> Vec<Action> {
    vec![
        Action::Set {
            reg: scratch,
            value: -i64::from(slot),
        },
        Action::MulAdd(Box::new(MulAdd {
            reg: scratch,
            a: 1,
            src: index,
            b: 0,
        })),
        Action::IfNonZero(Box::new(IfNonZero {
            reg: scratch,
            then: otherwise,
            otherwise: then,
        })),
    ]
}

/// The operands of [`Action::In`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct In {
    /// The other function, by index in the module's function index space.
    pub func: u32,
    pub action: Action,
}

const _: () = assert!(std::mem::size_of::<Action>() == 16);

/// The operands of [`Action::MulAdd`]: `reg += a * src + b`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MulAdd {
    pub reg: Reg,
    pub a: i64,
    pub src: Reg,
    pub b: i64,
}

/// The operands of [`Action::Push`]: `(bl, ppp)` stored as member `len`
/// of the group at byte `ptr` of the stack region.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Push {
    pub ptr: Reg,
    pub len: Reg,
    pub bl: Reg,
    pub ppp: Reg,
}

/// The operands of [`Action::ForEachMember`]. `index` is a scratch
/// register for the loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForEachMember {
    pub ptr: Reg,
    pub len: Reg,
    pub index: Reg,
    /// `(Ball-Larus, PPP)` accumulators added to every member.
    pub acc: (Reg, Reg),
    /// `(Ball-Larus, PPP)` constants added to every member too.
    pub extra: (i64, i64),
    /// Where each member's value goes before `body` runs.
    pub tmp: (Reg, Reg),
    pub body: Vec<Action>,
}

/// The operands of [`Action::IfNonZero`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IfNonZero {
    pub reg: Reg,
    pub then: Vec<Action>,
    pub otherwise: Vec<Action>,
}

/// The operands of [`Action::CountPpp`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PppEnd {
    pub bl: Reg,
    pub bl_offset: i64,
    pub ppp: Reg,
    pub ppp_offset: i64,
    pub otherwise: Otherwise,
}

/// What [`Action::CountPpp`] does with a path that is not interesting.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Otherwise {
    /// Count its Ball-Larus id in the path table (an array or hash table), so
    /// it can be regenerated.
    Record,
    /// `slot[slot]++`: one counter for all uninteresting paths.
    Count { slot: u32 },
    /// Nothing.
    Ignore,
}

/// The table of a function's interesting paths, indexed by PPP id - `min`:
/// each entry holds the Ball-Larus id of the interesting path with that PPP
/// id ([`PPP_HOLE`] where none has it) and a 64-bit count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppTable {
    pub min: i64,
    pub expected: Vec<u64>,
}

/// The Ball-Larus id of a PPP table entry no interesting path has. No path
/// has it either: Ball-Larus ids are below NumPaths(ENTRY) <= 2^64 - 1.
pub const PPP_HOLE: u64 = u64::MAX;

/// Where a function's path counters live.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathTable {
    /// No path counters.
    None,
    /// One 64-bit counter per path number in `0..len`.
    Array { len: u64 },
    /// An open-addressing hash table of `capacity` entries (a power of two),
    /// keyed by path number (section 5.3). A full table drops the count and
    /// counts it as lost; it never traps.
    Hash { capacity: u32 },
}

/// Bytes of a hash table's header in the counter memory (mask, limit,
/// lost count, last key and entry, overflow link).
pub const HASH_HEADER_BYTES: u64 = 32;
/// Bytes of a hash table entry (key and count).
pub const HASH_ENTRY_BYTES: u64 = 16;

impl PathTable {
    /// Its bytes in the counter memory.
    pub fn bytes(self) -> u128 {
        match self {
            PathTable::None => 0,
            PathTable::Array { len } => 8 * u128::from(len),
            PathTable::Hash { capacity } => {
                u128::from(HASH_HEADER_BYTES) + u128::from(HASH_ENTRY_BYTES) * u128::from(capacity)
            }
        }
    }
}

/// The plan for one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionPlan {
    /// Path registers used by the actions, indexed by [`Reg`].
    pub registers: Vec<Width>,
    pub paths: PathTable,
    /// Number of 64-bit slot counters.
    pub slots: u32,
    /// The interesting-path table of preferential path profiling.
    #[serde(default)]
    pub ppp: Option<PppTable>,
    /// Actions per CFG edge, indexed by `EdgeId::index()`; every edge has an
    /// entry, most of them empty.
    pub edges: EdgeActions,
    /// Actions at function entry, exits and call sites; `None` for the
    /// intraprocedural techniques.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interproc: Option<Box<Interproc>>,
}

/// The actions of a function that are not on one CFG edge.
///
/// - `entry` runs when the function is entered, before the actions of its
///   entry edge (ENTRY -> first block), and not when a path begins at a
///   catch target.
/// - `exit` runs when the function returns normally: on every edge to EXIT
///   taken by `return`, by falling off the end or by a branch to the
///   function's label, after that edge's actions; and before a tail call
///   (`return_call*`), whose callee then runs with this frame gone. It does
///   not run at `throw`/`throw_ref`, at `unreachable` or any other trap, or
///   when an exception from a callee unwinds through the function: those
///   leave the function abnormally.
/// - `calls[i]` are the actions of call site `calls[i].site` (its index in
///   the CFG's call sites, code order): `before` runs right before the call
///   instruction, after the edge actions placed at the same instruction (a
///   tail call's edge to EXIT, the entry edge); `after` runs when the call
///   returns normally, not when it throws or traps, and a tail call may
///   have none. A tail call's `before` may replace the function's `exit`
///   there ([`CallActions::instead_of_exit`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interproc {
    pub entry: Vec<Action>,
    pub exit: Vec<Action>,
    /// Sorted by site, each site at most once.
    pub calls: Vec<CallActions>,
}

/// The actions of one call site.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallActions {
    /// Index of the call site among the function's call sites.
    pub site: u32,
    pub before: Vec<Action>,
    pub after: Vec<Action>,
    /// Only for a tail call: the function's `exit` actions do not run
    /// before it, `before` does what the technique wants there instead
    /// (an interprocedural path ends at a tail call into a profiled
    /// function rather than returning through EXIT).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub instead_of_exit: bool,
}

/// Puts `before` ahead of the actions before each call of `sites` (wasm
/// call sites, in order) and `after` ahead of those after it, adding the
/// call's [`CallActions`] to `calls` (sorted by site) where it has none.
pub fn around_calls(
    calls: &mut Vec<CallActions>,
    sites: &[u32],
    before: &[Action],
    after: &[Action],
) {
    for &site in sites {
        let at = match calls.binary_search_by_key(&site, |c| c.site) {
            Ok(at) => at,
            Err(at) => {
                let none = CallActions {
                    site,
                    ..Default::default()
                };
                calls.insert(at, none);
                at
            }
        };
        let c = &mut calls[at];
        c.before.splice(0..0, before.iter().cloned());
        c.after.splice(0..0, after.iter().cloned());
    }
}

/// What a technique decides for the whole module before it plans any
/// function: the module-level registers every function's actions may use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePlan {
    /// Per [`GlobalReg`]: its width. Each becomes a mutable global,
    /// initially 0, exported as [`global_export_name`].
    pub globals: Vec<Width>,
    /// Bytes of a stack region in the counter memory, before every
    /// function's counters, for [`Action::Push`] (0: none).
    #[serde(default)]
    pub stack_bytes: u32,
}

/// The export name of module-level register `g`: `__pathprof_g<g>`.
pub fn global_export_name(g: GlobalReg) -> String {
    format!("{GLOBAL_EXPORT_PREFIX}{g}")
}

/// What the export names of the module-level registers begin with.
pub const GLOBAL_EXPORT_PREFIX: &str = "__pathprof_g";

/// The actions of every edge of a function, in one vector: edge `e`'s are
/// `self[e]`. A vector per edge cost an allocation for each edge with code,
/// and 24 bytes for each without.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeActions {
    /// Edge `e`'s actions are `actions[start[e]..start[e + 1]]`.
    start: Vec<u32>,
    actions: Vec<Action>,
}

impl EdgeActions {
    /// No action on any of `num_edges` edges.
    pub fn empty(num_edges: usize) -> Self {
        EdgeActions {
            start: vec![0; num_edges + 1],
            actions: Vec::new(),
        }
    }

    /// The actions of `num_edges` edges, edge by edge in order: `f(e, out)`
    /// pushes edge `e`'s onto `out`.
    pub fn from_fn(num_edges: usize, f: impl FnMut(usize, &mut Vec<Action>)) -> Self {
        Self::from_fn_sized(num_edges, 0, f)
    }

    /// As [`EdgeActions::from_fn`], for `actions` actions in all (a hint):
    /// a large function's list is allocated once, not grown by doubling
    /// while its planning data are all alive.
    pub fn from_fn_sized(
        num_edges: usize,
        actions: usize,
        mut f: impl FnMut(usize, &mut Vec<Action>),
    ) -> Self {
        let built: Result<Self, std::convert::Infallible> =
            Self::try_from_fn_sized(num_edges, actions, |e, out| {
                f(e, out);
                Ok(())
            });
        match built {
            Ok(actions) => actions,
            Err(never) => match never {},
        }
    }

    /// As [`EdgeActions::from_fn`], stopping at the first error.
    pub fn try_from_fn<E>(
        num_edges: usize,
        f: impl FnMut(usize, &mut Vec<Action>) -> Result<(), E>,
    ) -> Result<Self, E> {
        Self::try_from_fn_sized(num_edges, 0, f)
    }

    fn try_from_fn_sized<E>(
        num_edges: usize,
        actions: usize,
        mut f: impl FnMut(usize, &mut Vec<Action>) -> Result<(), E>,
    ) -> Result<Self, E> {
        let mut start = Vec::with_capacity(num_edges + 1);
        let mut actions = Vec::with_capacity(actions);
        start.push(0);
        for e in 0..num_edges {
            f(e, &mut actions)?;
            start.push(u32::try_from(actions.len()).expect("fewer than 2^32 actions"));
        }
        Ok(EdgeActions { start, actions })
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The actions of edge `e`, if the function has that edge.
    pub fn get(&self, e: usize) -> Option<&[Action]> {
        let (&from, &to) = (self.start.get(e)?, self.start.get(e + 1)?);
        Some(&self.actions[from as usize..to as usize])
    }

    /// Every edge's actions, in edge order.
    pub fn iter(&self) -> impl Iterator<Item = &[Action]> + '_ {
        self.start
            .windows(2)
            .map(|w| &self.actions[w[0] as usize..w[1] as usize])
    }

    /// Frees the room the vectors grew beyond their contents.
    pub fn shrink_to_fit(&mut self) {
        self.start.shrink_to_fit();
        self.actions.shrink_to_fit();
    }
}

impl std::ops::Index<usize> for EdgeActions {
    type Output = [Action];
    fn index(&self, e: usize) -> &[Action] {
        self.get(e).expect("edge index out of range")
    }
}

/// One list per edge, as a plan written by hand (in tests) gives them.
impl From<Vec<Vec<Action>>> for EdgeActions {
    fn from(lists: Vec<Vec<Action>>) -> Self {
        EdgeActions::from_fn(lists.len(), |e, out| out.extend_from_slice(&lists[e]))
    }
}

impl FunctionPlan {
    /// A plan that does nothing on a graph with `num_edges` edges.
    pub fn empty(num_edges: usize) -> Self {
        FunctionPlan {
            registers: Vec::new(),
            paths: PathTable::None,
            slots: 0,
            ppp: None,
            edges: EdgeActions::empty(num_edges),
            interproc: None,
        }
    }

    /// Number of edges that carry at least one action.
    pub fn instrumented_edges(&self) -> usize {
        self.edges.iter().filter(|a| !a.is_empty()).count()
    }
}

/// Raw counters read back from a run, for one function, before a technique
/// decodes them: the non-zero path counters, the slot counters and the counts
/// a full hash table had to drop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawCounters {
    /// `(path number, count)`, sorted by path number, counts non-zero.
    pub paths: Vec<(u64, u64)>,
    pub slots: Vec<u64>,
    pub lost: u64,
}

impl RawCounters {
    /// Whether the function counted nothing (a sparse profile leaves it out).
    pub fn is_zero(&self) -> bool {
        self.paths.is_empty() && self.slots.iter().all(|&c| c == 0) && self.lost == 0
    }
}
