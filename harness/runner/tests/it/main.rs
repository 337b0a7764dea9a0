//! The runner's integration tests, one binary (one link, not one per file).
//! The scenario files themselves are trials of the `scenarios` binary.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

mod adapter_doubles;
mod loop_protocol;
mod matching;
mod node_adapter;
mod virtual_time;
