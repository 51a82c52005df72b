//! Preferential path profiling (PPP) as a plan: Vaswani, Nori and Chilimbi,
//! "Preferential Path Profiling: Compactly Numbering Interesting Paths"
//! (POPL 2007), and K. Vaswani's thesis, chapter 3.
//!
//! Given a set of *interesting* paths of a function (Ball-Larus ids, e.g. the
//! paths a test suite ran), the function keeps two path registers updated on
//! the chords of one spanning tree (thesis 3.2.3): `r0` sums the Ball-Larus
//! numbering, `r1` the PPP numbering of [`pathprof_graph::ppp`], which gives
//! the interesting paths compact ids in `[min, max]`. At the end of a path,
//! `r1 - min` indexes a table of (Ball-Larus id, count) entries sized to the
//! PPP interval; a bounds check and a comparison with the stored Ball-Larus id
//! classify the path. An interesting path is counted in its entry; what
//! happens to the others is the [`Policy`].
//!
//! Departures from the thesis, and choices it leaves open:
//! - Where PPP's numbering would be less compact than Ball-Larus' for the
//!   same set ([`pathprof_graph::ppp::choose`]), the Ball-Larus numbering is
//!   used as the PPP numbering; then one register serves both roles.
//! - Both registers get their increments on the chords of the *same*
//!   maximum spanning tree (3.3 of Ball & Larus, weighted as for Ball-Larus),
//!   and the Fig. 8 placement, which depends only on the tree, places both:
//!   a chord that initialises, adds or counts does so for both registers.
//! - A path end whose identity is known statically (Fig. 8's `count[c]++`)
//!   is classified here, at plan time: no check is emitted.
//! - A function with no interesting path keeps no table: under `record` it is
//!   profiled as plain Ball-Larus, under `count` every path end counts one
//!   slot, and under `ignore` it gets no path instrumentation at all.
//! - Self loops (Ball & Larus 4.1) keep their own slot counters under every
//!   policy: they are not acyclic paths and cost one increment.
//! - The table is used only where it pays: in a function with at most
//!   `array_max` paths, Ball-Larus counts in an array, which is cheaper than
//!   PPP's check, so there every path is counted by Ball-Larus id and the
//!   classification is done when decoding ([`PppInfo::recorded`]); the same
//!   where the table would pass [`TABLE_MAX`] entries. The profile is the
//!   same either way; only the cost differs.

use pathprof_graph::dag::{Dag, DagEdgeId};
use pathprof_graph::numbering::{self, Numbering};
use pathprof_graph::placement::{self, Op};
use pathprof_graph::ppp::{self, Scheme};
use pathprof_graph::{spanning, Cfg, GraphError};
use serde::{Deserialize, Serialize};

use crate::ball_larus::{self, Numbered, PathCounts};
use crate::plan::{
    Action, EdgeActions, FunctionPlan, Otherwise, PppEnd, PppTable, RawCounters, Width, PPP_HOLE,
};

/// What happens to a path that is not interesting.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// One counter per function for all of them.
    Count,
    /// Their Ball-Larus ids and counts, in an array or the in-module hash
    /// table, so that they can be regenerated (residual path profiling).
    #[default]
    Record,
    /// Nothing.
    Ignore,
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Policy::Count => "count",
            Policy::Record => "record",
            Policy::Ignore => "ignore",
        })
    }
}

/// Tunables: Ball-Larus' (numbering, truncation, record storage) and the policy.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub ball_larus: ball_larus::Options,
    pub policy: Policy,
    /// Number the interesting paths by their Ball-Larus ids even where PPP
    /// is more compact (one register): the baseline PPP is compared with.
    pub force_ball_larus: bool,
}

/// Which numbering the interesting paths got.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdScheme {
    Ppp,
    BallLarus,
}

/// What a profile keeps of one function's PPP instrumentation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppInfo {
    /// Ball-Larus ids of the interesting paths, sorted, distinct.
    pub interesting: Vec<u64>,
    pub numbering: IdScheme,
    /// The PPP interval `[min, max]` of the interesting ids (0, 0 if none).
    pub min: i64,
    pub max: i64,
    /// Holes in the interval (Problem A as a difference), and the holes the
    /// Ball-Larus ids of the same paths would leave.
    pub delta: u64,
    pub ball_larus_delta: u64,
    pub policy: Policy,
    /// Under [`Policy::Count`]: how many uninteresting paths ran.
    #[serde(default)]
    pub uninteresting: u64,
    /// Self loops (indices into `Numbered::self_loops`) the interesting
    /// profile saw iterate: residual reports treat them as tested paths.
    #[serde(default)]
    pub tested_self_loops: Vec<u32>,
    /// Every path is counted by its Ball-Larus id and classified when the
    /// counters are decoded, with no PPP table: where the function has few
    /// enough paths for a Ball-Larus array (an array increment is cheaper
    /// than PPP's check; PPP pays off where Ball-Larus would hash), or where
    /// the table would pass [`TABLE_MAX`].
    #[serde(default)]
    pub recorded: bool,
}

impl PppInfo {
    /// Entries of the PPP table (0 without interesting paths).
    pub fn table_len(&self) -> u64 {
        if self.interesting.is_empty() {
            0
        } else {
            (self.max - self.min) as u64 + 1
        }
    }

    /// Whether the PPP table would pass [`TABLE_MAX`]: then every path is
    /// recorded by its Ball-Larus id and classified when decoding.
    pub fn table_too_large(&self) -> bool {
        self.table_len() > TABLE_MAX
    }

    pub fn is_interesting(&self, bl_id: u64) -> bool {
        self.interesting.binary_search(&bl_id).is_ok()
    }
}

/// The plan of one function and what decoding its counters needs.
#[derive(Clone, Debug)]
pub struct Planned {
    pub plan: FunctionPlan,
    pub numbered: Numbered,
    pub info: PppInfo,
}

/// Plans PPP for `cfg` with the interesting paths `interesting` (Ball-Larus
/// ids under the numbering `opts.ball_larus` gives, any order, duplicates
/// allowed, or, with `cuts`, under the numbering of the DAG cut at those
/// vertices: a path profile guided by weights names its paths so).
/// `weights` as for [`ball_larus::plan`]. Fails with
/// [`GraphError::PathOutOfRange`] for an id that is no path of the function.
pub fn plan(
    cfg: &Cfg,
    weights: Option<&[u64]>,
    opts: &Options,
    interesting: &[u64],
    cuts: Option<&[pathprof_graph::NodeId]>,
) -> Result<Planned, GraphError> {
    let (dag, bl) = match cuts {
        Some(cuts) => {
            let dag = pathprof_graph::dag::Dag::with_cuts(cfg, cuts)?;
            let bl = numbering::number(&dag)?;
            (dag, bl)
        }
        None => numbering::build_numbered(cfg, opts.ball_larus.truncate_above)?,
    };
    let mut ids = interesting.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if let Some(&p) = ids.iter().find(|&&p| p >= bl.total()) {
        return Err(GraphError::PathOutOfRange {
            path: p,
            total: bl.total(),
        });
    }
    let paths = ids
        .iter()
        .map(|&id| pathprof_graph::regenerate::regenerate(&dag, &bl, id))
        .collect::<Result<Vec<Vec<DagEdgeId>>, _>>()?;
    let chosen = if opts.force_ball_larus {
        ppp::ball_larus_as_ppp(&dag, &bl, &paths)?
    } else {
        ppp::choose(&dag, &bl, &paths)?
    };
    let mut info = PppInfo {
        numbering: match chosen.scheme {
            Scheme::Ppp => IdScheme::Ppp,
            Scheme::BallLarus => IdScheme::BallLarus,
        },
        min: chosen.numbering.min,
        max: chosen.numbering.max,
        delta: ppp::delta(&chosen.numbering, paths.len()),
        ball_larus_delta: ppp::ball_larus_delta(&bl, &paths),
        policy: opts.policy,
        uninteresting: 0,
        tested_self_loops: Vec::new(),
        recorded: false,
        interesting: ids,
    };
    info.recorded = records_all(&info, bl.total(), opts);
    let plan = build_plan(
        cfg,
        &dag,
        &bl,
        weights,
        opts,
        &info,
        &chosen.numbering,
        &paths,
    )?;
    Ok(Planned {
        plan,
        numbered: ball_larus::numbered(&dag, &bl),
        info,
    })
}

/// See [`PppInfo::recorded`].
fn records_all(info: &PppInfo, total: u64, opts: &Options) -> bool {
    !info.interesting.is_empty() && (total <= opts.ball_larus.array_max || info.table_too_large())
}

/// Everything [`build_plan`] lowers Fig. 8's ops with.
struct Lowering<'a> {
    table: Option<&'a PppTable>,
    /// Whether the path registers exist: not when no path end needs them
    /// (no interesting path, and uninteresting ones are not recorded).
    registers: bool,
    /// Register of the PPP id: 1, or 0 when it is the Ball-Larus id.
    ppp_reg: u8,
    otherwise: Otherwise,
}

#[allow(clippy::too_many_arguments)]
fn build_plan(
    cfg: &Cfg,
    dag: &Dag,
    bl: &Numbering,
    weights: Option<&[u64]>,
    opts: &Options,
    info: &PppInfo,
    ppp_numbering: &ppp::PppNumbering,
    paths: &[Vec<DagEdgeId>],
) -> Result<FunctionPlan, GraphError> {
    let tree = ball_larus::spanning_tree(cfg, dag, weights);
    let bl_ops = placement::place(dag, &spanning::increments_on_tree(dag, &tree, &bl.val));
    let ppp_vals: Vec<u64> = ppp_numbering.inc.iter().map(|&w| w as u64).collect();
    let ppp_ops = placement::place(dag, &spanning::increments_on_tree(dag, &tree, &ppp_vals));

    let mut plan = FunctionPlan::empty(cfg.num_edges());
    let self_loops = u32::try_from(dag.self_loops.len()).map_err(|_| GraphError::TooManyPaths)?;
    plan.slots = self_loops;
    // Recorded functions count every path by Ball-Larus id and classify
    // when decoding (for a table past TABLE_MAX, the thesis' "switch to a
    // hash table when the PPP identifiers are large", 3.6).
    let table = !paths.is_empty() && !info.recorded;
    let policy = if !paths.is_empty() && !table {
        Policy::Record
    } else {
        opts.policy
    };
    let otherwise = match policy {
        Policy::Record => {
            plan.paths = ball_larus::path_table(bl.total(), &opts.ball_larus);
            Otherwise::Record
        }
        Policy::Count => {
            plan.slots += 1;
            Otherwise::Count { slot: self_loops }
        }
        Policy::Ignore => Otherwise::Ignore,
    };
    let two_registers = table && info.numbering == IdScheme::Ppp;
    if table {
        plan.ppp = Some(build_table(info, ppp_numbering, bl, paths));
    }
    let needs_registers = table || policy == Policy::Record;
    if needs_registers {
        plan.registers = vec![ball_larus::register_width(bl.total())];
        if two_registers {
            // Table indices are below TABLE_MAX, and the PPP sum is exact
            // modulo 2^32, so 32 bits always do.
            plan.registers.push(Width::I32);
        }
    }
    let lowering = Lowering {
        table: plan.ppp.as_ref(),
        registers: needs_registers,
        ppp_reg: u8::from(two_registers),
        otherwise,
    };
    // A self loop has no DAG edge, only its slot; `self_loops` is in edge
    // order, so its slots are met in order.
    let mut self_loops = dag.self_loops.iter().peekable();
    let mut slot = 0;
    plan.edges = EdgeActions::try_from_fn(cfg.num_edges(), |e, actions| {
        for &d in &dag.cfg_to_dag[e] {
            let (b, p) = (&bl_ops[d.index()], &ppp_ops[d.index()]);
            if b.len() != p.len() {
                return Err(MISPLACED);
            }
            for (&b, &p) in b.iter().zip(p) {
                lowering.lower(b, p, actions)?;
            }
        }
        if self_loops.next_if(|s| s.index() == e).is_some() {
            actions.push(Action::CountSlot { index: slot });
            slot += 1;
        }
        Ok(())
    })?;
    Ok(plan)
}

/// Most entries a PPP table may have (1 MiB of counter memory).
pub const TABLE_MAX: u64 = 1 << 16;

/// The two placements disagree: cannot happen with one tree.
const MISPLACED: GraphError = GraphError::InvalidNumbering {
    reason: "the Ball-Larus and PPP placements differ on one spanning tree",
};

/// The PPP table: entry `id - min` holds the Ball-Larus id of the interesting
/// path whose PPP id is `id`.
fn build_table(
    info: &PppInfo,
    numbering: &ppp::PppNumbering,
    bl: &Numbering,
    paths: &[Vec<DagEdgeId>],
) -> PppTable {
    let mut expected = vec![PPP_HOLE; info.table_len() as usize];
    for path in paths {
        let index = ppp::ppp_id(numbering, path).wrapping_sub(info.min) as usize;
        expected[index] = bl.path_sum(path);
    }
    PppTable {
        min: info.min,
        expected,
    }
}

impl Lowering<'_> {
    /// The actions of one Fig. 8 op, given for both numberings.
    fn lower(&self, bl: Op, ppp: Op, out: &mut Vec<Action>) -> Result<(), GraphError> {
        let two = self.ppp_reg == 1;
        match (bl, ppp) {
            (Op::Init(_), Op::Init(_)) | (Op::Add(_), Op::Add(_)) if !self.registers => {}
            (Op::Init(b), Op::Init(p)) => {
                out.push(Action::Set { reg: 0, value: b });
                if two {
                    out.push(Action::Set { reg: 1, value: p });
                }
            }
            (Op::Add(b), Op::Add(p)) => {
                if b != 0 {
                    out.push(Action::Add { reg: 0, value: b });
                }
                if two && p != 0 {
                    out.push(Action::Add { reg: 1, value: p });
                }
            }
            (Op::Count(b), Op::Count(p)) => out.push(match self.table {
                Some(_) => Action::CountPpp(Box::new(PppEnd {
                    bl: 0,
                    bl_offset: b,
                    ppp: self.ppp_reg,
                    ppp_offset: if two { p } else { b },
                    otherwise: self.otherwise,
                })),
                None => match self.otherwise {
                    Otherwise::Record => Action::CountPath { reg: 0, offset: b },
                    Otherwise::Count { slot } => Action::CountSlot { index: slot },
                    Otherwise::Ignore => return Ok(()),
                },
            }),
            (Op::CountConst(b), Op::CountConst(p)) => {
                let p = if two { p } else { b };
                if let Some(a) = self.count_const(b as u64, p) {
                    out.push(a);
                }
            }
            _ => return Err(MISPLACED),
        }
        Ok(())
    }

    /// A path end whose Ball-Larus id `b` and PPP id `p` are constants.
    fn count_const(&self, b: u64, p: i64) -> Option<Action> {
        if let Some(t) = self.table {
            let index = p.wrapping_sub(t.min) as u64;
            if t.expected.get(index as usize) == Some(&b) {
                return Some(Action::CountInteresting { index });
            }
        }
        match self.otherwise {
            Otherwise::Record => Some(Action::CountPathConst { path: b }),
            Otherwise::Count { slot } => Some(Action::CountSlot { index: slot }),
            Otherwise::Ignore => None,
        }
    }
}

/// Decodes one function's raw counters: the interesting paths' counts and
/// (under `record`) the uninteresting ones, by Ball-Larus id, with the self
/// loops; under `count`, `info.uninteresting` is set.
pub fn decode(
    numbered: &Numbered,
    info: &mut PppInfo,
    raw: &RawCounters,
) -> Result<PathCounts, GraphError> {
    let loops = numbered.self_loops.len();
    let mut raw = raw.clone();
    let slot = raw.slots.get(loops).copied().unwrap_or(0);
    raw.slots.truncate(loops);
    info.uninteresting = 0;
    match info.policy {
        Policy::Record => {}
        _ if info.recorded => {
            // Everything was recorded by Ball-Larus id: classify here.
            let (kept, others): (Vec<_>, Vec<_>) =
                raw.paths.iter().partition(|(p, _)| info.is_interesting(*p));
            if info.policy == Policy::Count {
                info.uninteresting = others
                    .iter()
                    .try_fold(0u64, |a, &(_, c)| a.checked_add(c))
                    .ok_or(GraphError::TooManyPaths)?;
            }
            raw.paths = kept;
        }
        policy => {
            if let Some(&(p, _)) = raw.paths.iter().find(|(p, _)| !info.is_interesting(*p)) {
                return Err(GraphError::PathOutOfRange {
                    path: p,
                    total: numbered.total,
                });
            }
            if policy == Policy::Count {
                info.uninteresting = slot;
            }
        }
    }
    ball_larus::decode(numbered, &raw)
}
