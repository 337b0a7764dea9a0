//! Seeded generation and shrinking, shared by `dshc diff` (assembly-level
//! cases against an adapter) and `dshc sim` (loop sessions against the
//! invariants): one generate → run → shrink → write-a-regression pipeline.
//!
//! Case `k` of seed `s` comes from its own stream ([`case_rng`]), so any
//! single case replays alone.

pub mod assembly;
pub mod rng;
pub mod session;
pub mod shrink;
pub mod swarm;

pub use rng::SplitMix64;

/// The stream for case `case` of seed `seed`.
pub fn case_rng(seed: u64, case: u64) -> SplitMix64 {
    let mut mixer = SplitMix64::new(seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    SplitMix64::new(mixer.next_u64())
}
