//! The fuzzing crate's integration tests, one binary (matklad's "one
//! integration test binary per crate": one link, not one per file).

mod diff;
mod oracles;
mod sim;
