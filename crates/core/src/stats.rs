//! `pathprof stats`: what instrumenting each function involves.

use pathprof_graph::{Cfg, GraphError};
use pathprof_techniques::{ball_larus, PathTable};
use pathprof_wasm::ModuleInfo;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct FunctionStats {
    pub func_index: u32,
    pub name: String,
    pub blocks: usize,
    pub edges: usize,
    pub backedges: usize,
    pub self_loops: usize,
    /// NumPaths(ENTRY) after truncation.
    pub potential_paths: u64,
    /// Chords carrying an increment.
    pub chords: usize,
    /// Edges carrying any instrumentation.
    pub instrumented_edges: usize,
    pub storage: String,
    pub truncations: usize,
    /// Why the function is not instrumented, if it is not.
    pub skipped: Option<String>,
}

/// Every function's statistics, its storage as the instrumenter chooses it
/// (the array budget given out in function order).
pub fn module_stats(info: &ModuleInfo, opts: &ball_larus::Options) -> Vec<FunctionStats> {
    let ahead = opts.planning();
    let mut budget = ball_larus::ArrayBudget::new(opts);
    info.functions
        .iter()
        .map(|f| match f {
            Ok(f) => {
                let name = f
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("func[{}]", f.func_index));
                let planned = budget.plan(
                    opts,
                    &ahead,
                    |o| ball_larus::plan(&f.cfg, None, o),
                    |p| p.plan.paths,
                );
                function_stats(f.func_index, name, &f.cfg, planned)
            }
            Err(u) => FunctionStats {
                skipped: Some(u.reason.clone()),
                ..FunctionStats::empty(
                    u.func_index,
                    u.name
                        .clone()
                        .unwrap_or_else(|| format!("func[{}]", u.func_index)),
                )
            },
        })
        .collect()
}

impl FunctionStats {
    fn empty(func_index: u32, name: String) -> Self {
        FunctionStats {
            func_index,
            name,
            blocks: 0,
            edges: 0,
            backedges: 0,
            self_loops: 0,
            potential_paths: 0,
            chords: 0,
            instrumented_edges: 0,
            storage: "-".into(),
            truncations: 0,
            skipped: None,
        }
    }
}

fn function_stats(
    func_index: u32,
    name: String,
    cfg: &Cfg,
    planned: Result<ball_larus::Planned, GraphError>,
) -> FunctionStats {
    let base = FunctionStats {
        blocks: cfg.num_nodes() - 2,
        edges: cfg.num_edges(),
        ..FunctionStats::empty(func_index, name)
    };
    let planned = match planned {
        Ok(p) => p,
        Err(e) => {
            return FunctionStats {
                skipped: Some(e.to_string()),
                ..base
            }
        }
    };
    let n = &planned.numbered;
    FunctionStats {
        backedges: n.backedges.len(),
        self_loops: n.self_loops.len(),
        potential_paths: n.total,
        chords: planned.chords,
        instrumented_edges: planned.plan.instrumented_edges(),
        storage: match planned.plan.paths {
            PathTable::None => "none".into(),
            PathTable::Array { len } => format!("array[{len}]"),
            PathTable::Hash { capacity } => format!("hash[{capacity}]"),
        },
        truncations: n.cut_nodes.len(),
        ..base
    }
}

pub fn render(stats: &[FunctionStats]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>5} {:<28} {:>7} {:>7} {:>6} {:>5} {:>20} {:>7} {:>8} {:<14} {:>5}",
        "func",
        "name",
        "blocks",
        "edges",
        "back",
        "self",
        "potential paths",
        "chords",
        "instr.e",
        "storage",
        "cuts"
    );
    for f in stats {
        if let Some(why) = &f.skipped {
            let _ = writeln!(
                s,
                "{:>5} {:<28} not instrumented: {why}",
                f.func_index, f.name
            );
            continue;
        }
        let _ = writeln!(
            s,
            "{:>5} {:<28} {:>7} {:>7} {:>6} {:>5} {:>20} {:>7} {:>8} {:<14} {:>5}",
            f.func_index,
            f.name,
            f.blocks,
            f.edges,
            f.backedges,
            f.self_loops,
            f.potential_paths,
            f.chords,
            f.instrumented_edges,
            f.storage,
            f.truncations
        );
    }
    s + &totals_line(stats)
}

/// The module's totals, in the same columns: every function's blocks,
/// edges, ..., and how many functions are instrumented (potential paths
/// added up, saturating; the storage column counts arrays and hash tables).
fn totals_line(stats: &[FunctionStats]) -> String {
    let done: Vec<&FunctionStats> = stats.iter().filter(|f| f.skipped.is_none()).collect();
    let sum = |field: fn(&FunctionStats) -> usize| done.iter().map(|f| field(f)).sum::<usize>();
    let paths = done
        .iter()
        .fold(0u64, |a, f| a.saturating_add(f.potential_paths));
    let tables = |kind: &str| done.iter().filter(|f| f.storage.starts_with(kind)).count();
    let label = format!("total: {} of {} functions", done.len(), stats.len());
    format!(
        "{:>5} {:<28} {:>7} {:>7} {:>6} {:>5} {:>20} {:>7} {:>8} {:<14} {:>5}\n",
        "",
        label,
        sum(|f| f.blocks),
        sum(|f| f.edges),
        sum(|f| f.backedges),
        sum(|f| f.self_loops),
        paths,
        sum(|f| f.chords),
        sum(|f| f.instrumented_edges),
        format!("{} arr {} hash", tables("array"), tables("hash")),
        sum(|f| f.truncations)
    )
}
