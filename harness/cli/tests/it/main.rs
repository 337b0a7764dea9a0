//! The command line's integration tests, one binary (one link, not one per
//! file): the CLI's human-facing output under insta, `dshc serve` and real
//! clients against it (`serve`, `real_clients`), and planted bugs that
//! `dshc diff` must find and reproduce.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

mod authoring;
mod bench_fixtures;
mod cli;
mod gate;
mod planted_bugs;
mod real_clients;
mod report_page;
mod serve;
mod tidy;
