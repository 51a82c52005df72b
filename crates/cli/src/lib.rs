//! The pathprof command-line tool: argument parsing and printing over
//! `pathprof-core` (instrument, decode, report) and `pathprof-session`
//! (what needs the engine: `run`, `simulate`, segment recording;
//! `conformance` is `pathprof-conformance`). The libraries' modules are
//! re-exported under their old paths for the binary and the integration tests.

pub use pathprof_core::{
    diff, driver, edge_report, export, fleet, html, inline, input, interesting, interproc,
    interproc_report, intra_context, ippp, meta, parquet_export, ppp_stats, report, residual,
    residual_segments, segments_report, show, source, stats,
};

pub use pathprof_session::{branch_trace, run_cmd, segments, simulate};

pub mod heap;
