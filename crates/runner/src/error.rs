//! The runner's error type.

use std::path::PathBuf;

/// Why a module could not be run at all.
///
/// A module that *starts* running and then traps, calls `proc_exit` or runs
/// out of fuel is not an error: that ends in [`crate::Exit`]. These errors are
/// about everything before (or around) the run: configuring the engine,
/// compiling the module, linking it, preparing the WASI context, finding and
/// calling the requested export.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The engine configuration was rejected by wasmtime.
    #[error("cannot configure the wasm engine: {0}")]
    Engine(String),

    /// The bytes are a WebAssembly component, not a core module.
    #[error(
        "the input is a WebAssembly component, not a core module; \
         pathprof profiles core modules only"
    )]
    Component,

    /// The bytes do not decode, validate or compile as a core module.
    #[error("invalid wasm module: {0}")]
    Compile(String),

    /// The module uses the legacy exception handling proposal, which the
    /// engine cannot compile, and translating it to the standard one
    /// failed (legacy/: pathprof instruments it all the same, and the
    /// instrumented module runs on engines that have it).
    #[error(
        "the module uses legacy exception handling (`try`, `catch`, `rethrow`, `delegate`), \
         which the embedded engine cannot run, and translating it to `try_table` failed ({0}): \
         `pathprof instrument` it, run that on an engine that can (V8: node 22 or later, \
         browsers) and `pathprof collect` its counters"
    )]
    LegacyExceptions(String),

    /// The module imports what the runner does not provide (found before
    /// compiling it, by [`crate::check_imports`]).
    #[error("{}", unknown_imports(imports))]
    UnknownImports {
        /// `module::name (kind)` of each, in import order.
        imports: Vec<String>,
    },

    /// A host directory to preopen could not be opened.
    #[error("cannot preopen host directory {} as guest path {guest:?}: {message}", host.display())]
    Preopen {
        /// Host directory.
        host: PathBuf,
        /// Guest path it was to be mapped to.
        guest: String,
        /// What went wrong.
        message: String,
    },

    /// Linking or instantiation failed (e.g. an import nothing provides, or
    /// an import of the wrong type).
    #[error("cannot instantiate the module: {0}")]
    Instantiate(String),

    /// A module given to link under a name ([`crate::Preload`]) does not
    /// compile or instantiate.
    #[error("cannot preload {origin} as `{name}`: {message}")]
    Preload {
        /// The import module name it was to provide.
        name: String,
        /// Where it came from (a file name), for the message.
        origin: String,
        /// What went wrong.
        message: String,
    },

    /// The module has no export of that name.
    #[error("the module has no export named `{0}`")]
    MissingExport(String),

    /// The export exists but is not a function.
    #[error("the export `{name}` is a {kind}, not a function")]
    NotAFunction {
        /// Export name.
        name: String,
        /// What it is instead (`memory`, `global`, `table`, `tag`).
        kind: &'static str,
    },

    /// `run_command` on a module without a callable `_start`.
    #[error("the module has no `_start` function of type [] -> []: {0}")]
    NoStart(String),

    /// Wrong number of arguments for an export.
    #[error("`{name}` takes {expected} argument(s) ({signature}), but {given} were given")]
    Arity {
        /// Export name.
        name: String,
        /// Number of parameters.
        expected: usize,
        /// Number of arguments given.
        given: usize,
        /// The parameter types, for the message.
        signature: String,
    },

    /// An argument string does not parse as the parameter's type.
    #[error("argument {index} of `{name}`: cannot parse {value:?} as {ty}")]
    BadArgument {
        /// Export name.
        name: String,
        /// 1-based argument position.
        index: usize,
        /// The string given.
        value: String,
        /// The parameter type expected.
        ty: String,
    },

    /// A parameter type that cannot be given as a string.
    #[error(
        "`{name}` has a parameter of type {ty} (argument {index}); \
         only i32, i64, f32 and f64 arguments can be given"
    )]
    UnsupportedParam {
        /// Export name.
        name: String,
        /// 1-based parameter position.
        index: usize,
        /// The parameter type.
        ty: String,
    },

    /// A fuel limit was requested but the engine does not meter fuel.
    #[error(
        "a fuel limit was requested, but the engine does not meter fuel \
         (use pathprof_runner::engine(), not engine_without_fuel())"
    )]
    FuelNotEnabled,

    /// Any other failure of the host side while setting up or calling (not a
    /// guest trap).
    #[error("{0}")]
    Host(String),
}

/// Formats a wasmtime error with its whole chain of causes, leaving out the
/// wasm backtrace (which is reported separately).
pub(crate) fn describe(err: &wasmtime::Error) -> String {
    let backtrace = err
        .downcast_ref::<wasmtime::WasmBacktrace>()
        .map(|bt| bt.to_string());
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let s = cause.to_string();
        if Some(&s) == backtrace.as_ref() {
            continue;
        }
        if !s.is_empty() && parts.last() != Some(&s) {
            parts.push(s);
        }
    }
    if parts.is_empty() {
        err.to_string()
    } else {
        parts.join(": ")
    }
}

/// The message of [`RunError::UnknownImports`]: the first few imports.
fn unknown_imports(imports: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut list = imports[..imports.len().min(SHOWN)].join(", ");
    if imports.len() > SHOWN {
        list.push_str(&format!(" and {} more", imports.len() - SHOWN));
    }
    format!(
        "imports that the embedded engine does not provide (it provides WASI preview 1): {list}"
    )
}
