//! The timing model of the profiler's overhead (thesis 5.5.3): the branch
//! queue between the commit stage and the profiler, and the commit stalls
//! it causes when full.
//!
//! Each branch's *latency* is the sum of its operations' latencies: push,
//! update and update_count one cycle each, a pop one cycle plus the HPT
//! update (one cycle here; the thesis does not give it), and an HPT miss
//! `log2(ways)` cycles more for the LFU search. All are configurable
//! ([`Latencies`]).
//!
//! The pipeline is modelled as committing one instruction per cycle: the
//! *base cycles* are the retired instructions ([`crate::BranchEvent::instrs`]).
//! With a queue of `Q` entries, branch `i` (1-based) retires at
//!
//! ```text
//! r_i = max(r_{i-1} + instrs_i, gate_i)
//! gate_i = s_{i-Q}  (Q > 0: the branch Q places earlier has left the queue;
//!                    0 when i <= Q)
//!        = f_{i-1}  (Q = 0: the profiler must be idle to take it)
//! s_i = max(r_i, f_{i-1})      the profiler starts it
//! f_i = s_i + latency_i        and finishes it
//! ```
//!
//! with `r_0 = f_0 = 0`. The *stall* of branch `i` is `r_i - (r_{i-1} +
//! instrs_i)`: commit waits for a queue slot and no instruction commits
//! meanwhile. Overhead = stall cycles / base cycles.
//!
//! Departures from the thesis: the thesis measured an out-of-order
//! superscalar pipeline (SimpleScalar); this is a one-instruction-per-cycle
//! commit model, so absolute overheads are not comparable, only their trend
//! with the queue length. The profiler's work left when the stream ends is
//! not counted, as the thesis ignores the profile's transfer.

use crate::detector::OpCounts;
use serde::{Deserialize, Serialize};

/// Cycles per profiler operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Latencies {
    pub push: u32,
    pub pop: u32,
    pub update: u32,
    pub update_count: u32,
    /// Updating the HPT on a pop that hands over a path.
    pub hpt_update: u32,
    /// Extra cycles per `log2(ways)` on an HPT miss.
    pub hpt_miss_per_log2_way: u32,
}

impl Default for Latencies {
    /// The thesis' one cycle per operation; an HPT update of one cycle.
    fn default() -> Latencies {
        Latencies {
            push: 1,
            pop: 1,
            update: 1,
            update_count: 1,
            hpt_update: 1,
            hpt_miss_per_log2_way: 1,
        }
    }
}

impl Latencies {
    /// The latency of a branch that performed `ops`, `hpt_misses` of whose
    /// collected paths missed in an HPT of `ways` ways.
    pub fn of(&self, ops: &OpCounts, hpt_misses: u32, ways: u32) -> u64 {
        let log2_ways = ways.max(1).ilog2();
        let cycles = |n: u32, per: u32| u64::from(n) * u64::from(per);
        cycles(ops.pushes, self.push)
            + cycles(ops.updates, self.update)
            + cycles(ops.update_counts, self.update_count)
            + cycles(ops.collected + ops.other_pops, self.pop)
            + cycles(ops.collected, self.hpt_update)
            + cycles(hpt_misses, self.hpt_miss_per_log2_way) * u64::from(log2_ways)
    }
}

/// Cycles counted for one queue length.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingStats {
    pub queue_length: u32,
    pub branches: u64,
    pub base_cycles: u64,
    pub stall_cycles: u64,
    /// Branches whose retirement stalled.
    pub stalled_branches: u64,
    /// Cycles the profiler spent on branches.
    pub busy_cycles: u64,
    /// `stall_cycles / base_cycles` (0 with no cycles).
    pub overhead: f64,
}

/// The branch queue of one length, and the commit stalls it causes.
#[derive(Clone, Debug)]
pub struct BranchQueue {
    /// Start times of the last `Q` branches, the oldest at `next`. They
    /// start at 0, which is also the gate of the first `Q` branches, so the
    /// ring needs no fill count.
    starts: Box<[u64]>,
    next: usize,
    retired: u64,
    finished: u64,
    stats: TimingStats,
}

impl BranchQueue {
    pub fn new(queue_length: u32) -> BranchQueue {
        BranchQueue {
            starts: vec![0; queue_length as usize].into_boxed_slice(),
            next: 0,
            retired: 0,
            finished: 0,
            stats: TimingStats {
                queue_length,
                ..TimingStats::default()
            },
        }
    }

    /// One branch retiring `instrs` instructions after the previous one,
    /// taking the profiler `latency` cycles.
    pub fn retire(&mut self, instrs: u32, latency: u64) {
        self.retire_all([(instrs, latency)]);
    }

    /// [`BranchQueue::retire`] for each `(instrs, latency)` in turn, with
    /// the queue's state in locals (registers) for the whole run.
    #[inline]
    pub fn retire_all(&mut self, branches: impl IntoIterator<Item = (u32, u64)>) {
        let (mut next, mut retired, mut finished) = (self.next, self.retired, self.finished);
        let mut s = self.stats;
        let q = self.starts.len();
        for (instrs, latency) in branches {
            let ready = retired + u64::from(instrs);
            let start;
            if q == 0 {
                retired = ready.max(finished);
                start = retired;
            } else {
                // `next < q` always; `get` keeps this free of panics.
                let slot = self.starts.get(next).copied().unwrap_or(0);
                retired = ready.max(slot);
                start = retired.max(finished);
                if let Some(slot) = self.starts.get_mut(next) {
                    *slot = start;
                }
                next = if next + 1 == q { 0 } else { next + 1 };
            }
            finished = start + latency;
            s.branches += 1;
            s.base_cycles += u64::from(instrs);
            s.stall_cycles += retired - ready;
            s.stalled_branches += u64::from(retired > ready);
            s.busy_cycles += latency;
        }
        (self.next, self.retired, self.finished) = (next, retired, finished);
        self.stats = s;
    }

    pub fn stats(&self) -> TimingStats {
        let mut s = self.stats;
        s.overhead = if s.base_cycles == 0 {
            0.0
        } else {
            s.stall_cycles as f64 / s.base_cycles as f64
        };
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stalls(q: u32, stream: &[(u32, u64)]) -> u64 {
        let mut b = BranchQueue::new(q);
        for &(instrs, latency) in stream {
            b.retire(instrs, latency);
        }
        b.stats().stall_cycles
    }

    #[test]
    fn uniform_stream_for_queue_lengths_0_to_8() {
        // 20 branches, one instruction each, two cycles of profiler work:
        // branches arrive once a cycle and leave every two. Without stalls
        // r_i = i and s_i = 2i - 1, so branch i waits once s_{i-Q} > i - 1,
        // i.e. from i = 2Q + 2 on, one cycle each (the profiler is then
        // always busy and commit follows it): 20 - (2Q + 2) + 1 = 19 - 2Q.
        // Q = 0: every branch after the first waits one cycle: 19 too.
        let stream = [(1, 2); 20];
        let got: Vec<u64> = (0..=8).map(|q| stalls(q, &stream)).collect();
        assert_eq!(got, vec![19, 17, 15, 13, 11, 9, 7, 5, 3]);
        let s = {
            let mut b = BranchQueue::new(0);
            stream.iter().for_each(|&(i, l)| b.retire(i, l));
            b.stats()
        };
        assert_eq!(
            (s.base_cycles, s.stalled_branches, s.busy_cycles),
            (20, 19, 40)
        );
        assert!((s.overhead - 19.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn irregular_stream_traced_by_hand() {
        // (instrs, latency): (3,2) (1,5) (1,1) (4,1) (1,3).
        // Q=0: r 3 s3 f5 | ready 4, f 5 -> r5 (1) f10 | ready 6, f10 -> r10
        //      (4) f11 | ready 14 f15 | ready 15, f15 -> r15: 5 cycles.
        // Q=1: r3 s3 f5 | ready 4, s1 3 -> r4 s5 f10 | ready 5, s2 5 -> r5
        //      s10 f11 | ready 9, s3 10 -> r10 (1) s11 f12 | ready 11, s4 11
        //      -> r11: 1 cycle.
        // Q=2: gates s1 = 3 for b3, s2 = 5 for b4, s3 = 10 for b5 against
        //      ready 5, 9, 10: no stall.
        let stream = [(3, 2), (1, 5), (1, 1), (4, 1), (1, 3)];
        let got: Vec<u64> = (0..=8).map(|q| stalls(q, &stream)).collect();
        assert_eq!(got, vec![5, 1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn latency_of_operations() {
        // A backward branch: update, pop (collected, HPT miss), push, in a
        // 4-way HPT: 1 + (1 + 1) + 2 + 1 = 6 cycles.
        let ops = OpCounts {
            updates: 1,
            collected: 1,
            pushes: 1,
            ..OpCounts::default()
        };
        let l = Latencies::default();
        assert_eq!(l.of(&ops, 1, 4), 6);
        assert_eq!(l.of(&ops, 0, 4), 4);
        assert_eq!(l.of(&ops, 1, 32), 9);
        let throw = OpCounts {
            update_counts: 1,
            other_pops: 2,
            ..OpCounts::default()
        };
        assert_eq!(l.of(&throw, 0, 4), 3);
    }
}
