//! Events per second of the simulator on a synthetic branch stream.
//!
//! `cargo run --release -p pathprof-simulator --example sim_throughput [MILLIONS] [default]`
//!
//! With `default`, only the default configuration runs (for profiling).
//!
//! The stream walks a made-up program of 64 functions of 32 blocks each:
//! every block ends in a branch whose kind and bias follow from a hash of its
//! address (forward conditionals, loop latches taken 90 % of the time,
//! switches, jumps, calls, returns), so paths repeat as in a real program.
//! Generation is not timed; only `feed` is, in CPU time of the feeding
//! thread (from /proc/thread-self/schedstat, so other processes sharing the
//! cores do not count) and in wall time.

use pathprof_simulator::config::{Metric, SimConfig};
use pathprof_simulator::simulator::{Simulator, Sweep};
use pathprof_simulator::{BranchEvent, BranchKind};
use std::time::Instant;

const FUNCS: u32 = 64;
const BLOCKS: u32 = 32;
const BATCH: usize = 1 << 16;

struct Program {
    rng: u64,
    frames: Vec<(u32, u32)>,
    func: u32,
    block: u32,
}

fn hash(x: u32) -> u32 {
    let mut h = x.wrapping_mul(0x9E37_79B9);
    h ^= h >> 15;
    h.wrapping_mul(0x85EB_CA6B) ^ (h >> 13)
}

impl Program {
    fn new() -> Program {
        Program {
            rng: 0x2545_F491_4F6C_DD1D,
            frames: Vec::new(),
            func: 0,
            block: 0,
        }
    }

    fn random(&mut self) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 32) as u32
    }

    fn addr(func: u32, block: u32) -> u32 {
        func * 4096 + block * 16
    }

    fn next(&mut self) -> BranchEvent {
        let here = Program::addr(self.func, self.block);
        let h = hash(here);
        let r = self.random() % 100;
        let instrs = 2 + h % 9;
        let last = self.block + 1 == BLOCKS;
        let (kind, func, block, backward) = match h % 20 {
            _ if last => match self.frames.pop() {
                Some((f, b)) => (BranchKind::Return, f, b, false),
                None => (BranchKind::Return, 0, 0, false),
            },
            0..=2 if self.block >= 3 => {
                let taken = r < 90;
                let to = if taken {
                    self.block - 3
                } else {
                    self.block + 1
                };
                (BranchKind::Conditional { taken }, self.func, to, taken)
            }
            3 if self.frames.len() < 24 => {
                self.frames.push((self.func, self.block + 1));
                let callee = hash(h) % FUNCS;
                (BranchKind::Call { indirect: false }, callee, 0, false)
            }
            4 => {
                let arm = r % 4;
                let to = (self.block + 1 + arm).min(BLOCKS - 1);
                (BranchKind::Switch { arm, arms: 4 }, self.func, to, false)
            }
            5 => (
                BranchKind::Jump,
                self.func,
                (self.block + 2).min(BLOCKS - 1),
                false,
            ),
            _ => {
                let taken = r < 10 + (h >> 8) % 80;
                let to = (self.block + 1 + u32::from(taken)).min(BLOCKS - 1);
                (BranchKind::Conditional { taken }, self.func, to, false)
            }
        };
        self.func = func;
        self.block = block;
        BranchEvent {
            kind,
            address: here + 12,
            target: Program::addr(func, block),
            backward,
            instrs,
        }
    }
}

/// CPU time of this thread so far, in seconds (Linux).
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

fn time(what: &str, millions: usize, mut feed: impl FnMut(&[BranchEvent])) {
    let mut program = Program::new();
    let mut batch = Vec::with_capacity(BATCH);
    let mut fed = 0;
    let (mut wall, mut cpu) = (0.0, 0.0);
    while fed < millions * 1_000_000 {
        batch.clear();
        batch.extend((0..BATCH).map(|_| program.next()));
        let (t, c) = (Instant::now(), cpu_secs());
        feed(&batch);
        cpu += cpu_secs() - c;
        wall += t.elapsed().as_secs_f64();
        fed += BATCH;
    }
    let rate = |secs: f64| fed as f64 / secs / 1e6;
    println!(
        "{what}: {:.1} M events/s of CPU, {:.1} of wall ({fed} events)",
        rate(cpu),
        rate(wall)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let millions = std::env::args().nth(1).map_or(Ok(20), |a| a.parse())?;
    let default = SimConfig::default();
    let mut sim = Simulator::new(default.clone())?;
    time(
        "default (BL, 512x4 xor LFU, windows, queue 4)",
        millions,
        |b| sim.feed(b),
    );
    let r = sim.result();
    println!(
        "  {} paths, {} distinct, HPT hits {}/{}, complete overlap {:.3}, dynamic {:.3}, overhead {:.4}",
        r.detector.paths,
        r.exact_profile.len(),
        r.hpt.hits,
        r.hpt.lookups,
        r.complete_overlap,
        r.dynamic_overlap.map_or(f64::NAN, |d| d.mean),
        r.timing[0].overhead,
    );
    if std::env::args().nth(2).as_deref() == Some("default") {
        return Ok(());
    }
    let lean = SimConfig {
        dynamic_overlap: false,
        ..default.clone()
    };
    let mut sim = Simulator::new(lean)?;
    time("no dynamic overlap", millions, |b| sim.feed(b));
    // The window HPT mirrors the run's during the first window, which the
    // default 100 M instructions cover; with short windows it is fed.
    let short_windows = SimConfig {
        window_instrs: 1_000_000,
        ..default.clone()
    };
    let mut sim = Simulator::new(short_windows)?;
    time("windows of 1 M instructions", millions, |b| sim.feed(b));
    let mispredictions = SimConfig {
        metric: Metric::Mispredictions,
        queue_lengths: (0..=8).collect(),
        ..default.clone()
    };
    let mut sim = Simulator::new(mispredictions)?;
    time("mispredictions metric, queues 0..=8", millions, |b| {
        sim.feed(b)
    });
    let mut sweep = Sweep::new((0..4).map(|i| SimConfig {
        hpt: pathprof_simulator::hpt::HptConfig {
            entries: 128 << i,
            ..default.hpt
        },
        ..default.clone()
    }))?;
    time("sweep of 4 HPT sizes (events x configs)", millions, |b| {
        sweep.feed(b)
    });
    for r in sweep.results() {
        println!(
            "  {} entries: complete overlap {:.3}",
            r.config.hpt.entries, r.complete_overlap
        );
    }
    Ok(())
}
