//! Per-function work spread over threads, results kept in function order:
//! in contiguous chunks of about equal code size ([`map_chunked`]), or as a
//! pipeline whose last stage takes the functions one at a time, in order
//! ([`pipeline`]).

use std::ops::Range;
use std::sync::{mpsc, Condvar, Mutex, MutexGuard, PoisonError};

/// Below this much code, threads cost more than they save.
const MIN_PARALLEL_BYTES: usize = 1 << 20;
const MAX_THREADS: usize = 8;

/// `(0..sizes.len()).map(f)` in order, in parallel when worthwhile; stops at
/// the first error of each chunk and returns the first error in order.
pub(crate) fn map_chunked<T, E, F>(sizes: &[usize], f: F) -> Result<Vec<T>, E>
where
    T: Send,
    E: Send,
    F: Fn(usize) -> Result<T, E> + Sync,
{
    let total: usize = sizes.iter().sum();
    let threads = worker_threads(sizes);
    if threads <= 1 {
        return (0..sizes.len()).map(f).collect();
    }
    let mut chunks: Vec<Range<usize>> = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, size) in sizes.iter().enumerate() {
        acc += size;
        if acc * threads >= total * (chunks.len() + 1) {
            chunks.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < sizes.len() {
        chunks.push(start..sizes.len());
    }
    let f = &f;
    let results: Vec<Result<Vec<T>, E>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|range| s.spawn(move || range.map(f).collect::<Result<Vec<T>, E>>()))
            .collect();
        handles
            .into_iter()
            // A panic in a worker is a bug; pass it on.
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = Vec::with_capacity(sizes.len());
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// [`pipeline`] hands functions out in blocks of consecutive functions of
/// about this much code: the threads meet once per block, not once per
/// function (waking a waiting thread costs a few microseconds, as much as
/// planning a small function).
const BLOCK_BYTES: usize = 16 << 10;
/// Finished or claimed blocks each thread may have ahead of the one being
/// consumed: enough to ride over a large function, few enough that their
/// memory stays small.
const AHEAD: usize = 2;

/// `for i in 0..sizes.len() { consume(&mut produce(i)?)? }`, with `produce`
/// run ahead on worker threads when worthwhile and `consume` on the calling
/// thread, in order. Stops at the first error in order.
///
/// The functions are cut into blocks of about [`BLOCK_BYTES`] of code, which
/// the threads claim in order, none more than [`AHEAD`] blocks a thread
/// ahead of the block being consumed (which bounds the memory of finished
/// results). The calling thread produces too: when the block it needs next
/// is not ready it claims the next free block rather than wait (producing
/// costs the instrumenter about twice what consuming does, so a caller that
/// only consumed would wait half the time).
///
/// A block's results are dropped by the thread that produced them: a
/// worker's go back to it once consumed, and it receives them until the
/// caller is done. glibc's `free` of memory that another thread allocated
/// locks that thread's arena, and the two threads then contend for the lock
/// at every allocation: freed by the caller, SQLite's functions took the
/// worker 1.6 to 2 times as long to build and plan as on one thread
/// (docs/decisions.md#instrumenter-threads).
pub fn pipeline<T, E, P, C>(sizes: &[usize], produce: P, consume: C) -> Result<(), E>
where
    T: Send,
    E: Send,
    P: Fn(usize) -> Result<T, E> + Sync,
    C: FnMut(&mut T) -> Result<(), E>,
{
    pipeline_on(worker_threads(sizes), sizes, produce, consume)
}

/// [`pipeline`] on `threads` threads, the caller's included.
fn pipeline_on<T, E, P, C>(
    threads: usize,
    sizes: &[usize],
    produce: P,
    mut consume: C,
) -> Result<(), E>
where
    T: Send,
    E: Send,
    P: Fn(usize) -> Result<T, E> + Sync,
    C: FnMut(&mut T) -> Result<(), E>,
{
    let workers = threads.saturating_sub(1);
    if workers == 0 {
        for i in 0..sizes.len() {
            consume(&mut produce(i)?)?;
        }
        return Ok(());
    }
    let blocks = blocks(sizes, BLOCK_BYTES);
    let board = Board::new(blocks.len(), (workers + 1) * AHEAD);
    let made = |b: usize, by| made(&blocks[b], &produce, by);
    std::thread::scope(|s| {
        let mut returns = Vec::with_capacity(workers);
        for w in 0..workers {
            let (back, returned) = mpsc::channel::<Vec<T>>();
            returns.push(back);
            let (board, made) = (&board, &made);
            s.spawn(move || {
                let _dead = board.on_unwind();
                while let Some(b) = board.claim(|| returned.try_iter().for_each(drop)) {
                    let fin = made(b, Some(w));
                    if fin.error.is_some() {
                        // Nothing after the first error is consumed.
                        board.stop();
                    }
                    board.finish(b, fin);
                }
                // The rest comes back until the caller is done.
                returned.into_iter().for_each(drop);
            });
        }
        // Stops the workers however the caller leaves, a panic included.
        let _stop = board.on_drop();
        for b in 0..blocks.len() {
            let Some(mut fin) = board.take(b, made) else {
                // A worker panicked; the scope passes its panic on.
                return Ok(());
            };
            for t in &mut fin.results {
                consume(t)?;
            }
            if let Some(e) = fin.error {
                return Err(e);
            }
            if let Some(w) = fin.by {
                // A worker receives until `returns` is dropped, unless it
                // panicked; then the results are dropped here.
                let _ = returns[w].send(fin.results);
            }
        }
        Ok(())
    })
}

/// `block` produced by worker `by` (`None`: the calling thread), up to its
/// first error.
fn made<T, E>(
    block: &Range<usize>,
    produce: &impl Fn(usize) -> Result<T, E>,
    by: Option<usize>,
) -> Finished<T, E> {
    let mut results = Vec::with_capacity(block.len());
    for i in block.clone() {
        match produce(i) {
            Ok(t) => results.push(t),
            Err(e) => {
                return Finished {
                    by,
                    results,
                    error: Some(e),
                }
            }
        }
    }
    Finished {
        by,
        results,
        error: None,
    }
}

/// A finished block: the results before its first error, that error, and
/// the worker that made them (`None`: the calling thread).
struct Finished<T, E> {
    by: Option<usize>,
    results: Vec<T>,
    error: Option<E>,
}

/// What the threads of a [`pipeline`] share: which block is claimed next,
/// the finished blocks, and whether to stop.
struct Board<T, E> {
    state: Mutex<State<T, E>>,
    /// A block was finished, or a worker died.
    finished: Condvar,
    /// The block being consumed moved on, or the pipeline stopped.
    moved: Condvar,
    window: usize,
}

struct State<T, E> {
    /// The next block to claim.
    next: usize,
    /// The block being consumed.
    consuming: usize,
    done: Vec<Option<Finished<T, E>>>,
    /// Claim nothing more: the caller left, or a block failed.
    stop: bool,
    /// A worker panicked.
    dead: bool,
}

impl<T, E> State<T, E> {
    /// Claims the next block if there is one, the pipeline has not stopped,
    /// and it is less than `window` blocks past the one being consumed.
    fn claim_within(&mut self, window: usize) -> Option<usize> {
        let b = self.next;
        let open = !self.stop && b < self.done.len() && b < self.consuming + window;
        open.then(|| {
            self.next += 1;
            b
        })
    }
}

impl<T, E> Board<T, E> {
    fn new(blocks: usize, window: usize) -> Self {
        Board {
            state: Mutex::new(State {
                next: 0,
                consuming: 0,
                done: (0..blocks).map(|_| None).collect(),
                stop: false,
                dead: false,
            }),
            finished: Condvar::new(),
            moved: Condvar::new(),
            window,
        }
    }

    /// The state; a panic elsewhere while holding it leaves it consistent
    /// (every change is a single assignment).
    fn lock(&self) -> MutexGuard<'_, State<T, E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker's next block, once it is within the window; `idle` runs
    /// first and after each wait, outside the lock. `None`: nothing left to
    /// claim.
    fn claim(&self, mut idle: impl FnMut()) -> Option<usize> {
        loop {
            idle();
            let mut st = self.lock();
            if st.stop || st.dead || st.next == st.done.len() {
                return None;
            }
            if let Some(b) = st.claim_within(self.window) {
                return Some(b);
            }
            drop(self.moved.wait(st).unwrap_or_else(PoisonError::into_inner));
        }
    }

    fn finish(&self, b: usize, fin: Finished<T, E>) {
        self.lock().done[b] = Some(fin);
        self.finished.notify_all();
    }

    /// Block `b`, finished by whichever thread claimed it, or by the caller
    /// with `made` while it would otherwise wait. `None`: a worker died.
    fn take(
        &self,
        b: usize,
        made: impl Fn(usize, Option<usize>) -> Finished<T, E>,
    ) -> Option<Finished<T, E>> {
        let mut st = self.lock();
        st.consuming = b;
        self.moved.notify_all();
        loop {
            if let Some(fin) = st.done[b].take() {
                return Some(fin);
            }
            if st.dead {
                return None;
            }
            if let Some(c) = st.claim_within(self.window) {
                drop(st);
                let fin = made(c, None);
                st = self.lock();
                st.done[c] = Some(fin);
            } else {
                st = self
                    .finished
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.moved.notify_all();
    }

    /// Marks the board dead if the worker holding the guard unwinds.
    fn on_unwind(&self) -> impl Drop + '_ {
        Guard(move || {
            if std::thread::panicking() {
                self.lock().dead = true;
                self.finished.notify_all();
                self.moved.notify_all();
            }
        })
    }

    /// Stops the pipeline when the guard is dropped.
    fn on_drop(&self) -> impl Drop + '_ {
        Guard(move || self.stop())
    }
}

/// Runs its closure when dropped.
struct Guard<F: FnMut()>(F);

impl<F: FnMut()> Drop for Guard<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// `0..sizes.len()` cut into runs of consecutive functions of at least
/// `bytes` of code each (the last one may be smaller).
fn blocks(sizes: &[usize], bytes: usize) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, size) in sizes.iter().enumerate() {
        acc += size;
        if acc >= bytes {
            blocks.push(start..i + 1);
            (start, acc) = (i + 1, 0);
        }
    }
    if start < sizes.len() {
        blocks.push(start..sizes.len());
    }
    blocks
}

/// Threads worth using for per-function work on bodies of `sizes` bytes.
fn worker_threads(sizes: &[usize]) -> usize {
    let total: usize = sizes.iter().sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS);
    if total < MIN_PARALLEL_BYTES || sizes.len() < 2 {
        1
    } else {
        threads
    }
}

#[cfg(test)]
mod tests {
    use super::{map_chunked, pipeline, pipeline_on};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn pipeline_consumes_in_order_and_stops_at_the_first_error() {
        // Blocks of one function and of four (of 20 KB between them).
        for size in [300_000, 5_000] {
            let sizes = vec![size; 400];
            let mut seen = Vec::new();
            let out: Result<(), usize> = pipeline(&sizes, Ok, |i| {
                seen.push(*i);
                Ok(())
            });
            assert_eq!((out, seen), (Ok(()), (0..400).collect()));
            for (bad_produce, bad_consume, first) in [(7, 20, 7), (30, 21, 21), (30, 29, 29)] {
                let mut seen = Vec::new();
                let out: Result<(), usize> = pipeline(
                    &sizes,
                    |i| {
                        if i == bad_produce || i == 300 {
                            Err(i)
                        } else {
                            Ok(i)
                        }
                    },
                    |i| {
                        seen.push(*i);
                        if *i == bad_consume {
                            Err(*i)
                        } else {
                            Ok(())
                        }
                    },
                );
                let consumed = if first == bad_produce {
                    first
                } else {
                    first + 1
                };
                assert_eq!((out, seen), (Err(first), (0..consumed).collect()));
            }
        }
    }

    /// A result that knows the thread that made it, and counts the drops
    /// on that thread and on others.
    struct Made<'c> {
        i: usize,
        by: std::thread::ThreadId,
        drops: &'c [AtomicUsize; 2],
    }

    impl Drop for Made<'_> {
        fn drop(&mut self) {
            let elsewhere = std::thread::current().id() != self.by;
            self.drops[usize::from(elsewhere)].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn the_caller_helps_and_each_result_is_dropped_where_it_was_made() {
        for threads in [2, 3] {
            dropped_where_made(threads);
        }
    }

    fn dropped_where_made(threads: usize) {
        let sizes = vec![5_000; 400];
        let caller = std::thread::current().id();
        let drops = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let by_caller = AtomicUsize::new(0);
        let mut seen = Vec::new();
        let out: Result<(), ()> = pipeline_on(
            threads,
            &sizes,
            |i| {
                let by = std::thread::current().id();
                if by == caller {
                    by_caller.fetch_add(1, Ordering::Relaxed);
                } else {
                    // A slow worker: the caller must not wait for it.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                Ok(Made {
                    i,
                    by,
                    drops: &drops,
                })
            },
            |m| {
                // A caller slower than a worker for the last block: the
                // worker must still drop what it made.
                std::thread::sleep(std::time::Duration::from_micros(20));
                seen.push(m.i);
                Ok(())
            },
        );
        assert_eq!((out, seen), (Ok(()), (0..400).collect()));
        assert!(by_caller.load(Ordering::Relaxed) > 0);
        let drops = drops.map(AtomicUsize::into_inner);
        assert_eq!(drops, [400, 0], "drops where made, elsewhere");
    }

    #[test]
    fn a_panic_in_produce_or_consume_is_passed_on() {
        let sizes = vec![5_000; 400];
        let cases = [2, 3]
            .into_iter()
            .flat_map(|t| [0, 5, 200, 399].map(|b| (t, b)));
        for (threads, bad) in cases {
            let produced = std::panic::catch_unwind(|| {
                pipeline_on(
                    threads,
                    &sizes,
                    |i| if i == bad { panic!("{i}") } else { Ok(i) },
                    |_| Ok::<_, ()>(()),
                )
            });
            assert!(produced.is_err(), "produce {bad}");
            let consumed = std::panic::catch_unwind(|| {
                pipeline_on(threads, &sizes, Ok::<_, ()>, |i| {
                    if *i == bad {
                        panic!("{i}")
                    } else {
                        Ok(())
                    }
                })
            });
            assert!(consumed.is_err(), "consume {bad}");
        }
    }

    #[test]
    fn keeps_order_and_reports_the_first_error() {
        let sizes = vec![300_000; 20];
        let out: Result<Vec<usize>, usize> = map_chunked(&sizes, |i| Ok(i * 2));
        assert_eq!(out, Ok((0..20).map(|i| i * 2).collect()));
        let out: Result<Vec<usize>, usize> =
            map_chunked(&sizes, |i| if i % 7 == 3 { Err(i) } else { Ok(i) });
        assert_eq!(out, Err(3));
    }
}
