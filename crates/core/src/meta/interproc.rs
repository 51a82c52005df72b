//! The [`INTERPROC_SECTION`] of a module instrumented in the `context` or
//! `piecewise` mode: the supergraph and the call sites cut by the hybrid
//! policy, from which `collect` numbers it again (the numbering is
//! deterministic) to decode the path numbers the run counted.

use crate::error::Result;
use pathprof_graph::interproc::{CallSiteId, Callee, Interproc, Mode, Supergraph};
use pathprof_profile::interproc::{InterprocProfile, SiteInfo};
use serde::{Deserialize, Serialize};

/// The custom section with the supergraph and the hybrid cuts.
pub const INTERPROC_SECTION: &str = "__pathprof.interproc";

/// What the [`INTERPROC_SECTION`] holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterprocMeta {
    pub mode: Mode,
    pub supergraph: Supergraph,
    /// Sites cut by the hybrid policy (recursive and indirect ones are cut
    /// by the numbering itself).
    pub cuts: Vec<CallSiteId>,
    pub num_imported_funcs: u32,
    /// Per call site: where it is (for reports).
    pub sites: Vec<(u32, u32)>,
    /// The numbering planning made, when the metadata was kept rather than
    /// decoded ([`InterprocMeta::with_numbering`]).
    #[serde(skip)]
    pub numbered: super::Kept<Interproc>,
}

impl InterprocMeta {
    /// The numbering the instrumenter made: kept, or built again.
    pub fn numbering(&self) -> Result<std::sync::Arc<Interproc>> {
        if let Some(ip) = &self.numbered.0 {
            return Ok(ip.clone());
        }
        Ok(std::sync::Arc::new(Interproc::build_with_cuts(
            &self.supergraph,
            self.mode,
            &self.cuts,
        )?))
    }

    /// This metadata with the numbering planning made, for `run` to
    /// collect with.
    pub fn with_numbering(mut self, ip: Interproc) -> Self {
        self.numbered = super::Kept::new(ip);
        self
    }

    /// The profile's empty interprocedural part.
    pub fn template(&self, ip: &Interproc) -> InterprocProfile {
        let sites = self
            .sites
            .iter()
            .enumerate()
            .map(|(s, &(func_index, offset))| SiteInfo {
                func_index,
                offset,
                cut: cut_reason(ip, CallSiteId::new(s)),
            })
            .collect();
        InterprocProfile {
            potential: ip.total(),
            num_imported_funcs: self.num_imported_funcs,
            sites,
            max_enters: ip.max_enters.clone(),
            paths: Vec::new(),
            lost: 0,
        }
    }
}

/// Why call site `s` is cut, if it is: `indirect` (9.2.3), `recursive`
/// (a backedge of the call graph, T3), or `hybrid` (section 8's policy).
pub(crate) fn cut_reason(ip: &Interproc, s: CallSiteId) -> Option<String> {
    if !ip.is_cut(s) {
        return None;
    }
    Some(
        if matches!(ip.callees[s.index()], Callee::Indirect(_)) {
            "indirect"
        } else if ip.call_graph.recursive[s.index()] {
            "recursive"
        } else {
            "hybrid"
        }
        .to_string(),
    )
}

/// Reads the [`INTERPROC_SECTION`] of an instrumented module, if it has one.
pub fn read_meta(instrumented: &[u8]) -> Result<Option<InterprocMeta>> {
    let Some(bytes) = pathprof_wasm::custom_section(instrumented, INTERPROC_SECTION)? else {
        return Ok(None);
    };
    let meta = serde_json::from_slice(&bytes)
        .map_err(|e| crate::error::invalid!("corrupt {INTERPROC_SECTION} section: {e}"))?;
    Ok(Some(meta))
}
