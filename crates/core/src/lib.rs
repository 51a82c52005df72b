//! pathprof as a library: path profiling of WebAssembly modules without the
//! command line. Instrument a module in any mode ([`driver::instrument`]),
//! run it on any engine with multi-memory (the counters are its exported
//! `__pathprof_counters` memory), turn the counters into a profile
//! ([`driver::collect`]), then report hot paths ([`report`]), merge
//! ([`fleet`], `pathprof_profile::merge`), compare ([`diff`]), export
//! coverage ([`export`]) and map blocks to source lines ([`source`]).
//!
//! This crate depends on no engine and no argument parser; the `pathprof`
//! binary is argument parsing and printing over it, and `pathprof-runner`
//! runs modules on wasmtime. docs/architecture.md shows where each paper's
//! algorithm lives.
//!
//! Profile a function and print its three hottest paths:
//!
//! ```
//! use pathprof_core::driver::{self, Technique};
//! # fn main() -> anyhow::Result<()> {
//! // Steps of the Collatz sequence from n to 1.
//! let module = wat::parse_str(r#"(module
//!   (func (export "collatz") (param $n i32) (result i32) (local $steps i32)
//!     (block $done (loop $next
//!       (br_if $done (i32.le_u (local.get $n) (i32.const 1)))
//!       (local.set $steps (i32.add (local.get $steps) (i32.const 1)))
//!       (if (i32.and (local.get $n) (i32.const 1))
//!         (then (local.set $n (i32.add (i32.mul (local.get $n) (i32.const 3)) (i32.const 1))))
//!         (else (local.set $n (i32.shr_u (local.get $n) (i32.const 1)))))
//!       (br $next)))
//!     (local.get $steps)))"#)?;
//! let instrumented = driver::instrument(&module, Technique::Path, &driver::Options::default())?;
//!
//! // Any engine will do; this is pathprof's own (wasmtime).
//! let engine = pathprof_runner::engine_without_fuel()?;
//! let run = pathprof_runner::invoke(&engine, &instrumented.bytes, "collatz", &["27".into()],
//!                                   &pathprof_runner::RunOptions::default())?;
//! let counters = run.counters.expect("the module exports its counters");
//!
//! let profile = driver::collect(&instrumented.meta()?, &counters, None)?;
//! let hot = pathprof_core::report::hot_paths(&profile, None)?;
//! for path in hot.iter().take(3) {
//!     println!("{} path {}: {} times ({:.1} %)", path.function, path.path, path.count, path.percent);
//! }
//! // 27 reaches 1 in 111 steps, 41 of them from odd numbers: the first
//! // iteration (from the entry, 27 is odd), 40 more odd and 70 even ones
//! // (from the loop head to the backedge), and the last test, which leaves.
//! let counts: Vec<u64> = hot.iter().map(|p| p.count).collect();
//! assert_eq!(counts, [70, 40, 1, 1]);
//! # Ok(())
//! # }
//! ```

pub mod diff;
pub mod driver;
pub mod edge_report;
pub mod error;
pub mod export;
pub mod fleet;
pub mod html;
pub mod inline;
pub mod input;
pub mod interesting;
pub mod interproc;
pub mod interproc_report;
pub mod intra_context;
pub mod ippp;
pub mod meta;
pub mod options;
pub mod parquet_export;
pub mod ppp_stats;
mod recorder;
pub mod report;
pub mod residual;
pub mod residual_segments;
pub mod segments_report;
pub mod show;
pub mod source;
pub mod stats;
pub mod technique;
pub mod typed_error;

pub use error::{Error, Result};
