//! `pathprof report`: hot paths, most frequent first, regenerated to blocks.

use anyhow::{Context, Result};
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{FunctionData, FunctionProfile, Profile};
use pathprof_techniques::ball_larus::{PathEnd, PathStart, RegeneratedPath};
use serde::Serialize;

/// One executed path, regenerated.
#[derive(Clone, Debug, Serialize)]
pub struct HotPath {
    pub function: String,
    pub func_index: u32,
    pub path: u64,
    pub count: u64,
    /// Share of all path executions in the profile, in percent.
    pub percent: f64,
    pub kind: String,
    pub blocks: Vec<BlockRef>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BlockRef {
    pub block: NodeId,
    pub offset: u32,
    /// `file:line`, when the module had DWARF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Every counted path of the profile (optionally of one function), most
/// frequent first; ties by function index then path number, so the order is
/// deterministic.
pub fn hot_paths(profile: &Profile, function: Option<&str>) -> Result<Vec<HotPath>> {
    let total: u64 = profile.functions.iter().map(path_executions).sum();
    let mut out = Vec::new();
    for f in &profile.functions {
        if let Some(name) = function {
            if f.display_name() != name && f.func_index.to_string() != name {
                continue;
            }
        }
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
                percent: if total == 0 {
                    0.0
                } else {
                    100.0 * count as f64 / total as f64
                },
                kind: kind_name(&regen),
                blocks: block_refs(f, &regen),
            });
        }
    }
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.func_index.cmp(&b.func_index))
            .then(a.path.cmp(&b.path))
    });
    Ok(out)
}

fn path_executions(f: &FunctionProfile) -> u64 {
    match &f.data {
        FunctionData::Path { counts, .. } => counts.paths.iter().map(|&(_, c)| c).sum(),
        FunctionData::Edge { .. } => 0,
    }
}

/// "entry->exit", "loop head->backedge", ... (Ball & Larus section 4).
pub fn kind_name(p: &RegeneratedPath) -> String {
    let start = match p.start {
        PathStart::Entry => "entry",
        PathStart::LoopHead => "loop head",
        PathStart::AfterCut => "cut",
        PathStart::Handler => "handler",
    };
    let end = match p.end {
        PathEnd::Exit => "exit",
        PathEnd::Backedge => "backedge",
        PathEnd::Cut => "cut",
    };
    format!("{start}->{end}")
}

fn block_refs(f: &FunctionProfile, p: &RegeneratedPath) -> Vec<BlockRef> {
    p.blocks
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
    let _ = writeln!(
        s,
        "{} profile of module {}: {} run(s), {} distinct paths executed, {} path executions",
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
    s + &render_rows(paths, top)
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
    Some(format!(
        "ppp: {interesting} interesting paths in {functions} functions; {others}"
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
            p.path,
            p.kind,
            blocks.join(" "),
            source_span(&p.blocks)
        );
    }
    s
}

/// `  [demo.c:31 -> demo.c:40]`: where the path begins and ends in the
/// source, when the module had DWARF.
fn source_span(blocks: &[BlockRef]) -> String {
    let first = blocks.iter().find_map(|b| b.source.as_deref());
    let last = blocks.iter().rev().find_map(|b| b.source.as_deref());
    match (first, last) {
        (Some(a), Some(b)) if a == b => format!("  [{a}]"),
        (Some(a), Some(b)) => format!("  [{a} -> {b}]"),
        _ => String::new(),
    }
}

/// Every CFG edge's count in a function profile. For a path profile the real
/// edges are summed over the regenerated paths; a backedge gets the count of
/// the paths that end at its source (exact when its source has one backedge).
pub fn edge_counts(f: &FunctionProfile) -> Vec<u64> {
    match &f.data {
        FunctionData::Edge { edge_counts, .. } => edge_counts.clone(),
        FunctionData::Path {
            numbered, counts, ..
        } => {
            let mut out = vec![0u64; f.edges.len()];
            let (dag, numbering) = numbered.to_dag();
            let mut ends_at = vec![0u64; numbered.num_nodes];
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
            }
            for &b in &numbered.backedges {
                let src: NodeId = f.edges[b.index()].src;
                out[b.index()] = ends_at[src.index()];
            }
            for (i, &e) in numbered.self_loops.iter().enumerate() {
                out[e.index()] = counts.self_loops.get(i).copied().unwrap_or(0);
            }
            out
        }
    }
}

/// Whether a node is a real basic block (not ENTRY/EXIT).
pub fn is_block(n: NodeId) -> bool {
    n != Cfg::ENTRY && n != Cfg::EXIT
}
