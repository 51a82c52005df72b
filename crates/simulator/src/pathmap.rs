//! A hash map keyed by path descriptors for the exact table, which looks up
//! one descriptor per collected path: open addressing with linear probing
//! in a table at most half full, the descriptor folded to one word and
//! multiplied once (Fibonacci hashing, the top bits pick the slot).
//!
//! Why not `FxHashMap`: the entry API of `hashbrown` cost about 110
//! instructions per update here (hashing through `Hasher`, group probing,
//! the entry's indirection), this about 30; keys are never removed, so the
//! map needs only insertion, lookup and iteration.

use crate::descriptor::PathDescriptor;

#[derive(Clone, Debug, Default)]
struct Slot<V> {
    key: PathDescriptor,
    value: V,
    full: bool,
}

/// Descriptor -> `V`, no removal.
#[derive(Clone, Debug)]
pub struct PathMap<V> {
    slots: Box<[Slot<V>]>,
    len: usize,
    /// 64 less log2 of the slot count.
    shift: u32,
    /// The slot of the key looked up last: a run of one path finds it
    /// without hashing.
    last: usize,
}

impl<V: Clone + Default> Default for PathMap<V> {
    fn default() -> Self {
        PathMap {
            slots: Box::default(),
            len: 0,
            shift: 64,
            last: 0,
        }
    }
}

fn hash(p: &PathDescriptor) -> u64 {
    let head = u64::from(p.start) | u64::from(p.len) << 32 | u64::from(p.nbits) << 48;
    let (lo, hi) = (p.outcomes as u64, (p.outcomes >> 64) as u64);
    (head ^ lo.rotate_left(21) ^ hi.rotate_left(43)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl<V: Clone + Default> PathMap<V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot holding `key`, or the empty one where it would go.
    #[inline]
    fn find(&self, key: &PathDescriptor) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (hash(key) >> self.shift) as usize;
        loop {
            let s = &self.slots[i];
            if !s.full || s.key == *key {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    pub fn get(&self, key: &PathDescriptor) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let s = &self.slots[self.find(key)];
        s.full.then_some(&s.value)
    }

    /// `key`'s value, inserted as `fresh()` if absent.
    #[inline]
    pub fn get_or_insert(&mut self, key: &PathDescriptor, fresh: impl FnOnce() -> V) -> &mut V {
        if self
            .slots
            .get(self.last)
            .is_some_and(|s| s.full && s.key == *key)
        {
            return &mut self.slots[self.last].value;
        }
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.find(key);
        let s = &mut self.slots[i];
        if !s.full {
            *s = Slot {
                key: *key,
                value: fresh(),
                full: true,
            };
            self.len += 1;
        }
        self.last = i;
        &mut self.slots[i].value
    }

    #[cold]
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(64);
        let old = std::mem::replace(
            &mut self.slots,
            vec![Slot::default(); size].into_boxed_slice(),
        );
        self.shift = 64 - size.trailing_zeros();
        for s in old.into_vec().into_iter().filter(|s| s.full) {
            let i = self.find(&s.key);
            self.slots[i] = s;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathDescriptor, &V)> {
        self.slots
            .iter()
            .filter(|s| s.full)
            .map(|s| (&s.key, &s.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn agrees_with_std_hashmap_through_growth() {
        // Keys differing only in one field at a time (start, len, nbits,
        // low and high outcome words), many times the first table's size.
        let mut map: PathMap<u64> = PathMap::default();
        let mut std_map: HashMap<PathDescriptor, u64> = HashMap::new();
        assert_eq!(map.get(&PathDescriptor::default()), None);
        for i in 0..5000u32 {
            let key = PathDescriptor {
                start: i % 37,
                len: (i % 5) as u16,
                nbits: (i % 3) as u16,
                outcomes: u128::from(i / 7) | u128::from(i % 11) << 100,
            };
            *map.get_or_insert(&key, || 0) += u64::from(i);
            *std_map.entry(key).or_insert(0) += u64::from(i);
        }
        assert_eq!(map.len(), std_map.len());
        for (k, v) in &std_map {
            assert_eq!(map.get(k), Some(v), "{k:?}");
        }
        let mut listed: Vec<_> = map.iter().map(|(k, v)| (*k, *v)).collect();
        let mut expected: Vec<_> = std_map.into_iter().collect();
        listed.sort_unstable();
        expected.sort_unstable();
        assert_eq!(listed, expected);
        let absent = PathDescriptor::new(1000);
        assert_eq!(map.get(&absent), None);
    }
}
