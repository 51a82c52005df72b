//! `pathprof residual-report` of segment profiles: interprocedural residual
//! profiling (Vaswani, thesis 3.5.2, Fig. 3.15, Table 3.2). The depth-k
//! path segments a field run executed that no test run did, and Table
//! 3.2's columns: untested segments, their share of the field run's
//! distinct segments, and their share of its segment executions.
//!
//! The tested side is `run --segments K` profiles (recorded from traces).
//! The field side is one too (exact, at a trace's cost), or, as in the
//! thesis, the profile of a field build (`residual --tested` with segment
//! profiles: interprocedural PPP counting the tested segments and
//! recording the others, [`crate::ippp`]). Such a profile carries its own
//! tested set (its interesting segments); its untested segments are as far
//! as the field build followed them: up to the call where no tested
//! segment goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{bail, Result};
use pathprof_graph::ippp::Residual;
use pathprof_profile::segments::{SegmentCount, SegmentKey, SegmentProfile};
use pathprof_profile::Profile;
use serde::Serialize;

use crate::segments_report::{self, SegmentRow};

/// Table 3.2's columns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SegmentSummary {
    pub k: u32,
    /// Distinct segments of the field run, and how many were untested.
    pub field_segments: usize,
    pub untested_segments: usize,
    pub percent_untested: f64,
    /// Segment executions of the field run, and those of untested ones.
    pub field_executions: u64,
    pub untested_executions: u64,
    pub percent_frequency_untested: f64,
}

pub struct SegmentResidual {
    pub summary: SegmentSummary,
    /// Of a field build: tested segments it left out of its interesting
    /// set (through an indirect call, or beyond 64-bit path numbers),
    /// which its run reports as untested.
    pub left_out: u64,
    /// Untested segments, most frequent first.
    pub untested: Vec<SegmentRow>,
}

/// The residual of the segment profile `field` against the `tested` ones.
pub fn residual(
    field: &Profile,
    field_path: &Path,
    tested: &[Profile],
    tested_paths: &[impl AsRef<Path>],
) -> Result<SegmentResidual> {
    let fsp = segments_of(field, field_path)?;
    let field_build = fsp.ippp.as_ref();
    if tested.is_empty() && field_build.is_none() {
        bail!(
            "{}: a segment profile needs --tested PROFILE (segment profiles of the test runs) to compare against",
            field_path.display()
        );
    }
    if field_build.is_some_and(|ip| ip.policy == "ignore") {
        bail!(
            "{}: the field build ignored the untested segments (--uninteresting ignore): build it with record or count",
            field_path.display()
        );
    }
    // A field build's profile: its interesting segments were the tested ones.
    let mut tested_set: BTreeSet<SegmentKey> = match field_build {
        Some(_) if tested.is_empty() => fsp.segments.iter().map(|s| s.key()).collect(),
        _ => BTreeSet::new(),
    };
    for (t, p) in tested.iter().zip(tested_paths) {
        let p = p.as_ref();
        t.check_module(p, &field.module_hash)?;
        let tsp = segments_of(t, p)?;
        if tsp.k != fsp.k {
            bail!(
                "{}: segments of depth {}, the field profile's are of depth {}",
                p.display(),
                tsp.k,
                fsp.k
            );
        }
        tested_set.extend(tsp.segments.iter().map(|s| s.key()));
    }
    let ran: Vec<&SegmentCount> = fsp
        .segments
        .iter()
        .chain(field_build.iter().flat_map(|ip| &ip.untested))
        .filter(|s| s.count > 0)
        .collect();
    let counts: BTreeMap<SegmentKey, u64> = ran.iter().map(|s| (s.key(), s.count)).collect();
    let r = Residual::new(&tested_set, &counts);
    // Under `count`, the untested segments were counted, not listed; under
    // `record`, those truncated were (their identity was not followed).
    let counted = field_build.map_or(0, |ip| match ip.policy.as_str() {
        "count" => ip.uninteresting,
        _ => ip.truncated,
    });
    let total = r.field_flow.saturating_add(counted);
    let mut untested: Vec<SegmentRow> = ran
        .iter()
        .filter(|s| r.untested.contains_key(&s.key()))
        .filter_map(|s| segments_report::row(field, s, total))
        .collect();
    untested.sort_by_key(|r| std::cmp::Reverse(r.count));
    let untested_flow = r.untested_flow.saturating_add(counted);
    Ok(SegmentResidual {
        summary: SegmentSummary {
            k: fsp.k,
            field_segments: r.field_paths,
            untested_segments: r.untested_paths(),
            percent_untested: r.percent_untested_paths(),
            field_executions: total,
            untested_executions: untested_flow,
            percent_frequency_untested: percent(untested_flow, total),
        },
        left_out: field_build.map_or(0, |ip| {
            ip.through_indirect + ip.too_many_paths + ip.too_many_contexts
        }),
        untested,
    })
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn segments_of<'p>(p: &'p Profile, path: &Path) -> Result<&'p SegmentProfile> {
    match p.segments.as_deref() {
        Some(s) => Ok(s),
        None => bail!(
            "{}: a {} profile has no path segments; record them with `pathprof run --segments K`",
            path.display(),
            p.mode
        ),
    }
}

impl SegmentResidual {
    pub fn render(&self, top: usize) -> String {
        use std::fmt::Write;
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "untested depth-{} segments: {} of {} executed ({:.2}%), {} of {} executions ({:.2}%)",
            s.k,
            s.untested_segments,
            s.field_segments,
            s.percent_untested,
            s.untested_executions,
            s.field_executions,
            s.percent_frequency_untested
        );
        if self.left_out > 0 {
            let _ = writeln!(
                out,
                "(the field build left {} tested segments out of its interesting set: through an indirect call, beyond 64-bit path numbers or in too many contexts; they count as untested here)",
                self.left_out
            );
        }
        if !self.untested.is_empty() {
            let _ = writeln!(out, "{:>12} {:>7}  untested segment", "count", "%");
        }
        for r in self.untested.iter().take(top) {
            let _ = writeln!(out, "{:>12} {:>6.2}%  {}", r.count, r.percent, r.segment);
            if let Some(src) = &r.source {
                let _ = writeln!(out, "{:>22}{src}", "");
            }
        }
        if self.untested.len() > top {
            let _ = writeln!(
                out,
                "({} more; --top N shows more)",
                self.untested.len() - top
            );
        }
        out
    }

    pub fn to_json(&self, top: usize) -> serde_json::Value {
        serde_json::json!({
            "summary": self.summary,
            "left_out": self.left_out,
            "untested": self.untested.iter().take(top).collect::<Vec<_>>(),
        })
    }
}
