//! Arbitrary bytes -> a wasm-smith module (the configuration of the
//! deterministic test `crates/cli/tests/fuzz.rs`) -> instrumented for paths
//! and for edges, validated, and every numeric export called on the original
//! and both instrumentations under fuel: results, traps, exported memories
//! and globals must agree, and the counters of returning calls must decode.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cli/tests/support/differential.rs"]
mod differential;

fn engine() -> &'static wasmtime::Engine {
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    ENGINE.get_or_init(|| pathprof_runner::engine().expect("the project's engine"))
}

fuzz_target!(|data: &[u8]| {
    // The first byte's low bit: modules whose instructions cannot trap
    // (as the deterministic test's odd seeds).
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Some(module) = differential::generate_from(rest, first & 1 == 1) else {
        return;
    };
    let checked = differential::check_module(engine(), &module, "fuzz input");
    if !checked.failures.is_empty() {
        panic!(
            "{} failure(s):\n{}",
            checked.failures.len(),
            checked.failures.join("\n\n")
        );
    }
});
