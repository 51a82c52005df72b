//! The crate's one error type.

/// `Result` with [`WasmError`] as the default error.
pub type Result<T, E = WasmError> = std::result::Result<T, E>;

/// Everything that can go wrong while analysing, instrumenting or reading the
/// counters of a module. Variants about the input carry the byte offset
/// (from the start of the module) where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WasmError {
    /// The input does not start with the WebAssembly magic number `\0asm`.
    #[error("not a WebAssembly binary: the input does not start with `\\0asm`")]
    NotWasm,
    /// The input is a WebAssembly component; only core modules are handled.
    #[error("the input is a WebAssembly component; only core modules are supported")]
    Component,
    /// The input ends before the module is complete.
    #[error("truncated module: input ends at byte {len} ({message} at offset {offset:#x})")]
    Truncated {
        offset: usize,
        len: usize,
        message: String,
    },
    /// The module is malformed or does not validate.
    #[error("invalid module at offset {offset:#x}: {message}")]
    Invalid { offset: usize, message: String },
    /// `instrument` was given a `ModuleInfo` computed from other bytes.
    #[error("the ModuleInfo was computed from a different module (hash {expected}, input hash {actual})")]
    InfoMismatch { expected: String, actual: String },
    /// The module already uses a name this crate reserves (`__pathprof...`).
    #[error("the module already uses the reserved name {name:?}; is it instrumented already?")]
    ReservedName { name: String },
    /// `instrument` needs one plan slot per defined function.
    #[error("{got} plans given for a module that defines {expected} functions")]
    PlanCount { expected: usize, got: usize },
    /// A trace event names an edge the module does not have.
    #[error("trace event of edge {edge} of function {func_index}, which the module does not have")]
    UnknownEdge { func_index: u32, edge: u32 },
    /// A plan does not fit the function it is given for.
    #[error("bad plan for function {func_index}: {reason}")]
    BadPlan { func_index: u32, reason: String },
    /// The counters of all plans do not fit in one 32-bit memory: path
    /// arrays and hash tables took `array_bytes` and `hash_bytes` of it.
    #[error("the counter memory would need {bytes} bytes, more than a 32-bit memory holds ({array_bytes} bytes of path arrays, {hash_bytes} of hash tables)")]
    CounterMemoryTooLarge {
        bytes: u128,
        array_bytes: u128,
        hash_bytes: u128,
    },
    /// A counter-memory image is too short or does not hold what the layout says.
    #[error("corrupt counter memory: {reason}")]
    CorruptCounters { reason: String },
    /// The image does not begin with the counter memory's magic.
    #[error("not a pathprof counter memory (it does not begin with PATHPROF)")]
    NotCounters,
    /// A counter memory of another layout version.
    #[error(
        "a counter memory of layout version {found}, this pathprof reads version {expected}; \
         instrument the module again and rerun it"
    )]
    CounterVersion { found: u32, expected: u32 },
    /// The rewriter produced an invalid module: a bug in this crate. The
    /// output is never returned.
    #[error("internal error: the instrumented module does not validate at offset {offset:#x}: {message}")]
    InvalidOutput { offset: usize, message: String },
    /// The input file's custom sections left in it ([`crate::hollow`])
    /// were not as read when they were copied into the output.
    #[error("the input changed while it was instrumented: {reason}")]
    InputChanged { reason: String },

    /// Writing the instrumented module (or its code spilled ahead of it) to
    /// a file failed.
    #[error("cannot write the instrumented module: {message}")]
    Io { message: String },
}

impl From<std::io::Error> for WasmError {
    fn from(e: std::io::Error) -> Self {
        WasmError::Io {
            message: e.to_string(),
        }
    }
}

impl WasmError {
    /// An `Invalid` error from a wasmparser error on the input.
    pub(crate) fn invalid(e: &wasmparser::BinaryReaderError) -> Self {
        WasmError::Invalid {
            offset: e.offset(),
            message: e.message().to_string(),
        }
    }
}
