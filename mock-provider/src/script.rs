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

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::catalog::CatalogModel;
use crate::tokenizer::count_tokens;

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

/// The API whose wire details the mock reproduces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// DeepSeek's API: every stream carries usage on its finish chunk (whatever
    /// `stream_options` says) and no separate usage chunk; the finish delta is
    /// `{"content": ""}`; a thinking answer opens with
    /// `{"role": "assistant", "content": null, "reasoning_content": ""}`; chunks
    /// carry no `usage` key before the finish chunk.
    #[default]
    Deepseek,
    /// OpenAI's behaviour for OpenAI-style clients: usage only when the request
    /// sets `stream_options.include_usage`, then in a separate last chunk with
    /// `choices: []`, and `"usage": null` on every chunk before it.
    Openai,
}

impl Dialect {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The request rules the mock enforces as the real API does, each answered
/// with a documented 400 (`docs/mock-provider.md`) before any script entry is
/// consumed. All are on by default except `known_model`; `enabled = false`
/// turns every rule off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Master switch (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// An assistant message of the current turn that made tool calls in an answer
    /// this mock streamed with reasoning must carry that `reasoning_content` back
    /// (unless the request disables thinking). Default true.
    #[serde(default = "default_true")]
    pub reasoning_passback: bool,
    /// Every assistant `tool_calls` entry is answered by a `tool` message right
    /// after it, and every `tool` message answers a call of the assistant message
    /// before it. Default true.
    #[serde(default = "default_true")]
    pub tool_results: bool,
    /// Prompt tokens plus `max_tokens` (or `max_completion_tokens`) must fit the
    /// model's context window. Default true.
    #[serde(default = "default_true")]
    pub context_window: bool,
    /// A message with `prefix: true` must be the last one, from the assistant,
    /// sent to the `/beta` base. Default true.
    #[serde(default = "default_true")]
    pub prefix_completion: bool,
    /// The model must be in the catalog (DeepSeek answers "Model Not Exist").
    /// Default false: ports and tests use their own model ids.
    #[serde(default)]
    pub known_model: bool,
}

impl Default for Validation {
    fn default() -> Self {
        Self {
            enabled: true,
            reasoning_passback: true,
            tool_results: true,
            context_window: true,
            prefix_completion: true,
            known_model: false,
        }
    }
}

impl Validation {
    /// Every rule off.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `rule` is checked (the master switch and the rule both on).
    pub fn checks(&self, rule: bool) -> bool {
        self.enabled && rule
    }
}

/// What `GET /user/balance` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Balance {
    /// `is_available` (default true).
    #[serde(default = "default_true")]
    pub is_available: bool,
    /// `currency` (default `CNY`).
    #[serde(default = "default_currency")]
    pub currency: String,
    /// `granted_balance`, as the decimal string the API sends (default `10.00`).
    #[serde(default = "default_granted")]
    pub granted_balance: String,
    /// `topped_up_balance` (default `100.00`); `total_balance` is the sum.
    #[serde(default = "default_topped_up")]
    pub topped_up_balance: String,
}

fn default_currency() -> String {
    "CNY".to_owned()
}

fn default_granted() -> String {
    "10.00".to_owned()
}

fn default_topped_up() -> String {
    "100.00".to_owned()
}

impl Default for Balance {
    fn default() -> Self {
        Self {
            is_available: true,
            currency: default_currency(),
            granted_balance: default_granted(),
            topped_up_balance: default_topped_up(),
        }
    }
}

/// Which requests a script entry answers. Every field set must hold; an empty
/// matcher matches every request.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestMatch {
    /// The request's `model` equals this.
    pub model: Option<String>,
    /// The endpoint: `chat` (`/chat/completions`, also under `/beta`) or `fim`
    /// (`/completions`, `/beta/completions`).
    pub endpoint: Option<Endpoint>,
    /// The request's `stream` equals this.
    pub stream: Option<bool>,
    /// The last message's `role` equals this (`user`, `assistant`, `tool`, …).
    pub last_role: Option<String>,
    /// The last message's text contains this (its `content` string, or the
    /// concatenated `text` of its content parts; for FIM the `prompt`).
    pub last_message_contains: Option<String>,
    /// Some message's text contains this.
    pub any_message_contains: Option<String>,
    /// The request has exactly this many messages.
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
        let contains = |message: &serde_json::Value, needle: &str| {
            crate::request_rules::message_text(message).contains(needle)
        };
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

    /// Check every entry (see [`ScriptEntry::validate`]), the balance and the models.
    pub fn validate(&self) -> Result<(), ScriptError> {
        for (index, entry) in self.responses.iter().enumerate() {
            entry
                .validate()
                .map_err(|message| ScriptError::InvalidEntry { index, message })?;
        }
        if let Some(balance) = &self.balance {
            for (field, value) in [
                ("granted_balance", &balance.granted_balance),
                ("topped_up_balance", &balance.topped_up_balance),
            ] {
                if parse_cents(value).is_none() {
                    return Err(ScriptError::Invalid(format!(
                        "balance.{field} {value:?} is not a decimal amount like \"10.00\""
                    )));
                }
            }
        }
        for model in &self.models {
            if model.id.is_empty() || model.context_window == 0 {
                return Err(ScriptError::Invalid(format!(
                    "models: {:?} needs a non-empty id and a context_window above 0",
                    model.id
                )));
            }
        }
        Ok(())
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

/// A script that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// An entry combines fields that do not fit together.
    #[error("script entry {index}: {message}")]
    InvalidEntry {
        /// 0-based position in `responses`.
        index: usize,
        /// What is wrong, naming the fields.
        message: String,
    },
    /// A script-level field is wrong.
    #[error("script: {0}")]
    Invalid(String),
}

/// An amount like `10.00` in hundredths (at most two decimals, no sign).
fn parse_cents(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 2 {
        return None;
    }
    let fraction_cents: u64 = format!("{fraction:0<2}").parse().ok()?;
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(fraction_cents)
}

/// The sum of two amounts (see [`Balance`]), written with two decimals.
pub(crate) fn add_decimal_strings(left: &str, right: &str) -> Option<String> {
    let cents = parse_cents(left)?.checked_add(parse_cents(right)?)?;
    Some(format!("{}.{:02}", cents / 100, cents % 100))
}

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
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// Which requests this entry answers (default: any). See [`RequestMatch`].
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
    pub finish_reason: Option<String>,
    /// Overrides the computed `completion_tokens` (default: tokens of the reasoning,
    /// content and tool-call argument text).
    pub completion_tokens: Option<u64>,
    /// Overrides the computed `completion_tokens_details.reasoning_tokens` (default:
    /// tokens of the reasoning text). Setting it also makes the field present.
    pub reasoning_tokens: Option<u64>,
    /// Where usage goes: `trailing` (a last chunk with `choices: []`), `on_finish`
    /// (attached to the finish chunk, as DeepSeek itself does) or `omit`. Default:
    /// the dialect's (see [`Dialect`]): `on_finish` for `deepseek`; for `openai`,
    /// `trailing` when the request sent `stream_options.include_usage = true`, else
    /// `omit`. Non-streaming answers always carry usage unless this is `omit`.
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
    pub created_s: Option<u64>,
    /// Sent as the `x-request-id` response header (the adapter reports it as the
    /// error's `requestId`).
    pub request_id: Option<String>,
    /// A fault to inject. HTTP errors: `rate_limit`, `server_error`,
    /// `context_overflow`, `http_error`. Stream faults: `drop_connection`, `stall`,
    /// `malformed_json`, `missing_done`.
    pub fault: Option<FaultKind>,
    /// For stream faults: how many `data:` events are sent before the fault strikes
    /// (keep-alive comments do not count). Required for `drop_connection`, `stall`,
    /// `malformed_json`; optional for `missing_done` (the stream then ends cleanly after
    /// this many events; default: every event except `[DONE]`). Values past the last
    /// event mean "after the last event".
    pub after_events: Option<usize>,
    /// For `stall`: how long no byte is sent, in milliseconds of tokio time; the stream
    /// then continues normally.
    pub stall_ms: Option<u64>,
    /// For HTTP errors: value of the `Retry-After` header in seconds (absent if unset).
    pub retry_after_s: Option<u64>,
    /// For `http_error`: the status code (400–599). Not allowed on other entries.
    pub status: Option<u16>,
    /// For HTTP errors: overrides the `error.message` of the JSON error body.
    pub message: Option<String>,
    /// For HTTP errors: overrides `error.type` of the JSON error body.
    pub error_type: Option<String>,
    /// For `malformed_json`: the exact `data:` payload to send (default: a truncated
    /// chunk object).
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
            status: None,
            message: None,
            error_type: None,
            malformed_payload: None,
        }
    }
}

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

/// One scripted tool call.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Call id sent in the first fragment (default `call_<response number>_<index>`,
    /// e.g. `call_1_0`).
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

/// A scriptable failure.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// HTTP 429 `rate_limit_error`, with `Retry-After` when `retry_after_s` is set.
    RateLimit,
    /// HTTP 500 `server_error`.
    ServerError,
    /// HTTP 400 `invalid_request_error` whose message mentions the maximum context
    /// length (the adapter maps it to `CONTEXT_WINDOW_EXCEEDED`).
    ContextOverflow,
    /// Any HTTP error: `status` (400–599) with an OpenAI-shaped JSON body.
    HttpError,
    /// Abort the connection after `after_events` events: the body never completes.
    DropConnection,
    /// Send nothing for `stall_ms` after `after_events` events, then continue.
    Stall,
    /// Send one `data:` event with a non-JSON payload after `after_events` events, then
    /// continue.
    MalformedJson,
    /// End the body cleanly without `data: [DONE]`.
    MissingDone,
}

impl FaultKind {
    /// True for faults answered with an HTTP error instead of a stream.
    pub fn is_http_error(self) -> bool {
        matches!(
            self,
            Self::RateLimit | Self::ServerError | Self::ContextOverflow | Self::HttpError
        )
    }
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

    /// Check that the fields fit together; the error names the offending fields.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let fault = self.fault;
        let is_http = self.is_http_error();
        let fault_name = fault.map_or("none", fault_name);
        if is_http {
            let stream_only = [
                ("reasoning", !self.reasoning.is_empty()),
                ("content", !self.content.is_empty()),
                ("tool_calls", !self.tool_calls.is_empty()),
                ("finish_reason", self.finish_reason.is_some()),
                ("completion_tokens", self.completion_tokens.is_some()),
                ("reasoning_tokens", self.reasoning_tokens.is_some()),
                ("usage", self.usage.is_some()),
                ("prompt_tokens_details", !self.prompt_tokens_details),
                ("role_chunk", !self.role_chunk),
                ("keep_alive_before", !self.keep_alive_before.is_empty()),
                ("created_s", self.created_s.is_some()),
                ("after_events", self.after_events.is_some()),
                ("stall_ms", self.stall_ms.is_some()),
                ("malformed_payload", self.malformed_payload.is_some()),
            ];
            if let Some((field, _)) = stream_only.iter().find(|(_, set)| *set) {
                return Err(format!(
                    "`{field}` describes a stream, but fault `{fault_name}` answers with an HTTP error"
                ));
            }
        } else {
            for (field, set) in [
                ("retry_after_s", self.retry_after_s.is_some()),
                ("message", self.message.is_some()),
                ("error_type", self.error_type.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "`{field}` only applies to HTTP error faults (rate_limit, server_error, context_overflow, http_error)"
                    ));
                }
            }
        }
        match (fault, self.status) {
            (Some(FaultKind::HttpError), None) => {
                return Err("fault `http_error` needs `status` (400-599)".into());
            }
            (Some(FaultKind::HttpError), Some(status)) if !(400..=599).contains(&status) => {
                return Err(format!(
                    "`status` {status} is not an error status (400-599)"
                ));
            }
            (Some(FaultKind::HttpError), Some(_)) => {}
            (_, Some(_)) => {
                return Err(format!(
                    "`status` only applies to fault `http_error` (fault is `{fault_name}`)"
                ));
            }
            (_, None) => {}
        }
        let needs_after_events = matches!(
            fault,
            Some(FaultKind::DropConnection | FaultKind::Stall | FaultKind::MalformedJson)
        );
        if needs_after_events && self.after_events.is_none() {
            return Err(format!("fault `{fault_name}` needs `after_events`"));
        }
        if self.after_events.is_some()
            && !needs_after_events
            && fault != Some(FaultKind::MissingDone)
        {
            return Err(format!(
                "`after_events` only applies to stream faults (fault is `{fault_name}`)"
            ));
        }
        match (fault == Some(FaultKind::Stall), self.stall_ms.is_some()) {
            (true, false) => return Err("fault `stall` needs `stall_ms`".into()),
            (false, true) => {
                return Err(format!(
                    "`stall_ms` only applies to fault `stall` (fault is `{fault_name}`)"
                ));
            }
            _ => {}
        }
        if self.malformed_payload.is_some() && fault != Some(FaultKind::MalformedJson) {
            return Err(format!(
                "`malformed_payload` only applies to fault `malformed_json` (fault is `{fault_name}`)"
            ));
        }
        for (position, call) in self.tool_calls.iter().enumerate() {
            if call.name.is_empty() {
                return Err(format!("tool_calls[{position}].name is empty"));
            }
            if call.id.as_deref() == Some("") {
                return Err(format!("tool_calls[{position}].id is empty"));
            }
        }
        if let Some(request_id) = &self.request_id
            && (request_id.is_empty() || !request_id.bytes().all(|byte| byte.is_ascii_graphic()))
        {
            return Err(format!(
                "`request_id` {request_id:?} must be non-empty visible ASCII (it is sent as a header)"
            ));
        }
        Ok(())
    }
}

pub(crate) fn fault_name(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::RateLimit => "rate_limit",
        FaultKind::ServerError => "server_error",
        FaultKind::ContextOverflow => "context_overflow",
        FaultKind::HttpError => "http_error",
        FaultKind::DropConnection => "drop_connection",
        FaultKind::Stall => "stall",
        FaultKind::MalformedJson => "malformed_json",
        FaultKind::MissingDone => "missing_done",
    }
}

/// Text fragments, each sent as its own chunk. Deserializes from a list of strings or
/// from a single string (one fragment); serializes as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments(pub Vec<String>);

impl Fragments {
    /// No fragments.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fragments joined with no separator (the text the client reassembles).
    pub fn concat(&self) -> String {
        self.0.concat()
    }

    /// The fragments in order.
    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.0.iter()
    }
}

impl<S: Into<String>> FromIterator<S> for Fragments {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Self(iter.into_iter().map(Into::into).collect())
    }
}

impl Serialize for Fragments {
    fn serialize<Ser: Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Fragments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a string or a list of strings")]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        Ok(match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(fragment) => Self(vec![fragment]),
            OneOrMany::Many(fragments) => Self(fragments),
        })
    }
}

impl JsonSchema for Fragments {
    fn schema_name() -> Cow<'static, str> {
        "Fragments".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Text fragments, one chunk each: a list of strings, or one string (one fragment).",
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}}
            ]
        })
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
    fn fragments_accept_a_single_string() {
        let entry = parse(r#"{"content": "Hello", "reasoning": ["a", "b"]}"#);
        assert_eq!(entry.content.0, vec!["Hello"]);
        assert_eq!(entry.reasoning.0, vec!["a", "b"]);
        let round_trip = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            round_trip,
            serde_json::json!({"reasoning": ["a", "b"], "content": ["Hello"]})
        );
    }

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

    #[test]
    fn validation_rejects_nonsense_combinations() {
        let cases = [
            (r#"{"fault": "rate_limit", "content": "x"}"#, "`content`"),
            (r#"{"content": "x", "retry_after_s": 1}"#, "`retry_after_s`"),
            (r#"{"fault": "http_error"}"#, "needs `status`"),
            (
                r#"{"fault": "http_error", "status": 200}"#,
                "not an error status",
            ),
            (
                r#"{"fault": "rate_limit", "status": 429}"#,
                "`status` only applies",
            ),
            (r#"{"fault": "drop_connection"}"#, "needs `after_events`"),
            (r#"{"after_events": 2}"#, "`after_events` only applies"),
            (
                r#"{"fault": "stall", "after_events": 1}"#,
                "needs `stall_ms`",
            ),
            (r#"{"stall_ms": 5}"#, "`stall_ms` only applies"),
            (
                r#"{"malformed_payload": "x"}"#,
                "`malformed_payload` only applies",
            ),
            (r#"{"tool_calls": [{"name": ""}]}"#, "name is empty"),
            (r#"{"request_id": "a b"}"#, "visible ASCII"),
        ];
        for (json, expected) in cases {
            let error = parse(json).validate().unwrap_err();
            assert!(error.contains(expected), "{json}: {error}");
        }
        let script = Script::new(vec![ScriptEntry::stream(), parse(r#"{"stall_ms": 5}"#)]);
        let error = script.validate().unwrap_err();
        assert!(error.to_string().starts_with("script entry 1: "), "{error}");
    }

    #[test]
    fn validation_accepts_each_fault_kind() {
        for json in [
            r#"{"fault": "rate_limit", "retry_after_s": 2}"#,
            r#"{"fault": "server_error", "message": "boom", "delay_ms": 5}"#,
            r#"{"fault": "context_overflow"}"#,
            r#"{"fault": "http_error", "status": 402, "message": "Insufficient Balance"}"#,
            r#"{"content": ["a"], "fault": "drop_connection", "after_events": 1}"#,
            r#"{"content": ["a"], "fault": "stall", "after_events": 1, "stall_ms": 60000}"#,
            r#"{"content": ["a"], "fault": "malformed_json", "after_events": 0}"#,
            r#"{"content": ["a"], "fault": "missing_done"}"#,
            r#"{"content": ["a"], "fault": "missing_done", "after_events": 2}"#,
        ] {
            assert_eq!(parse(json).validate(), Ok(()), "{json}");
        }
    }

    #[test]
    fn balances_add_up_in_hundredths() {
        assert_eq!(
            add_decimal_strings("10.00", "100.5").as_deref(),
            Some("110.50")
        );
        assert_eq!(add_decimal_strings("0.07", "3").as_deref(), Some("3.07"));
        for bad in ["", "-1", "1.234", "1,00", ".5"] {
            assert_eq!(parse_cents(bad), None, "{bad:?}");
        }
        let script = Script {
            balance: Some(Balance {
                granted_balance: "ten".into(),
                ..Balance::default()
            }),
            ..Script::default()
        };
        assert!(
            script
                .validate()
                .unwrap_err()
                .to_string()
                .contains("granted_balance")
        );
    }

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
