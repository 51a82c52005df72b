//! End-to-end checks over the WAT fixtures in tests/fixtures/wat: every
//! instrumentation runs with the same results as the original; the trace
//! oracle (walks reconstructed from `Trace` events) checks the CFG and is
//! compared with slot counters and with register-built path tables.

mod common;

use common::*;
use pathprof_techniques::{FunctionPlan, PathTable, RawCounters, Width};
use pathprof_wasm::{instrument, read_counters, EdgeKind, FunctionCfg, Instrumented, ModuleInfo};
use std::collections::BTreeMap;

fn instrumented(bytes: &[u8], info: &ModuleInfo, plans: &[Option<FunctionPlan>]) -> Instrumented {
    let out = instrument(bytes, info, plans, &[("pathprof.test", b"x")]).expect("instrument");
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::default())
        .validate_all(&out.bytes)
        .expect("output validates");
    out
}

/// Counters of every instrumented function, by original function index.
fn counters(out: &Instrumented, run: &Run) -> BTreeMap<u32, RawCounters> {
    let memory = run.counters.as_ref().expect("counter memory exported");
    out.layout
        .functions
        .iter()
        .map(|f| (f.func_index, read_counters(f, memory).expect("counters")))
        .collect()
}

struct Case {
    name: String,
    bytes: Vec<u8>,
    info: ModuleInfo,
    calls: Vec<Call>,
    original: Run,
}

fn cases() -> Vec<Case> {
    fixtures()
        .into_iter()
        .map(|(name, bytes)| {
            let info = analyze_ok(&bytes);
            for f in &info.functions {
                assert!(f.is_ok(), "{name}: {:?}", f.as_ref().err());
            }
            let calls = calls_for(&bytes);
            assert!(!calls.is_empty(), "{name} exports nothing to call");
            let original = run(&bytes, &calls);
            Case {
                name,
                bytes,
                info,
                calls,
                original,
            }
        })
        .collect()
}

fn traced(case: &Case) -> (Run, Walks) {
    let plans = plans_with(&case.info, trace_plan);
    let out = instrumented(&case.bytes, &case.info, &plans);
    let r = run(&out.bytes, &case.calls);
    assert_same_outcomes(
        &format!("{}: trace plan", case.name),
        &case.calls,
        &r.outcomes,
        &case.original.outcomes,
    );
    let walks = reconstruct(&case.info, &r);
    (r, walks)
}

#[test]
fn every_instrumentation_preserves_results_and_agrees_with_the_trace_oracle() {
    for case in cases() {
        let name = &case.name;
        let (_, walks) = traced(&case);
        assert!(!walks.complete.is_empty(), "{name}: no walk completed");

        // Every edge executed is counted by its slot.
        let plans = plans_with(&case.info, slot_plan);
        let out = instrumented(&case.bytes, &case.info, &plans);
        let r = run(&out.bytes, &case.calls);
        assert_same_outcomes(
            &format!("{name}: slot plan"),
            &case.calls,
            &r.outcomes,
            &case.original.outcomes,
        );
        for (func, raw) in counters(&out, &r) {
            let f = function(&case.info, func);
            let expected: Vec<u64> = (0..f.cfg.num_edges() as u32)
                .map(|e| walks.edge_counts.get(&(func, e)).copied().unwrap_or(0))
                .collect();
            assert_eq!(
                raw.slots, expected,
                "{name}: slot counts of function {func}"
            );
            assert!(raw.paths.is_empty());
        }

        // Walk-length histograms built in a register, several widths/offsets.
        let hist = length_histogram(&walks);
        let variants: [(Width, i64, i64); 8] = [
            (Width::I32, 0, 0),
            (Width::I32, 5, -5),
            // Set truncates to 7 in an I32 register.
            (Width::I32, (1 << 32) + 7, -7),
            // A large I64 value that the address computation must wrap away.
            (Width::I64, 1 << 40, -(1 << 40)),
            // Offsets of more than the first tables' size.
            (Width::I32, 3000, -3000),
            (Width::I64, 3000, -3000),
            // Registers that are "negative" (wrapped) until the offset is added.
            (Width::I32, -1000, 1000),
            (Width::I64, -5, 5),
        ];
        for (width, start, offset) in variants {
            let table = PathTable::Array { len: MAX_WALK };
            let plans = plans_with(&case.info, |c| length_plan(c, width, start, offset, table));
            let what = format!("{name}: length plan {width:?} {start} {offset}");
            assert_length_counts(&case, &plans, &hist, &what);
        }
    }
}

/// Runs `plans` (length plans) on the case: the same outcomes as the
/// original, and every function's counters the walk-length histogram of
/// the trace, nothing lost.
fn assert_length_counts(
    case: &Case,
    plans: &[Option<FunctionPlan>],
    hist: &BTreeMap<u32, BTreeMap<u64, u64>>,
    what: &str,
) -> Instrumented {
    let out = instrumented(&case.bytes, &case.info, plans);
    let r = run(&out.bytes, &case.calls);
    assert_same_outcomes(what, &case.calls, &r.outcomes, &case.original.outcomes);
    for (func, raw) in counters(&out, &r) {
        let expected: Vec<(u64, u64)> = hist
            .get(&func)
            .map(|h| h.iter().map(|(&l, &c)| (l, c)).collect())
            .unwrap_or_default();
        assert_eq!(
            (raw.paths, raw.lost),
            (expected, 0),
            "{what}: function {func}"
        );
    }
    out
}

/// Counter tables past 32 MiB, wasmtime's guard region, whose addresses the
/// rewriter moves from the memarg offset into the index: the first
/// function's array of 2^22 counters pushes the others' tables there, and
/// they count the same walk-length histograms as anywhere else, in arrays
/// (registers scaled or not) and in hash tables.
#[test]
fn counters_past_the_guard_region_count_the_same() {
    let mut past = 0;
    for case in cases() {
        let (_, walks) = traced(&case);
        let hist = length_histogram(&walks);
        let first = cfgs(&case.info).flatten().map(|c| c.func_index).min();
        let tables = [
            (Width::I32, PathTable::Array { len: MAX_WALK }),
            (Width::I64, PathTable::Array { len: MAX_WALK }),
            (Width::I64, PathTable::Hash { capacity: 64 }),
        ];
        for (width, table) in tables {
            let plans = plans_with(&case.info, |c| {
                let big = PathTable::Array { len: 1 << 22 };
                length_plan(
                    c,
                    width,
                    0,
                    0,
                    if Some(c.func_index) == first {
                        big
                    } else {
                        table
                    },
                )
            });
            let what = format!("{}: {width:?} {table:?}", case.name);
            let out = assert_length_counts(&case, &plans, &hist, &what);
            past += out
                .layout
                .functions
                .iter()
                .filter(|f| f.paths_offset > 1 << 25)
                .count();
        }
    }
    assert!(past > 0, "no table past 32 MiB");
}

/// Per function, the lengths in edges of its completed walks, in order of
/// completion (the keys a length plan counts).
fn walk_lengths(case: &Case) -> BTreeMap<u32, Vec<u64>> {
    let (_, walks) = traced(case);
    let mut lengths: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (func, walk) in &walks.complete {
        lengths.entry(*func).or_default().push(walk.len() as u64);
    }
    lengths
}

/// Every key counted, however small the table: the ones that find no entry
/// go to overflow tables grown from the memory, and nothing is lost.
fn hash_oracle(lengths: &[u64]) -> Vec<(u64, u64)> {
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for &l in lengths {
        *counts.entry(l).or_default() += 1;
    }
    counts.into_iter().collect()
}

#[test]
fn hash_tables_count_every_key_and_overflow_into_grown_tables() {
    let mut overflowed = 0;
    for case in cases() {
        let lengths = walk_lengths(&case);
        for capacity in [1u32, 2, 4, 64, 1024] {
            for width in [Width::I32, Width::I64] {
                let plans = plans_with(&case.info, |c| {
                    length_plan(c, width, 0, 0, PathTable::Hash { capacity })
                });
                let out = instrumented(&case.bytes, &case.info, &plans);
                let r = run(&out.bytes, &case.calls);
                assert_same_outcomes(
                    &format!("{}: hash plan", case.name),
                    &case.calls,
                    &r.outcomes,
                    &case.original.outcomes,
                );
                for (func, raw) in counters(&out, &r) {
                    let seq = lengths.get(&func).cloned().unwrap_or_default();
                    assert_eq!(
                        (raw.paths, raw.lost),
                        (hash_oracle(&seq), 0),
                        "{}: function {func}, capacity {capacity}",
                        case.name
                    );
                }
                // The memory grew past the layout exactly when some table
                // met more distinct keys than it has entries.
                let memory = r.counters.as_ref().expect("counter memory exported");
                let grew = memory.len() as u64 > out.layout.total_bytes.div_ceil(65536) * 65536;
                let crowded = lengths.values().any(|seq| {
                    seq.iter().collect::<std::collections::BTreeSet<_>>().len() > capacity as usize
                });
                assert_eq!(grew, crowded, "{}: capacity {capacity}", case.name);
                overflowed += usize::from(grew);
            }
        }
    }
    assert!(overflowed > 0, "no fixture filled a hash table");
}

// ------------------------------------------------------------------------
// Hand-analysed fixtures: graph sizes and the kinds along each call's walk,
// derived by reading the WAT (comments give the blocks).

struct Expect {
    fixture: &'static str,
    export: &'static str,
    nodes: usize,
    edges: usize,
    /// (argument, kinds along the walk)
    walks: &'static [(i64, &'static [EdgeKind])],
}

use EdgeKind::*;

const HAND: &[Expect] = &[
    // abs: B2 = [get const lt_s if] -IfThen-> B3 = [const get sub else]
    //      B2 -IfElse-> B4 = [get end]; B3, B4 -Fallthrough-> B5 = [end] -> EXIT.
    Expect {
        fixture: "branches",
        export: "abs",
        nodes: 6,
        edges: 6,
        walks: &[
            (-3, &[Entry, IfThen, Fallthrough, Fallthrough]),
            (4, &[Entry, IfElse, Fallthrough, Fallthrough]),
        ],
    },
    // clamp10: B2 -IfThen-> B3 = [const set end] -Fallthrough-> B4 = [get end];
    //          B2 -IfElse (synthesized else)-> B4; B4 -> EXIT.
    Expect {
        fixture: "branches",
        export: "clamp10",
        nodes: 5,
        edges: 5,
        walks: &[
            (20, &[Entry, IfThen, Fallthrough, Fallthrough]),
            (3, &[Entry, IfElse, Fallthrough]),
        ],
    },
    // switch: B2 = [get br_table]: one BrTable edge per distinct label
    //         $a $b $c $d (4), joins Ja Jb Jc end in return (3 Return),
    //         Jd falls off the end (1): 7 nodes, 1 + 4 + 3 + 1 = 9 edges.
    Expect {
        fixture: "branches",
        export: "switch",
        nodes: 7,
        edges: 9,
        walks: &[
            (0, &[Entry, BrTable, Return]),
            (1, &[Entry, BrTable, Return]),
            (2, &[Entry, BrTable, Return]),
            (3, &[Entry, BrTable, Return]),
            (4, &[Entry, BrTable, Return]),
            (5, &[Entry, BrTable, Fallthrough]),
            (-1, &[Entry, BrTable, Fallthrough]),
        ],
    },
    // count_down: the loop starts the function, so the entry block is the
    // header H = [loop ... br_if]; H -BrIf-> H (self loop), H -Fallthrough->
    // B3 = [end get end] -> EXIT. n = 3: two backedges, then out.
    Expect {
        fixture: "loops",
        export: "count_down",
        nodes: 4,
        edges: 4,
        walks: &[
            (3, &[Entry, BrIf, BrIf, Fallthrough, Fallthrough]),
            (1, &[Entry, Fallthrough, Fallthrough]),
            (0, &[Entry, Fallthrough, Fallthrough]),
        ],
    },
    // dead: B2 = [block get br_if] -BrIf-> J, -Fallthrough-> B3 = [const
    // return] -Return-> EXIT; everything up to `end $b` is dead;
    // J = [get const add end] -> EXIT.
    Expect {
        fixture: "dead_code",
        export: "dead",
        nodes: 5,
        edges: 5,
        walks: &[
            (0, &[Entry, Fallthrough, Return]),
            (1, &[Entry, BrIf, Fallthrough]),
        ],
    },
    // catch_to_func: B2 = [try_table get call end const add end] -> EXIT;
    // the catch to the function's label is ENTRY -Catch-> EXIT.
    Expect {
        fixture: "exceptions_to_label",
        export: "catch_to_func",
        nodes: 3,
        edges: 3,
        walks: &[(2, &[Entry, Fallthrough]), (3, &[Catch])],
    },
];

fn export_index(bytes: &[u8], export: &str) -> u32 {
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let Ok(wasmparser::Payload::ExportSection(s)) = payload {
            for e in s.into_iter().flatten() {
                if e.name == export {
                    return e.index;
                }
            }
        }
    }
    panic!("no export {export}")
}

#[test]
fn hand_analysed_graphs_and_walks() {
    for x in HAND {
        let bytes = fixture(x.fixture);
        let info = analyze_ok(&bytes);
        let func = export_index(&bytes, x.export);
        let f: &FunctionCfg = function(&info, func);
        assert_eq!(
            (f.cfg.num_nodes(), f.cfg.num_edges()),
            (x.nodes, x.edges),
            "{}",
            x.export
        );
        let plans = plans_with(&info, trace_plan);
        let out = instrument(&bytes, &info, &plans, &[]).expect("instrument");
        for &(arg, expected) in x.walks {
            let calls = [Call {
                export: x.export.to_string(),
                args: vec![arg],
            }];
            let r = run(&out.bytes, &calls);
            let walks = reconstruct(&info, &r);
            let mine: Vec<Vec<EdgeKind>> = walks
                .complete
                .iter()
                .filter(|(g, _)| *g == func)
                .map(|(_, w)| kinds(f, w))
                .collect();
            assert_eq!(mine, vec![expected.to_vec()], "{}({arg})", x.export);
        }
    }
}

#[test]
fn hand_analysed_edge_counts_of_the_self_loop() {
    // count_down(5): Entry once, the self-loop backedge 4 times (n = 4..1
    // after decrement), the loop exit once, the function exit once.
    let bytes = fixture("loops");
    let info = analyze_ok(&bytes);
    let func = export_index(&bytes, "count_down");
    let f = function(&info, func);
    let plans = plans_with(&info, slot_plan);
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let r = run(
        &out.bytes,
        &[Call {
            export: "count_down".into(),
            args: vec![5],
        }],
    );
    assert_eq!(r.outcomes, vec![Outcome::Values(vec!["i32:5".into()])]);
    let raw = read_counters(
        out.layout.function(func).unwrap(),
        r.counters.as_ref().unwrap(),
    )
    .unwrap();
    let by_kind = |k: EdgeKind, self_loop: bool| -> u64 {
        (0..f.cfg.num_edges())
            .filter(|&e| f.edge_kinds[e] == k)
            .filter(|&e| {
                let (s, d) = f.cfg.edge(pathprof_graph::EdgeId::new(e));
                (s == d) == self_loop
            })
            .map(|e| raw.slots[e])
            .sum()
    };
    assert_eq!(by_kind(Entry, false), 1);
    assert_eq!(by_kind(BrIf, true), 4);
    assert_eq!(by_kind(Fallthrough, false), 2);
}

#[test]
fn walks_lost_to_exceptions_are_the_expected_ones() {
    // through_middle(x): for odd x > 4, $maybe_throw throws; $middle's path
    // is in flight and is lost (1 abandoned walk per such call); the handler
    // in through_middle starts a new path.
    let bytes = fixture("exceptions");
    let info = analyze_ok(&bytes);
    let plans = plans_with(&info, trace_plan);
    let out = instrument(&bytes, &info, &plans, &[]).unwrap();
    let calls: Vec<Call> = (0..10)
        .map(|x| Call {
            export: "through_middle".into(),
            args: vec![x],
        })
        .collect();
    let r = run(&out.bytes, &calls);
    let walks = reconstruct(&info, &r);
    // x in {5, 7, 9}: each loses $middle's walk and through_middle's first walk.
    assert_eq!(walks.abandoned, 6);
    let expected: Vec<String> = (0..10)
        .map(|x: i32| {
            if x > 4 && x % 2 == 1 {
                x * 10 * 2
            } else if x > 4 {
                x + 3
            } else {
                x + 1
            }
        })
        .map(|v| format!("i32:{v}"))
        .collect();
    let got: Vec<String> = r
        .outcomes
        .iter()
        .map(|o| match o {
            Outcome::Values(v) => v[0].clone(),
            _ => "trap".into(),
        })
        .collect();
    assert_eq!(got, expected);
}

/// The table's hash, written out here apart from the rewriter: the home
/// entry of stored key `k` (a path number + 1) is bits 32 and up of
/// `k * 2^64 / phi`, masked to the capacity.
fn fibonacci_home(k: u64, capacity: u64) -> u64 {
    (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) & (capacity - 1)
}

/// Where the helper stores keys and when the inline probe finds them. Every
/// stored key sits at its home entry or after it with only occupied entries
/// between (linear probing from the home the oracle computes). And in a
/// table where every key is at home, the inline probe of the path end must
/// find every key counted before, so the helper, which remembers the last
/// key it handled, last handled the last *new* key of the run, not merely
/// the last one.
#[test]
fn hash_entries_sit_at_their_fibonacci_home_and_the_inline_probe_finds_them() {
    const CAPACITY: u64 = 1024;
    let (mut at_home, mut distinguishing) = (0, 0);
    for case in cases() {
        let lengths = walk_lengths(&case);
        for width in [Width::I32, Width::I64] {
            let table = PathTable::Hash {
                capacity: CAPACITY as u32,
            };
            let plans = plans_with(&case.info, |c| length_plan(c, width, 0, 0, table));
            let out = instrumented(&case.bytes, &case.info, &plans);
            let r = run(&out.bytes, &case.calls);
            let memory = r.counters.as_ref().expect("counter memory exported");
            let u64_at = |at: u64| {
                let at = at as usize;
                u64::from_le_bytes(memory[at..at + 8].try_into().expect("8 bytes"))
            };
            for f in &out.layout.functions {
                let base = u64::from(f.paths_offset);
                let key_at = |i: u64| u64_at(base + 32 + 16 * (i % CAPACITY));
                let mut all_home = true;
                for i in 0..CAPACITY {
                    let k = key_at(i);
                    if k == 0 {
                        continue;
                    }
                    let home = fibonacci_home(k, CAPACITY);
                    let dist = (i + CAPACITY - home) % CAPACITY;
                    assert!(
                        (home..home + dist).all(|j| key_at(j) != 0),
                        "{}: key {k} of function {} at {i}, home {home}, a free entry between",
                        case.name,
                        f.func_index
                    );
                    all_home &= dist == 0;
                }
                let seq = lengths.get(&f.func_index).cloned().unwrap_or_default();
                let Some(&last) = seq.last() else { continue };
                if !all_home {
                    continue;
                }
                at_home += 1;
                let mut seen = std::collections::BTreeSet::new();
                let last_new = seq.iter().filter(|l| seen.insert(**l)).last();
                distinguishing += usize::from(last_new != Some(&last));
                // HASH_LAST_KEY (header offset 16) holds key + 1.
                assert_eq!(
                    u64_at(base + 16),
                    last_new.expect("a key") + 1,
                    "{}: function {}: the helper handled a key the inline probe should find",
                    case.name,
                    f.func_index
                );
            }
        }
    }
    assert!(
        at_home > 0 && distinguishing > 0,
        "{at_home} tables at home, {distinguishing} distinguishing"
    );
}
