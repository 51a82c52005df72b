//! `pathprof report`: hot paths, most frequent first, regenerated to blocks.

use crate::error::{bail, Context, Result};
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{FunctionData, FunctionProfile, Profile, SourceLocation};
use pathprof_techniques::ball_larus::{
    EdgeRole, Numbered, PathCounts, PathEnd, PathStart, RegeneratedPath,
};
use serde::Serialize;

/// One executed path, regenerated.
#[derive(Clone, Debug, Serialize)]
pub struct HotPath {
    pub function: String,
    pub func_index: u32,
    /// The Ball-Larus path number; for a self loop ([`PathKind::SelfLoop`]),
    /// the index of its counter.
    pub path: u64,
    pub count: u64,
    /// Share of the path executions reported (self-loop iterations
    /// included): the whole profile's, or the one function's asked for.
    pub percent: f64,
    pub kind: PathKind,
    pub blocks: Vec<BlockRef>,
}

/// What a row of a path report is (Ball & Larus section 4): a numbered
/// path, with where it starts and ends, or the iterations of a self loop, a
/// path of one edge from a block to itself that 4.1 counts apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PathKind {
    Path { start: PathStart, end: PathEnd },
    SelfLoop,
}

impl PathKind {
    /// The kind of a regenerated path.
    pub fn of(p: &RegeneratedPath) -> PathKind {
        PathKind::Path {
            start: p.start,
            end: p.end,
        }
    }

    pub fn is_self_loop(self) -> bool {
        self == PathKind::SelfLoop
    }

    /// Whether it starts or ends at a truncation cut (5.3), where what ran
    /// before and after the cut is no longer related.
    pub fn at_cut(self) -> bool {
        matches!(
            self,
            PathKind::Path {
                start: PathStart::AfterCut,
                ..
            } | PathKind::Path {
                end: PathEnd::Cut,
                ..
            }
        )
    }
}

/// `entry->exit`, `loop head->backedge`, `cut->exit`, `handler->exit`,
/// `self loop`, ...: as reports print it (padded as asked).
impl std::fmt::Display for PathKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let PathKind::Path { start, end } = *self else {
            return f.pad("self loop");
        };
        let start = match start {
            PathStart::Entry => "entry",
            PathStart::LoopHead => "loop head",
            PathStart::AfterCut => "cut",
            PathStart::Handler => "handler",
        };
        let end = match end {
            PathEnd::Exit => "exit",
            PathEnd::Backedge => "backedge",
            PathEnd::Cut => "cut",
        };
        f.pad(&format!("{start}->{end}"))
    }
}

/// As it prints: `report --json` and the exports give the same words.
impl Serialize for PathKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BlockRef {
    pub block: NodeId,
    pub offset: u32,
    /// Its file, line and column, when the module had DWARF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceLocation>,
}

/// Every counted Ball-Larus path of the profile (optionally of one
/// function), most frequent first; ties by function index then path number,
/// so the order is deterministic. Self loops are left out: see
/// [`hot_rows`].
pub fn hot_paths(profile: &Profile, function: Option<&str>) -> Result<Vec<HotPath>> {
    rows(profile, function, false)
}

/// [`hot_paths`] and the self loops that iterated, as paths of kind
/// [`PathKind::SelfLoop`]: what `pathprof report` lists.
pub fn hot_rows(profile: &Profile, function: Option<&str>) -> Result<Vec<HotPath>> {
    rows(profile, function, true)
}

/// The functions `function` (a name or an index) selects: all without it.
/// A name that selects none is an error naming the close ones.
pub fn select<'p>(
    profile: &'p Profile,
    function: Option<&str>,
) -> Result<Vec<&'p FunctionProfile>> {
    let Some(name) = function else {
        return Ok(profile.functions.iter().collect());
    };
    let chosen: Vec<_> = profile
        .functions
        .iter()
        .filter(|f| f.display_name() == name || f.func_index.to_string() == name)
        .collect();
    if !chosen.is_empty() {
        return Ok(chosen);
    }
    if let Some(s) = profile
        .skipped
        .iter()
        .find(|s| s.name.as_deref() == Some(name) || s.func_index.to_string() == name)
    {
        bail!("function {name} was not instrumented: {}", s.reason);
    }
    let names = profile.functions.iter().map(FunctionProfile::display_name);
    match close_matches(name, names).as_slice() {
        [] => bail!("no function {name} in the profile (--function takes a name or an index)"),
        close => bail!(
            "no function {name} in the profile; close: {}",
            close.join(", ")
        ),
    }
}

/// Up to five of `names` nearest to `name` (Jaro-Winkler similarity at
/// least 0.8, or containing it), nearest first.
fn close_matches(name: &str, names: impl Iterator<Item = String>) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(f64, String)> = names
        .filter_map(|n| {
            let score = strsim::jaro_winkler(&lower, &n.to_lowercase());
            let contains = n.to_lowercase().contains(&lower);
            (score >= 0.8 || contains).then_some((score.max(f64::from(u8::from(contains))), n))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn rows(profile: &Profile, function: Option<&str>, self_loops: bool) -> Result<Vec<HotPath>> {
    let chosen = select(profile, function)?;
    let total: u64 = chosen.iter().map(|f| path_executions(f)).sum();
    let percent = |count: u64| percent(count, total);
    let mut out = Vec::new();
    for f in chosen {
        let FunctionData::Path {
            numbered, counts, ..
        } = &f.data
        else {
            continue;
        };
        let (dag, numbering) = numbered.to_dag();
        for &(path, count) in &counts.paths {
            let regen = numbered
                .regenerate(&dag, &numbering, path, |e| {
                    f.edges[e.index()].kind == "Catch"
                })
                .with_context(|| format!("{}: path {path}", f.display_name()))?;
            out.push(HotPath {
                function: f.display_name(),
                func_index: f.func_index,
                path,
                count,
                percent: percent(count),
                kind: PathKind::of(&regen),
                blocks: block_refs(f, &regen.blocks),
            });
        }
        if self_loops {
            for (i, (&e, &count)) in numbered
                .self_loops
                .iter()
                .zip(&counts.self_loops)
                .enumerate()
            {
                if count == 0 {
                    continue;
                }
                out.push(HotPath {
                    function: f.display_name(),
                    func_index: f.func_index,
                    path: i as u64,
                    count,
                    percent: percent(count),
                    kind: PathKind::SelfLoop,
                    blocks: block_refs(f, &[f.edges[e.index()].src]),
                });
            }
        }
    }
    // Numbered paths before self loops of the same count and function.
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.func_index.cmp(&b.func_index))
            .then(a.kind.is_self_loop().cmp(&b.kind.is_self_loop()))
            .then(a.path.cmp(&b.path))
    });
    Ok(out)
}

/// A function's path executions: its numbered paths' and its self loops'
/// iterations (each a path of its own, Ball & Larus 4.1).
pub fn path_executions(f: &FunctionProfile) -> u64 {
    match &f.data {
        FunctionData::Path { counts, .. } => {
            let paths: u64 = counts.paths.iter().map(|&(_, c)| c).sum();
            paths + counts.self_loops.iter().sum::<u64>()
        }
        FunctionData::Edge { .. } => 0,
    }
}

fn block_refs(f: &FunctionProfile, blocks: &[NodeId]) -> Vec<BlockRef> {
    blocks
        .iter()
        .map(|&b| {
            let block = f.blocks[b.index()].as_ref();
            BlockRef {
                block: b,
                offset: block.map_or(0, |bl| bl.offset),
                source: block.and_then(|bl| bl.source.clone()),
            }
        })
        .collect()
}

/// Text report of the `top` hottest paths.
pub fn render(profile: &Profile, paths: &[HotPath], top: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let executed: u64 = paths.iter().map(|p| p.count).sum();
    let loops = paths.iter().filter(|p| p.kind.is_self_loop()).count();
    let _ = writeln!(
        s,
        "{} profile of module {}: {} run(s), {} distinct paths executed ({loops} of them self loops), {} path executions",
        profile.mode,
        &profile.module_hash[..profile.module_hash.len().min(12)],
        profile.runs,
        paths.len(),
        executed
    );
    if profile.abrupt_runs > 0 {
        let _ = writeln!(
            s,
            "note: {} run(s) ended abruptly; paths in flight then are not counted",
            profile.abrupt_runs
        );
    }
    if profile.is_sparse() {
        let _ = writeln!(
            s,
            "sparse: {} functions ran, {} never ran and are not listed",
            profile.functions.len(),
            profile.unrun.len()
        );
    }
    let lost: u64 = profile
        .functions
        .iter()
        .map(|f| match &f.data {
            FunctionData::Path { counts, .. } => counts.lost,
            _ => 0,
        })
        .sum();
    if let Some(line) = ppp_note(profile) {
        let _ = writeln!(s, "{line}");
    }
    if lost > 0 {
        let _ = writeln!(
            s,
            "warning: {lost} path executions were lost: a hash table was full and the counter memory could not grow"
        );
    }
    s + &truncation_lines(paths) + &render_rows(paths, top)
}

/// One row of a context-path report (interprocedural or loop context).
pub struct ContextRowText<'a> {
    pub count: u64,
    pub percent: f64,
    /// Printed before the path as `label: ` (the function of a loop-context
    /// path).
    pub label: Option<&'a str>,
    /// The context-prefix, printed before ` || ` when not empty.
    pub context: &'a str,
    pub active: &'a str,
    pub source: Option<&'a str>,
}

/// The body of a context-path report after its header: a warning for counts
/// lost to full hash tables, the column titles, the first `top` rows, and
/// how many more there are.
pub fn write_context_rows<'a>(
    s: &mut String,
    lost: u64,
    rows: impl ExactSizeIterator<Item = ContextRowText<'a>>,
    top: usize,
) {
    use std::fmt::Write;
    if lost > 0 {
        let _ = writeln!(s, "warning: {lost} counts lost to full hash tables");
    }
    let _ = writeln!(s, "{:>10} {:>6}  path", "count", "%");
    let more = rows.len().saturating_sub(top);
    for r in rows.take(top) {
        let _ = write!(s, "{:>10} {:>5.1}%  ", r.count, r.percent);
        if let Some(label) = r.label {
            let _ = write!(s, "{label}: ");
        }
        if !r.context.is_empty() {
            let _ = write!(s, "{} || ", r.context);
        }
        let _ = write!(s, "{}", r.active);
        if let Some(src) = r.source {
            let _ = write!(s, "  ({src})");
        }
        s.push('\n');
    }
    if more > 0 {
        let _ = writeln!(s, "... {more} more (--top)");
    }
}

/// The functions whose paths ran through truncation cuts (5.3), the most
/// cut executions first: how many of each one's path executions start or
/// end at a cut, where the relation between the parts before and after the
/// cut is lost. Empty when no path ran through one.
fn truncation_lines(paths: &[HotPath]) -> String {
    use std::fmt::Write;
    let mut by_function: std::collections::BTreeMap<u32, (&str, u64, u64)> = Default::default();
    for p in paths {
        let f = by_function
            .entry(p.func_index)
            .or_insert((&p.function, 0, 0));
        f.2 += p.count;
        if p.kind.at_cut() {
            f.1 += p.count;
        }
    }
    let mut cut: Vec<_> = by_function.into_values().filter(|f| f.1 > 0).collect();
    if cut.is_empty() {
        return String::new();
    }
    cut.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let cut_total: u64 = cut.iter().map(|f| f.1).sum();
    let all: u64 = paths.iter().map(|p| p.count).sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "truncation: {cut_total} of {all} path executions ({:.2}%) start or end at a cut, in {} \
         function(s) (`--weights` with a profile of a like run keeps the paths that ran whole where it can):",
        percent(cut_total, all),
        cut.len()
    );
    for (name, cut, total) in cut.iter().take(10) {
        let _ = writeln!(
            s,
            "  {cut:>12} of {total:>12} ({:>6.2}%)  {name}",
            percent(*cut, *total)
        );
    }
    if cut.len() > 10 {
        let _ = writeln!(s, "  ... and {} more", cut.len() - 10);
    }
    s
}

/// For a PPP profile: how many interesting paths there are and, under the
/// `count` and `ignore` policies, what became of the others.
fn ppp_note(profile: &Profile) -> Option<String> {
    use pathprof_techniques::ppp::Policy;
    let infos: Vec<_> = profile
        .functions
        .iter()
        .filter_map(|f| match &f.data {
            FunctionData::Path { ppp: Some(i), .. } => Some(i),
            _ => None,
        })
        .collect();
    let policy = infos.first()?.policy;
    let interesting: usize = infos.iter().map(|i| i.interesting.len()).sum();
    let others = match policy {
        Policy::Record => "the others are listed too".to_string(),
        Policy::Count => format!(
            "{} executions of other paths were counted, not told apart",
            infos.iter().map(|i| i.uninteresting).sum::<u64>()
        ),
        Policy::Ignore => "other paths were ignored".to_string(),
    };
    let functions = infos.iter().filter(|i| !i.interesting.is_empty()).count();
    // A sparse profile keeps the interesting paths of the functions that ran.
    let ran = if profile.is_sparse() { " that ran" } else { "" };
    Some(format!(
        "ppp: {interesting} interesting paths in {functions} functions{ran}; {others}"
    ))
}

/// The table of the first `top` paths, with its heading.
pub fn render_rows(paths: &[HotPath], top: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>12} {:>7}  {:<24} {:>8}  {:<20} blocks (id@offset)",
        "count", "%", "function", "path", "kind"
    );
    for p in paths.iter().take(top) {
        let blocks: Vec<String> = p
            .blocks
            .iter()
            .map(|b| format!("{}@{:#x}", b.block, b.offset))
            .collect();
        let _ = writeln!(
            s,
            "{:>12} {:>6.2}%  {:<24} {:>8}  {:<20} {}{}",
            p.count,
            p.percent,
            p.function,
            // A self loop has no path number.
            if p.kind.is_self_loop() {
                "-".to_string()
            } else {
                p.path.to_string()
            },
            p.kind,
            blocks.join(" "),
            source_span(&p.blocks)
        );
    }
    s
}

/// `  [demo.c:31 -> demo.c:40]`: where the path begins and ends in the
/// source, when the module had DWARF.
pub fn source_span(blocks: &[BlockRef]) -> String {
    let first = blocks.iter().find_map(|b| b.source.as_ref());
    let last = blocks.iter().rev().find_map(|b| b.source.as_ref());
    match (first.map(|l| l.to_string()), last.map(|l| l.to_string())) {
        (Some(a), Some(b)) if a == b => format!("  [{a}]"),
        (Some(a), Some(b)) => format!("  [{a} -> {b}]"),
        _ => String::new(),
    }
}

/// `first .. last` of the sources a path passes (short forms), or the one
/// when it begins and ends on the same line.
pub fn source_range(mut sources: impl Iterator<Item = SourceLocation>) -> Option<String> {
    let first = sources.next()?.to_string();
    match sources.last().map(|l| l.to_string()) {
        Some(last) if last != first => Some(format!("{first} .. {last}")),
        _ => Some(first),
    }
}

/// Every CFG edge's count in a function profile (see [`edge_counts_exact`]).
pub fn edge_counts(f: &FunctionProfile) -> Vec<u64> {
    edge_counts_exact(f).counts
}

/// A function's edge counts, and which of them the profile determines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeCounts {
    pub counts: Vec<u64>,
    /// Per edge: false where the count is only a consistent guess.
    pub exact: Vec<bool>,
}

/// Every CFG edge's count in a function profile. An edge profile has them
/// all. For a path profile the real edges are summed over the regenerated
/// paths and self loops have their counters; a backedge or cut edge `v->w`
/// (5.3) ends one path at `v` and starts the next at `w`, so the profile
/// only says how many paths ended at each `v` and started at each `w`. Those
/// sums are conserved, which settles every such edge that is the only
/// unsettled one out of its source or into its target, repeatedly; what
/// remains (edges on a cycle of sources and targets) gets a consistent
/// guess, marked inexact.
pub fn edge_counts_exact(f: &FunctionProfile) -> EdgeCounts {
    let n = f.edges.len();
    let (numbered, counts) = match &f.data {
        FunctionData::Edge { edge_counts, .. } => {
            return EdgeCounts {
                counts: edge_counts.clone(),
                exact: vec![true; n],
            }
        }
        FunctionData::Path {
            numbered, counts, ..
        } => (numbered, counts),
    };
    let (mut out, ends_at, starts_at) = path_sums(numbered, counts, n);
    for (i, &e) in numbered.self_loops.iter().enumerate() {
        out[e.index()] = counts.self_loops.get(i).copied().unwrap_or(0);
    }
    let boundary = boundary_edges(numbered, n);
    let pairs: Vec<(usize, usize)> = boundary
        .iter()
        .map(|&e| (f.edges[e].src.index(), f.edges[e].dst.index()))
        .collect();
    let mut exact = vec![true; n];
    for (&e, (count, settled)) in boundary
        .iter()
        .zip(settle_boundary(&pairs, ends_at, starts_at))
    {
        out[e] = count;
        exact[e] = settled;
    }
    EdgeCounts { counts: out, exact }
}

/// Over the regenerated paths: each real edge's count, and per node how many
/// paths ended there (not at EXIT) and started there after a backedge or cut.
fn path_sums(numbered: &Numbered, counts: &PathCounts, n: usize) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let mut out = vec![0u64; n];
    let (dag, numbering) = numbered.to_dag();
    let mut ends_at = vec![0u64; numbered.num_nodes];
    let mut starts_at = vec![0u64; numbered.num_nodes];
    for &(path, count) in &counts.paths {
        let Ok(regen) = numbered.regenerate(&dag, &numbering, path, |_| false) else {
            continue;
        };
        for e in &regen.edges {
            out[e.index()] = out[e.index()].saturating_add(count);
        }
        if regen.end != PathEnd::Exit {
            if let Some(&last) = regen.blocks.last() {
                ends_at[last.index()] = ends_at[last.index()].saturating_add(count);
            }
        }
        if matches!(regen.start, PathStart::LoopHead | PathStart::AfterCut) {
            if let Some(&first) = regen.blocks.first() {
                starts_at[first.index()] = starts_at[first.index()].saturating_add(count);
            }
        }
    }
    (out, ends_at, starts_at)
}

/// The backedges and cut edges: the CFG edges that are neither a real DAG
/// edge nor a self loop, in edge order.
fn boundary_edges(numbered: &Numbered, n: usize) -> Vec<usize> {
    let mut boundary = vec![true; n];
    let real = numbered.dag_edges.iter().filter_map(|d| match d.kind {
        EdgeRole::Real(e) => Some(e),
        _ => None,
    });
    for e in real.chain(numbered.self_loops.iter().copied()) {
        boundary[e.index()] = false;
    }
    (0..n).filter(|&e| boundary[e]).collect()
}

/// The counts of the edges `boundary` (`(source, target)` node pairs) given
/// the paths that ended at each source (`ends`) and started at each target
/// (`starts`), and whether each is settled: an edge that is the last
/// unsettled one at either end takes what is left there. The rest take the
/// most both ends have left, in order.
fn settle_boundary(
    boundary: &[(usize, usize)],
    mut ends: Vec<u64>,
    mut starts: Vec<u64>,
) -> Vec<(u64, bool)> {
    let nodes = ends.len().max(starts.len());
    // Per node, the boundary edges (indices into `boundary`) out of it and
    // into it, and how many of them are unsettled.
    let (mut outs, mut ins) = (vec![Vec::new(); nodes], vec![Vec::new(); nodes]);
    for (i, &(v, w)) in boundary.iter().enumerate() {
        outs[v].push(i);
        ins[w].push(i);
    }
    let mut open_out: Vec<usize> = outs.iter().map(Vec::len).collect();
    let mut open_in: Vec<usize> = ins.iter().map(Vec::len).collect();
    let mut out = vec![(0u64, false); boundary.len()];
    let mut work: Vec<usize> = (0..boundary.len()).collect();
    while let Some(i) = work.pop() {
        let (v, w) = boundary[i];
        let c = match (out[i].1, open_out[v], open_in[w]) {
            (true, ..) => continue,
            (false, 1, _) => ends[v],
            (false, _, 1) => starts[w],
            _ => continue,
        };
        out[i] = (c, true);
        ends[v] = ends[v].saturating_sub(c);
        starts[w] = starts[w].saturating_sub(c);
        open_out[v] -= 1;
        open_in[w] -= 1;
        // Only a node left with one unsettled edge can settle another.
        if open_out[v] == 1 {
            work.extend(outs[v].iter().filter(|&&j| !out[j].1));
        }
        if open_in[w] == 1 {
            work.extend(ins[w].iter().filter(|&&j| !out[j].1));
        }
    }
    // A cycle of unsettled edges: any split that keeps both sums would do.
    for (i, &(v, w)) in boundary.iter().enumerate() {
        if !out[i].1 {
            let c = ends[v].min(starts[w]);
            out[i].0 = c;
            ends[v] -= c;
            starts[w] -= c;
        }
    }
    out
}

/// Whether a node is a real basic block (not ENTRY/EXIT).
pub fn is_block(n: NodeId) -> bool {
    n != Cfg::ENTRY && n != Cfg::EXIT
}

#[cfg(test)]
mod tests {
    use super::{settle_boundary, PathKind};
    use pathprof_techniques::ball_larus::{PathEnd, PathStart};

    /// Every kind prints as reports have always spelt it, pads as a column
    /// asks, and says whether it touches a truncation cut.
    #[test]
    fn path_kinds_print_as_reports_spell_them() {
        use PathEnd::*;
        use PathStart::*;
        let cases = [
            (Entry, Exit, "entry->exit", false),
            (LoopHead, Backedge, "loop head->backedge", false),
            (Handler, Exit, "handler->exit", false),
            (AfterCut, Exit, "cut->exit", true),
            (Entry, Cut, "entry->cut", true),
        ];
        for (start, end, text, cut) in cases {
            let k = PathKind::Path { start, end };
            assert_eq!(k.to_string(), text);
            assert_eq!(k.at_cut(), cut, "{text}");
            assert!(!k.is_self_loop());
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{text}\""));
        }
        assert_eq!(format!("[{:<12}]", PathKind::SelfLoop), "[self loop   ]");
        assert!(PathKind::SelfLoop.is_self_loop() && !PathKind::SelfLoop.at_cut());
    }

    /// Worked by hand. Sources 0 and 1, targets 2, 3 and 4: 0->2, 0->3,
    /// 1->3, 1->4. Target 2 has one edge: 0->2 = starts[2] = 3, leaving
    /// ends[0] = 4, so 0->3 = 4 as the last edge out of 0; then 1->3 is the
    /// last into 3: 7 - 4 = 3, and 1->4 takes the remaining 9 - 3 = 6.
    #[test]
    fn a_chain_settles_from_either_end() {
        let got = settle_boundary(
            &[(0, 2), (0, 3), (1, 3), (1, 4)],
            vec![7, 9, 0, 0, 0],
            vec![0, 0, 3, 7, 6],
        );
        assert_eq!(got, [(3, true), (4, true), (3, true), (6, true)]);
    }

    /// A cycle 0->2, 0->3, 1->2, 1->3 is not determined (any x on 0->2
    /// works): the guess, in edge order, takes min(ends, starts) and keeps
    /// every sum: 0->2 = min(5, 4) = 4, 0->3 = min(1, 6) = 1, 1->2 =
    /// min(5, 0) = 0, 1->3 = min(5, 5) = 5.
    #[test]
    fn a_cycle_is_guessed_keeping_the_sums() {
        let got = settle_boundary(
            &[(0, 2), (0, 3), (1, 2), (1, 3)],
            vec![5, 5, 0, 0],
            vec![0, 0, 4, 6],
        );
        assert_eq!(got, [(4, false), (1, false), (0, false), (5, false)]);
    }
}

/// Why a profile of `mode` (read from `file`) cannot give intraprocedural
/// paths where a command needs them.
pub fn no_paths(mode: pathprof_profile::Mode, file: &std::path::Path) -> crate::error::Error {
    use pathprof_profile::Mode;
    let why = match mode {
        Mode::Segments => "a segments profile holds interprocedural path segments, not paths of one function; give a path or PPP profile (a segment profile names the interesting segments of --mode ippp, and residual-report compares segment profiles)".to_string(),
        Mode::Context | Mode::Piecewise => format!("a {mode} profile holds interprocedural paths, not paths of one function; give a path or PPP profile"),
        Mode::IntraContext => "an intra-context profile holds paths with loop contexts, not Ball-Larus paths; give a path or PPP profile".to_string(),
        _ => "an edge profile has no paths; give a path or PPP profile".to_string(),
    };
    crate::error::invalid!("{}: {why}", file.display())
}

/// A profile's functions by module index, for the reports whose paths name
/// functions by their index among the module's defined functions (the
/// supergraph's ids): `num_imported_funcs` turns one into the other.
pub(crate) struct ProfileFunctions<'a> {
    num_imported_funcs: u32,
    by_index: std::collections::HashMap<u32, &'a FunctionProfile>,
}

impl<'a> ProfileFunctions<'a> {
    pub(crate) fn new(profile: &'a Profile, num_imported_funcs: u32) -> Self {
        let by_index = profile
            .functions
            .iter()
            .map(|f| (f.func_index, f))
            .collect();
        ProfileFunctions {
            num_imported_funcs,
            by_index,
        }
    }

    /// The module index of defined function `f`.
    pub(crate) fn index(&self, f: pathprof_graph::interproc::FuncId) -> u32 {
        self.num_imported_funcs + f.index() as u32
    }

    pub(crate) fn get(&self, f: pathprof_graph::interproc::FuncId) -> Option<&'a FunctionProfile> {
        self.by_module_index(self.index(f))
    }

    pub(crate) fn by_module_index(&self, index: u32) -> Option<&'a FunctionProfile> {
        self.by_index.get(&index).copied()
    }

    /// Its name, or `func[N]`.
    pub(crate) fn name(&self, f: pathprof_graph::interproc::FuncId) -> String {
        self.get(f).map_or_else(
            || format!("func[{}]", self.index(f)),
            |fp| fp.display_name(),
        )
    }
}
