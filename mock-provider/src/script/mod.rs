//! The script format: what the mock answers to each request, in order. Scenario files
//! (TOML or JSON) embed a [`Script`], so every type here is serde + JSON Schema, rejects
//! unknown fields, and documents each field (the doc comments become the schema's
//! descriptions).
//!
//! One [`ScriptEntry`] answers one chat-completions request. An entry is either
//!
//! * a **stream** (the default): reasoning fragments, content fragments, tool calls with
//!   argument fragments, a finish reason, optional pacing and keep-alives, and optionally
//!   one transport fault (`drop_connection`, `stall`, `malformed_json`, `missing_done`);
//! * an **HTTP error**: `fault = "rate_limit" | "server_error" | "context_overflow" |
//!   "http_error"`, answered with a DeepSeek-shaped JSON error body and no stream.
//!
//! The fields are flat so entries stay one short line in TOML, for example
//! `{ content = ["Hel", "lo"] }` or `{ fault = "rate_limit", retry_after_s = 2 }`.
//! [`Script::validate`] rejects combinations that make no sense (say, `retry_after_s`
//! on a stream) with a message naming the entry.
//!
//! The format's parts: `entry` (one answer: stream parts, pacing, usage) and its
//! `fault`, the `when` matcher (`matcher`), `fragments`, the script-wide switches
//! (`options`: dialect, validation rules), the `balance`; `validate` holds the checks
//! a script must pass before it is served.

mod balance;
mod entry;
mod fault;
mod fragments;
mod matcher;
mod options;
mod validate;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::CatalogModel;

pub use balance::Balance;
pub(crate) use balance::add_decimal_strings;
pub use entry::{CompletionCounts, ScriptEntry, ScriptToolCall, UsagePlacement};
pub use fault::FaultKind;
pub use fragments::Fragments;
pub use matcher::{MatchInput, RequestMatch, message_text};
pub use options::{Dialect, Validation};
pub use validate::ScriptError;

/// Default `created` of the first response: 2025-01-01T00:00:00Z.
pub const DEFAULT_CREATED_START_S: u64 = 1_735_689_600;

/// A whole provider script: one entry per request, consumed in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Responses, one per request. Each request gets the first entry, in list
    /// order, that is still unused (or `reuse = true`) and whose `when` matches
    /// it; an entry without `when` matches any request, so a script without
    /// `when` is answered strictly in order. Requests rejected before reaching the
    /// script (unknown path, wrong method, malformed body, a validation rule) do
    /// not use an entry. A request no entry answers gets a non-retryable 400 with
    /// code `script_exhausted` naming the script and the request number.
    #[serde(default)]
    pub responses: Vec<ScriptEntry>,
    /// Unix seconds used as `created` of the first response; the `n`-th scripted
    /// response (1-based) uses `created_start_s + n − 1` unless its entry sets
    /// `created_s`. Default 1735689600 (2025-01-01T00:00:00Z). Never taken from a
    /// clock.
    #[serde(default = "default_created_start_s")]
    pub created_start_s: u64,
    /// Which API the wire follows: `deepseek` (default) or `openai`. See [`Dialect`].
    #[serde(default, skip_serializing_if = "Dialect::is_default")]
    pub dialect: Dialect,
    /// Which rules of the real API requests are checked against (documented
    /// 400s, on by default). See [`Validation`].
    #[serde(default, skip_serializing_if = "Validation::is_default")]
    pub validation: Validation,
    /// Models to add to the built-in catalog, or to replace a built-in model of
    /// the same id (see [`crate::catalog`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<CatalogModel>,
    /// What `GET /user/balance` answers (default: available, 110.00 CNY).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
    /// `system_fingerprint` of every response (default `fp_dshc_mock`).
    #[serde(
        default = "default_fingerprint",
        skip_serializing_if = "is_default_fingerprint"
    )]
    pub system_fingerprint: String,
}

/// Default `system_fingerprint` of every response.
pub const DEFAULT_SYSTEM_FINGERPRINT: &str = "fp_dshc_mock";

fn default_fingerprint() -> String {
    DEFAULT_SYSTEM_FINGERPRINT.to_owned()
}

fn is_default_fingerprint(value: &str) -> bool {
    value == DEFAULT_SYSTEM_FINGERPRINT
}

/// The two request kinds the script answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// Chat completions, plain or `/beta` (prefix completion).
    Chat,
    /// Fill-in-the-middle text completions.
    Fim,
}

fn default_created_start_s() -> u64 {
    DEFAULT_CREATED_START_S
}

impl Default for Script {
    fn default() -> Self {
        Self {
            responses: Vec::new(),
            created_start_s: DEFAULT_CREATED_START_S,
            dialect: Dialect::default(),
            validation: Validation::default(),
            models: Vec::new(),
            balance: None,
            system_fingerprint: default_fingerprint(),
        }
    }
}

impl Script {
    /// A script with these responses and the default `created_start_s`.
    pub fn new(responses: Vec<ScriptEntry>) -> Self {
        Self {
            responses,
            ..Self::default()
        }
    }

    /// `created` (Unix seconds) of the `response_number`-th scripted response
    /// (1-based), answered from entry `index`.
    pub fn created_s_for(&self, index: usize, response_number: u64) -> u64 {
        self.responses
            .get(index)
            .and_then(|entry| entry.created_s)
            .unwrap_or(
                self.created_start_s
                    .saturating_add(response_number.saturating_sub(1)),
            )
    }
}

// Serde defaults and `skip_serializing_if` tests shared by the format's types.

fn default_true() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_rejected() {
        let error = serde_json::from_str::<ScriptEntry>(r#"{"contnet": ["x"]}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `contnet`"),
            "{error}"
        );
        let error = serde_json::from_str::<Script>(r#"{"responses": [], "seed": 1}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `seed`"),
            "{error}"
        );
    }

    #[test]
    fn created_defaults_to_start_plus_index() {
        let script = Script {
            responses: vec![
                ScriptEntry::stream(),
                ScriptEntry {
                    created_s: Some(7),
                    ..ScriptEntry::stream()
                },
                ScriptEntry::stream(),
            ],
            created_start_s: 100,
            ..Script::default()
        };
        assert_eq!(script.created_s_for(0, 1), 100);
        assert_eq!(script.created_s_for(1, 2), 7);
        assert_eq!(script.created_s_for(2, 3), 102);
    }

    #[test]
    fn json_schema_carries_field_docs() {
        let schema = serde_json::to_value(schemars::schema_for!(Script)).unwrap();
        let entry = &schema["$defs"]["ScriptEntry"];
        assert_eq!(entry["additionalProperties"], serde_json::json!(false));
        let description = entry["properties"]["retry_after_s"]["description"]
            .as_str()
            .unwrap();
        assert!(description.contains("Retry-After"), "{description}");
        assert!(schema["$defs"]["Fragments"]["anyOf"].is_array());
    }
}
