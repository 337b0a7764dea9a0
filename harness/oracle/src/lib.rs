//! dshc's judge: whether what an implementation did is what the contract
//! says, decided without running anything.
//!
//! [`compare`] checks observations against a scenario's expectations, with
//! its matchers in [`matching`] ([`normalize`] first redacts message ids and
//! event times for real-time implementations); [`invariants`] and
//! [`replay`] are properties of a loop run's log and traffic, judged on every
//! implementation; [`cache_report`] names each prompt-cache break;
//! [`outcome`] is the closed set of outcomes a case can have. The crate has
//! no async runtime and no I/O: a verdict depends only on the data it is
//! given.

pub mod cache_report;
pub mod compare;
pub mod invariants;
pub mod matching;
pub mod normalize;
pub mod outcome;
pub mod replay;
mod trace;

pub use compare::Mismatch;
pub use outcome::{NotRun, Outcome, OutcomeKind};

use serde::Serialize;

/// Whether two values serialize to the same JSON bytes (key order
/// included), decided on their serialization traces (`trace.rs`) without
/// writing the JSON: equal traces write equal JSON. A value that cannot
/// be serialized is never the same as anything, so a failure cannot pass
/// for a match.
pub fn same_bytes<T: Serialize>(a: &T, b: &T) -> bool {
    // Equal traces are equally long: the second is sized by the first.
    let Some(a) = trace::trace_of(a, 0) else {
        return false;
    };
    trace::trace_of(b, a.len()).is_some_and(|b| a == b)
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
