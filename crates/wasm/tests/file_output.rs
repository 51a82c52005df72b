//! A module written to a file, its code spilled to a scratch file as it is
//! rewritten (`instrument_into`), is byte for byte the one built in memory
//! (`instrument_checked`), with the same counter layout and code map.

mod common;

use common::*;
use pathprof_techniques::{FunctionPlan, PathTable, Width};
use pathprof_wasm::{analyze, instrument_checked, instrument_into, FunctionCfg, OutputCheck};
use std::io::{Read, Seek, SeekFrom, Write};

fn hash_plan(c: &FunctionCfg) -> FunctionPlan {
    length_plan(c, Width::I32, 0, 0, PathTable::Hash { capacity: 8 })
}

/// Instruments `bytes` both ways, after a few bytes already in the file
/// (the module is written from the file's current position).
fn both_ways(bytes: &[u8], plan: fn(&FunctionCfg) -> FunctionPlan, check: OutputCheck) {
    let info = analyze(bytes).unwrap();
    let plans = plans_with(&info, plan);
    let custom: &[(&str, &[u8])] = &[("x", b"y")];
    let memory = instrument_checked(bytes, &info, &plans, custom, check).unwrap();
    let mut out = tempfile::tempfile().unwrap();
    out.write_all(b"head").unwrap();
    let spill = tempfile::tempfile().unwrap();
    let written = instrument_into(bytes, &info, &plans, custom, check, spill, &mut out).unwrap();
    out.seek(SeekFrom::Start(0)).unwrap();
    let mut file = Vec::new();
    out.read_to_end(&mut file).unwrap();
    assert_eq!(&file[..4], b"head");
    assert!(
        file[4..] == memory.bytes[..],
        "the file differs from the module in memory"
    );
    assert_eq!(written.layout, memory.layout);
    assert_eq!(written.code_map, memory.code_map);
}

#[test]
fn a_module_written_to_a_file_is_the_one_built_in_memory() {
    for (name, bytes) in fixtures() {
        for plan in [slot_plan, trace_plan, hash_plan] {
            for check in [OutputCheck::Validate, OutputCheck::Trust] {
                eprintln!("{name}");
                both_ways(&bytes, plan, check);
            }
        }
    }
    // No code section: none is written, and nothing is read back.
    both_ways(
        &wat::parse_str("(module)").unwrap(),
        slot_plan,
        OutputCheck::Validate,
    );
}
