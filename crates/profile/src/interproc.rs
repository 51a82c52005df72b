//! The interprocedural part of a profile (`context` and `piecewise` modes,
//! Melski & Reps, TR 1382): the observable paths counted, each decoded to
//! its steps across calls and returns, and what the numbering chose.
//!
//! A path's steps name functions by their index among the module's
//! *defined* functions (the supergraph's ids); [`InterprocProfile::func_index`]
//! turns one into the module's function index.

use pathprof_graph::interproc::{CallSiteId, FuncId, ProfiledPath};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InterprocProfile {
    /// The number of observable paths (every path number is below it).
    pub potential: u64,
    pub num_imported_funcs: u32,
    /// Per supergraph call site, in site-id order.
    pub sites: Vec<SiteInfo>,
    /// Per defined function: maxEnters (section 3.2).
    pub max_enters: Vec<u64>,
    /// The counted paths, by path number.
    pub paths: Vec<InterprocPath>,
    /// Counts a full hash table dropped.
    pub lost: u64,
}

/// One call site of the supergraph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteInfo {
    /// The calling function's module index.
    pub func_index: u32,
    /// Module byte offset of the call instruction.
    pub offset: u32,
    /// Why the site is cut (profiled as a summary edge, T3), if it is:
    /// `recursive`, `indirect`, or `hybrid` (cut by the hybrid policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterprocPath {
    pub number: u64,
    pub count: u64,
    pub path: ProfiledPath,
}

impl InterprocProfile {
    /// The module index of supergraph function `f`.
    pub fn func_index(&self, f: FuncId) -> u32 {
        self.num_imported_funcs + f.index() as u32
    }

    pub fn site(&self, s: CallSiteId) -> Option<&SiteInfo> {
        self.sites.get(s.index())
    }

    /// Adds `other`'s counts (a profile of the same module and numbering).
    pub fn add(&mut self, other: &InterprocProfile) -> Result<(), String> {
        if self.potential != other.potential || self.sites != other.sites {
            return Err("the interprocedural numberings differ".into());
        }
        crate::merge::add_counted(
            &mut self.paths,
            &other.paths,
            |p| p.number,
            |p| &mut p.count,
            "path",
        )?;
        self.lost = self.lost.saturating_add(other.lost);
        Ok(())
    }
}
