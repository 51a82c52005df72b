//! Path ends at constant addresses in peeled loops (a departure from the
//! papers; docs/decisions.md#peeled-loops).
//!
//! In Ball-Larus profiling (section 4, Fig. 8) a loop's backedge ends a path
//! with `count[r + c]++` and starts the next one at the loop head. The
//! address is dynamic even in a loop whose body has one way around, because
//! the first iteration's path begins before the loop (at the function's
//! entry or another loop's head) and so arrives with another `r`. A rewriter
//! that emits such a loop twice, the first iteration apart (the *peeled
//! copy*, with the plan's actions unchanged) and the later iterations in the
//! loop proper, knows every register's value at the head of the loop proper:
//! it is what the backedges' actions set. [`specialize`] propagates those
//! values through the loop body and rewrites the actions of the loop
//! proper's edges:
//!
//! - `count[r + c]++` with `r` known becomes a count at a constant address
//!   (`CountPathConst`), and the end of a PPP path with both registers known
//!   is classified when planning (`CountInteresting`, the uninteresting
//!   counter, or `CountPathConst`);
//! - `r = v` where `r` is known to be `v` already is dropped.
//!
//! Every increment is kept, so a register holds its exact value wherever it
//! is read (after a merge of two values, on the loop's exits); only the
//! reads become static. The counts are the plan's, path for path, and a run
//! that ends in the middle of an iteration leaves them as exact as the
//! unpeeled code does: nothing is counted ahead or corrected later.
//!
//! This module knows nothing of wasm: the caller says which nodes form the
//! loop body, which edges are its backedges, and emits the two copies.

use crate::plan::{Action, FunctionPlan, Otherwise, PathTable, PppEnd, Width};
use pathprof_graph::{Cfg, EdgeId, NodeId};

/// A loop as its rewriter sees it.
pub struct LoopBody<'a> {
    /// The loop head: where the backedges go.
    pub head: NodeId,
    /// The nodes of the loop body, `head` included: every node whose code
    /// is emitted twice.
    pub nodes: &'a [NodeId],
    /// The edges from the body to `head` (the loop label's branches).
    pub backedges: &'a [EdgeId],
}

/// The actions of the loop proper's edges that differ from the plan's,
/// sorted by edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Specialized {
    pub edges: Vec<(EdgeId, Vec<Action>)>,
}

impl Specialized {
    /// The actions of edge `e` in the loop proper, if they differ.
    pub fn get(&self, e: EdgeId) -> Option<&[Action]> {
        self.edges
            .binary_search_by_key(&e, |(edge, _)| *edge)
            .ok()
            .map(|i| &self.edges[i].1[..])
    }
}

/// A register's value at a point of the loop proper: known (at the
/// register's width, as an unsigned number) or not.
type Val = Option<u64>;

/// Registers a peeled plan may have: Ball-Larus plans have one, PPP plans
/// two. The registers' values are kept inline, so the propagation through
/// a loop body allocates nothing per node or edge.
const MAX_REGS: usize = 2;

/// Every register's value at a point ([`MAX_REGS`] slots, the plan's
/// registers first).
type State = [Val; MAX_REGS];

/// The loop proper's actions, or `None` when peeling would not move any
/// backedge's count to a constant address (or the body is not a DAG once
/// its backedges are removed).
pub fn specialize(cfg: &Cfg, plan: &FunctionPlan, body: &LoopBody<'_>) -> Option<Specialized> {
    if plan.registers.len() > MAX_REGS {
        return None;
    }
    let member = Members::new(body.nodes);
    let is_back = |e: EdgeId| body.backedges.contains(&e);
    let internal = |e: EdgeId| member.of(cfg.src(e)).is_some() && !is_back(e);
    let order = topological(cfg, body, &member, &internal)?;
    let mut states: Vec<Option<State>> = vec![None; body.nodes.len()];
    // At the head of the loop proper, registers hold what every backedge
    // leaves in them, from any value before it.
    states[member.of(body.head)?] = body
        .backedges
        .iter()
        .map(|&e| transfer(plan, [None; MAX_REGS], &plan.edges[e.index()]))
        .reduce(meet);
    for &n in &order {
        if n == body.head {
            continue;
        }
        let mut state: Option<State> = None;
        for &e in cfg.preds(n) {
            let incoming = if internal(e) {
                match member.of(cfg.src(e)).and_then(|i| states[i]) {
                    Some(s) => transfer(plan, s, &plan.edges[e.index()]),
                    None => continue, // not reached in the loop proper
                }
            } else {
                [None; MAX_REGS] // from outside the body: a catch clause
            };
            state = Some(match state {
                Some(s) => meet(s, incoming),
                None => incoming,
            });
        }
        states[member.of(n)?] = state;
    }
    let mut edges = Vec::new();
    let mut gained = false;
    let mut new = Vec::new();
    for &n in body.nodes {
        let Some(state) = member.of(n).and_then(|i| states[i]) else {
            continue;
        };
        for &e in cfg.succs(n) {
            if member.of(cfg.dst(e)).is_none() || (cfg.dst(e) == body.head && !is_back(e)) {
                continue; // leaves the body: emitted once, unchanged
            }
            let old = &plan.edges[e.index()];
            rewrite(plan, state, old, &mut new);
            if new != old {
                gained |= is_back(e) && counts(old) > counts(&new);
                edges.push((e, new.clone()));
            }
        }
    }
    edges.sort_unstable_by_key(|(e, _)| *e);
    gained.then_some(Specialized { edges })
}

/// The body's nodes in an order where every internal edge goes forward,
/// the head first; `None` if there is none.
fn topological(
    cfg: &Cfg,
    body: &LoopBody<'_>,
    member: &Members,
    internal: &impl Fn(EdgeId) -> bool,
) -> Option<Vec<NodeId>> {
    let mut indegree = vec![0u32; body.nodes.len()];
    for (i, &n) in body.nodes.iter().enumerate() {
        indegree[i] = cfg.preds(n).iter().filter(|&&e| internal(e)).count() as u32;
    }
    if indegree[member.of(body.head)?] != 0 {
        return None;
    }
    let mut order = Vec::with_capacity(body.nodes.len());
    let mut ready: Vec<NodeId> = body
        .nodes
        .iter()
        .zip(&indegree)
        .filter(|(_, &k)| k == 0)
        .map(|(&n, _)| n)
        .collect();
    while let Some(n) = ready.pop() {
        order.push(n);
        for &e in cfg.succs(n) {
            let d = cfg.dst(e);
            if let (true, Some(i)) = (internal(e), member.of(d)) {
                let k = &mut indegree[i];
                *k -= 1;
                if *k == 0 {
                    ready.push(d);
                }
            }
        }
    }
    (order.len() == body.nodes.len()).then_some(order)
}

/// Each body node's position in `body.nodes`, in a table that spans the
/// body's node ids only (a function has many loops, each a few blocks, and
/// a table per loop over all its nodes made peeling quadratic).
struct Members {
    first: usize,
    position: Vec<u32>,
}

impl Members {
    fn new(nodes: &[NodeId]) -> Members {
        let first = nodes.iter().map(|n| n.index()).min().unwrap_or(0);
        let last = nodes.iter().map(|n| n.index()).max().unwrap_or(0);
        let mut position = vec![u32::MAX; last + 1 - first];
        for (i, n) in nodes.iter().enumerate() {
            position[n.index() - first] = i as u32;
        }
        Members { first, position }
    }

    fn of(&self, n: NodeId) -> Option<usize> {
        let p = *self.position.get(n.index().checked_sub(self.first)?)?;
        (p != u32::MAX).then_some(p as usize)
    }
}

fn meet(a: State, b: State) -> State {
    std::array::from_fn(|i| if a[i] == b[i] { a[i] } else { None })
}

/// `value` at `width`, as an unsigned number.
fn at_width(width: Width, value: u64) -> u64 {
    match width {
        Width::I32 => value & 0xFFFF_FFFF,
        Width::I64 => value,
    }
}

/// `r + offset` at `r`'s width, when `r` is known.
fn sum(plan: &FunctionPlan, state: &[Val], reg: u8, offset: i64) -> Option<u64> {
    let width = plan.registers[reg as usize];
    state[reg as usize].map(|k| at_width(width, k.wrapping_add(offset as u64)))
}

/// The registers after `actions`.
fn transfer(plan: &FunctionPlan, mut state: State, actions: &[Action]) -> State {
    for a in actions {
        match *a {
            Action::Set { reg, value } => {
                state[reg as usize] = Some(at_width(plan.registers[reg as usize], value as u64));
            }
            Action::Add { reg, value } => state[reg as usize] = sum(plan, &state, reg, value),
            _ => clobber(&mut state, a),
        }
    }
    state
}

/// Forgets the register an action sets to a value not known statically.
fn clobber(state: &mut State, a: &Action) {
    let reg = match a {
        Action::GlobalToLocal { reg, .. } => *reg,
        Action::MulAdd(m) => m.reg,
        _ => return,
    };
    if let Some(v) = state.get_mut(reg as usize) {
        *v = None;
    }
}

/// `actions` with the registers' values in `state` before them, into `out`
/// (one buffer for every edge: most edges are unchanged and cost no vector).
fn rewrite(plan: &FunctionPlan, mut state: State, actions: &[Action], out: &mut Vec<Action>) {
    out.clear();
    for a in actions {
        match *a {
            Action::Set { reg, value } => {
                let v = at_width(plan.registers[reg as usize], value as u64);
                if state[reg as usize] != Some(v) {
                    out.push(a.clone());
                }
                state[reg as usize] = Some(v);
            }
            Action::Add { reg, value } => {
                out.push(a.clone());
                state[reg as usize] = sum(plan, &state, reg, value);
            }
            Action::CountPath { reg, offset } => match sum(plan, &state, reg, offset) {
                Some(path) if constant_path(plan, path) => {
                    out.push(Action::CountPathConst { path })
                }
                _ => out.push(a.clone()),
            },
            Action::CountPpp(_) => match classify(plan, &state, a) {
                Some(static_end) => out.extend(static_end),
                None => out.push(a.clone()),
            },
            _ => {
                clobber(&mut state, a);
                out.push(a.clone());
            }
        }
    }
}

/// Whether `count[path]++` can be a constant-address count: the dynamic
/// code counts an array index out of range, or the one key a hash table
/// cannot hold, in ways a constant count would not reproduce.
fn constant_path(plan: &FunctionPlan, path: u64) -> bool {
    match plan.paths {
        PathTable::Array { len } => path < len,
        PathTable::Hash { .. } => path != u64::MAX,
        PathTable::None => false,
    }
}

/// The end of a PPP path (see [`Action::CountPpp`]) with both registers
/// known, decided now: at most one action.
fn classify(plan: &FunctionPlan, state: &[Val], a: &Action) -> Option<Option<Action>> {
    let Action::CountPpp(ref end) = *a else {
        return None;
    };
    let PppEnd {
        bl,
        bl_offset,
        ppp,
        ppp_offset,
        otherwise,
    } = **end;
    let table = plan.ppp.as_ref()?;
    let b = sum(plan, state, bl, bl_offset)?;
    let index = sum(plan, state, ppp, ppp_offset.wrapping_sub(table.min))?;
    let len = at_width(plan.registers[ppp as usize], table.expected.len() as u64);
    if index < len && table.expected.get(index as usize) == Some(&b) {
        return Some(Some(Action::CountInteresting { index }));
    }
    match otherwise {
        Otherwise::Record if constant_path(plan, b) => {
            Some(Some(Action::CountPathConst { path: b }))
        }
        Otherwise::Record => None,
        Otherwise::Count { slot } => Some(Some(Action::CountSlot { index: slot })),
        Otherwise::Ignore => Some(None),
    }
}

/// The dynamic counts among `actions`.
fn counts(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::CountPath { .. } | Action::CountPpp(_)))
        .count()
}

#[cfg(test)]
mod tests {
    //! Worked examples, the actions written by hand (the numbers are those
    //! of a Ball-Larus numbering of each graph, but nothing here plans).
    use super::*;
    use crate::plan::{EdgeActions, PppTable};

    /// ENTRY -> A -> H, H -> B, B -> H (backedge), B -> X -> EXIT: a loop
    /// whose body has one way around. Returns the graph and edges A->H,
    /// H->B, B->H, B->X, X->EXIT.
    fn loop_graph() -> (Cfg, [EdgeId; 5], [NodeId; 2]) {
        let mut cfg = Cfg::new();
        let (a, h, b, x) = (
            cfg.add_node(),
            cfg.add_node(),
            cfg.add_node(),
            cfg.add_node(),
        );
        cfg.add_edge(Cfg::ENTRY, a);
        let ah = cfg.add_edge(a, h);
        let hb = cfg.add_edge(h, b);
        let bh = cfg.add_edge(b, h);
        let bx = cfg.add_edge(b, x);
        let xe = cfg.add_edge(x, Cfg::EXIT);
        (cfg, [ah, hb, bh, bx, xe], [h, b])
    }

    fn plan(
        cfg: &Cfg,
        width: Width,
        paths: PathTable,
        on: &[(EdgeId, Vec<Action>)],
    ) -> FunctionPlan {
        let mut edges = vec![Vec::new(); cfg.num_edges()];
        for (e, a) in on {
            edges[e.index()] = a.clone();
        }
        FunctionPlan {
            registers: vec![width],
            paths,
            slots: 1,
            ppp: None,
            edges: EdgeActions::from(edges),
            interproc: None,
        }
    }

    #[test]
    fn the_iteration_path_is_counted_at_a_constant_address() {
        let (cfg, [ah, _, bh, bx, xe], [h, b]) = loop_graph();
        // Paths: entry..B->H is 4 + 2 = 6, H..B->H is 0 + 2 = 2; exits add 1.
        let p = plan(
            &cfg,
            Width::I32,
            PathTable::Array { len: 8 },
            &[
                (ah, vec![Action::Set { reg: 0, value: 4 }]),
                (
                    bh,
                    vec![
                        Action::CountPath { reg: 0, offset: 2 },
                        Action::Set { reg: 0, value: 0 },
                    ],
                ),
                (bx, vec![Action::Add { reg: 0, value: 1 }]),
                (xe, vec![Action::CountPath { reg: 0, offset: 0 }]),
            ],
        );
        let body = LoopBody {
            head: h,
            nodes: &[h, b],
            backedges: &[bh],
        };
        let s = specialize(&cfg, &p, &body).expect("peeled");
        // The count is constant and the reset, already done, is dropped;
        // the exit keeps its increment (the exit's own path continues).
        assert_eq!(
            s.edges,
            vec![(bh, vec![Action::CountPathConst { path: 2 }])]
        );
        assert_eq!(s.get(bx), None);
    }

    #[test]
    fn i32_registers_wrap_and_out_of_range_counts_stay_dynamic() {
        let (cfg, [_, hb, bh, ..], [h, b]) = loop_graph();
        let count = Action::CountPath { reg: 0, offset: 3 };
        let on = |len| {
            plan(
                &cfg,
                Width::I32,
                PathTable::Array { len },
                &[
                    (hb, vec![Action::Add { reg: 0, value: -1 }]),
                    (bh, vec![count.clone(), Action::Set { reg: 0, value: 0 }]),
                ],
            )
        };
        let body = LoopBody {
            head: h,
            nodes: &[h, b],
            backedges: &[bh],
        };
        // 0 - 1 + 3 at 32 bits is 2; the register holds 2^32 - 1 before
        // the reset, which stays.
        let s = specialize(&cfg, &on(3), &body).expect("peeled");
        let reset = Action::Set { reg: 0, value: 0 };
        assert_eq!(
            s.get(bh),
            Some(&[Action::CountPathConst { path: 2 }, reset][..])
        );
        // With two paths, 2 is out of the array: nothing to gain.
        assert_eq!(specialize(&cfg, &on(2), &body), None);
    }

    #[test]
    fn a_merge_of_two_values_keeps_the_count_dynamic() {
        // H -> B1 -> J, H -> B2 -> J, J -> H: two ways around.
        let mut cfg = Cfg::new();
        let (h, b1, b2, j) = (
            cfg.add_node(),
            cfg.add_node(),
            cfg.add_node(),
            cfg.add_node(),
        );
        cfg.add_edge(Cfg::ENTRY, h);
        cfg.add_edge(h, b1);
        let hb2 = cfg.add_edge(h, b2);
        cfg.add_edge(b1, j);
        cfg.add_edge(b2, j);
        let jh = cfg.add_edge(j, h);
        cfg.add_edge(j, Cfg::EXIT);
        let p = plan(
            &cfg,
            Width::I64,
            PathTable::Array { len: 16 },
            &[
                (hb2, vec![Action::Add { reg: 0, value: 1 }]),
                (
                    jh,
                    vec![
                        Action::CountPath { reg: 0, offset: 0 },
                        Action::Set { reg: 0, value: 0 },
                    ],
                ),
            ],
        );
        let body = LoopBody {
            head: h,
            nodes: &[h, b1, b2, j],
            backedges: &[jh],
        };
        assert_eq!(specialize(&cfg, &p, &body), None);
    }

    #[test]
    fn ppp_path_ends_are_classified_when_planning() {
        let (cfg, [_, _, bh, ..], [h, b]) = loop_graph();
        let end = |otherwise| {
            Action::CountPpp(Box::new(PppEnd {
                bl: 0,
                bl_offset: 2,
                ppp: 1,
                ppp_offset: 5,
                otherwise,
            }))
        };
        let on = |expected: Vec<u64>, otherwise| FunctionPlan {
            registers: vec![Width::I64, Width::I32],
            paths: PathTable::Hash { capacity: 64 },
            slots: 1,
            ppp: Some(PppTable { min: 4, expected }),
            edges: EdgeActions::from({
                let mut e = vec![Vec::new(); cfg.num_edges()];
                e[bh.index()] = vec![
                    end(otherwise),
                    Action::Set { reg: 0, value: 0 },
                    Action::Set { reg: 1, value: 0 },
                ];
                e
            }),
            interproc: None,
        };
        let body = LoopBody {
            head: h,
            nodes: &[h, b],
            backedges: &[bh],
        };
        // PPP index 0 + 5 - 4 = 1, whose entry holds Ball-Larus id 0 + 2.
        let s = specialize(&cfg, &on(vec![9, 2], Otherwise::Ignore), &body).unwrap();
        assert_eq!(
            s.get(bh),
            Some(&[Action::CountInteresting { index: 1 }][..])
        );
        // Another path has that PPP id: the path is not interesting.
        let s = specialize(&cfg, &on(vec![9, 3], Otherwise::Count { slot: 0 }), &body).unwrap();
        assert_eq!(s.get(bh), Some(&[Action::CountSlot { index: 0 }][..]));
        let s = specialize(&cfg, &on(vec![9, 3], Otherwise::Record), &body).unwrap();
        assert_eq!(s.get(bh), Some(&[Action::CountPathConst { path: 2 }][..]));
        let s = specialize(&cfg, &on(vec![9], Otherwise::Ignore), &body).unwrap();
        assert_eq!(s.get(bh), Some(&[][..]));
    }
}
