//! The half of the profiler that depends on the Hot Path Table: the HPT,
//! the HPT restarted at every window, and the branch queues, fed the
//! path-level stream of a [`crate::front::Front`].
//!
//! A step's latency is the front's (its operations) plus, for each of its
//! paths that misses in this HPT, `hpt_miss_per_log2_way * log2(ways)`
//! cycles, as [`crate::timing::Latencies::of`] counts them.

use crate::config::SimConfig;
use crate::descriptor::PathDescriptor;
use crate::front::Step;
use crate::hpt::{ExactTable, HotPathTable};
use crate::overlap::WindowTable;
use crate::timing::BranchQueue;

/// HPT, window table and queues of one configuration.
#[derive(Clone, Debug)]
pub struct Back {
    pub(crate) hpt: HotPathTable,
    pub(crate) windows: Option<WindowTable>,
    pub(crate) queues: Vec<BranchQueue>,
    /// Cycles an HPT miss adds to its branch.
    miss_cost: u64,
    /// Scratch: the current chunk's latencies.
    latencies: Vec<u64>,
}

impl Back {
    /// A back for `config` (validated by the caller).
    pub fn new(config: &SimConfig) -> Result<Back, crate::SimError> {
        let windows = if config.dynamic_overlap {
            Some(WindowTable::mirroring(config.hpt)?)
        } else {
            None
        };
        Ok(Back {
            hpt: HotPathTable::new(config.hpt)?,
            windows,
            queues: config
                .queue_lengths
                .iter()
                .map(|&q| BranchQueue::new(q))
                .collect(),
            miss_cost: u64::from(config.latencies.hpt_miss_per_log2_way)
                * u64::from(config.hpt.ways.max(1).ilog2()),
            latencies: Vec::new(),
        })
    }

    /// Consumes one chunk of a front's stream: first the paths into the
    /// tables, giving each branch its latency, then each queue in one
    /// tight pass over the chunk.
    pub fn consume(&mut self, steps: &[Step], paths: &[(PathDescriptor, u64)]) {
        let mut latencies = std::mem::take(&mut self.latencies);
        latencies.clear();
        let mut next = 0;
        latencies.extend(steps.iter().map(|s| {
            if s.paths == 0 {
                return s.latency;
            }
            let end = next + s.paths as usize;
            let extra = self.collect(&paths[next..end]);
            next = end;
            s.latency + extra
        }));
        for q in &mut self.queues {
            q.retire_all(
                steps
                    .iter()
                    .map(|s| s.instrs)
                    .zip(latencies.iter().copied()),
            );
        }
        self.latencies = latencies;
    }

    /// One branch's paths into the tables; returns the cycles its HPT
    /// misses add.
    fn collect(&mut self, paths: &[(PathDescriptor, u64)]) -> u64 {
        let mut cycles = 0;
        for (path, count) in paths {
            if !self.hpt.update(path, *count) {
                cycles += self.miss_cost;
            }
            if let Some(w) = &mut self.windows {
                w.record(path, *count);
            }
        }
        cycles
    }

    /// Closes the current window against its exact profile.
    pub fn close_window(&mut self, exact: &ExactTable) {
        if let Some(w) = &mut self.windows {
            w.close(exact, Some(&self.hpt));
        }
    }
}
