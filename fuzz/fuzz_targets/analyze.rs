//! Arbitrary bytes -> `pathprof_wasm::analyze`, and when it accepts them,
//! `driver::instrument` for paths and for edges: errors, never panics.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathprof::driver::{self, Technique};

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = pathprof_wasm::analyze(data) {
        for technique in [Technique::Path, Technique::Edge] {
            let _ =
                driver::instrument_analyzed(data, &info, technique, &driver::Options::default());
        }
    }
});
