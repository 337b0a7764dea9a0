//! Oracles: the code that decides whether something is a bug.
//!
//! [`compare`] checks observations against a scenario's expectations; the
//! render and tool-order oracles check the model against independent
//! implementations and properties, shared by tests and fuzz targets.

pub mod compare;
