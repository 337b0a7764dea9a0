//! The runner's integration tests, one binary (one link, not one per file).
//! The scenario files themselves are trials of the `scenarios` binary.

mod adapter_doubles;
mod loop_protocol;
mod matching;
mod virtual_time;
