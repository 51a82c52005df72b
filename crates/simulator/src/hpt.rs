//! The Hot Path Table (thesis 5.4, Fig. 5.6): a set-associative table of
//! path descriptors with 32-bit accumulators, indexed by bits of the incoming
//! path's descriptor, and an unbounded table that keeps the exact profile
//! (the thesis' "infinitely large HPT", 5.5).
//!
//! A lookup that finds the path adds its count to the accumulator; a miss
//! replaces an entry of the indexed set, chosen by the replacement policy,
//! with the incoming path and its count.
//!
//! Index functions, for a table of `sets = entries / ways` sets (a power of
//! two):
//! - [`IndexFn::Address`]: `start mod sets`, the low bits of the starting
//!   address (WebAssembly addresses are byte offsets, so no bits are shifted
//!   off).
//! - [`IndexFn::Xor`]: `(start ^ len ^ fold(outcomes)) mod sets`, where
//!   `fold` xors the four 32-bit words of the 128 outcome bits.
//!
//! Replacement: [`Replacement::Lfu`] (the thesis' choice) evicts the entry
//! with the smallest accumulator, [`Replacement::Lru`] the least recently
//! looked-up one; both take an invalid entry first. Two more, not in the
//! thesis, keep LFU's victim but change what a miss does, at no extra
//! storage (the same descriptor and 32-bit accumulator per entry):
//! - [`Replacement::SpaceSaving`] (Metwally, Agrawal & El Abbadi, ICDT
//!   2005): the incoming path inherits the victim's accumulator, plus its
//!   own count. A path that keeps coming back climbs past stale entries
//!   instead of restarting at its count in the one way LFU keeps
//!   recycling; its weight is an overestimate by at most what it inherited.
//! - [`Replacement::Frequent`] (the "Frequent" algorithm of Misra & Gries
//!   1982, Demaine et al. 2002, Karp et al. 2003, per set): a frequency-aware
//!   admission filter. A miss takes its count off the victim's accumulator
//!   instead of evicting it; the incoming path is admitted only when the
//!   victim's accumulator is no larger than its count. Established paths
//!   thus survive a stream of cold ones; a rejected path is not recorded.
//!
//! Departures from the thesis:
//! - The thesis does not say how LFU breaks ties; here the least recently
//!   used of the smallest accumulators goes.
//! - An accumulator that would pass 2^32 - 1 stays there; such additions are
//!   counted as saturations.

use crate::descriptor::PathDescriptor;
use crate::error::SimError;
use crate::pathmap::PathMap;
use serde::{Deserialize, Serialize};

/// The largest HPT accepted (the thesis' largest is 2048 entries).
pub const MAX_HPT_ENTRIES: u32 = 1 << 24;

/// How a descriptor picks its HPT set.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexFn {
    /// Bits of the starting address.
    Address,
    /// Starting address xor length xor folded outcome bits.
    #[default]
    Xor,
}

impl IndexFn {
    /// The set of `path` in a table of `sets` sets (a power of two).
    pub fn set_of(self, path: &PathDescriptor, sets: usize) -> usize {
        let h = match self {
            IndexFn::Address => path.start,
            IndexFn::Xor => path.start ^ u32::from(path.len) ^ fold(path.outcomes),
        };
        h as usize & (sets - 1)
    }
}

fn fold(o: u128) -> u32 {
    (o as u32) ^ ((o >> 32) as u32) ^ ((o >> 64) as u32) ^ ((o >> 96) as u32)
}

/// Which entry of a full set a miss replaces.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// Least frequently used: the smallest accumulator.
    #[default]
    Lfu,
    /// Least recently used.
    Lru,
    /// LFU's victim, whose accumulator the incoming path inherits.
    SpaceSaving,
    /// LFU's victim, decremented by the incoming count until it is no
    /// larger than that count, then replaced (an admission filter).
    Frequent,
}

impl Replacement {
    /// The way of `set` to replace.
    fn victim(self, set: &[Entry]) -> usize {
        if let Some(free) = set.iter().position(|e| !e.valid) {
            return free;
        }
        let key = |e: &Entry| match self {
            Replacement::Lfu | Replacement::SpaceSaving | Replacement::Frequent => {
                (u64::from(e.count), e.last_use)
            }
            Replacement::Lru => (e.last_use, 0),
        };
        (0..set.len()).min_by_key(|&w| key(&set[w])).unwrap_or(0)
    }
}

/// Size and policies of a Hot Path Table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HptConfig {
    pub entries: u32,
    pub ways: u32,
    pub index: IndexFn,
    pub replacement: Replacement,
}

impl Default for HptConfig {
    /// The thesis' chosen table: 512 entries, 4 ways, xor index, LFU.
    fn default() -> HptConfig {
        HptConfig {
            entries: 512,
            ways: 4,
            index: IndexFn::Xor,
            replacement: Replacement::Lfu,
        }
    }
}

impl HptConfig {
    /// Number of sets, if the shape is valid: `ways` divides `entries` and
    /// the set count is a power of two.
    pub fn sets(&self) -> Result<usize, SimError> {
        let bad = |why| SimError::Hpt {
            entries: self.entries,
            ways: self.ways,
            why,
        };
        if self.ways == 0 || self.entries == 0 || !self.entries.is_multiple_of(self.ways) {
            return Err(bad("ways must divide entries, both non-zero"));
        }
        if self.entries > MAX_HPT_ENTRIES {
            return Err(bad("at most 2^24 entries"));
        }
        let sets = self.entries / self.ways;
        if !sets.is_power_of_two() {
            return Err(bad("entries / ways must be a power of two"));
        }
        Ok(sets as usize)
    }
}

/// What the table counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HptStats {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    /// Misses that replaced a valid entry.
    pub evictions: u64,
    /// Additions that would have passed the 32-bit accumulator.
    pub saturations: u64,
    /// Misses that [`Replacement::Frequent`] did not admit (the victim's
    /// accumulator was decremented instead).
    #[serde(default)]
    pub rejections: u64,
}

/// One path of a profile and its accumulated metric.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HotPath {
    pub path: PathDescriptor,
    pub weight: u64,
}

#[derive(Copy, Clone, Debug, Default)]
struct Entry {
    path: PathDescriptor,
    count: u32,
    last_use: u64,
    valid: bool,
}

/// A set-associative Hot Path Table.
#[derive(Clone, Debug)]
pub struct HotPathTable {
    config: HptConfig,
    sets: usize,
    ways: usize,
    entries: Box<[Entry]>,
    clock: u64,
    stats: HptStats,
    /// The entry the last update hit or filled: a loop that takes one path
    /// again and again finds it there without indexing its set. (A path is
    /// in at most one entry, so this is the entry the set's search finds.)
    last: usize,
}

impl HotPathTable {
    pub fn new(config: HptConfig) -> Result<HotPathTable, SimError> {
        let sets = config.sets()?;
        Ok(HotPathTable {
            config,
            sets,
            ways: config.ways as usize,
            entries: vec![Entry::default(); config.entries as usize].into_boxed_slice(),
            clock: 0,
            stats: HptStats::default(),
            last: 0,
        })
    }

    pub fn config(&self) -> HptConfig {
        self.config
    }

    pub fn stats(&self) -> HptStats {
        self.stats
    }

    /// Adds `count` to `path`'s accumulator, replacing an entry on a miss.
    /// Returns whether the lookup hit.
    pub fn update(&mut self, path: &PathDescriptor, count: u64) -> bool {
        self.stats.lookups += 1;
        self.clock += 1;
        let holds = |e: &Entry| e.valid && e.path == *path;
        if self.entries.get(self.last).is_some_and(holds) {
            return self.hit(self.last, count);
        }
        let first = self.config.index.set_of(path, self.sets) * self.ways;
        if let Some(w) = self.entries[first..first + self.ways]
            .iter()
            .position(holds)
        {
            return self.hit(first + w, count);
        }
        let set = &mut self.entries[first..first + self.ways];
        self.stats.misses += 1;
        let replacement = self.config.replacement;
        let way = replacement.victim(set);
        let victim = &mut set[way];
        let mut start = 0;
        if victim.valid {
            match replacement {
                Replacement::Frequent if u64::from(victim.count) > count => {
                    // count < victim.count <= u32::MAX: no wrap.
                    victim.count -= count as u32;
                    self.stats.rejections += 1;
                    return false;
                }
                Replacement::SpaceSaving => start = victim.count,
                _ => {}
            }
            self.stats.evictions += 1;
        }
        *victim = Entry {
            path: *path,
            count: saturating_add(start, count, &mut self.stats.saturations),
            last_use: self.clock,
            valid: true,
        };
        self.last = first + way;
        false
    }

    /// A hit on entry `i`: `count` added to it. True.
    fn hit(&mut self, i: usize, count: u64) -> bool {
        self.last = i;
        let e = &mut self.entries[i];
        self.stats.hits += 1;
        e.last_use = self.clock;
        e.count = saturating_add(e.count, count, &mut self.stats.saturations);
        true
    }

    /// The paths in the table, heaviest first (ties by descriptor).
    pub fn dump(&self) -> Vec<HotPath> {
        let mut out: Vec<HotPath> = self
            .entries
            .iter()
            .filter(|e| e.valid)
            .map(|e| HotPath {
                path: e.path,
                weight: u64::from(e.count),
            })
            .collect();
        sort_profile(&mut out);
        out
    }

    /// Empties the table and its statistics (a new profiling interval).
    pub fn clear(&mut self) {
        self.entries.fill(Entry::default());
        self.stats = HptStats::default();
    }
}

fn saturating_add(acc: u32, count: u64, saturations: &mut u64) -> u32 {
    let sum = u64::from(acc) + count;
    u32::try_from(sum).unwrap_or_else(|_| {
        *saturations += 1;
        u32::MAX
    })
}

/// Heaviest first, ties by descriptor, so dumps compare across runs.
pub fn sort_profile(p: &mut [HotPath]) {
    p.sort_unstable_by(|a, b| b.weight.cmp(&a.weight).then(a.path.cmp(&b.path)));
}

/// The unbounded table: every path with its exact 64-bit total, and its
/// total within the current window (for the dynamic overlap), so that one
/// hash lookup per path serves both.
#[derive(Clone, Debug, Default)]
pub struct ExactTable {
    map: PathMap<Exact>,
    total: u64,
    window: Window,
}

#[derive(Copy, Clone, Debug, Default)]
struct Exact {
    total: u64,
    /// The weight within window `epoch`; stale when that is not the current.
    window: u64,
    epoch: u32,
}

#[derive(Copy, Clone, Debug, Default)]
struct Window {
    epoch: u32,
    total: u64,
    paths: u64,
}

impl ExactTable {
    pub fn update(&mut self, path: &PathDescriptor, count: u64) {
        let epoch = self.window.epoch;
        let e = self.map.get_or_insert(path, || Exact {
            epoch,
            ..Exact::default()
        });
        if e.epoch != epoch {
            e.epoch = epoch;
            e.window = 0;
        }
        e.total += count;
        e.window += count;
        self.total += count;
        self.window.total += count;
        self.window.paths += 1;
    }

    pub fn get(&self, path: &PathDescriptor) -> u64 {
        self.map.get(path).map_or(0, |e| e.total)
    }

    /// `path`'s weight within the current window.
    pub fn window_get(&self, path: &PathDescriptor) -> u64 {
        match self.map.get(path) {
            Some(e) if e.epoch == self.window.epoch => e.window,
            _ => 0,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn window_total(&self) -> u64 {
        self.window.total
    }

    /// Paths that ended in the current window.
    pub fn window_paths(&self) -> u64 {
        self.window.paths
    }

    /// Starts a new window (every path's window weight becomes 0).
    pub fn next_window(&mut self) {
        self.window = Window {
            epoch: self.window.epoch.wrapping_add(1),
            ..Window::default()
        };
    }

    /// Every path, heaviest first (ties by descriptor).
    pub fn dump(&self) -> Vec<HotPath> {
        let mut out: Vec<HotPath> = self
            .map
            .iter()
            .map(|(&path, e)| HotPath {
                path,
                weight: e.total,
            })
            .collect();
        sort_profile(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::path;

    fn table(entries: u32, ways: u32, replacement: Replacement) -> HotPathTable {
        let config = HptConfig {
            entries,
            ways,
            index: IndexFn::Address,
            replacement,
        };
        HotPathTable::new(config).expect("valid shape")
    }

    fn weights(t: &HotPathTable) -> Vec<(u32, u64)> {
        t.dump().iter().map(|h| (h.path.start, h.weight)).collect()
    }

    #[test]
    fn index_functions() {
        // 0x1234 = ...0100 in its low 4 bits; 16 sets.
        let p = path(0x1234, 3, 0b101);
        assert_eq!(IndexFn::Address.set_of(&p, 16), 4);
        // 0x1234 ^ 3 ^ 5 = 0x1234 ^ 6 = 0x1232 -> 2.
        assert_eq!(IndexFn::Xor.set_of(&p, 16), 2);
        // Outcome words fold: bit 64 cancels bit 0, leaving 0x1234 ^ 1 -> 5.
        let q = path(0x1234, 1, (1 << 64) | 1);
        assert_eq!(IndexFn::Xor.set_of(&q, 16), 5);
    }

    /// A, B(5), A, C, D into one 2-way set: A B A hit A; C and D miss.
    fn one_set_sequence(t: &mut HotPathTable) {
        let (a, b, c, d) = (path(1, 0, 0), path(2, 0, 0), path(3, 0, 0), path(4, 0, 0));
        t.update(&a, 1);
        t.update(&b, 5);
        assert!(t.update(&a, 1));
        assert!(!t.update(&c, 1));
        assert!(!t.update(&d, 1));
    }

    #[test]
    fn lfu_evicts_the_smallest_accumulator() {
        // A=2 B=5; C evicts A (2 < 5); D evicts C (1 < 5).
        let mut t = table(2, 2, Replacement::Lfu);
        one_set_sequence(&mut t);
        assert_eq!(weights(&t), vec![(2, 5), (4, 1)]);
        let s = t.stats();
        assert_eq!((s.lookups, s.hits, s.misses, s.evictions), (5, 1, 4, 2));
    }

    #[test]
    fn lru_evicts_the_least_recently_used() {
        // After A B A: B is older; C evicts B; then A is older; D evicts A.
        let mut t = table(2, 2, Replacement::Lru);
        one_set_sequence(&mut t);
        assert_eq!(weights(&t), vec![(3, 1), (4, 1)]);
    }

    #[test]
    fn lfu_ties_go_to_the_least_recently_used() {
        let mut t = table(2, 2, Replacement::Lfu);
        t.update(&path(1, 0, 0), 1);
        t.update(&path(2, 0, 0), 1);
        t.update(&path(3, 0, 0), 1); // both at 1: path 1 is older
        assert_eq!(weights(&t), vec![(2, 1), (3, 1)]);
    }

    #[test]
    fn space_saving_inherits_the_victims_accumulator() {
        // A=2 B=5 after A B A. C misses: the LFU victim is A (2), C takes
        // 2 + 1 = 3. D misses: victim C (3 < 5), D takes 3 + 1 = 4. B hits
        // with 2: 7. E with 4: victim D (4 < 7), E takes 4 + 4 = 8.
        let mut t = table(2, 2, Replacement::SpaceSaving);
        one_set_sequence(&mut t);
        assert_eq!(weights(&t), vec![(2, 5), (4, 4)]);
        assert!(t.update(&path(2, 0, 0), 2));
        assert!(!t.update(&path(5, 0, 0), 4));
        assert_eq!(weights(&t), vec![(5, 8), (2, 7)]);
        let s = t.stats();
        assert_eq!((s.lookups, s.hits, s.misses, s.evictions), (7, 2, 5, 3));
    }

    #[test]
    fn frequent_admits_only_past_the_victims_accumulator() {
        // A=2 B=5 after A B A. C (1) misses: the victim A has 2 > 1, so A
        // drops to 1 and C is rejected. D (1): A has 1, not > 1: D replaces
        // A with its own count, 1.
        let mut t = table(2, 2, Replacement::Frequent);
        one_set_sequence(&mut t);
        assert_eq!(weights(&t), vec![(2, 5), (4, 1)]);
        let s = t.stats();
        assert_eq!(
            (s.lookups, s.hits, s.misses, s.evictions, s.rejections),
            (5, 1, 4, 1, 1)
        );
        // E with 3: the victim D (1) is no larger, E enters with 3. F with
        // 2: the victim is E (3 < 5); 3 > 2, so E keeps 1 and F is out.
        // G with 1: E (1) goes, G enters with 1.
        assert!(!t.update(&path(5, 0, 0), 3));
        assert!(!t.update(&path(6, 0, 0), 2));
        assert_eq!(weights(&t), vec![(2, 5), (5, 1)]);
        assert!(!t.update(&path(7, 0, 0), 1));
        assert_eq!(weights(&t), vec![(2, 5), (7, 1)]);
        assert_eq!(t.stats().rejections, 2);
    }

    #[test]
    fn new_policies_fill_invalid_ways_first() {
        // Two ways, two paths: no victim, nothing inherited or rejected.
        for r in [Replacement::SpaceSaving, Replacement::Frequent] {
            let mut t = table(2, 2, r);
            t.update(&path(1, 0, 0), 9);
            t.update(&path(2, 0, 0), 1);
            assert_eq!(weights(&t), vec![(1, 9), (2, 1)], "{r:?}");
            assert_eq!((t.stats().evictions, t.stats().rejections), (0, 0));
        }
    }

    #[test]
    fn sets_conflict_only_within_themselves() {
        // 4 sets of 1 way, address index: 0 and 4 share set 0, 1 is alone.
        let mut t = table(4, 1, Replacement::Lfu);
        t.update(&path(0, 0, 0), 3);
        t.update(&path(1, 0, 0), 1);
        t.update(&path(4, 0, 0), 1);
        assert_eq!(weights(&t), vec![(1, 1), (4, 1)]);
        assert_eq!(t.stats().evictions, 1);
    }

    #[test]
    fn accumulators_saturate_at_32_bits() {
        let mut t = table(2, 2, Replacement::Lfu);
        let p = path(9, 0, 0);
        t.update(&p, u64::from(u32::MAX) - 1);
        t.update(&p, 5);
        t.update(&path(10, 0, 0), 1 << 40);
        assert_eq!(
            weights(&t),
            vec![(9, u32::MAX.into()), (10, u32::MAX.into())]
        );
        assert_eq!(t.stats().saturations, 2);
    }

    #[test]
    fn bad_shapes_are_errors() {
        for (entries, ways) in [(0, 1), (8, 0), (12, 4), (8, 3), (1 << 25, 1)] {
            let c = HptConfig {
                entries,
                ways,
                ..HptConfig::default()
            };
            assert!(
                HotPathTable::new(c).is_err(),
                "{entries} entries {ways} ways"
            );
        }
    }

    #[test]
    fn exact_table_keeps_every_path() {
        let mut e = ExactTable::default();
        for (s, n) in [(1, 2), (2, 7), (1, 3)] {
            e.update(&path(s, 0, 0), n);
        }
        let got: Vec<_> = e.dump().iter().map(|h| (h.path.start, h.weight)).collect();
        assert_eq!(got, vec![(2, 7), (1, 5)]);
        assert_eq!((e.total(), e.len()), (12, 2));
        // A new window: totals stay, window weights restart.
        e.next_window();
        e.update(&path(2, 0, 0), 4);
        assert_eq!(
            (e.get(&path(2, 0, 0)), e.window_get(&path(2, 0, 0))),
            (11, 4)
        );
        assert_eq!(
            (e.get(&path(1, 0, 0)), e.window_get(&path(1, 0, 0))),
            (5, 0)
        );
        assert_eq!((e.window_total(), e.window_paths()), (4, 1));
    }
}
