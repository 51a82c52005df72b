//! A sweep's results equal those of each configuration run alone on the
//! same stream: sharing one front (detector, exact table, window clock)
//! among configurations that differ only in their HPT, queues and label
//! changes nothing. The stream is long enough to span several of the
//! front's chunks and windows, comes in batches of uneven sizes, and has
//! memory accesses between branches.

use pathprof_simulator::config::{Metric, SimConfig};
use pathprof_simulator::hpt::{HptConfig, IndexFn, Replacement};
use pathprof_simulator::ppcr::PathType;
use pathprof_simulator::simulator::{Simulator, Sweep};
use pathprof_simulator::{BranchEvent, BranchKind};

/// xorshift64: a fixed pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 32) % u64::from(n)) as u32
    }
}

/// A walk over 8 functions of 16 blocks: loops, switches, calls (depth
/// up to 40, past the stacks' depth), returns, throws and catches.
fn stream(n: usize, rng: &mut Rng) -> Vec<BranchEvent> {
    let mut depth = 0u32;
    let (mut func, mut block) = (0u32, 0u32);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let address = func * 256 + block * 16 + 12;
        let (kind, backward) = match rng.below(40) {
            0..=5 if block >= 2 => (BranchKind::Conditional { taken: true }, true),
            6 | 7 if depth < 40 => (
                BranchKind::Call {
                    indirect: rng.below(4) == 0,
                },
                false,
            ),
            8 | 9 if depth > 0 => (BranchKind::Return, false),
            10 => (
                BranchKind::Switch {
                    arm: rng.below(5),
                    arms: 5,
                },
                false,
            ),
            11 if depth > 2 => (BranchKind::Throw { frames: 2 }, false),
            12 => (BranchKind::Catch, false),
            13 => (BranchKind::TailCall { indirect: false }, false),
            _ => (
                BranchKind::Conditional {
                    taken: rng.below(3) == 0,
                },
                false,
            ),
        };
        match kind {
            BranchKind::Call { .. } => depth += 1,
            BranchKind::Return => depth -= 1,
            BranchKind::Throw { frames } => depth -= frames,
            _ => {}
        }
        block = if backward { block - 2 } else { rng.below(16) };
        if matches!(kind, BranchKind::Call { .. } | BranchKind::TailCall { .. }) {
            func = rng.below(8);
            block = 0;
        }
        out.push(BranchEvent {
            kind,
            address,
            target: func * 256 + block * 16,
            backward,
            instrs: 1 + rng.below(6),
        });
    }
    out
}

fn hpt(entries: u32, ways: u32, index: IndexFn, replacement: Replacement) -> HptConfig {
    HptConfig {
        entries,
        ways,
        index,
        replacement,
    }
}

/// Four fronts: the default BL one (four HPTs, windows of 3000
/// instructions), BL paths of at most 4 branches, extended loop paths by
/// instructions (two HPTs), WPP by L1 misses with queues 0..=8.
fn configs() -> Vec<SimConfig> {
    let bl = SimConfig {
        window_instrs: 3000,
        ..SimConfig::default()
    };
    let ext = SimConfig {
        path_type: PathType::ExtendedLoop { max: 2 },
        metric: Metric::Instructions,
        dynamic_overlap: false,
        stack_depth: 8,
        ..SimConfig::default()
    };
    let wpp = SimConfig {
        path_type: PathType::Wpp,
        metric: Metric::L1Misses,
        max_path_len: 6,
        queue_lengths: (0..=8).collect(),
        window_instrs: 777,
        ..SimConfig::default()
    };
    vec![
        SimConfig {
            hpt: hpt(16, 2, IndexFn::Address, Replacement::Lru),
            label: "small".into(),
            ..bl.clone()
        },
        ext.clone(),
        bl.clone(),
        SimConfig {
            hpt: hpt(64, 64, IndexFn::Xor, Replacement::Lfu),
            queue_lengths: vec![0, 2],
            ..bl.clone()
        },
        wpp,
        SimConfig {
            hpt: hpt(8, 1, IndexFn::Xor, Replacement::Lru),
            ..ext
        },
        SimConfig {
            max_path_len: 4,
            ..bl.clone()
        },
        SimConfig {
            hpt: hpt(1, 1, IndexFn::Address, Replacement::Lfu),
            ..bl
        },
    ]
}

#[test]
fn sweep_equals_each_configuration_alone() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let events = stream(30_000, &mut rng);
    let mut sweep = Sweep::new(configs()).expect("valid");
    assert_eq!((sweep.len(), sweep.fronts()), (8, 4));
    let mut alone: Vec<Simulator> = configs()
        .into_iter()
        .map(|c| Simulator::new(c).expect("valid"))
        .collect();
    let mut rest = &events[..];
    while !rest.is_empty() {
        let n = (1 + rng.below(12_000) as usize).min(rest.len());
        sweep.feed(&rest[..n]);
        alone.iter_mut().for_each(|s| s.feed(&rest[..n]));
        let addr = u64::from(rng.below(1 << 20)) * 8;
        let store = n.is_multiple_of(2);
        sweep.memory_access(addr, store);
        alone.iter_mut().for_each(|s| s.memory_access(addr, store));
        rest = &rest[n..];
    }
    let expected: Vec<_> = alone.iter().map(Simulator::result).collect();
    let got = sweep.results();
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g, e, "config {:?}", e.config.label);
    }
    assert_eq!(got.len(), expected.len());
    // The stream did exercise what sharing must keep apart.
    let windows = expected[2].dynamic_overlap.as_ref().expect("windows");
    assert!(windows.per_window.len() > 10);
    assert!(expected[4].caches.l1_misses > 0 && expected[4].detector.splits > 0);
    assert!(expected[0].hpt.evictions > 0 && expected[1].detector.stack.overflows > 0);
    let mut threaded = Sweep::new(configs()).expect("valid");
    threaded.set_threads(2);
    threaded.feed(&events);
    let mut one = Sweep::new(configs()).expect("valid");
    one.feed(&events);
    assert_eq!(threaded.results(), one.results());
}
