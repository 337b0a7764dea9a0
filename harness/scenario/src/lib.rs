//! dshc's API boundary: what a scenario file says and what an
//! implementation is sent and answers.
//!
//! - [`format`](mod@format): scenario files (TOML), each step a command plus its
//!   expectation;
//! - [`load`] and [`compile`]: parsing with `file:line:column` errors and
//!   turning a scenario into a [`protocol::Case`];
//! - [`protocol`]: the adapter protocol's messages, cases and results;
//! - [`schema`]: the committed JSON Schemas of both.
//!
//! - [`data_file`]: the other data files dshc reads (catalogs, expected
//!   failures, scripts, logs), with the same positioned errors;
//! - [`write`]: scenario files as dshc writes them.
//!
//! Nothing here runs anything: the reference (`dshc-reference`), the judge
//! (`dshc-oracle`), the simulator (`dshc-fuzzing`) and supervision
//! (`dshc-runner`) live above it.

pub mod compile;
pub mod data_file;
pub mod format;
pub mod load;
pub mod migrate;
pub mod pattern;
pub mod protocol;
pub mod schema;
pub mod write;
