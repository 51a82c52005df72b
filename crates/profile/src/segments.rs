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
    /// How many subpaths the runs completed (the length of their WPP).
    pub subpaths: u64,
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
        Ok(())
    }
}
