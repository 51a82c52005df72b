//! Shared by the integration tests: the trace oracle, fixture discovery and
//! running a program under each instrumentation.

#![allow(dead_code)] // each test binary uses its own part of this module

pub mod bin;
pub mod callgen;
pub mod legacygen;
pub mod oracle;
pub mod programs;
pub mod segments;

/// One line of a function body in the WAT the generators write.
pub fn wat_line(out: &mut String, s: &str) {
    out.push_str("    ");
    out.push_str(s);
    out.push('\n');
}
