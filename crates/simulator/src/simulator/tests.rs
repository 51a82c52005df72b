//! The stream of the detector's `loop_and_call` test through whole
//! simulators, with the expected figures worked out by hand.

use super::*;
use crate::descriptor::PathDescriptor;
use crate::hpt::{HptConfig, IndexFn, Replacement};
use crate::predictor::PredictorConfig;
use crate::testing::{ev, path};

const CALL: BranchKind = BranchKind::Call { indirect: false };

/// Paths, BL: P1 = (100, 2 branches, 11) at branch 3, P2 = (200, 0) at
/// branch 6, P3 = (100, 1, 0) at branch 7. Instructions 2 3 2 3 1 4 5 = 20.
fn stream() -> Vec<BranchEvent> {
    vec![
        ev(CALL, 0, 100, false, 2),
        ev(BranchKind::Conditional { taken: true }, 104, 108, false, 3),
        ev(BranchKind::Jump, 110, 100, true, 2),
        ev(BranchKind::Conditional { taken: false }, 104, 106, false, 3),
        ev(CALL, 106, 200, false, 1),
        ev(BranchKind::Return, 204, 107, false, 4),
        ev(BranchKind::Return, 120, 0, false, 5),
    ]
}

fn one_entry() -> SimConfig {
    SimConfig {
        hpt: HptConfig {
            entries: 1,
            ways: 1,
            index: IndexFn::Xor,
            replacement: Replacement::Lfu,
        },
        queue_lengths: vec![0, 1],
        window_instrs: 10,
        ..SimConfig::default()
    }
}

fn run(config: SimConfig) -> SimResult {
    let mut s = Simulator::new(config).expect("valid");
    s.feed(&stream());
    s.result()
}

fn weights(p: &[HotPath]) -> Vec<(PathDescriptor, u64)> {
    p.iter().map(|h| (h.path, h.weight)).collect()
}

#[test]
fn one_entry_table_keeps_the_last_path() {
    // P1, P2, P3 each once; each evicts the one before: the table holds P3.
    // Complete overlap min(1/1, 1/3).
    let r = run(one_entry());
    assert_eq!(weights(&r.hardware_profile), vec![(path(100, 1, 0), 1)]);
    assert_eq!(r.exact_profile.len(), 3);
    assert!((r.complete_overlap - 1.0 / 3.0).abs() < 1e-12);
    let h = r.hpt;
    assert_eq!((h.lookups, h.hits, h.misses, h.evictions), (3, 0, 3, 2));
    assert_eq!((r.instrs, r.paths_in_flight, r.detector.paths), (20, 0, 3));
}

#[test]
fn stalls_for_queue_lengths_0_and_1() {
    // Latencies (1 way: an HPT miss costs log2(1) = 0 more): call 2 (count,
    // push), taken 1, latch 4 (update, pop, HPT update, push), not taken 1,
    // call 2, return 3 (count, pop, HPT update), return 3.
    // Q=0: r 2 f4 | r5 f6 | r7 f11 | ready 10, f11 -> r11 (1) f12 | r12
    //      f14 | r16 f19 | r21: 1 stall cycle.
    // Q=1: b4 ready 10, s3 = 7 -> r10, s11 f12 | b5 ready 11, s4 = 11 | b6
    //      ready 15, s5 = 12 | b7 ready 20, s6 = 15: none.
    let r = run(one_entry());
    let got: Vec<_> = r
        .timing
        .iter()
        .map(|t| (t.queue_length, t.stall_cycles))
        .collect();
    assert_eq!(got, vec![(0, 1), (1, 0)]);
    assert_eq!(r.timing[0].busy_cycles, 16);
    assert!((r.timing[0].overhead - 0.05).abs() < 1e-12);
}

#[test]
fn dynamic_overlap_over_windows_of_ten_instructions() {
    // Window 1 closes at branch 4 (2+3+2+3): only P1, overlap 1. Window 2
    // closes at branch 7 (1+4+5): P2 then P3, the table keeps P3: 1/2.
    let d = run(one_entry()).dynamic_overlap.expect("enabled");
    assert_eq!(d.per_window, vec![1.0, 0.5]);
    assert!(!d.partial_last);
    assert!((d.mean - 0.75).abs() < 1e-12);
}

#[test]
fn instructions_metric() {
    // P1: 3 + 2 = 5; P2: 4; P3: 3 + 1 + 5 = 9 (the host's call orphaned 2).
    let r = run(SimConfig {
        metric: Metric::Instructions,
        ..SimConfig::default()
    });
    let want = vec![
        (path(100, 1, 0), 9),
        (path(100, 2, 0b11), 5),
        (path(200, 0, 0), 4),
    ];
    assert_eq!(weights(&r.exact_profile), want);
    assert_eq!(weights(&r.hardware_profile), want);
    assert!((r.complete_overlap - 1.0).abs() < 1e-12);
    assert_eq!(r.detector.orphan_events, 2);
}

#[test]
fn mispredictions_metric() {
    // Bimodal: both conditionals at 104 share a counter at 1. Taken:
    // predicted not taken (miss, P1), counter 2. Not taken: predicted taken
    // (miss, P3).
    let r = run(SimConfig {
        metric: Metric::Mispredictions,
        predictor: PredictorConfig::Bimodal { entries: 4 },
        ..SimConfig::default()
    });
    let want = vec![
        (path(100, 1, 0), 1),
        (path(100, 2, 0b11), 1),
        (path(200, 0, 0), 0),
    ];
    assert_eq!(weights(&r.exact_profile), want);
    let p = r.predictor.expect("predictor runs for this metric");
    assert_eq!((p.branches, p.mispredictions), (2, 2));
}

/// The L1 misses of `l1_misses_join_the_next_branch`'s accesses, per path
/// of `stream`: P1 (100, two branches) gets the cold miss at 0 (the store
/// to 0 hits), P3 (100, one branch) the misses at 32768 and at 0 again,
/// which 32768 evicted from the direct-mapped L1.
fn l1_misses_by_path() -> Vec<(PathDescriptor, u64)> {
    vec![
        (path(100, 1, 0), 2),
        (path(100, 2, 0b11), 1),
        (path(200, 0, 0), 0),
    ]
}

#[test]
fn l1_misses_join_the_next_branch() {
    // Before branch 2 (P1): 0 miss, 0 hit. Before branch 5 (P3): 32768
    // conflicts with 0 in the 32KB direct-mapped L1: miss, then 0 misses.
    let mut s = Simulator::new(SimConfig {
        metric: Metric::L1Misses,
        ..SimConfig::default()
    })
    .expect("valid");
    let st = stream();
    s.feed(&st[..1]);
    s.memory_access(0, false);
    s.memory_access(0, true);
    s.feed(&st[1..4]);
    s.memory_access(32768, false);
    s.memory_access(0, false);
    s.feed(&st[4..]);
    let r = s.result();
    assert_eq!(weights(&r.exact_profile), l1_misses_by_path());
    assert_eq!(
        (r.caches.accesses, r.caches.l1_misses, r.caches.l2_misses),
        (4, 3, 2)
    );
}

#[test]
fn accesses_placed_in_a_batch_join_the_branch_after_them() {
    // The accesses of `l1_misses_join_the_next_branch`, in one batch: two
    // after branch 1, two after branch 4; the same misses, the same paths.
    let at = |at, addr, store| MemoryAccess { at, addr, store };
    let accesses = [
        at(1, 0, false),
        at(1, 0, true),
        at(4, 32768, false),
        at(4, 0, false),
    ];
    let config = SimConfig {
        metric: Metric::L1Misses,
        ..SimConfig::default()
    };
    let mut s = Simulator::new(config.clone()).expect("valid");
    s.feed_with_accesses(&stream(), &accesses);
    let r = s.result();
    assert_eq!(weights(&r.exact_profile), l1_misses_by_path());
    assert_eq!((r.caches.accesses, r.caches.l1_misses), (4, 3));
    // After the last branch: counted by the cache, joining no path yet.
    let mut sweep = Sweep::new([config]).expect("valid");
    sweep.feed_with_accesses(&stream()[..4], &[at(4, 64, false)]);
    let r = &sweep.results()[0];
    assert_eq!((r.caches.accesses, r.caches.l1_misses), (1, 1));
    assert!(r.exact_profile.iter().all(|p| p.weight == 0));
}

#[test]
fn sweep_feeds_every_configuration_alike() {
    let configs = vec![one_entry(), SimConfig::default()];
    let mut sweep = Sweep::new(configs.clone()).expect("valid");
    for e in stream() {
        sweep.feed(&[e]);
    }
    let alone: Vec<SimResult> = configs.into_iter().map(run).collect();
    assert_eq!(sweep.results(), alone);
    assert_eq!(sweep.results()[1].hardware_profile.len(), 3);
    let mut threaded = Sweep::new([one_entry(), SimConfig::default(), one_entry()]).expect("valid");
    threaded.set_threads(2);
    threaded.feed(&stream()[..3]);
    threaded.feed(&stream()[3..]);
    assert_eq!(threaded.results()[..2], alone[..]);
    assert_eq!(threaded.results()[2], alone[0]);
    let from_toml = Sweep::from_toml("[[config]]\n[[config]]\npath_type = \"wpp\"\n");
    assert_eq!(from_toml.map(|s| s.len()), Ok(2));
    assert!(Sweep::new([SimConfig {
        stack_depth: 0,
        ..SimConfig::default()
    }])
    .is_err());
}

#[test]
fn results_serialise_to_json() {
    let r = run(one_entry());
    let text = serde_json::to_string(&r).expect("serialisable");
    let back: SimResult = serde_json::from_str(&text).expect("readable");
    assert_eq!(back.hardware_profile, r.hardware_profile);
    assert_eq!(back.timing, r.timing);
}

#[test]
fn hpt_misses_lengthen_their_branches() {
    // One set of 4 ways (log2 = 2), 3 cycles per log2 way: each of the
    // three paths misses once, adding 6 cycles to branches 3, 6 and 7:
    // latencies 2 1 10 1 2 9 9 (busy 34) against instructions 2 3 2 3 1 4 5.
    // Q=0: r2 f4 | r5 f6 | r7 f17 | ready 10 -> r17 (7) f18 | r18 f20 |
    //      r22 f31 | ready 27 -> r31 (4): 11 stall cycles in 2 branches.
    let mut config = one_entry();
    config.hpt = HptConfig {
        entries: 4,
        ways: 4,
        index: IndexFn::Address,
        replacement: Replacement::Lru,
    };
    config.latencies.hpt_miss_per_log2_way = 3;
    let t = run(config).timing[0];
    assert_eq!(
        (t.busy_cycles, t.stall_cycles, t.stalled_branches),
        (34, 11, 2)
    );
}
