//! The simulator's errors: all come from a configuration.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SimError {
    #[error("HPT of {entries} entries and {ways} ways: {why}")]
    Hpt {
        entries: u32,
        ways: u32,
        why: &'static str,
    },
    #[error("{what}: {why}")]
    Config { what: &'static str, why: String },
    #[error("configuration file: {0}")]
    Toml(String),
}
