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
//! That work is split in two halves: a [`crate::front::Front`] (metric
//! models, detector, exact table, window clock) turns a chunk of branches
//! into a path-level stream, and a [`crate::back::Back`] (HPT, window HPT,
//! queues) consumes it. A [`Simulator`] is one of each; a [`Sweep`] runs one
//! front per distinct [`front_key`] for all the backs that share it. The
//! order of the work on each table is that of the branch-by-branch
//! description above, so the results are the same.
//!
//! Memory accesses go to the cache model; with a cache metric, their misses
//! join the block event counter of the next branch. A producer passes them
//! with the batch they fall in ([`Simulator::feed_with_accesses`], each
//! placed by the number of branches before it), or calls
//! [`Simulator::memory_access`] between two batches.

use crate::back::Back;
use crate::cache::CacheStats;
use crate::config::{SimConfig, SweepConfig};
use crate::detector::DetectorStats;
use crate::error::SimError;
use crate::event::{BranchEvent, MemoryAccess};
use crate::front::{front_key, Front};
use crate::hpt::{HotPath, HptStats};
use crate::overlap::{overlap, DynamicOverlap};
use crate::predictor::PredictorStats;
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
    /// Where the split paths started (module offsets, ascending; at most
    /// 4,096): the paths through there are counted in pieces.
    #[serde(default)]
    pub split_starts: Vec<u32>,
    /// Paths still on the stack (never collected).
    pub paths_in_flight: u64,
    pub instrs: u64,
    /// One per configured queue length.
    pub timing: Vec<TimingStats>,
    /// With the mispredictions metric.
    pub predictor: Option<PredictorStats>,
    pub caches: CacheStats,
}

/// One profiler configuration consuming a branch stream: a front (detector
/// and exact table) feeding one back (HPT and queues).
#[derive(Clone, Debug)]
pub struct Simulator {
    config: SimConfig,
    front: Front,
    back: Back,
}

impl Simulator {
    pub fn new(config: SimConfig) -> Result<Simulator, SimError> {
        config.validate()?;
        Ok(Simulator {
            front: Front::new(&config)?,
            back: Back::new(&config)?,
            config,
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// One data access, between the branches fed before and after it.
    pub fn memory_access(&mut self, addr: u64, is_store: bool) {
        self.front.memory_access(addr, is_store);
    }

    /// The next branches of the stream.
    pub fn feed(&mut self, batch: &[BranchEvent]) {
        self.feed_with_accesses(batch, &[]);
    }

    /// The next branches of the stream and the data accesses among them
    /// (in order of [`MemoryAccess::at`]).
    pub fn feed_with_accesses(&mut self, batch: &[BranchEvent], accesses: &[MemoryAccess]) {
        feed_group(&mut self.front, &mut [&mut self.back], batch, accesses, 1);
    }

    /// What was measured so far (the stream may go on).
    pub fn result(&self) -> SimResult {
        result(&self.config, &self.front, &self.back)
    }
}

/// Feeds `batch` and the data accesses among its branches through `front`
/// to `backs`, chunk by chunk, on up to `threads` threads (each taking a
/// contiguous share of the backs).
fn feed_group(
    front: &mut Front,
    backs: &mut [&mut Back],
    batch: &[BranchEvent],
    mut accesses: &[MemoryAccess],
    threads: usize,
) {
    let mut rest = batch;
    while !rest.is_empty() {
        let base = batch.len() - rest.len();
        let (taken, closed) = front.run(rest, &mut accesses, base);
        let (steps, paths) = (front.steps(), front.paths());
        let threads = threads.min(backs.len());
        if threads <= 1 {
            backs.iter_mut().for_each(|b| b.consume(steps, paths));
        } else {
            let share = backs.len().div_ceil(threads);
            std::thread::scope(|scope| {
                for chunk in backs.chunks_mut(share) {
                    scope.spawn(move || chunk.iter_mut().for_each(|b| b.consume(steps, paths)));
                }
            });
        }
        if closed {
            backs.iter_mut().for_each(|b| b.close_window(front.exact()));
            front.next_window();
        }
        rest = &rest[taken..];
    }
    // Those after the last branch: their misses go to the next batch's first.
    front.accesses_before(&mut accesses, usize::MAX);
}

fn result(config: &SimConfig, front: &Front, back: &Back) -> SimResult {
    let hardware_profile = back.hpt.dump();
    let exact = front.exact();
    SimResult {
        config: config.clone(),
        complete_overlap: overlap(&hardware_profile, exact),
        hardware_profile,
        exact_profile: exact.dump(),
        dynamic_overlap: match (&back.windows, front.window_instrs()) {
            (Some(w), Some(n)) => Some(w.result(exact, n, Some(&back.hpt))),
            _ => None,
        },
        hpt: back.hpt.stats(),
        detector: front.detector_stats(),
        split_starts: front.split_starts(),
        paths_in_flight: front.in_flight() as u64,
        instrs: front.instrs(),
        timing: back.queues.iter().map(BranchQueue::stats).collect(),
        predictor: front.predictor_stats(),
        caches: front.cache_stats(),
    }
}

/// The configurations that share one front, and where they stand in the
/// sweep's order.
#[derive(Clone, Debug)]
struct Group {
    front: Front,
    key: SimConfig,
    members: Vec<usize>,
    backs: Vec<Back>,
}

/// Many configurations fed the same stream. Configurations that differ only
/// in their HPT, queue lengths and label share one front ([`front_key`]):
/// each branch is decoded and each path detected and counted exactly once
/// for all of them. Backs may run on several threads (they share nothing).
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    configs: Vec<SimConfig>,
    groups: Vec<Group>,
    threads: usize,
}

impl Sweep {
    pub fn new(configs: impl IntoIterator<Item = SimConfig>) -> Result<Sweep, SimError> {
        let configs: Vec<SimConfig> = configs.into_iter().collect();
        let mut groups: Vec<Group> = Vec::new();
        for (i, config) in configs.iter().enumerate() {
            config.validate()?;
            let key = front_key(config);
            let back = Back::new(config)?;
            match groups.iter_mut().find(|g| g.key == key) {
                Some(g) => {
                    g.members.push(i);
                    g.backs.push(back);
                }
                None => groups.push(Group {
                    front: Front::new(config)?,
                    key,
                    members: vec![i],
                    backs: vec![back],
                }),
            }
        }
        Ok(Sweep {
            configs,
            groups,
            threads: 1,
        })
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
        self.configs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// How many fronts (distinct detectors) the configurations need.
    pub fn fronts(&self) -> usize {
        self.groups.len()
    }

    /// Feeds `batch` to every configuration.
    pub fn feed(&mut self, batch: &[BranchEvent]) {
        self.feed_with_accesses(batch, &[]);
    }

    /// Feeds `batch` and the data accesses among its branches (in order of
    /// [`MemoryAccess::at`]) to every configuration.
    pub fn feed_with_accesses(&mut self, batch: &[BranchEvent], accesses: &[MemoryAccess]) {
        for g in &mut self.groups {
            let mut backs: Vec<&mut Back> = g.backs.iter_mut().collect();
            feed_group(&mut g.front, &mut backs, batch, accesses, self.threads);
        }
    }

    pub fn memory_access(&mut self, addr: u64, is_store: bool) {
        for g in &mut self.groups {
            g.front.memory_access(addr, is_store);
        }
    }

    /// One result per configuration, in the order given.
    pub fn results(&self) -> Vec<SimResult> {
        let mut out: Vec<Option<SimResult>> = vec![None; self.configs.len()];
        for g in &self.groups {
            for (&i, back) in g.members.iter().zip(&g.backs) {
                out[i] = Some(result(&self.configs[i], &g.front, back));
            }
        }
        out.into_iter().flatten().collect()
    }
}

// The tests' names for what they build (they reach them through `super::*`).
#[cfg(test)]
use crate::{config::Metric, event::BranchKind};

#[cfg(test)]
mod tests;
