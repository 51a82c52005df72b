//! What the report shows of each function, computed once from the profile:
//! its flow (path executions), edge and block counts, coverage, and its
//! paths regenerated to blocks with the CFG edges between them.

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{cfg_of, FunctionData, FunctionProfile, Profile};
use pathprof_techniques::ppp::Policy;

use crate::export::{self, FileCoverage};
use crate::report::{self, HotPath, PathKind};
use pathprof_techniques::ball_larus::{PathEnd, PathStart};

/// One function of the profile.
pub(crate) struct FunctionView<'p> {
    pub f: &'p FunctionProfile,
    pub name: String,
    /// How many paths ran through it: Ball-Larus paths and self-loop
    /// iterations for a path profile; for edge counts, the entries plus
    /// the backedge traversals, since every path starts at the entry or
    /// after a backedge (section 4).
    pub flow: u64,
    /// Whether it gets a page: it has counts of its own and they ran. A
    /// context or piecewise profile's functions have none: their flow is
    /// that of the interprocedural paths through them.
    pub has_page: bool,
    /// Per CFG edge ([`report::edge_counts`]).
    pub edge_counts: Vec<u64>,
    /// Per node ([`export::block_counts`]).
    pub block_counts: Vec<u64>,
    /// Blocks that ran, and all blocks.
    pub blocks_run: usize,
    pub blocks_total: usize,
    /// The LCOV line records of the function, by file (empty without
    /// DWARF lines).
    pub files: Vec<FileCoverage>,
    /// Its paths, most frequent first.
    pub paths: Vec<PathView>,
}

/// One counted path of a function.
pub(crate) struct PathView {
    /// The path's name in URLs: its Ball-Larus number, or `s` and the self
    /// loop's slot.
    pub id: String,
    pub row: HotPath,
    /// Share of the function's flow, in percent.
    pub share: f64,
    /// Under a residual build (PPP recording the paths it was not told
    /// about): a path no test ran.
    pub untested: bool,
    /// The CFG edges between its blocks, in order.
    pub edges: Vec<usize>,
}

impl FunctionView<'_> {
    /// How many of its paths no test ran (residual builds only).
    pub fn untested(&self) -> usize {
        self.paths.iter().filter(|p| p.untested).count()
    }

    /// Lines that ran and lines with a count, over all its files.
    pub fn lines(&self) -> (usize, usize) {
        let lines = self.files.iter().flat_map(|c| &c.lines);
        let run = lines.clone().filter(|l| l.count > 0).count();
        (run, lines.count())
    }

    /// The share of its lines (or, without lines, of its blocks) that ran,
    /// and what it counts.
    pub fn coverage(&self) -> (usize, usize, &'static str) {
        match self.lines() {
            (_, 0) => (self.blocks_run, self.blocks_total, "blocks"),
            (run, all) => (run, all, "lines"),
        }
    }
}

/// Every function of `profile`, by flow (most first; ties by index);
/// `through`: per function without counts of its own, the executions of
/// the paths of other kinds through it.
pub(crate) fn functions<'p>(
    profile: &'p Profile,
    through: &BTreeMap<u32, u64>,
) -> Result<Vec<FunctionView<'p>>> {
    let mut rows: BTreeMap<u32, Vec<HotPath>> = BTreeMap::new();
    for r in report::hot_rows(profile, None)? {
        rows.entry(r.func_index).or_default().push(r);
    }
    let mut out: Vec<FunctionView> = profile
        .functions
        .iter()
        .map(|f| view(f, rows.remove(&f.func_index).unwrap_or_default()))
        .map(|mut v| {
            if v.flow == 0 {
                v.flow = through.get(&v.f.func_index).copied().unwrap_or(0);
            }
            v
        })
        .collect();
    out.sort_by(|a, b| {
        b.flow
            .cmp(&a.flow)
            .then(a.f.func_index.cmp(&b.f.func_index))
    });
    Ok(out)
}

fn view(f: &FunctionProfile, rows: Vec<HotPath>) -> FunctionView<'_> {
    let edge_counts = report::edge_counts(f);
    let block_counts = export::block_counts(f, &edge_counts);
    let real = |b: &usize| f.blocks[*b].is_some();
    let blocks_total = (0..f.blocks.len()).filter(real).count();
    let blocks_run = (0..f.blocks.len())
        .filter(real)
        .filter(|&b| block_counts[b] > 0)
        .count();
    let flow = match &f.data {
        FunctionData::Path { .. } => report::path_executions(f),
        FunctionData::Edge { .. } => edge_flow(f, &edge_counts),
    };
    let edges = EdgeIndex::new(f);
    let paths = rows
        .into_iter()
        .map(|r| path_view(f, &edges, r, flow))
        .collect();
    FunctionView {
        f,
        name: f.display_name(),
        flow,
        has_page: flow > 0,
        files: export::coverage_of(std::iter::once(f)).unwrap_or_default(),
        edge_counts,
        block_counts,
        blocks_run,
        blocks_total,
        paths,
    }
}

/// Entries plus backedge traversals: the paths that ran.
fn edge_flow(f: &FunctionProfile, counts: &[u64]) -> u64 {
    let cfg = cfg_of(&f.edges, f.blocks.len());
    cfg.edge_ids()
        .filter(|&e| cfg.src(e) == Cfg::ENTRY || cfg.is_backedge(e))
        .map(|e| counts.get(e.index()).copied().unwrap_or(0))
        .sum()
}

fn path_view(f: &FunctionProfile, edges: &EdgeIndex, row: HotPath, flow: u64) -> PathView {
    let self_loop = row.kind.is_self_loop();
    let id = match self_loop {
        true => format!("s{}", row.path),
        false => row.path.to_string(),
    };
    let nodes: Vec<NodeId> = row.blocks.iter().map(|b| b.block).collect();
    let edges = match self_loop {
        true => edges.between(nodes[0], nodes[0]).into_iter().collect(),
        false => path_edges(edges, &nodes, row.kind),
    };
    PathView {
        id,
        share: report::percent(row.count, flow),
        untested: untested(f, &row),
        edges,
        row,
    }
}

/// The edges from each block of a path to the next, with the edge from
/// ENTRY for a path from the entry and the one to EXIT for a path to an
/// exit.
fn path_edges(edges: &EdgeIndex, nodes: &[NodeId], kind: PathKind) -> Vec<usize> {
    let mut seq = Vec::with_capacity(nodes.len() + 2);
    let PathKind::Path { start, end } = kind else {
        return Vec::new();
    };
    if start == PathStart::Entry {
        seq.push(Cfg::ENTRY);
    }
    seq.extend_from_slice(nodes);
    if end == PathEnd::Exit {
        seq.push(Cfg::EXIT);
    }
    seq.windows(2)
        .filter_map(|w| edges.between(w[0], w[1]))
        .collect()
}

/// A function's edges by their ends: a large function's thousands of
/// paths look up their edges in it, not in the edge list.
struct EdgeIndex(HashMap<(NodeId, NodeId), usize>);

impl EdgeIndex {
    fn new(f: &FunctionProfile) -> Self {
        let mut map = HashMap::with_capacity(f.edges.len());
        for (e, edge) in f.edges.iter().enumerate() {
            // The first of parallel edges (a br_table's), as the order
            // of the edge list gives them.
            map.entry((edge.src, edge.dst)).or_insert(e);
        }
        EdgeIndex(map)
    }

    fn between(&self, src: NodeId, dst: NodeId) -> Option<usize> {
        self.0.get(&(src, dst)).copied()
    }
}

/// Whether a residual build's path is one testing never ran: the build
/// records every path, and knew the tested ones as its interesting paths
/// (Vaswani 3.5.1).
fn untested(f: &FunctionProfile, row: &HotPath) -> bool {
    let FunctionData::Path {
        ppp: Some(info), ..
    } = &f.data
    else {
        return false;
    };
    if info.policy != Policy::Record {
        return false;
    }
    match row.kind.is_self_loop() {
        true => !info.tested_self_loops.contains(&(row.path as u32)),
        false => info.interesting.binary_search(&row.path).is_err(),
    }
}
