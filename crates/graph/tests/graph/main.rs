//! The crate's tests: the paper's worked examples, hand-made corner cases,
//! property tests on random CFGs against brute-force oracles, and big graphs.

mod big;
pub(crate) mod cases;
mod edge_profiles;
mod interproc;
mod intra_context;
mod ippp;
pub(crate) mod loops;
pub(crate) mod oracle;
mod paper;
mod ppp;
mod props;
