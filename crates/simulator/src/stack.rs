//! The path stack (thesis 5.2): one entry per path in flight, with the four
//! profiler operations `path_stack_push`, `path_stack_pop`,
//! `path_stack_update` and `path_stack_update_count`.
//!
//! Each entry holds a [`PathDescriptor`], an event counter (what the block
//! event counter of each retiring branch adds, 5.3), a path extension
//! counter (extended paths, 5.2) and the number of procedure frames it stands
//! for (the thesis' "other path specific information"; see
//! [`crate::detector`] for why it is needed).
//!
//! The stack has a fixed depth (32 by default, as in 5.2). On overflow the
//! oldest entry is dropped, the first of the thesis' two choices ("ignoring
//! older entries"); drops are counted. Popping an empty stack is counted as an
//! underflow: it happens after an overflow, or when the stream starts inside
//! a procedure.
//!
//! Departures from the thesis:
//! - The event counter is 64 bits wide, not 8: the instructions metric would
//!   wrap an 8-bit counter on most paths, and the thesis does not say what the
//!   hardware does then.

use crate::descriptor::{Outcome, PathDescriptor};
use serde::{Deserialize, Serialize};

/// One path in flight.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StackEntry {
    pub path: PathDescriptor,
    /// Events of the configured metric along the path so far.
    pub events: u64,
    /// Backward branches or calls the path has been extended across.
    pub ext: u32,
    /// Procedure frames this entry stands for: 1, more only for paths
    /// extended across calls.
    pub frames: u32,
}

impl StackEntry {
    /// A fresh entry for a path starting at `start`, standing for `frames`
    /// frames; every other field is zero (`path_stack_push`).
    pub fn new(start: u32, frames: u32) -> StackEntry {
        StackEntry {
            path: PathDescriptor::new(start),
            events: 0,
            ext: 0,
            frames,
        }
    }
}

/// What the stack counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackStats {
    pub pushes: u64,
    pub pops: u64,
    /// Entries dropped from the bottom because the stack was full.
    pub overflows: u64,
    /// Pops of an empty stack.
    pub underflows: u64,
    /// Deepest the stack has been.
    pub max_depth: u32,
}

/// A fixed-depth stack whose oldest entry gives way on overflow (a ring
/// buffer: no allocation after construction).
#[derive(Clone, Debug)]
pub struct PathStack {
    ring: Box<[StackEntry]>,
    /// The slot of the top entry (of the last pushed when empty), so that
    /// reading the top, several times per branch, needs no arithmetic.
    top: usize,
    len: usize,
    stats: StackStats,
}

impl PathStack {
    /// A stack of `depth` entries (at least one).
    pub fn new(depth: usize) -> PathStack {
        let depth = depth.max(1);
        PathStack {
            ring: vec![StackEntry::default(); depth].into_boxed_slice(),
            top: depth - 1,
            len: 0,
            stats: StackStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn stats(&self) -> StackStats {
        self.stats
    }

    /// `path_stack_push`: a new top entry; the oldest is dropped when full.
    #[inline]
    pub fn push(&mut self, entry: StackEntry) {
        let depth = self.ring.len();
        self.top = if self.top + 1 == depth {
            0
        } else {
            self.top + 1
        };
        self.ring[self.top] = entry;
        if self.len == depth {
            self.stats.overflows += 1;
        } else {
            self.len += 1;
        }
        self.stats.pushes += 1;
        self.stats.max_depth = self.stats.max_depth.max(self.len as u32);
    }

    /// `path_stack_pop`: the top entry, or `None` (an underflow) if empty.
    #[inline]
    pub fn pop(&mut self) -> Option<StackEntry> {
        if self.len == 0 {
            self.stats.underflows += 1;
            return None;
        }
        let e = self.ring[self.top];
        self.top = if self.top == 0 {
            self.ring.len() - 1
        } else {
            self.top - 1
        };
        self.len -= 1;
        self.stats.pops += 1;
        Some(e)
    }

    #[inline]
    pub fn top_mut(&mut self) -> Option<&mut StackEntry> {
        if self.len == 0 {
            return None;
        }
        Some(&mut self.ring[self.top])
    }

    /// `path_stack_update`: records `outcome` on the top path and adds
    /// `events` to its counter. Returns the top entry, `None` if the stack
    /// is empty.
    #[inline]
    pub fn update(&mut self, outcome: Outcome, events: u64) -> Option<&mut StackEntry> {
        let top = self.top_mut()?;
        top.path.record(outcome);
        top.events += events;
        Some(top)
    }

    /// [`PathStack::update`], then a pop and a push of a fresh entry at
    /// `start` standing for the same frames, in place: the updated entry,
    /// or `None` (and nothing done) if the stack is empty. Counted as the
    /// pop and the push are; the push cannot overflow. The updated path is
    /// built in registers from one read of the entry, where updating it in
    /// place and reading it back stalled on store forwarding (a third of a
    /// backward branch's time).
    #[inline]
    pub fn update_and_restart(
        &mut self,
        outcome: Outcome,
        events: u64,
        start: u32,
    ) -> Option<StackEntry> {
        if self.len == 0 {
            return None;
        }
        let top = &mut self.ring[self.top];
        let mut e = *top;
        e.path.record(outcome);
        e.events += events;
        *top = StackEntry::new(start, e.frames);
        self.stats.pops += 1;
        self.stats.pushes += 1;
        Some(e)
    }

    /// `path_stack_update_count`: adds `events` to the top path's counter
    /// only. Returns false if the stack is empty.
    pub fn update_count(&mut self, events: u64) -> bool {
        match self.top_mut() {
            Some(top) => {
                top.events += events;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::BranchKind;

    fn starts(stack: &mut PathStack) -> Vec<u32> {
        std::iter::from_fn(|| stack.pop())
            .map(|e| e.path.start)
            .collect()
    }

    #[test]
    fn push_pop_is_lifo() {
        let mut s = PathStack::new(4);
        for a in [10, 20, 30] {
            s.push(StackEntry::new(a, 1));
        }
        assert_eq!(s.len(), 3);
        assert_eq!(starts(&mut s), vec![30, 20, 10]);
        assert_eq!(s.stats().underflows, 1, "the fourth pop found it empty");
        assert_eq!(s.stats().pops, 3);
    }

    #[test]
    fn overflow_drops_the_oldest() {
        // Depth 3, pushes 1..=5: 1 and 2 are dropped, 5 4 3 remain.
        let mut s = PathStack::new(3);
        for a in 1..=5 {
            s.push(StackEntry::new(a, 1));
        }
        let st = s.stats();
        assert_eq!((st.overflows, st.pushes, st.max_depth), (2, 5, 3));
        assert_eq!(starts(&mut s), vec![5, 4, 3]);
    }

    #[test]
    fn update_records_and_update_count_only_counts() {
        let mut s = PathStack::new(2);
        assert!(!s.update_count(3), "empty stack");
        s.push(StackEntry::new(8, 1));
        assert!(s
            .update(Outcome::of(BranchKind::Conditional { taken: true }), 4)
            .is_some());
        assert!(s.update_count(5));
        assert!(s
            .update(Outcome::of(BranchKind::Conditional { taken: false }), 1)
            .is_some());
        let e = s.pop().expect("one entry");
        assert_eq!((e.path.len, e.path.outcomes, e.events), (2, 0b01, 10));
    }
}
