//! The crate's error type, as [`pathprof_core::Error`] is the library's:
//! the failures of the layers it joins keep their own types ([`Error::Core`]
//! for instrumenting and decoding, [`Error::Run`] for the engine,
//! [`Error::Sim`] for a simulator configuration, [`Error::Profile`] for a
//! profile file), a request the input cannot satisfy is [`Error::Invalid`],
//! and [`Error::Context`] says what was being done.
//!
//! It is made as the library's is ([`pathprof_core::typed_error!`]): the
//! same `Display` (`{:#}` adds the causes), `root`, `context` and
//! `Context` trait.

pathprof_core::typed_error! {
    pub enum Error {
        /// Instrumenting, decoding or reporting failed.
        Core(pathprof_core::Error),
        /// The engine could not run the module.
        Run(pathprof_runner::RunError),
        /// The module could not be analysed or rewritten for tracing.
        Wasm(pathprof_wasm::WasmError),
        /// A simulator configuration the simulator refuses.
        Sim(pathprof_simulator::SimError),
        /// A profile file could not be written.
        Profile(pathprof_profile::ProfileError),
        /// The engine failed where pathprof calls it directly.
        Engine(EngineError),
        /// Reading or writing failed (a trace file, standard output); the
        /// file is named by an [`Error::Context`] around this.
        Io(std::io::Error),
        /// A trace file or a result that could not be encoded or decoded.
        Encoding(postcard::Error),
        Json(serde_json::Error),
    }
}

/// An error of wasmtime's API (an `anyhow::Error`, which is not a
/// `std::error::Error`): its message, and the rest of its chain as causes.
#[derive(Debug)]
pub struct EngineError(pub wasmtime::Error);

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let outermost: &(dyn std::error::Error + 'static) = self.0.as_ref();
        outermost.source()
    }
}

impl From<wasmtime::Error> for Error {
    fn from(e: wasmtime::Error) -> Self {
        Error::Engine(EngineError(e))
    }
}

impl Error {
    /// The library's error under every context, if that is what this is.
    pub fn core(&self) -> Option<&pathprof_core::Error> {
        match self.root() {
            Error::Core(e) => Some(e),
            _ => None,
        }
    }

    /// The module error under every context, here or in the library's.
    pub fn wasm(&self) -> Option<&pathprof_wasm::WasmError> {
        match self.root() {
            Error::Wasm(w) => Some(w),
            Error::Core(e) => e.wasm(),
            _ => None,
        }
    }
}

/// Counters that are not the run's own module's.
impl From<Box<pathprof_core::meta::CountersError>> for Error {
    fn from(e: Box<pathprof_core::meta::CountersError>) -> Self {
        Error::Core(e.into())
    }
}

/// An [`Error::Invalid`] of a formatted message; `bail!`: return it.
macro_rules! invalid { ($($arg:tt)*) => { $crate::error::Error::Invalid(format!($($arg)*)) }; }
macro_rules! bail { ($($arg:tt)*) => { return Err($crate::error::invalid!($($arg)*)) }; }
pub(crate) use {bail, invalid};
