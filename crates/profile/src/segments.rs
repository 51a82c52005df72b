//! The depth-k interprocedural path segments (IPS) of runs (K. Vaswani,
//! "Efficient Online Path Profiling", thesis 3.4.2): what
//! `pathprof run --segments K` records, and what residual profiling
//! compares (3.5.2).
//!
//! A segment is its subpaths in run order; each subpath names its function
//! by the index among the module's *defined* functions (the supergraph's
//! ids, [`SegmentProfile::func_index`] gives the module index) and its id
//! in that function's call-cut DAG, and is spelt out (start, CFG edges,
//! end) so the profile reads without the module.

use pathprof_graph::interproc::FuncId;
use pathprof_graph::ippp::Subpath;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentProfile {
    /// The depth: a segment spans calls nested at most `k` deep.
    pub k: u32,
    pub num_imported_funcs: u32,
    /// Every segment the runs closed, ordered by its subpaths.
    pub segments: Vec<SegmentCount>,
    /// How many subpaths the runs completed (the length of their WPP);
    /// 0 for an IPPP profile, which does not count them.
    pub subpaths: u64,
    /// What interprocedural PPP (`run --mode ippp`) counted besides the
    /// interesting segments, which are then [`SegmentProfile::segments`];
    /// `None` for a profile recorded from a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ippp: Option<IpppSummary>,
}

/// The part of an IPPP profile that is not the interesting segments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpppSummary {
    /// Interesting segments profiled (every one of them is in
    /// [`SegmentProfile::segments`], with count 0 if it never ran).
    pub interesting: u64,
    /// Interesting segments given but not profiled: they pass an indirect
    /// call through a table the module or the host may write, which ends
    /// segments in the instrumentation (a static table's are resolved).
    pub through_indirect: u64,
    /// Interesting segments given but not profiled: with them, their start
    /// function's expanded graph would have more paths than 64 bits
    /// number (the hottest are kept first).
    pub too_many_paths: u64,
    /// Interesting segments given but not profiled: a function they enter
    /// would appear in more contexts than its registers hold (the
    /// coldest left out first).
    pub too_many_contexts: u64,
    /// The start functions (module indices) whose expanded graphs were
    /// truncated: there a segment no interesting one extends may end at a
    /// cut edge (Vaswani 3.4.4 step 5).
    #[serde(default)]
    pub truncated_starts: Vec<u32>,
    /// Under `record`: how many of the segments that are not interesting
    /// ended at a cut edge (counted in `uninteresting`, not in `untested`,
    /// as the rest of them was not followed).
    #[serde(default)]
    pub truncated: u64,
    /// What happened to the others: `record`, `count` or `ignore`.
    pub policy: String,
    /// How many segments that are not interesting closed (`record` and
    /// `count`), truncated ones included.
    pub uninteresting: u64,
    /// Under `record`: the segments that are not interesting, each as
    /// far as the instrumentation followed it (up to the call where no
    /// interesting segment goes on), with their counts.
    pub untested: Vec<SegmentCount>,
    /// Counts a full hash table dropped.
    pub lost: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentCount {
    pub steps: Vec<SubpathStep>,
    pub count: u64,
}

/// One subpath `<f, p>` of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubpathStep {
    pub func: FuncId,
    pub id: u64,
    pub subpath: Subpath,
}

/// A segment's identity: its subpaths as (function, id).
pub type SegmentKey = Vec<(FuncId, u64)>;

impl SegmentCount {
    pub fn key(&self) -> SegmentKey {
        self.steps.iter().map(|s| (s.func, s.id)).collect()
    }
}

impl SegmentProfile {
    /// The module index of supergraph function `f`.
    pub fn func_index(&self, f: FuncId) -> u32 {
        self.num_imported_funcs + f.index() as u32
    }

    /// How many segments closed (the sum of the counts).
    pub fn flow(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |s, c| s.saturating_add(c.count))
    }

    /// Adds `other`'s counts (a profile of the same module and depth).
    pub fn add(&mut self, other: &SegmentProfile) -> Result<(), String> {
        if self.k != other.k || self.num_imported_funcs != other.num_imported_funcs {
            return Err(format!(
                "the segment profiles differ in depth ({} and {})",
                self.k, other.k
            ));
        }
        crate::merge::add_counted(
            &mut self.segments,
            &other.segments,
            SegmentCount::key,
            |s| &mut s.count,
            "segment",
        )?;
        self.subpaths = self.subpaths.saturating_add(other.subpaths);
        match (&mut self.ippp, &other.ippp) {
            (None, None) => {}
            (Some(a), Some(b)) if a.policy == b.policy && a.interesting == b.interesting => {
                a.uninteresting = a.uninteresting.saturating_add(b.uninteresting);
                a.lost = a.lost.saturating_add(b.lost);
                crate::merge::add_counted(
                    &mut a.untested,
                    &b.untested,
                    SegmentCount::key,
                    |s| &mut s.count,
                    "segment",
                )?;
            }
            _ => {
                return Err(
                    "the segment profiles differ: recorded from a trace or by IPPP, or IPPP with other interesting segments or policy"
                        .into(),
                )
            }
        }
        Ok(())
    }
}
