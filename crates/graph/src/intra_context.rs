//! Intraprocedural context path profiling (Melski & Reps, TR 1382,
//! section 7): Ball-Larus paths whose context-prefix runs from ENTRY to a
//! loop head and whose active-suffix is one trip around the loop body.
//!
//! Terms:
//! - *loop head* `v`: the target of a backedge (DFS from ENTRY, as in
//!   [`crate::dag`]). Transformation 1 splits it into `v_a` (the original
//!   node, keeping the incoming edges) and `v_b` (a new node, taking the
//!   outgoing ones), joined by the edge `v_a -> v_b`. Transformation 2 adds a
//!   second, surrogate, `v_a -> v_b` per head, a surrogate `w -> EXIT` per
//!   backedge source `w`, and removes the backedges.
//! - *pathNumOnEntryToV*: the path register when control reaches `v` along
//!   an edge that is not a backedge. A backedge `w -> v` counts
//!   `pathNum + Val(w -> EXIT)` and restarts at `pathNumOnEntryToV +
//!   Val(surrogate v_a -> v_b)`: the new path's context-prefix is the path
//!   that led into the loop.
//!
//! The result is an acyclic CFG numbered by Ball-Larus ([`crate::numbering`]).
//! As the paper says, this needs a reducible CFG: every backedge's target
//! must dominate its source, so that `pathNumOnEntryToV` is set before the
//! backedge is taken; [`IntraContext::new`] refuses others with
//! [`GraphError::Irreducible`].
//!
//! Departures from the paper: a vertex with no way on (a trap) gets an
//! ExitDummy as in [`crate::dag`]; its paths are never counted at run time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::dag::{Dag, DagEdgeKind};
use crate::error::GraphError;
use crate::numbering::{number, Numbering};
use crate::regenerate::regenerate;

/// What an edge of the transformed CFG stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Stands {
    /// An original edge that is not a backedge.
    Original(EdgeId),
    /// `v_a -> v_b`, the non-surrogate one.
    HeadLink,
    /// The surrogate `v_a -> v_b` of loop head `v`.
    Resume(NodeId),
    /// The surrogate `w -> EXIT` of backedge source `w`.
    End(NodeId),
}

/// What runs on an original edge ([`IntraContext::step`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Not a backedge: `pathNum += val` (set, out of ENTRY); into loop head
    /// `v` (`head: Some((v, link))`), then `pathNumOnEntryToV = pathNum;
    /// pathNum += link`; into EXIT, count `pathNum`.
    Forward {
        val: u64,
        from_entry: bool,
        head: Option<(NodeId, u64)>,
        exit: bool,
    },
    /// A backedge into `head`: count `pathNum + end`, then `pathNum =
    /// pathNumOnEntryToV + resume`.
    Back { end: u64, head: NodeId, resume: u64 },
}

/// One step of a path, in the original CFG's terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ContextStep {
    /// An edge of the CFG (not a backedge).
    Edge(EdgeId),
    /// The surrogate `v_a -> v_b`: the path starts over at loop head `v`
    /// after a backedge; the context-prefix ends here.
    Resume(NodeId),
    /// The surrogate `w -> EXIT`: the path ends at `w` (a backedge source,
    /// or a dead end).
    End(NodeId),
}

/// A path: its steps and where its active-suffix starts (after the last
/// [`ContextStep::Resume`], 0 if there is none).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContextPath {
    pub steps: Vec<ContextStep>,
    pub active_start: usize,
}

/// A CFG transformed for intraprocedural context profiling and numbered.
#[derive(Clone, Debug)]
pub struct IntraContext {
    /// The transformed, acyclic CFG: the original nodes, then `v_b` per
    /// loop head.
    pub cfg: Cfg,
    pub dag: Dag,
    pub numbering: Numbering,
    stands: Vec<Stands>,
    /// Per original edge: its transformed edge, or (a backedge) `None`.
    kept: Vec<Option<EdgeId>>,
    /// The original edges' ends.
    original: Vec<(NodeId, NodeId)>,
    /// Per original node: its `v_b`, if a loop head.
    head_b: Vec<Option<NodeId>>,
    /// Per original node: the non-surrogate and surrogate `v_a -> v_b`.
    links: Vec<Option<(EdgeId, EdgeId)>>,
    /// Per original node: its surrogate `w -> EXIT`.
    end_of: Vec<Option<EdgeId>>,
}

impl IntraContext {
    /// Transforms `cfg` (T1, T2 of section 7) and numbers it.
    pub fn new(cfg: &Cfg) -> Result<IntraContext, GraphError> {
        crate::dag::check_ends(cfg)?;
        let dfs = cfg.dfs();
        let n = cfg.num_nodes();
        let back: Vec<bool> = cfg
            .edge_ids()
            .map(|e| dfs.reached(cfg.src(e)) && dfs.is_backedge(cfg, e))
            .collect();
        let dom = DomTree::new(cfg);
        for e in cfg.edge_ids().filter(|e| back[e.index()]) {
            let (w, v) = cfg.edge(e);
            if !dom.dominates(v, w) {
                return Err(GraphError::Irreducible { edge: e });
            }
        }
        let (mut head_b, mut next) = (vec![None; n], n);
        for e in cfg.edge_ids().filter(|e| back[e.index()]) {
            let v = cfg.dst(e);
            if head_b[v.index()].is_none() {
                head_b[v.index()] = Some(NodeId::new(next));
                next += 1;
            }
        }
        let out = |v: NodeId| head_b[v.index()].unwrap_or(v);
        let (mut edges, mut stands) = (Vec::new(), Vec::new());
        let mut kept = vec![None; cfg.num_edges()];
        for e in cfg.edge_ids().filter(|e| !back[e.index()]) {
            let (s, d) = cfg.edge(e);
            kept[e.index()] = Some(EdgeId::new(edges.len()));
            edges.push((out(s), d));
            stands.push(Stands::Original(e));
        }
        let mut links = vec![None; n];
        for v in cfg.nodes() {
            if let Some(b) = head_b[v.index()] {
                let real = EdgeId::new(edges.len());
                edges.extend([(v, b), (v, b)]);
                stands.extend([Stands::HeadLink, Stands::Resume(v)]);
                links[v.index()] = Some((real, EdgeId::new(real.index() + 1)));
            }
        }
        let mut end_of = vec![None; n];
        for e in cfg.edge_ids().filter(|e| back[e.index()]) {
            let w = cfg.src(e);
            if end_of[w.index()].is_none() {
                end_of[w.index()] = Some(EdgeId::new(edges.len()));
                edges.push((out(w), Cfg::EXIT));
                stands.push(Stands::End(w));
            }
        }
        let tcfg = Cfg::from_edges(next, &edges);
        let dag = Dag::new(&tcfg)?;
        let numbering = number(&dag)?;
        Ok(IntraContext {
            cfg: tcfg,
            dag,
            numbering,
            stands,
            kept,
            original: cfg.edge_list().to_vec(),
            head_b,
            links,
            end_of,
        })
    }

    /// The number of paths.
    pub fn total(&self) -> u64 {
        self.numbering.total()
    }

    /// Val of transformed edge `t`.
    fn val(&self, t: EdgeId) -> u64 {
        match self.dag.cfg_to_dag.get(t.index()) {
            Some([d]) => self.numbering.val[d.index()],
            _ => 0,
        }
    }

    /// The loop heads (backedge targets), in node order: the
    /// instrumentation keeps one `pathNumOnEntryToV` register per head.
    pub fn loop_heads(&self) -> Vec<NodeId> {
        (0..self.head_b.len())
            .filter(|&v| self.head_b[v].is_some())
            .map(NodeId::new)
            .collect()
    }

    /// The number of edges of the original CFG.
    pub fn num_original_edges(&self) -> usize {
        self.kept.len()
    }

    /// What the instrumentation does on original edge `e` (the rules of
    /// [`IntraContext::walk`], as data for a plan).
    pub fn step(&self, e: EdgeId) -> Step {
        let (w, v) = self.original[e.index()];
        match self.kept[e.index()] {
            Some(t) => Step::Forward {
                val: self.val(t),
                from_entry: w == Cfg::ENTRY,
                head: self.links[v.index()].map(|(real, _)| (v, self.val(real))),
                exit: v == Cfg::EXIT,
            },
            None => {
                let end = self.end_of[w.index()].expect("a backedge source has an end");
                let (_, surrogate) = self.links[v.index()].expect("a backedge target is a head");
                Step::Back {
                    end: self.val(end),
                    head: v,
                    resume: self.val(surrogate),
                }
            }
        }
    }

    /// The instrumentation run along one activation's `edges` (from
    /// ENTRY): path number to count. Counts at backedges and at EXIT; a
    /// path in flight when the edges end is not counted.
    pub fn walk(&self, edges: &[EdgeId]) -> Result<BTreeMap<u64, u64>, GraphError> {
        let mut counts = BTreeMap::new();
        let mut count = |n: u64| *counts.entry(n).or_insert(0) += 1;
        let mut on_entry = vec![0u64; self.head_b.len()];
        let (mut path, mut at) = (0u64, Cfg::ENTRY);
        let overflow = GraphError::PathCountOverflow { function: None };
        let add = |a: u64, b: u64| a.checked_add(b).ok_or(overflow.clone());
        for (index, &e) in edges.iter().enumerate() {
            let bad = |reason| GraphError::BadExecution { index, reason };
            if e.index() >= self.kept.len() {
                return Err(bad("no such edge"));
            }
            let (w, v) = self.original[e.index()];
            if w != at {
                return Err(bad("the edge does not leave where control is"));
            }
            match self.step(e) {
                Step::Forward { val, head, .. } => {
                    path = add(path, val)?;
                    if let Some((v, link)) = head {
                        on_entry[v.index()] = path;
                        path = add(path, link)?;
                    }
                }
                Step::Back { end, head, resume } => {
                    count(add(path, end)?);
                    path = add(on_entry[head.index()], resume)?;
                }
            }
            at = v;
            if at == Cfg::EXIT {
                count(path);
            }
        }
        Ok(counts)
    }

    /// The path numbered `n`.
    pub fn decode(&self, n: u64) -> Result<ContextPath, GraphError> {
        let mut steps = Vec::new();
        let mut active_start = 0;
        for d in regenerate(&self.dag, &self.numbering, n)? {
            let edge = self.dag.edge(d);
            let step = match edge.kind {
                DagEdgeKind::Real(t) => match self.stands[t.index()] {
                    Stands::Original(e) => Some(ContextStep::Edge(e)),
                    Stands::HeadLink => None,
                    Stands::Resume(v) => Some(ContextStep::Resume(v)),
                    Stands::End(w) => Some(ContextStep::End(w)),
                },
                DagEdgeKind::ExitDummy => Some(ContextStep::End(self.original_node(edge.src))),
                DagEdgeKind::EntryDummy => None,
            };
            steps.extend(step);
            if let Some(ContextStep::Resume(_)) = step {
                active_start = steps.len();
            }
        }
        Ok(ContextPath {
            steps,
            active_start,
        })
    }

    /// The original node a transformed node is (`v_b` is `v`).
    fn original_node(&self, t: NodeId) -> NodeId {
        match self.head_b.iter().position(|&b| b == Some(t)) {
            Some(v) => NodeId::new(v),
            None => t,
        }
    }
}

/// Dominator tree of a CFG's reached nodes (Cooper, Harvey and Kennedy's
/// iterative algorithm over the DFS's reverse postorder), with each node's
/// preorder interval in the tree for constant-time dominance queries.
struct DomTree {
    /// Preorder number in the dominator tree and the largest among the
    /// node's descendants; `u32::MAX` for nodes ENTRY does not reach.
    pre: Vec<u32>,
    last: Vec<u32>,
}

impl DomTree {
    fn new(cfg: &Cfg) -> DomTree {
        let dfs = cfg.dfs();
        let post = dfs.postorder();
        let n = cfg.num_nodes();
        let mut po = vec![u32::MAX; n];
        for (i, v) in post.iter().enumerate() {
            po[v.index()] = i as u32;
        }
        let mut idom: Vec<Option<NodeId>> = vec![None; n];
        idom[0] = Some(Cfg::ENTRY);
        let intersect = |idom: &[Option<NodeId>], mut a: NodeId, mut b: NodeId| {
            while a != b {
                while po[a.index()] < po[b.index()] {
                    a = idom[a.index()].expect("processed");
                }
                while po[b.index()] < po[a.index()] {
                    b = idom[b.index()].expect("processed");
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &v in post.iter().rev().filter(|&&v| v != Cfg::ENTRY) {
                let preds = cfg.preds(v).iter().map(|&e| cfg.src(e));
                let mut new: Option<NodeId> = None;
                for p in preds.filter(|p| idom[p.index()].is_some()) {
                    new = Some(match new {
                        None => p,
                        Some(q) => intersect(&idom, p, q),
                    });
                }
                if new.is_some() && idom[v.index()] != new {
                    idom[v.index()] = new;
                    changed = true;
                }
            }
        }
        DomTree::intervals(n, &idom)
    }

    /// Preorder intervals of the tree whose parent links are `idom`.
    fn intervals(n: usize, idom: &[Option<NodeId>]) -> DomTree {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (v, p) in idom.iter().enumerate().skip(1) {
            if let Some(p) = p {
                children[p.index()].push(v);
            }
        }
        let (mut pre, mut last) = (vec![u32::MAX; n], vec![0u32; n]);
        let mut counter = 0u32;
        let mut stack = vec![(0usize, 0usize)];
        pre[0] = 0;
        while let Some(top) = stack.last_mut() {
            let (v, i) = *top;
            match children[v].get(i) {
                Some(&c) => {
                    top.1 += 1;
                    counter += 1;
                    pre[c] = counter;
                    stack.push((c, 0));
                }
                None => {
                    last[v] = counter;
                    stack.pop();
                }
            }
        }
        DomTree { pre, last }
    }

    /// Whether `a` dominates `b` (both reached).
    fn dominates(&self, a: NodeId, b: NodeId) -> bool {
        let (pa, pb) = (self.pre[a.index()], self.pre[b.index()]);
        pa != u32::MAX && pb != u32::MAX && pa <= pb && pb <= self.last[a.index()]
    }
}
