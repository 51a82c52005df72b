//! The peak heap of a command, for `pathprof instrument --timings`.
//!
//! Issue 4 bounds the instrumenter's memory by the module's size. The peak
//! resident set (what the benchmark harness reads through wait4) also holds
//! the code pages of the binary that instrumenting touches, a fixed cost of
//! some MiB that says nothing of how memory grows with the module; the heap
//! is the instrumenter's own data. [`Counting`] wraps the system allocator
//! and, once [`start`] is called, keeps the bytes allocated and not yet
//! freed and their maximum.
//!
//! Not `peak_alloc` or `peakmem-alloc`: they count every allocation of the
//! process's life, two atomic updates each, and every `pathprof run` would
//! pay for it; here a command that does not ask pays one relaxed load of a
//! flag per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated since [`start`] minus bytes freed since then (negative
/// when more of what was allocated before is freed).
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting once [`start`] has been called.
pub struct Counting;

/// Counts from now on: the peak is of what is allocated from here.
pub fn start() {
    CURRENT.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
}

/// The most bytes live at once since [`start`] (0 when [`Counting`] is not
/// the global allocator or counting never started).
pub fn peak_bytes() -> u64 {
    u64::try_from(PEAK.load(Relaxed)).unwrap_or(0)
}

fn grow(bytes: usize) {
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    let now = CURRENT.fetch_add(bytes, Relaxed).saturating_add(bytes);
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

fn shrink(bytes: usize) {
    CURRENT.fetch_sub(isize::try_from(bytes).unwrap_or(isize::MAX), Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments;
// the counters never affect what is allocated.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Relaxed) {
            shrink(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            // Both sizes live at once only when the block moves, and then
            // inside the allocator; what the program holds is the new size.
            shrink(layout.size());
            grow(new_size);
        }
        p
    }
}
