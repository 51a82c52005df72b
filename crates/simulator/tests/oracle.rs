//! The simulator's exact profile against a brute-force segmentation of
//! random branch streams into paths, written here from the thesis' rules
//! (Tables 5.1 and 5.2, extended paths, splitting, stack repair) without the path stack,
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

/// A path in flight: its start, each branch's (value, width), the backward
/// branches and calls it has gone through (extended paths), and how many
/// procedure frames it covers (more than one after extending into callees).
struct Path {
    start: u32,
    branches: Vec<(u32, u32)>,
    instrs: u64,
    loops: u32,
    calls: u32,
    frames: u32,
}

impl Path {
    fn at(start: u32, frames: u32) -> Path {
        Path {
            start,
            branches: Vec::new(),
            instrs: 0,
            loops: 0,
            calls: 0,
            frames,
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
    /// Extended call paths: calls a path may go into.
    calls: u32,
    max_len: usize,
    depth: usize,
    stack: Vec<Path>,
    /// Weighted by instructions, and by traversals.
    instrs: Profile,
    freq: Profile,
}

impl Oracle {
    fn new(path_type: PathType, max_len: usize, depth: usize) -> Oracle {
        let (loops, calls) = match path_type {
            PathType::ExtendedLoop { max } => (max, 0),
            PathType::ExtendedCall { max } => (0, max),
            _ => (0, 0),
        };
        Oracle {
            wpp: path_type == PathType::Wpp,
            loops,
            calls,
            max_len,
            depth,
            stack: Vec::new(),
            instrs: Profile::new(),
            freq: Profile::new(),
        }
    }

    fn push(&mut self, start: u32, frames: u32) {
        if self.stack.len() == self.depth {
            self.stack.remove(0);
        }
        self.stack.push(Path::at(start, frames));
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

    /// Pops the top path into the profile, if there is one; returns the
    /// frames it covered (1 if there was none).
    fn pop_and_end(&mut self) -> u32 {
        match self.stack.pop() {
            Some(p) => {
                let frames = p.frames;
                self.end(p);
                frames
            }
            None => 1,
        }
    }

    /// Pops the top path into the profile; the frames it covered, if
    /// there was one.
    fn pop_and_end_if_any(&mut self) -> Option<u32> {
        let p = self.stack.pop()?;
        let frames = p.frames;
        self.end(p);
        Some(frames)
    }

    fn count(&mut self, instrs: u32) {
        if let Some(top) = self.stack.last_mut() {
            top.instrs += u64::from(instrs);
        }
    }

    /// Records `outcome` on the top path, starting one at the branch if
    /// none is in flight. Ends the path at the branch's target when `ends`
    /// or when it is full; the next path covers the same frames.
    fn record(&mut self, e: &BranchEvent, outcome: (u32, u32), ends: bool) {
        if self.stack.is_empty() {
            self.push(e.address, 1);
        }
        let top = self.stack.last_mut().expect("pushed");
        top.branches.push(outcome);
        top.instrs += u64::from(e.instrs);
        let full = top.branches.len() >= self.max_len || top.bits() > 96;
        if ends || full {
            let frames = self.pop_and_end();
            self.push(e.target, frames);
        }
    }

    /// Moves the top path's counters if `e` extends it; returns whether it did.
    fn extends(&mut self, e: &BranchEvent) -> bool {
        let (loops, calls) = (self.loops, self.calls);
        let Some(top) = self.stack.last_mut() else {
            return false;
        };
        match e.kind {
            BranchKind::Conditional { .. } | BranchKind::Switch { .. } | BranchKind::Jump
                if e.backward && top.loops < loops =>
            {
                top.loops += 1;
            }
            BranchKind::Call { indirect: false } if top.calls < calls => {
                top.calls += 1;
                top.frames += 1;
            }
            BranchKind::Return if calls > 0 && top.calls > 0 => {
                top.calls -= 1;
                top.frames -= 1;
            }
            _ => return false,
        }
        true
    }

    fn branch(&mut self, e: &BranchEvent) {
        if self.extends(e) {
            let outcome = match e.kind {
                BranchKind::Conditional { taken } => (u32::from(taken), 1),
                BranchKind::Switch { arm, arms } => (arm, width(arms)),
                _ => (1, 1),
            };
            return self.record(e, outcome, false);
        }
        match e.kind {
            BranchKind::Conditional { taken } => {
                return self.record(e, (u32::from(taken), 1), e.backward)
            }
            BranchKind::Switch { arm, arms } => {
                return self.record(e, (arm, width(arms)), e.backward)
            }
            BranchKind::Jump => return self.record(e, (1, 1), e.backward),
            _ => {}
        }
        self.count(e.instrs);
        let in_flight = self.stack.last().map(|p| p.frames);
        match e.kind {
            BranchKind::Call { .. } if !self.wpp => self.push(e.target, 1),
            // A path covering several frames ends at a return; the caller's
            // continuation covers one frame fewer.
            BranchKind::Return if !self.wpp && in_flight.is_some_and(|f| f > 1) => {
                let frames = self.pop_and_end();
                self.push(e.target, frames - 1);
            }
            BranchKind::Return if !self.wpp => {
                self.pop_and_end();
            }
            BranchKind::Call { .. } | BranchKind::Return => {
                self.pop_and_end();
                self.push(e.target, 1);
            }
            BranchKind::TailCall { .. } => {
                let frames = self.pop_and_end();
                self.push(e.target, frames);
            }
            // The thrower's path ends at the throw; in WPP nothing else.
            BranchKind::Throw { frames } => {
                let frames = if self.wpp { 0 } else { frames };
                let covered = self.pop_and_end_if_any();
                match covered {
                    Some(c) if c > frames => self.push(e.address, c - frames),
                    Some(c) => self.unwind(frames - c),
                    None => {}
                }
            }
            // No thrower: the frames unwound lose their paths (in WPP,
            // the one in flight).
            BranchKind::Unwind { .. } if self.wpp => {
                self.stack.pop();
            }
            BranchKind::Unwind { frames } => self.unwind(frames),
            BranchKind::Catch => {
                let frames = self.stack.pop().map_or(1, |p| p.frames);
                self.push(e.target, frames);
            }
            _ => {}
        }
    }

    /// Drops the paths of the `frames` innermost frames.
    fn unwind(&mut self, mut frames: u32) {
        while frames > 0 {
            let Some(top) = self.stack.last_mut() else {
                return;
            };
            if top.frames > frames {
                top.frames -= frames;
                top.calls = top.calls.saturating_sub(frames);
                return;
            }
            frames -= top.frames;
            self.stack.pop();
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
        1 => (0u32..4).prop_map(|frames| BranchKind::Unwind { frames }),
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
        (1u32..4).prop_map(|max| PathType::ExtendedCall { max }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Ball-Larus, whole-program-path and extended loop and call paths.
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
