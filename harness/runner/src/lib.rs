//! dshc's supervision, runs and reports: everything between a scenario file
//! and a verdict that is not the reference itself or the judge.
//!
//! - [`adapter`]: implementations under test: the reference in process and
//!   external adapters over the protocol, supervised, on real or virtual
//!   time;
//! - [`check`]: `check(scenario) -> Outcome`, the one way a case runs, for
//!   tests, the CLI and fuzzers, and suites with expected failures;
//!   [`contain`]: a panic in one case is that case's `crashed` outcome;
//! - [`report`] and [`coverage`] on top; [`bless`]: rewriting expectations
//!   from the reference;
//! - [`parallel`] and [`partition`]: `--jobs` and `--partition` for every
//!   command that runs many items; [`limits`]: every resource limit.

pub mod adapter;
pub mod bless;
pub mod check;
pub mod contain;
pub mod coverage;
pub mod limits;
pub mod parallel;
pub mod partition;
pub mod report;
