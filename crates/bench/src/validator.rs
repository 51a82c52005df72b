//! The input validator alone, as a yardstick for the instrumenter's speed.
//!
//! Every instrumenter must at least read and validate the module it is given
//! (pathprof validates every function body as it builds its CFG). Timing
//! wasmparser's `Validator::validate_all` on the same module, in this
//! process and on one thread, says how far the instrumenter's MB/s can go:
//! an instrumenter at the validator's speed would do nothing else.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use wasmparser::{Validator, WasmFeatures};

/// Seconds of `runs` validations of the module at `wasm`, one after
/// another. The features are pathprof's (its `module::features`).
pub fn time_validation(wasm: &Path, runs: usize) -> Result<Vec<f64>> {
    let bytes = std::fs::read(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let features = WasmFeatures::default() | WasmFeatures::LEGACY_EXCEPTIONS;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let clock = Instant::now();
        Validator::new_with_features(features)
            .validate_all(&bytes)
            .with_context(|| format!("{}: invalid module", wasm.display()))?;
        times.push(clock.elapsed().as_secs_f64());
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_time_per_run_and_invalid_modules_named() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let ok = dir.join("ok.wasm");
        std::fs::write(&ok, b"\0asm\x01\0\0\0").unwrap();
        assert_eq!(time_validation(&ok, 3).unwrap().len(), 3);
        let bad = dir.join("bad.wasm");
        // A type section that promises one type and ends.
        std::fs::write(&bad, b"\0asm\x01\0\0\0\x01\x01\x01").unwrap();
        let err = format!("{:#}", time_validation(&bad, 1).unwrap_err());
        assert!(
            err.starts_with(&format!("{}: invalid module", bad.display())),
            "{err}"
        );
    }
}
