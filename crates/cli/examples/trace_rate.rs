//! Measurement aid (issue 28): events per second a traced run hands to a
//! sink that only counts them, with the buffered trace and with one host
//! call per edge; and branch events per second of the branch stream
//! (issue 30) made from the buffered trace. Each is run `ROUNDS` times on
//! one compiled module; the uninstrumented run's time is shown beside. The
//! two traces must count the same events.
//!
//! `cargo run --release --example trace_rate -- MODULE.wasm [ARG...] [< STDIN]`
//! (bench/micro/memcmp_loop.c makes 840 M edge events; with its buffer at
//! 1 MiB, 52 M).
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use pathprof::branch_trace::BranchSink;
use pathprof::driver::{self, Technique};
use pathprof_runner::{RunOptions, TraceEvent, TraceSink, TraceTo};
use pathprof_wasm::TraceMode;

const ROUNDS: usize = 2;

/// A sink that counts the events.
#[derive(Default)]
struct Count(u64);

impl TraceSink for Count {
    fn events(&mut self, events: &[TraceEvent]) {
        self.0 += events.len() as u64;
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        bail!("usage: trace_rate MODULE.wasm [ARG...] [< STDIN]");
    };
    let module = std::fs::read(path).with_context(|| path.clone())?;
    let mut stdin = Vec::new();
    std::io::stdin().read_to_end(&mut stdin)?;
    let engine = pathprof_runner::engine_without_fuel()?;
    let opts = |trace| RunOptions {
        stdin: Some(stdin.clone()),
        trace,
        ..RunOptions::captured(args.clone())
    };
    let plain = pathprof_runner::compile(&engine, &module)?;
    let best = best_of(|| {
        pathprof_runner::run_compiled(&plain, &opts(None))?;
        Ok(0)
    })?;
    println!("uninstrumented: {:.3} s", best.0.as_secs_f64());
    for mode in [TraceMode::Buffered, TraceMode::PerEdge] {
        let o = driver::Options {
            trace_mode: mode,
            ..driver::Options::default()
        };
        let traced = driver::instrument(&module, Technique::Trace, &o)?;
        let compiled = pathprof_runner::compile(&engine, &traced.bytes)?;
        let (time, events) = best_of(|| {
            let count = Arc::new(Mutex::new(Count::default()));
            pathprof_runner::run_compiled(&compiled, &opts(Some(TraceTo::new(count.clone()))))?;
            let n = count.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.0;
            Ok(n)
        })?;
        report(&format!("{mode:?} trace"), "edge events", time, events);
        if mode == TraceMode::Buffered {
            let (time, branches) = best_of(|| {
                let n = Arc::new(Mutex::new(0u64));
                let counter = n.clone();
                let sink = BranchSink::new(&module, move |_| {
                    if let Ok(mut n) = counter.lock() {
                        *n += 1;
                    }
                })?;
                let sink = Arc::new(Mutex::new(sink));
                pathprof_runner::run_compiled(&compiled, &opts(Some(TraceTo::new(sink.clone()))))?;
                sink.lock()
                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                    .finish()?;
                let n = *n.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                Ok(n)
            })?;
            report("branch stream", "branch events", time, branches);
        }
    }
    Ok(())
}

/// The shortest of `ROUNDS` runs of `f`, and what the last one returned.
fn best_of(mut f: impl FnMut() -> Result<u64>) -> Result<(Duration, u64)> {
    let mut best = Duration::MAX;
    let mut n = 0;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        n = f()?;
        best = best.min(t.elapsed());
    }
    Ok((best, n))
}

fn report(what: &str, unit: &str, time: Duration, n: u64) {
    let s = time.as_secs_f64();
    println!(
        "{what}: {n} {unit} in {s:.3} s (best of {ROUNDS}): {:.1} M/s",
        n as f64 / s / 1e6
    );
}
