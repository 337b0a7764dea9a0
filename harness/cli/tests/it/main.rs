//! The command line's integration tests, one binary (one link, not one per
//! file): the CLI's human-facing output under insta, and real clients
//! against `dshc serve`.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

mod bench_fixtures;
mod cli;
mod gate;
mod report_page;
mod serve;
mod tidy;
