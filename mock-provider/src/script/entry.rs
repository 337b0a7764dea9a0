//! One script entry: the answer to one request (stream parts, pacing, usage, an
//! optional fault), its tool calls, and the token counts it reports.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::Dialect;
use super::{FaultKind, Fragments, RequestMatch, default_true, is_false, is_true, is_zero};
use crate::tokenizer::count_tokens;

/// The answer to one request. All fields are optional; `{}` is a stream that only
/// finishes (`finish_reason = "stop"`, no content).
///
/// A stream is sent as these `data:` events, in order (the "events" that
/// `after_events` and `keep_alive_before` count, 0-based):
///
/// 1. a role chunk `delta: {"role":"assistant","content":""}` (unless `role_chunk = false`);
/// 2. one chunk per `reasoning` fragment (`delta.reasoning_content`);
/// 3. one chunk per `content` fragment (`delta.content`);
/// 4. per tool call, one chunk per `arguments` fragment (`delta.tool_calls[0]`; the first
///    fragment of a call carries `id`, `type`, `function.name`);
/// 5. the finish chunk (`finish_reason`, and `usage` when usage is `on_finish`);
/// 6. the usage chunk (`choices: []`, `usage`), when usage is `trailing`;
/// 7. `[DONE]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// Which requests this entry answers (default: any). See [`RequestMatch`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<RequestMatch>,
    /// Answer every matching request, not only the first (default false): a
    /// client's retries, or any number of similar requests, get this answer.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reuse: bool,
    /// Reasoning text fragments, one `delta.reasoning_content` chunk each. A single
    /// string is one fragment.
    #[serde(default, skip_serializing_if = "Fragments::is_empty")]
    pub reasoning: Fragments,
    /// Answer text fragments, one `delta.content` chunk each. A single string is one
    /// fragment.
    #[serde(default, skip_serializing_if = "Fragments::is_empty")]
    pub content: Fragments,
    /// Tool calls, streamed after the content, in order; the wire `index` is the
    /// position in this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// `finish_reason` of the finish chunk: `stop` (default), `tool_calls`, `length`,
    /// `content_filter`, or any other string (sent verbatim).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Overrides the computed `completion_tokens` (default: tokens of the reasoning,
    /// content and tool-call argument text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Overrides the computed `completion_tokens_details.reasoning_tokens` (default:
    /// tokens of the reasoning text). Setting it also makes the field present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Where usage goes: `trailing` (a last chunk with `choices: []`), `on_finish`
    /// (attached to the finish chunk, as DeepSeek itself does) or `omit`. Default:
    /// the dialect's (see [`Dialect`]): `on_finish` for `deepseek`; for `openai`,
    /// `trailing` when the request sent `stream_options.include_usage = true`, else
    /// `omit`. Non-streaming answers always carry usage unless this is `omit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsagePlacement>,
    /// Whether usage carries `prompt_tokens_details.cached_tokens` (default true). Set
    /// false to leave only DeepSeek's own `prompt_cache_hit_tokens` field.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub prompt_tokens_details: bool,
    /// Whether the stream opens with a role chunk
    /// `delta: {"role":"assistant","content":""}` (default true).
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub role_chunk: bool,
    /// Delay before every `data:` event (including usage and `[DONE]`), in
    /// milliseconds of tokio time (virtual under turmoil or paused time). For HTTP
    /// errors and non-streaming answers: one delay before the response head.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Send one `: keep-alive` comment right before each listed event index (0-based,
    /// see the event list above; repeat an index for several comments). Indices past
    /// the last event are sent after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep_alive_before: Vec<usize>,
    /// Overrides `created` (Unix seconds) of this response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_s: Option<u64>,
    /// Sent as the `x-request-id` response header (the adapter reports it as the
    /// error's `requestId`). May be empty: an empty header value is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// A fault to inject. HTTP errors: `rate_limit`, `server_error`,
    /// `context_overflow`, `http_error`. Stream faults: `drop_connection`, `stall`,
    /// `malformed_json`, `missing_done`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultKind>,
    /// For stream faults: how many `data:` events are sent before the fault strikes
    /// (keep-alive comments do not count). Required for `drop_connection`, `stall`,
    /// `malformed_json`; optional for `missing_done` (the stream then ends cleanly after
    /// this many events; default: every event except `[DONE]`). Values past the last
    /// event mean "after the last event".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_events: Option<usize>,
    /// For `stall`: how long no byte is sent, in milliseconds of tokio time; the stream
    /// then continues normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
    /// For HTTP errors: value of the `Retry-After` header in seconds (absent if unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// For HTTP errors: the `Retry-After` header as written (an HTTP date such
    /// as `"Thu, 01 Jan 2026 00:00:02 GMT"`, or any other value); not with
    /// `retry_after_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// For `http_error`: the status code (400–599). Not allowed on other entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// For HTTP errors: overrides the `error.message` of the JSON error body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For HTTP errors: overrides `error.type` of the JSON error body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// For HTTP errors: the response body, sent verbatim instead of the JSON error
    /// body (any text: JSON without an `error` object, `null` fields, not JSON at
    /// all). Not with `message` or `error_type`, which describe the JSON body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_body: Option<String>,
    /// For `malformed_json`: the exact `data:` payload to send (default: a truncated
    /// chunk object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed_payload: Option<String>,
}

impl Default for ScriptEntry {
    /// Same as the empty entry `{}`: a stream with a role chunk that finishes with `stop`.
    fn default() -> Self {
        Self {
            when: None,
            reuse: false,
            reasoning: Fragments::default(),
            content: Fragments::default(),
            tool_calls: Vec::new(),
            finish_reason: None,
            completion_tokens: None,
            reasoning_tokens: None,
            usage: None,
            prompt_tokens_details: true,
            role_chunk: true,
            delay_ms: 0,
            keep_alive_before: Vec::new(),
            created_s: None,
            request_id: None,
            fault: None,
            after_events: None,
            stall_ms: None,
            retry_after_s: None,
            retry_after: None,
            status: None,
            message: None,
            error_type: None,
            error_body: None,
            malformed_payload: None,
        }
    }
}

/// One scripted tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Call id sent in the first fragment (default `call_<response number>_<index>`,
    /// e.g. `call_1_0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name, sent in the first fragment.
    pub name: String,
    /// Argument text fragments, one chunk each; their concatenation is the raw
    /// arguments string (normally JSON). A single string is one fragment; an empty
    /// list still sends one chunk with `arguments: ""`.
    #[serde(default, skip_serializing_if = "Fragments::is_empty")]
    pub arguments: Fragments,
}

/// Where the usage object is sent in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UsagePlacement {
    /// A final chunk with `choices: []` and `usage`, after the finish chunk (OpenAI's
    /// `stream_options.include_usage` shape).
    Trailing,
    /// `usage` on the finish chunk itself; no separate usage chunk.
    OnFinish,
    /// No usage anywhere (every chunk has `usage: null`).
    Omit,
}

/// Token counts of a scripted answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionCounts {
    /// `completion_tokens` (computed or overridden).
    pub completion_tokens: u64,
    /// `completion_tokens_details.reasoning_tokens` (computed or overridden).
    pub reasoning_tokens: u64,
}

impl ScriptEntry {
    /// A stream answering with these content fragments.
    pub fn content<I, S>(fragments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            content: Fragments::from_iter(fragments),
            ..Self::stream()
        }
    }

    /// An empty stream (role chunk, finish `stop`); fill fields with struct update syntax.
    pub fn stream() -> Self {
        Self::default()
    }

    /// An HTTP error entry of this kind (`status` must still be set for `http_error`).
    pub fn fault(kind: FaultKind) -> Self {
        Self {
            fault: Some(kind),
            ..Self::stream()
        }
    }

    /// True if this entry is answered with an HTTP error instead of a stream.
    pub fn is_http_error(&self) -> bool {
        self.fault.is_some_and(FaultKind::is_http_error)
    }

    /// True if this entry is answered without a stream: an HTTP error,
    /// `no_content`'s bodiless success, or no answer at all (`close_before_head`).
    pub fn is_streamless(&self) -> bool {
        self.is_http_error()
            || matches!(
                self.fault,
                Some(FaultKind::NoContent | FaultKind::CloseBeforeHead)
            )
    }

    /// The finish reason sent on the wire (`stop` unless scripted).
    pub fn finish_reason_or_default(&self) -> &str {
        self.finish_reason.as_deref().unwrap_or("stop")
    }

    /// Token counts of this answer: the [`crate::tokenizer`] over the concatenated
    /// reasoning fragments, plus the concatenated content fragments, plus each tool
    /// call's concatenated argument fragments (each text tokenized on its own), unless
    /// overridden by `completion_tokens` / `reasoning_tokens`.
    pub fn completion_counts(&self) -> CompletionCounts {
        let reasoning_computed = count_tokens(&self.reasoning.concat());
        let computed = reasoning_computed
            + count_tokens(&self.content.concat())
            + self
                .tool_calls
                .iter()
                .map(|call| count_tokens(&call.arguments.concat()))
                .sum::<u64>();
        CompletionCounts {
            completion_tokens: self.completion_tokens.unwrap_or(computed),
            reasoning_tokens: self.reasoning_tokens.unwrap_or(reasoning_computed),
        }
    }

    /// Whether usage carries `completion_tokens_details`: only when the entry scripts
    /// reasoning (fragments or `reasoning_tokens`), like a thinking model.
    pub fn reports_reasoning_tokens(&self) -> bool {
        !self.reasoning.is_empty() || self.reasoning_tokens.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> ScriptEntry {
        serde_json::from_str(json).expect("entry parses")
    }

    #[test]
    fn defaults_describe_a_plain_stop_stream() {
        let entry = parse("{}");
        assert_eq!(entry, ScriptEntry::stream());
        assert_eq!(entry.finish_reason_or_default(), "stop");
        assert!(entry.role_chunk && entry.prompt_tokens_details);
        assert!(entry.validate().is_ok());
    }

    #[test]
    fn completion_counts_use_the_tokenizer_unless_overridden() {
        let entry = parse(
            r#"{"reasoning": ["Think", "ing"], "content": ["Hel", "lo"],
                "tool_calls": [{"name": "read", "arguments": ["{\"pa", "th\":\"a\"}"]}]}"#,
        );
        // "Thinking" → Thin, king; "Hello" → Hell, o; {"path":"a"} → { " path " : " a " }
        let counts = entry.completion_counts();
        assert_eq!(counts.reasoning_tokens, 2);
        assert_eq!(counts.completion_tokens, 2 + 2 + 9);
        assert!(entry.reports_reasoning_tokens());
        let overridden = ScriptEntry {
            completion_tokens: Some(500),
            ..entry
        };
        assert_eq!(overridden.completion_counts().completion_tokens, 500);
        assert!(!parse(r#"{"content": "x"}"#).reports_reasoning_tokens());
    }
}
