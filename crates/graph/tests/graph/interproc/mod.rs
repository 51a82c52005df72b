//! Tests of [`pathprof_graph::interproc`]: the report's example (Figs. 4-9, 14-17)
//! worked by hand, and property tests against the path enumerator of
//! [`pathprof_graph::testing::interproc`].

mod big;
mod hybrid;
mod paper;
mod props;
mod section9;

/// The `Entry_global` edges as (value, paths).
fn entry_values(ip: &pathprof_graph::interproc::Interproc) -> Vec<(u64, u64)> {
    ip.numbering
        .entries
        .iter()
        .map(|e| (e.value, e.paths))
        .collect()
}
