//! dshc: a deterministic simulation and conformance harness for the
//! prompt-assembly and context-injection loop of DeepSeek Harness (dsh).
//!
//! Map of the code:
//! - [`model`]: the reference model of the registry, assembly, rendering and
//!   tool order. Pure: no I/O, no clock.
//! - [`scenario`]: the scenario file format, loading and compiling to cases.
//! - [`protocol`]: what an implementation receives and returns per case.
//! - [`scripted`]: the reference implementation of a case (scripted
//!   providers and listeners on the model).
//! - [`oracle`]: deciding pass or fail.
//! - [`runner`]: `check(scenario) -> Outcome`, shared by tests, CLI and fuzzers.

pub mod adapter;
pub mod agent;
pub mod coverage;
pub mod diff;
pub mod generate;
pub mod model;
pub mod oracle;
pub mod protocol;
pub mod report;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod schema;
pub mod scripted;
pub mod sim;
