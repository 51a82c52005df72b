//! `pathprof report` of an edge profile: the hottest edges, and the hottest
//! branches (blocks with more than one successor) with the share each
//! direction took. An edge profile has no paths; these are what it says.

use crate::error::Result;
use crate::report::percent;
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{FunctionData, FunctionProfile, Profile};
use serde::Serialize;

/// One executed CFG edge.
#[derive(Clone, Debug, Serialize)]
pub struct HotEdge {
    pub function: String,
    pub func_index: u32,
    pub src: NodeId,
    pub dst: NodeId,
    /// How control crosses it (`BrIf`, `Fallthrough`, ...).
    pub kind: String,
    pub count: u64,
    /// Share of the edge executions reported, in percent.
    pub percent: f64,
    /// `file:line` of its source and target blocks, when the module had DWARF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One executed branch: a block with several successors.
#[derive(Clone, Debug, Serialize)]
pub struct HotBranch {
    pub function: String,
    pub func_index: u32,
    pub block: NodeId,
    pub offset: u32,
    /// Times the block branched (its out-edges' counts added up).
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Every direction, most taken first.
    pub directions: Vec<Direction>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Direction {
    pub to: NodeId,
    pub kind: String,
    pub count: u64,
    /// Share of the branch's executions, in percent.
    pub percent: f64,
}

/// What `pathprof report` shows of an edge profile.
#[derive(Clone, Debug, Serialize)]
pub struct EdgeReport {
    /// Every executed edge, most frequent first.
    pub edges: Vec<HotEdge>,
    /// Every executed branch, most frequent first.
    pub branches: Vec<HotBranch>,
}

/// The report of `functions` (those of an edge profile; the others are
/// left out). Ties go by function index, then edge or block order.
pub fn edge_report(functions: &[&FunctionProfile]) -> EdgeReport {
    let counted: Vec<(&FunctionProfile, &Vec<u64>)> = functions
        .iter()
        .filter_map(|f| match &f.data {
            FunctionData::Edge { edge_counts, .. } => Some((*f, edge_counts)),
            FunctionData::Path { .. } => None,
        })
        .collect();
    let total: u64 = counted.iter().flat_map(|(_, c)| c.iter()).sum();
    let mut edges = Vec::new();
    let mut branches = Vec::new();
    for (f, counts) in counted {
        for (edge, &count) in f.edges.iter().zip(counts) {
            if count == 0 {
                continue;
            }
            edges.push(HotEdge {
                function: f.display_name(),
                func_index: f.func_index,
                src: edge.src,
                dst: edge.dst,
                kind: edge.kind.clone(),
                count,
                percent: percent(count, total),
                source: span(source_of(f, edge.src), source_of(f, edge.dst)),
            });
        }
        branches.extend(function_branches(f, counts));
    }
    edges.sort_by(|a, b| b.count.cmp(&a.count).then(a.func_index.cmp(&b.func_index)));
    branches.sort_by(|a, b| b.count.cmp(&a.count).then(a.func_index.cmp(&b.func_index)));
    EdgeReport { edges, branches }
}

/// The blocks of `f` with more than one successor that were executed.
fn function_branches(f: &FunctionProfile, counts: &[u64]) -> Vec<HotBranch> {
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (e, edge) in f.edges.iter().enumerate() {
        if let Some(o) = outs.get_mut(edge.src.index()) {
            o.push(e);
        }
    }
    let mut out = Vec::new();
    for (b, edges) in outs.iter().enumerate() {
        let block = NodeId::new(b);
        if edges.len() < 2 || block == Cfg::ENTRY {
            continue;
        }
        let count: u64 = edges.iter().map(|&e| counts[e]).sum();
        if count == 0 {
            continue;
        }
        let mut directions: Vec<Direction> = edges
            .iter()
            .map(|&e| Direction {
                to: f.edges[e].dst,
                kind: f.edges[e].kind.clone(),
                count: counts[e],
                percent: percent(counts[e], count),
            })
            .collect();
        directions.sort_by_key(|d| std::cmp::Reverse(d.count));
        out.push(HotBranch {
            function: f.display_name(),
            func_index: f.func_index,
            block,
            offset: f.blocks[b].as_ref().map_or(0, |bl| bl.offset),
            count,
            source: source_of(f, block),
            directions,
        });
    }
    out
}

/// The short form of a block's source (`file:line`).
fn source_of(f: &FunctionProfile, b: NodeId) -> Option<String> {
    Some(
        f.blocks
            .get(b.index())?
            .as_ref()?
            .source
            .as_ref()?
            .to_string(),
    )
}

/// `a -> b`, or one of them, or `a` when they are the same.
fn span(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if a != b => Some(format!("{a} -> {b}")),
        (Some(a), _) | (None, Some(a)) => Some(a),
        (None, None) => None,
    }
}

/// A node as the report names it: `entry`, `exit`, or the block's id.
fn node(n: NodeId) -> String {
    match n {
        n if n == Cfg::ENTRY => "entry".into(),
        n if n == Cfg::EXIT => "exit".into(),
        n => n.to_string(),
    }
}

/// The text report: a heading, the `top` hottest edges, then the `top`
/// hottest branches.
pub fn render(profile: &Profile, r: &EdgeReport, top: usize) -> Result<String> {
    use std::fmt::Write;
    let mut s = String::new();
    let executions: u64 = r.edges.iter().map(|e| e.count).sum();
    writeln!(
        s,
        "{} profile of module {}: {} run(s), {} distinct edges executed, {} edge executions, {} branches",
        profile.mode,
        &profile.module_hash[..profile.module_hash.len().min(12)],
        profile.runs,
        r.edges.len(),
        executions,
        r.branches.len()
    )?;
    writeln!(
        s,
        "hottest edges:\n{:>12} {:>7}  {:<24} {:>13}  {:<12} source",
        "count", "%", "function", "edge", "kind"
    )?;
    for e in r.edges.iter().take(top) {
        writeln!(
            s,
            "{:>12} {:>6.2}%  {:<24} {:>13}  {:<12} {}",
            e.count,
            e.percent,
            e.function,
            format!("{}->{}", node(e.src), node(e.dst)),
            e.kind,
            e.source.as_deref().unwrap_or("")
        )?;
    }
    writeln!(
        s,
        "hottest branches (block@offset: each direction's target, kind and share):\n{:>12}  {:<24} {:>12}  directions",
        "count", "function", "block"
    )?;
    for b in r.branches.iter().take(top) {
        let dirs: Vec<String> = b
            .directions
            .iter()
            .map(|d| format!("->{} {} {:.1}%", node(d.to), d.kind, d.percent))
            .collect();
        let source = b
            .source
            .as_ref()
            .map_or(String::new(), |s| format!("  [{s}]"));
        writeln!(
            s,
            "{:>12}  {:<24} {:>12}  {}{source}",
            b.count,
            b.function,
            format!("{}@{:#x}", b.block, b.offset),
            dirs.join(", ")
        )?;
    }
    Ok(s)
}
