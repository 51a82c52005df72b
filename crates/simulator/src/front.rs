//! The half of the profiler that does not depend on the Hot Path Table: the
//! metric models, the path detector, the exact table and the window clock.
//! It turns branches into a *path-level stream* ([`Step`]s and the paths
//! they pop) that the HPT half ([`crate::back`]) consumes.
//!
//! Why the split: the detector's paths, their counts, the operations each
//! branch performs and the exact profile are the same for every HPT, queue
//! length and label, so a [`crate::Sweep`] runs one front per distinct
//! remainder of the configuration ([`front_key`]) and feeds its stream to
//! the backs of all configurations that share it. A lone
//! [`crate::Simulator`] is a front with one back.
//!
//! The front runs ahead of its backs by at most [`CHUNK`] branches, and stops
//! after a branch that closes a dynamic-overlap window, so that the backs
//! close their windows against the exact table before it starts the next.
//!
//! Departures from the thesis: none; the split is the simulator's own (the
//! hardware has one detector per HPT), and it keeps every table's work in
//! the per-branch order of [`crate::simulator`].

use crate::cache::{CacheHierarchy, CacheStats, Served};
use crate::config::{Metric, SimConfig};
use crate::descriptor::PathDescriptor;
use crate::detector::{DetectorStats, OpCounts, PathDetector};
use crate::error::SimError;
use crate::event::{BranchEvent, BranchKind, MemoryAccess};
use crate::hpt::{ExactTable, HptConfig};
use crate::overlap::WindowClock;
use crate::ppcr::BranchClass;
use crate::predictor::{Predictor, PredictorStats};
use crate::timing::Latencies;

/// The operations of most branches: a forward branch's update alone.
const UPDATE_ONLY: OpCounts = OpCounts {
    updates: 1,
    update_counts: 0,
    collected: 0,
    other_pops: 0,
    pushes: 0,
};

/// [`Front::run`]'s metric classes: frequency (no block events, count 1),
/// instructions (the branch's own), and those a model gives.
const FREQUENCY: u8 = 0;
const INSTRUCTIONS: u8 = 1;
const MODELLED: u8 = 2;

/// Whether [`BranchClass::of`] `ev` is [`BranchClass::Forward`], without
/// its jump table.
#[inline]
fn is_forward(ev: &BranchEvent) -> bool {
    !ev.backward
        && matches!(
            ev.kind,
            BranchKind::Conditional { .. } | BranchKind::Switch { .. } | BranchKind::Jump
        )
}

/// Branches the front processes before its backs catch up: the stream of a
/// chunk (16 bytes a branch, 48 a path) stays in the L2 cache.
pub const CHUNK: usize = 8192;

/// One branch of the path-level stream.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Instructions the branch retires.
    pub instrs: u32,
    /// Its latency before HPT misses, which each back adds.
    pub latency: u64,
}

/// One popped path of the stream: its descriptor, its count, and the
/// index within the chunk of the branch that popped it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Popped {
    pub path: PathDescriptor,
    pub count: u64,
    pub step: u32,
}

/// The configuration with everything the front does not read set to its
/// default: configurations with equal keys share one front.
pub fn front_key(config: &SimConfig) -> SimConfig {
    SimConfig {
        label: String::new(),
        hpt: HptConfig::default(),
        queue_lengths: Vec::new(),
        ..config.clone()
    }
}

/// Metric models, detector, exact table and window clock of one front key.
#[derive(Clone, Debug)]
pub struct Front {
    metric: Metric,
    latencies: Latencies,
    /// The latency of [`UPDATE_ONLY`].
    update_latency: u64,
    detector: PathDetector,
    exact: ExactTable,
    clock: Option<WindowClock>,
    predictor: Option<Predictor>,
    caches: CacheHierarchy,
    /// Cache-metric events since the last branch (the block event counter).
    pending: u64,
    instrs: u64,
    /// The current chunk's stream.
    steps: Vec<Step>,
    paths: Vec<Popped>,
}

impl Front {
    /// A front for `config` (validated by the caller).
    pub fn new(config: &SimConfig) -> Result<Front, SimError> {
        let clock = if config.dynamic_overlap {
            Some(WindowClock::new(config.window_instrs)?)
        } else {
            None
        };
        let predictor = match config.metric {
            Metric::Mispredictions => Some(Predictor::new(config.predictor)?),
            _ => None,
        };
        Ok(Front {
            metric: config.metric,
            latencies: config.latencies,
            update_latency: config.latencies.of(&UPDATE_ONLY, 0, 1),
            detector: PathDetector::new(
                config.path_type,
                config.max_path_len,
                config.stack_depth as usize,
            ),
            exact: ExactTable::default(),
            clock,
            predictor,
            caches: CacheHierarchy::new(config.caches)?,
            pending: 0,
            instrs: 0,
            steps: Vec::with_capacity(CHUNK),
            paths: Vec::new(),
        })
    }

    /// One data access, between the branches fed before and after it.
    pub fn memory_access(&mut self, addr: u64, is_store: bool) {
        let served = self.caches.access(addr, is_store);
        self.pending += match (self.metric, served) {
            (Metric::L1Misses, Served::L2 | Served::Memory) => 1,
            (Metric::L2Misses, Served::Memory) => 1,
            _ => 0,
        };
    }

    /// Turns the first branches of `batch` (up to [`CHUNK`], or to the end
    /// of a window) into the stream [`Front::steps`] and [`Front::paths`].
    /// Returns how many it took and whether the last closed a window.
    ///
    /// `accesses` are the data accesses still to come, placed among the
    /// branches of a batch whose first branch is `batch[0]` less `base`
    /// (see [`MemoryAccess::at`]); those before a branch taken go to the
    /// cache model first, and `accesses` is moved past them.
    pub fn run(
        &mut self,
        batch: &[BranchEvent],
        accesses: &mut &[MemoryAccess],
        base: usize,
    ) -> (usize, bool) {
        // The metric chosen once per chunk, not per branch.
        match self.metric {
            Metric::Frequency => self.run_as::<FREQUENCY>(batch, accesses, base),
            Metric::Instructions => self.run_as::<INSTRUCTIONS>(batch, accesses, base),
            _ => self.run_as::<MODELLED>(batch, accesses, base),
        }
    }

    /// The accesses of `accesses` before branch `at` of their batch.
    pub fn accesses_before(&mut self, accesses: &mut &[MemoryAccess], at: usize) {
        while let Some((a, rest)) = accesses.split_first() {
            if a.at as usize > at {
                break;
            }
            self.memory_access(a.addr, a.store);
            *accesses = rest;
        }
    }

    fn run_as<const METRIC: u8>(
        &mut self,
        batch: &[BranchEvent],
        accesses: &mut &[MemoryAccess],
        base: usize,
    ) -> (usize, bool) {
        self.paths.clear();
        let n = batch.len().min(CHUNK);
        // Written in place: no capacity check per branch.
        self.steps.resize(n, Step::default());
        let mut steps = std::mem::take(&mut self.steps);
        let mut done = (n, false);
        for (i, (ev, step)) in batch.iter().zip(&mut steps).enumerate() {
            if !accesses.is_empty() {
                self.accesses_before(accesses, base + i);
            }
            *step = self.branch::<METRIC>(ev, i as u32);
            if let Some(clock) = &mut self.clock {
                if clock.tick(ev.instrs) {
                    done = (i + 1, true);
                    break;
                }
            }
        }
        steps.truncate(done.0);
        self.steps = steps;
        done
    }

    fn block_events(&mut self, ev: &BranchEvent) -> u64 {
        match self.metric {
            Metric::Frequency => 0,
            Metric::Instructions => u64::from(ev.instrs),
            Metric::Mispredictions => match (ev.kind, &mut self.predictor) {
                (BranchKind::Conditional { taken }, Some(p)) => {
                    u64::from(p.mispredicts(ev.address, taken))
                }
                _ => 0,
            },
            Metric::L1Misses | Metric::L2Misses => std::mem::take(&mut self.pending),
        }
    }

    #[inline]
    fn branch<const METRIC: u8>(&mut self, ev: &BranchEvent, step: u32) -> Step {
        let events = match METRIC {
            FREQUENCY => 0,
            INSTRUCTIONS => u64::from(ev.instrs),
            _ => self.block_events(ev),
        };
        let (exact, paths) = (&mut self.exact, &mut self.paths);
        let mut collect = |path, n| {
            let count = if METRIC == FREQUENCY { 1 } else { n };
            exact.update(&path, count);
            paths.push(Popped { path, count, step });
        };
        self.instrs += u64::from(ev.instrs);
        if is_forward(ev) {
            let ops = self.detector.forward(ev, events, &mut collect);
            // Without a push (a split or a resync) a forward branch only
            // updated: the common case needs no latency sum.
            if ops.pushes == 0 {
                return Step {
                    instrs: ev.instrs,
                    latency: self.update_latency,
                };
            }
            return self.step(ev, ops);
        }
        let ops = self
            .detector
            .step_other(ev, BranchClass::of(ev), events, &mut collect);
        self.step(ev, ops)
    }

    fn step(&self, ev: &BranchEvent, ops: OpCounts) -> Step {
        Step {
            instrs: ev.instrs,
            latency: self.latencies.of(&ops, 0, 1),
        }
    }

    /// The current chunk's branches.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The current chunk's popped paths, in order.
    pub fn paths(&self) -> &[Popped] {
        &self.paths
    }

    pub fn exact(&self) -> &ExactTable {
        &self.exact
    }

    /// Starts the exact table's next window, once every back has closed
    /// the current one.
    pub fn next_window(&mut self) {
        self.exact.next_window();
    }

    pub fn window_instrs(&self) -> Option<u64> {
        self.clock.as_ref().map(WindowClock::window_instrs)
    }

    pub fn detector_stats(&self) -> DetectorStats {
        self.detector.stats()
    }

    pub fn split_starts(&self) -> Vec<u32> {
        self.detector.split_starts()
    }

    pub fn in_flight(&self) -> usize {
        self.detector.in_flight()
    }

    pub fn instrs(&self) -> u64 {
        self.instrs
    }

    pub fn predictor_stats(&self) -> Option<PredictorStats> {
        self.predictor.as_ref().map(Predictor::stats)
    }

    pub fn cache_stats(&self) -> CacheStats {
        self.caches.stats()
    }
}
