//! The fuzzing crate's integration tests, one binary (matklad's "one
//! integration test binary per crate": one link, not one per file).

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

mod diff;
mod oracles;
mod signals;
mod sim;
