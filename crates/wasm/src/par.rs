//! Per-function work spread over threads, results kept in function order:
//! in contiguous chunks of about equal code size ([`map_chunked`]), or as a
//! pipeline whose last stage takes the functions one at a time, in order
//! ([`pipeline`]).

use std::ops::Range;
use std::sync::mpsc;

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

/// [`pipeline`] hands functions to its workers in blocks of consecutive
/// functions of about this much code: each block is one message, so the
/// threads meet once per block, not once per function (waking a waiting
/// thread costs a few microseconds, as much as planning a small function).
const BLOCK_BYTES: usize = 16 << 10;
/// How many finished blocks each worker may have waiting: enough to ride
/// over a large function, few enough that their memory stays small.
const AHEAD: usize = 2;

/// `for i in 0..sizes.len() { consume(produce(i)?)? }`, with `produce` run
/// ahead on worker threads when worthwhile and `consume` on the calling
/// thread, in order. The functions go to the workers in turn in blocks of
/// about [`BLOCK_BYTES`] of code, and each worker runs at most [`AHEAD`]
/// blocks ahead of `consume`. Stops at the first error in order.
pub fn pipeline<T, E, P, C>(sizes: &[usize], produce: P, mut consume: C) -> Result<(), E>
where
    T: Send,
    E: Send,
    P: Fn(usize) -> Result<T, E> + Sync,
    C: FnMut(T) -> Result<(), E>,
{
    let workers = worker_threads(sizes).saturating_sub(1);
    if workers == 0 {
        for i in 0..sizes.len() {
            consume(produce(i)?)?;
        }
        return Ok(());
    }
    let blocks = blocks(sizes, BLOCK_BYTES);
    let (produce, blocks) = (&produce, &blocks);
    std::thread::scope(|s| {
        let mut results = Vec::with_capacity(workers);
        for w in 0..workers {
            let (tx, rx) = mpsc::sync_channel(AHEAD);
            results.push(rx);
            s.spawn(move || {
                for block in blocks.iter().skip(w).step_by(workers) {
                    // A block's results up to its first error.
                    let mut done = Vec::with_capacity(block.len());
                    for i in block.clone() {
                        let r = produce(i);
                        let failed = r.is_err();
                        done.push(r);
                        if failed {
                            break;
                        }
                    }
                    let failed = done.last().is_some_and(|r| r.is_err());
                    // A send fails once `consume` has stopped.
                    if tx.send(done).is_err() || failed {
                        break;
                    }
                }
            });
        }
        for b in 0..blocks.len() {
            // A worker that panicked hung up; the scope passes its panic on.
            let Ok(done) = results[b % workers].recv() else {
                break;
            };
            for r in done {
                consume(r?)?;
            }
        }
        Ok(())
    })
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
    use super::{map_chunked, pipeline};

    #[test]
    fn pipeline_consumes_in_order_and_stops_at_the_first_error() {
        // Blocks of one function and of four (of 20 KB between them).
        for size in [300_000, 5_000] {
            let sizes = vec![size; 400];
            let mut seen = Vec::new();
            let out: Result<(), usize> = pipeline(&sizes, Ok, |i| {
                seen.push(i);
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
                        seen.push(i);
                        if i == bad_consume {
                            Err(i)
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
