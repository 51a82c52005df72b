//! `pathprof report` of a `segments` profile: each depth-k interprocedural
//! path segment (Vaswani, thesis 3.4.2) as its subpaths, function by
//! function: `main: 3 4 >call 0 | fact: 1 2 <ret | main: 5 [back]`, where
//! a subpath starts at its function's entry, at `[loop N]` (a loop head
//! after a backedge) or `[after call I]`, runs the blocks listed, and ends
//! in `>call I` (its function's I-th call site), `<ret`, `[back]`,
//! `>tail call` or `>throw`.

use crate::report::ProfileFunctions;

use crate::error::{bail, Result};
use pathprof_graph::interproc::FuncId;
use pathprof_graph::ippp::{SubpathEnd, SubpathStart};
use pathprof_graph::Cfg;
use pathprof_profile::segments::{SegmentCount, SegmentProfile, SubpathStep};
use pathprof_profile::{FunctionProfile, Profile};
use serde::Serialize;

/// One segment, rendered.
#[derive(Clone, Debug, Serialize)]
pub struct SegmentRow {
    pub count: u64,
    /// Share of all segment executions, in percent.
    pub percent: f64,
    pub segment: String,
    /// Calls it enters.
    pub calls: usize,
    /// The module indices of the functions it passes through, in order of
    /// first appearance.
    pub functions: Vec<u32>,
    /// `file:line` of its first and last block, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The profile's segments, most frequent first (ties in segment order);
/// with `function`, only those that pass through it.
pub fn rows(profile: &Profile, function: Option<&str>) -> Result<Vec<SegmentRow>> {
    let Some(sp) = profile.segments.as_deref() else {
        bail!("the profile has no path segments (mode {})", profile.mode);
    };
    let names = Names::new(profile, sp);
    let wanted: Option<Vec<u32>> = function
        .map(|f| crate::report::select(profile, Some(f)))
        .transpose()?
        .map(|fs| fs.iter().map(|f| f.func_index).collect());
    let total = sp.flow();
    let mut out: Vec<SegmentRow> = sp
        .segments
        .iter()
        .map(|s| names.row(s, total))
        .filter(|r| {
            wanted
                .as_ref()
                .is_none_or(|w| w.iter().any(|f| r.functions.contains(f)))
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.count));
    Ok(out)
}

/// One segment of the profile as a row (its share of `total`).
pub fn row(profile: &Profile, seg: &SegmentCount, total: u64) -> Option<SegmentRow> {
    let sp = profile.segments.as_deref()?;
    Some(Names::new(profile, sp).row(seg, total))
}

/// Text: a header, then the rows.
pub fn render(profile: &Profile, rows: &[SegmentRow], top: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(sp) = profile.segments.as_deref() else {
        return s;
    };
    match &sp.ippp {
        None => {
            let _ = writeln!(
                s,
                "depth-{} path segments: {} distinct, {} executions, over {} subpaths in {} run(s)",
                sp.k,
                sp.segments.len(),
                sp.flow(),
                sp.subpaths,
                profile.runs
            );
        }
        Some(ip) => {
            let ran = sp.segments.iter().filter(|c| c.count > 0).count();
            let _ = writeln!(
                s,
                "depth-{} interesting segments (interprocedural PPP): {ran} of {} ran, {} executions in {} run(s); others ({}): {} executions{}",
                sp.k,
                ip.interesting,
                sp.flow(),
                profile.runs,
                ip.policy,
                ip.uninteresting,
                if ip.policy == "record" {
                    format!(", {} distinct", ip.untested.len())
                } else {
                    String::new()
                }
            );
            if !ip.truncated_starts.is_empty() {
                let _ = writeln!(
                    s,
                    "truncated (3.4.4 step 5) below {} start function(s): {} executions of others ended at an edge no interesting segment takes",
                    ip.truncated_starts.len(),
                    ip.truncated
                );
            }
            if ip.through_indirect + ip.too_many_paths + ip.too_many_contexts > 0 {
                let _ = writeln!(
                    s,
                    "left out of the interesting set: {} through an indirect call, {} beyond 64-bit path numbers, {} in too many contexts",
                    ip.through_indirect, ip.too_many_paths, ip.too_many_contexts
                );
            }
        }
    }
    let _ = writeln!(s, "{:>12} {:>7}  segment", "count", "%");
    for r in rows.iter().take(top) {
        let _ = writeln!(s, "{:>12} {:>6.2}%  {}", r.count, r.percent, r.segment);
        if let Some(src) = &r.source {
            let _ = writeln!(s, "{:>22}{src}", "");
        }
    }
    if rows.len() > top {
        let _ = writeln!(s, "({} more; --top N shows more)", rows.len() - top);
    }
    s
}

struct Names<'a> {
    sp: &'a SegmentProfile,
    functions: ProfileFunctions<'a>,
}

impl<'a> Names<'a> {
    fn new(profile: &'a Profile, sp: &'a SegmentProfile) -> Self {
        let functions = ProfileFunctions::new(profile, sp.num_imported_funcs);
        Names { sp, functions }
    }

    fn function(&self, f: FuncId) -> Option<&'a FunctionProfile> {
        self.functions.get(f)
    }

    fn name(&self, f: FuncId) -> String {
        self.functions.name(f)
    }

    fn row(&self, seg: &SegmentCount, total: u64) -> SegmentRow {
        let mut functions = Vec::new();
        for step in &seg.steps {
            let index = self.sp.func_index(step.func);
            if !functions.contains(&index) {
                functions.push(index);
            }
        }
        let text: Vec<String> = seg.steps.iter().map(|s| self.step(s)).collect();
        SegmentRow {
            count: seg.count,
            percent: crate::report::percent(seg.count, total),
            segment: text.join(" | "),
            calls: seg
                .steps
                .iter()
                .filter(|s| matches!(s.subpath.end, SubpathEnd::Call(_)))
                .count()
                .min(seg.steps.len().saturating_sub(1)),
            functions,
            source: self.source(seg),
        }
    }

    /// The blocks a subpath runs: its edges' targets.
    fn blocks(&self, step: &SubpathStep) -> Vec<usize> {
        let Some(f) = self.function(step.func) else {
            return Vec::new();
        };
        step.subpath
            .edges
            .iter()
            .filter_map(|e| f.edges.get(e.index()).map(|e| e.dst))
            .filter(|&d| d != Cfg::EXIT)
            .map(|d| d.index())
            .collect()
    }

    /// `fact: [after call 0] 5 6 <ret`.
    fn step(&self, step: &SubpathStep) -> String {
        let mut parts = vec![format!("{}:", self.name(step.func))];
        match step.subpath.start {
            SubpathStart::Entry => {}
            SubpathStart::LoopHead(v) => parts.push(format!("[loop {}]", v.index())),
            SubpathStart::AfterCall(i) => parts.push(format!("[after call {i}]")),
        }
        parts.extend(self.blocks(step).iter().map(|b| b.to_string()));
        parts.push(match step.subpath.end {
            SubpathEnd::Exit => "<ret".to_string(),
            SubpathEnd::Call(i) => format!(">call {i}"),
            SubpathEnd::Backedge(_) => "[back]".to_string(),
            SubpathEnd::TailCall => ">tail call".to_string(),
            SubpathEnd::Throw => ">throw".to_string(),
        });
        parts.join(" ")
    }

    fn source(&self, seg: &SegmentCount) -> Option<String> {
        let lines = seg.steps.iter().flat_map(|step| {
            let f = self.function(step.func);
            self.blocks(step)
                .into_iter()
                .filter_map(move |b| f?.blocks.get(b)?.as_ref()?.source.clone())
        });
        crate::report::source_range(lines)
    }
}
