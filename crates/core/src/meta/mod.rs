//! The `__pathprof.meta` custom section: what `pathprof collect` needs to
//! turn a counter memory into a profile without the original module.
//!
//! The section stores only what cannot be recomputed (docs/profile-format.md,
//! "Instrumented modules"): per instrumented function its CFG (blocks with
//! their offsets, sizes and source lines; edges with their kinds), what its
//! plan chose that decoding depends on (edge mode: the chords and the
//! blocks exceptions may unwind from; path mode: the vertices truncation
//! cut, which may depend on the weights it planned with; PPP: the
//! interesting paths, policy, numbering scheme and interval), and, for the
//! whole module, the truncation threshold, the counter layout and the code
//! map. The path numbering is not stored: [`decode`] rebuilds the profile
//! template with the same library calls that planned the function (path
//! mode: `Dag::with_cuts` and `numbering::number`; PPP:
//! `numbering::build_numbered` on the CFG and threshold), which are
//! deterministic.
//!
//! Encoding: the magic `PPMETA`, a version, then LEB128 varints (zigzag
//! deltas for offsets and ids that usually grow) and length-prefixed
//! strings ([`codec`]). Version 1 was the JSON of earlier builds; version 2
//! had no plan hash (the identity of the counter memory, [`identity`]).

mod codec;
mod decode;
mod encode;
mod identity;
pub mod interproc;
pub mod ippp;

use pathprof_profile::Profile;
use pathprof_wasm::{CodeMap, CounterLayout};

pub use codec::{Reader, Writer};
pub use decode::{decode, decode_with, index_with, Records};
pub use encode::{Encoder, Spilled};
pub use identity::CountersError;

/// The name of the custom section with the decoding metadata.
pub const META_SECTION: &str = "__pathprof.meta";
/// First bytes of the section.
const MAGIC: &[u8; 6] = b"PPMETA";
/// The version this build writes and reads (4: edge records list the
/// blocks exceptions may unwind from, path records the cut vertices; 5:
/// block sources have a column and the file's whole path; 6: each
/// function's record is preceded by its length; 7: PPP records list the
/// cut vertices too).
pub const META_VERSION: u32 = 7;

/// The decoded metadata of an instrumented module.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The technique the module was instrumented for.
    pub technique: &'static dyn crate::technique::Profiler,
    /// The profile with zero counts.
    pub template: Profile,
    pub layout: CounterLayout,
    /// Per instrumented function, where each original block's code begins in
    /// the instrumented module. Maps the frames of an abrupt exit to blocks.
    pub code_map: Vec<CodeMap>,
    /// The supergraph of the interprocedural modes, from its own section.
    pub interproc: Option<interproc::InterprocMeta>,
    /// The interesting segments and supergraph of the `ippp` mode.
    pub ippp: Option<ippp::IpppMeta>,
}

/// What planning computed that decoding would compute again (a numbering,
/// expanded graphs), kept beside metadata that `run` did not decode. Not
/// part of any section: two metadata are equal whether or not one kept it.
pub struct Kept<T>(pub Option<std::sync::Arc<T>>);

impl<T> Kept<T> {
    pub fn new(value: T) -> Self {
        Kept(Some(std::sync::Arc::new(value)))
    }
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(None)
    }
}

impl<T> Clone for Kept<T> {
    fn clone(&self) -> Self {
        Kept(self.0.clone())
    }
}

impl<T> PartialEq for Kept<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for Kept<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "kept" } else { "none" })
    }
}

/// Why a metadata section cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("not a module instrumented by pathprof (no {META_SECTION} section)")]
    Missing,
    #[error(
        "the {META_SECTION} section is the JSON of an older pathprof; instrument the module again"
    )]
    OldJson,
    #[error("the {META_SECTION} section is version {found}, this pathprof reads version {META_VERSION}; instrument the module again")]
    Version { found: u64 },
    #[error("corrupt {META_SECTION} section (byte {offset}): {reason}")]
    Corrupt { offset: usize, reason: String },
}
