//! Oracles: the code that decides whether something is a bug.
//!
//! [`compare`] checks observations against a scenario's expectations
//! ([`normalize`] first redacts message ids and event times for real-time
//! implementations); [`invariants`] and [`replay`] are properties of a loop
//! run's log and traffic; the [`render`] and [`tool_order`] oracles check
//! the model against independent implementations and properties. Fuzz
//! targets, the corpus replay test and the seeded stable test all call the
//! same `check_*_bytes` functions.

pub mod compare;
pub mod invariants;
pub mod matching;
pub mod normalize;
pub mod render;
pub mod replay;
pub mod tool_order;

use serde::Serialize;

use crate::generate::SplitMix64;

/// Whether two values serialize to the same JSON bytes (key order
/// included). A value that cannot be serialized is never the same as
/// anything, so a failure cannot pass for a match.
pub fn same_bytes<T: Serialize>(a: &T, b: &T) -> bool {
    matches!(
        (serde_json::to_string(a), serde_json::to_string(b)),
        (Ok(a), Ok(b)) if a == b
    )
}

/// Run an oracle over `cases` seeded random byte strings.
pub fn run_seeded(seed: u64, cases: usize, oracle: fn(&[u8])) {
    let mut rng = SplitMix64::new(seed);
    for _ in 0..cases {
        let len = rng.below(256) as usize;
        oracle(&rng.bytes(len));
    }
}
