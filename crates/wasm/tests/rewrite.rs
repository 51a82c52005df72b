//! What the rewriter adds and remaps, read back from its output.

mod common;

use common::*;
use pathprof_techniques::{FunctionPlan, ModulePlan, PathTable};
use pathprof_wasm::{
    analyze, instrument, read_header, CounterIdentity, CounterLayout, OutputCheck, COUNTERS_EXPORT,
};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

#[derive(Debug, Default)]
struct Summary {
    imports: Vec<(String, String, Option<u32>)>,
    exports: Vec<(String, ExternalKind, u32)>,
    start: Option<u32>,
    memories: Vec<(u64, Option<u64>)>,
    imported_memories: usize,
    elements: Vec<u32>,
    data_segments: u32,
    data_count: Option<u32>,
}

fn summary(bytes: &[u8]) -> Summary {
    let mut s = Summary::default();
    for p in Parser::new(0).parse_all(bytes) {
        match p.unwrap() {
            Payload::ImportSection(r) => {
                for i in r.into_imports() {
                    let i = i.unwrap();
                    let f = match i.ty {
                        TypeRef::Func(t) => Some(t),
                        TypeRef::Memory(_) => {
                            s.imported_memories += 1;
                            None
                        }
                        _ => None,
                    };
                    s.imports.push((i.module.into(), i.name.into(), f));
                }
            }
            Payload::ExportSection(r) => s.exports.extend(
                r.into_iter()
                    .map(|e| e.unwrap())
                    .map(|e| (e.name.to_string(), e.kind, e.index)),
            ),
            Payload::StartSection { func, .. } => s.start = Some(func),
            Payload::MemorySection(r) => s.memories.extend(
                r.into_iter()
                    .map(|m| m.unwrap())
                    .map(|m| (m.initial, m.maximum)),
            ),
            Payload::ElementSection(r) => {
                for e in r {
                    if let wasmparser::ElementItems::Functions(fs) = e.unwrap().items {
                        s.elements.extend(fs.into_iter().map(|f| f.unwrap()));
                    }
                }
            }
            Payload::DataSection(r) => s.data_segments = r.count(),
            Payload::DataCountSection { count, .. } => s.data_count = Some(count),
            _ => {}
        }
    }
    s
}

#[test]
fn trace_import_shifts_and_remaps_every_function_reference() {
    let bytes = fixture("module_items");
    let info = analyze(&bytes).unwrap();
    let plans = plans_with(&info, trace_plan);
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let (a, b) = (summary(&bytes), summary(&out.bytes));

    // The trace import comes after the module's own import.
    assert_eq!(a.imports.len(), 1);
    assert_eq!(b.imports[..1], a.imports[..]);
    assert_eq!(
        (b.imports[1].0.as_str(), b.imports[1].1.as_str()),
        ("__pathprof", "trace")
    );
    // Defined functions moved up by one: exports, start, elements.
    let shifted = |f: u32| if f >= 1 { f + 1 } else { f };
    let expected_exports: Vec<_> = a
        .exports
        .iter()
        .map(|(n, k, i)| {
            (
                n.clone(),
                *k,
                if *k == ExternalKind::Func {
                    shifted(*i)
                } else {
                    *i
                },
            )
        })
        .chain([(COUNTERS_EXPORT.to_string(), ExternalKind::Memory, 1)])
        .collect();
    assert_eq!(b.exports, expected_exports);
    assert_eq!(b.start, a.start.map(shifted));
    assert_eq!(
        b.elements,
        a.elements.iter().map(|&f| shifted(f)).collect::<Vec<_>>()
    );
    // The program's memory is untouched; the counter memory is appended.
    assert_eq!(b.memories[0], a.memories[0]);
    assert_eq!(b.memories.len(), a.memories.len() + 1);
    let pages = out.layout.total_bytes.div_ceil(65536);
    assert_eq!(b.memories[1], (pages, Some(pages)));
    // One header segment appended; the data count follows.
    assert_eq!(b.data_segments, a.data_segments + 1);
    assert_eq!(b.data_count, a.data_count.map(|c| c + 1));

    // The name section follows the functions.
    let again = analyze(&out.bytes).unwrap();
    assert_eq!(again.num_imported_funcs, 2);
    let names: Vec<Option<&str>> = again
        .functions
        .iter()
        .map(|f| f.as_ref().unwrap().name.as_deref())
        .collect();
    let original: Vec<Option<&str>> = info
        .functions
        .iter()
        .map(|f| f.as_ref().unwrap().name.as_deref())
        .collect();
    assert_eq!(names, original);
    assert_eq!(names[0], Some("double"));

    // And it still runs the same.
    let calls = calls_for(&bytes);
    assert_eq!(
        run(&out.bytes, &calls).outcomes,
        run(&bytes, &calls).outcomes
    );
}

#[test]
fn no_trace_means_no_import_and_no_shift() {
    let bytes = fixture("module_items");
    let info = analyze(&bytes).unwrap();
    let plans = plans_with(&info, slot_plan);
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let (a, b) = (summary(&bytes), summary(&out.bytes));
    assert_eq!(a.imports, b.imports);
    assert_eq!(a.elements, b.elements);
    assert_eq!(a.start, b.start);
}

#[test]
fn hash_helper_is_appended_after_all_functions() {
    let bytes = fixture("loops");
    let info = analyze(&bytes).unwrap();
    let plans = plans_with(&info, |c| {
        length_plan(
            c,
            pathprof_techniques::Width::I32,
            0,
            0,
            PathTable::Hash { capacity: 8 },
        )
    });
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let again = analyze(&out.bytes).unwrap();
    assert_eq!(again.functions.len(), info.functions.len() + 1);
    assert_eq!(again.num_imported_funcs, 0);
}

#[test]
fn layout_is_disjoint_aligned_and_serialisable() {
    let bytes = fixture("branches");
    let info = analyze(&bytes).unwrap();
    let mut i = 0;
    let plans = plans_with(&info, |c| {
        i += 1;
        let mut p = slot_plan(c);
        p.paths = match i % 3 {
            0 => PathTable::None,
            1 => PathTable::Array { len: 5 },
            _ => PathTable::Hash { capacity: 4 },
        };
        p
    });
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let layout = &out.layout;
    assert_eq!(
        &pathprof_wasm::counter_layout(&info, &plans).unwrap(),
        layout
    );
    // The header: magic, version, function count, technique, a reserved
    // word and two SHA-256 digests.
    let mut spans = vec![(0u64, 8 + 4 * 4 + 2 * 32)];
    for f in &layout.functions {
        let table = match f.paths {
            PathTable::None => 0,
            PathTable::Array { len } => 8 * len,
            PathTable::Hash { capacity } => 32 + 16 * u64::from(capacity),
        };
        spans.push((u64::from(f.paths_offset), table));
        spans.push((u64::from(f.slots_offset), 8 * u64::from(f.slots)));
        assert_eq!(f.paths_offset % 8, 0);
        assert_eq!(f.slots_offset % 8, 0);
    }
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "{spans:?}");
    }
    let (last, len) = spans.last().unwrap();
    assert_eq!(last + len, layout.total_bytes);
    let json = serde_json::to_string(layout).unwrap();
    let back: CounterLayout = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, layout);
    assert!(layout
        .functions
        .windows(2)
        .all(|w| w[0].func_index < w[1].func_index));
    assert_eq!(
        layout.function(layout.functions[1].func_index),
        Some(&layout.functions[1])
    );
}

#[test]
fn a_module_without_sections_gets_memory_export_and_data() {
    let bytes = wat::parse_str("(module)").unwrap();
    let info = analyze(&bytes).unwrap();
    let out = instrument(&bytes, &info, &[], &[("x", b"y")]).unwrap();
    let s = summary(&out.bytes);
    assert_eq!(s.memories, vec![(1, Some(1))]);
    assert_eq!(
        s.exports,
        vec![(COUNTERS_EXPORT.to_string(), ExternalKind::Memory, 0)]
    );
    assert_eq!(s.data_segments, 1);
    assert_eq!(out.layout.total_bytes, 88);
}

/// The header the module's data segment writes, read back from the memory
/// of a run: the identity given, at the offsets docs/profile-format.md
/// states, and an instrumentation hash that changes with the plan hash
/// and with the layout alone.
#[test]
fn the_counter_memory_header_is_the_identity_given() {
    let bytes = wat::parse_str(
        r#"(module (func (export "f") (param i32) (result i32)
             local.get 0 if (result i32) i32.const 1 else i32.const 2 end))"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let identity = |plan: u8| CounterIdentity {
        technique: 7,
        module_hash: std::array::from_fn(|i| i as u8),
        plan_hash: [plan; 32],
    };
    let with = |plans: &[Option<FunctionPlan>], plan: u8| {
        pathprof_wasm::instrument_module(
            &bytes,
            &info,
            &ModulePlan::default(),
            plans,
            &[],
            OutputCheck::Validate,
            identity(plan),
        )
        .unwrap()
    };
    let slots = plans_with(&info, slot_plan);
    let out = with(&slots, 1);
    let run = run(&out.bytes, &[]);
    let memory = run.counters.unwrap();
    assert_eq!(&memory[..8], b"PATHPROF");
    assert_eq!(memory[8..12], 3u32.to_le_bytes());
    assert_eq!(memory[12..16], 1u32.to_le_bytes());
    assert_eq!(memory[16..20], 7u32.to_le_bytes());
    assert_eq!(memory[20..24], [0; 4]);
    assert_eq!(memory[24..56], identity(1).module_hash);
    let header = read_header(&memory).unwrap();
    assert_eq!(header, out.layout.header());
    assert_eq!(header.module_hash, identity(1).module_hash);
    assert_eq!(memory[56..88], header.instrumentation_hash);
    // Another plan hash, or the same one with another layout (no counters
    // at all), gives another instrumentation hash.
    let other_plan = with(&slots, 2).layout.header();
    let none: Vec<Option<FunctionPlan>> = vec![None];
    let other_layout = with(&none, 1).layout.header();
    let hashes = [
        header.instrumentation_hash,
        other_plan.instrumentation_hash,
        other_layout.instrumentation_hash,
    ];
    assert!(hashes[0] != hashes[1] && hashes[0] != hashes[2] && hashes[1] != hashes[2]);
    assert_eq!(with(&slots, 1).layout.header(), header);
}

/// The member loops of a plan ([`Action::ForEachMember`]) run in helper
/// functions, one per body and tables: two loops of one function that
/// count in its own tables share one, a loop that counts in another's
/// tables has its own. What they count is checked against the number of
/// entries the trace saw.
#[test]
fn member_loops_share_one_helper_per_body_and_count_every_member() {
    use pathprof_graph::{Cfg, EdgeId};
    use pathprof_techniques::{Action, EdgeActions, ForEachMember, In, Push, Width};
    let bytes = wat::parse_str(
        r#"(module
             (func (export "a") (result i32) (call 1) (call 1) (i32.add))
             (func (export "b") (result i32) (i32.const 7)))"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let push = Action::Push(Box::new(Push {
        ptr: 0,
        len: 1,
        bl: 4,
        ppp: 5,
    }));
    let set = |reg, value| Action::Set { reg, value };
    // Every member is (3, 0), the accumulators (1, 0): a member counts at
    // path 4 + extra.
    let close = |extra: i64, body: Action| {
        Action::ForEachMember(Box::new(ForEachMember {
            ptr: 0,
            len: 1,
            index: 8,
            acc: (2, 3),
            extra: (extra, 0),
            tmp: (6, 7),
            body: vec![body],
        }))
    };
    let count = Action::CountPath { reg: 6, offset: 0 };
    let plans = plans_with(&info, |c| {
        let mut p = FunctionPlan::empty(c.cfg.num_edges());
        p.registers = vec![Width::I64; 9];
        p.paths = PathTable::Array { len: 16 };
        p.edges = EdgeActions::from_fn(c.cfg.num_edges(), |e, a| {
            a.push(Action::Trace { edge: e as u32 });
            if c.cfg.src(EdgeId::new(e)) != Cfg::ENTRY {
                return;
            }
            a.extend([
                set(0, 0),
                set(1, 0),
                set(2, 1),
                set(3, 0),
                set(4, 3),
                set(5, 0),
            ]);
            a.extend([push.clone(), push.clone(), close(2, count.clone())]);
            a.extend([push.clone(), close(4, count.clone())]);
            if c.func_index == 1 {
                let elsewhere = Action::In(Box::new(In {
                    func: 0,
                    action: count.clone(),
                }));
                a.extend([push.clone(), close(0, elsewhere)]);
            }
        });
        p
    });
    let module_plan = ModulePlan {
        stack_bytes: 64,
        ..ModulePlan::default()
    };
    let out = pathprof_wasm::instrument_module(
        &bytes,
        &info,
        &module_plan,
        &plans,
        &[],
        OutputCheck::Validate,
        CounterIdentity::default(),
    )
    .unwrap();
    // The hash helper, then one helper for each function's own loops and
    // one for the loop that counts in function 0's tables.
    let again = analyze(&out.bytes).unwrap();
    assert_eq!(again.functions.len(), 2 + 1 + 3);

    let calls = ["a", "b", "a"].map(|export| Call {
        export: export.into(),
        args: vec![],
    });
    let r = run(&out.bytes, &calls);
    let entries = |f: u32| {
        let cfg = &function(&info, f).cfg;
        r.events
            .iter()
            .filter(|&&(g, e)| g == f && cfg.src(EdgeId::new(e as usize)) == Cfg::ENTRY)
            .count() as u64
    };
    let (e0, e1) = (entries(0), entries(1));
    assert_eq!((e0, e1), (2, 5));
    let memory = r.counters.expect("counter memory");
    let counts = |f: u32| -> Vec<u64> {
        let base = out.layout.function(f).unwrap().paths_offset as usize;
        (0..16)
            .map(|i| {
                let at = base + 8 * i;
                u64::from_le_bytes(memory[at..at + 8].try_into().unwrap())
            })
            .collect()
    };
    let expected = |at: &[(usize, u64)]| {
        let mut v = vec![0u64; 16];
        for &(i, n) in at {
            v[i] = n;
        }
        v
    };
    assert_eq!(counts(0), expected(&[(4, e1), (6, 2 * e0), (8, e0)]));
    assert_eq!(counts(1), expected(&[(6, 2 * e1), (8, e1)]));
}
