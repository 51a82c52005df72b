//! A data-cache *model*: set-associative L1 and L2 with LRU replacement
//! (Table 5.3: 32KB direct-mapped L1 with 32-byte blocks, 512KB 4-way L2),
//! so that L1 and L2 misses can be the metric accumulated per path (5.3).
//! It is fed by a memory-access stream, [`CacheHierarchy::access`], separate
//! from the branch stream.
//!
//! Departures from the thesis (this is a model, not SimpleScalar):
//! - Stores allocate like loads (write-allocate) and write-backs are not
//!   modelled: a store misses and hits exactly as a load would.
//! - The L2 block size is not in Table 5.3; 64 bytes is SimpleScalar's
//!   default for its unified L2.
//! - No instruction cache: the L2 holds data only.

use crate::error::SimError;
use serde::{Deserialize, Serialize};

/// The largest cache accepted, in blocks.
pub const MAX_BLOCKS: u32 = 1 << 24;

/// One cache's shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    pub size_bytes: u32,
    pub block_bytes: u32,
    pub ways: u32,
}

/// The two levels.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HierarchyConfig {
    pub l1: CacheConfig,
    pub l2: CacheConfig,
}

impl Default for HierarchyConfig {
    /// Table 5.3.
    fn default() -> HierarchyConfig {
        HierarchyConfig {
            l1: CacheConfig {
                size_bytes: 32 * 1024,
                block_bytes: 32,
                ways: 1,
            },
            l2: CacheConfig {
                size_bytes: 512 * 1024,
                block_bytes: 64,
                ways: 4,
            },
        }
    }
}

/// One set-associative LRU cache of block tags.
#[derive(Clone, Debug)]
pub struct Cache {
    block_shift: u32,
    sets: usize,
    ways: usize,
    /// Block number + 1 per way (0: invalid), most recently used first.
    tags: Box<[u64]>,
}

impl Cache {
    pub fn new(what: &'static str, c: CacheConfig) -> Result<Cache, SimError> {
        let bad = |why: &str| SimError::Config {
            what,
            why: format!(
                "{} bytes, {}-byte blocks, {} ways: {why}",
                c.size_bytes, c.block_bytes, c.ways
            ),
        };
        if !c.block_bytes.is_power_of_two() || c.ways == 0 {
            return Err(bad("blocks must be a power of two and ways non-zero"));
        }
        let blocks = c.size_bytes / c.block_bytes;
        if blocks == 0 || !blocks.is_multiple_of(c.ways) || !(blocks / c.ways).is_power_of_two() {
            return Err(bad("the set count must be a non-zero power of two"));
        }
        if blocks > MAX_BLOCKS {
            return Err(bad("at most 2^24 blocks"));
        }
        Ok(Cache {
            block_shift: c.block_bytes.trailing_zeros(),
            sets: (blocks / c.ways) as usize,
            ways: c.ways as usize,
            tags: vec![0; blocks as usize].into_boxed_slice(),
        })
    }

    /// Looks up the block holding `addr`, allocating it on a miss (the LRU
    /// way goes). Returns whether it hit.
    pub fn access(&mut self, addr: u64) -> bool {
        let block = addr >> self.block_shift;
        let first = (block as usize & (self.sets - 1)) * self.ways;
        let set = &mut self.tags[first..first + self.ways];
        let tag = block + 1;
        let (hit, way) = match set.iter().position(|&t| t == tag) {
            Some(w) => (true, w),
            None => (false, self.ways - 1),
        };
        // Move to the front: ways before it age by one.
        set[..=way].rotate_right(1);
        set[0] = tag;
        hit
    }
}

/// Where an access was served.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Served {
    L1,
    L2,
    Memory,
}

/// Accesses and misses per level.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    pub accesses: u64,
    pub stores: u64,
    pub l1_misses: u64,
    pub l2_misses: u64,
}

/// L1 backed by L2.
#[derive(Clone, Debug)]
pub struct CacheHierarchy {
    l1: Cache,
    l2: Cache,
    stats: CacheStats,
}

impl CacheHierarchy {
    pub fn new(c: HierarchyConfig) -> Result<CacheHierarchy, SimError> {
        Ok(CacheHierarchy {
            l1: Cache::new("L1 cache", c.l1)?,
            l2: Cache::new("L2 cache", c.l2)?,
            stats: CacheStats::default(),
        })
    }

    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// One data access at byte address `addr`.
    pub fn access(&mut self, addr: u64, is_store: bool) -> Served {
        self.stats.accesses += 1;
        self.stats.stores += u64::from(is_store);
        if self.l1.access(addr) {
            return Served::L1;
        }
        self.stats.l1_misses += 1;
        if self.l2.access(addr) {
            return Served::L2;
        }
        self.stats.l2_misses += 1;
        Served::Memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size_bytes: u32, block_bytes: u32, ways: u32) -> Cache {
        let c = CacheConfig {
            size_bytes,
            block_bytes,
            ways,
        };
        Cache::new("test", c).expect("valid shape")
    }

    #[test]
    fn direct_mapped_conflicts() {
        // 4 blocks of 32 bytes: 0 and 128 both map to set 0.
        let mut c = cache(128, 32, 1);
        let hits: Vec<bool> = [0, 4, 128, 0, 32].iter().map(|&a| c.access(a)).collect();
        assert_eq!(hits, vec![false, true, false, false, false]);
    }

    #[test]
    fn two_way_lru() {
        // 4 sets of 2 ways: blocks 0, 4, 8 (addresses 0, 128, 256) share set
        // 0. 0 miss, 128 miss, 0 hit, 256 evicts 128 (LRU), 0 hit, 128 miss.
        let mut c = cache(256, 32, 2);
        let hits: Vec<bool> = [0, 128, 0, 256, 0, 128]
            .iter()
            .map(|&a| c.access(a))
            .collect();
        assert_eq!(hits, vec![false, false, true, false, true, false]);
    }

    #[test]
    fn l2_catches_l1_conflicts() {
        // L1: 2 sets direct-mapped, 0 and 64 conflict. L2: 4 sets of 2 ways,
        // 0 in set 0 and 64 in set 2. 0: memory; 64: memory (evicts 0 from
        // L1); 0: L2 hit; store to 4: L1 hit.
        let config = HierarchyConfig {
            l1: CacheConfig {
                size_bytes: 64,
                block_bytes: 32,
                ways: 1,
            },
            l2: CacheConfig {
                size_bytes: 256,
                block_bytes: 32,
                ways: 2,
            },
        };
        let mut h = CacheHierarchy::new(config).expect("valid");
        let served: Vec<Served> = [(0, false), (64, false), (0, false), (4, true)]
            .iter()
            .map(|&(a, s)| h.access(a, s))
            .collect();
        assert_eq!(
            served,
            vec![Served::Memory, Served::Memory, Served::L2, Served::L1]
        );
        let want = CacheStats {
            accesses: 4,
            stores: 1,
            l1_misses: 3,
            l2_misses: 2,
        };
        assert_eq!(h.stats(), want);
    }

    #[test]
    fn bad_shapes_are_errors() {
        for (size, block, ways) in [
            (128, 24, 1),
            (128, 32, 0),
            (96, 32, 1),
            (32, 64, 1),
            (1 << 30, 32, 1),
        ] {
            let c = CacheConfig {
                size_bytes: size,
                block_bytes: block,
                ways,
            };
            assert!(Cache::new("t", c).is_err(), "{size} {block} {ways}");
        }
        assert!(CacheHierarchy::new(HierarchyConfig::default()).is_ok());
    }
}
