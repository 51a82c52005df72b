//! The library's error type: what a Rust user of pathprof matches on.
//!
//! Each failure of a lower layer keeps its own type ([`Error::Wasm`] for a
//! module that cannot be read or rewritten, [`Error::Profile`] for a
//! profile file, [`Error::Meta`] for an instrumented module's metadata,
//! [`Error::Graph`] for a numbering that does not fit, [`Error::Interproc`]
//! and [`Error::IpppLimit`] for a mode that does not apply to a module),
//! and a
//! request the input cannot satisfy is [`Error::Invalid`] with a message
//! that says why. [`Error::Context`] says what was being done when another
//! error happened; [`Error::root`] looks through it.
//!
//! Like `anyhow`'s, an error's `Display` is its outermost message, and
//! `{:#}` adds its causes, each after `: `; the causes are its
//! [`std::error::Error::source`] chain. The enum and its impls come from
//! [`crate::typed_error!`], which `pathprof-session` shares.

use pathprof_graph::GraphError;
use pathprof_profile::ProfileError;
use pathprof_wasm::WasmError;

use crate::meta::{CountersError, MetaError};

crate::typed_error! {
    pub enum Error {
        /// The module cannot be parsed, planned or rewritten.
        Wasm(WasmError),
        /// A profile file cannot be read, written or merged.
        Profile(ProfileError),
        /// An instrumented module's metadata is missing, of another
        /// version, or corrupt.
        Meta(MetaError),
        /// A counter memory that is not the instrumented module's (boxed:
        /// the largest of the causes, it would make every `Result` as
        /// large).
        Counters(Box<CountersError>),
        /// A graph algorithm refused: most often, more paths than 64 bits
        /// number.
        Graph(GraphError),
        /// The interprocedural modes do not apply to this module.
        Interproc(pathprof_techniques::interproc::Unsupported),
        /// Interprocedural PPP's registers cannot hold the interesting set.
        IpppLimit(pathprof_techniques::ippp::Unsupported),
        /// Reading or writing failed; the file is named by an
        /// [`Error::Context`] around this.
        Io(std::io::Error),
        /// A JSON document that could not be written or read.
        Json(serde_json::Error),
        /// An export that could not be encoded.
        Parquet(parquet::errors::ParquetError),
    }
}

impl Error {
    /// The module error under every [`Error::Context`], if that is what
    /// this is (a counter memory too large for 32 bits, say).
    pub fn wasm(&self) -> Option<&WasmError> {
        match self.root() {
            Error::Wasm(w) => Some(w),
            _ => None,
        }
    }
}

impl From<CountersError> for Error {
    fn from(e: CountersError) -> Self {
        Error::Counters(Box::new(e))
    }
}

/// Text that is not UTF-8 where text is needed.
impl From<std::str::Utf8Error> for Error {
    fn from(e: std::str::Utf8Error) -> Self {
        Error::Invalid(format!("not UTF-8 text: {e}"))
    }
}

/// Writing to a `String` does not fail; reports are written with `write!`.
impl From<std::fmt::Error> for Error {
    fn from(_: std::fmt::Error) -> Self {
        Error::Invalid("formatting a report failed".into())
    }
}

/// An [`Error::Invalid`] of a formatted message; `bail!`: return it.
macro_rules! invalid { ($($arg:tt)*) => { $crate::error::Error::Invalid(format!($($arg)*)) }; }
macro_rules! bail { ($($arg:tt)*) => { return Err($crate::error::invalid!($($arg)*)) }; }
pub(crate) use {bail, invalid};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_cause_and_root_finds_it() {
        let r: Result<()> = Err(GraphError::PathCountOverflow { function: Some(3) }.into());
        let e = r.context("numbering f").context("planning").unwrap_err();
        assert_eq!(e.to_string(), "planning");
        assert_eq!(
            format!("{e:#}"),
            format!(
                "planning: numbering f: {}",
                GraphError::PathCountOverflow { function: Some(3) }
            )
        );
        let chain: Vec<String> =
            std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
                .map(|e| e.to_string())
                .collect();
        assert_eq!(chain.len(), 3, "{chain:?}");
        assert_eq!(chain[1], "numbering f");
        assert!(matches!(
            e.root(),
            Error::Graph(GraphError::PathCountOverflow { .. })
        ));
        let none: Option<u8> = None;
        assert_eq!(
            none.context("no such function").unwrap_err().to_string(),
            "no such function"
        );
    }
}
