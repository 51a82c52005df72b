//! The `pathprof` binary as the tests call it.

use std::process::{Command, Output};

/// Runs `pathprof` with `args` and waits for it.
pub fn pathprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(args)
        .output()
        .expect("pathprof runs")
}

/// What it printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
