//! Arbitrary counter bytes -> `driver::collect` on a fixed instrumented
//! module (`tests/fixtures/wat/loops.wat`, for paths and for edges): an error
//! or a profile, never a panic.
//!
//! Input: byte 0 selects the technique (bit 0) and whether the run ended
//! abruptly (bit 1); when it did, bytes 1..=N (N = byte 1 % 4) * 8 are
//! frames `(function index u32 LE, offset u32 LE)`; the rest is the counter
//! memory. When bit 2 is set instead, the rest is a `__pathprof.meta`
//! section: it must decode or fail with an error, and what decodes must
//! collect a zeroed counter memory without panicking.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pathprof::driver::{self, Meta, Technique};

fn metas() -> &'static [Meta; 2] {
    static METAS: OnceLock<[Meta; 2]> = OnceLock::new();
    METAS.get_or_init(|| {
        let wasm = wat::parse_str(include_str!("../../tests/fixtures/wat/loops.wat"))
            .expect("loops.wat parses");
        [Technique::Path, Technique::Edge].map(|t| {
            driver::instrument(&wasm, t, &driver::Options::default())
                .expect("loops.wat instruments")
                .meta()
                .expect("its metadata decodes")
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    if first & 4 != 0 {
        if let Ok(meta) = pathprof::meta::decode(rest) {
            let _ = driver::collect(&meta, &[0; 4096], None);
        }
        return;
    }
    let meta = &metas()[usize::from(first & 1)];
    let mut frames = Vec::new();
    if first & 2 != 0 {
        if let Some((&n, r)) = rest.split_first() {
            rest = r;
            for _ in 0..n % 4 {
                if rest.len() < 8 {
                    break;
                }
                let f = u32::from_le_bytes(rest[..4].try_into().unwrap());
                let o = u32::from_le_bytes(rest[4..8].try_into().unwrap());
                frames.push((f, o));
                rest = &rest[8..];
            }
        }
    }
    let abrupt = (first & 2 != 0).then_some(&frames[..]);
    if let Ok(profile) = driver::collect(meta, rest, abrupt) {
        let _ = profile.to_json();
    }
});
