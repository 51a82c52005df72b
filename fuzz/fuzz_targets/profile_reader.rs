//! Arbitrary bytes -> `Profile::from_bytes`: an error or a profile, never a
//! panic; what reads must also serialise.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(profile) = pathprof_profile::Profile::from_bytes(Path::new("fuzz.json"), data) {
        let _ = profile.to_json();
    }
});
