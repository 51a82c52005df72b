//! Tests of [`pathprof_graph::ippp`]: the WPP example of thesis 3.4.2 worked by
//! hand, property tests against a brute-force IPS enumerator, and the
//! residual columns of Table 3.2 by hand, tail calls and exceptions by
//! hand.

mod example;
mod exits;
mod props;
mod residual;
mod walk;
