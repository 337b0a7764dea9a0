//! The scenario crate's integration tests, one binary (so a change relinks
//! one executable): every refusal named by a test, and the committed
//! schemas current.

mod refusals;
mod schema_fresh;
