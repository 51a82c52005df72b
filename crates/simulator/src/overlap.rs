//! Profile accuracy (thesis 5.5.2): the overlap percentage of a hardware
//! profile with the exact one.
//!
//! *Complete overlap*: with `w1(p)` the weight of path `p` in the hardware
//! profile (what the HPT holds at the end), `W1` their sum, and `w2(p)`, `W2`
//! the same in the exact profile (the unbounded table),
//!
//! ```text
//! overlap = sum over paths p of min(w1(p) / W1, w2(p) / W2)
//! ```
//!
//! a fraction in [0, 1]: the share of each profile's weight the other
//! agrees on. Two empty profiles overlap fully (1); an empty profile
//! overlaps nothing with a non-empty one (0).
//!
//! *Dynamic overlap*: the mean, over consecutive non-overlapping windows of
//! `N` retired instructions (100 million in the thesis), of the overlap of
//! the profile an HPT collects in that window alone (cleared at each window
//! start) with the exact profile of that window. A path belongs to the window
//! in which it is popped. A window closes with the branch that brings its
//! instruction count to `N` or more; the excess counts towards the next one.
//!
//! Departures from the thesis: the last, partial window is included when
//! any path ended in it, so short runs still have a dynamic overlap;
//! [`DynamicOverlap::partial_last`] says whether it was.

use crate::descriptor::PathDescriptor;
use crate::error::SimError;
use crate::hpt::{ExactTable, HotPath, HotPathTable, HptConfig};
use serde::{Deserialize, Serialize};

/// The complete overlap of `hw` (a table's dump) with `exact`.
pub fn overlap(hw: &[HotPath], exact: &ExactTable) -> f64 {
    overlap_by(hw, exact.total(), |p| exact.get(p))
}

/// The overlap of `hw` with the exact profile of the current window.
pub fn window_overlap(hw: &[HotPath], exact: &ExactTable) -> f64 {
    overlap_by(hw, exact.window_total(), |p| exact.window_get(p))
}

/// `sum over hw of min(w1/W1, w2/W2)`, `w2` read from `exact_of`.
fn overlap_by(hw: &[HotPath], w2: u64, exact_of: impl Fn(&PathDescriptor) -> u64) -> f64 {
    let w1: u64 = hw.iter().map(|h| h.weight).sum();
    match (w1, w2) {
        (0, 0) => 1.0,
        (0, _) | (_, 0) => 0.0,
        _ => hw
            .iter()
            .map(|h| {
                let a = h.weight as f64 / w1 as f64;
                let b = exact_of(&h.path) as f64 / w2 as f64;
                a.min(b)
            })
            .sum(),
    }
}

/// The dynamic overlap of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DynamicOverlap {
    pub window_instrs: u64,
    /// Mean of `per_window` (1 with no window).
    pub mean: f64,
    pub per_window: Vec<f64>,
    /// Whether the last window was cut short by the end of the stream.
    pub partial_last: bool,
}

/// Where the current window stands: the instructions retired in it. It
/// depends only on the stream, so configurations that share a detector
/// share it ([`crate::simulator`]).
#[derive(Clone, Debug)]
pub struct WindowClock {
    window_instrs: u64,
    instrs: u64,
}

impl WindowClock {
    pub fn new(window_instrs: u64) -> Result<WindowClock, SimError> {
        if window_instrs == 0 {
            return Err(SimError::Config {
                what: "window_instrs",
                why: "windows must hold at least one instruction".into(),
            });
        }
        Ok(WindowClock {
            window_instrs,
            instrs: 0,
        })
    }

    pub fn window_instrs(&self) -> u64 {
        self.window_instrs
    }

    /// `instrs` more instructions retired; whether that closes the window
    /// (the excess counts towards the next one).
    #[inline]
    pub fn tick(&mut self, instrs: u32) -> bool {
        self.instrs += u64::from(instrs);
        if self.instrs < self.window_instrs {
            return false;
        }
        self.instrs %= self.window_instrs;
        true
    }
}

/// The HPT restarted at every window and the overlaps of the windows
/// closed so far: the part of the dynamic overlap that depends on the HPT.
///
/// A table made by [`WindowTable::mirroring`] is not fed during the first
/// window: both it and the run's HPT start empty and see the same paths
/// until then, so the run's HPT stands in for it (passed as `run`). A run
/// shorter than one window (100 million instructions by default) thus
/// pays nothing for its dynamic overlap.
#[derive(Clone, Debug)]
pub struct WindowTable {
    hpt: HotPathTable,
    per_window: Vec<f64>,
    /// In the first window of a mirroring table.
    mirroring: bool,
}

impl WindowTable {
    pub fn new(hpt: HptConfig) -> Result<WindowTable, SimError> {
        Ok(WindowTable {
            hpt: HotPathTable::new(hpt)?,
            per_window: Vec::new(),
            mirroring: false,
        })
    }

    /// A table whose first window is the run's HPT, of the same `hpt`
    /// configuration and fed the same paths.
    pub fn mirroring(hpt: HptConfig) -> Result<WindowTable, SimError> {
        Ok(WindowTable {
            mirroring: true,
            ..WindowTable::new(hpt)?
        })
    }

    /// A path popped in the current window.
    #[inline]
    pub fn record(&mut self, path: &PathDescriptor, count: u64) {
        if !self.mirroring {
            self.hpt.update(path, count);
        }
    }

    /// The table of the current window.
    fn current<'a>(&'a self, run: Option<&'a HotPathTable>) -> &'a HotPathTable {
        match run {
            Some(run) if self.mirroring => run,
            _ => &self.hpt,
        }
    }

    /// Closes the current window, whose exact profile `exact` still holds
    /// (the caller then starts the exact table's next window).
    #[cold]
    pub fn close(&mut self, exact: &ExactTable, run: Option<&HotPathTable>) {
        let overlap = window_overlap(&self.current(run).dump(), exact);
        self.per_window.push(overlap);
        self.hpt.clear();
        self.mirroring = false;
    }

    /// The result so far, with the partial window if a path ended in it.
    pub fn result(
        &self,
        exact: &ExactTable,
        window_instrs: u64,
        run: Option<&HotPathTable>,
    ) -> DynamicOverlap {
        let mut per_window = self.per_window.clone();
        let partial_last = exact.window_paths() > 0;
        if partial_last {
            per_window.push(window_overlap(&self.current(run).dump(), exact));
        }
        let mean = if per_window.is_empty() {
            1.0
        } else {
            per_window.iter().sum::<f64>() / per_window.len() as f64
        };
        DynamicOverlap {
            window_instrs,
            mean,
            per_window,
            partial_last,
        }
    }
}

/// A [`WindowClock`] and a [`WindowTable`] together, for one configuration
/// fed path by path; the window's exact profile is kept by the
/// [`ExactTable`] beside the run's ([`ExactTable::next_window`]).
#[derive(Clone, Debug)]
pub struct Windows {
    clock: WindowClock,
    table: WindowTable,
}

impl Windows {
    pub fn new(window_instrs: u64, hpt: HptConfig) -> Result<Windows, SimError> {
        Ok(Windows {
            clock: WindowClock::new(window_instrs)?,
            table: WindowTable::new(hpt)?,
        })
    }

    /// A path popped in the current window (the caller also records it in
    /// the exact table).
    pub fn record(&mut self, path: &PathDescriptor, count: u64) {
        self.table.record(path, count);
    }

    /// `instrs` more instructions retired; closes the window when full and
    /// starts the exact table's next one.
    #[inline]
    pub fn advance(&mut self, instrs: u32, exact: &mut ExactTable) {
        if self.clock.tick(instrs) {
            self.table.close(exact, None);
            exact.next_window();
        }
    }

    /// The result so far, with the partial window if a path ended in it.
    pub fn result(&self, exact: &ExactTable) -> DynamicOverlap {
        self.table.result(exact, self.clock.window_instrs(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpt::{IndexFn, Replacement};

    fn p(start: u32) -> PathDescriptor {
        PathDescriptor::new(start)
    }

    fn hot(start: u32, weight: u64) -> HotPath {
        HotPath {
            path: p(start),
            weight,
        }
    }

    fn exact(weights: &[(u32, u64)]) -> ExactTable {
        let mut e = ExactTable::default();
        for &(s, w) in weights {
            e.update(&p(s), w);
        }
        e
    }

    fn close_to(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn complete_overlap_by_hand() {
        // hw A 3, B 1 (W1 = 4); exact A 5, B 3, C 2 (W2 = 10):
        // min(3/4, 5/10) + min(1/4, 3/10) = 0.5 + 0.25.
        let e = exact(&[(1, 5), (2, 3), (3, 2)]);
        assert!(close_to(overlap(&[hot(1, 3), hot(2, 1)], &e), 0.75));
        // Identical profiles overlap fully whatever their scale.
        assert!(close_to(
            overlap(&[hot(1, 10), hot(2, 6), hot(3, 4)], &e),
            1.0
        ));
        assert!(close_to(overlap(&[], &ExactTable::default()), 1.0));
        assert!(close_to(overlap(&[], &e), 0.0));
    }

    #[test]
    fn windows_restart_the_table() {
        // One entry, one way: each window keeps only its last path.
        let one = HptConfig {
            entries: 1,
            ways: 1,
            index: IndexFn::Address,
            replacement: Replacement::Lru,
        };
        let mut w = Windows::new(10, one).expect("valid");
        let mut e = ExactTable::default();
        // Per branch: the paths it pops, then the instructions it retires.
        // Window 1 (6 + 6 = 12, 2 carried): A 1, B 1; the table keeps B:
        // min(1, 1/2) = 0.5. Window 2 (2 + 8): A 3: 1.0. Partial window 3:
        // B 2, A 2; the table keeps A 2: min(1, 2/4) = 0.5.
        let steps: [(&[(u32, u64)], u32); 4] = [
            (&[(1, 1)], 6),
            (&[(2, 1)], 6),
            (&[(1, 3)], 8),
            (&[(2, 2), (1, 2)], 1),
        ];
        for (paths, instrs) in steps {
            for &(start, n) in paths {
                w.record(&p(start), n);
                e.update(&p(start), n);
            }
            w.advance(instrs, &mut e);
        }
        let r = w.result(&e);
        assert_eq!(r.per_window, vec![0.5, 1.0, 0.5]);
        assert!(r.partial_last);
        assert!(close_to(r.mean, 2.0 / 3.0));
        assert_eq!((e.total(), e.get(&p(1))), (9, 6), "run totals unaffected");
        assert!(Windows::new(0, one).is_err());
    }

    #[test]
    fn a_mirroring_table_equals_one_fed_from_the_start() {
        // 40 paths over 6 starts into a 2-entry table (evictions in every
        // window), windows of 7 instructions: the mirroring table, standing
        // in for its first window with the run's HPT, gives what a table
        // fed from the start does.
        let two = HptConfig {
            entries: 2,
            ways: 2,
            index: IndexFn::Address,
            replacement: Replacement::Lfu,
        };
        let mut plain = Windows::new(7, two).expect("valid");
        let mut run = HotPathTable::new(two).expect("valid");
        let mut mirror = WindowTable::mirroring(two).expect("valid");
        let mut clock = WindowClock::new(7).expect("valid");
        let (mut e1, mut e2) = (ExactTable::default(), ExactTable::default());
        for i in 0..40u32 {
            let (path, count, instrs) = (p(i * i % 6), u64::from(i % 3), i % 4);
            plain.record(&path, count);
            e1.update(&path, count);
            plain.advance(instrs, &mut e1);
            run.update(&path, count);
            mirror.record(&path, count);
            e2.update(&path, count);
            if clock.tick(instrs) {
                mirror.close(&e2, Some(&run));
                e2.next_window();
            }
        }
        let mirrored = mirror.result(&e2, 7, Some(&run));
        assert!(mirrored.per_window.len() > 5);
        assert_eq!(mirrored, plain.result(&e1));
    }
}
