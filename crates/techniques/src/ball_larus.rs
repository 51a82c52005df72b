//! Ball-Larus acyclic, intraprocedural path profiling as a plan.
//!
//! Implements the whole pipeline of Ball & Larus, "Efficient Path Profiling"
//! (MICRO 1996) on one function's CFG: the DAG with dummy edges for backedges
//! (section 4) and self loops set aside (4.1), path numbering (Fig. 5, 5.2) with
//! truncation (5.3), chord increments on a maximum spanning tree (3.3), placement
//! (Fig. 8), counter storage (array or hash table, 5.3), and decoding of the
//! counters back into path counts (3.5 regenerates them later, in reports).
//!
//! Departures from the paper:
//! - A backedge v->w is instrumented with the actions of both its dummy edges,
//!   `v->EXIT` then `ENTRY->w`, rather than with a fixed `count[r]++; r = 0`:
//!   this is what the dummy edges mean, and it lets their increments fold in.
//! - A self loop gets a slot counter of its own (4.1); its iterations do not
//!   split the path that runs through its block.

use pathprof_graph::dag::{CfgToDag, Dag, DagEdgeId, DagEdgeKind};
use pathprof_graph::numbering::{self, Numbering};
use pathprof_graph::placement::{self, Op};
use pathprof_graph::spanning;
use pathprof_graph::{Cfg, EdgeId, GraphError, NodeId};
use serde::{Deserialize, Serialize};

use crate::plan::{Action, EdgeActions, FunctionPlan, PathTable, RawCounters, Width};

/// The most paths a function counts in an array by default, and where its
/// paths are truncated (5.3) by default: 2^16 paths, 512 KiB of counters.
/// Truncating at 2^18 instead costs as many instructions but 3-4 times the
/// counter memory (SQLite: 177 MiB against 55 MiB), at 2^14 more path ends
/// (Lua's interpreter loop, 27,922 paths, would be cut: +31 % of its path
/// executions); docs/decisions.md#truncation-at-array-limit.
pub const ARRAY_MAX: u64 = 1 << 16;

/// Tunables of the Ball-Larus plan.
#[derive(Clone, Debug)]
pub struct Options {
    /// Truncate (5.3) at a node whose NumPaths would pass this.
    pub truncate_above: u64,
    /// Use an array of counters when the function has at most this many paths,
    /// a hash table otherwise.
    pub array_max: u64,
    /// Entries of a hash table (rounded up to a power of two).
    pub hash_capacity: u32,
    /// Bytes of counter memory for the arrays of functions with more than
    /// `array_max` paths, handed out in function order ([`ArrayBudget`]);
    /// 0: such functions always hash.
    pub array_budget: u64,
    /// Bytes of counter memory for all the path tables of a module (arrays,
    /// and hash tables larger than [`SPILL_HASH_CAPACITY`]), handed out in
    /// function order ([`ArrayBudget`]): the functions after it is spent
    /// count in hash tables of [`SPILL_HASH_CAPACITY`] entries, which grow
    /// as they fill. A large module whose functions each fit an array would
    /// otherwise need more counter memory than a 32-bit memory holds
    /// (100,000 functions of 5,000 paths: 4.3 GB; of hash tables of 4,096
    /// entries: 6.6 GB), most of it for functions that never run.
    pub array_memory_max: u64,
}

/// Entries of the hash tables of the functions past
/// [`Options::array_memory_max`]: a table of 1 KiB for a function that
/// does not run; one that does grows overflow tables of twice the size.
pub const SPILL_HASH_CAPACITY: u32 = 64;

impl Default for Options {
    fn default() -> Self {
        Options {
            // Departure from 5.3, which hashes routines with more paths than
            // an increment's immediate field holds and truncates only past
            // 10^8 paths: paths are truncated where a function's count would
            // pass the array limit, so every function counts in an array. A
            // hash-table count costs about three times an array count, and
            // truncation's extra path ends (a cut block ends a path and
            // starts the next) cost less than the hashing they replace
            // (JIT instructions of the suite's path mode: bzip2 +35.7 % ->
            // +20.4 %, SQLite +21.4 % -> +13.9 %; docs/decisions.md#truncation-at-array-limit).
            // What is lost is the relation between the part of a path before
            // a cut and the part after it. `truncate_above` up to 2^40 keeps
            // longer paths and hashes the functions above `array_max`.
            truncate_above: ARRAY_MAX,
            array_max: ARRAY_MAX,
            hash_capacity: 1 << 12,
            // Off: an array of a large function is fewer instructions than
            // its hash table (lz4: -2.2 % of run time with 16 MiB), but not
            // always faster (zlib: +1.1 %), and the host reads and keeps all
            // of the counter memory (zlib's run: +15 MiB of counters, +43 MiB
            // of peak RSS). docs/decisions.md#array-budget-off.
            array_budget: 0,
            // A quarter of a 32-bit counter memory: the arrays of the
            // suite's largest program (SQLite) take 58 MB.
            array_memory_max: 1 << 30,
        }
    }
}

impl Options {
    /// The options to plan with when an [`ArrayBudget`] decides later: a
    /// function whose array the whole budget could hold plans an array.
    pub fn planning(&self) -> Options {
        Options {
            array_max: self.array_max.max(self.array_budget / 8),
            ..self.clone()
        }
    }
}

/// A module's budgets of counter memory for path arrays: `array_budget`
/// for arrays above `array_max` paths, `array_memory_max` for all arrays.
/// The functions are planned with [`Options::planning`] (on worker threads,
/// in any order), then admitted in function order: an array of at most
/// `array_max` paths while the memory lasts, a larger one while both last.
/// A function refused is planned again with [`ArrayBudget::refuse`]'s
/// options: with `array_max` (it hashes), or, once the memory is spent,
/// with small hash tables. The order makes the choice deterministic; it
/// does not know which functions are hot, so the first functions get the
/// arrays. (Departure from 5.3, which chooses by path count alone.)
#[derive(Clone, Debug)]
pub struct ArrayBudget {
    array_max: u64,
    left: u64,
    memory_left: u64,
    memory_max: u64,
}

impl ArrayBudget {
    pub fn new(opts: &Options) -> Self {
        ArrayBudget {
            array_max: opts.array_max,
            left: opts.array_budget,
            memory_left: opts.array_memory_max,
            memory_max: opts.array_memory_max,
        }
    }

    /// Whether a function planned with `table` keeps it; an array takes
    /// its bytes from the budgets, a hash table larger than the spill
    /// tables from the memory budget.
    pub fn admit(&mut self, table: PathTable) -> bool {
        let len = match table {
            PathTable::None => return true,
            PathTable::Hash { capacity } if capacity <= SPILL_HASH_CAPACITY => return true,
            PathTable::Hash { .. } => {
                let bytes = u64::try_from(table.bytes()).unwrap_or(u64::MAX);
                if bytes > self.memory_max {
                    // No budget holds it: the user's --hash-capacity, kept
                    // (the layout names the setting if no memory can).
                    return true;
                }
                if bytes > self.memory_left {
                    return false;
                }
                self.memory_left -= bytes;
                return true;
            }
            PathTable::Array { len } => len,
        };
        let bytes = len.saturating_mul(8);
        let large = len > self.array_max;
        if bytes > self.memory_left || (large && bytes > self.left) {
            return false;
        }
        self.memory_left -= bytes;
        if large {
            self.left -= bytes;
        }
        true
    }

    /// `None` if a function planned with `table` keeps it (as
    /// [`ArrayBudget::admit`]), else the options to plan it again with.
    pub fn refuse(&mut self, table: PathTable, opts: &Options) -> Option<Options> {
        if self.admit(table) {
            return None;
        }
        // A hash table is refused only when the memory is spent.
        let spent = match table {
            PathTable::Array { len } => len.saturating_mul(8) > self.memory_left,
            _ => true,
        };
        Some(if spent {
            Options {
                array_max: 0,
                hash_capacity: opts.hash_capacity.min(SPILL_HASH_CAPACITY),
                ..opts.clone()
            }
        } else {
            opts.clone()
        })
    }

    /// For a planner that goes in function order: plans with the planning
    /// limit (`ahead`, from [`Options::planning`]), and again when the
    /// budgets refuse the table.
    pub fn plan<P, E>(
        &mut self,
        opts: &Options,
        ahead: &Options,
        plan: impl Fn(&Options) -> Result<P, E>,
        table: impl Fn(&P) -> PathTable,
    ) -> Result<P, E> {
        let planned = plan(ahead)?;
        match self.refuse(table(&planned), opts) {
            None => Ok(planned),
            Some(again) => plan(&again),
        }
    }
}

/// What a profile keeps of a function's numbering, enough to regenerate every
/// path (3.5) without the module: the DAG edges with their Val, and which CFG
/// edges are backedges, self loops and truncation cuts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Numbered {
    pub num_nodes: usize,
    pub dag_edges: Vec<NumberedEdge>,
    /// NumPaths(ENTRY): every path number is below it.
    pub total: u64,
    pub backedges: Vec<EdgeId>,
    /// Self loops in slot order: slot i counts iterations of `self_loops[i]`.
    pub self_loops: Vec<EdgeId>,
    pub loop_heads: Vec<NodeId>,
    pub cut_nodes: Vec<NodeId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberedEdge {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: EdgeRole,
    pub val: u64,
}

/// Serializable mirror of [`DagEdgeKind`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EdgeRole {
    Real(EdgeId),
    EntryDummy,
    ExitDummy,
}

/// The plan of one function and what decoding its counters needs.
#[derive(Clone, Debug)]
pub struct Planned {
    pub plan: FunctionPlan,
    pub numbered: Numbered,
    /// Chords carrying an increment (for statistics).
    pub chords: usize,
}

/// Plans Ball-Larus path profiling of `cfg`. `weights` are per-CFG-edge
/// execution estimates (a prior profile); `None` uses loop-nesting weights.
pub fn plan(cfg: &Cfg, weights: Option<&[u64]>, opts: &Options) -> Result<Planned, GraphError> {
    let (dag, numbering) = numbered_dag(cfg, weights, opts)?;
    let incs = increments(cfg, &dag, &numbering.val, weights);
    let ops = placement::place(&dag, &incs);
    let chords = incs.chord.iter().filter(|&&c| c).count();
    let plan = lower(
        cfg,
        &dag.cfg_to_dag,
        &dag.self_loops,
        &ops,
        numbering.total(),
        opts,
    )?;
    Ok(Planned {
        plan,
        numbered: numbered(&dag, &numbering),
        chords,
    })
}

/// The plan alone, as [`plan`] makes it: for an instrumenter that records
/// the CFG and rebuilds the numbering when decoding. Each structure goes as
/// soon as the next step no longer needs it (NumPaths before the spanning
/// tree, Val once the increments are known, all of the DAG but its map from
/// CFG edges once the ops are placed): a large function's planning is when the
/// instrumenter needs the most memory.
///
/// Also returns the DAG's cut vertices ([`Dag::cut_nodes`]): a decoder
/// rebuilds the DAG from them, as the cuts depend on `weights`.
pub fn plan_only(
    cfg: &Cfg,
    weights: Option<&[u64]>,
    opts: &Options,
) -> Result<(FunctionPlan, Vec<NodeId>), GraphError> {
    let (dag, numbering) = numbered_dag(cfg, weights, opts)?;
    let total = numbering.total();
    // NumPaths goes before the tree; Val once the increments are known.
    let Numbering { val, num_paths } = numbering;
    drop(num_paths);
    let incs = increments(cfg, &dag, &val, weights);
    drop(val);
    let ops = placement::place(&dag, &incs);
    drop(incs);
    // A temporary, so that the fields not bound are dropped here.
    let Dag {
        cfg_to_dag,
        self_loops,
        cut_nodes,
        ..
    } = { dag };
    let plan = lower(cfg, &cfg_to_dag, &self_loops, &ops, total, opts)?;
    Ok((plan, cut_nodes))
}

/// The DAG and numbering of `cfg`, truncated where the paths that ran in a
/// prior profile (`weights`, per CFG edge) do not pass when that fits
/// ([`numbering::build_numbered_guided`]).
fn numbered_dag(
    cfg: &Cfg,
    weights: Option<&[u64]>,
    opts: &Options,
) -> Result<(Dag, numbering::Numbering), GraphError> {
    let flow = weights.map(|w| pathprof_graph::weights::node_flow(cfg, w));
    numbering::build_numbered_guided(cfg, opts.truncate_above, flow.as_deref())
}

/// The chord increments (3.3) of `dag` on a maximum spanning tree; the
/// tree, no longer needed, is dropped.
fn increments(cfg: &Cfg, dag: &Dag, val: &[u64], weights: Option<&[u64]>) -> spanning::Increments {
    let tree = spanning_tree(cfg, dag, weights);
    spanning::increments_on_tree(dag, &tree, val)
}

/// The plan that carries out `ops` for `total` paths.
/// `cfg_to_dag` and `self_loops` are the DAG's.
fn lower(
    cfg: &Cfg,
    cfg_to_dag: &CfgToDag,
    self_loops: &[EdgeId],
    ops: &placement::Placement,
    total: u64,
    opts: &Options,
) -> Result<FunctionPlan, GraphError> {
    let mut plan = FunctionPlan::empty(cfg.num_edges());
    plan.registers = vec![register_width(total)];
    plan.paths = path_table(total, opts);
    plan.slots = u32::try_from(self_loops.len()).map_err(|_| GraphError::TooManyPaths)?;
    let actions = ops.ops() + self_loops.len();
    // A self loop has no DAG edge, only its slot; `self_loops` is in edge
    // order, so its slots are met in order.
    let mut self_loops = self_loops.iter().peekable();
    let mut slot = 0;
    plan.edges = EdgeActions::from_fn_sized(cfg.num_edges(), actions, |e, actions| {
        for &d in &cfg_to_dag[e] {
            actions.extend(ops[d.index()].iter().map(lower_op));
        }
        if self_loops.next_if(|s| s.index() == e).is_some() {
            actions.push(Action::CountSlot { index: slot });
            slot += 1;
        }
    });
    Ok(plan)
}

/// The maximum spanning tree (3.3) of `dag` under `weights` (per CFG edge,
/// a prior profile's counts), or under loop-nesting weights without them.
pub(crate) fn spanning_tree(cfg: &Cfg, dag: &Dag, weights: Option<&[u64]>) -> Vec<bool> {
    // The CFG's static weights are gone before the tree is built, and are
    // never a vector of their own: the nesting depths give them edge by edge.
    let dag_weights = match weights {
        Some(w) => spanning::dag_weights(dag, cfg, w),
        None => {
            let nesting = pathprof_graph::weights::LoopNesting::new(cfg);
            spanning::dag_weights_by(dag, cfg, |e| nesting.weight(e))
        }
    };
    spanning::spanning_tree(dag, &dag_weights)
}

/// The narrowest register that holds every path number below `total`.
pub(crate) fn register_width(total: u64) -> Width {
    if total <= u64::from(u32::MAX) {
        Width::I32
    } else {
        Width::I64
    }
}

/// Counter storage for `total` paths (5.3): an array up to
/// `opts.array_max`, a hash table beyond.
pub(crate) fn path_table(total: u64, opts: &Options) -> PathTable {
    if total <= opts.array_max {
        PathTable::Array { len: total }
    } else {
        PathTable::Hash {
            capacity: opts.hash_capacity.max(2).next_power_of_two(),
        }
    }
}

fn lower_op(op: &Op) -> Action {
    match *op {
        Op::Init(v) => Action::Set { reg: 0, value: v },
        Op::Add(v) => Action::Add { reg: 0, value: v },
        Op::Count(v) => Action::CountPath { reg: 0, offset: v },
        // Every path number is non-negative: a constant count is a path number.
        Op::CountConst(v) => Action::CountPathConst { path: v as u64 },
    }
}

pub fn numbered(dag: &Dag, numbering: &Numbering) -> Numbered {
    let dag_edges = dag
        .edges
        .iter()
        .enumerate()
        .map(|(i, e)| NumberedEdge {
            src: e.src,
            dst: e.dst,
            kind: match e.kind {
                DagEdgeKind::Real(c) => EdgeRole::Real(c),
                DagEdgeKind::EntryDummy => EdgeRole::EntryDummy,
                DagEdgeKind::ExitDummy => EdgeRole::ExitDummy,
            },
            val: numbering.val[i],
        })
        .collect();
    Numbered {
        num_nodes: dag.num_nodes,
        dag_edges,
        total: numbering.total(),
        backedges: dag.backedges.clone(),
        self_loops: dag.self_loops.clone(),
        loop_heads: dag.loop_heads.clone(),
        cut_nodes: dag.cut_nodes.clone(),
    }
}

/// Path counts of one function decoded from its raw counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathCounts {
    /// `(path number, count)`, sorted by path number.
    pub paths: Vec<(u64, u64)>,
    /// Iterations of each self loop, in `Numbered::self_loops` order.
    pub self_loops: Vec<u64>,
    /// Counts a full hash table had to drop.
    pub lost: u64,
}

/// Decodes raw counters. Fails if a counter names a path that cannot exist,
/// which means the counters do not belong to this numbering.
pub fn decode(numbered: &Numbered, raw: &RawCounters) -> Result<PathCounts, GraphError> {
    if let Some(&(p, _)) = raw.paths.iter().find(|(p, _)| *p >= numbered.total) {
        return Err(GraphError::PathOutOfRange {
            path: p,
            total: numbered.total,
        });
    }
    let mut self_loops = raw.slots.clone();
    self_loops.resize(numbered.self_loops.len(), 0);
    Ok(PathCounts {
        paths: raw.paths.clone(),
        self_loops,
        lost: raw.lost,
    })
}

/// How a path begins and ends (Ball & Larus section 4's four kinds, plus the
/// paths that begin at an exception handler or at a truncation cut).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathStart {
    Entry,
    LoopHead,
    AfterCut,
    Handler,
}
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathEnd {
    Exit,
    Backedge,
    Cut,
}

/// A regenerated path: the blocks it runs through, in order, and its kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegeneratedPath {
    pub blocks: Vec<NodeId>,
    /// The CFG edges it runs along (real edges only).
    pub edges: Vec<EdgeId>,
    pub start: PathStart,
    pub end: PathEnd,
}

impl Numbered {
    /// Rebuilds the DAG and numbering this record was made from.
    pub fn to_dag(&self) -> (Dag, Numbering) {
        let edges = self
            .dag_edges
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    EdgeRole::Real(c) => DagEdgeKind::Real(c),
                    EdgeRole::EntryDummy => DagEdgeKind::EntryDummy,
                    EdgeRole::ExitDummy => DagEdgeKind::ExitDummy,
                };
                (e.src, e.dst, kind)
            })
            .collect::<Vec<_>>();
        let dag = Dag::from_edges(self.num_nodes, &edges);
        let val = self.dag_edges.iter().map(|e| e.val).collect();
        let numbering = Numbering::from_val(&dag, val);
        (dag, numbering)
    }

    /// Regenerates path `number` (3.5). `is_catch` tells which real edges out
    /// of ENTRY are exception-handler arrivals rather than the function entry.
    pub fn regenerate(
        &self,
        dag: &Dag,
        numbering: &Numbering,
        number: u64,
        is_catch: impl Fn(EdgeId) -> bool,
    ) -> Result<RegeneratedPath, GraphError> {
        let dag_path: Vec<DagEdgeId> =
            pathprof_graph::regenerate::regenerate(dag, numbering, number)?;
        let mut blocks = Vec::new();
        let mut edges = Vec::new();
        for &d in &dag_path {
            let e = &dag.edges[d.index()];
            if e.dst != Cfg::EXIT {
                blocks.push(e.dst);
            }
            if let DagEdgeKind::Real(c) = e.kind {
                edges.push(c);
            }
        }
        let first = &dag.edges[dag_path[0].index()];
        let last = &dag.edges[dag_path[dag_path.len() - 1].index()];
        let start = match first.kind {
            DagEdgeKind::Real(c) if is_catch(c) => PathStart::Handler,
            DagEdgeKind::Real(_) => PathStart::Entry,
            _ if self.loop_heads.contains(&first.dst) => PathStart::LoopHead,
            _ => PathStart::AfterCut,
        };
        let end = match last.kind {
            DagEdgeKind::Real(_) => PathEnd::Exit,
            _ if self.cut_nodes.contains(&last.src) => PathEnd::Cut,
            _ => PathEnd::Backedge,
        };
        Ok(RegeneratedPath {
            blocks,
            edges,
            start,
            end,
        })
    }
}
