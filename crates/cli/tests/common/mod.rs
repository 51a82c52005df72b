//! Shared by the integration tests: the trace oracle, fixture discovery and
//! running a program under each instrumentation.

#![allow(dead_code)] // each test binary uses its own part of this module

pub mod bin;
pub mod callgen;
pub mod oracle;
pub mod programs;
pub mod segments;
