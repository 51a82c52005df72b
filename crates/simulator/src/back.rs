//! The half of the profiler that depends on the Hot Path Table: the HPT,
//! the HPT restarted at every window, and the branch queues, fed the
//! path-level stream of a [`crate::front::Front`].
//!
//! A step's latency is the front's (its operations) plus, for each of its
//! paths that misses in this HPT, `hpt_miss_per_log2_way * log2(ways)`
//! cycles, as [`crate::timing::Latencies::of`] counts them.
//!
//! Departures from the thesis: none beyond those of [`crate::hpt`],
//! [`crate::overlap`] and [`crate::timing`].

use crate::config::SimConfig;
use crate::front::{Popped, Step};
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
    /// Scratch: the current chunk's branches with HPT misses (index in
    /// the chunk, their cycles), in order.
    misses: Vec<(u32, u64)>,
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
            misses: Vec::new(),
        })
    }

    /// Consumes one chunk of a front's stream: first the paths into the
    /// tables, noting the cycles of HPT misses by branch, then each queue
    /// in one tight pass over the chunk.
    pub fn consume(&mut self, steps: &[Step], paths: &[Popped]) {
        let mut misses = std::mem::take(&mut self.misses);
        misses.clear();
        for p in paths {
            if !self.hpt.update(&p.path, p.count) {
                match misses.last_mut() {
                    Some((step, cycles)) if *step == p.step => *cycles += self.miss_cost,
                    _ => misses.push((p.step, self.miss_cost)),
                }
            }
            if let Some(w) = &mut self.windows {
                w.record(&p.path, p.count);
            }
        }
        // A sentinel past every branch: one comparison per branch finds
        // the next with misses.
        misses.push((u32::MAX, 0));
        for q in &mut self.queues {
            let (mut k, mut at) = (0, misses[0].0 as usize);
            q.retire_all(steps.iter().enumerate().map(|(i, s)| {
                let mut latency = s.latency;
                if i == at {
                    latency += misses[k].1;
                    k += 1;
                    at = misses.get(k).map_or(usize::MAX, |m| m.0 as usize);
                }
                (s.instrs, latency)
            }));
        }
        self.misses = misses;
    }

    /// Closes the current window against its exact profile.
    pub fn close_window(&mut self, exact: &ExactTable) {
        if let Some(w) = &mut self.windows {
            w.close(exact, Some(&self.hpt));
        }
    }
}
