//! Per-function work spread over threads in contiguous chunks of about equal
//! code size, results kept in function order.

use std::ops::Range;

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
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS);
    if threads <= 1 || total < MIN_PARALLEL_BYTES || sizes.len() < 2 {
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

#[cfg(test)]
mod tests {
    use super::map_chunked;

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
