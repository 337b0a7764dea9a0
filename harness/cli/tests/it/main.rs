//! The command line's integration tests, one binary (one link, not one per
//! file): the CLI's human-facing output under insta, and real clients
//! against `dshc serve`.

mod bench_fixtures;
mod cli;
mod serve;
mod tidy;
