//! The supergraph G* (Melski & Reps, TR 1382, section 2.2) as a producer
//! gives it, and the split of each function's blocks at its call sites.
//!
//! Terms:
//! - *call vertex* `c` and *return-site vertex* `r`: the two vertices of a
//!   call site; the call edge `c -> Entry_Q` and the return edge
//!   `Exit_Q -> r` link them with the callee `Q`.
//! - *entry function*: one control can enter from outside the program's
//!   profiled calls (`main`, an export, a callback from an import); it gets
//!   the edges `Entry_global -> Entry_P` and `Exit_P -> Exit_global`.
//!
//! A producer (the wasm CFG builder) gives per function a [`Cfg`] whose
//! blocks do not end at calls, and the calls each block makes, in order:
//! "block B contains call sites c1, c2". [`Split`] turns that into the
//! paper's vertices: block `B` itself becomes the call vertex of `c1`, and
//! new vertices follow it, `r1, c2, r2`, with the edges `c1 -> r1`,
//! `r1 -> c2`, `c2 -> r2`; the block's outgoing edges leave from `r2`, its
//! last *segment*. The edge `c -> r` stands for the call (a return site is a
//! successor of its call vertex, as 5.2 orders them) or, at a cut call site,
//! is the summary edge of Transformation 3.
//!
//! Node and edge ids of the original CFG are kept: node `B` is `B`'s first
//! segment, edge `e` is `e` (leaving `B`'s last segment), and the new nodes
//! and edges come after them. So a producer's block and edge ids name the
//! same things in executions and decoded paths.
//!
//! Departures from the paper:
//! - Imported functions are not functions of the supergraph: a call to an
//!   import is not a call site (it is an opaque leaf inside its block), and
//!   a callback from the host into a function is an entry of that function
//!   from outside ([`crate::interproc::Event::Call`] without a site).
//! - An indirect call lists its possible callees; it is always cut (treated
//!   as recursive, section 9.2.3), so its callees are entry functions;
//!   unless the producer can tell its callee before the call, and lists it
//!   as direct calls, one per callee, that are *cases* of one call
//!   ([`Function::cases`]): the report's expansion into direct-call
//!   dispatch (9.2.3). A case that may enter a function outside the other
//!   cases is an indirect call, cut as usual.

use serde::{Deserialize, Serialize};

use crate::cfg::{id_impl, Cfg, EdgeId, NodeId};
use crate::dag::check_ends;
use crate::error::GraphError;

/// A function of a [`Supergraph`]: its index in `functions`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FuncId(u32);
id_impl!(FuncId);

impl FuncId {
    /// The id with this index, usable in constants.
    pub const fn from_u32(index: u32) -> FuncId {
        FuncId(index)
    }
}

/// A call site of a [`Supergraph`], numbered over all functions in order
/// (function 0's calls first, each function's in the order of its `calls`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallSiteId(u32);
id_impl!(CallSiteId);

/// Whom a call site calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Callee {
    /// A direct call.
    Direct(FuncId),
    /// An indirect call and the functions it may reach (for wasm,
    /// `call_indirect`'s table entries of the right type). Always cut.
    Indirect(Vec<FuncId>),
}

impl Callee {
    /// Whether a call through this site may enter `f`.
    pub fn may_call(&self, f: FuncId) -> bool {
        match self {
            Callee::Direct(g) => *g == f,
            Callee::Indirect(gs) => gs.contains(&f),
        }
    }

    /// The functions this site may enter.
    pub fn targets(&self) -> &[FuncId] {
        match self {
            Callee::Direct(g) => std::slice::from_ref(g),
            Callee::Indirect(gs) => gs,
        }
    }
}

/// One call a block makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// The block that makes the call (neither ENTRY nor EXIT).
    pub block: NodeId,
    pub callee: Callee,
}

/// A function: its CFG (ENTRY node 0, EXIT node 1, as in [`Cfg`]) and its
/// calls. Calls of one block are listed in the order the block makes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    pub cfg: Cfg,
    pub calls: Vec<CallSite>,
    /// Blocks that may throw an exception (section 9.2.2): a path can end
    /// at their last segment, along a surrogate `u -> GExit`. (A block with
    /// no successor has one anyway.)
    #[serde(default)]
    pub throws: Vec<NodeId>,
    /// Exception handlers: a path can start at them, along a surrogate
    /// `Entry_P -> v` (`GEntry_P -> v`). ENTRY must reach them, as the wasm
    /// CFG builder's `ENTRY -> handler` edges make sure.
    #[serde(default)]
    pub handlers: Vec<NodeId>,
    /// Tail calls (`return_call`): the block ending in one (after its other
    /// calls) and whom it calls. The caller's path ends there, along a
    /// surrogate `u -> GExit`; the callee is entered afresh, so it is an
    /// entry function; and where the caller would have returned, its
    /// caller restarts (section 9's treatment, see [`crate::interproc`]).
    #[serde(default)]
    pub tail_calls: Vec<TailCall>,
    /// Edges treated like backedges (the path ends at the source and a new
    /// one starts at the target): Ball-Larus truncation (their section 5.3)
    /// of a function whose own paths are too many to number, which Melski
    /// and Reps do not consider. Neither from ENTRY nor into EXIT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<crate::EdgeId>,
    /// Local calls that are further *cases* of the call listed before them
    /// (ascending): one indirect call whose callee the instrumentation
    /// tells before the call (a `call_indirect` on a table whose slots are
    /// known), expanded into direct calls as section 9.2.3 suggests. Each
    /// case is a call site of its own, with its own call vertex and return
    /// site; the split branches to the cases' call vertices and joins after
    /// their return sites ([`Split`]). A case may be cut like any site.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<u32>,
}

/// A tail call a block ends with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailCall {
    pub block: NodeId,
    pub callee: Callee,
}

impl Function {
    /// A function with these calls, no throwing block and no handler.
    pub fn new(cfg: Cfg, calls: Vec<CallSite>) -> Function {
        Function {
            cfg,
            calls,
            ..Function::default()
        }
    }

    /// Whether local call `i` is a further case of call `i - 1`.
    pub fn is_case(&self, i: usize) -> bool {
        self.cases.binary_search(&(i as u32)).is_ok()
    }

    /// The local calls that are cases of the same call as call `i` (just
    /// `i` for a call without cases).
    pub fn case_group(&self, i: usize) -> std::ops::Range<usize> {
        let start = (0..=i).rev().find(|&k| !self.is_case(k)).unwrap_or(0);
        let end = (i + 1..self.calls.len())
            .find(|&k| !self.is_case(k))
            .unwrap_or(self.calls.len());
        start..end
    }
}

/// The program: its functions and the entry functions (`main` first; the
/// targets of cut call sites are added to them by the transformations).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Supergraph {
    pub functions: Vec<Function>,
    pub entries: Vec<FuncId>,
}

/// Where a call site is: its function and its index in that function's calls.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SiteRef {
    pub func: FuncId,
    pub index: usize,
}

impl Supergraph {
    /// Every call site's function and local index, indexed by [`CallSiteId`].
    pub fn sites(&self) -> Vec<SiteRef> {
        let mut sites = Vec::new();
        for (f, func) in self.functions.iter().enumerate() {
            sites.extend((0..func.calls.len()).map(|index| SiteRef {
                func: FuncId::new(f),
                index,
            }));
        }
        sites
    }

    /// The first call site id of each function, and one past the last.
    pub fn site_starts(&self) -> Vec<usize> {
        let mut starts = Vec::with_capacity(self.functions.len() + 1);
        let mut n = 0;
        starts.push(0);
        for func in &self.functions {
            n += func.calls.len();
            starts.push(n);
        }
        starts
    }

    /// Rejects what no transformation can work with.
    pub(crate) fn check(&self) -> Result<(), GraphError> {
        let num_funcs = self.functions.len();
        let bad = |function, reason| Err(GraphError::BadSupergraph { function, reason });
        if let Some(f) = self.entries.iter().find(|f| f.index() >= num_funcs) {
            return bad(f.index(), "an entry function is out of range");
        }
        for (f, func) in self.functions.iter().enumerate() {
            check_ends(&func.cfg)?;
            for call in &func.calls {
                let b = call.block;
                if b == Cfg::ENTRY || b == Cfg::EXIT || b.index() >= func.cfg.num_nodes() {
                    return bad(f, "a call site's block is ENTRY, EXIT or out of range");
                }
                if call.callee.targets().iter().any(|g| g.index() >= num_funcs) {
                    return bad(f, "a callee is out of range");
                }
            }
            let cases_ok = func.cases.windows(2).all(|w| w[0] < w[1])
                && func.cases.iter().all(|&i| {
                    let i = i as usize;
                    i > 0 && i < func.calls.len() && func.calls[i].block == func.calls[i - 1].block
                });
            if !cases_ok {
                return bad(
                    f,
                    "a case is not a later call of the same block as the call before it",
                );
            }
            let n = func.cfg.num_nodes();
            if func.truncated.iter().any(|&e| {
                e.index() >= func.cfg.num_edges()
                    || func.cfg.src(e) == Cfg::ENTRY
                    || func.cfg.dst(e) == Cfg::EXIT
            }) {
                return bad(
                    f,
                    "a truncated edge is out of range, leaves ENTRY or enters EXIT",
                );
            }
            if func
                .throws
                .iter()
                .chain(&func.handlers)
                .any(|b| b.index() >= n)
            {
                return bad(f, "a throwing block or a handler is out of range");
            }
            if func.handlers.iter().any(|&h| !func.cfg.dfs().reached(h)) {
                return bad(f, "ENTRY does not reach a handler");
            }
        }
        Ok(())
    }
}

/// A function's CFG with its blocks split at their calls (see the module
/// comment): the paper's vertices, before any transformation.
///
/// The cases of one call ([`Function::cases`]) share the segment before
/// them, `p`: it branches along links `p -> c_i` to each case's call vertex
/// (taken when the call is made: [`Split::link_before`]), and each case's
/// return site links to a join vertex `j` (taken on return:
/// [`Split::link_after`]), the block's segment after the call.
#[derive(Clone, Debug)]
pub struct Split {
    /// Original nodes and edges first, with the same ids; then per call
    /// site its return site (and the next call vertex of the block), and
    /// the edges `c -> r` (one per call, in call order), then the links.
    pub cfg: Cfg,
    /// Per local call: its call vertex.
    pub call_vertex: Vec<NodeId>,
    /// Per local call: its return-site vertex.
    pub return_site: Vec<NodeId>,
    /// Per local call: the edge `c -> r`.
    pub call_edge: Vec<EdgeId>,
    /// Per local call: the link out of its return site, taken when the
    /// call returns: `r -> c'` to the block's next call vertex, if the
    /// block makes another call, or `r -> j` to the join of its cases.
    pub link_after: Vec<Option<EdgeId>>,
    /// Per local call: the link into its call vertex taken when the call is
    /// made (from the segment before a case, or from the join of the cases
    /// of the call before it); `None` when control is at the call vertex
    /// already.
    pub link_before: Vec<Option<EdgeId>>,
    /// Per local call: the first case of its call (itself for a call with
    /// no cases).
    pub first_case: Vec<usize>,
    /// Per split node: the original block it is a segment of.
    pub block_of: Vec<NodeId>,
    /// Per original node: its last segment (the node itself if it makes no
    /// call).
    pub last: Vec<NodeId>,
    /// Per split node: the local call whose call vertex it is.
    pub call_at: Vec<Option<usize>>,
    /// Per split node: the local call whose return site it is.
    pub return_of: Vec<Option<usize>>,
    /// Number of edges of the original CFG (the first edges of `cfg`).
    pub original_edges: usize,
}

/// The nodes [`Split::new`] adds, as it adds them.
struct Segments {
    block_of: Vec<NodeId>,
    call_at: Vec<Option<usize>>,
    return_of: Vec<Option<usize>>,
}

impl Segments {
    fn fresh(&mut self, block: NodeId) -> NodeId {
        self.block_of.push(block);
        self.call_at.push(None);
        self.return_of.push(None);
        NodeId::new(self.block_of.len() - 1)
    }
}

impl Split {
    /// Splits `func`'s blocks at its calls.
    pub fn new(func: &Function) -> Split {
        let orig = &func.cfg;
        let n = orig.num_nodes();
        let num_calls = func.calls.len();
        let mut last: Vec<NodeId> = orig.nodes().collect();
        let mut seg = Segments {
            block_of: orig.nodes().collect(),
            call_at: vec![None; n],
            return_of: vec![None; n],
        };
        let (mut call_vertex, mut return_site) = (Vec::new(), Vec::new());
        let mut first_case = Vec::with_capacity(num_calls);
        // (the call whose link it is, from, to, taken after that call returns)
        let mut links: Vec<(usize, NodeId, NodeId, bool)> = Vec::new();
        let mut i = 0;
        while i < num_calls {
            let b = func.calls[i].block;
            let end = (i + 1..num_calls)
                .find(|&k| !func.is_case(k))
                .unwrap_or(num_calls);
            let p = last[b.index()];
            let fresh_block = p == b && seg.call_at[b.index()].is_none();
            for k in i..end {
                // A lone call is made by the segment control is at if that
                // is the block itself; anything else gets a vertex of its own.
                let c = if end - i == 1 && fresh_block {
                    b
                } else {
                    let c = seg.fresh(b);
                    match seg.return_of[p.index()] {
                        Some(before) if end - i == 1 => links.push((before, p, c, true)),
                        _ => links.push((k, p, c, false)),
                    }
                    c
                };
                seg.call_at[c.index()] = Some(k);
                let r = seg.fresh(b);
                seg.return_of[r.index()] = Some(k);
                call_vertex.push(c);
                return_site.push(r);
                first_case.push(i);
                last[b.index()] = r;
            }
            if end - i > 1 {
                let j = seg.fresh(b);
                for (k, &r) in return_site.iter().enumerate().skip(i) {
                    links.push((k, r, j, true));
                }
                last[b.index()] = j;
            }
            i = end;
        }
        let mut edges: Vec<(NodeId, NodeId)> = orig
            .edge_list()
            .iter()
            .map(|&(s, d)| (last[s.index()], d))
            .collect();
        let call_edge = (0..num_calls)
            .map(|i| {
                edges.push((call_vertex[i], return_site[i]));
                EdgeId::new(edges.len() - 1)
            })
            .collect();
        let (mut link_after, mut link_before) = (vec![None; num_calls], vec![None; num_calls]);
        for (k, from, to, after) in links {
            edges.push((from, to));
            let slot = if after {
                &mut link_after
            } else {
                &mut link_before
            };
            slot[k] = Some(EdgeId::new(edges.len() - 1));
        }
        Split {
            cfg: Cfg::from_edges(seg.block_of.len(), &edges),
            return_of: seg.return_of,
            call_vertex,
            return_site,
            call_edge,
            link_after,
            link_before,
            first_case,
            block_of: seg.block_of,
            last,
            call_at: seg.call_at,
            original_edges: orig.num_edges(),
        }
    }

    /// Whether split edge `e` is an edge of the original CFG (not a `c -> r`
    /// or `r -> c'` link).
    pub fn is_original(&self, e: EdgeId) -> bool {
        e.index() < self.original_edges
    }
}
