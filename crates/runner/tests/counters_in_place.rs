//! The counters of an ended run are read where they are, not copied
//! (issue 27, point 14: `run --timings` counted the copy of 3.68 GB of
//! counters as the program's time): the heap grows by far less than the
//! counter memory while they are read, and they are the bytes the copying
//! reader returns. Its own test binary: it counts every allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use pathprof_runner::{
    compile, engine_without_fuel, invoke_ended, run_compiled, run_ended, Exit, RunOptions, Value,
};

/// The system allocator, counting the bytes live and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// One test at a time: the heap is counted for the whole process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// 64 MiB of counters.
const PAGES: usize = 1024;
const BYTES: usize = PAGES * 65536;

/// A module whose `_start` (and `f`, which returns 7) stores 5 in the last
/// counter of a 64 MiB counter memory.
fn module() -> wasmtime::Module {
    let at = BYTES - 8;
    let text = format!(
        r#"(module (memory (export "__pathprof_counters") {PAGES})
             (func (export "_start") (i64.store (i32.const {at}) (i64.const 5)))
             (func (export "f") (result i32)
               (i64.store (i32.const {at}) (i64.const 5)) (i32.const 7)))"#
    );
    compile(
        &engine_without_fuel().unwrap(),
        &wat::parse_str(text).unwrap(),
    )
    .unwrap()
}

#[test]
fn counters_are_read_in_place() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let compiled = module();
    let opts = RunOptions::captured(["p"]);
    let mut ended = run_ended(&compiled, &opts).unwrap();
    assert_eq!(ended.exit, Exit::Returned);
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let counters = ended.counters().unwrap();
    assert_eq!(counters.len(), BYTES);
    assert_eq!(counters[BYTES - 8..], 5u64.to_le_bytes());
    let grown = PEAK.load(Relaxed) - before;
    assert!(grown < 1 << 20, "reading the counters took {grown} bytes");
    // The copying reader gives the same bytes, and does copy them.
    let copied = run_compiled(&compiled, &opts).unwrap().counters.unwrap();
    assert!(PEAK.load(Relaxed) - before >= BYTES);
    assert!(copied == ended.counters().unwrap());
}

#[test]
fn an_invoked_export_keeps_its_results_and_counters() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut ended = invoke_ended(&module(), "f", &[], &RunOptions::captured(["p"])).unwrap();
    assert_eq!(ended.exit, Exit::Returned);
    assert_eq!(ended.results, vec![Value::I32(7)]);
    assert_eq!(ended.counters().unwrap()[BYTES - 8..], 5u64.to_le_bytes());
    let outcome = ended.into_outcome();
    assert_eq!(outcome.counters.unwrap()[BYTES - 8..], 5u64.to_le_bytes());
}
