//! The counter memory: where each instrumented function's counters live, and
//! how to read them back.
//!
//! ```text
//! offset 0   "PATHPROF"            magic
//!        8   u32 layout version    (LAYOUT_VERSION)
//!       12   u32 number of functions in the layout
//!       16   u32 technique         the caller's code for what it instrumented for
//!       20   u32 0                 (reserved)
//!       24   32 bytes              SHA-256 of the original module
//!       56   32 bytes              instrumentation hash (CounterLayout::instrumentation_hash)
//!       88   the stack region, when the module plan asks for one
//!            (ModulePlan::stack_bytes, 8-aligned; interprocedural PPP)
//!            per function, in plan order, each part 8-aligned:
//!              path table   Array: len x u64 counters, indexed by path number
//!                           Hash:  a 32-byte header then capacity x 16-byte entries
//!              slots        slots x u64 counters
//!              PPP table    ppp_len x { u64 Ball-Larus id, u64 count }
//! ```
//!
//! The header (88 bytes, [`CounterHeader`]) is written by the module's own
//! data segments, so a host that saves the memory saves it with the
//! counters: a reader compares it with what it expects ([`read_header`])
//! and can refuse the counters of another module, of another technique or
//! of other options instead of decoding garbage. What the module and the
//! technique are is the caller's to say ([`CounterIdentity`]); the
//! instrumentation hash covers the caller's digest of its plans and this
//! layout.
//!
//! A PPP table (preferential path profiling, Vaswani thesis 3.2.3) is indexed
//! by PPP id - min; its Ball-Larus ids are set by the module's data segments
//! (`PPP_HOLE`, 2^64 - 1, where no interesting path has the id) and only the
//! counts change.
//!
//! A hash table (Ball & Larus section 5.3) is
//! ```text
//!   +0  u32 mask (capacity - 1)     +4  u32 probe limit
//!   +8  u64 lost                    counts dropped because no slot was found
//!  +16  u64 last key + 1            the fast path: the key counted last ...
//!  +24  u32 last entry address      ... and its entry
//!  +28  u32 overflow table           the newest, or 0
//!  +32  entries: { u64 key + 1 (0 = empty), u64 count }
//! ```
//! Keys are stored as path + 1 so that zeroed memory means "empty"; the one
//! path number that cannot be stored is 2^64 - 1. All integers are
//! little-endian, as WebAssembly memory is. The module's data segments
//! write each table's mask and probe limit, but for the tables of
//! [`ZERO_HEADER_CAPACITY`] entries, which start all zero (a probe limit of
//! 0 says so) and which the helper sets up on their first count: a large
//! module has more such tables than a module may have data segments.
//!
//! Overflow (a departure from the paper, whose table could fill): when the
//! helper finds no entry for a key within the probe limit, it grows the
//! memory by a table of twice the capacity of the one that filled, with the
//! same header, links it in and counts the key there. The function's own
//! table holds the newest overflow table at +28, each overflow table the one
//! before it (0 for the first). Only the newest one takes new keys, so a
//! path can have entries in several tables; its count is their sum. A count
//! is lost only when the memory cannot grow.

use crate::error::{Result, WasmError};
use pathprof_techniques::{PathTable, RawCounters};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Name of the exported counter memory.
pub const COUNTERS_EXPORT: &str = "__pathprof_counters";
/// First bytes of the counter memory.
pub const MAGIC: [u8; 8] = *b"PATHPROF";
/// Version of the memory layout described in this module.
pub const LAYOUT_VERSION: u32 = 3;
/// Bytes of the header, before the first function's counters.
pub const HEADER_BYTES: u64 = 88;
/// Byte offset of the stack region ([`LayoutBuilder::reserve_stack`]).
pub const STACK_BASE: u64 = HEADER_BYTES;
pub(crate) use pathprof_techniques::plan::{HASH_ENTRY_BYTES, HASH_HEADER_BYTES};
/// Hash tables of this many entries (the small tables of the functions past
/// `--array-memory-max`) start all zero: no data segment writes their
/// header, the hash helper does on their first count. A module may have at
/// most 100,000 data segments (wasmparser's limit, which wasmtime keeps),
/// and a large module has more functions than that
/// (docs/decisions.md#zero-header-tables).
pub(crate) const ZERO_HEADER_CAPACITY: u32 = pathprof_techniques::ball_larus::SPILL_HASH_CAPACITY;
/// Longest probe sequence of the hash helper: a key not found within this
/// many entries (or the whole table, when smaller) is counted as lost.
pub const MAX_PROBES: u32 = 64;
/// Byte offsets of the hash table header fields.
pub(crate) const HASH_MASK: u64 = 0;
pub(crate) const HASH_LIMIT: u64 = 4;
pub(crate) const HASH_LOST: u64 = 8;
pub(crate) const HASH_LAST_KEY: u64 = 16;
pub(crate) const HASH_LAST_ENTRY: u64 = 24;
pub(crate) const HASH_NEXT: u64 = 28;
/// The counter memory may grow to 4 GiB when it holds hash tables.
pub(crate) const MAX_PAGES: u64 = 1 << 16;
/// More overflow tables than a 4 GiB memory can hold means corruption.
const MAX_OVERFLOW_TABLES: usize = 32;

/// Where the counters of every instrumented function live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterLayout {
    pub version: u32,
    /// Export name of the counter memory.
    pub memory_export: String,
    /// Bytes of the counter memory in use (header included).
    pub total_bytes: u64,
    /// One entry per function that had a plan, in function order.
    pub functions: Vec<FunctionLayout>,
    /// Whose counters these are, as the caller said
    /// ([`crate::Instrumenter::set_identity`]); all zero if it did not.
    #[serde(default)]
    pub identity: CounterIdentity,
}

/// What instrumented a module, as its caller says: written into the
/// header of the counter memory so that the counters can be told apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterIdentity {
    /// What the module was instrumented for, in the caller's numbering
    /// (pathprof's: that of its metadata section).
    pub technique: u32,
    /// SHA-256 of the original, uninstrumented module.
    pub module_hash: [u8; 32],
    /// The caller's digest of what decoding the counters depends on beyond
    /// the layout (the plans' choices, such as an edge plan's chords).
    pub plan_hash: [u8; 32],
}

/// The header of a counter memory, as written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterHeader {
    /// Functions in the layout.
    pub functions: u32,
    pub technique: u32,
    /// SHA-256 of the original module.
    pub module_hash: [u8; 32],
    /// [`CounterLayout::instrumentation_hash`].
    pub instrumentation_hash: [u8; 32],
}

/// Where one function's counters live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionLayout {
    /// Index in the ORIGINAL module's function index space.
    pub func_index: u32,
    pub paths: PathTable,
    /// Byte offset of the path table (of its header, for a hash table).
    pub paths_offset: u32,
    pub slots: u32,
    /// Byte offset of the first slot counter.
    pub slots_offset: u32,
    /// Entries of the PPP table (0: none).
    #[serde(default)]
    pub ppp_len: u64,
    /// Byte offset of the PPP table.
    #[serde(default)]
    pub ppp_offset: u32,
}

/// Bytes of one PPP table entry.
pub(crate) const PPP_ENTRY_BYTES: u64 = 16;

impl CounterLayout {
    /// The layout of function `func_index` (original index space).
    pub fn function(&self, func_index: u32) -> Option<&FunctionLayout> {
        self.functions
            .binary_search_by_key(&func_index, |f| f.func_index)
            .ok()
            .map(|i| &self.functions[i])
    }

    /// Lays out the counters of `(func_index, paths, slots, ppp_len)` in order.
    pub(crate) fn new(
        functions: impl IntoIterator<Item = (u32, PathTable, u32, u64)>,
    ) -> Result<Self> {
        let mut builder = LayoutBuilder::new();
        for entry in functions {
            builder.push(entry)?;
        }
        builder.finish()
    }

    /// SHA-256 of the identity's plan hash and of where every function's
    /// counters are: two instrumentations of one module for one technique
    /// differ here when their options did (truncation, table sizes,
    /// interesting paths, an edge plan's chords).
    pub fn instrumentation_hash(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.identity.plan_hash);
        h.update(self.version.to_le_bytes());
        h.update(self.total_bytes.to_le_bytes());
        for f in &self.functions {
            let (kind, size) = match f.paths {
                PathTable::None => (0u8, 0),
                PathTable::Array { len } => (1, len),
                PathTable::Hash { capacity } => (2, u64::from(capacity)),
            };
            h.update(f.func_index.to_le_bytes());
            h.update([kind]);
            h.update(size.to_le_bytes());
            for v in [f.paths_offset, f.slots, f.slots_offset, f.ppp_offset] {
                h.update(v.to_le_bytes());
            }
            h.update(f.ppp_len.to_le_bytes());
        }
        h.finalize().into()
    }

    /// The header a module with this layout writes.
    pub fn header(&self) -> CounterHeader {
        CounterHeader {
            functions: self.functions.len() as u32,
            technique: self.identity.technique,
            module_hash: self.identity.module_hash,
            instrumentation_hash: self.instrumentation_hash(),
        }
    }

    /// Pages of 64 KiB the counter memory needs (at least one).
    pub(crate) fn pages(&self) -> u64 {
        self.total_bytes.div_ceil(65536).max(1)
    }

    /// Initial contents: `(offset, bytes)` for the header and each hash
    /// table's mask and probe limit, but those of [`ZERO_HEADER_CAPACITY`]
    /// entries. Everything else starts at zero.
    pub(crate) fn init_segments(&self) -> Vec<(u32, Vec<u8>)> {
        let h = self.header();
        let mut header = Vec::with_capacity(HEADER_BYTES as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&self.version.to_le_bytes());
        header.extend_from_slice(&h.functions.to_le_bytes());
        header.extend_from_slice(&h.technique.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&h.module_hash);
        header.extend_from_slice(&h.instrumentation_hash);
        debug_assert_eq!(header.len() as u64, HEADER_BYTES);
        let mut segments = vec![(0, header)];
        for f in &self.functions {
            if let PathTable::Hash { capacity } = f.paths {
                if capacity == ZERO_HEADER_CAPACITY {
                    continue;
                }
                let mut h = Vec::with_capacity(8);
                h.extend_from_slice(&(capacity - 1).to_le_bytes());
                h.extend_from_slice(&capacity.min(MAX_PROBES).to_le_bytes());
                segments.push((f.paths_offset, h));
            }
        }
        segments
    }
}

/// A [`CounterLayout`] laid out one function at a time, in function order:
/// each function's offsets follow from the functions before it alone, so an
/// instrumenter that plans and rewrites one function at a time knows them
/// when it rewrites the function.
pub(crate) struct LayoutBuilder {
    at: u128,
    functions: Vec<FunctionLayout>,
    pub(crate) identity: CounterIdentity,
    /// Bytes of path arrays and of hash tables so far: an error names the
    /// larger, so that a user knows which setting to lower.
    array_bytes: u128,
    hash_bytes: u128,
}

impl LayoutBuilder {
    pub(crate) fn new() -> Self {
        LayoutBuilder {
            at: u128::from(HEADER_BYTES),
            functions: Vec::new(),
            identity: CounterIdentity::default(),
            array_bytes: 0,
            hash_bytes: 0,
        }
    }

    /// The layout of function `func_index`, if it was laid out already.
    pub(crate) fn function(&self, func_index: u32) -> Option<&FunctionLayout> {
        self.functions
            .binary_search_by_key(&func_index, |f| f.func_index)
            .ok()
            .map(|i| &self.functions[i])
    }

    /// Reserves `bytes` (rounded up to 8) after the header, before any
    /// function's counters, for the stack region ([`STACK_BASE`]).
    pub(crate) fn reserve_stack(&mut self, bytes: u32) {
        assert!(self.functions.is_empty(), "the stack region comes first");
        self.at = u128::from(HEADER_BYTES) + u128::from(bytes.div_ceil(8)) * 8;
    }

    /// Lays out the next function's counters after the others'.
    pub(crate) fn push(
        &mut self,
        (func_index, paths, slots, ppp_len): (u32, PathTable, u32, u64),
    ) -> Result<&FunctionLayout> {
        match paths {
            PathTable::Array { .. } => self.array_bytes += table_bytes(paths),
            PathTable::Hash { .. } => self.hash_bytes += table_bytes(paths),
            PathTable::None => {}
        }
        let (array_bytes, hash_bytes) = (self.array_bytes, self.hash_bytes);
        let too_large = move |bytes| WasmError::CounterMemoryTooLarge {
            bytes,
            array_bytes,
            hash_bytes,
        };
        let at = &mut self.at;
        let paths_offset = *at;
        *at += table_bytes(paths);
        let slots_offset = *at;
        *at += 8 * u128::from(slots);
        let ppp_offset = *at;
        *at += u128::from(PPP_ENTRY_BYTES) * u128::from(ppp_len);
        let bytes = *at;
        let offset = |o: u128| u32::try_from(o).map_err(|_| too_large(bytes));
        self.functions.push(FunctionLayout {
            func_index,
            paths,
            paths_offset: offset(paths_offset)?,
            slots,
            slots_offset: offset(slots_offset)?,
            ppp_len,
            ppp_offset: offset(ppp_offset)?,
        });
        Ok(&self.functions[self.functions.len() - 1])
    }

    pub(crate) fn finish(self) -> Result<CounterLayout> {
        // Every address the instrumentation computes must fit in 32 bits.
        if self.at > u128::from(u32::MAX) {
            return Err(WasmError::CounterMemoryTooLarge {
                bytes: self.at,
                array_bytes: self.array_bytes,
                hash_bytes: self.hash_bytes,
            });
        }
        Ok(CounterLayout {
            version: LAYOUT_VERSION,
            memory_export: COUNTERS_EXPORT.to_string(),
            total_bytes: self.at as u64,
            functions: self.functions,
            identity: self.identity,
        })
    }
}

/// Bytes of a path table (8-aligned).
fn table_bytes(paths: PathTable) -> u128 {
    paths.bytes()
}

fn corrupt(reason: impl Into<String>) -> WasmError {
    WasmError::CorruptCounters {
        reason: reason.into(),
    }
}

/// Reads `N` bytes at `at`, or says how short the image is.
fn bytes_at<const N: usize>(memory: &[u8], at: u64) -> Result<[u8; N]> {
    usize::try_from(at)
        .ok()
        .and_then(|at| memory.get(at..at.checked_add(N)?))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| {
            corrupt(format!(
                "memory image of {} bytes ends before byte {}",
                memory.len(),
                at + N as u64
            ))
        })
}

fn u64_at(memory: &[u8], at: u64) -> Result<u64> {
    bytes_at::<8>(memory, at).map(u64::from_le_bytes)
}

fn u32_at(memory: &[u8], at: u64) -> Result<u32> {
    bytes_at::<4>(memory, at).map(u32::from_le_bytes)
}

/// Reads the header of a counter memory, its magic and version checked.
pub fn read_header(memory: &[u8]) -> Result<CounterHeader> {
    check_header(memory)?;
    Ok(CounterHeader {
        functions: u32_at(memory, 12)?,
        technique: u32_at(memory, 16)?,
        module_hash: bytes_at::<32>(memory, 24)?,
        instrumentation_hash: bytes_at::<32>(memory, 56)?,
    })
}

/// Checks the memory header's magic and version.
pub fn check_header(memory: &[u8]) -> Result<()> {
    if !memory.starts_with(&MAGIC) {
        return Err(WasmError::NotCounters);
    }
    let version = u32_at(memory, 8)?;
    if version != LAYOUT_VERSION {
        return Err(WasmError::CounterVersion {
            found: version,
            expected: LAYOUT_VERSION,
        });
    }
    Ok(())
}

/// Reads one function's counters from an image of the counter memory.
pub fn read_counters(layout: &FunctionLayout, memory: &[u8]) -> Result<RawCounters> {
    check_header(memory)?;
    let mut raw = RawCounters::default();
    let base = u64::from(layout.paths_offset);
    match layout.paths {
        PathTable::None => {}
        PathTable::Array { len } => {
            let end = len
                .checked_mul(8)
                .and_then(|b| b.checked_add(base))
                .ok_or_else(|| corrupt(format!("path table of {len} counters is too large")))?;
            bytes_at::<0>(memory, end)?;
            let table = &memory[base as usize..end as usize];
            for (path, c) in table.chunks_exact(8).enumerate() {
                let count = u64::from_le_bytes(c.try_into().unwrap_or_default());
                if count != 0 {
                    raw.paths.push((path as u64, count));
                }
            }
        }
        PathTable::Hash { capacity } => {
            let mask = u32_at(memory, base + HASH_MASK)?;
            let set_up = u32_at(memory, base + HASH_LIMIT)? != 0;
            if !set_up && capacity == ZERO_HEADER_CAPACITY {
                // Never counted into: its header was never set up.
                return read_slots(layout, memory, raw);
            }
            if u64::from(mask) + 1 != u64::from(capacity) {
                return Err(corrupt(format!(
                    "hash table at {base} has capacity {}, layout says {capacity}",
                    u64::from(mask) + 1
                )));
            }
            raw.lost = u64_at(memory, base + HASH_LOST)?;
            read_hash_table(memory, base, &mut raw.paths)?;
            let mut next = u64::from(u32_at(memory, base + HASH_NEXT)?);
            let mut tables = 0;
            while next != 0 {
                tables += 1;
                if tables > MAX_OVERFLOW_TABLES || next <= base {
                    return Err(corrupt(format!(
                        "hash table at {base}: bad overflow table link {next}"
                    )));
                }
                read_hash_table(memory, next, &mut raw.paths)?;
                // Allocated one after another above the layout: each one
                // links to an older, lower one.
                let older = u64::from(u32_at(memory, next + HASH_NEXT)?);
                if older >= next {
                    return Err(corrupt(format!(
                        "hash table at {base}: overflow table {next} links to {older}"
                    )));
                }
                next = older;
            }
            // A path in several tables: its count is their sum.
            raw.paths.sort_unstable();
            raw.paths.dedup_by(|later, first| {
                let same = later.0 == first.0;
                if same {
                    first.1 = first.1.saturating_add(later.1);
                }
                same
            });
        }
    }
    read_slots(layout, memory, raw)
}

/// [`read_counters`]' slot counters and PPP table, after its path table.
fn read_slots(layout: &FunctionLayout, memory: &[u8], mut raw: RawCounters) -> Result<RawCounters> {
    let slots = u64::from(layout.slots_offset);
    bytes_at::<0>(memory, slots + 8 * u64::from(layout.slots))?;
    raw.slots = (0..u64::from(layout.slots))
        .map(|i| u64_at(memory, slots + 8 * i))
        .collect::<Result<_>>()?;
    if layout.ppp_len > 0 {
        read_ppp_table(layout, memory, &mut raw)?;
    }
    Ok(raw)
}

/// Adds the counted entries of the hash table at `at` to `paths`; a key
/// stored twice in one table means corruption.
fn read_hash_table(memory: &[u8], at: u64, paths: &mut Vec<(u64, u64)>) -> Result<()> {
    let capacity = u64::from(u32_at(memory, at + HASH_MASK)?) + 1;
    if !capacity.is_power_of_two() {
        return Err(corrupt(format!(
            "hash table at {at} has capacity {capacity}, not a power of two"
        )));
    }
    let entries = at + HASH_HEADER_BYTES;
    bytes_at::<0>(memory, entries + HASH_ENTRY_BYTES * capacity)?;
    let first = paths.len();
    for i in 0..capacity {
        let key = u64_at(memory, entries + HASH_ENTRY_BYTES * i)?;
        let count = u64_at(memory, entries + HASH_ENTRY_BYTES * i + 8)?;
        if key != 0 && count != 0 {
            paths.push((key - 1, count));
        }
    }
    let table = &mut paths[first..];
    table.sort_unstable();
    if table.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(corrupt(format!("hash table at {at} holds a path twice")));
    }
    Ok(())
}

/// Adds the counted entries of a PPP table to `raw.paths`, by Ball-Larus id.
/// An interesting path is never also recorded as uninteresting (its
/// Ball-Larus id matches its entry), so an id met twice means corruption.
fn read_ppp_table(layout: &FunctionLayout, memory: &[u8], raw: &mut RawCounters) -> Result<()> {
    let base = u64::from(layout.ppp_offset);
    let end = layout
        .ppp_len
        .checked_mul(PPP_ENTRY_BYTES)
        .and_then(|b| b.checked_add(base))
        .ok_or_else(|| {
            corrupt(format!(
                "PPP table of {} entries is too large",
                layout.ppp_len
            ))
        })?;
    bytes_at::<0>(memory, end)?;
    for i in 0..layout.ppp_len {
        let bl = u64_at(memory, base + PPP_ENTRY_BYTES * i)?;
        let count = u64_at(memory, base + PPP_ENTRY_BYTES * i + 8)?;
        if count != 0 {
            if bl == pathprof_techniques::PPP_HOLE {
                return Err(corrupt(format!(
                    "PPP table at {base} counts a hole (entry {i})"
                )));
            }
            raw.paths.push((bl, count));
        }
    }
    raw.paths.sort_unstable();
    if raw.paths.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(corrupt(format!("PPP table at {base} holds a path twice")));
    }
    Ok(())
}
