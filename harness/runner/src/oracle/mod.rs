//! Oracles: the code that decides whether something is a bug.
//!
//! [`compare`] checks observations against a scenario's expectations
//! ([`normalize`] first redacts message ids and event times for real-time
//! implementations); [`invariants`] and [`replay`] are properties of a loop
//! run's log and traffic; the [`render`] and [`tool_order`] oracles check
//! the model against independent implementations and properties. The
//! trust-boundary oracles take whatever bytes arrive there:
//! [`scenario_load`] (a scenario file), [`adapter_reply`] (an adapter's
//! stdout line), [`sse_decode`] (a provider's response body) and
//! [`mock_http`] (a client's connection to the mock provider). Fuzz
//! targets, the corpus replay test and the seeded stable test all call the
//! same `check_*_bytes` functions.

pub mod adapter_reply;
pub mod compare;
pub mod invariants;
pub mod matching;
pub mod mock_http;
pub mod normalize;
pub mod render;
pub mod replay;
pub mod scenario_load;
pub mod sse_decode;
pub mod tool_order;

use serde::Serialize;

use crate::generate::SplitMix64;

/// Whether two values serialize to the same JSON bytes (key order
/// included). A value that cannot be serialized is never the same as
/// anything, so a failure cannot pass for a match.
pub fn same_bytes<T: Serialize>(a: &T, b: &T) -> bool {
    serde_json::to_vec(a).is_ok_and(|expected| writes_bytes(b, &expected))
}

/// Whether `value` serializes to exactly `expected` (compared as it is
/// written, so the text is never held whole). A value that cannot be
/// serialized matches nothing.
pub fn writes_bytes<T: Serialize>(value: &T, expected: &[u8]) -> bool {
    let mut compared = CompareWriter {
        rest: expected,
        differs: false,
    };
    serde_json::to_writer(&mut compared, value).is_ok()
        && !compared.differs
        && compared.rest.is_empty()
}

/// An `io::Write` that checks what it is given against expected bytes.
struct CompareWriter<'a> {
    rest: &'a [u8],
    differs: bool,
}

impl std::io::Write for CompareWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self.rest.strip_prefix(bytes) {
            Some(rest) if !self.differs => self.rest = rest,
            _ => self.differs = true,
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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

#[cfg(test)]
mod tests {
    use super::same_bytes;
    use serde_json::json;

    #[test]
    fn same_bytes_is_byte_equality_of_the_json() {
        assert!(same_bytes(&json!({"a": [1, "x"]}), &json!({"a": [1, "x"]})));
        // Key order is part of the bytes, though `Value` equality ignores it.
        assert!(!same_bytes(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1})
        ));
        // A prefix, an extension and a number's form all differ.
        assert!(!same_bytes(&json!([1, 2]), &json!([1, 2, 3])));
        assert!(!same_bytes(&json!([1, 2, 3]), &json!([1, 2])));
        assert!(!same_bytes(&json!(1), &json!(1.0)));
        assert!(!same_bytes(&json!("ab"), &json!("ac")));
    }
}
