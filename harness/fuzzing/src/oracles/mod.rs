//! The fuzz oracles: each takes arbitrary bytes and panics only on a bug.
//!
//! The [`render`] and [`tool_order`] oracles check the model against
//! independent implementations and properties; [`matcher`] checks the
//! judge's matching over arbitrary expectations and observations (its cost
//! bounded, `$contains` against an independent search). The trust-boundary oracles
//! take whatever bytes arrive there: [`scenario_load`] (a scenario file),
//! [`adapter_reply`] (an adapter's stdout line), [`sse_decode`] (a
//! provider's response body) and [`mock_http`] (a client's connection to the
//! mock provider). Fuzz targets, the corpus replay test and the seeded
//! stable test all call the same `check_*_bytes` functions, and the seeded
//! drivers below feed them between fuzz runs.

pub mod adapter_reply;
pub mod matcher;
pub mod mock_http;
pub mod render;
pub mod scenario_load;
pub mod sse_decode;
pub mod tool_order;

use crate::generate::SplitMix64;

/// Run an oracle over `cases` seeded random byte strings.
pub fn run_seeded(seed: u64, cases: usize, oracle: fn(&[u8])) {
    let mut rng = SplitMix64::new(seed);
    for _ in 0..cases {
        let len = rng.below(256) as usize;
        oracle(&rng.bytes(len));
    }
}

/// Run an oracle over `cases` seeded mutations of `seeds`: each case takes
/// one seed and applies one to four byte edits (overwrite, insert, delete,
/// truncate, or splice in a slice of another seed). Structured inputs such
/// as scenario files and reply lines rarely survive random bytes; their
/// mutations reach the code past the parser on stable, between fuzz runs.
pub fn run_mutated(seed: u64, seeds: &[Vec<u8>], cases: usize, oracle: fn(&[u8])) {
    if seeds.is_empty() {
        return;
    }
    let mut rng = SplitMix64::new(seed);
    let pick = |rng: &mut SplitMix64, len: usize| rng.below(len as u64 + 1) as usize;
    for _ in 0..cases {
        let mut input = seeds[rng.below(seeds.len() as u64) as usize].clone();
        for _ in 0..=rng.below(4) {
            let at = pick(&mut rng, input.len());
            match rng.below(5) {
                0 if at < input.len() => input[at] = rng.bytes(1)[0],
                1 => {
                    let len = rng.below(8) as usize;
                    input.splice(at..at, rng.bytes(len));
                }
                2 => {
                    let end = (at + 1 + rng.below(16) as usize).min(input.len());
                    input.drain(at.min(end)..end);
                }
                3 => input.truncate(at),
                _ => {
                    let other = &seeds[rng.below(seeds.len() as u64) as usize];
                    let from = pick(&mut rng, other.len());
                    let to = (from + rng.below(64) as usize).min(other.len());
                    input.splice(at..at, other[from..to].iter().copied());
                }
            }
        }
        oracle(&input);
    }
}
