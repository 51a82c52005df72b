//! Whose counters a counter memory holds: the header the instrumented
//! module's data segments write (`pathprof_wasm::rewrite::layout`) against
//! the one the metadata section says the module writes, so that the
//! counters of another module, of another technique or of other options
//! are refused with the reason instead of being decoded into garbage counts
//! (or into an error about flow conservation that names no file).
//!
//! The header holds the technique (the section's code, [`Technique::code`]), the
//! SHA-256 of the original module, and the instrumentation hash: that of
//! the counter layout and of the plan hash, which the encoder takes over
//! the technique, the truncation threshold and every function's record
//! ([`super::Encoder::identity`]).

use pathprof_wasm::{CounterHeader, WasmError};

use super::Meta;
use crate::technique::Technique;

/// Why a counter memory is not one the metadata can decode. Each message
/// is one line that names the counter file and the module.
#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    /// Not a counter memory of this pathprof (no magic, another layout
    /// version, cut short). Not a `source`: the message says it all, once.
    #[error("{counters}: {reason}")]
    Unreadable { counters: String, reason: WasmError },
    #[error(
        "{counters}: these counters were written by another instrumented module \
         (mode {found_mode}, module hash {found_hash}), not by {module} \
         (mode {mode}, module hash {hash})"
    )]
    OtherModule {
        counters: String,
        module: String,
        found_mode: String,
        found_hash: String,
        mode: String,
        hash: String,
    },
    #[error(
        "{counters}: these are {found_mode}-mode counters, but {module} was instrumented \
         in {mode} mode (both of module hash {hash}): collect them with the module \
         instrumented in {found_mode} mode"
    )]
    OtherMode {
        counters: String,
        module: String,
        found_mode: String,
        mode: String,
        hash: String,
    },
    #[error(
        "{counters}: these counters were written by another instrumentation of the same \
         module in {mode} mode, with other options (--truncate-above, --array-max, \
         --weights, --interesting, --hybrid ...), not by {module} (instrumentation hash \
         {found_instrumentation}, expected {instrumentation})"
    )]
    OtherInstrumentation {
        counters: String,
        module: String,
        mode: String,
        found_instrumentation: String,
        instrumentation: String,
    },
}

/// The `--mode` that instrumented for the section's technique `code`.
fn mode_name(code: u32) -> String {
    match u8::try_from(code).ok().and_then(Technique::from_code) {
        Some(t) => t.name().into(),
        None => format!("unknown ({code})"),
    }
}

/// The first hex digits of a hash, enough to tell modules apart.
fn short(hash: &[u8; 32]) -> String {
    hash[..6].iter().map(|b| format!("{b:02x}")).collect()
}

impl Meta {
    /// Checks that `counters` (read from the file called `counters_name`)
    /// were written by the module this metadata describes (called
    /// `module_name`): the same original module, technique and
    /// instrumentation. (Boxed: five strings are a large `Err`.)
    pub fn check_counters(
        &self,
        counters: &[u8],
        counters_name: &str,
        module_name: &str,
    ) -> Result<(), Box<CountersError>> {
        let found =
            pathprof_wasm::read_header(counters).map_err(|reason| CountersError::Unreadable {
                counters: counters_name.to_string(),
                reason,
            })?;
        mismatch(&found, &self.layout.header(), counters_name, module_name)
    }
}

fn mismatch(
    found: &CounterHeader,
    expected: &CounterHeader,
    counters: &str,
    module: &str,
) -> Result<(), Box<CountersError>> {
    let (counters, module) = (counters.to_string(), module.to_string());
    if found.module_hash != expected.module_hash {
        return Err(Box::new(CountersError::OtherModule {
            counters,
            module,
            found_mode: mode_name(found.technique),
            found_hash: short(&found.module_hash),
            mode: mode_name(expected.technique),
            hash: short(&expected.module_hash),
        }));
    }
    if found.technique != expected.technique {
        return Err(Box::new(CountersError::OtherMode {
            counters,
            module,
            found_mode: mode_name(found.technique),
            mode: mode_name(expected.technique),
            hash: short(&expected.module_hash),
        }));
    }
    if found != expected {
        return Err(Box::new(CountersError::OtherInstrumentation {
            counters,
            module,
            mode: mode_name(expected.technique),
            found_instrumentation: short(&found.instrumentation_hash),
            instrumentation: short(&expected.instrumentation_hash),
        }));
    }
    Ok(())
}
