//! `pathprof residual-report`: residual path profiling (Vaswani thesis
//! 3.5.1). The paths a field run executed that no test did, and the
//! summary columns of the thesis' Table 3.1, with residual *edge* profiling
//! computed from the same data for comparison.
//!
//! The tested set is either the interesting paths a PPP field build carries
//! (`pathprof residual --tested ...`), or the union of plain path profiles
//! given with `--tested`. Self loops (Ball & Larus 4.1) count as paths: one
//! that iterated in the field but not in testing is untested.
//!
//! Edges of a path are its real CFG edges; a backedge is attributed to the
//! paths that end at its source ([`crate::report::edge_counts`]), exact when
//! that block has one backedge, which is the common case in wasm.

use crate::report::percent;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{bail, Result};
use pathprof_profile::{FunctionData, FunctionProfile, Profile};
use pathprof_techniques::ball_larus::PathCounts;
use pathprof_techniques::ppp::Policy;
use serde::Serialize;

use crate::report::{self, HotPath};
use crate::technique::Technique;

/// What one function tested: Ball-Larus ids and self-loop indices.
#[derive(Default)]
struct Tested {
    paths: BTreeSet<u64>,
    self_loops: BTreeSet<usize>,
}

/// Table 3.1's columns, and the counts they come from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Distinct paths (self loops included) the field run executed.
    pub executed_paths: u64,
    pub untested_paths: u64,
    pub percent_untested: f64,
    /// Path executions in the field, and those of untested paths.
    pub executions: u64,
    pub untested_executions: u64,
    pub percent_frequency_untested: f64,
    pub functions_with_untested_paths: u64,
    pub untested_edges: u64,
    pub functions_with_untested_edges: u64,
    /// Untested paths in functions where residual edge profiling finds
    /// nothing new, and their share of the untested paths.
    pub untested_paths_without_untested_edges: u64,
    pub percent_without_untested_edges: f64,
}

/// An untested self loop.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UntestedLoop {
    pub function: String,
    pub block: u32,
    pub iterations: u64,
}

/// The result of residual path profiling.
#[derive(Clone, Debug)]
pub struct Residual {
    pub summary: Summary,
    /// Untested paths, most frequent first.
    pub paths: Vec<HotPath>,
    /// Untested self loops, most iterations first.
    pub self_loops: Vec<UntestedLoop>,
}

/// The mode of `pathprof residual`'s field build for the profiles of the
/// test runs, `tested` (the first decides): [`Technique::Ippp`] for segment
/// profiles (an interprocedural residual build, thesis 3.5.2), else
/// [`Technique::Ppp`], for which a depth of segments (`depth`, `-k`) is
/// refused.
pub fn field_technique(tested: &[PathBuf], depth: Option<usize>) -> Result<Technique> {
    let Some(first) = tested.first() else {
        bail!("no tested profiles");
    };
    if Profile::read(first)?.segments.is_some() {
        Ok(Technique::Ippp)
    } else if let Some(k) = depth {
        bail!(
            "{}: not a segment profile, and -k {k} is a depth of segments: they need a segment profile (`pathprof run --segments {k}`); leave out -k for a residual build of paths",
            first.display()
        );
    } else {
        Ok(Technique::Ppp)
    }
}

/// Computes the residual of `field` against `tested` (or, if there is none,
/// against the tested paths `field`'s PPP build recorded).
pub fn residual(
    field: &Profile,
    field_path: &Path,
    tested: &[Profile],
    tested_paths: &[impl AsRef<Path>],
) -> Result<Residual> {
    let name = field_path.display();
    for (t, p) in tested.iter().zip(tested_paths) {
        t.check_module(p.as_ref(), &field.module_hash)?;
    }
    let mut summary = Summary::default();
    let mut untested: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut self_loops = Vec::new();
    for f in &field.functions {
        let FunctionData::Path {
            numbered,
            counts,
            ppp,
        } = &f.data
        else {
            return Err(report::no_paths(field.mode, field_path));
        };
        let set = match (tested.is_empty(), ppp) {
            (false, _) => tested_in(f, tested, tested_paths)?,
            (true, Some(info)) if info.policy == Policy::Record => Tested {
                paths: info.interesting.iter().copied().collect(),
                self_loops: info.tested_self_loops.iter().map(|&i| i as usize).collect(),
            },
            (true, Some(info)) => bail!(
                "{name}: the field build did not record untested paths (--uninteresting {}){}",
                info.policy,
                if info.policy == Policy::Count {
                    "; it only counted them: see `pathprof report`"
                } else {
                    ""
                }
            ),
            (true, None) => {
                bail!("{name}: a plain path profile needs --tested PROFILE to compare against")
            }
        };
        let fresh = function_residual(f, counts, &set, &mut summary);
        untested.extend(fresh.iter().map(|&p| (f.func_index, p)));
        for (i, &e) in numbered.self_loops.iter().enumerate() {
            let n = counts.self_loops.get(i).copied().unwrap_or(0);
            if n > 0 && !set.self_loops.contains(&i) {
                let block = f.edges[e.index()].src.index() as u32;
                self_loops.push(UntestedLoop {
                    function: f.display_name(),
                    block,
                    iterations: n,
                });
            }
        }
    }
    summary.percent_untested = percent(summary.untested_paths, summary.executed_paths);
    summary.percent_frequency_untested = percent(summary.untested_executions, summary.executions);
    summary.percent_without_untested_edges = percent(
        summary.untested_paths_without_untested_edges,
        summary.untested_paths,
    );
    // Most iterations first, ties in function order, as the paths.
    self_loops.sort_by_key(|l| std::cmp::Reverse(l.iterations));
    let paths = report::hot_paths(field, None)?
        .into_iter()
        .filter(|p| untested.contains(&(p.func_index, p.path)))
        .collect();
    Ok(Residual {
        summary,
        paths,
        self_loops,
    })
}

/// The union of what the `tested` profiles ran in function `f`.
fn tested_in(
    f: &FunctionProfile,
    tested: &[Profile],
    paths: &[impl AsRef<Path>],
) -> Result<Tested> {
    let mut set = Tested::default();
    for (t, p) in tested.iter().zip(paths) {
        let Some(tf) = t.function(f.func_index) else {
            continue;
        };
        let (
            FunctionData::Path {
                numbered: tn,
                counts,
                ..
            },
            FunctionData::Path { numbered: fnum, .. },
        ) = (&tf.data, &f.data)
        else {
            return Err(report::no_paths(t.mode, p.as_ref()));
        };
        if tn != fnum {
            bail!(
                "{}: function {} was numbered differently from the field profile",
                p.as_ref().display(),
                f.display_name()
            );
        }
        set.paths.extend(
            counts
                .paths
                .iter()
                .filter(|&&(_, c)| c > 0)
                .map(|&(id, _)| id),
        );
        set.self_loops.extend(
            counts
                .self_loops
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c > 0)
                .map(|(i, _)| i),
        );
    }
    Ok(set)
}

/// Adds one function's figures to `summary`; returns its untested paths.
fn function_residual(
    f: &FunctionProfile,
    counts: &PathCounts,
    set: &Tested,
    summary: &mut Summary,
) -> Vec<u64> {
    let ran: Vec<(u64, u64)> = counts
        .paths
        .iter()
        .copied()
        .filter(|&(_, c)| c > 0)
        .collect();
    let loops: Vec<(usize, u64)> = counts
        .self_loops
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, c)| c > 0)
        .collect();
    let fresh: Vec<u64> = ran
        .iter()
        .filter(|(p, _)| !set.paths.contains(p))
        .map(|&(p, _)| p)
        .collect();
    let fresh_loops = loops
        .iter()
        .filter(|(i, _)| !set.self_loops.contains(i))
        .count() as u64;
    summary.executed_paths += ran.len() as u64 + loops.len() as u64;
    summary.executions +=
        ran.iter().map(|&(_, c)| c).sum::<u64>() + loops.iter().map(|&(_, c)| c).sum::<u64>();
    summary.untested_executions += ran
        .iter()
        .filter(|(p, _)| !set.paths.contains(p))
        .map(|&(_, c)| c)
        .sum::<u64>()
        + loops
            .iter()
            .filter(|(i, _)| !set.self_loops.contains(i))
            .map(|&(_, c)| c)
            .sum::<u64>();
    let untested = fresh.len() as u64 + fresh_loops;
    summary.untested_paths += untested;
    summary.functions_with_untested_paths += u64::from(untested > 0);
    let edges = untested_edges(f, set);
    summary.untested_edges += edges;
    summary.functions_with_untested_edges += u64::from(edges > 0);
    if edges == 0 {
        summary.untested_paths_without_untested_edges += untested;
    }
    fresh
}

/// Edges the field run took that no tested path takes.
fn untested_edges(f: &FunctionProfile, set: &Tested) -> u64 {
    let FunctionData::Path { numbered, ppp, .. } = &f.data else {
        return 0;
    };
    let with_counts = |paths: Vec<(u64, u64)>, self_loops: Vec<u64>| FunctionProfile {
        data: FunctionData::Path {
            numbered: numbered.clone(),
            counts: PathCounts {
                paths,
                self_loops,
                lost: 0,
            },
            ppp: ppp.clone(),
        },
        ..f.clone()
    };
    let field = report::edge_counts(f);
    let tested_loops = (0..numbered.self_loops.len())
        .map(|i| u64::from(set.self_loops.contains(&i)))
        .collect();
    let tested = report::edge_counts(&with_counts(
        set.paths.iter().map(|&p| (p, 1)).collect(),
        tested_loops,
    ));
    field
        .iter()
        .zip(&tested)
        .filter(|&(&a, &b)| a > 0 && b == 0)
        .count() as u64
}

impl Residual {
    /// The report as text: Table 3.1's columns, then the untested paths.
    pub fn render(&self, field: &Profile, top: usize) -> String {
        use std::fmt::Write;
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "residual path profile of module {}",
            &field.module_hash[..field.module_hash.len().min(12)]
        );
        let rows = [
            (
                "untested paths",
                format!("{} of {} executed", s.untested_paths, s.executed_paths),
            ),
            ("% untested", format!("{:.1}", s.percent_untested)),
            (
                "% frequency of untested paths",
                format!(
                    "{:.1} ({} of {} path executions)",
                    s.percent_frequency_untested, s.untested_executions, s.executions
                ),
            ),
            (
                "functions with untested paths",
                s.functions_with_untested_paths.to_string(),
            ),
            ("untested edges", s.untested_edges.to_string()),
            (
                "functions with untested edges",
                s.functions_with_untested_edges.to_string(),
            ),
            (
                "untested paths in functions with no untested edge",
                format!(
                    "{} ({:.1}%)",
                    s.untested_paths_without_untested_edges, s.percent_without_untested_edges
                ),
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "  {k:<52} {v}");
        }
        if !self.paths.is_empty() {
            let _ = writeln!(
                out,
                "untested paths, most frequent first (% of all field path executions):"
            );
            out += &report::render_rows(&self.paths, top);
        }
        for l in self.self_loops.iter().take(top) {
            let _ = writeln!(
                out,
                "untested self loop: {} block {} ({} iterations)",
                l.function, l.block, l.iterations
            );
        }
        out
    }

    pub fn to_json(&self, top: usize) -> serde_json::Value {
        serde_json::json!({
            "summary": self.summary,
            "paths": self.paths.iter().take(top).collect::<Vec<_>>(),
            "self_loops": self.self_loops.iter().take(top).collect::<Vec<_>>(),
        })
    }
}
