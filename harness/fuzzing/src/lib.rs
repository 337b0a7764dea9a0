//! dshc's seeded search, as wasmtime splits it: generators that draw cases
//! from a seed ([`generate`]), the runs that judge them against the
//! reference ([`diff`] for an adapter, [`sim`] for the invariants), the
//! shrinker that turns a finding into a minimal scenario, the regression
//! files that are checked to reproduce it ([`regression`]), what a run
//! exercised ([`exercised`]), and the byte
//! oracles the fuzz targets are thin wrappers over ([`oracles`]).
//!
//! Everything here is deterministic: one seed gives the same cases, the
//! same findings and the same files.

pub mod diff;
pub mod exercised;
pub mod generate;
pub mod oracles;
pub mod regression;
pub mod signals;
pub mod sim;
