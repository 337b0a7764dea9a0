//! dshc: a deterministic simulation and conformance harness for the
//! prompt-assembly and context-injection loop of DeepSeek Harness (dsh).
//!
//! Map of the code:
//! - [`model`]: the reference model of the registry, assembly, rendering and
//!   tool order. Pure: no I/O, no clock.

pub mod model;
