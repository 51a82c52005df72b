//! The trace oracle: path, self-loop and edge counts recomputed from the
//! sequence of CFG edges a run reported to the host, one event per edge
//! crossed (`Action::Trace`).
//!
//! It shares only the CFG with the code under test: backedges come from a
//! depth-first search written here (wasm control flow is reducible, so every
//! DFS finds the same backedges), and paths are cut exactly as Ball & Larus
//! section 4 defines them: at function entry and exit, at backedges (which end
//! one path and begin the next at the loop head), with self loops counted
//! apart (4.1), and a new path at every arrival in an exception handler.

use std::collections::{BTreeMap, HashSet};

use pathprof_graph::{Cfg, EdgeId, NodeId};

/// How a path starts and ends, spelled as the report spells path kinds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathKey {
    pub func: u32,
    pub kind: String,
    pub blocks: Vec<u32>,
}

#[derive(Default, Debug, PartialEq, Eq)]
pub struct Counts {
    pub paths: BTreeMap<PathKey, u64>,
    /// (function, self-loop edge) -> iterations
    pub self_loops: BTreeMap<(u32, u32), u64>,
    /// (function, edge) -> times crossed
    pub edges: BTreeMap<(u32, u32), u64>,
    /// Per path, the sum of the weights [`PathCounter::weigh`] gave its
    /// executions (absent when it gave none).
    pub weights: BTreeMap<PathKey, u64>,
}

/// A function's CFG as the oracle needs it.
pub struct FuncGraph {
    pub cfg: Cfg,
    pub catch_edges: HashSet<EdgeId>,
    /// Blocks where truncation (Ball-Larus 5.3) cuts every path that leaves
    /// them (except into EXIT): a parameter of the profile, not derived here.
    pub cuts: HashSet<NodeId>,
    backedges: HashSet<EdgeId>,
    loop_heads: HashSet<NodeId>,
}

impl FuncGraph {
    pub fn new(cfg: Cfg, catch_edges: HashSet<EdgeId>) -> Self {
        let backedges = dfs_backedges(&cfg);
        let loop_heads = backedges
            .iter()
            .filter(|&&e| cfg.src(e) != cfg.dst(e))
            .map(|&e| cfg.dst(e))
            .collect();
        FuncGraph {
            cfg,
            catch_edges,
            cuts: HashSet::new(),
            backedges,
            loop_heads,
        }
    }
}

impl FuncGraph {
    /// The backedges of a DFS from ENTRY (self loops included).
    pub fn backedges(&self) -> &HashSet<EdgeId> {
        &self.backedges
    }

    /// Whether `n` is the target of a backedge other than a self loop.
    pub fn is_loop_head(&self, n: NodeId) -> bool {
        self.loop_heads.contains(&n)
    }
}

/// Edges into a node on the DFS stack, found from ENTRY with an explicit stack.
fn dfs_backedges(cfg: &Cfg) -> HashSet<EdgeId> {
    let n = cfg.num_nodes();
    let (mut seen, mut on_stack) = (vec![false; n], vec![false; n]);
    let mut back = HashSet::new();
    let mut stack: Vec<(NodeId, usize)> = vec![(Cfg::ENTRY, 0)];
    seen[Cfg::ENTRY.index()] = true;
    on_stack[Cfg::ENTRY.index()] = true;
    while let Some(&mut (v, ref mut i)) = stack.last_mut() {
        if let Some(&e) = cfg.succs(v).get(*i) {
            *i += 1;
            let w = cfg.dst(e);
            if on_stack[w.index()] {
                back.insert(e);
            } else if !seen[w.index()] {
                seen[w.index()] = true;
                on_stack[w.index()] = true;
                stack.push((w, 0));
            }
        } else {
            on_stack[v.index()] = false;
            stack.pop();
        }
    }
    back
}

struct Activation {
    func: u32,
    start: &'static str,
    blocks: Vec<u32>,
    /// Wasm frames on the stack when the activation ran (0: not known).
    depth: u32,
    /// What [`PathCounter::weigh`] gave the path in flight.
    weight: u64,
}

/// Recomputes all counts from a trace of `(function index, edge index)`.
/// Paths still in flight when the trace ends (an abrupt exit) are not counted.
/// An exception is assumed to be caught at most one frame above the frame
/// that threw it; [`count_at_depths`] knows where every event ran.
pub fn count(trace: &[(u32, u32)], graphs: &BTreeMap<u32, FuncGraph>) -> Counts {
    count_at_depths(trace, None, graphs)
}

/// [`count`], with `depths[i]` the number of wasm frames on the stack at
/// event `i`, so that the frames an exception unwinds are known: an event
/// at depth `d` ends (uncounted) every activation deeper than `d`, whose
/// paths in flight are lost as the profiles lose them.
pub fn count_at_depths(
    trace: &[(u32, u32)],
    depths: Option<&[u32]>,
    graphs: &BTreeMap<u32, FuncGraph>,
) -> Counts {
    let mut counter = PathCounter::default();
    for (i, &(f, e)) in trace.iter().enumerate() {
        counter.event(graphs, f, e, depths.map(|d| d[i]));
    }
    counter.counts
}

/// The oracle fed one event at a time, as a run makes them: the state of
/// every live activation and the counts so far, never the trace.
#[derive(Default)]
pub struct PathCounter {
    pub counts: Counts,
    stack: Vec<Activation>,
}

impl PathCounter {
    /// Adds `w` to the weight of the path in flight in the activation on
    /// top of the stack (nothing when none is live).
    pub fn weigh(&mut self, w: u64) {
        if let Some(top) = self.stack.last_mut() {
            top.weight += w;
        }
    }

    /// Crossing edge `e` of function `f`, with the wasm frames on the stack
    /// when that is known ([`count_at_depths`]).
    pub fn event(&mut self, graphs: &BTreeMap<u32, FuncGraph>, f: u32, e: u32, depth: Option<u32>) {
        let (c, stack) = (&mut self.counts, &mut self.stack);
        let g = &graphs[&f];
        let edge = EdgeId::new(e as usize);
        let (src, dst) = g.cfg.edge(edge);
        // A handler continues the activation that caught; any other edge
        // out of ENTRY starts one.
        let catch = src == Cfg::ENTRY && g.catch_edges.contains(&edge);
        if let Some(depth) = depth {
            // Frames deeper than this event's were unwound; at the same
            // depth, a new activation replaces one that ended unseen.
            let entry = src == Cfg::ENTRY && !catch;
            while stack
                .last()
                .is_some_and(|a| a.depth > depth || (entry && a.depth == depth))
            {
                stack.pop();
            }
        }
        let depth = depth.unwrap_or(0);
        *c.edges.entry((f, e)).or_insert(0) += 1;
        let finish = |c: &mut Counts, a: &Activation, end: &str| {
            let key = PathKey {
                func: a.func,
                kind: format!("{}->{end}", a.start),
                blocks: a.blocks.clone(),
            };
            if a.weight > 0 {
                *c.weights.entry(key.clone()).or_insert(0) += a.weight;
            }
            *c.paths.entry(key).or_insert(0) += 1;
        };
        if src == Cfg::ENTRY {
            if catch {
                // A handler begins a new path in the activation that caught;
                // a throw from this activation already ended (and popped) it.
                // What an import threw unwinds the activations above the
                // nearest of `f` with their paths unfinished (without the
                // depths, the nearest catches, as in the supergraph's trace
                // conversion).
                if let Some(at) = stack.iter().rposition(|a| a.func == f) {
                    stack.truncate(at + 1);
                }
                if stack.last().map(|a| a.func) != Some(f) {
                    stack.push(Activation {
                        func: f,
                        start: "handler",
                        blocks: Vec::new(),
                        depth,
                        weight: 0,
                    });
                }
                let top = stack.last_mut().unwrap();
                top.start = "handler";
                top.blocks = Vec::new();
                top.weight = 0;
                if dst == Cfg::EXIT {
                    // A catch clause that targets the function's own label.
                    finish(c, top, "exit");
                    stack.pop();
                } else {
                    top.blocks.push(dst.index() as u32);
                }
            } else {
                stack.push(Activation {
                    func: f,
                    start: "entry",
                    blocks: vec![dst.index() as u32],
                    depth,
                    weight: 0,
                });
            }
            return;
        }
        // An exception that an import caught (one that called back into
        // profiled code) left the activations above the nearest of `f`,
        // their paths unfinished (docs/decisions.md#import-catches).
        if let Some(at) = stack.iter().rposition(|a| a.func == f) {
            stack.truncate(at + 1);
        }
        let top = stack.last_mut().expect("trace edge outside any activation");
        assert_eq!(
            top.func, f,
            "trace event of a function that is not on the stack"
        );
        if src == dst {
            *c.self_loops.entry((f, e)).or_insert(0) += 1;
        } else if g.backedges.contains(&edge) || (g.cuts.contains(&src) && dst != Cfg::EXIT) {
            // A path ends at a backedge or a cut; the next begins at its target.
            finish(
                c,
                top,
                if g.cuts.contains(&src) {
                    "cut"
                } else {
                    "backedge"
                },
            );
            top.start = if g.loop_heads.contains(&dst) {
                "loop head"
            } else {
                "cut"
            };
            top.blocks = vec![dst.index() as u32];
            top.weight = 0;
        } else if dst == Cfg::EXIT {
            finish(c, top, "exit");
            stack.pop();
        } else {
            top.blocks.push(dst.index() as u32);
        }
    }
}

/// A run's trace sink that counts as the events arrive (issue 28, point 4):
/// memory bounded by the live activations, whatever the run's length.
pub struct CountingSink {
    pub graphs: BTreeMap<u32, FuncGraph>,
    pub counter: PathCounter,
    /// Events seen, for callers that check the run was not trivial.
    pub events: u64,
}

impl CountingSink {
    pub fn new(graphs: BTreeMap<u32, FuncGraph>) -> Self {
        CountingSink {
            graphs,
            counter: PathCounter::default(),
            events: 0,
        }
    }
}

impl pathprof_runner::TraceSink for CountingSink {
    fn events(&mut self, events: &[pathprof_runner::TraceEvent]) {
        for ev in events {
            self.counter.event(&self.graphs, ev.func, ev.edge, None);
        }
        self.events += events.len() as u64;
    }
}

/// The keys where the profile's counts `got` and the trace's `expected`
/// differ, one line each with both counts.
pub fn differences<K: Ord + std::fmt::Debug>(
    got: &BTreeMap<K, u64>,
    expected: &BTreeMap<K, u64>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<&K> = got.keys().chain(expected.keys()).collect();
    keys.into_iter()
        .filter(|k| got.get(k) != expected.get(k))
        .map(|k| {
            format!(
                "  {k:?}: profile {:?}, trace {:?}",
                got.get(k),
                expected.get(k)
            )
        })
        .collect()
}
