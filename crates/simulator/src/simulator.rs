//! The whole profiler for one configuration: path detector, Hot Path Table,
//! exact table, per-window tables, metric models and branch queues, fed
//! batch by batch (online: the stream is never stored), and a [`Sweep`] that
//! feeds the same batches to many configurations.
//!
//! Per branch, in order: the metric model gives the branch's block event
//! count (5.3); the detector performs the branch's operations, each popped
//! path updating the HPT, the exact table and the window tables; the
//! branch's latency (its operations and HPT misses) enters every branch
//! queue; then its instructions advance the dynamic-overlap window.
//!
//! Memory accesses ([`Simulator::memory_access`]) go to the cache model;
//! with a cache metric, their misses join the block event counter of the
//! next branch fed, so a producer calls it between the branches it falls
//! between (splitting its batches there).

use crate::cache::{CacheHierarchy, CacheStats, Served};
use crate::config::{Metric, SimConfig, SweepConfig};
use crate::detector::{DetectorStats, PathDetector};
use crate::error::SimError;
use crate::event::{BranchEvent, BranchKind};
use crate::hpt::{ExactTable, HotPath, HotPathTable, HptStats};
use crate::overlap::{overlap, DynamicOverlap, Windows};
use crate::predictor::{Predictor, PredictorStats};
use crate::timing::{BranchQueue, TimingStats};
use serde::{Deserialize, Serialize};

/// Everything one configuration measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimResult {
    pub config: SimConfig,
    /// The HPT's contents, heaviest first.
    pub hardware_profile: Vec<HotPath>,
    /// The unbounded table's contents, heaviest first.
    pub exact_profile: Vec<HotPath>,
    pub complete_overlap: f64,
    pub dynamic_overlap: Option<DynamicOverlap>,
    pub hpt: HptStats,
    /// Paths, splits, stack overflows and underflows, repairs.
    pub detector: DetectorStats,
    /// Paths still on the stack (never collected).
    pub paths_in_flight: u64,
    pub instrs: u64,
    /// One per configured queue length.
    pub timing: Vec<TimingStats>,
    /// With the mispredictions metric.
    pub predictor: Option<PredictorStats>,
    pub caches: CacheStats,
}

/// One profiler configuration consuming a branch stream.
#[derive(Clone, Debug)]
pub struct Simulator {
    config: SimConfig,
    detector: PathDetector,
    hpt: HotPathTable,
    exact: ExactTable,
    windows: Option<Windows>,
    queues: Vec<BranchQueue>,
    predictor: Option<Predictor>,
    caches: CacheHierarchy,
    /// Cache-metric events since the last branch (the block event counter).
    pending: u64,
    instrs: u64,
}

impl Simulator {
    pub fn new(config: SimConfig) -> Result<Simulator, SimError> {
        config.validate()?;
        let windows = if config.dynamic_overlap {
            Some(Windows::new(config.window_instrs, config.hpt)?)
        } else {
            None
        };
        let predictor = match config.metric {
            Metric::Mispredictions => Some(Predictor::new(config.predictor)?),
            _ => None,
        };
        Ok(Simulator {
            detector: PathDetector::new(
                config.path_type,
                config.max_path_len,
                config.stack_depth as usize,
            ),
            hpt: HotPathTable::new(config.hpt)?,
            exact: ExactTable::default(),
            windows,
            queues: config
                .queue_lengths
                .iter()
                .map(|&q| BranchQueue::new(q))
                .collect(),
            predictor,
            caches: CacheHierarchy::new(config.caches)?,
            pending: 0,
            instrs: 0,
            config,
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// One data access, between the branches fed before and after it.
    pub fn memory_access(&mut self, addr: u64, is_store: bool) {
        let served = self.caches.access(addr, is_store);
        self.pending += match (self.config.metric, served) {
            (Metric::L1Misses, Served::L2 | Served::Memory) => 1,
            (Metric::L2Misses, Served::Memory) => 1,
            _ => 0,
        };
    }

    /// The next branches of the stream.
    pub fn feed(&mut self, batch: &[BranchEvent]) {
        for ev in batch {
            self.branch(ev);
        }
    }

    fn block_events(&mut self, ev: &BranchEvent) -> u64 {
        match self.config.metric {
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

    fn branch(&mut self, ev: &BranchEvent) {
        let events = self.block_events(ev);
        let frequency = self.config.metric == Metric::Frequency;
        let (hpt, exact, windows) = (&mut self.hpt, &mut self.exact, &mut self.windows);
        let mut hpt_misses = 0;
        let ops = self.detector.step(ev, events, &mut |path, n| {
            let count = if frequency { 1 } else { n };
            if !hpt.update(&path, count) {
                hpt_misses += 1;
            }
            exact.update(&path, count);
            if let Some(w) = windows.as_mut() {
                w.record(&path, count);
            }
        });
        let latency = self
            .config
            .latencies
            .of(&ops, hpt_misses, self.config.hpt.ways);
        for q in &mut self.queues {
            q.retire(ev.instrs, latency);
        }
        if let Some(w) = &mut self.windows {
            w.advance(ev.instrs, &mut self.exact);
        }
        self.instrs += u64::from(ev.instrs);
    }

    /// What was measured so far (the stream may go on).
    pub fn result(&self) -> SimResult {
        let hardware_profile = self.hpt.dump();
        SimResult {
            config: self.config.clone(),
            complete_overlap: overlap(&hardware_profile, &self.exact),
            hardware_profile,
            exact_profile: self.exact.dump(),
            dynamic_overlap: self.windows.as_ref().map(|w| w.result(&self.exact)),
            hpt: self.hpt.stats(),
            detector: self.detector.stats(),
            paths_in_flight: self.detector.in_flight() as u64,
            instrs: self.instrs,
            timing: self.queues.iter().map(BranchQueue::stats).collect(),
            predictor: self.predictor.as_ref().map(Predictor::stats),
            caches: self.caches.stats(),
        }
    }
}

/// Many configurations fed the same stream side by side, optionally on
/// several threads (the configurations share nothing, so each thread takes a
/// contiguous share of them for the whole batch).
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    sims: Vec<Simulator>,
    threads: usize,
}

impl Sweep {
    pub fn new(configs: impl IntoIterator<Item = SimConfig>) -> Result<Sweep, SimError> {
        let sims = configs
            .into_iter()
            .map(Simulator::new)
            .collect::<Result<_, _>>()?;
        Ok(Sweep { sims, threads: 1 })
    }

    /// Feeds batches on up to `threads` threads (1, the default: the calling
    /// thread only). Results do not depend on it.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// A sweep from a TOML file of `[[config]]` tables.
    pub fn from_toml(text: &str) -> Result<Sweep, SimError> {
        Sweep::new(SweepConfig::from_toml(text)?.config)
    }

    pub fn len(&self) -> usize {
        self.sims.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sims.is_empty()
    }

    /// Feeds `batch` to every configuration (each runs through the whole
    /// batch in turn, which keeps its tables in cache).
    pub fn feed(&mut self, batch: &[BranchEvent]) {
        let threads = self.threads.min(self.sims.len());
        if threads <= 1 {
            self.sims.iter_mut().for_each(|s| s.feed(batch));
            return;
        }
        let share = self.sims.len().div_ceil(threads);
        std::thread::scope(|scope| {
            for chunk in self.sims.chunks_mut(share) {
                scope.spawn(move || chunk.iter_mut().for_each(|s| s.feed(batch)));
            }
        });
    }

    pub fn memory_access(&mut self, addr: u64, is_store: bool) {
        for s in &mut self.sims {
            s.memory_access(addr, is_store);
        }
    }

    /// One result per configuration, in the order given.
    pub fn results(&self) -> Vec<SimResult> {
        self.sims.iter().map(Simulator::result).collect()
    }
}

#[cfg(test)]
mod tests;
