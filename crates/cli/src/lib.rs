//! The pathprof command-line tool, as a library the binary and the
//! integration tests share.

pub mod branch_trace;
pub mod conformance;
pub mod diff;
pub mod driver;
pub mod edge_report;
pub mod export;
pub mod fleet;
pub mod heap;
pub mod input;
pub mod interesting;
pub mod interproc;
pub mod interproc_report;
pub mod intra_context;
pub mod meta;
pub mod ppp_stats;
pub mod report;
pub mod residual;
pub mod residual_segments;
pub mod run_cmd;
pub mod segments;
pub mod segments_report;
pub mod show;
pub mod simulate;
pub mod source;
pub mod stats;
