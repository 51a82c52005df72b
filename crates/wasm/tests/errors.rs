//! Bad input gives the right `WasmError`, never a panic.

mod common;

use common::*;
use pathprof_techniques::{Action, FunctionPlan, PathTable, Width};
use pathprof_wasm::{
    analyze, custom_section, instrument, read_counters, EdgeKind, FunctionLayout, WasmError,
    LAYOUT_VERSION,
};

fn small() -> Vec<u8> {
    wat::parse_str(
        "(module (func (export \"f\") (param i32) (result i32) local.get 0 i32.const 1 i32.add))",
    )
    .unwrap()
}

#[test]
fn not_wasm() {
    assert_eq!(analyze(b"hello, world").unwrap_err(), WasmError::NotWasm);
    assert_eq!(analyze(b"").unwrap_err(), WasmError::NotWasm);
    assert_eq!(
        analyze(b"\x7fELF\x02\x01\x01\x00").unwrap_err(),
        WasmError::NotWasm
    );
    assert_eq!(
        custom_section(b"MZ\x90\x00", "x").unwrap_err(),
        WasmError::NotWasm
    );
}

#[test]
fn truncated() {
    let bytes = small();
    for len in [2, 4, 6, bytes.len() - 1, bytes.len() - 3, 12] {
        match analyze(&bytes[..len]) {
            Err(WasmError::Truncated { len: l, .. }) => assert_eq!(l, len),
            other => panic!("cut at {len}: {other:?}"),
        }
    }
}

#[test]
fn component() {
    let bytes = wat::parse_str("(component)").unwrap();
    assert_eq!(analyze(&bytes).unwrap_err(), WasmError::Component);
    assert_eq!(
        custom_section(&bytes, "name").unwrap_err(),
        WasmError::Component
    );
}

#[test]
fn invalid_module_reports_the_offset() {
    // `i32.add` with an empty stack.
    let bytes = wat::parse_str("(module (func i32.add drop))").unwrap();
    match analyze(&bytes) {
        Err(WasmError::Invalid { offset, message }) => {
            assert_eq!(bytes[offset], 0x6a, "offset points at i32.add");
            assert!(message.contains("type mismatch"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut bad_version = small();
    bad_version[4] = 2;
    assert!(matches!(
        analyze(&bad_version),
        Err(WasmError::Invalid { offset: 4, .. })
    ));
}

#[test]
fn bodies_are_validated_as_wasmparser_validates_them() {
    // The builder validates each body as it reads it: an invalid body after
    // a valid one, an operand mismatch past a construct, and one past a
    // legacy `try` are reported as `validate_all` does.
    let features =
        wasmparser::WasmFeatures::default() | wasmparser::WasmFeatures::LEGACY_EXCEPTIONS;
    for wat in [
        "(module (func) (func i32.const 1 i64.const 2 i64.add drop))",
        "(module (func (block (br_table 0 0 (i32.const 0))) i32.add))",
        "(module (tag $t) (func try catch $t end i32.add drop))",
    ] {
        let bytes = wat::parse_str(wat).unwrap();
        let Err(expected) = wasmparser::Validator::new_with_features(features).validate_all(&bytes)
        else {
            panic!("{wat} is valid");
        };
        assert_eq!(
            analyze(&bytes).unwrap_err(),
            WasmError::Invalid {
                offset: expected.offset(),
                message: expected.message().to_string(),
            },
            "{wat}"
        );
    }
}

/// Legacy exception handling is modelled as `try_table` is (cfg/mod.rs):
/// the CFG of a function with `catch_all`, `delegate` and `rethrow`,
/// worked out by hand, edge by edge in instruction order.
#[test]
fn legacy_exceptions_are_modelled_as_try_table() {
    let bytes = wat::parse_str(
        r#"(module
            (func $g)
            (func (export "legacy") (param i32) (result i32)
              try $a (result i32)  ;; a plain opener: block 2 begins here
                try $b
                  local.get 0
                  br_if $b         ;; e1 2 -> 4 taken, e2 2 -> 3
                  call $g
                delegate $a        ;; ends $b: e3 3 -> 4, join 4
                i32.const 1
              catch_all            ;; e4 4 -> 8; handler 5: e5 ENTRY -> 5
                local.get 0
                if                 ;; e6 5 -> 6
                  rethrow 1        ;; e7 6 -> EXIT
                end                ;; no else: e8 5 -> 7, join 7
                i32.const 2
              end)                 ;; e9 7 -> 8, join 8; e10 8 -> EXIT
          )"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let f = info.functions[1].as_ref().expect("modelled");
    use EdgeKind::*;
    let expected = [
        ((0, 2), Entry),
        ((2, 4), BrIf),
        ((2, 3), Fallthrough),
        ((3, 4), Fallthrough),
        ((4, 8), Fallthrough),
        ((0, 5), Catch),
        ((5, 6), IfThen),
        ((6, 1), ThrowRef),
        ((5, 7), IfElse),
        ((7, 8), Fallthrough),
        ((8, 1), Fallthrough),
    ];
    let got: Vec<_> = f
        .cfg
        .edge_ids()
        .map(|e| {
            let (s, d) = f.cfg.edge(e);
            ((s.index(), d.index()), f.edge_kinds[e.index()])
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(f.calls.len(), 1);
    // Traced on every edge (a trace import shifts the function indices),
    // the rewritten module validates with legacy exception handling: the
    // delegate and rethrow labels stay right past the landing pad of the
    // taken `br_if` (`delegated` in tests/fixtures/legacy/exceptions.wat is
    // run, traced and counted, under V8 by crates/cli/tests).
    let plans: Vec<_> = info
        .functions
        .iter()
        .map(|f| Some(trace_plan(f.as_ref().unwrap())))
        .collect();
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let features =
        wasmparser::WasmFeatures::default() | wasmparser::WasmFeatures::LEGACY_EXCEPTIONS;
    wasmparser::Validator::new_with_features(features)
        .validate_all(&out.bytes)
        .expect("valid output");
}

#[test]
fn instrument_refuses_mismatched_input() {
    let bytes = small();
    let info = analyze(&bytes).unwrap();
    let other = wat::parse_str("(module (func))").unwrap();
    assert!(matches!(
        instrument(&other, &info, &[None], &[]),
        Err(WasmError::InfoMismatch { .. })
    ));
    assert_eq!(
        instrument(&bytes, &info, &[], &[]).unwrap_err(),
        WasmError::PlanCount {
            expected: 1,
            got: 0
        }
    );
    let f = info.functions[0].as_ref().unwrap();
    let n = f.cfg.num_edges();
    let bad_plans: Vec<FunctionPlan> = vec![
        FunctionPlan::empty(n + 1),
        FunctionPlan {
            edges: vec![vec![Action::Add { reg: 0, value: 1 }]; n].into(),
            ..FunctionPlan::empty(n)
        },
        FunctionPlan {
            edges: vec![vec![Action::CountSlot { index: 0 }]; n].into(),
            ..FunctionPlan::empty(n)
        },
        FunctionPlan {
            registers: vec![Width::I32],
            edges: vec![vec![Action::CountPath { reg: 0, offset: 0 }]; n].into(),
            ..FunctionPlan::empty(n)
        },
        FunctionPlan {
            paths: PathTable::Array { len: 3 },
            edges: vec![vec![Action::CountPathConst { path: 3 }]; n].into(),
            ..FunctionPlan::empty(n)
        },
        FunctionPlan {
            paths: PathTable::Hash { capacity: 6 },
            ..FunctionPlan::empty(n)
        },
    ];
    for plan in bad_plans {
        let r = instrument(&bytes, &info, &[Some(plan.clone())], &[]);
        assert!(
            matches!(r, Err(WasmError::BadPlan { func_index: 0, .. })),
            "{plan:?}: {r:?}"
        );
    }
    let huge = FunctionPlan {
        paths: PathTable::Array { len: 1 << 30 },
        ..FunctionPlan::empty(n)
    };
    assert!(matches!(
        instrument(&bytes, &info, &[Some(huge)], &[]),
        Err(WasmError::CounterMemoryTooLarge { .. })
    ));
}

#[test]
fn reserved_names_are_refused() {
    let bytes = wat::parse_str("(module (memory (export \"__pathprof_counters\") 1))").unwrap();
    let info = analyze(&bytes).unwrap();
    assert_eq!(
        instrument(&bytes, &info, &[], &[]).unwrap_err(),
        WasmError::ReservedName {
            name: "__pathprof_counters".into()
        }
    );
    // An instrumented module cannot be instrumented again.
    let bytes = small();
    let info = analyze(&bytes).unwrap();
    let out = instrument(&bytes, &info, &[None], &[]).unwrap();
    let info2 = analyze(&out.bytes).unwrap();
    assert!(matches!(
        instrument(&out.bytes, &info2, &[None], &[]),
        Err(WasmError::ReservedName { .. })
    ));
}

#[test]
fn custom_sections_are_appended_and_found() {
    let bytes = small();
    let info = analyze(&bytes).unwrap();
    let out = instrument(&bytes, &info, &[None], &[("pathprof.meta", b"{\"a\":1}")]).unwrap();
    assert_eq!(
        custom_section(&out.bytes, "pathprof.meta").unwrap(),
        Some(b"{\"a\":1}".to_vec())
    );
    assert_eq!(custom_section(&out.bytes, "nothing").unwrap(), None);
}

/// Function 0's counters: its path table at 16, `slots` slots at
/// `slots_offset`, its (empty) PPP table after them.
fn layout_at_16(paths: PathTable, slots: u32, slots_offset: u32) -> FunctionLayout {
    FunctionLayout {
        func_index: 0,
        paths,
        paths_offset: 16,
        slots,
        slots_offset,
        ppp_len: 0,
        ppp_offset: slots_offset + 8 * slots,
    }
}

/// A hash table of 2 entries at 16 whose overflow table of 4 sits at 256:
/// a path counted in both is the sum, and a link that does not lead to an
/// older, lower table is refused.
#[test]
fn read_counters_sums_overflow_tables_and_refuses_bad_links() {
    let layout = layout_at_16(PathTable::Hash { capacity: 2 }, 0, 80);
    let put = |m: &mut Vec<u8>, at: usize, v: u64| m[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let put32 =
        |m: &mut Vec<u8>, at: usize, v: u32| m[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let mut memory = vec![0u8; 256 + 32 + 4 * 16];
    memory[..8].copy_from_slice(b"PATHPROF");
    put32(&mut memory, 8, LAYOUT_VERSION);
    put32(&mut memory, 16, 1); // mask
    put32(&mut memory, 16 + 28, 256); // newest overflow table
    put(&mut memory, 48, 5 + 1); // entry 0: path 5, 3 times
    put(&mut memory, 56, 3);
    put32(&mut memory, 256, 3);
    put(&mut memory, 256 + 32 + 16, 7 + 1); // entry 1: path 7, once
    put(&mut memory, 256 + 32 + 24, 1);
    put(&mut memory, 256 + 32 + 48, 5 + 1); // entry 3: path 5, twice
    put(&mut memory, 256 + 32 + 56, 2);
    let raw = read_counters(&layout, &memory).unwrap();
    assert_eq!((raw.paths, raw.lost), (vec![(5, 5), (7, 1)], 0));
    for (at, link) in [
        (256 + 28, 256),
        (16 + 28, 8),
        (256 + 28, 300),
        (16 + 28, 4096),
    ] {
        let mut bad = memory.clone();
        put32(&mut bad, at, link);
        assert!(
            matches!(
                read_counters(&layout, &bad),
                Err(WasmError::CorruptCounters { .. })
            ),
            "link {link} at {at}"
        );
    }
}

#[test]
fn read_counters_rejects_short_or_foreign_memory() {
    let layout = layout_at_16(PathTable::Array { len: 4 }, 2, 48);
    let mut memory = vec![0u8; 64];
    memory[..8].copy_from_slice(b"PATHPROF");
    memory[8..12].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
    memory[16 + 8..16 + 16].copy_from_slice(&5u64.to_le_bytes()); // path 1: 5
    memory[56..64].copy_from_slice(&9u64.to_le_bytes()); // slot 1: 9
    let raw = read_counters(&layout, &memory).unwrap();
    assert_eq!(raw.paths, vec![(1, 5)]);
    assert_eq!(raw.slots, vec![0, 9]);
    for len in [8, 40, 63] {
        assert!(
            matches!(
                read_counters(&layout, &memory[..len]),
                Err(WasmError::CorruptCounters { .. })
            ),
            "{len}"
        );
    }
    assert!(matches!(
        read_counters(&layout, &[]),
        Err(WasmError::NotCounters)
    ));
    let mut foreign = memory.clone();
    foreign[0] = b'X';
    assert!(matches!(
        read_counters(&layout, &foreign),
        Err(WasmError::NotCounters)
    ));
    let mut version = memory.clone();
    version[8] = 9;
    assert!(matches!(
        read_counters(&layout, &version),
        Err(WasmError::CounterVersion {
            found: 9,
            expected: LAYOUT_VERSION
        })
    ));
    let hash = FunctionLayout {
        paths: PathTable::Hash { capacity: 4 },
        ..layout.clone()
    };
    assert!(matches!(
        read_counters(&hash, &memory),
        Err(WasmError::CorruptCounters { .. })
    ));
    let huge = FunctionLayout {
        paths: PathTable::Array { len: u64::MAX },
        ..layout.clone()
    };
    assert!(matches!(
        read_counters(&huge, &memory),
        Err(WasmError::CorruptCounters { .. })
    ));

    // A PPP table of two entries after the slots: (Ball-Larus id 3, count 7)
    // and a hole. Its counts join the array's, by Ball-Larus id.
    let ppp = FunctionLayout {
        ppp_len: 2,
        ..layout
    };
    memory.resize(96, 0);
    memory[64..72].copy_from_slice(&3u64.to_le_bytes());
    memory[72..80].copy_from_slice(&7u64.to_le_bytes());
    memory[80..88].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        read_counters(&ppp, &memory).unwrap().paths,
        vec![(1, 5), (3, 7)]
    );
    let corrupt = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut m = memory.clone();
        edit(&mut m);
        read_counters(&ppp, &m)
    };
    // A counted hole, a path counted twice (table and array), a short image.
    for r in [
        corrupt(&|m| m[88..96].copy_from_slice(&1u64.to_le_bytes())),
        corrupt(&|m| m[64..72].copy_from_slice(&1u64.to_le_bytes())),
        corrupt(&|m| m.truncate(90)),
    ] {
        assert!(matches!(r, Err(WasmError::CorruptCounters { .. })), "{r:?}");
    }
}

/// Plans whose interprocedural parts do not fit are refused, each with
/// its reason.
#[test]
fn misfitting_interprocedural_plans_are_refused() {
    use pathprof_techniques::{CallActions, Interproc, ModulePlan};
    use pathprof_wasm::OutputCheck;
    let bytes = wat::parse_str(
        r#"(module (func $f (result i32) i32.const 1 return_call $f)
                   (func call $f drop))"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let cfg = |i: usize| info.functions[i].as_ref().unwrap();
    let plan = |i: usize, inter: Interproc, registers: Vec<Width>| {
        let mut p = FunctionPlan::empty(cfg(i).cfg.num_edges());
        p.registers = registers;
        p.interproc = Some(Box::new(inter));
        p
    };
    let site = |site: u32, after: Vec<Action>| CallActions {
        site,
        before: Vec::new(),
        after,
        instead_of_exit: false,
    };
    let count = || vec![Action::CountSlot { index: 0 }];
    let to_global = |global| vec![Action::LocalToGlobal { global, reg: 0 }];
    let cases = [
        (
            0,
            Interproc {
                calls: vec![site(0, count())],
                ..Interproc::default()
            },
            "call site 0 is a tail call: nothing runs after it",
        ),
        (
            1,
            Interproc {
                calls: vec![site(1, Vec::new())],
                ..Interproc::default()
            },
            "call site 1 is outside 0..1",
        ),
        (
            1,
            Interproc {
                calls: vec![CallActions {
                    instead_of_exit: true,
                    ..site(0, Vec::new())
                }],
                ..Interproc::default()
            },
            "call site 0 is not a tail call: it cannot replace the exit actions",
        ),
        (
            1,
            Interproc {
                entry: to_global(1),
                ..Interproc::default()
            },
            "entry: module register 1 is not declared",
        ),
        (
            1,
            Interproc {
                exit: to_global(0),
                ..Interproc::default()
            },
            "exit: module register 0 and register 0 differ in width",
        ),
    ];
    let module = ModulePlan {
        globals: vec![Width::I64],
        stack_bytes: 0,
    };
    for (i, inter, reason) in cases {
        let mut plans = vec![None, None];
        plans[i] = Some(plan(i, inter, vec![Width::I32]));
        let err = pathprof_wasm::rewrite::instrument_module(
            &bytes,
            &info,
            &module,
            &plans,
            &[],
            OutputCheck::Validate,
            Default::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("bad plan for function {i}: {reason}"),
            "{reason}"
        );
    }
}
