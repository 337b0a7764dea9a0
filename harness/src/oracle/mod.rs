//! Oracles: the code that decides whether something is a bug.
//!
//! [`compare`] checks observations against a scenario's expectations
//! ([`normalize`] first redacts message ids and event times for real-time
//! implementations); the [`render`] and [`tool_order`] oracles check the model against independent
//! implementations and properties. Fuzz targets, the corpus replay test and
//! the seeded stable test all call the same `check_*_bytes` functions.

pub mod compare;
pub mod normalize;
pub mod render;
pub mod tool_order;

use crate::rng::SplitMix64;

/// Run an oracle over `cases` seeded random byte strings.
pub fn run_seeded(seed: u64, cases: usize, oracle: fn(&[u8])) {
    let mut rng = SplitMix64::new(seed);
    for _ in 0..cases {
        let len = rng.below(256) as usize;
        oracle(&rng.bytes(len));
    }
}
