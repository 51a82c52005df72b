//! Test support, for this crate's tests and those of crates built on it
//! (feature `testing`): random CFGs, the paper's example graphs, a
//! brute-force path enumerator, an interpreter of placed instrumentation and
//! random executions.
//!
//! Everything here is written to be an oracle independent of the algorithms
//! under test: it reads a [`Dag`] only through its edges and adjacency.

pub mod interproc;
pub mod ippp;

use proptest::collection::vec;
use proptest::prelude::*;

use crate::cfg::{Cfg, EdgeId, NodeId};

/// xorshift64* (Vigna): a fixed pseudo-random sequence for test generators
/// that are not proptest strategies (random modules, call graphs), with no
/// dependencies. The seed must not be 0.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform enough in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
use crate::dag::{Dag, DagEdgeId};
use crate::placement::{Op, Placement};

/// Random CFGs with up to `max_blocks` blocks besides ENTRY and EXIT: ENTRY
/// enters the first block and sometimes others (like exception handlers);
/// each block has 0 to 4 successors (0 is a dead end, like a trap), mostly
/// later blocks but also any block (loops, self loops) and EXIT, so there are
/// multi-way branches, parallel edges, unreachable blocks and blocks that
/// cannot reach EXIT. Never an edge into ENTRY or out of EXIT.
pub fn arb_cfg(max_blocks: usize) -> impl Strategy<Value = Cfg> {
    (1..=max_blocks.max(1))
        .prop_flat_map(|n| {
            let blocks: Vec<_> = (0..n).map(|i| arb_succs(i, n)).collect();
            (blocks, vec(0..n, 0..=2))
        })
        .prop_map(|(succs, extra_entries)| cfg_from_lists(&succs, &extra_entries))
}

/// Successors of block `i` of `n`, as indices for [`cfg_from_lists`].
fn arb_succs(i: usize, n: usize) -> impl Strategy<Value = Vec<usize>> {
    // Index `n` stands for EXIT.
    let target = if i + 1 < n {
        prop_oneof![4 => (i + 1)..n, 2 => 0..n, 1 => Just(n)].boxed()
    } else {
        prop_oneof![2 => 0..n, 1 => Just(n)].boxed()
    };
    let degree = prop_oneof![1 => Just(0usize), 10 => 1usize..=4];
    degree.prop_flat_map(move |d| vec(target.clone(), d))
}

/// A CFG whose block `i` (node `i + 2`) has the successors `succs[i]`, where
/// `succs.len()` stands for EXIT. ENTRY enters block 0 and each block of
/// `extra_entries`.
pub fn cfg_from_lists(succs: &[Vec<usize>], extra_entries: &[usize]) -> Cfg {
    let n = succs.len();
    let mut cfg = Cfg::new();
    let blocks: Vec<NodeId> = (0..n).map(|_| cfg.add_node()).collect();
    let node = |t: usize| if t >= n { Cfg::EXIT } else { blocks[t] };
    if n > 0 {
        cfg.add_edge(Cfg::ENTRY, blocks[0]);
    }
    for &b in extra_entries.iter().filter(|&&b| b < n) {
        cfg.add_edge(Cfg::ENTRY, blocks[b]);
    }
    for (i, targets) in succs.iter().enumerate() {
        for &t in targets {
            cfg.add_edge(blocks[i], node(t));
        }
    }
    cfg
}

/// The paper's Fig. 1: `ENTRY->A, A->B, A->C, B->C, B->D, C->D, D->F, D->E,
/// E->F, F->EXIT`, added in that order (edge ids 0 to 9), so B's successors
/// are `[C, D]` and D's are `[F, E]`, the order that gives the paper's path
/// numbers. Returns the graph and `[A, ..., F]`.
pub fn figure1() -> (Cfg, [NodeId; 6]) {
    let mut cfg = Cfg::new();
    let n: [NodeId; 6] = std::array::from_fn(|_| cfg.add_node());
    let [a, b, c, d, e, f] = n;
    for (s, t) in [
        (Cfg::ENTRY, a),
        (a, b),
        (a, c),
        (b, c),
        (b, d),
        (c, d),
        (d, f),
        (d, e),
        (e, f),
        (f, Cfg::EXIT),
    ] {
        cfg.add_edge(s, t);
    }
    (cfg, n)
}

/// Every ENTRY->EXIT path of `dag` by depth-first enumeration, or `None` if
/// there are more than `limit`. Exponential; for small graphs only.
pub fn enumerate_paths(dag: &Dag, limit: usize) -> Option<Vec<Vec<DagEdgeId>>> {
    let mut paths = Vec::new();
    let mut path: Vec<DagEdgeId> = Vec::new();
    // Frames: a node and the index of its next successor to try.
    let mut stack = vec![(Cfg::ENTRY, 0usize)];
    while let Some(&mut (v, ref mut next)) = stack.last_mut() {
        if v == Cfg::EXIT {
            paths.push(path.clone());
            if paths.len() > limit {
                return None;
            }
        }
        match dag.succs(v).get(*next) {
            Some(&d) if v != Cfg::EXIT => {
                *next += 1;
                path.push(d);
                stack.push((dag.edges[d.index()].dst, 0));
            }
            _ => {
                stack.pop();
                path.pop();
            }
        }
    }
    Some(paths)
}

/// An interpreter of placed instrumentation: the path register and the
/// counter updates it has made, in order. Arithmetic wraps, as in wasm.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpMachine {
    pub r: u64,
    pub counted: Vec<u64>,
}

impl OpMachine {
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Init(c) => self.r = c as u64,
            Op::Add(c) => self.r = self.r.wrapping_add(c as u64),
            Op::Count(c) => self.counted.push(self.r.wrapping_add(c as u64)),
            Op::CountConst(c) => self.counted.push(c as u64),
        }
    }

    /// Runs the ops of each DAG edge of `path` in turn.
    pub fn run_path(&mut self, ops: &Placement, path: &[DagEdgeId]) {
        for &d in path {
            for &op in &ops[d.index()] {
                self.apply(op);
            }
        }
    }
}

/// How a [`Walk`] ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    Exit,
    /// The activation stopped in this vertex (a dead end, or out of steps).
    Abrupt(NodeId),
}

/// One activation of a CFG: the edges it took, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    pub edges: Vec<EdgeId>,
    pub end: WalkEnd,
}

/// Walks `cfg` from ENTRY taking successor `choices[i] % out-degree` at step
/// `i`, until EXIT, a vertex with no successor, or the end of `choices`.
pub fn random_walk(cfg: &Cfg, choices: &[u32]) -> Walk {
    let mut edges = Vec::new();
    let mut v = Cfg::ENTRY;
    for &choice in choices {
        if v == Cfg::EXIT {
            return Walk {
                edges,
                end: WalkEnd::Exit,
            };
        }
        let succs = cfg.succs(v);
        if succs.is_empty() {
            break;
        }
        let e = succs[choice as usize % succs.len()];
        edges.push(e);
        v = cfg.dst(e);
    }
    let end = if v == Cfg::EXIT {
        WalkEnd::Exit
    } else {
        WalkEnd::Abrupt(v)
    };
    Walk { edges, end }
}
