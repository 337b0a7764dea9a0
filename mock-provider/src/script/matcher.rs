//! The `when` matcher of an entry: which requests it answers, by model, endpoint,
//! stream flag, last role and message text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Endpoint;

/// Which requests a script entry answers. Every field set must hold; an empty
/// matcher matches every request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestMatch {
    /// The request's `model` equals this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The endpoint: `chat` (`/chat/completions`, also under `/beta`) or `fim`
    /// (`/completions`, `/beta/completions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// The request's `stream` equals this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The last message's `role` equals this (`user`, `assistant`, `tool`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_role: Option<String>,
    /// The last message's text contains this (its `content` string, or the
    /// concatenated `text` of its content parts; for FIM the `prompt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message_contains: Option<String>,
    /// Some message's text contains this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub any_message_contains: Option<String>,
    /// The request has exactly this many messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_count: Option<usize>,
}

/// What a [`RequestMatch`] looks at in a request.
#[derive(Debug, Clone, Copy)]
pub struct MatchInput<'a> {
    /// The request's `model`.
    pub model: &'a str,
    /// Chat or FIM.
    pub endpoint: Endpoint,
    /// The request's `stream`.
    pub stream: bool,
    /// The request's messages; a FIM request is seen as one message of role
    /// `prompt` whose content is the `prompt`.
    pub messages: &'a [serde_json::Value],
}

impl RequestMatch {
    /// Whether every condition set holds for `request`.
    pub fn matches(&self, request: &MatchInput<'_>) -> bool {
        let last = request.messages.last();
        let last_role = last.and_then(|message| message.get("role")?.as_str());
        let contains =
            |message: &serde_json::Value, needle: &str| message_text(message).contains(needle);
        self.model
            .as_deref()
            .is_none_or(|model| model == request.model)
            && self
                .endpoint
                .is_none_or(|endpoint| endpoint == request.endpoint)
            && self.stream.is_none_or(|stream| stream == request.stream)
            && self
                .last_role
                .as_deref()
                .is_none_or(|role| Some(role) == last_role)
            && self
                .last_message_contains
                .as_deref()
                .is_none_or(|needle| last.is_some_and(|message| contains(message, needle)))
            && self.any_message_contains.as_deref().is_none_or(|needle| {
                request
                    .messages
                    .iter()
                    .any(|message| contains(message, needle))
            })
            && self
                .message_count
                .is_none_or(|count| count == request.messages.len())
    }
}

/// The text of a message for matching: its `content` string, or the
/// concatenated `text` of its content parts.
pub fn message_text(message: &serde_json::Value) -> String {
    match message.get("content") {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(serde_json::Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_requests_by_predicate() {
        let messages = [
            serde_json::json!({"role": "user", "content": "read the file"}),
            serde_json::json!({"role": "tool", "content": [{"type": "text", "text": "contents"}]}),
        ];
        let input = MatchInput {
            model: "m",
            endpoint: Endpoint::Chat,
            stream: true,
            messages: &messages,
        };
        let matcher = |json: &str| serde_json::from_str::<RequestMatch>(json).unwrap();
        assert!(matcher("{}").matches(&input));
        assert!(matcher(r#"{"model": "m", "last_role": "tool", "stream": true}"#).matches(&input));
        assert!(matcher(r#"{"last_message_contains": "content"}"#).matches(&input));
        assert!(!matcher(r#"{"last_message_contains": "read"}"#).matches(&input));
        assert!(matcher(r#"{"any_message_contains": "read", "message_count": 2}"#).matches(&input));
        assert!(!matcher(r#"{"endpoint": "fim"}"#).matches(&input));
        assert!(!matcher(r#"{"model": "other"}"#).matches(&input));
    }
}
