//! The mock provider's integration tests, one binary (so a change relinks
//! one executable): over a real loopback socket, and inside turmoil's
//! simulated network.

mod loopback;
mod turmoil_sim;
