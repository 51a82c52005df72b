//! `pathprof export`: a profile in the formats coverage tools and CI
//! services read.
//!
//! - `lcov`: an LCOV tracefile (the format of `geninfo(1)`, read by
//!   `genhtml`, Codecov, Coveralls and most CI coverage views): per source
//!   file, the functions with their entry counts, every line that begins a
//!   block with its count, and every branch (each successor of a block with
//!   two or more) with how often it was taken.
//! - `json`: the same line, function and branch records, and the profile's
//!   hot paths, in one document (its schema is in docs/profile-format.md).
//!
//! Counts come from the profile's edge counts ([`report::edge_counts`]:
//! exact for edge profiles, summed over the regenerated paths for path
//! profiles). A block's count is the sum of its in-edges'; a line's count
//! is the largest count of the blocks that begin on it (as `llvm-cov`
//! gives a line the count of its hottest region). Lines come from the
//! module's DWARF line table (built with `-g`); a module without it has no
//! lines to export, which is an error rather than an empty file.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::error::{bail, Result};
use pathprof_graph::Cfg;
use pathprof_profile::{FunctionProfile, Mode, Profile};
use serde::Serialize;

use crate::report;

/// One source file's records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FileCoverage {
    pub file: String,
    pub lines: Vec<LineCount>,
    pub functions: Vec<FunctionCount>,
    pub branches: Vec<BranchCount>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineCount {
    pub line: u32,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionCount {
    pub name: String,
    /// The line of its first block.
    pub line: u32,
    /// How often it was entered.
    pub count: u64,
}

/// A successor of a block that has two or more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BranchCount {
    /// The line the block begins on.
    pub line: u32,
    pub function: String,
    /// The block's module byte offset (unique in the module: block ids
    /// repeat across functions, and LCOV merges equal records of a file).
    pub block: u32,
    /// The successor's position among the block's out-edges.
    pub branch: u32,
    /// How often it was taken; `None` when its block never ran.
    pub taken: Option<u64>,
}

/// The line, function and branch records of `profile`, by file.
pub fn coverage(profile: &Profile) -> Result<Vec<FileCoverage>> {
    if matches!(
        profile.mode,
        Mode::Context | Mode::Piecewise | Mode::IntraContext
    ) {
        bail!(
            "a {} profile counts context paths, whose prefixes repeat edges, not edges: export a path, edge, PPP or segments profile",
            profile.mode
        );
    }
    coverage_of(profile.functions.iter())
}

/// The records of some functions of a profile whose mode has edge counts.
pub fn coverage_of<'a>(
    functions: impl Iterator<Item = &'a FunctionProfile>,
) -> Result<Vec<FileCoverage>> {
    let mut files: BTreeMap<String, FileCoverage> = BTreeMap::new();
    for f in functions {
        function_coverage(f, &mut files);
    }
    if files.is_empty() {
        bail!("the profile has no source lines (build the program with -g, and keep its DWARF: see README's note on wasm-opt)");
    }
    Ok(files
        .into_values()
        .map(|mut c| {
            c.lines.sort_by_key(|l| l.line);
            c
        })
        .collect())
}

/// The file (its whole path, as the line table gives it) and line of a
/// block, if it has one (line 0 is no line).
pub fn source_line(f: &FunctionProfile, block: usize) -> Option<(String, u32)> {
    let src = f.blocks.get(block)?.as_ref()?.source.as_ref()?;
    (src.line > 0).then(|| (src.file.clone(), src.line))
}

/// Per block, how often it ran: the sum of its in-edges' `counts`.
pub fn block_counts(f: &FunctionProfile, counts: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; f.blocks.len()];
    for (e, edge) in f.edges.iter().enumerate() {
        if let Some(c) = out.get_mut(edge.dst.index()) {
            *c += counts.get(e).copied().unwrap_or(0);
        }
    }
    out
}

fn function_coverage(f: &FunctionProfile, files: &mut BTreeMap<String, FileCoverage>) {
    let counts = report::edge_counts(f);
    let block_count = block_counts(f, &counts);
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (e, edge) in f.edges.iter().enumerate() {
        if let Some(o) = out_edges.get_mut(edge.src.index()) {
            o.push(e);
        }
    }
    let name = f.display_name();
    let entered: u64 = out_edges[Cfg::ENTRY.index()]
        .iter()
        .map(|&e| counts.get(e).copied().unwrap_or(0))
        .sum();
    // The function's line: that of its lowest-addressed block with one.
    let first = (0..f.blocks.len())
        .filter_map(|b| Some((f.blocks[b].as_ref()?.offset, source_line(f, b)?)))
        .min_by_key(|(offset, _)| *offset);
    if let Some((_, (file, line))) = first {
        let c = entry(files, &file);
        c.functions.push(FunctionCount {
            name: name.clone(),
            line,
            count: entered,
        });
    }
    for b in 0..f.blocks.len() {
        let Some((file, line)) = source_line(f, b) else {
            continue;
        };
        let c = entry(files, &file);
        match c.lines.iter_mut().find(|l| l.line == line) {
            Some(l) => l.count = l.count.max(block_count[b]),
            None => c.lines.push(LineCount {
                line,
                count: block_count[b],
            }),
        }
        if out_edges[b].len() >= 2 {
            for (i, &e) in out_edges[b].iter().enumerate() {
                c.branches.push(BranchCount {
                    line,
                    function: name.clone(),
                    block: f.blocks[b].as_ref().map_or(0, |k| k.offset),
                    branch: i as u32,
                    taken: (block_count[b] > 0).then(|| counts.get(e).copied().unwrap_or(0)),
                });
            }
        }
    }
}

fn entry<'a>(files: &'a mut BTreeMap<String, FileCoverage>, file: &str) -> &'a mut FileCoverage {
    files
        .entry(file.to_string())
        .or_insert_with(|| FileCoverage {
            file: file.to_string(),
            ..FileCoverage::default()
        })
}

/// The LCOV tracefile of `files`.
pub fn lcov(files: &[FileCoverage]) -> String {
    let mut s = String::from("TN:\n");
    for c in files {
        let _ = writeln!(s, "SF:{}", c.file);
        for f in &c.functions {
            let _ = writeln!(s, "FN:{},{}", f.line, f.name);
        }
        for f in &c.functions {
            let _ = writeln!(s, "FNDA:{},{}", f.count, f.name);
        }
        let hit = c.functions.iter().filter(|f| f.count > 0).count();
        let _ = writeln!(s, "FNF:{}\nFNH:{hit}", c.functions.len());
        for b in &c.branches {
            let taken = b.taken.map_or("-".to_string(), |t| t.to_string());
            let _ = writeln!(s, "BRDA:{},{},{},{taken}", b.line, b.block, b.branch);
        }
        let taken = c.branches.iter().filter(|b| b.taken > Some(0)).count();
        let _ = writeln!(s, "BRF:{}\nBRH:{taken}", c.branches.len());
        for l in &c.lines {
            let _ = writeln!(s, "DA:{},{}", l.line, l.count);
        }
        let hit = c.lines.iter().filter(|l| l.count > 0).count();
        let _ = writeln!(s, "LF:{}\nLH:{hit}", c.lines.len());
        s.push_str("end_of_record\n");
    }
    s
}

/// The `json` export: the coverage records and the hot paths.
pub fn json(profile: &Profile, files: &[FileCoverage]) -> Result<serde_json::Value> {
    let paths = match profile.mode {
        Mode::Segments => serde_json::to_value(crate::segments_report::rows(profile, None)?)?,
        _ => serde_json::to_value(report::hot_rows(profile, None)?)?,
    };
    Ok(serde_json::json!({
        "format": "pathprof-export",
        "version": 1,
        "module_hash": profile.module_hash,
        "mode": profile.mode.to_string(),
        "runs": profile.runs,
        "files": files,
        "paths": paths,
    }))
}
