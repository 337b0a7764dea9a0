//! The model's integration tests, one binary (one link, not one per file).

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

mod js_vectors;
mod props;
mod resume;
