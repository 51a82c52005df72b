//! The [`IPPP_SECTION`] of a module instrumented in the `ippp` mode: the
//! supergraph, `k`, the policy and the interesting segments, from which
//! `collect` builds the expanded graphs again (deterministic) to decode
//! what the run counted ([`crate::ippp`]).

use crate::error::{bail, invalid, Result};
use pathprof_graph::interproc::Supergraph;
use pathprof_graph::ippp::Ips;
use pathprof_techniques::ippp::Policy;
use serde::{Deserialize, Serialize};

/// The custom section with what decoding needs.
pub const IPPP_SECTION: &str = "__pathprof.ippp";

/// What the [`IPPP_SECTION`] holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IpppMeta {
    pub k: usize,
    /// `record`, `count` or `ignore`.
    pub policy: String,
    pub hash_capacity: u32,
    /// The interesting segments profiled (none through an indirect call).
    pub interesting: Vec<Ips>,
    pub through_indirect: u64,
    /// Interesting segments left out because their start function's
    /// expanded graph would have had too many paths with them.
    pub too_many_paths: u64,
    /// Interesting segments left out because a function they enter would
    /// appear in more contexts than its registers hold.
    pub too_many_contexts: u64,
    /// The start functions (module indices) whose expanded graphs were
    /// truncated (3.4.4 step 5).
    #[serde(default)]
    pub truncated_starts: Vec<u32>,
    /// The supergraph, truncated where the subpaths needed it.
    pub supergraph: Supergraph,
    pub num_imported_funcs: u32,
    /// The subpath numbering, expanded graphs and layout planning made,
    /// when the metadata was kept rather than decoded.
    #[serde(skip)]
    pub(crate) planned: super::Kept<crate::ippp::Planned>,
}

impl IpppMeta {
    /// The policy for the technique's plans.
    pub(crate) fn technique_policy(&self) -> Result<Policy> {
        Ok(match self.policy.as_str() {
            "record" => Policy::Record {
                capacity: self.hash_capacity,
            },
            "count" => Policy::Count,
            "ignore" => Policy::Ignore,
            p => bail!("corrupt {IPPP_SECTION} section: unknown policy {p:?}"),
        })
    }
}

/// Reads the [`IPPP_SECTION`] of an instrumented module, if it has one.
pub fn read_meta(instrumented: &[u8]) -> Result<Option<IpppMeta>> {
    let Some(bytes) = pathprof_wasm::custom_section(instrumented, IPPP_SECTION)? else {
        return Ok(None);
    };
    let meta = serde_json::from_slice(&bytes)
        .map_err(|e| invalid!("corrupt {IPPP_SECTION} section: {e}"))?;
    Ok(Some(meta))
}
