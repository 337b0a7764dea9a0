//! Scenario files: the format, loading with positions, compiling to cases,
//! and the bless flow that rewrites expectations.

pub mod bless;
pub mod compile;
pub mod format;
pub mod load;
pub mod order;
pub mod plugins;
