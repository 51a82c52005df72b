//! Tests of [`crate::interproc`]: the report's example (Figs. 4-9, 14-17)
//! worked by hand, and property tests against the path enumerator of
//! [`crate::testing::interproc`].

mod big;
mod hybrid;
mod paper;
mod props;
