//! Static edge weights from loop nesting, for when no profile is at hand.
//!
//! The spanning trees of [`crate::spanning`] and [`crate::flow`] want the
//! most frequently executed edges. Without a profile, PP uses QPT's estimate
//! (Ball & Larus 1994, cited in section 3): code nested `d` loops deep runs
//! about `10^d` times as often as code outside loops.
//!
//! Loops are found with Havlak's algorithm ("Nesting of reducible and
//! irreducible loops", TOPLAS 1997) over the same DFS from ENTRY that finds
//! the backedges of [`crate::dag`]: a vertex with incoming backedges heads a
//! loop made of the vertices that reach a backedge source without passing
//! the head. Processing heads in reverse
//! preorder and collapsing each finished loop into its head with union-find
//! gives every vertex its innermost head in near-linear time, irreducible
//! loops included (each is headed by its first vertex in DFS preorder). A
//! self loop makes its vertex a loop of its own.
//!
//! Departure from "the depth of the source": an edge weighs
//! `10^min(depth(src), depth(dst))`, so an edge leaving a loop counts as often
//! as the code it leads to (once per loop execution), not as the loop body.
//! Edges ENTRY does not reach weigh 0.

use crate::cfg::{Cfg, EdgeId};
use crate::dfs::Dfs;

/// Per CFG edge, `10^depth` (saturating) where `depth` is the smaller loop
/// nesting depth of its two ends; 0 for unreachable edges.
pub fn loop_nesting_weights(cfg: &Cfg) -> Vec<u64> {
    let nesting = LoopNesting::new(cfg);
    cfg.edge_ids().map(|e| nesting.weight(e)).collect()
}

/// The loop nesting depths of a CFG's nodes, which give
/// [`loop_nesting_weights`] one edge at a time: 4 bytes a node rather than
/// 8 an edge, for callers that want the weights of another graph's edges.
pub struct LoopNesting<'g> {
    cfg: &'g Cfg,
    depth: Vec<u32>,
}

impl<'g> LoopNesting<'g> {
    pub fn new(cfg: &'g Cfg) -> Self {
        LoopNesting {
            cfg,
            depth: depths(cfg, cfg.dfs()),
        }
    }

    /// The weight of CFG edge `e` (see [`loop_nesting_weights`]).
    pub fn weight(&self, e: EdgeId) -> u64 {
        let (v, w) = self.cfg.edge(e);
        if self.cfg.dfs().reached(v) {
            10u64.saturating_pow(self.depth[v.index()].min(self.depth[w.index()]))
        } else {
            0
        }
    }
}

/// Per node, the number of loops containing it (0 outside loops and for
/// nodes ENTRY does not reach).
pub fn loop_nesting_depths(cfg: &Cfg) -> Vec<u32> {
    depths(cfg, cfg.dfs())
}

fn depths(cfg: &Cfg, dfs: &Dfs) -> Vec<u32> {
    let forest = LoopForest::build(cfg, dfs);
    let mut depth = vec![0u32; cfg.num_nodes()];
    // A head precedes its body in preorder, so its depth is known first.
    for (p, &v) in dfs.preorder().iter().enumerate() {
        let h = forest.header[p];
        let outer = if h == NONE {
            0
        } else {
            depth[dfs.preorder()[h as usize].index()]
        };
        depth[v.index()] = outer + u32::from(forest.is_head[p]);
    }
    depth
}

/// No vertex: preorder numbers fit u32, as node ids do.
const NONE: u32 = u32::MAX;

/// Havlak's loop nesting forest, indexed by preorder number. Its vectors
/// hold 4-byte preorder numbers: this runs while a large function's CFG
/// is alive, and 8-byte ones and a vector of lists per vertex made it one
/// of the planning's largest allocations.
struct LoopForest {
    /// The innermost loop head strictly containing each vertex, or NONE.
    header: Vec<u32>,
    is_head: Vec<bool>,
}

/// Irreducible entries handed to heads, beside their own preds: a list per
/// vertex, linked through one pool (few vertices have any).
struct ExtraPreds {
    first: Vec<u32>,
    /// (pred, next entry of the same vertex's list or NONE).
    pool: Vec<(u32, u32)>,
}

impl ExtraPreds {
    fn of(&self, x: usize) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.first[x];
        std::iter::from_fn(move || {
            let (pred, next) = *self.pool.get(at as usize)?;
            at = next;
            Some(pred as usize)
        })
    }

    fn push(&mut self, x: usize, pred: u32) {
        let at = u32::try_from(self.pool.len()).expect("fewer entries than edges");
        self.pool.push((pred, self.first[x]));
        self.first[x] = at;
    }
}

impl LoopForest {
    fn build(cfg: &Cfg, dfs: &Dfs) -> LoopForest {
        let n = dfs.preorder().len();
        let mut extra = ExtraPreds {
            first: vec![NONE; n],
            pool: Vec::new(),
        };
        let mut forest = LoopForest {
            header: vec![NONE; n],
            is_head: vec![false; n],
        };
        // Union-find whose representative is the outermost collapsed head.
        let mut collapsed: Vec<u32> = (0..n as u32).collect();
        // `in_body[x] == w + 1` marks x as collected into the loop of w.
        let mut in_body = vec![0u32; n];
        // Reused for every head.
        let (mut body, mut entries, mut work) = (Vec::new(), Vec::new(), Vec::new());
        for w in (0..n).rev() {
            let mark = w as u32 + 1;
            body.clear();
            for v in preds(cfg, dfs, w, true) {
                forest.is_head[w] = true;
                let x = find(&mut collapsed, v);
                if x != w && in_body[x] != mark {
                    in_body[x] = mark;
                    body.push(x);
                }
            }
            entries.clear();
            work.clear();
            work.extend_from_slice(&body);
            while let Some(x) = work.pop() {
                for y in preds(cfg, dfs, x, false).chain(extra.of(x)) {
                    let y = find(&mut collapsed, y);
                    if !dfs_descends(dfs, w, y) {
                        // Irreducible: the loop is entered past its head. The
                        // entry becomes the head's, so enclosing loops see it.
                        entries.push(y as u32);
                    } else if y != w && in_body[y] != mark {
                        in_body[y] = mark;
                        body.push(y);
                        work.push(y);
                    }
                }
            }
            for &y in &entries {
                extra.push(w, y);
            }
            for &x in &body {
                forest.header[x] = w as u32;
                collapsed[x] = w as u32;
            }
        }
        forest
    }
}

/// The sources (preorder numbers) of the edges from reached vertices into
/// preorder vertex `w`: the backedges (self loops included) if `back`, the
/// others if not. Read off the CFG's predecessor lists as they are needed,
/// which visits each list about once, rather than copied into lists of
/// their own first.
fn preds<'g>(cfg: &'g Cfg, dfs: &'g Dfs, w: usize, back: bool) -> impl Iterator<Item = usize> + 'g {
    cfg.preds(dfs.preorder()[w]).iter().filter_map(move |&e| {
        let v = cfg.src(e);
        (dfs.reached(v) && dfs.is_backedge(cfg, e) == back).then(|| dfs.pre(v))
    })
}

/// Whether preorder number `d` is a DFS descendant of (or equal to) `a`.
fn dfs_descends(dfs: &Dfs, a: usize, d: usize) -> bool {
    dfs.is_ancestor(dfs.preorder()[a], dfs.preorder()[d])
}

fn find(parent: &mut [u32], x: usize) -> usize {
    let mut x = x;
    while parent[x] as usize != x {
        parent[x] = parent[parent[x] as usize];
        x = parent[x] as usize;
    }
    x
}

/// How often each node ran, from how often each edge ran (`edge_counts`, per
/// CFG edge; missing ones count as 0): the flow into it, or out of it for
/// ENTRY. Saturating.
pub fn node_flow(cfg: &Cfg, edge_counts: &[u64]) -> Vec<u64> {
    let mut flow = vec![0u64; cfg.num_nodes()];
    for e in cfg.edge_ids() {
        let (src, dst) = cfg.edge(e);
        let count = edge_counts.get(e.index()).copied().unwrap_or(0);
        flow[dst.index()] = flow[dst.index()].saturating_add(count);
        if src == Cfg::ENTRY {
            flow[src.index()] = flow[src.index()].saturating_add(count);
        }
    }
    flow
}
