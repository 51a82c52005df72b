//! The CLI crate's integration tests, as one test binary: each file beside
//! this one is a module of it.
//!
//! One binary instead of one per file: the 29 binaries each compiled the
//! shared `common` module and linked wasmtime, and ran one after another,
//! each mostly on one core while its slowest test ran; in one binary the
//! test threads keep both cores busy to the end, and `common::programs`'s
//! compiled modules serve every test (docs/decisions.md#one-test-binary).
//! One module's tests: `cargo test -p pathprof --test suite trace_oracle::`.

mod common;

mod branch_oracle;
mod cache_metric_oracle;
mod cli;
mod custom_technique;
mod export_diff;
mod file_output;
mod fleet_merge;
mod fuzz;
mod generated_segments;
mod html_report;
mod inline_oracle;
mod interproc_cli;
mod interproc_oracle;
mod interproc_paper;
mod intra_context_oracle;
mod ippp_oracle;
mod legacy_exceptions;
mod meta;
mod parquet_export;
mod ppp_cli;
mod ppp_oracle;
mod residual_segments_cli;
mod run_options;
mod scripts;
mod segments_oracle;
mod simulate_cli;
mod simulate_trace;
mod simulator_oracle;
mod source_oracle;
mod sparse;
mod trace_oracle;
mod usability;
mod wasm_opt;
