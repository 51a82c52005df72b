//! The path detector (thesis 5.2): reads each retiring branch, asks the
//! [`Ppcr`] for its operations and performs them on the [`PathStack`],
//! handing every popped path to the collector (the Hot Path Table).
//!
//! Operations run in the thesis' fixed order: update or update_count, then
//! pop, then push. A push starts a path at the branch's target. An update
//! that fills the path (the maximum length, or the outcome bits of
//! [`crate::descriptor`]) splits it when the branch does not pop anyway: the
//! full path is popped and a new one pushed at the branch's target, as 5.2
//! describes.
//!
//! Stack repair (5.2 "path stack consistency"): a throw of `frames` frames
//! pops the entries standing for them, and the catch arrival pops the
//! handler frame's path and pushes one at the handler. The thrower's path
//! ends at the throw and is collected, as at a return (a trap at
//! `unreachable` is a throw nothing catches). The other paths these pops
//! take off were cut short by the exception; they are *discarded*, counted
//! (paths and events) but never collected: such a path has no end, and the
//! software profiler too counts a path only where it ends.
//!
//! Departures from the thesis:
//! - An entry records how many procedure frames it stands for (1 except for
//!   paths extended across calls). A path that ends inside an extended callee
//!   leaves its successor standing for the same frames, so later returns and
//!   throws still keep the stack in step with the program's frames.
//! - An update with an empty stack (the stream began inside a procedure, or
//!   an overflow lost the caller's entry) first pushes a path starting at the
//!   branch's own address: a *resync*. An update_count with an empty stack
//!   loses its events: *orphan* events. Both are counted.
//! - In [`PathType::Wpp`] entries do not stand for frames (the stack holds
//!   one entry), so a throw unwinds nothing but ends the thrower's path;
//!   the catch arrival discards the empty entry left in its place.
//! - Paths still on the stack when the stream ends are not collected, like
//!   the software profiler's paths in flight at an abrupt end.

use crate::descriptor::{Outcome, PathDescriptor};
use crate::event::{BranchEvent, BranchKind};
use crate::ppcr::{BranchClass, Extension, PathType, Ppcr, TopState};
use crate::stack::{PathStack, StackEntry, StackStats};
use serde::{Deserialize, Serialize};

/// Operations one branch performed, for the timing model.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    pub updates: u32,
    pub update_counts: u32,
    /// Pops that collected a path (each costs an HPT update).
    pub collected: u32,
    /// Pops that discarded a path or found the stack empty.
    pub other_pops: u32,
    pub pushes: u32,
}

/// What the detector counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectorStats {
    pub stack: StackStats,
    pub branches: u64,
    /// Paths handed to the collector.
    pub paths: u64,
    /// Paths ended because they were full.
    pub splits: u64,
    /// Paths started at a branch's own address on an empty stack.
    pub resyncs: u64,
    /// Events of update_count branches that found the stack empty.
    pub orphan_events: u64,
    /// Paths popped by a throw or a catch arrival, and their events.
    pub discarded_paths: u64,
    pub discarded_events: u64,
}

/// The path stack and the PPCR that drives it.
#[derive(Clone, Debug)]
pub struct PathDetector {
    ppcr: Ppcr,
    stack: PathStack,
    max_len: u32,
    stats: DetectorStats,
    /// Start addresses of the paths split because they were full (the
    /// first [`MAX_SPLIT_STARTS`]).
    split_starts: std::collections::BTreeSet<u32>,
}

/// Split paths whose start addresses are kept: enough to name every
/// function where paths were cut, bounded whatever the run.
pub const MAX_SPLIT_STARTS: usize = 4096;

impl PathDetector {
    /// A detector for `path_type` paths of at most `max_len` branches, with
    /// a stack of `depth` entries.
    pub fn new(path_type: PathType, max_len: u32, depth: usize) -> PathDetector {
        PathDetector {
            ppcr: Ppcr::new(path_type),
            stack: PathStack::new(depth),
            max_len: max_len.max(1),
            stats: DetectorStats::default(),
            split_starts: Default::default(),
        }
    }

    /// Start addresses of the paths split because they were full (and of
    /// the pieces that were split again), ascending; at most
    /// [`MAX_SPLIT_STARTS`].
    pub fn split_starts(&self) -> Vec<u32> {
        self.split_starts.iter().copied().collect()
    }

    pub fn stats(&self) -> DetectorStats {
        DetectorStats {
            stack: self.stack.stats(),
            ..self.stats
        }
    }

    /// Paths on the stack now (in flight).
    pub fn in_flight(&self) -> usize {
        self.stack.len()
    }

    /// Processes one branch whose block event counter is `events`, calling
    /// `collect` with every path it completes and that path's events.
    #[inline]
    pub fn step(
        &mut self,
        ev: &BranchEvent,
        events: u64,
        collect: &mut impl FnMut(PathDescriptor, u64),
    ) -> OpCounts {
        let class = BranchClass::of(ev);
        if class == BranchClass::Forward {
            self.forward(ev, events, collect)
        } else {
            self.step_other(ev, class, events, collect)
        }
    }

    /// [`PathDetector::step`] for a forward branch (most branches): it
    /// updates in every path type whatever the top entry holds, so the PPCR
    /// need not be asked.
    #[inline]
    pub fn forward(
        &mut self,
        ev: &BranchEvent,
        events: u64,
        collect: &mut impl FnMut(PathDescriptor, u64),
    ) -> OpCounts {
        self.stats.branches += 1;
        let mut c = OpCounts::default();
        if self.update(ev, events, Extension::None, &mut c) {
            self.split(ev, collect, &mut c);
        }
        c
    }

    /// [`PathDetector::step`] for the branches that are not forward.
    #[inline(never)]
    pub fn step_other(
        &mut self,
        ev: &BranchEvent,
        class: BranchClass,
        events: u64,
        collect: &mut impl FnMut(PathDescriptor, u64),
    ) -> OpCounts {
        self.stats.branches += 1;
        if class == BranchClass::Backward
            && !matches!(self.ppcr.path_type, PathType::ExtendedLoop { .. })
        {
            return self.backward(ev, events, collect);
        }
        // Only extended paths read the top entry's counters.
        let top = match self.ppcr.path_type {
            PathType::Bl | PathType::Wpp => None,
            _ => self.stack.top_mut().map(|t| TopState {
                ext: t.ext,
                frames: t.frames,
            }),
        };
        let ops = self.ppcr.ops(class, top);
        let mut c = OpCounts::default();
        let mut full = false;
        if ops.update {
            full = self.update(ev, events, ops.extension, &mut c);
        } else if ops.update_count {
            c.update_counts += 1;
            if !self.stack.update_count(events) {
                self.stats.orphan_events += events;
            }
        }
        if let BranchKind::Unwind { frames } = ev.kind {
            // No thrower's path ends. WPP entries do not stand for frames:
            // the one path in flight is cut short, whatever comes next (a
            // catch arrival, or a callback's call).
            match self.ppcr.path_type {
                PathType::Wpp => {
                    if let Some(e) = self.pop(&mut c) {
                        self.discard(e);
                    }
                }
                _ => self.unwind(frames, &mut c),
            }
            return c;
        }
        if let BranchKind::Throw { frames } = ev.kind {
            // WPP entries do not stand for frames: only the thrower's path
            // ends.
            let frames = if self.ppcr.path_type == PathType::Wpp {
                0
            } else {
                frames
            };
            self.throw(ev, frames, collect, &mut c);
            return c;
        }
        let mut frames = 1;
        if ops.pop {
            if let Some(e) = self.pop(&mut c) {
                frames = match class {
                    BranchClass::Return => e.frames.saturating_sub(1).max(1),
                    _ => e.frames,
                };
                if class == BranchClass::Catch {
                    self.discard(e);
                } else {
                    self.emit(e, collect, &mut c);
                }
            }
        } else if full {
            frames = self.split(ev, collect, &mut c);
        }
        if ops.push {
            c.pushes += 1;
            self.stack.push(StackEntry::new(ev.target, frames));
        }
        c
    }

    /// A backward branch outside loop mode: update, pop, push (Tables 5.1
    /// and 5.2 alike, whatever the top entry holds), the pop and push done
    /// in place on the top slot.
    fn backward(
        &mut self,
        ev: &BranchEvent,
        events: u64,
        collect: &mut impl FnMut(PathDescriptor, u64),
    ) -> OpCounts {
        let mut c = OpCounts::default();
        // The path ends here anyway, so whether it is full does not matter.
        if self.stack.is_empty() {
            self.resync(ev, &mut c);
        }
        c.updates += 1;
        c.pushes += 1;
        let outcome = Outcome::of(ev.kind);
        match self.stack.update_and_restart(outcome, events, ev.target) {
            Some(e) => self.emit(e, collect, &mut c),
            // Not reached: the update leaves an entry (a resync if need be).
            None => {
                let underflow = self.pop(&mut c);
                debug_assert!(underflow.is_none());
                self.stack.push(StackEntry::new(ev.target, 1));
            }
        }
        c
    }

    /// Ends the full top path and starts the next at the branch's target,
    /// standing for the same frames; returns them (1 on an empty stack).
    fn split(
        &mut self,
        ev: &BranchEvent,
        collect: &mut impl FnMut(PathDescriptor, u64),
        c: &mut OpCounts,
    ) -> u32 {
        let Some(e) = self.pop(c) else { return 1 };
        self.stats.splits += 1;
        if self.split_starts.len() < MAX_SPLIT_STARTS {
            self.split_starts.insert(e.path.start);
        }
        let frames = e.frames;
        self.emit(e, collect, c);
        c.pushes += 1;
        self.stack.push(StackEntry::new(ev.target, frames));
        frames
    }

    /// `path_stack_update`, and the extension counters; returns whether the
    /// path is now full.
    #[inline(always)]
    fn update(&mut self, ev: &BranchEvent, events: u64, ext: Extension, c: &mut OpCounts) -> bool {
        if self.stack.is_empty() {
            self.resync(ev, c);
        }
        c.updates += 1;
        let max_len = self.max_len;
        let Some(top) = self.stack.update(Outcome::of(ev.kind), events) else {
            return false;
        };
        match ext {
            Extension::None => {}
            Extension::Loop => top.ext += 1,
            Extension::CallIn => {
                top.ext += 1;
                top.frames += 1;
            }
            Extension::CallOut => {
                top.ext -= 1;
                top.frames -= 1;
            }
        }
        top.path.is_full(max_len)
    }

    #[cold]
    fn resync(&mut self, ev: &BranchEvent, c: &mut OpCounts) {
        self.stats.resyncs += 1;
        c.pushes += 1;
        self.stack.push(StackEntry::new(ev.address, 1));
    }

    fn pop(&mut self, c: &mut OpCounts) -> Option<StackEntry> {
        let e = self.stack.pop();
        if e.is_none() {
            c.other_pops += 1;
        }
        e
    }

    fn emit(
        &mut self,
        e: StackEntry,
        collect: &mut impl FnMut(PathDescriptor, u64),
        c: &mut OpCounts,
    ) {
        c.collected += 1;
        self.stats.paths += 1;
        collect(e.path, e.events);
    }

    fn discard(&mut self, e: StackEntry) {
        self.stats.discarded_paths += 1;
        self.stats.discarded_events += e.events;
    }

    /// A throw (or a trap at `unreachable`) that unwinds `frames` frames
    /// above the one that catches: the thrower's path ends at the throw and
    /// is collected, as a path ends at a return (the software profiler
    /// counts it there too); the paths of the other frames unwound are cut
    /// short and discarded. When the thrower's entry also stands for the
    /// catching frame (caught where it was thrown, or a path extended across
    /// calls), an empty entry stands in for that frame until the catch
    /// arrival discards it.
    fn throw(
        &mut self,
        ev: &BranchEvent,
        frames: u32,
        collect: &mut impl FnMut(PathDescriptor, u64),
        c: &mut OpCounts,
    ) {
        let Some(e) = self.pop(c) else { return };
        let covered = e.frames;
        self.emit(e, collect, c);
        if covered > frames {
            self.stack
                .push(StackEntry::new(ev.address, covered - frames));
        } else {
            self.unwind(frames - covered, c);
        }
    }

    /// Pops the entries standing for the `frames` innermost frames.
    fn unwind(&mut self, mut frames: u32, c: &mut OpCounts) {
        while frames > 0 {
            if let Some(top) = self.stack.top_mut() {
                if top.frames > frames {
                    top.frames -= frames;
                    top.ext = top.ext.saturating_sub(frames);
                    return;
                }
            }
            c.other_pops += 1;
            // An empty stack counts an underflow and ends the unwinding.
            let Some(e) = self.stack.pop() else { return };
            frames -= e.frames;
            self.discard(e);
        }
    }
}

#[cfg(test)]
mod tests;
