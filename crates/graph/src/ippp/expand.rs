//! The IPPP numbering (thesis 3.4.4-3.4.5): per function, the *expanded
//! graph* that selective inlining of the call sites interesting IPS pass
//! would make, its Ball-Larus numbering, the interesting IPS' Ball-Larus
//! ids, and their PPP numbering ([`crate::ppp`]).
//!
//! The expanded graph of a function `f` is a DAG made of *copies* of
//! call-cut DAGs ([`crate::ippp::subpath`]): the *root* copy is `f`'s,
//! and each call site an interesting IPS starting in `f` passes in a copy
//! (with the callee it goes to) gets a copy of the callee's DAG, its
//! *context* the sites from the root (at most `k` deep, so recursion is
//! bounded). In a callee's copy, its ENTRY is entered from the call
//! vertex `c` (an edge `c -> ENTRY'` beside `c`'s dummy to EXIT, which
//! stays for the calls no interesting IPS takes), its EXIT goes on to the
//! caller's return site `r` (`EXIT' -> r`), its dummy edges to EXIT
//! (backedges, calls, dead ends) end the path at the expanded graph's EXIT,
//! and its dummy edges from ENTRY (loop heads, return sites) are dropped: a
//! segment enters a callee only at its entry. So a depth-k IPS starting in
//! `f` whose calls were all inlined is an ENTRY->EXIT path of `f`'s
//! expanded graph.
//!
//! 3.4.5 avoids the copies: a callee's edge carries one increment per
//! context (here per copy: [`Expanded::increment`]) and the caller passes
//! the copy it is in; [`crate::ippp::walk`] runs so.
//!
//! Truncation (3.4.4 step 5: "ensure that edges traversed by IPSs ... are
//! not truncated"): when the expanded graph has more paths than 64 bits
//! number, [`expand_all_fitting`] builds it again with every edge of a
//! callee's copy that no interesting IPS takes in that copy *cut*: it goes
//! to the graph's EXIT instead of on ([`Expanded::is_cut`]). An IPS that
//! takes a cut edge ends there, counted as *truncated*; the interesting
//! ones never do, so they stay exact.
//!
//! Departures from the thesis:
//! - Truncation cuts only in callee copies, never in the start function's
//!   own (root) copy, whose paths are those of intraprocedural profiling;
//!   and a truncated IPS is not restarted after the cut (Ball-Larus
//!   truncation would start a new path there): the rest of it, which no
//!   interesting IPS can be, is not followed. Where even the truncated
//!   graph has too many paths, interesting IPS are left out, hottest kept
//!   first.
//! - PPP is [`crate::ppp::choose`]: Fig. 3.10, or Ball-Larus where that is
//!   more compact.

use std::collections::BTreeMap;

use crate::cfg::{Cfg, NodeId};
use crate::dag::{Dag, DagEdgeId, DagEdgeKind};
use crate::error::GraphError;
use crate::interproc::FuncId;
use crate::ippp::segment::Ips;
use crate::ippp::subpath::{CutRole, FunctionSubpaths, SubpathNumbering, SubpathRef};
use crate::numbering::{number, Numbering};
use crate::ppp::{choose, Chosen};
use crate::regenerate::regenerate;

/// A copy of a function's call-cut DAG in an expanded graph.
#[derive(Clone, Debug)]
pub struct ContextCopy {
    pub func: FuncId,
    /// The copy it was inlined into and the local call that inlined it
    /// (`None` for the root).
    pub parent: Option<(usize, usize)>,
    /// Calls from the root.
    pub depth: usize,
    /// Per (local call, callee): the copy inlined there.
    pub children: BTreeMap<(usize, FuncId), usize>,
    /// Per edge of the function's call-cut DAG: its edge in the expanded
    /// graph (`None`: dropped).
    pub edge_of: Vec<Option<DagEdgeId>>,
    /// The edge `c -> ENTRY'` into this copy.
    pub enter: Option<DagEdgeId>,
    /// The edge `EXIT' -> r` out of this copy.
    pub leave: Option<DagEdgeId>,
    /// The first expanded-graph node of the copy.
    base: usize,
}

/// What an expanded-graph edge stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Edge `d` of the call-cut DAG of copy `copy`'s function.
    Edge { copy: usize, d: DagEdgeId },
    /// `c -> ENTRY'` into copy `copy`.
    Enter { copy: usize },
    /// `EXIT' -> r` out of copy `copy`.
    Leave { copy: usize },
}

/// One function's expanded graph, numbered.
#[derive(Clone, Debug)]
pub struct Expanded {
    pub func: FuncId,
    /// The root copy first.
    pub copies: Vec<ContextCopy>,
    pub dag: Dag,
    /// Per edge of `dag`, what it stands for.
    pub origin: Vec<Origin>,
    pub numbering: Numbering,
    /// The distinct interesting IPS starting in this function, sorted.
    pub interesting: Vec<Ips>,
    /// Their Ball-Larus ids in [`Expanded::dag`].
    pub ball_larus: Vec<u64>,
    pub ppp: Chosen,
    /// PPP id to the interesting IPS with that id (its index), as the
    /// instrumented program's path array holds it.
    pub table: BTreeMap<i64, usize>,
    /// Per edge of `dag`: it is cut (truncation, step 5), going to EXIT in
    /// place of its call-cut DAG edge's end.
    pub cut: Vec<bool>,
}

impl Expanded {
    /// The (Ball-Larus, PPP) increments of edge `d` of the call-cut DAG of
    /// copy `copy`'s function, in that context: 3.4.5's per-context
    /// increment. `None` if the copy drops the edge.
    pub fn increment(&self, copy: usize, d: DagEdgeId) -> Option<(u64, i64)> {
        let x = (*self.copies.get(copy)?.edge_of.get(d.index())?)?;
        Some(self.of(x))
    }

    /// Whether edge `d` of copy `copy`'s call-cut DAG is cut there.
    pub fn is_cut(&self, copy: usize, d: DagEdgeId) -> bool {
        self.copies
            .get(copy)
            .and_then(|c| *c.edge_of.get(d.index())?)
            .is_some_and(|x| self.cut[x.index()])
    }

    /// Whether the graph was truncated.
    pub fn truncated(&self) -> bool {
        self.cut.contains(&true)
    }

    /// Whether the IPS with Ball-Larus id `bl` ends at a cut edge: it was
    /// truncated, and [`Expanded::decode_ball_larus`] cannot spell it.
    pub fn ends_cut(&self, bl: u64) -> Result<bool, GraphError> {
        if !self.truncated() {
            return Ok(false);
        }
        let path = regenerate(&self.dag, &self.numbering, bl)?;
        Ok(path.last().is_some_and(|x| self.cut[x.index()]))
    }

    /// The increments of expanded-graph edge `x`.
    pub fn of(&self, x: DagEdgeId) -> (u64, i64) {
        (
            self.numbering.val[x.index()],
            self.ppp.numbering.inc[x.index()],
        )
    }

    /// The interesting IPS whose PPP id is `ppp` and Ball-Larus id `bl`
    /// (the check of 3.2.3), if there is one.
    pub fn lookup(&self, ppp: i64, bl: u64) -> Option<&Ips> {
        let &i = self.table.get(&ppp)?;
        (self.ball_larus[i] == bl).then(|| &self.interesting[i])
    }

    /// The IPS whose Ball-Larus id in the expanded graph is `bl`, e.g. an
    /// untested one (3.5.2: "the Ball-Larus identifiers of these untested
    /// paths can be used to generate the set of untested IPSs"). An IPS
    /// that goes on into a call no interesting IPS takes is cut at that
    /// call: its subpaths up to the one ending in the call.
    pub fn decode_ball_larus(&self, num: &SubpathNumbering, bl: u64) -> Result<Ips, GraphError> {
        let mut out = Vec::new();
        let mut sum = 0u64;
        for x in regenerate(&self.dag, &self.numbering, bl)? {
            if self.cut[x.index()] {
                return Err(TRUNCATED);
            }
            match self.origin[x.index()] {
                Origin::Edge { copy, d } => {
                    let func = self.copies[copy].func;
                    let f = &num.functions[func.index()];
                    sum = sum.wrapping_add(f.numbering.val[d.index()]);
                    if f.dag.edge(d).dst == Cfg::EXIT {
                        out.push(SubpathRef { func, id: sum });
                        sum = 0;
                    }
                }
                Origin::Enter { copy } => {
                    let (func, cut) = self.call_cut(num, copy)?;
                    let id =
                        sum.wrapping_add(num.functions[func.index()].numbering.val[cut.0.index()]);
                    out.push(SubpathRef { func, id });
                    sum = 0;
                }
                Origin::Leave { copy } => {
                    let (func, cut) = self.call_cut(num, copy)?;
                    sum = num.functions[func.index()].numbering.val[cut.1.index()];
                }
            }
        }
        Ok(out)
    }

    /// The caller's function of copy `copy` and the (exit, entry) dummies
    /// that cut its call edge there.
    fn call_cut(
        &self,
        num: &SubpathNumbering,
        copy: usize,
    ) -> Result<(FuncId, (DagEdgeId, DagEdgeId)), GraphError> {
        let (p, i) = self.copies[copy].parent.ok_or(NOT_AN_IPS)?;
        let func = self.copies[p].func;
        let f = &num.functions[func.index()];
        match f.roles[f.split.call_edge[i].index()] {
            CutRole::Cut { exit, entry } => Ok((func, (exit, entry))),
            _ => Err(NOT_AN_IPS),
        }
    }

    /// The interesting IPS with PPP id `ppp` (decoding a profile).
    pub fn decode(&self, ppp: i64) -> Option<&Ips> {
        Some(&self.interesting[*self.table.get(&ppp)?])
    }
}

const NOT_AN_IPS: GraphError = GraphError::InvalidNumbering {
    reason: "an interesting IPS is not a sequence of subpaths through calls and returns",
};

const TRUNCATED: GraphError = GraphError::InvalidNumbering {
    reason: "the IPS was truncated at a cut edge: it has no subpaths to spell",
};

/// Builds and numbers the expanded graph of every function for the
/// depth-`k` IPS `interesting` (each starts in the function of its first
/// subpath).
pub fn expand_all(
    num: &SubpathNumbering,
    k: usize,
    interesting: &[Ips],
) -> Result<Vec<Expanded>, GraphError> {
    expand_all_truncated(num, k, interesting, &[])
}

/// As [`expand_all`], with the expanded graphs of the functions
/// `truncated` truncated (as [`expand_all_fitting`] made them).
pub fn expand_all_truncated(
    num: &SubpathNumbering,
    k: usize,
    interesting: &[Ips],
    truncated: &[FuncId],
) -> Result<Vec<Expanded>, GraphError> {
    let by_func = by_start(num, interesting)?;
    by_func
        .into_iter()
        .enumerate()
        .map(|(f, mut list)| {
            list.sort();
            list.dedup();
            let f = FuncId::new(f);
            Expanded::new(num, f, k, list, truncated.contains(&f))
        })
        .collect()
}

/// The IPS `interesting` per function they start in.
fn by_start(num: &SubpathNumbering, interesting: &[Ips]) -> Result<Vec<Vec<Ips>>, GraphError> {
    let mut by_func: Vec<Vec<Ips>> = vec![Vec::new(); num.functions.len()];
    for ips in interesting {
        let first = ips.first().ok_or(NOT_AN_IPS)?;
        by_func
            .get_mut(first.func.index())
            .ok_or(NOT_AN_IPS)?
            .push(ips.clone());
    }
    Ok(by_func)
}

/// As [`expand_all`], truncating (3.4.4 step 5) each function's expanded
/// graph that would have more paths than 64 bits number (or PPP ids than
/// `i64` holds), and where even the truncated graph has too many, leaving
/// out the interesting IPS that do not fit: taken in the order given, each
/// is kept if the graph with it and those kept before still numbers.
/// Returns the expanded graphs and the IPS kept, in the order given.
pub fn expand_all_fitting(
    num: &SubpathNumbering,
    k: usize,
    interesting: &[Ips],
) -> Result<(Vec<Expanded>, Vec<Ips>), GraphError> {
    let mut by_func: Vec<Vec<Ips>> = vec![Vec::new(); num.functions.len()];
    for ips in interesting {
        let first = ips.first().ok_or(NOT_AN_IPS)?;
        let list = by_func.get_mut(first.func.index()).ok_or(NOT_AN_IPS)?;
        if !list.contains(ips) {
            list.push(ips.clone());
        }
    }
    let mut graphs = Vec::with_capacity(by_func.len());
    let mut kept_all = Vec::new();
    for (f, list) in by_func.into_iter().enumerate() {
        let (x, kept) = fitting(num, FuncId::new(f), k, list)?;
        graphs.push(x);
        kept_all.extend(kept);
    }
    let order: BTreeMap<&Ips, usize> = interesting
        .iter()
        .enumerate()
        .map(|(i, s)| (s, i))
        .rev()
        .collect();
    kept_all.sort_by_key(|s| order[s]);
    Ok((graphs, kept_all))
}

/// Function `f`'s expanded graph for as many of `list` as fit: whole, else
/// truncated, else truncated with those that fit (in order).
fn fitting(
    num: &SubpathNumbering,
    f: FuncId,
    k: usize,
    list: Vec<Ips>,
) -> Result<(Expanded, Vec<Ips>), GraphError> {
    let sorted = |list: &[Ips]| {
        let mut list = list.to_vec();
        list.sort();
        list
    };
    for truncate in [false, true] {
        match Expanded::new(num, f, k, sorted(&list), truncate) {
            Ok(x) => return Ok((x, list)),
            Err(GraphError::TooManyPaths) => {}
            Err(e) => return Err(e),
        }
    }
    let mut kept: Vec<Ips> = Vec::new();
    let mut last = Expanded::new(num, f, k, Vec::new(), true)?;
    for ips in list {
        kept.push(ips);
        match Expanded::new(num, f, k, sorted(&kept), true) {
            Ok(x) => last = x,
            Err(GraphError::TooManyPaths) => {
                kept.pop();
            }
            Err(e) => return Err(e),
        }
    }
    Ok((last, kept))
}

/// How a subpath of an IPS moves the copy the IPS is in.
enum Move {
    /// Into the callee's copy through local call `i`.
    Call(usize, FuncId),
    /// Back to the caller's copy.
    Return,
    /// The IPS ends.
    End,
}

/// Per IPS, its subpaths as paths of their call-cut DAGs.
type Decoded = Vec<Vec<Vec<DagEdgeId>>>;

/// The copies the IPS `interesting` starting in `func` make (3.4.4 step 2:
/// each call site an IPS passes in a copy, with the callee it goes to,
/// gets a copy of the callee), and each IPS's subpaths as DAG paths.
fn contexts(
    num: &SubpathNumbering,
    func: FuncId,
    k: usize,
    interesting: &[Ips],
) -> Result<(Vec<ContextCopy>, Decoded), GraphError> {
    let mut copies = vec![new_copy(func, None, 0)];
    let mut decoded: Decoded = Vec::new();
    for ips in interesting {
        let mut paths = Vec::new();
        let mut at = 0usize;
        for (j, s) in ips.iter().enumerate() {
            let f = num.function(s.func).ok_or(NOT_AN_IPS)?;
            if copies[at].func != s.func {
                return Err(NOT_AN_IPS);
            }
            let path = regenerate(&f.dag, &f.numbering, s.id)?;
            at = match move_after(f, ips, j, &path) {
                Move::Call(i, g) if copies[at].depth < k => {
                    let n = copies.len();
                    let child = *copies[at].children.entry((i, g)).or_insert(n);
                    if child == n {
                        copies.push(new_copy(g, Some((at, i)), copies[at].depth + 1));
                    }
                    child
                }
                Move::Return => copies[at].parent.ok_or(NOT_AN_IPS)?.0,
                Move::Call(..) | Move::End if j + 1 == ips.len() => at,
                _ => return Err(NOT_AN_IPS),
            };
            paths.push(path);
        }
        decoded.push(paths);
    }
    Ok((copies, decoded))
}

/// Per function, the copies of selective inlining (3.4.4 step 2) for the
/// depth-`k` IPS `interesting` that start there, the root first: the call
/// sites an inliner inlines, in context ([`ContextCopy::children`]),
/// without the expanded graph. The copies' edges are not laid out.
pub fn inlined_contexts(
    num: &SubpathNumbering,
    k: usize,
    interesting: &[Ips],
) -> Result<Vec<Vec<ContextCopy>>, GraphError> {
    let by_func = by_start(num, interesting)?;
    by_func
        .iter()
        .enumerate()
        .map(|(f, list)| Ok(contexts(num, FuncId::new(f), k, list)?.0))
        .collect()
}

/// The move after subpath `j` of `ips`, given its decoded DAG path.
fn move_after(f: &FunctionSubpaths, ips: &Ips, j: usize, path: &[DagEdgeId]) -> Move {
    let Some(next) = ips.get(j + 1) else {
        return Move::End;
    };
    let last = f.dag.edge(*path.last().expect("a path has an edge"));
    match (last.kind, f.split.call_at[last.src.index()]) {
        (DagEdgeKind::ExitDummy, Some(i)) => Move::Call(i, next.func),
        (DagEdgeKind::Real(_), _) if last.dst == Cfg::EXIT => Move::Return,
        _ => Move::End,
    }
}

impl Expanded {
    /// With `truncate`, every edge of a callee's copy that no interesting
    /// IPS takes in that copy is cut.
    fn new(
        num: &SubpathNumbering,
        func: FuncId,
        k: usize,
        interesting: Vec<Ips>,
        truncate: bool,
    ) -> Result<Expanded, GraphError> {
        let (mut copies, decoded) = contexts(num, func, k, &interesting)?;
        let (mut edges, mut origin) = (Vec::new(), Vec::new());
        lay_out(num, &mut copies, &mut edges, &mut origin);
        let paths: Vec<Vec<DagEdgeId>> = interesting
            .iter()
            .zip(&decoded)
            .map(|(ips, d)| expanded_path(num, &copies, ips, d))
            .collect::<Result<_, _>>()?;
        // Cutting moves edges' ends, never their ids: `paths` still holds.
        let cut = if truncate {
            cut_unmarked(num, &copies, &mut edges, &origin, &paths)
        } else {
            vec![false; edges.len()]
        };
        let dag = Dag::from_edges(2, &edges);
        let numbering = number(&dag)?;
        let ball_larus = paths.iter().map(|p| numbering.path_sum(p)).collect();
        let ppp = choose(&dag, &numbering, &paths)?;
        let table = paths
            .iter()
            .enumerate()
            .map(|(i, p)| (crate::ppp::ppp_id(&ppp.numbering, p), i))
            .collect();
        Ok(Expanded {
            func,
            copies,
            dag,
            origin,
            numbering,
            interesting,
            ball_larus,
            ppp,
            table,
            cut,
        })
    }
}

/// Truncation (3.4.4 step 5): sends every edge of a non-root copy that
/// no interesting path `paths` takes, and that does not go to EXIT
/// already, to EXIT. Only edges of the function's CFG are cut, not the
/// links the call split adds between a return site and the block's next
/// call: a segment is cut where it leaves what interesting ones take in
/// the program's own control flow. Returns which edges it cut.
fn cut_unmarked(
    num: &SubpathNumbering,
    copies: &[ContextCopy],
    edges: &mut [(NodeId, NodeId, DagEdgeKind)],
    origin: &[Origin],
    paths: &[Vec<DagEdgeId>],
) -> Vec<bool> {
    let mut marked = vec![false; edges.len()];
    for x in paths.iter().flatten() {
        marked[x.index()] = true;
    }
    let mut cut = vec![false; edges.len()];
    for (x, edge) in edges.iter_mut().enumerate() {
        let Origin::Edge { copy, d } = origin[x] else {
            continue;
        };
        let f = &num.functions[copies[copy].func.index()];
        let original = match f.dag.edge(d).kind {
            DagEdgeKind::Real(e) => f.split.is_original(e),
            _ => false,
        };
        if original && copies[copy].parent.is_some() && !marked[x] && edge.1 != Cfg::EXIT {
            edge.1 = Cfg::EXIT;
            cut[x] = true;
        }
    }
    cut
}

fn new_copy(func: FuncId, parent: Option<(usize, usize)>, depth: usize) -> ContextCopy {
    ContextCopy {
        func,
        parent,
        depth,
        children: BTreeMap::new(),
        edge_of: Vec::new(),
        enter: None,
        leave: None,
        base: 0,
    }
}

/// Gives every copy its nodes and edges in the expanded graph (pushed on
/// `edges`); copies in creation order, so a parent precedes its children.
fn lay_out(
    num: &SubpathNumbering,
    copies: &mut [ContextCopy],
    edges: &mut Vec<(NodeId, NodeId, DagEdgeKind)>,
    origin: &mut Vec<Origin>,
) {
    let mut next = 2usize;
    for copy in copies.iter_mut() {
        copy.base = next;
        next += num.functions[copy.func.index()].dag.num_nodes;
    }
    for c in 0..copies.len() {
        let f = &num.functions[copies[c].func.index()];
        let root = copies[c].parent.is_none();
        let node = |v: NodeId| node_in(&copies[c], root, v);
        let mut edge_of = Vec::with_capacity(f.dag.num_edges());
        for d in f.dag.edge_ids() {
            let e = f.dag.edge(d);
            let kept = match e.kind {
                DagEdgeKind::EntryDummy if !root => None,
                DagEdgeKind::ExitDummy => Some((node(e.src), Cfg::EXIT)),
                _ => Some((node(e.src), node(e.dst))),
            };
            edge_of.push(kept.map(|(s, t)| {
                edges.push((s, t, e.kind));
                origin.push(Origin::Edge { copy: c, d });
                DagEdgeId::new(edges.len() - 1)
            }));
        }
        copies[c].edge_of = edge_of;
        if let Some((p, i)) = copies[c].parent {
            let pf = &num.functions[copies[p].func.index()];
            let (cv, r) = (pf.split.call_vertex[i], pf.split.return_site[i]);
            let call_edge = pf.split.call_edge[i];
            let proot = copies[p].parent.is_none();
            let (from, to) = (
                node_in(&copies[p], proot, cv),
                node_in(&copies[p], proot, r),
            );
            let kind = DagEdgeKind::Real(call_edge);
            edges.push((from, NodeId::new(copies[c].base), kind));
            origin.push(Origin::Enter { copy: c });
            copies[c].enter = Some(DagEdgeId::new(edges.len() - 1));
            edges.push((NodeId::new(copies[c].base + 1), to, kind));
            origin.push(Origin::Leave { copy: c });
            copies[c].leave = Some(DagEdgeId::new(edges.len() - 1));
        }
    }
}

/// Node `v` of a copy's function in the expanded graph: the root copy's
/// ENTRY and EXIT are the graph's.
fn node_in(copy: &ContextCopy, root: bool, v: NodeId) -> NodeId {
    if root && (v == Cfg::ENTRY || v == Cfg::EXIT) {
        v
    } else {
        NodeId::new(copy.base + v.index())
    }
}

/// An interesting IPS as a path of the expanded graph, from its subpaths'
/// decoded DAG paths.
fn expanded_path(
    num: &SubpathNumbering,
    copies: &[ContextCopy],
    ips: &Ips,
    decoded: &[Vec<DagEdgeId>],
) -> Result<Vec<DagEdgeId>, GraphError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut after_return = false;
    for (j, path) in decoded.iter().enumerate() {
        let f = &num.functions[ips[j].func.index()];
        let mv = move_after(f, ips, j, path);
        // After a return the caller's subpath starts along its dummy
        // ENTRY -> r; the expanded path is at r already.
        let skip = usize::from(after_return);
        let keep_last = !matches!(mv, Move::Call(..)) || j + 1 == ips.len();
        let end = path.len() - usize::from(!keep_last);
        for &d in path.get(skip..end).ok_or(NOT_AN_IPS)? {
            out.push(copies[at].edge_of[d.index()].ok_or(NOT_AN_IPS)?);
        }
        after_return = false;
        match mv {
            Move::Call(i, g) if j + 1 < ips.len() => {
                at = *copies[at].children.get(&(i, g)).ok_or(NOT_AN_IPS)?;
                out.push(copies[at].enter.ok_or(NOT_AN_IPS)?);
            }
            Move::Return => {
                out.push(copies[at].leave.ok_or(NOT_AN_IPS)?);
                at = copies[at].parent.ok_or(NOT_AN_IPS)?.0;
                after_return = true;
            }
            _ => {}
        }
    }
    Ok(out)
}
