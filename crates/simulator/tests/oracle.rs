//! The simulator's exact profile against a brute-force segmentation of
//! random branch streams into paths, written here from the thesis' rules
//! (Tables 5.1 and 5.2, extended loop paths, splitting, stack repair) without the path stack,
//! the PPCR or the descriptor code: each path is a list of its branches'
//! outcomes, encoded only when it ends.

use pathprof_simulator::config::{Metric, SimConfig};
use pathprof_simulator::hpt::{HotPath, HptConfig, IndexFn, Replacement};
use pathprof_simulator::ppcr::PathType;
use pathprof_simulator::simulator::Sweep;
use pathprof_simulator::{BranchEvent, BranchKind};
use proptest::prelude::*;
use std::collections::HashMap;

/// (start, length, outcome bit count, outcome bits) -> weight.
type Profile = HashMap<(u32, u16, u16, u128), u64>;

/// A path in flight: its start, each branch's (value, width), and the
/// backward branches it has gone through.
struct Path {
    start: u32,
    branches: Vec<(u32, u32)>,
    instrs: u64,
    loops: u32,
}

impl Path {
    fn at(start: u32) -> Path {
        Path {
            start,
            branches: Vec::new(),
            instrs: 0,
            loops: 0,
        }
    }

    fn bits(&self) -> u32 {
        self.branches.iter().map(|b| b.1).sum()
    }
}

/// Bits needed to tell `arms` arms apart.
fn width(arms: u32) -> u32 {
    let mut w = 0;
    while (1u64 << w) < u64::from(arms) {
        w += 1;
    }
    w
}

struct Oracle {
    wpp: bool,
    /// Extended loop paths: backward branches a path may go through.
    loops: u32,
    max_len: usize,
    depth: usize,
    stack: Vec<Path>,
    /// Weighted by instructions, and by traversals.
    instrs: Profile,
    freq: Profile,
}

impl Oracle {
    fn new(path_type: PathType, max_len: usize, depth: usize) -> Oracle {
        Oracle {
            wpp: path_type == PathType::Wpp,
            loops: match path_type {
                PathType::ExtendedLoop { max } => max,
                _ => 0,
            },
            max_len,
            depth,
            stack: Vec::new(),
            instrs: Profile::new(),
            freq: Profile::new(),
        }
    }

    fn push(&mut self, start: u32) {
        if self.stack.len() == self.depth {
            self.stack.remove(0);
        }
        self.stack.push(Path::at(start));
    }

    fn end(&mut self, p: Path) {
        let mut bits = 0u128;
        let mut at = 0;
        for &(value, w) in &p.branches {
            bits |= u128::from(value) << at;
            at += w;
        }
        let key = (p.start, p.branches.len() as u16, at as u16, bits);
        *self.instrs.entry(key).or_insert(0) += p.instrs;
        *self.freq.entry(key).or_insert(0) += 1;
    }

    /// Pops the top path into the profile, if there is one.
    fn pop_and_end(&mut self) {
        if let Some(p) = self.stack.pop() {
            self.end(p);
        }
    }

    fn count(&mut self, instrs: u32) {
        if let Some(top) = self.stack.last_mut() {
            top.instrs += u64::from(instrs);
        }
    }

    fn branch(&mut self, e: &BranchEvent) {
        let outcome = match e.kind {
            BranchKind::Conditional { taken } => Some((u32::from(taken), 1)),
            BranchKind::Switch { arm, arms } => Some((arm, width(arms))),
            BranchKind::Jump => Some((1, 1)),
            _ => None,
        };
        if let Some(outcome) = outcome {
            // A path started here (nothing was in flight) is not extended.
            let fresh = self.stack.is_empty();
            if fresh {
                self.push(e.address);
            }
            let top = self.stack.last_mut().expect("pushed");
            top.branches.push(outcome);
            top.instrs += u64::from(e.instrs);
            let through = e.backward && !fresh && top.loops < self.loops;
            if through {
                top.loops += 1;
            }
            let full = top.branches.len() >= self.max_len || top.bits() > 96;
            if (e.backward && !through) || full {
                self.pop_and_end();
                self.push(e.target);
            }
            return;
        }
        self.count(e.instrs);
        match e.kind {
            BranchKind::Call { .. } if !self.wpp => self.push(e.target),
            BranchKind::Return if !self.wpp => self.pop_and_end(),
            BranchKind::Call { .. } | BranchKind::Return | BranchKind::TailCall { .. } => {
                self.pop_and_end();
                self.push(e.target);
            }
            BranchKind::Throw { frames } if !self.wpp => {
                let keep = self.stack.len().saturating_sub(frames as usize);
                self.stack.truncate(keep);
            }
            BranchKind::Catch => {
                self.stack.pop();
                self.push(e.target);
            }
            _ => {}
        }
    }
}

fn event() -> impl Strategy<Value = BranchEvent> {
    // Wide switches (32 bits) often, so paths also split on outcome bits.
    let arms = prop_oneof![
        1 => Just(1u32),
        1 => Just(2),
        1 => Just(3),
        1 => Just(5),
        1 => Just(1000),
        1 => Just(1 << 20),
        4 => Just(u32::MAX),
    ];
    let kind = prop_oneof![
        6 => any::<bool>().prop_map(|taken| BranchKind::Conditional { taken }),
        2 => (arms, any::<u32>()).prop_map(|(arms, a)| BranchKind::Switch { arm: a % arms, arms }),
        2 => Just(BranchKind::Jump),
        2 => any::<bool>().prop_map(|indirect| BranchKind::Call { indirect }),
        2 => Just(BranchKind::Return),
        1 => any::<bool>().prop_map(|indirect| BranchKind::TailCall { indirect }),
        1 => (0u32..4).prop_map(|frames| BranchKind::Throw { frames }),
        1 => Just(BranchKind::Catch),
    ];
    (kind, 0u32..12, 0u32..12, prop::bool::weighted(0.3), 1u32..9).prop_map(
        |(kind, a, t, backward, instrs)| BranchEvent {
            kind,
            address: a * 4,
            target: t * 4 + 1,
            backward,
            instrs,
        },
    )
}

fn profile(p: &[HotPath]) -> Profile {
    p.iter()
        .map(|h| {
            (
                (h.path.start, h.path.len, h.path.nbits, h.path.outcomes),
                h.weight,
            )
        })
        .collect()
}

fn config(path_type: PathType, metric: Metric, max_len: u32, depth: u32) -> SimConfig {
    SimConfig {
        path_type,
        metric,
        max_path_len: max_len,
        stack_depth: depth,
        // Fully associative and larger than any stream's path count: the
        // table never evicts, so it must hold the exact profile.
        hpt: HptConfig {
            entries: 512,
            ways: 512,
            index: IndexFn::Xor,
            replacement: Replacement::Lfu,
        },
        ..SimConfig::default()
    }
}

fn check(path_type: PathType, stream: &[BranchEvent], max_len: u32, depth: u32, cut: usize) {
    let mut sweep = Sweep::new([
        config(path_type, Metric::Instructions, max_len, depth),
        config(path_type, Metric::Frequency, max_len, depth),
    ])
    .expect("valid");
    // Two batches: the simulator must not care where a batch ends.
    let cut = cut.min(stream.len());
    sweep.feed(&stream[..cut]);
    sweep.feed(&stream[cut..]);
    let mut oracle = Oracle::new(path_type, max_len as usize, depth as usize);
    for e in stream {
        oracle.branch(e);
    }
    let r = sweep.results();
    assert_eq!(profile(&r[0].exact_profile), oracle.instrs, "instructions");
    assert_eq!(profile(&r[1].exact_profile), oracle.freq, "frequency");
    assert_eq!(
        profile(&r[1].hardware_profile),
        oracle.freq,
        "fully associative HPT"
    );
    assert_eq!(
        r[1].paths_in_flight as usize,
        oracle.stack.len(),
        "in flight"
    );
}

fn path_type() -> impl Strategy<Value = PathType> {
    prop_oneof![
        Just(PathType::Bl),
        Just(PathType::Wpp),
        (1u32..4).prop_map(|max| PathType::ExtendedLoop { max }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Ball-Larus, whole-program-path and extended loop paths.
    #[test]
    fn paths_match_brute_force(
        path_type in path_type(),
        stream in prop::collection::vec(event(), 0..300),
        max_len in 1u32..40,
        depth in 1u32..6,
        cut in 0usize..300,
    ) {
        check(path_type, &stream, max_len, depth, cut);
    }
}

#[test]
fn oracle_width_is_ceil_log2() {
    let got: Vec<u32> = [1, 2, 3, 4, 5, 1 << 20, u32::MAX]
        .iter()
        .map(|&a| width(a))
        .collect();
    assert_eq!(got, vec![0, 1, 2, 2, 3, 20, 32]);
}
