//! dshc's harness: everything that runs cases and judges them.
//!
//! - [`reference`]: the reference implementation of a case (both levels,
//!   one command driver), on `dshc-model` and `dshc-agent`;
//! - [`adapter`]: implementations under test: the reference in process and
//!   external adapters over the protocol, supervised;
//! - [`oracle`]: deciding pass or fail: expectations, loop invariants,
//!   request replay, and the fuzz oracles;
//! - [`runner`]: `check(scenario) -> Outcome`, the one way a case runs, for
//!   tests, the CLI and fuzzers; [`report`] and [`coverage`] on top;
//! - [`generate`], [`diff`] and [`sim`]: seeded generation, differential runs,
//!   simulated sessions and shrinking;
//! - [`bless`]: rewriting expectations from the reference.

pub mod adapter;
pub mod bench;
pub mod bless;
pub mod cache_report;
pub mod coverage;
pub mod diff;
pub mod files;
pub mod generate;
pub mod limits;
pub mod oracle;
pub mod outcome;
pub mod parallel;
pub mod partition;
pub mod reference;
pub mod report;
pub mod runner;
pub mod sim;
