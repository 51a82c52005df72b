//! The pathprof command-line tool: argument parsing and printing over
//! `pathprof-core`, and what needs the engine (`run`, `simulate`, segment
//! recording; `conformance` is `pathprof-conformance`). The library's modules are re-exported
//! under their old paths for the binary and the integration tests.

pub use pathprof_core::{
    diff, driver, edge_report, export, fleet, html, input, interesting, interproc,
    interproc_report, intra_context, ippp, meta, parquet_export, ppp_stats, report, residual,
    residual_segments, segments_report, show, source, stats,
};

pub mod branch_trace;
pub mod heap;
pub mod run_cmd;
pub mod segments;
pub mod simulate;
