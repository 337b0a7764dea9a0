//! JavaScript semantics the contract leaks into observable output.
//!
//! Upstream is TypeScript, so a few JavaScript rules show up in what a harness
//! compares: string order is UTF-16 code-unit order, object keys that look like
//! array indices come first, errors carry a class name and an optional cause,
//! and a few platform errors (`TypeError`, `DataCloneError`) have fixed texts.
//! Keeping them here keeps the rest of the model free of ad-hoc emulation.

use std::cmp::Ordering;
use std::fmt;

/// A thrown JavaScript value, reduced to what the contract observes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsError {
    /// The error class, e.g. `Error`, `TypeError`, `DataCloneError`.
    pub name: String,
    /// The message, exactly as upstream formats it.
    pub message: String,
    /// An optional `cause`, rendered by the loop's error chain.
    pub cause: Option<Box<JsError>>,
    /// A machine code carried by `LlmError`s (`None` for plain errors).
    pub code: Option<String>,
    /// An `LlmError`'s serializable failure (`{message, code, status?,
    /// providerRetryAfterMs?, requestId?}`), which `turn/end` logs verbatim.
    /// Boxed: errors travel in every `Result`, and most have none.
    pub failure: Option<Box<serde_json::Value>>,
}

impl JsError {
    /// A plain `Error` with a message.
    pub fn error(message: impl Into<String>) -> Self {
        JsError {
            name: "Error".into(),
            message: message.into(),
            cause: None,
            code: None,
            failure: None,
        }
    }

    /// An `LlmError` carrying its failure object.
    pub fn llm(failure: serde_json::Value) -> Self {
        let message = failure
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or_default()
            .to_string();
        let code = failure
            .get("code")
            .and_then(|c| c.as_str())
            .map(str::to_string);
        JsError {
            name: "LlmError".into(),
            message,
            cause: None,
            code,
            failure: Some(Box::new(failure)),
        }
    }

    /// A `TypeError` with a message.
    pub fn type_error(message: impl Into<String>) -> Self {
        JsError {
            name: "TypeError".into(),
            ..JsError::error(message)
        }
    }

    /// The `TypeError` V8 throws when a property is read from `undefined`.
    pub fn read_of_undefined(property: &str) -> Self {
        JsError::type_error(format!(
            "Cannot read properties of undefined (reading '{property}')"
        ))
    }

    /// The `DataCloneError` `structuredClone` throws for a value it cannot clone.
    pub fn data_clone(value_text: &str) -> Self {
        JsError {
            name: "DataCloneError".into(),
            ..JsError::error(format!("{value_text} could not be cloned."))
        }
    }

    /// Attach a cause.
    pub fn with_cause(mut self, cause: JsError) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// The loop's `errorChain`: the message (or the class name when the
    /// message is empty), then `: <rendered cause chain>` unless the rendered
    /// cause is empty or repeats the message verbatim.
    pub fn chain(&self) -> String {
        let message = self.headline();
        let cause_text = self
            .cause
            .as_deref()
            .map(JsError::chain)
            .unwrap_or_default();
        if cause_text.is_empty() || cause_text == message {
            message.to_string()
        } else {
            format!("{message}: {cause_text}")
        }
    }

    fn headline(&self) -> &str {
        if self.message.is_empty() {
            &self.name
        } else {
            &self.message
        }
    }
}

impl fmt::Display for JsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

impl std::error::Error for JsError {}

/// Compare two strings the way JavaScript's `<` does: by UTF-16 code units.
///
/// This differs from Rust's `str` order (code points) only when one side has a
/// character at or above U+10000 and the other a character in U+E000..=U+FFFF
/// at the same position.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Length of a string in UTF-16 code units (JavaScript's `.length`).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// JavaScript `text.slice(start, end)` in UTF-16 code units, clamped to the
/// string. A slice that splits a surrogate pair yields U+FFFD for the lone
/// half, which is how such a string prints once it leaves JavaScript.
pub fn slice_utf16(text: &str, start: usize, end: usize) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let end = end.min(units.len());
    let start = start.min(end);
    String::from_utf16_lossy(&units[start..end])
}

/// Whether a property key is an array index (`"0"`, `"42"`, not `"01"`),
/// which JavaScript orders before every other own key.
pub fn is_array_index(key: &str) -> bool {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if key.len() > 1 && key.starts_with('0') {
        return false;
    }
    key.parse::<u64>().is_ok_and(|n| n < u32::MAX as u64)
}

/// Reorder keys into JavaScript own-property order: array indices ascending,
/// then the remaining keys in insertion order.
pub fn js_key_order<'a, I: IntoIterator<Item = &'a str>>(keys: I) -> Vec<&'a str> {
    let mut indices: Vec<&str> = Vec::new();
    let mut others: Vec<&str> = Vec::new();
    for key in keys {
        if is_array_index(key) {
            indices.push(key);
        } else {
            others.push(key);
        }
    }
    indices.sort_by_key(|k| k.parse::<u64>().unwrap_or(u64::MAX));
    indices.extend(others);
    indices
}

/// Rebuild a JSON value with every object's keys in JavaScript own-property
/// order, which is the order `structuredClone` and `JSON.stringify` produce.
pub fn js_normalize(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            if map.keys().any(|key| is_array_index(key)) {
                for key in js_key_order(map.keys().map(String::as_str)) {
                    out.insert(key.to_string(), js_normalize(&map[key]));
                }
            } else {
                // The common case: already in JavaScript order.
                for (key, item) in map {
                    out.insert(key.clone(), js_normalize(item));
                }
            }
            serde_json::Value::Object(out)
        }

        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(js_normalize).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_order_differs_from_code_point_order_for_astral_versus_private_use() {
        let astral = "\u{1F600}";
        let private_use = "\u{FFFF}";
        assert_eq!(astral.cmp(private_use), Ordering::Greater);
        assert_eq!(cmp_utf16(astral, private_use), Ordering::Less);
        assert_eq!(cmp_utf16("B", "a"), Ordering::Less);
        assert_eq!(cmp_utf16("a", "a_b"), Ordering::Less);
        assert_eq!(cmp_utf16("a_b", "ab"), Ordering::Less);
    }

    #[test]
    fn array_index_keys_come_first_in_ascending_order() {
        assert_eq!(
            js_key_order(["b", "10", "a", "2", "01"]),
            ["2", "10", "b", "a", "01"]
        );
        assert!(!is_array_index("4294967295"));
        assert!(is_array_index("4294967294"));
    }

    #[test]
    fn error_chain_skips_a_cause_that_repeats_the_message() {
        let err = JsError::error("boom").with_cause(JsError::error("disk"));
        assert_eq!(err.chain(), "boom: disk");
        let same = JsError::error("boom").with_cause(JsError::error("boom"));
        assert_eq!(same.chain(), "boom");
        let deep =
            JsError::error("a").with_cause(JsError::error("b").with_cause(JsError::error("c")));
        assert_eq!(deep.chain(), "a: b: c");
        let empty = JsError::type_error("");
        assert_eq!(empty.chain(), "TypeError");
    }

    #[test]
    fn slice_counts_utf16_units() {
        assert_eq!(slice_utf16("a\u{1F600}b", 0, 3), "a\u{1F600}");
        assert_eq!(slice_utf16("ab", 1, 99), "b");
    }
}
