//! The library's error type: what a Rust user of pathprof matches on.
//!
//! Each failure of a lower layer keeps its own type ([`Error::Wasm`] for a
//! module that cannot be read or rewritten, [`Error::Profile`] for a
//! profile file, [`Error::Meta`] for an instrumented module's metadata,
//! [`Error::Graph`] for a numbering that does not fit, [`Error::Interproc`],
//! [`Error::Ippp`] and [`Error::IpppLimit`] for a mode that does not apply
//! to a module), and a
//! request the input cannot satisfy is [`Error::Invalid`] with a message
//! that says why. [`Error::Context`] says what was being done when another
//! error happened; [`Error::root`] looks through it.
//!
//! Like `anyhow`'s, an error's `Display` is its outermost message; the
//! causes are its [`std::error::Error::source`] chain (anyhow's `{:#}`
//! prints them all, joined by `: `, as the `pathprof` binary does).

use std::fmt::Display;
use std::path::PathBuf;

use pathprof_graph::GraphError;
use pathprof_profile::ProfileError;
use pathprof_wasm::WasmError;

use crate::meta::{CountersError, MetaError};

/// A `Result` of this library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The module cannot be parsed, planned or rewritten.
    #[error(transparent)]
    Wasm(#[from] WasmError),
    /// A profile file cannot be read, written or merged.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// An instrumented module's metadata is missing, of another version,
    /// or corrupt, or its counters are not its own.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// A counter memory that is not the instrumented module's.
    #[error(transparent)]
    Counters(Box<CountersError>),
    /// A graph algorithm refused: most often, more paths than 64 bits
    /// number.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The interprocedural modes do not apply to this module.
    #[error(transparent)]
    Interproc(#[from] pathprof_techniques::interproc::Unsupported),
    /// Interprocedural PPP does not apply to this module.
    #[error(transparent)]
    Ippp(#[from] crate::ippp::Unsupported),
    /// Interprocedural PPP's registers cannot hold the interesting set.
    #[error(transparent)]
    IpppLimit(#[from] pathprof_techniques::ippp::Unsupported),
    /// A file the library reads or writes itself (sources, interesting
    /// paths, reports).
    #[error("{}: {reason}", path.display())]
    File {
        path: PathBuf,
        reason: std::io::Error,
    },
    /// Reading or writing failed where the file is named by an
    /// [`Error::Context`] around this.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A JSON document that could not be written or read.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An export that could not be encoded.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A request the module, the profile or the options cannot satisfy:
    /// the message names it and says why.
    #[error("{0}")]
    Invalid(String),
    /// `context` was being done when `source` happened.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// The error under every [`Error::Context`].
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { source, .. } => source.root(),
            e => e,
        }
    }

    /// The module error under every [`Error::Context`], if that is what
    /// this is (a counter memory too large for 32 bits, say).
    pub fn wasm(&self) -> Option<&WasmError> {
        match self.root() {
            Error::Wasm(w) => Some(w),
            _ => None,
        }
    }

    /// An [`Error::File`] of `path`.
    pub fn file(path: impl Into<PathBuf>, reason: std::io::Error) -> Error {
        Error::File {
            path: path.into(),
            reason,
        }
    }
}

/// Boxed: the largest of the causes, it would make every `Result` of the
/// library as large.
impl From<CountersError> for Error {
    fn from(e: CountersError) -> Self {
        Error::Counters(Box::new(e))
    }
}

impl From<Box<CountersError>> for Error {
    fn from(e: Box<CountersError>) -> Self {
        Error::Counters(e)
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

/// Adds what was being done to an error, as `anyhow::Context` does.
pub trait Context<T> {
    fn context<C: Display>(self, context: C) -> Result<T>;
    fn with_context<C: Display, F: FnOnce() -> C>(self, context: F) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context<C: Display>(self, context: C) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context.to_string(),
            source: Box::new(e.into()),
        })
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, context: F) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context().to_string(),
            source: Box::new(e.into()),
        })
    }
}

/// A missing value is an [`Error::Invalid`] that says what was missing.
impl<T> Context<T> for Option<T> {
    fn context<C: Display>(self, context: C) -> Result<T> {
        self.ok_or_else(|| Error::Invalid(context.to_string()))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, context: F) -> Result<T> {
        self.ok_or_else(|| Error::Invalid(context().to_string()))
    }
}

/// An [`Error::Invalid`] of a formatted message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        $crate::error::Error::Invalid(format!($($arg)*))
    };
}

/// Returns an [`Error::Invalid`] of a formatted message.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::invalid!($($arg)*))
    };
}

pub(crate) use {bail, invalid};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_cause_and_root_finds_it() {
        let r: Result<()> = Err(GraphError::PathCountOverflow { function: Some(3) }.into());
        let e = r.context("numbering f").context("planning").unwrap_err();
        assert_eq!(e.to_string(), "planning");
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
