//! The DeepSeek adapter's pure half (spec 09), restated from
//! `@deepseek-ai/dsh-llm-deepseek` 0.1.0-rc.8.
//!
//! This module exists because the only provider route the loop talks to,
//! `deepseek-official`, is where the assembled prompt becomes bytes on the
//! wire and where the wire's answer becomes logged `assistant/chunk`s. Both
//! directions are observable by a conformance harness, so they are restated
//! here without I/O: the request body and headers, SSE framing (as the npm
//! `eventsource-parser` 3.x implements it behind a `TextDecoderStream`), the
//! payload-to-chunk translation, usage and cache-token mapping, HTTP error
//! classification and the failure objects the adapter throws. The socket
//! side lives in `crate::agent::transport`.
//!
//! Everything that reaches a log is a `serde_json::Value` built in upstream's
//! key order. Values copied from the wire or from the harness request are
//! passed through the way a `JSON.parse`/`JSON.stringify` round trip would
//! leave them: numbers become JavaScript numbers (`1.0` → `1`) and object keys
//! take JavaScript own-property order (array-index keys first).
//!
//! Known, deliberate divergences (all outside realistic traffic):
//! - `Retry-After` given as an HTTP date is ignored: upstream subtracts
//!   `Date.now()`, and the reference model never reads a clock.
//! - Payloads that `JSON.parse` accepts but `serde_json` rejects (escaped lone
//!   surrogates, numbers overflowing to `Infinity`, nesting deeper than 128)
//!   are reported as `MALFORMED_RESPONSE`.
//! - Malformed *harness* requests (non-array `content`, `null` messages or
//!   blocks) are serialized leniently instead of throwing `TypeError`s.
//! - The 120-unit prefix in `malformed SSE payload: …` may end inside a
//!   surrogate pair; JavaScript keeps the lone surrogate, a Rust `String`
//!   holds U+FFFD instead.
//! - `TypeError` texts for odd wire JSON are V8's interpreter messages; once
//!   V8 optimizes `translate` it may say `undefined is not a function`
//!   instead. They only ever appear as the cause of a `TRANSPORT` error.
//!
//! Differentially checked against the rc.8 package under Node 20 (random SSE
//! streams with random read splits, HTTP errors and request bodies).

use serde_json::{Map, Value, json};

use super::js::{JsError, js_key_order, slice_utf16};
use super::llm::{ModelInfo, Reasoning, failure};

/// The provider route this adapter serves.
pub const PROVIDER: &str = "deepseek-official";
/// Upstream's default `baseURL` (the public API).
pub const PUBLIC_BASE_URL: &str = "https://api.deepseek.com";
/// Default combined request/response context capacity.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
/// Default per-request output-token cap.
pub const DEFAULT_MAX_TOKENS: u64 = 256_000;
/// Default idle interval allowed between stream reads.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
/// The `user-agent` this reference sends. Upstream sends its own product
/// identity (`deepseek-harness/<version> (+<repository url>)`); a reference
/// implementation must not impersonate it, so the value is fixed here.
pub const USER_AGENT: &str = "dshc/0.1.0 (reference)";
/// The efforts the DeepSeek route understands, in upstream's catalog order.
pub const REASONING_EFFORTS: [&str; 4] = ["off", "low", "high", "max"];
/// The terminal SSE payload.
pub const DONE: &str = "[DONE]";

// ---------------------------------------------------------------------------
// JavaScript value semantics used by the adapter
// ---------------------------------------------------------------------------

/// `value.key` for a JSON value: only objects have the properties the
/// adapter reads; on any other value the property is `undefined` (`None`).
fn prop<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object().and_then(|map| map.get(key))
}

/// `optional?.key` where `optional` may itself be missing.
fn prop_of<'a>(value: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    value.and_then(|v| prop(v, key))
}

/// A JSON value's elements, or nothing for a non-array.
fn items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// JavaScript truthiness of a (defined) JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `Number.prototype.toString()`.
fn number_text(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs();
    if (1e-6..1e21).contains(&magnitude) {
        // Rust's Display is shortest-round-trip and never uses an exponent.
        format!("{x}")
    } else {
        let text = format!("{x:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => text,
        }
    }
}

/// `String(value)` for a JSON value (template literals, `+=`).
fn js_string(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_text(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| join_text(Some(item)))
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// How `Array.prototype.join` renders one element: `null`/`undefined` as "".
fn join_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(value) => js_string(value),
    }
}

/// `StringToNumber`, close enough for token counts sent as strings.
fn string_to_number(text: &str) -> f64 {
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}');
    if text.is_empty() {
        return 0.0;
    }
    match text {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let radix = |prefix: &str, radix: u32| {
        text.strip_prefix(prefix)
            .or_else(|| text.strip_prefix(&prefix.to_ascii_uppercase()))
            .map(|digits| {
                if digits.is_empty() {
                    return f64::NAN;
                }
                digits
                    .chars()
                    .try_fold(0.0_f64, |acc, c| {
                        c.to_digit(radix)
                            .map(|d| acc * f64::from(radix) + f64::from(d))
                    })
                    .unwrap_or(f64::NAN)
            })
    };
    if let Some(x) = radix("0x", 16)
        .or_else(|| radix("0o", 8))
        .or_else(|| radix("0b", 2))
    {
        return x;
    }
    let decimal = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if decimal {
        text.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// `ToNumber` for a JSON value or `undefined`.
fn to_number(value: Option<&Value>) -> f64 {
    match value {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => string_to_number(s),
        Some(array @ Value::Array(_)) => string_to_number(&js_string(array)),
        Some(Value::Object(_)) => f64::NAN,
    }
}

/// A JavaScript number as JSON: what `JSON.stringify` would write (`NaN` and
/// infinities become `null`, `-0` becomes `0`, integral values are integers).
fn js_number(x: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_992.0;
    if !x.is_finite() {
        return Value::Null;
    }
    if x.fract() == 0.0 && x.abs() <= SAFE {
        // Exact: integral and within the safe range.
        return json!(x as i64);
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A JSON value as a `JSON.parse` → `JSON.stringify` round trip leaves it:
/// JavaScript numbers and own-property key order.
fn js_json(value: &Value) -> Value {
    match value {
        Value::Number(n) => js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::Array(items) => Value::Array(items.iter().map(js_json).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for key in js_key_order(map.keys().map(String::as_str)) {
                out.insert(key.to_string(), js_json(&map[key]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `for (const x of value ?? [])`: array elements, a string's code points,
/// nothing for `null`/`undefined`, a V8 `TypeError` for anything else.
fn iterate(value: Option<&Value>) -> Result<Vec<Value>, JsError> {
    const TAIL: &str = "is not iterable (cannot read property Symbol(Symbol.iterator))";
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(Value::String(s)) => Ok(s.chars().map(|c| Value::String(c.into())).collect()),
        Some(Value::Object(_)) => Err(JsError::type_error(format!("object {TAIL}"))),
        Some(Value::Number(n)) => Err(JsError::type_error(format!(
            "number {} {TAIL}",
            number_text(n.as_f64().unwrap_or(f64::NAN))
        ))),
        Some(Value::Bool(b)) => Err(JsError::type_error(format!("boolean {b} {TAIL}"))),
    }
}

/// The `TypeError` V8 throws when a property is read from `null`.
fn read_of_null(property: &str) -> JsError {
    JsError::type_error(format!(
        "Cannot read properties of null (reading '{property}')"
    ))
}

/// Insert `key: value` only when the value is defined (what `JSON.stringify`
/// does with `undefined` properties).
fn insert_defined(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value {
        map.insert(key.to_string(), value.clone());
    }
}

/// An `LlmError` with the optional provider facts, in upstream's key order.
fn llm_error(
    message: &str,
    code: &str,
    status: Option<u16>,
    retry_after_ms: Option<f64>,
    request_id: Option<&str>,
) -> JsError {
    let mut failure = failure(message, code);
    let map = failure.as_object_mut().expect("failure() builds an object");
    if let Some(status) = status {
        map.insert("status".into(), json!(status));
    }
    if let Some(delay) = retry_after_ms {
        map.insert("providerRetryAfterMs".into(), js_number(delay));
    }
    if let Some(id) = request_id {
        map.insert("requestId".into(), json!(id));
    }
    JsError::llm(failure)
}

// ---------------------------------------------------------------------------
// Deployment configuration and model info (W4, W5)
// ---------------------------------------------------------------------------

/// Deployment-level thinking defaults (`config.thinking`,
/// `config.reasoningEffort`); both are usually unset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeepSeekDefaults {
    /// `"enabled"` or `"disabled"`.
    pub thinking: Option<String>,
    /// `"off"`, `"low"`, `"high"` or `"max"`.
    pub reasoning_effort: Option<String>,
}

impl DeepSeekDefaults {
    /// The load-time check `resolveAdapterOptions` makes: with thinking
    /// disabled only the `off` effort may be configured. A plain `Error`.
    pub fn validate(&self) -> Result<(), JsError> {
        let disabled = self.thinking.as_deref() == Some("disabled");
        match self.reasoning_effort.as_deref() {
            Some(effort) if disabled && effort != "off" => Err(JsError::error(
                "llm-deepseek: only reasoningEffort \"off\" can be configured when thinking is disabled",
            )),
            _ => Ok(()),
        }
    }
}

/// One advisory catalog entry (`models[]` in the plugin config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeepSeekModel {
    /// Wire model name.
    pub id: String,
    /// `contextWindow`, when the catalog states it.
    pub context_window: Option<u64>,
    /// `maxTokens`, when the catalog states it.
    pub max_tokens: Option<u64>,
}

/// The resolved connection facts the pure parts need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeepSeekConnection {
    /// `baseURL`, without the `/chat/completions` suffix.
    pub base_url: String,
    /// Thinking defaults.
    pub defaults: DeepSeekDefaults,
    /// Profile `maxTokens` (default 256 000).
    pub max_tokens: u64,
    /// `defaultContextWindow` (default 1 000 000).
    pub default_context_window: u64,
    /// The model catalog.
    pub models: Vec<DeepSeekModel>,
    /// `streamIdleTimeoutMs` (default 300 000).
    pub stream_idle_timeout_ms: u64,
}

impl Default for DeepSeekConnection {
    /// Upstream's defaults: the public endpoint and the two-model catalog.
    fn default() -> Self {
        let model = |id: &str| DeepSeekModel {
            id: id.into(),
            context_window: Some(DEFAULT_CONTEXT_WINDOW),
            max_tokens: None,
        };
        DeepSeekConnection {
            base_url: PUBLIC_BASE_URL.into(),
            defaults: DeepSeekDefaults::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            default_context_window: DEFAULT_CONTEXT_WINDOW,
            models: vec![model("deepseek-v4-flash"), model("deepseek-v4-pro")],
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
        }
    }
}

/// `resolveModel` (W5): catalog facts with connection fallbacks, and the
/// effort list (`off` only when the deployment disables thinking).
pub fn resolve_model(connection: &DeepSeekConnection, model: &str) -> ModelInfo {
    let configured = connection.models.iter().find(|entry| entry.id == model);
    let context_window = configured
        .and_then(|entry| entry.context_window)
        .unwrap_or(connection.default_context_window);
    let default_max_tokens = configured
        .and_then(|entry| entry.max_tokens)
        .unwrap_or(connection.max_tokens);
    let reasoning = if connection.defaults.thinking.as_deref() == Some("disabled") {
        Reasoning {
            efforts: vec!["off".into()],
            default_effort: Some("off".into()),
        }
    } else {
        // Anything but off/low/max (including an unvalidated value) is high.
        let default = match connection.defaults.reasoning_effort.as_deref() {
            Some("off") => "off",
            Some("low") => "low",
            Some("max") => "max",
            _ => "high",
        };
        Reasoning {
            efforts: REASONING_EFFORTS.map(String::from).to_vec(),
            default_effort: Some(default.into()),
        }
    };
    ModelInfo {
        context_window: Some(context_window),
        default_max_tokens: Some(default_max_tokens),
        reasoning: Some(reasoning),
    }
}

/// The thinking fields one request resolves to (W4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thinking {
    /// `thinking.type` on the wire (`enabled` / `disabled`), if any.
    pub thinking: Option<String>,
    /// `reasoning_effort` on the wire, if any (never `off`).
    pub reasoning_effort: Option<String>,
}

/// `resolveThinking` (W4). `session-title` requests never think; an explicit
/// effort must be one of [`REASONING_EFFORTS`]; a deployment that disables
/// thinking rejects any effort but `off`.
pub fn resolve_thinking(request: &Value, defaults: &DeepSeekDefaults) -> Result<Thinking, JsError> {
    let disabled = || Thinking {
        thinking: Some("disabled".into()),
        reasoning_effort: None,
    };
    if prop(request, "purpose").and_then(Value::as_str) == Some("session-title") {
        return Ok(disabled());
    }
    let effort = match prop(request, "reasoningEffort") {
        None => defaults.reasoning_effort.clone(),
        Some(Value::String(effort)) if REASONING_EFFORTS.contains(&effort.as_str()) => {
            Some(effort.clone())
        }
        Some(other) => {
            return Err(llm_error(
                &format!(
                    "DeepSeek does not support reasoning effort \"{}\"",
                    js_string(other)
                ),
                "UNSUPPORTED_REASONING_EFFORT",
                None,
                None,
                None,
            ));
        }
    };
    if defaults.thinking.as_deref() == Some("disabled")
        && let Some(effort) = effort.as_deref()
        && effort != "off"
    {
        return Err(llm_error(
            &format!("DeepSeek deployment does not support reasoning effort \"{effort}\""),
            "UNSUPPORTED_REASONING_EFFORT",
            None,
            None,
            None,
        ));
    }
    Ok(match effort.as_deref() {
        Some("off") => disabled(),
        Some(effort @ ("low" | "high" | "max")) => Thinking {
            thinking: Some("enabled".into()),
            reasoning_effort: Some(effort.into()),
        },
        _ => Thinking {
            thinking: defaults.thinking.clone(),
            reasoning_effort: None,
        },
    })
}

// ---------------------------------------------------------------------------
// Request body (W1–W3) and headers (W6)
// ---------------------------------------------------------------------------

fn block_type(block: &Value) -> Option<&str> {
    prop(block, "type").and_then(Value::as_str)
}

/// Whether content blocks hold an image, including inside tool results
/// (`contentHasImage`).
pub fn content_has_image(blocks: &[Value]) -> bool {
    blocks.iter().any(|block| match block_type(block) {
        Some("image") => true,
        Some("tool-result") => content_has_image(items(prop(block, "content"))),
        _ => false,
    })
}

/// Whether any message of a harness request holds an image.
pub fn request_has_image(request: &Value) -> bool {
    items(prop(request, "messages"))
        .iter()
        .any(|message| content_has_image(items(prop(message, "content"))))
}

/// The error the adapter's `stream()` throws for image input to a model whose
/// catalog entry does not list the `image` modality. Upstream checks this
/// before serializing; with the default (text-only) catalog it is what an
/// image in the history actually produces.
pub fn image_input_error(model: &str) -> JsError {
    llm_error(
        &format!("DeepSeek model \"{model}\" does not accept image input."),
        "UNSUPPORTED_CONTENT",
        None,
        None,
        None,
    )
}

/// The text blocks' texts joined with "" (`flattenText`).
fn flatten_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|block| block_type(block) == Some("text"))
        .map(|block| join_text(prop(block, "text")))
        .collect()
}

fn serialize_assistant(blocks: &[Value]) -> Value {
    let reasoning: String = blocks
        .iter()
        .filter(|block| block_type(block) == Some("reasoning"))
        .map(|block| join_text(prop(block, "text")))
        .collect();
    let tool_calls: Vec<Value> = blocks
        .iter()
        .filter(|block| block_type(block) == Some("tool-call"))
        .map(|block| {
            let mut call = Map::new();
            insert_defined(&mut call, "id", prop(block, "id"));
            call.insert("type".into(), json!("function"));
            let mut function = Map::new();
            insert_defined(&mut function, "name", prop(block, "name"));
            insert_defined(&mut function, "arguments", prop(block, "arguments"));
            call.insert("function".into(), Value::Object(function));
            Value::Object(call)
        })
        .collect();
    let mut wire = Map::new();
    wire.insert("role".into(), json!("assistant"));
    wire.insert("content".into(), json!(flatten_text(blocks)));
    if !reasoning.is_empty() {
        wire.insert("reasoning_content".into(), json!(reasoning));
    }
    if !tool_calls.is_empty() {
        wire.insert("tool_calls".into(), Value::Array(tool_calls));
    }
    Value::Object(wire)
}

/// `serializeMessages` (W2): harness history → chat-completions messages.
/// Each tool-result block becomes its own `tool` message after the owning
/// user message's text (which is sent only when non-empty or when the message
/// has no tool results). Any image is `UNSUPPORTED_CONTENT`.
pub fn serialize_messages(messages: &[Value]) -> Result<Vec<Value>, JsError> {
    let mut wire = Vec::new();
    for message in messages {
        let blocks = items(prop(message, "content"));
        if content_has_image(blocks) {
            return Err(llm_error(
                "The DeepSeek chat-completions adapter does not support image content.",
                "UNSUPPORTED_CONTENT",
                None,
                None,
                None,
            ));
        }
        match prop(message, "role").and_then(Value::as_str) {
            Some("system") => {
                wire.push(json!({"role": "system", "content": flatten_text(blocks)}));
            }
            Some("assistant") => wire.push(serialize_assistant(blocks)),
            _ => {
                let results: Vec<&Value> = blocks
                    .iter()
                    .filter(|block| block_type(block) == Some("tool-result"))
                    .collect();
                let text = flatten_text(blocks);
                if !text.is_empty() || results.is_empty() {
                    wire.push(json!({"role": "user", "content": text}));
                }
                for result in results {
                    let mut tool = Map::new();
                    tool.insert("role".into(), json!("tool"));
                    insert_defined(&mut tool, "tool_call_id", prop(result, "toolCallId"));
                    let text = flatten_text(items(prop(result, "content")));
                    let text = if text.is_empty() {
                        "(no output)".to_string()
                    } else {
                        text
                    };
                    tool.insert("content".into(), json!(text));
                    wire.push(Value::Object(tool));
                }
            }
        }
    }
    Ok(wire)
}

/// `serializeRequest` (W1–W4), text-only path: the chat-completions body with
/// keys `model, messages, stream, stream_options, thinking?,
/// reasoning_effort?, tools?, temperature?, max_tokens?, stop?`. The system
/// text leads `messages` whenever `request.system` is present (even `""`;
/// the loop omits an empty one). Errors are `LlmError`s:
/// `UNSUPPORTED_CONTENT` (checked first), then `UNSUPPORTED_REASONING_EFFORT`.
pub fn serialize_request(request: &Value, defaults: &DeepSeekDefaults) -> Result<Value, JsError> {
    let mut messages = Vec::new();
    if let Some(system) = prop(request, "system") {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(serialize_messages(items(prop(request, "messages")))?);
    let tools: Vec<Value> = items(prop(request, "tools"))
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            insert_defined(&mut function, "name", prop(tool, "name"));
            insert_defined(&mut function, "description", prop(tool, "description"));
            insert_defined(&mut function, "parameters", prop(tool, "parameters"));
            json!({"type": "function", "function": Value::Object(function)})
        })
        .collect();
    let thinking = resolve_thinking(request, defaults)?;
    let mut body = Map::new();
    insert_defined(&mut body, "model", prop(request, "model"));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(kind) = thinking.thinking {
        body.insert("thinking".into(), json!({"type": kind}));
    }
    if let Some(effort) = thinking.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    insert_defined(&mut body, "temperature", prop(request, "temperature"));
    insert_defined(&mut body, "max_tokens", prop(request, "maxTokens"));
    insert_defined(&mut body, "stop", prop(request, "stop"));
    Ok(js_json(&Value::Object(body)))
}

/// The request URL: `{baseURL}/chat/completions`.
pub fn chat_completions_url(base_url: &str) -> String {
    format!("{base_url}/chat/completions")
}

/// The request headers in upstream's insertion order (W6): bearer auth, JSON
/// body, SSE accept, attribution ([`USER_AGENT`]), the anonymous user id,
/// the session id when known, and the compaction marker. No cache directive.
pub fn request_headers(
    api_key: &str,
    user_id: &str,
    session_id: Option<&str>,
    compaction: bool,
) -> Vec<(String, String)> {
    let mut headers = vec![
        ("authorization".to_string(), format!("Bearer {api_key}")),
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
        ("user-agent".to_string(), USER_AGENT.to_string()),
        (
            "x-deepseek-harness-user-id".to_string(),
            user_id.to_string(),
        ),
    ];
    if let Some(session_id) = session_id {
        headers.push((
            "x-deepseek-harness-session-id".to_string(),
            session_id.to_string(),
        ));
    }
    if compaction {
        headers.push(("x-deepseek-harness-compact".to_string(), "1".to_string()));
    }
    headers
}

// ---------------------------------------------------------------------------
// SSE framing (W7)
// ---------------------------------------------------------------------------

/// One SSE item, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event's data (its `data` lines joined with `\n`).
    Data(String),
    /// A comment line's text (after `:` and one optional space); upstream
    /// uses comments only to pulse the idle watchdog.
    Comment(String),
}

/// Incremental SSE decoder: a streaming UTF-8 `TextDecoderStream` (BOM
/// stripped, invalid sequences → U+FFFD) feeding `eventsource-parser`'s
/// `createParser`. Reads may split anywhere. An event is dispatched only at a
/// blank line; nothing is dispatched at end of input, so there is no
/// `finish` method.
///
/// Two parser details are reproduced on purpose: a line ending in `\r` at the
/// very end of a read waits for the next read (it may be half of `\r\n`), and
/// while such a partial line is pending a read without any `\r`/`\n` is only
/// buffered. Hence a CR-only stream's last blank line takes effect only once a
/// later read brings another line terminator.
#[derive(Clone, Debug, Default)]
pub struct SseDecoder {
    utf8_pending: Vec<u8>,
    bom_checked: bool,
    fed: bool,
    pending: String,
    data: String,
    data_lines: usize,
}

impl SseDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one read; returns the items it completes.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut text = self.decode(bytes);
        let mut items = Vec::new();
        if text.is_empty() {
            // TextDecoderStream enqueues no empty chunks.
            return items;
        }
        if !self.fed {
            self.fed = true;
            // The parser's own BOM check looks at UTF-16 units 239, 187, 191
            // of the first decoded chunk (i.e. the text "ï»¿").
            if let Some(rest) = text.strip_prefix("\u{EF}\u{BB}\u{BF}") {
                text = rest.to_string();
            }
        }
        if self.pending.is_empty() {
            self.process(text, &mut items);
        } else if !text.contains(['\n', '\r']) {
            self.pending.push_str(&text);
        } else {
            let mut input = std::mem::take(&mut self.pending);
            input.push_str(&text);
            self.process(input, &mut items);
        }
        items
    }

    fn decode(&mut self, bytes: &[u8]) -> String {
        self.utf8_pending.extend_from_slice(bytes);
        let buffer = std::mem::take(&mut self.utf8_pending);
        let mut out = String::new();
        let mut rest = buffer.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    out.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &after[len..];
                        }
                        None => {
                            self.utf8_pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        if !self.bom_checked && !out.is_empty() {
            self.bom_checked = true;
            if let Some(rest) = out.strip_prefix('\u{FEFF}') {
                out = rest.to_string();
            }
        }
        out
    }

    fn process(&mut self, input: String, items: &mut Vec<SseItem>) {
        let bytes = input.as_bytes();
        let mut start = 0;
        while let Some(offset) = bytes[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            if bytes[end] == b'\r' && end + 1 == bytes.len() {
                break;
            }
            self.line(&input[start..end], items);
            start = end + 1;
            if bytes[end] == b'\r' && bytes.get(start) == Some(&b'\n') {
                start += 1;
            }
        }
        self.pending = input[start..].to_string();
    }

    fn line(&mut self, line: &str, items: &mut Vec<SseItem>) {
        if line.is_empty() {
            if self.data_lines > 0 {
                items.push(SseItem::Data(std::mem::take(&mut self.data)));
            }
            self.data.clear();
            self.data_lines = 0;
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            items.push(SseItem::Comment(comment.to_string()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        // `event`, `id`, `retry` and unknown fields do not reach the adapter.
        if field == "data" {
            if self.data_lines > 0 {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.data_lines += 1;
        }
    }
}

// ---------------------------------------------------------------------------
// Payload translation (W8, W9) and usage (W11, W12)
// ---------------------------------------------------------------------------

/// `mapFinishReason`: `stop`, `tool_calls`, `length`, or an error finish
/// whose code is the wire value upper-cased.
pub fn map_finish_reason(reason: &str) -> Value {
    match reason {
        "stop" => json!({"kind": "stop"}),
        "tool_calls" => json!({"kind": "tool-calls"}),
        "length" => json!({"kind": "max-tokens"}),
        other => json!({
            "kind": "error",
            "failure": {
                "message": format!("model stopped: {other}"),
                "code": other.to_uppercase(),
            },
        }),
    }
}

/// `mapUsage` (W12): disjoint harness counts. `cacheRead` is
/// `prompt_tokens_details.cached_tokens ?? prompt_cache_hit_tokens`;
/// `inputTokens = prompt_tokens − (cacheRead ?? 0)`; `cacheReadTokens` and
/// `reasoningTokens` appear only when the wire defined them (a wire `null`
/// counts as defined, as in JavaScript).
pub fn map_usage(wire: &Value) -> Value {
    let cached = prop_of(prop(wire, "prompt_tokens_details"), "cached_tokens");
    let cache_read = match cached {
        Some(value) if !value.is_null() => Some(value),
        _ => prop(wire, "prompt_cache_hit_tokens"),
    };
    let reasoning = prop_of(prop(wire, "completion_tokens_details"), "reasoning_tokens");
    let subtrahend = match cache_read {
        None | Some(Value::Null) => 0.0,
        Some(value) => to_number(Some(value)),
    };
    let mut usage = Map::new();
    usage.insert(
        "inputTokens".into(),
        js_number(to_number(prop(wire, "prompt_tokens")) - subtrahend),
    );
    if let Some(output) = prop(wire, "completion_tokens") {
        usage.insert("outputTokens".into(), js_json(output));
    }
    if let Some(cache_read) = cache_read {
        usage.insert("cacheReadTokens".into(), js_json(cache_read));
    }
    if let Some(reasoning) = reasoning {
        usage.insert("reasoningTokens".into(), js_json(reasoning));
    }
    Value::Object(usage)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    Text,
    Reasoning,
    ToolCall,
}

#[derive(Clone, Debug)]
struct OpenBlock {
    index: usize,
    kind: BlockKind,
    text: String,
    call_id: Option<Value>,
    name: Option<Value>,
}

impl OpenBlock {
    /// `closeBlock`.
    fn close(&self) -> Value {
        match self.kind {
            BlockKind::Text => json!({"type": "text", "text": self.text}),
            BlockKind::Reasoning => json!({"type": "reasoning", "text": self.text}),
            BlockKind::ToolCall => json!({
                "type": "tool-call",
                "id": nullish_or_empty(self.call_id.as_ref()),
                "name": nullish_or_empty(self.name.as_ref()),
                "arguments": self.text,
            }),
        }
    }
}

/// `value ?? ""`, as a JSON value.
fn nullish_or_empty(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => json!(""),
        Some(value) => js_json(value),
    }
}

/// A `Map` key under `SameValueZero`, for the wire's tool-call `index`.
#[derive(Clone, Debug, PartialEq)]
enum ToolKey {
    Undefined,
    Null,
    Bool(bool),
    Number(u64),
    Text(String),
    /// Objects and arrays: each parsed value is a distinct identity.
    Identity(usize),
}

/// Stateful SSE-payload → harness-chunk translator (`translate`), one per
/// response. Feed it each [`SseItem::Data`] in order until [`Self::is_done`].
///
/// Deltas come out as they arrive; `block-end`s (in open order), the latest
/// `usage` and exactly one `finish` are deferred to `[DONE]`. A `stop` (or
/// absent) finish with no block at all is an `EMPTY_RESPONSE` error finish.
/// After `[DONE]` or an error, further payloads are ignored (upstream stops
/// reading).
#[derive(Clone, Debug, Default)]
pub struct Translator {
    blocks: Vec<OpenBlock>,
    text: Option<usize>,
    reasoning: Option<usize>,
    tools: Vec<(ToolKey, usize)>,
    identities: usize,
    pending_finish: Option<Value>,
    pending_usage: Option<Value>,
    done: bool,
    failed: bool,
}

impl Translator {
    /// A fresh translator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` was translated (the stream is complete).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Translate one payload. On error the chunks this payload yielded
    /// before the throw are dropped; use [`Self::push_payload_into`] to keep
    /// them (only `TypeError`s from structurally odd wire JSON throw
    /// mid-payload; `MALFORMED_RESPONSE` never does).
    pub fn push_payload(&mut self, payload: &str) -> Result<Vec<Value>, JsError> {
        let mut out = Vec::new();
        self.push_payload_into(payload, &mut out)?;
        Ok(out)
    }

    /// Translate one payload, appending chunks to `out` as upstream's
    /// generator yields them, so chunks yielded before a failure stay in
    /// `out`. Errors: `LlmError MALFORMED_RESPONSE` for non-JSON, or a plain
    /// `TypeError` where upstream's code would throw one (e.g. a `null`
    /// choice); the adapter reports the latter as `TRANSPORT` (see
    /// [`stream_error`]).
    pub fn push_payload_into(
        &mut self,
        payload: &str,
        out: &mut Vec<Value>,
    ) -> Result<(), JsError> {
        if self.done || self.failed {
            return Ok(());
        }
        if payload == DONE {
            self.done = true;
            self.finish(out);
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(payload).map_err(|_| {
            self.failed = true;
            llm_error(
                &format!("malformed SSE payload: {}", slice_utf16(payload, 0, 120)),
                "MALFORMED_RESPONSE",
                None,
                None,
                None,
            )
        })?;
        self.translate(&chunk, out)
            .inspect_err(|_| self.failed = true)
    }

    fn open(&mut self, kind: BlockKind, out: &mut Vec<Value>) -> usize {
        let index = self.blocks.len();
        self.blocks.push(OpenBlock {
            index,
            kind,
            text: String::new(),
            call_id: None,
            name: None,
        });
        let block_type = match kind {
            BlockKind::Text => "text",
            BlockKind::Reasoning => "reasoning",
            BlockKind::ToolCall => "tool-call",
        };
        out.push(json!({"type": "block-start", "index": index, "blockType": block_type}));
        index
    }

    fn tool_key(&mut self, index: Option<&Value>) -> ToolKey {
        match index {
            None => ToolKey::Undefined,
            Some(Value::Null) => ToolKey::Null,
            Some(Value::Bool(b)) => ToolKey::Bool(*b),
            Some(Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                ToolKey::Number(if x == 0.0 { 0 } else { x.to_bits() })
            }
            Some(Value::String(s)) => ToolKey::Text(s.clone()),
            Some(_) => {
                self.identities += 1;
                ToolKey::Identity(self.identities)
            }
        }
    }

    fn translate(&mut self, chunk: &Value, out: &mut Vec<Value>) -> Result<(), JsError> {
        if chunk.is_null() {
            return Err(read_of_null("choices"));
        }
        for choice in iterate(prop(chunk, "choices"))? {
            if choice.is_null() {
                return Err(read_of_null("delta"));
            }
            let delta = prop(&choice, "delta");
            if let Some(Value::String(reasoning)) = prop_of(delta, "reasoning_content")
                && !reasoning.is_empty()
            {
                let position = match self.reasoning {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::Reasoning, out);
                        self.reasoning = Some(position);
                        position
                    }
                };
                self.blocks[position].text.push_str(reasoning);
                out.push(json!({"type": "reasoning-delta", "index": position, "text": reasoning}));
            }
            if let Some(Value::String(content)) = prop_of(delta, "content")
                && !content.is_empty()
            {
                let position = match self.text {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::Text, out);
                        self.text = Some(position);
                        position
                    }
                };
                self.blocks[position].text.push_str(content);
                out.push(json!({"type": "text-delta", "index": position, "text": content}));
            }
            for call in iterate(prop_of(delta, "tool_calls"))? {
                if call.is_null() {
                    return Err(read_of_null("index"));
                }
                let key = self.tool_key(prop(&call, "index"));
                let known = self.tools.iter().find(|(k, _)| *k == key).map(|(_, p)| *p);
                let position = match known {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::ToolCall, out);
                        self.tools.push((key, position));
                        position
                    }
                };
                let function = prop(&call, "function");
                let block = &mut self.blocks[position];
                if let Some(id) = prop(&call, "id") {
                    block.call_id = Some(id.clone());
                }
                if let Some(name) = prop_of(function, "name") {
                    block.name = Some(name.clone());
                }
                let fragment = match prop_of(function, "arguments") {
                    None | Some(Value::Null) => json!(""),
                    Some(fragment) => fragment.clone(),
                };
                block.text.push_str(&js_string(&fragment));
                let mut delta_chunk = Map::new();
                delta_chunk.insert("type".into(), json!("tool-call-delta"));
                delta_chunk.insert("index".into(), json!(position));
                delta_chunk.insert("id".into(), nullish_or_empty(block.call_id.as_ref()));
                if let Some(name) = &block.name {
                    delta_chunk.insert("name".into(), js_json(name));
                }
                delta_chunk.insert("argumentsDelta".into(), js_json(&fragment));
                out.push(Value::Object(delta_chunk));
            }
            if let Some(Value::String(reason)) = prop(&choice, "finish_reason") {
                self.pending_finish = Some(map_finish_reason(reason));
            }
        }
        if let Some(usage) = prop(chunk, "usage")
            && truthy(usage)
        {
            self.pending_usage = Some(map_usage(usage));
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Value>) {
        for block in &self.blocks {
            out.push(json!({"type": "block-end", "index": block.index, "block": block.close()}));
        }
        if let Some(usage) = self.pending_usage.take() {
            out.push(json!({"type": "usage", "usage": usage}));
        }
        let reason = self
            .pending_finish
            .take()
            .unwrap_or_else(|| json!({"kind": "stop"}));
        let reason = if reason["kind"] == "stop" && self.blocks.is_empty() {
            json!({
                "kind": "error",
                "failure": {
                    "message": "model returned a completed response with no content",
                    "code": "EMPTY_RESPONSE",
                },
            })
        } else {
            reason
        };
        out.push(json!({"type": "finish", "reason": reason}));
    }
}

/// Decode and translate a whole response body given as its reads: the chunks
/// yielded, and the error that ended the stream early (`STREAM_CLOSED` when
/// the reads end without `[DONE]`). Errors are as the inner generators throw
/// them, before [`stream_error`]'s mapping.
pub fn translate_reads<'a, I>(reads: I) -> (Vec<Value>, Option<JsError>)
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut decoder = SseDecoder::new();
    let mut translator = Translator::new();
    let mut chunks = Vec::new();
    for read in reads {
        for item in decoder.push(read) {
            let SseItem::Data(payload) = item else {
                continue;
            };
            if let Err(error) = translator.push_payload_into(&payload, &mut chunks) {
                return (chunks, Some(error));
            }
            if translator.is_done() {
                return (chunks, None);
            }
        }
    }
    (chunks, Some(end_of_stream_error()))
}

// ---------------------------------------------------------------------------
// Failures (W10)
// ---------------------------------------------------------------------------

/// `STREAM_CLOSED`: the body ended without `[DONE]` (`parseSse`).
pub fn end_of_stream_error() -> JsError {
    llm_error(
        "SSE stream ended without [DONE]",
        "STREAM_CLOSED",
        None,
        None,
        None,
    )
}

/// `TRANSPORT` for a failure after the response started (the catch-all in
/// the adapter's `stream()`): `DeepSeek API stream from <baseURL> failed`.
pub fn transport_error(base_url: &str) -> JsError {
    llm_error(
        &format!("DeepSeek API stream from {base_url} failed"),
        "TRANSPORT",
        None,
        None,
        None,
    )
}

/// `TRANSPORT` for a rejected `fetch` (no response at all) while the signal
/// is not aborted: `DeepSeek API request to <baseURL> failed`.
pub fn request_transport_error(base_url: &str) -> JsError {
    llm_error(
        &format!("DeepSeek API request to {base_url} failed"),
        "TRANSPORT",
        None,
        None,
        None,
    )
}

/// `ABORTED`: the caller's signal fired.
pub fn aborted_error() -> JsError {
    llm_error(
        "DeepSeek request aborted by caller",
        "ABORTED",
        None,
        None,
        None,
    )
}

/// `TIMEOUT`: the per-read idle watchdog fired.
pub fn idle_timeout_error(timeout_ms: u64) -> JsError {
    llm_error(
        &format!("DeepSeek stream idle timeout after {timeout_ms}ms"),
        "TIMEOUT",
        None,
        None,
        None,
    )
}

/// `EMPTY_RESPONSE`: a 2xx response without a body.
pub fn no_body_error() -> JsError {
    llm_error(
        "DeepSeek API returned no response body",
        "EMPTY_RESPONSE",
        None,
        None,
        None,
    )
}

/// The adapter `stream()`'s catch: an idle timeout wins, then a caller
/// abort, then an `LlmError` passes through, and anything else (e.g. a
/// `TypeError` from odd wire JSON, or the plain `Error` [`http_error`]
/// returns for a non-string provider message) becomes `TRANSPORT`. The
/// original error is kept as the cause.
pub fn stream_error(
    error: JsError,
    base_url: &str,
    caller_aborted: bool,
    idle_timeout_ms: Option<u64>,
) -> JsError {
    if let Some(timeout_ms) = idle_timeout_ms {
        return idle_timeout_error(timeout_ms).with_cause(error);
    }
    if caller_aborted {
        return aborted_error().with_cause(error);
    }
    if error.name == "LlmError" {
        return error;
    }
    transport_error(base_url).with_cause(error)
}

/// `normalizeLlmFailure`: the failure an error carries (re-validated and
/// rebuilt in canonical key order), or `{message, code}` from the error
/// itself (`UNKNOWN` for errors without a code).
pub fn normalize_failure(error: &JsError) -> Value {
    if let (Some(carried), Some(code)) = (&error.failure, &error.code)
        && let Some(snapshot) = failure_snapshot(carried)
        && snapshot["code"] == code.as_str()
    {
        return snapshot;
    }
    let message = if error.message.is_empty() {
        "LLM adapter failed"
    } else {
        &error.message
    };
    failure(message, error.code.as_deref().unwrap_or("UNKNOWN"))
}

fn failure_snapshot(value: &Value) -> Option<Value> {
    let message = prop(value, "message")?.as_str().filter(|m| !m.is_empty())?;
    let code = prop(value, "code")?.as_str().filter(|c| !c.is_empty())?;
    let mut snapshot = failure(message, code);
    let map = snapshot.as_object_mut()?;
    if let Some(status) = prop(value, "status") {
        let valid = status
            .as_f64()
            .is_some_and(|s| s.fract() == 0.0 && (100.0..=599.0).contains(&s));
        if !valid {
            return None;
        }
        map.insert("status".into(), js_json(status));
    }
    if let Some(delay) = prop(value, "providerRetryAfterMs") {
        if !delay.as_f64().is_some_and(|d| d.is_finite() && d > 0.0) {
            return None;
        }
        map.insert("providerRetryAfterMs".into(), js_json(delay));
    }
    if let Some(id) = prop(value, "requestId") {
        id.as_str().filter(|id| !id.is_empty())?;
        map.insert("requestId".into(), id.clone());
    }
    Some(snapshot)
}

/// `adapterFailureChunk`: the terminal chunk the LLM runtime substitutes for
/// an adapter throw, `{type:'finish', reason:{kind:'aborted'|'error',
/// failure}}`; aborted iff the request signal is aborted or the code is
/// `ABORTED`.
pub fn failure_chunk(error: &JsError, aborted: bool) -> Value {
    let failure = normalize_failure(error);
    let kind = if aborted || failure["code"] == "ABORTED" {
        "aborted"
    } else {
        "error"
    };
    json!({"type": "finish", "reason": {"kind": kind, "failure": failure}})
}

/// `Headers.get`: case-insensitive, repeated fields joined with `", "`.
fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim_matches([' ', '\t', '\r', '\n']))
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// `providerRetryAfterMs` for a `Retry-After` value: delta-seconds × 1000
/// when positive. HTTP dates are ignored (the reference reads no clock).
pub fn provider_retry_after_ms(value: Option<&str>) -> Option<f64> {
    let value = value?;
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let delay = value.parse::<f64>().ok()? * 1000.0;
    (delay.is_finite() && delay > 0.0).then_some(delay)
}

/// `httpErrorCode`: `AUTH` (401/403), `INVALID_REQUEST` (413), `QUOTA` when
/// the provider's code/type/message reads as an exhausted quota, `RATE_LIMIT`
/// (429), `CONTEXT_WINDOW_EXCEEDED` or `INVALID_REQUEST` (400), `SERVER`
/// (5xx), else `HTTP_<status>`. `provider_error` is the body's `error` field.
pub fn http_error_code(status: u16, provider_error: Option<&Value>) -> String {
    if status == 401 || status == 403 {
        return "AUTH".into();
    }
    if status == 413 {
        return "INVALID_REQUEST".into();
    }
    let detail = ["code", "type", "message"]
        .iter()
        .filter_map(|key| prop_of(provider_error, key))
        .filter(|value| truthy(value))
        .map(js_string)
        .collect::<Vec<_>>()
        .join(" ");
    if is_quota_exceeded_error(&detail) {
        return "QUOTA".into();
    }
    if status == 429 {
        return "RATE_LIMIT".into();
    }
    if status == 400 {
        return if is_context_window_exceeded_error(&detail) {
            "CONTEXT_WINDOW_EXCEEDED".into()
        } else {
            "INVALID_REQUEST".into()
        };
    }
    if status >= 500 {
        return "SERVER".into();
    }
    format!("HTTP_{status}")
}

/// The error a non-2xx response throws. The message is the body's
/// `error.message` when it is a non-empty string, else `DeepSeek API error
/// (HTTP <status>)`; the failure carries `status`, `providerRetryAfterMs`
/// (numeric `Retry-After` only) and `requestId` (`x-request-id`, else
/// `x-deepseek-request-id`; an empty `x-request-id` does not fall back).
///
/// A truthy non-string `error.message` makes upstream's `LlmError`
/// constructor throw a plain `Error`, returned here as such; the adapter
/// then reports it as `TRANSPORT` (see [`stream_error`]). Likewise a status
/// outside 100–599.
pub fn http_error(status: u16, headers: &[(String, String)], body: &[u8]) -> JsError {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let provider_error: Option<Value> = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|json| prop(&json, "error").cloned());
    let mut message = format!("DeepSeek API error (HTTP {status})");
    let mut constructible = true;
    if let Some(provided) = prop_of(provider_error.as_ref(), "message")
        && truthy(provided)
    {
        match provided.as_str() {
            Some(text) => message = text.to_string(),
            None => constructible = false,
        }
    }
    let delay = provider_retry_after_ms(header(headers, "retry-after").as_deref());
    let id = header(headers, "x-request-id")
        .or_else(|| header(headers, "x-deepseek-request-id"))
        .filter(|id| !id.is_empty());
    let code = http_error_code(status, provider_error.as_ref());
    if !constructible {
        return JsError::error("LlmError message must be a non-empty string");
    }
    if !(100..=599).contains(&status) {
        return JsError::error("LlmError status must be an integer from 100 through 599");
    }
    llm_error(&message, &code, Some(status), delay, id.as_deref())
}

// ---------------------------------------------------------------------------
// Provider-wording classifiers (`isQuotaExceededError`,
// `isContextWindowExceededError`), as a tiny matcher over UTF-16 units with
// the semantics of a non-unicode, case-insensitive JavaScript regex.
// ---------------------------------------------------------------------------

mod wording {
    /// A character class.
    #[derive(Clone, Copy)]
    pub enum Class {
        /// `\s`.
        Space,
        /// `[\s_-]`.
        SpaceUnderscoreDash,
        /// `[^a-z0-9]` under `i`.
        NotAlnum,
    }

    /// A pattern node; a pattern is a sequence of nodes.
    pub enum Node {
        /// A literal, ASCII case-insensitive.
        Lit(&'static str),
        /// One character of a class.
        One(Class),
        /// One or more characters of a class.
        Plus(Class),
        /// `.{0,n}`.
        Dots(usize),
        /// `\b`.
        Boundary,
        /// `^`.
        Start,
        /// `$`.
        End,
        /// Alternatives, each a sequence.
        Alt(Vec<Vec<Node>>),
        /// An optional sequence.
        Opt(Vec<Node>),
    }

    /// Alternatives of literals.
    pub fn words(options: &[&'static str]) -> Node {
        Node::Alt(options.iter().map(|w| vec![Node::Lit(w)]).collect())
    }

    fn is_space(unit: u16) -> bool {
        matches!(
            unit,
            0x09..=0x0D
                | 0x20
                | 0xA0
                | 0x1680
                | 0x2000..=0x200A
                | 0x2028
                | 0x2029
                | 0x202F
                | 0x205F
                | 0x3000
                | 0xFEFF
        )
    }

    fn is_alnum(unit: u16) -> bool {
        u8::try_from(unit).is_ok_and(|b| b.is_ascii_alphanumeric())
    }

    fn is_word(text: &[u16], at: Option<usize>) -> bool {
        at.and_then(|i| text.get(i))
            .is_some_and(|&u| is_alnum(u) || u == u16::from(b'_'))
    }

    fn in_class(class: Class, unit: u16) -> bool {
        match class {
            Class::Space => is_space(unit),
            Class::SpaceUnderscoreDash => {
                is_space(unit) || unit == u16::from(b'_') || unit == u16::from(b'-')
            }
            Class::NotAlnum => !is_alnum(unit),
        }
    }

    fn lit_at(text: &[u16], at: usize, literal: &str) -> bool {
        let bytes = literal.as_bytes();
        text.len() >= at + bytes.len()
            && bytes
                .iter()
                .zip(&text[at..])
                .all(|(&b, &unit)| u8::try_from(unit).is_ok_and(|u| u.eq_ignore_ascii_case(&b)))
    }

    fn step(node: &Node, text: &[u16], from: &[usize]) -> Vec<usize> {
        let mut out = Vec::new();
        for &at in from {
            match node {
                Node::Lit(literal) => {
                    if lit_at(text, at, literal) {
                        out.push(at + literal.len());
                    }
                }
                Node::One(class) => {
                    if text.get(at).is_some_and(|&u| in_class(*class, u)) {
                        out.push(at + 1);
                    }
                }
                Node::Plus(class) => {
                    let mut end = at;
                    while text.get(end).is_some_and(|&u| in_class(*class, u)) {
                        end += 1;
                        out.push(end);
                    }
                }
                Node::Dots(max) => {
                    out.push(at);
                    let mut end = at;
                    while end - at < *max
                        && text
                            .get(end)
                            .is_some_and(|&u| !matches!(u, 0x0A | 0x0D | 0x2028 | 0x2029))
                    {
                        end += 1;
                        out.push(end);
                    }
                }
                Node::Boundary => {
                    if is_word(text, at.checked_sub(1)) != is_word(text, Some(at)) {
                        out.push(at);
                    }
                }
                Node::Start => {
                    if at == 0 {
                        out.push(at);
                    }
                }
                Node::End => {
                    if at == text.len() {
                        out.push(at);
                    }
                }
                Node::Alt(options) => {
                    for option in options {
                        out.extend(sequence(option, text, &[at]));
                    }
                }
                Node::Opt(inner) => {
                    out.push(at);
                    out.extend(sequence(inner, text, &[at]));
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn sequence(nodes: &[Node], text: &[u16], from: &[usize]) -> Vec<usize> {
        let mut positions = from.to_vec();
        for node in nodes {
            if positions.is_empty() {
                break;
            }
            positions = step(node, text, &positions);
        }
        positions
    }

    /// `RegExp.prototype.test`: a match starting anywhere.
    pub fn test(pattern: &[Node], text: &str) -> bool {
        let units: Vec<u16> = text.encode_utf16().collect();
        (0..=units.len()).any(|start| !sequence(pattern, &units, &[start]).is_empty())
    }
}

fn quota_patterns() -> Vec<Vec<wording::Node>> {
    use wording::Class::SpaceUnderscoreDash as Sud;
    use wording::Node::*;
    use wording::words;
    vec![
        // \binsufficient[\s_-]+(?:quota|balance|credits?)\b
        vec![
            Boundary,
            Lit("insufficient"),
            Plus(Sud),
            words(&["quota", "balance", "credits", "credit"]),
            Boundary,
        ],
        // \b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b
        vec![
            Boundary,
            Alt(vec![
                vec![Lit("quota")],
                vec![Lit("usage"), Plus(Sud), Lit("limit")],
            ]),
            Plus(Sud),
            words(&["exceeded", "exhausted", "reached"]),
            Boundary,
        ],
        // \bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b
        vec![
            Boundary,
            Lit("exceed"),
            Opt(vec![words(&["ed", "s"])]),
            Plus(Sud),
            Opt(vec![words(&["your", "the"]), Plus(Sud)]),
            Opt(vec![Lit("current"), Plus(Sud)]),
            Lit("quota"),
            Boundary,
        ],
        // \b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b
        vec![
            Boundary,
            words(&["balance", "credits", "credit"]),
            Plus(Sud),
            words(&["exhausted", "depleted"]),
            Boundary,
        ],
        // \bout[\s_-]+of[\s_-]+(?:credits?|budget)\b
        vec![
            Boundary,
            Lit("out"),
            Plus(Sud),
            Lit("of"),
            Plus(Sud),
            words(&["credits", "credit", "budget"]),
            Boundary,
        ],
    ]
}

fn context_patterns() -> Vec<Vec<wording::Node>> {
    use wording::Class::{NotAlnum, Space, SpaceUnderscoreDash as Sud};
    use wording::Node::*;
    use wording::words;
    let model_possessive = || Opt(vec![Lit("model"), Opt(vec![Lit("'s")]), Plus(Space)]);
    vec![
        // (?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-]
        // (?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])
        vec![
            Alt(vec![vec![Start], vec![One(NotAlnum)]]),
            Lit("context"),
            One(Sud),
            words(&["length", "window"]),
            One(Sud),
            Alt(vec![
                vec![Lit("exceed"), Opt(vec![words(&["ed", "s"])])],
                vec![Lit("overflow"), Opt(vec![Lit("ed")])],
                vec![Lit("limit"), One(Sud), Lit("exceeded")],
            ]),
            Alt(vec![vec![End], vec![One(NotAlnum)]]),
        ],
        // \b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b
        vec![
            Boundary,
            words(&["maximum", "max"]),
            Opt(vec![Plus(Space), words(&["allowed", "supported"])]),
            Plus(Space),
            Lit("context"),
            Plus(Space),
            words(&["length", "window"]),
            Boundary,
        ],
        // \b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+
        // (?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?\b
        vec![
            Boundary,
            words(&["request", "prompt", "input", "messages", "message"]),
            Plus(Space),
            Opt(vec![words(&["is", "are"]), Plus(Space)]),
            Lit("too"),
            Plus(Space),
            words(&["large", "long"]),
            Plus(Space),
            Lit("for"),
            Plus(Space),
            Opt(vec![words(&["this", "the"]), Plus(Space)]),
            model_possessive(),
            Lit("context"),
            Opt(vec![Plus(Space), Lit("window")]),
            Boundary,
        ],
        // \b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b
        vec![
            Boundary,
            words(&["input", "prompt", "request"]),
            Plus(Space),
            Opt(vec![Lit("is"), Plus(Space)]),
            Lit("too"),
            Plus(Space),
            words(&["long", "large"]),
            Plus(Space),
            Lit("for"),
            Plus(Space),
            words(&["this", "the"]),
            Plus(Space),
            Lit("model"),
            Boundary,
        ],
        // \b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|
        // is\s+larger\s+than)\b.{0,40}\b(?:the\s+)?(?:model(?:'s)?\s+)?context
        // (?:\s+(?:length|window))?\b
        vec![
            Boundary,
            words(&["input", "prompt", "request", "messages", "message"]),
            Boundary,
            Dots(40),
            Boundary,
            Alt(vec![
                vec![Lit("exceed"), Opt(vec![words(&["s", "ed"])])],
                vec![Lit("overflow"), Opt(vec![Lit("s")])],
                vec![
                    Lit("is"),
                    Plus(Space),
                    Lit("larger"),
                    Plus(Space),
                    Lit("than"),
                ],
            ]),
            Boundary,
            Dots(40),
            Boundary,
            Opt(vec![Lit("the"), Plus(Space)]),
            model_possessive(),
            Lit("context"),
            Opt(vec![Plus(Space), words(&["length", "window"])]),
            Boundary,
        ],
    ]
}

/// `isQuotaExceededError`: terminal quota, balance, credit, budget or
/// usage-limit wording (as opposed to a transient rate limit).
pub fn is_quota_exceeded_error(detail: &str) -> bool {
    quota_patterns()
        .iter()
        .any(|pattern| wording::test(pattern, detail))
}

/// `isContextWindowExceededError`: wording that names the model's context
/// bound as exceeded.
pub fn is_context_window_exceeded_error(detail: &str) -> bool {
    context_patterns()
        .iter()
        .any(|pattern| wording::test(pattern, detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(texts: &[&str]) -> Value {
        let content: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        json!({"content": content, "source": {"kind": "user"}, "role": "user", "id": "u1"})
    }

    fn assistant(content: Value) -> Value {
        json!({
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": PROVIDER, "model": "deepseek-v4-flash"},
            "id": "a1",
        })
    }

    fn tool_result(call_id: &str, texts: &[&str]) -> Value {
        let content: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        json!({
            "source": {"kind": "tool", "callId": call_id},
            "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": false}],
            "role": "user",
            "id": "t1",
        })
    }

    fn request(messages: Vec<Value>) -> Value {
        json!({
            "provider": PROVIDER,
            "model": "deepseek-v4-flash",
            "messages": messages,
            "sessionId": "s1",
        })
    }

    fn body(request: &Value) -> Value {
        serialize_request(request, &DeepSeekDefaults::default()).unwrap()
    }

    fn body_of(messages: Vec<Value>) -> Value {
        body(&request(messages))
    }

    fn thinking(request: &Value, defaults: &DeepSeekDefaults) -> Result<Thinking, JsError> {
        resolve_thinking(request, defaults)
    }

    fn thinking_of(thinking: Option<&str>, effort: Option<&str>) -> Thinking {
        Thinking {
            thinking: thinking.map(String::from),
            reasoning_effort: effort.map(String::from),
        }
    }

    fn defaults(thinking: Option<&str>, effort: Option<&str>) -> DeepSeekDefaults {
        DeepSeekDefaults {
            thinking: thinking.map(String::from),
            reasoning_effort: effort.map(String::from),
        }
    }

    fn translate_all(payloads: &[&str]) -> Vec<Value> {
        let mut translator = Translator::new();
        let mut chunks = Vec::new();
        for payload in payloads {
            chunks.extend(translator.push_payload(payload).unwrap());
        }
        assert!(translator.is_done());
        chunks
    }

    fn texts(chunks: &[Value]) -> Vec<String> {
        chunks
            .iter()
            .map(|c| serde_json::to_string(c).unwrap())
            .collect()
    }

    fn sse(payloads: &[&str]) -> String {
        payloads.iter().map(|p| format!("data: {p}\n\n")).collect()
    }

    fn data(text: &str) -> SseItem {
        SseItem::Data(text.into())
    }

    fn comment(text: &str) -> SseItem {
        SseItem::Comment(text.into())
    }

    fn decode_reads(reads: &[&[u8]]) -> Vec<SseItem> {
        let mut decoder = SseDecoder::new();
        reads.iter().flat_map(|read| decoder.push(read)).collect()
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    // ---- W1–W3: request body --------------------------------------------

    #[test]
    fn scenario_system_first_then_history_with_streaming_usage() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        let body = body(&req);
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}])
        );
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"deepseek-v4-flash","messages":[{"role":"system","content":"S"},{"role":"user","content":"u"}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn scenario_absent_system_adds_no_system_message() {
        let body = body(&request(vec![user(&["u"])]));
        assert_eq!(body["messages"], json!([{"role": "user", "content": "u"}]));
        // The adapter itself only tests for presence: a present "" is sent
        // (the loop is what omits an empty rendered prompt).
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("");
        assert_eq!(
            serialize_request(&req, &DeepSeekDefaults::default()).unwrap()["messages"][0],
            json!({"role": "system", "content": ""})
        );
    }

    #[test]
    fn scenario_user_text_blocks_join_without_separator() {
        let body = body_of(vec![user(&["a", "b"])]);
        assert_eq!(body["messages"], json!([{"role": "user", "content": "ab"}]));
    }

    #[test]
    fn scenario_empty_tool_result_is_no_output_and_no_user_message() {
        let body = body_of(vec![tool_result("c1", &[])]);
        assert_eq!(
            body["messages"],
            json!([{"role": "tool", "tool_call_id": "c1", "content": "(no output)"}])
        );
        let body = body_of(vec![tool_result("c2", &["", ""])]);
        assert_eq!(body["messages"][0]["content"], json!("(no output)"));
        let body = body_of(vec![tool_result("c3", &["x", "y"])]);
        assert_eq!(body["messages"][0]["content"], json!("xy"));
    }

    #[test]
    fn user_text_precedes_its_tool_results() {
        let message = json!({
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "r1"}], "isError": false},
                {"type": "text", "text": "note"},
                {"type": "tool-result", "toolCallId": "c2", "content": [], "isError": true},
            ],
            "source": {"kind": "user"},
            "role": "user",
            "id": "m",
        });
        assert_eq!(
            body_of(vec![message])["messages"],
            json!([
                {"role": "user", "content": "note"},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"},
                {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
            ])
        );
        // A user message with neither text nor tool results still goes out.
        assert_eq!(
            body_of(vec![user(&[])])["messages"],
            json!([{"role": "user", "content": ""}])
        );
    }

    #[test]
    fn scenario_assistant_tool_call_only_turn_has_empty_string_content() {
        let turn = assistant(json!([
            {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}
        ]));
        assert_eq!(
            serde_json::to_string(&body_of(vec![turn])["messages"][0]).unwrap(),
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}"#
        );
    }

    #[test]
    fn assistant_reasoning_is_sent_back_only_when_non_empty() {
        let turn = assistant(json!([
            {"type": "reasoning", "text": "th"},
            {"type": "text", "text": "A"},
            {"type": "reasoning", "text": "ink"},
            {"type": "text", "text": "B"},
        ]));
        assert_eq!(
            serde_json::to_string(&body_of(vec![turn])["messages"][0]).unwrap(),
            r#"{"role":"assistant","content":"AB","reasoning_content":"think"}"#
        );
        let plain =
            assistant(json!([{"type": "reasoning", "text": ""}, {"type": "text", "text": "A"}]));
        assert_eq!(
            body_of(vec![plain])["messages"][0],
            json!({"role": "assistant", "content": "A"})
        );
    }

    #[test]
    fn system_role_history_message_flattens_text() {
        let message = json!({"role": "system", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]});
        assert_eq!(
            body_of(vec![message])["messages"],
            json!([{"role": "system", "content": "xy"}])
        );
    }

    #[test]
    fn images_are_unsupported_content_even_nested_in_tool_results() {
        let expected = "The DeepSeek chat-completions adapter does not support image content.";
        let image = json!({"content": [{"type": "image", "attachment": {"id": "i"}}], "role": "user", "id": "m"});
        let error =
            serialize_request(&request(vec![image]), &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(error.message, expected);
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(json!({"message": expected, "code": "UNSUPPORTED_CONTENT"}))
        );
        let nested = json!({"content": [{"type": "tool-result", "toolCallId": "c", "content": [{"type": "image"}], "isError": false}], "role": "user", "id": "m"});
        let nested_request = request(vec![nested]);
        assert!(request_has_image(&nested_request));
        let error = serialize_request(&nested_request, &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
        // The image check runs before effort validation.
        let mut both = request(vec![
            json!({"content": [{"type": "image"}], "role": "assistant"}),
        ]);
        both["reasoningEffort"] = json!("medium");
        assert_eq!(
            serialize_request(&both, &DeepSeekDefaults::default())
                .unwrap_err()
                .code
                .as_deref(),
            Some("UNSUPPORTED_CONTENT")
        );
        assert!(!request_has_image(&request(vec![user(&["u"])])));
        let gate = image_input_error("deepseek-v4-flash");
        assert_eq!(
            gate.message,
            "DeepSeek model \"deepseek-v4-flash\" does not accept image input."
        );
        assert_eq!(gate.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
    }

    #[test]
    fn top_level_key_order_with_every_optional_field() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        req["reasoningEffort"] = json!("high");
        req["temperature"] = json!(0.5);
        req["maxTokens"] = json!(256000);
        req["stop"] = json!(["END"]);
        req["purpose"] = json!("agent");
        req["tools"] = json!([
            {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"b": {}, "1": {}}}},
            {"name": "bash", "description": "Run", "parameters": {"type": "object"}},
        ]);
        let text = serde_json::to_string(&body(&req)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"model":"deepseek-v4-flash","messages":[{"role":"system","content":"S"},{"role":"user","content":"u"}],"#,
                r#""stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"enabled"},"reasoning_effort":"high","#,
                r#""tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"1":{},"b":{}}}}},"#,
                r#"{"type":"function","function":{"name":"bash","description":"Run","parameters":{"type":"object"}}}],"#,
                r#""temperature":0.5,"max_tokens":256000,"stop":["END"]}"#
            )
        );
    }

    #[test]
    fn empty_tools_and_unset_fields_are_omitted_and_numbers_are_js_numbers() {
        let mut req = request(vec![user(&["u"])]);
        req["tools"] = json!([]);
        req["temperature"] = json!(1.0);
        let body = body(&req);
        assert!(body.get("tools").is_none());
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("stop").is_none());
        assert!(body.get("thinking").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(serde_json::to_string(&body["temperature"]).unwrap(), "1");
    }

    #[test]
    fn no_cache_directive_anywhere() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        let text = serde_json::to_string(&body(&req)).unwrap();
        assert!(!text.contains("cache"), "{text}");
        let headers = request_headers("k", "u", Some("s"), true);
        assert!(
            headers
                .iter()
                .all(|(n, v)| !n.contains("cache") && !v.contains("cache"))
        );
    }

    #[test]
    fn scenario_two_step_tool_turn_is_prefix_identical() {
        let mut first = request(vec![user(&["list files"])]);
        first["system"] = json!("S");
        first["reasoningEffort"] = json!("high");
        first["maxTokens"] = json!(256000);
        first["tools"] =
            json!([{"name": "ls", "description": "List", "parameters": {"type": "object"}}]);
        let mut second = first.clone();
        let messages = second["messages"].as_array_mut().unwrap();
        messages.push(assistant(json!([
            {"type": "reasoning", "text": "need ls"},
            {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"},
        ])));
        messages.push(tool_result("c1", &["a.txt"]));
        let one = body(&first);
        let two = body(&second);
        let one_messages = one["messages"].as_array().unwrap();
        let two_messages = two["messages"].as_array().unwrap();
        assert_eq!(&two_messages[..one_messages.len()], one_messages.as_slice());
        assert_eq!(
            &two_messages[one_messages.len()..],
            &[
                json!({"role": "assistant", "content": "", "reasoning_content": "need ls", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}),
            ]
        );
        let without_messages = |mut body: Value| {
            body.as_object_mut().unwrap().remove("messages");
            body
        };
        assert_eq!(without_messages(one.clone()), without_messages(two.clone()));
        // Byte view: request 1's serialized message list (minus its `]`) is
        // a prefix of request 2's.
        let one_text = serde_json::to_string(&one["messages"]).unwrap();
        let two_text = serde_json::to_string(&two["messages"]).unwrap();
        assert!(two_text.starts_with(&one_text[..one_text.len() - 1]));
    }

    // ---- W4: thinking ------------------------------------------------------

    fn with(effort: Option<&str>, purpose: Option<&str>) -> Value {
        let mut req = request(vec![]);
        if let Some(effort) = effort {
            req["reasoningEffort"] = json!(effort);
        }
        if let Some(purpose) = purpose {
            req["purpose"] = json!(purpose);
        }
        req
    }

    #[test]
    fn thinking_resolution_cases() {
        let none = DeepSeekDefaults::default();
        assert_eq!(
            thinking(&with(None, None), &none).unwrap(),
            thinking_of(None, None)
        );
        assert_eq!(
            thinking(&with(Some("off"), None), &none).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        for effort in ["low", "high", "max"] {
            assert_eq!(
                thinking(&with(Some(effort), None), &none).unwrap(),
                thinking_of(Some("enabled"), Some(effort))
            );
        }
        // session-title short-circuits everything, even an invalid effort.
        assert_eq!(
            thinking(&with(Some("bogus"), Some("session-title")), &none).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(
                &with(Some("high"), Some("session-title")),
                &defaults(Some("enabled"), Some("max"))
            )
            .unwrap(),
            thinking_of(Some("disabled"), None)
        );
        // Other purposes do not.
        assert_eq!(
            thinking(&with(Some("high"), Some("compaction")), &none).unwrap(),
            thinking_of(Some("enabled"), Some("high"))
        );
        // Deployment defaults apply only without a request effort.
        assert_eq!(
            thinking(&with(None, None), &defaults(None, Some("low"))).unwrap(),
            thinking_of(Some("enabled"), Some("low"))
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("enabled"), None)).unwrap(),
            thinking_of(Some("enabled"), None)
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("disabled"), None)).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(&with(Some("off"), None), &defaults(Some("disabled"), None)).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("disabled"), Some("off"))).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(
                &with(Some("max"), None),
                &defaults(Some("enabled"), Some("low"))
            )
            .unwrap(),
            thinking_of(Some("enabled"), Some("max"))
        );
        // Wire: `off` never appears as an effort.
        let body = body(&with(Some("off"), None));
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        assert!(body.get("reasoning_effort").is_none());
    }

    #[test]
    fn thinking_resolution_errors() {
        let mut req = request(vec![]);
        req["reasoningEffort"] = json!("medium");
        let error = thinking(&req, &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(
            error.message,
            "DeepSeek does not support reasoning effort \"medium\""
        );
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_REASONING_EFFORT"));
        req["reasoningEffort"] = json!(null);
        assert_eq!(
            thinking(&req, &DeepSeekDefaults::default())
                .unwrap_err()
                .message,
            "DeepSeek does not support reasoning effort \"null\""
        );
        req["reasoningEffort"] = json!("high");
        let error = thinking(&req, &defaults(Some("disabled"), None)).unwrap_err();
        assert_eq!(
            error.message,
            "DeepSeek deployment does not support reasoning effort \"high\""
        );
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_REASONING_EFFORT"));
        // The same errors surface from serialize_request.
        assert_eq!(
            serialize_request(&req, &defaults(Some("disabled"), None))
                .unwrap_err()
                .failure
                .as_deref()
                .cloned(),
            Some(
                json!({"message": "DeepSeek deployment does not support reasoning effort \"high\"", "code": "UNSUPPORTED_REASONING_EFFORT"})
            )
        );
        // A conflicting deployment default is rejected per request too.
        assert_eq!(
            thinking(&request(vec![]), &defaults(Some("disabled"), Some("low")))
                .unwrap_err()
                .message,
            "DeepSeek deployment does not support reasoning effort \"low\""
        );
        assert_eq!(
            defaults(Some("disabled"), Some("low"))
                .validate()
                .unwrap_err()
                .message,
            "llm-deepseek: only reasoningEffort \"off\" can be configured when thinking is disabled"
        );
        assert!(defaults(Some("disabled"), Some("off")).validate().is_ok());
    }

    // ---- W5: model info ----------------------------------------------------

    #[test]
    fn model_info_defaults_and_catalog() {
        let connection = DeepSeekConnection::default();
        let info = resolve_model(&connection, "deepseek-v4-flash");
        assert_eq!(info.context_window, Some(1_000_000));
        assert_eq!(info.default_max_tokens, Some(256_000));
        let reasoning = info.reasoning.unwrap();
        assert_eq!(reasoning.efforts, ["off", "low", "high", "max"]);
        assert_eq!(reasoning.default_effort.as_deref(), Some("high"));

        let custom = DeepSeekConnection {
            default_context_window: 64_000,
            max_tokens: 8_000,
            models: vec![DeepSeekModel {
                id: "m".into(),
                context_window: Some(128_000),
                max_tokens: Some(4_000),
            }],
            defaults: defaults(None, Some("low")),
            ..DeepSeekConnection::default()
        };
        let known = resolve_model(&custom, "m");
        assert_eq!(known.context_window, Some(128_000));
        assert_eq!(known.default_max_tokens, Some(4_000));
        assert_eq!(
            known.reasoning.unwrap().default_effort.as_deref(),
            Some("low")
        );
        let unknown = resolve_model(&custom, "other");
        assert_eq!(unknown.context_window, Some(64_000));
        assert_eq!(unknown.default_max_tokens, Some(8_000));

        let off = DeepSeekConnection {
            defaults: defaults(Some("disabled"), None),
            ..DeepSeekConnection::default()
        };
        let reasoning = resolve_model(&off, "deepseek-v4-pro").reasoning.unwrap();
        assert_eq!(reasoning.efforts, ["off"]);
        assert_eq!(reasoning.default_effort.as_deref(), Some("off"));
        let max = DeepSeekConnection {
            defaults: defaults(Some("enabled"), Some("max")),
            ..DeepSeekConnection::default()
        };
        assert_eq!(
            resolve_model(&max, "x")
                .reasoning
                .unwrap()
                .default_effort
                .as_deref(),
            Some("max")
        );
    }

    #[test]
    fn model_info_feeds_prepare_call() {
        let info = resolve_model(&DeepSeekConnection::default(), "deepseek-v4-flash");
        let prepared = crate::model::llm::prepare_call(
            &json!({"provider": PROVIDER, "model": "deepseek-v4-flash"}),
            &info,
        )
        .unwrap();
        assert_eq!(prepared.config["reasoningEffort"], json!("high"));
        assert_eq!(prepared.config["maxTokens"], json!(256000));
        let body = serialize_request(&prepared.config, &DeepSeekDefaults::default()).unwrap();
        assert_eq!(body["reasoning_effort"], json!("high"));
        assert_eq!(body["max_tokens"], json!(256000));
    }

    // ---- W6: headers -------------------------------------------------------

    #[test]
    fn headers_in_upstream_order() {
        assert_eq!(
            request_headers("sk-1", "anon", Some("sess"), false),
            headers(&[
                ("authorization", "Bearer sk-1"),
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
                ("user-agent", "dshc/0.1.0 (reference)"),
                ("x-deepseek-harness-user-id", "anon"),
                ("x-deepseek-harness-session-id", "sess"),
            ])
        );
        let compact = request_headers("k", "u", None, true);
        assert_eq!(compact.len(), 6);
        assert_eq!(
            compact.last().unwrap(),
            &("x-deepseek-harness-compact".to_string(), "1".to_string())
        );
        assert!(
            compact
                .iter()
                .all(|(n, _)| n != "x-deepseek-harness-session-id")
        );
        assert_eq!(
            chat_completions_url(PUBLIC_BASE_URL),
            "https://api.deepseek.com/chat/completions"
        );
    }

    // ---- W7: SSE framing ---------------------------------------------------

    fn realistic_stream() -> String {
        let mut text = String::from(": keep-alive\n\n");
        text.push_str(&sse(&[
            r#"{"choices":[{"delta":{"reasoning_content":"Pensée: 世界"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Grüße 🎉 done"}}]}"#,
        ]));
        text.push_str(
            "event: message\nid: 7\nretry: 10\ndata: {\"choices\":[],\ndata:\"usage\":null}\n\n",
        );
        text.push_str(":comment without space\n");
        text.push_str("data: [DONE]\n\n");
        text
    }

    fn realistic_items() -> Vec<SseItem> {
        vec![
            comment("keep-alive"),
            data(r#"{"choices":[{"delta":{"reasoning_content":"Pensée: 世界"}}]}"#),
            data(r#"{"choices":[{"delta":{"content":"Grüße 🎉 done"}}]}"#),
            data("{\"choices\":[],\n\"usage\":null}"),
            comment("comment without space"),
            data("[DONE]"),
        ]
    }

    #[test]
    fn sse_realistic_stream_in_one_read() {
        let stream = realistic_stream();
        assert_eq!(decode_reads(&[stream.as_bytes()]), realistic_items());
    }

    #[test]
    fn sse_split_at_every_byte_position_gives_the_same_items() {
        for ending in ["\n", "\r\n", "\r"] {
            let mut stream = realistic_stream().replace('\n', ending);
            let mut expected = realistic_items();
            if ending == "\r" {
                // A CR-only stream's last blank line needs a later line
                // terminator before it takes effect.
                stream.push_str(": tail\r\r");
                expected.push(comment("tail"));
            }
            let bytes = stream.as_bytes();
            let whole = decode_reads(&[bytes]);
            assert_eq!(whole, expected, "ending {ending:?}");
            for split in 0..=bytes.len() {
                let (a, b) = bytes.split_at(split);
                assert_eq!(
                    decode_reads(&[a, b]),
                    whole,
                    "ending {ending:?}, split at {split}"
                );
            }
            let byte_by_byte: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(
                decode_reads(&byte_by_byte),
                whole,
                "ending {ending:?}, byte by byte"
            );
            let threes: Vec<&[u8]> = bytes.chunks(3).collect();
            assert_eq!(decode_reads(&threes), whole, "ending {ending:?}, threes");
        }
    }

    #[test]
    fn sse_crlf_and_cr_line_endings() {
        assert_eq!(
            decode_reads(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]),
            vec![data("a"), data("b"), data("c")]
        );
        // A CRLF split between reads is one line ending, not two.
        assert_eq!(
            decode_reads(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]),
            vec![data("a\nb")]
        );
    }

    #[test]
    fn sse_trailing_cr_waits_for_more_input() {
        // "\r" at the end of a read might be half of "\r\n": the blank line is
        // not seen yet, and a read without any line terminator only buffers.
        assert_eq!(decode_reads(&[b"data: [DONE]\r\r"]), vec![]);
        assert_eq!(decode_reads(&[b"data: [DONE]\r\r", b"x"]), vec![]);
        assert_eq!(
            decode_reads(&[b"data: [DONE]\r", b"\r", b"\n"]),
            vec![data("[DONE]")]
        );
        assert_eq!(decode_reads(&[b"data: [DONE]\r\rx"]), vec![data("[DONE]")]);
    }

    #[test]
    fn sse_comments_and_multi_line_data() {
        assert_eq!(
            decode_reads(&[b": ping\n:  two spaces\n:\ndata: x\ndata:y\ndata\ndata:  z\n\n"]),
            vec![
                comment("ping"),
                comment(" two spaces"),
                comment(""),
                data("x\ny\n\n z")
            ]
        );
    }

    #[test]
    fn sse_other_fields_are_ignored_and_blank_events_not_dispatched() {
        assert_eq!(
            decode_reads(&[
                b"event: e\nid: 1\nretry: 5\nfoo: bar\nnocolon\n\n\n\ndata :x\n\ndata: ok\n\n"
            ]),
            vec![data("ok")]
        );
        // An empty data line still counts as data.
        assert_eq!(decode_reads(&[b"data:\n\n"]), vec![data("")]);
    }

    #[test]
    fn sse_final_event_without_blank_line_is_not_dispatched() {
        assert_eq!(
            decode_reads(&[b"data: a\n\ndata: [DONE]\n"]),
            vec![data("a")]
        );
        assert_eq!(decode_reads(&[b"data: [DONE]"]), vec![]);
    }

    #[test]
    fn sse_utf8_split_inside_a_sequence_and_bom_handling() {
        let text = "data: é🎉\n\n".as_bytes();
        for split in 0..=text.len() {
            let (a, b) = text.split_at(split);
            assert_eq!(decode_reads(&[a, b]), vec![data("é🎉")]);
        }
        // A UTF-8 BOM is dropped by the decoder, even when split.
        assert_eq!(
            decode_reads(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]),
            vec![data("a")]
        );
        // Invalid bytes decode to U+FFFD.
        assert_eq!(
            decode_reads(&[b"data: a\xFFb\n\n"]),
            vec![data("a\u{FFFD}b")]
        );
        // The parser's own check strips the characters "ï»¿" from the first
        // decoded chunk only.
        assert_eq!(
            decode_reads(&["ï»¿data: a\n\n".as_bytes()]),
            vec![data("a")]
        );
        assert_eq!(decode_reads(&[b"\n", "ï»¿data: a\n\n".as_bytes()]), vec![]);
    }

    // ---- W8, W9: translation ------------------------------------------------

    const SCENARIO: [&str; 4] = [
        r#"{"choices":[{"delta":{"reasoning_content":""}}]}"#,
        r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":20}}"#,
        "[DONE]",
    ];

    const SCENARIO_CHUNKS: [&str; 5] = [
        r#"{"type":"block-start","index":0,"blockType":"text"}"#,
        r#"{"type":"text-delta","index":0,"text":"Hi"}"#,
        r#"{"type":"block-end","index":0,"block":{"type":"text","text":"Hi"}}"#,
        r#"{"type":"usage","usage":{"inputTokens":20,"outputTokens":5,"cacheReadTokens":80}}"#,
        r#"{"type":"finish","reason":{"kind":"stop"}}"#,
    ];

    #[test]
    fn scenario_empty_reasoning_then_text_with_usage() {
        assert_eq!(texts(&translate_all(&SCENARIO)), SCENARIO_CHUNKS);
    }

    #[test]
    fn scenario_through_sse_bytes_split_everywhere() {
        let stream = sse(&SCENARIO);
        let bytes = stream.as_bytes();
        for split in 0..=bytes.len() {
            let (a, b) = bytes.split_at(split);
            let (chunks, error) = translate_reads([a, b]);
            assert!(error.is_none(), "split at {split}");
            assert_eq!(texts(&chunks), SCENARIO_CHUNKS, "split at {split}");
        }
    }

    #[test]
    fn scenario_cached_tokens_win_over_cache_hit_tokens() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":20,"prompt_tokens_details":{"cached_tokens":64}}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[3],
            json!({"type": "usage", "usage": {"inputTokens": 36, "outputTokens": 5, "cacheReadTokens": 64}})
        );
    }

    fn finish_for(reason: &str) -> Value {
        let payload =
            format!(r#"{{"choices":[{{"delta":{{"content":"x"}},"finish_reason":"{reason}"}}]}}"#);
        translate_all(&[&payload, "[DONE]"]).pop().unwrap()
    }

    #[test]
    fn finish_reason_mappings() {
        assert_eq!(
            finish_for("stop"),
            json!({"type": "finish", "reason": {"kind": "stop"}})
        );
        assert_eq!(
            finish_for("tool_calls"),
            json!({"type": "finish", "reason": {"kind": "tool-calls"}})
        );
        assert_eq!(
            finish_for("length"),
            json!({"type": "finish", "reason": {"kind": "max-tokens"}})
        );
        assert_eq!(
            finish_for("insufficient_system_resource")["reason"]["failure"],
            json!({"message": "model stopped: insufficient_system_resource", "code": "INSUFFICIENT_SYSTEM_RESOURCE"})
        );
        // No finish_reason at all is a stop; the latest string one wins.
        assert_eq!(
            translate_all(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"]).pop(),
            Some(json!({"type": "finish", "reason": {"kind": "stop"}}))
        );
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":null}]}"#,
                "[DONE]"
            ])
            .pop(),
            Some(json!({"type": "finish", "reason": {"kind": "stop"}}))
        );
    }

    #[test]
    fn scenario_content_filter_is_an_error_finish() {
        assert_eq!(
            serde_json::to_string(&finish_for("content_filter")).unwrap(),
            r#"{"type":"finish","reason":{"kind":"error","failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}}"#
        );
    }

    #[test]
    fn scenario_done_without_blocks_is_empty_response() {
        let expected = json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "model returned a completed response with no content", "code": "EMPTY_RESPONSE"}}});
        assert_eq!(translate_all(&["[DONE]"]), vec![expected.clone()]);
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{"reasoning_content":"","content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#,
                "[DONE]",
            ]),
            vec![
                json!({"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 0}}),
                expected
            ]
        );
        // Only a stop is degenerate: other finishes keep their meaning.
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
                "[DONE]"
            ]),
            vec![json!({"type": "finish", "reason": {"kind": "max-tokens"}})]
        );
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]"
            ]),
            vec![json!({"type": "finish", "reason": {"kind": "tool-calls"}})]
        );
    }

    #[test]
    fn reasoning_text_and_tool_calls_open_blocks_in_first_seen_order() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"reasoning_content":"Let me ","content":null}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"look."}}]}"#,
            r#"{"choices":[{"delta":{"content":"Reading.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"ls","arguments":"{}"}},{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_cache_hit_tokens":0,"completion_tokens_details":{"reasoning_tokens":4}}}"#,
            "[DONE]",
        ]);
        let expected = [
            r#"{"type":"block-start","index":0,"blockType":"reasoning"}"#,
            r#"{"type":"reasoning-delta","index":0,"text":"Let me "}"#,
            r#"{"type":"reasoning-delta","index":0,"text":"look."}"#,
            r#"{"type":"block-start","index":1,"blockType":"text"}"#,
            r#"{"type":"text-delta","index":1,"text":"Reading."}"#,
            r#"{"type":"block-start","index":2,"blockType":"tool-call"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":""}"#,
            r#"{"type":"block-start","index":3,"blockType":"tool-call"}"#,
            r#"{"type":"tool-call-delta","index":3,"id":"call_b","name":"ls","argumentsDelta":"{}"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":"{\"p\":"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":"1}"}"#,
            r#"{"type":"block-end","index":0,"block":{"type":"reasoning","text":"Let me look."}}"#,
            r#"{"type":"block-end","index":1,"block":{"type":"text","text":"Reading."}}"#,
            r#"{"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_a","name":"read","arguments":"{\"p\":1}"}}"#,
            r#"{"type":"block-end","index":3,"block":{"type":"tool-call","id":"call_b","name":"ls","arguments":"{}"}}"#,
            r#"{"type":"usage","usage":{"inputTokens":50,"outputTokens":9,"cacheReadTokens":0,"reasoningTokens":4}}"#,
            r#"{"type":"finish","reason":{"kind":"tool-calls"}}"#,
        ];
        assert_eq!(texts(&chunks), expected);
    }

    #[test]
    fn tool_call_delta_omits_unknown_name_and_defaults_id() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c9","function":{"name":"x"}}]}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[1],
            json!({"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{"})
        );
        assert_eq!(
            chunks[2],
            json!({"type": "tool-call-delta", "index": 0, "id": "c9", "name": "x", "argumentsDelta": ""})
        );
        assert_eq!(
            chunks[3],
            json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c9", "name": "x", "arguments": "{"}})
        );
        // No finish_reason: a stop, and a tool-call block makes it non-empty.
        assert_eq!(
            chunks[4],
            json!({"type": "finish", "reason": {"kind": "stop"}})
        );
    }

    #[test]
    fn latest_usage_wins_and_usage_only_trailer_is_accepted() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2}}"#,
            r#"{"choices":[],"usage":null}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[3],
            json!({"type": "usage", "usage": {"inputTokens": 12, "outputTokens": 2}})
        );
        // No usage at all: no usage chunk.
        let chunks = translate_all(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"]);
        assert!(chunks.iter().all(|c| c["type"] != "usage"));
    }

    #[test]
    fn usage_mapping() {
        // Both cached fields present: the OpenAI-compatible one wins.
        assert_eq!(
            serde_json::to_string(&map_usage(&json!({
                "prompt_tokens": 1000,
                "completion_tokens": 20,
                "prompt_cache_hit_tokens": 900,
                "prompt_cache_miss_tokens": 100,
                "prompt_tokens_details": {"cached_tokens": 896},
                "completion_tokens_details": {"reasoning_tokens": 7},
            })))
            .unwrap(),
            r#"{"inputTokens":104,"outputTokens":20,"cacheReadTokens":896,"reasoningTokens":7}"#
        );
        assert_eq!(
            serde_json::to_string(&map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 80})
            ))
            .unwrap(),
            r#"{"inputTokens":20,"outputTokens":5,"cacheReadTokens":80}"#
        );
        // Neither cached field: no cacheReadTokens; miss tokens are ignored.
        assert_eq!(
            map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_miss_tokens": 100})
            ),
            json!({"inputTokens": 100, "outputTokens": 5})
        );
        // `cached_tokens: null` falls back to the DeepSeek field.
        assert_eq!(
            map_usage(&json!({
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_cache_hit_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": null},
            })),
            json!({"inputTokens": 70, "outputTokens": 5, "cacheReadTokens": 30})
        );
        // A wire null is defined in JavaScript: it is kept and subtracts 0.
        assert_eq!(
            map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": null})
            ),
            json!({"inputTokens": 100, "outputTokens": 5, "cacheReadTokens": null})
        );
        // Missing prompt_tokens is NaN, which JSON writes as null; a missing
        // completion_tokens is undefined and vanishes.
        assert_eq!(
            map_usage(&json!({"completion_tokens": 5})),
            json!({"inputTokens": null, "outputTokens": 5})
        );
        assert_eq!(
            map_usage(&json!({"prompt_tokens": 5})),
            json!({"inputTokens": 5})
        );
    }

    #[test]
    fn malformed_payload_is_malformed_response_with_a_120_unit_prefix() {
        let error = Translator::new().push_payload("{not json").unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(
                json!({"message": "malformed SSE payload: {not json", "code": "MALFORMED_RESPONSE"})
            )
        );
        let long = format!("{}{}", "x".repeat(119), "🎉 and more");
        let error = Translator::new().push_payload(&long).unwrap_err();
        // 119 units plus the first half of a surrogate pair.
        assert_eq!(
            error.message,
            format!("malformed SSE payload: {}\u{FFFD}", "x".repeat(119))
        );
        let long = "y".repeat(500);
        assert_eq!(
            Translator::new().push_payload(&long).unwrap_err().message,
            format!("malformed SSE payload: {}", "y".repeat(120))
        );
        let error = Translator::new().push_payload("").unwrap_err();
        assert_eq!(error.message, "malformed SSE payload: ");
        // Only the exact sentinel terminates.
        let error = Translator::new().push_payload("[DONE] ").unwrap_err();
        assert_eq!(error.code.as_deref(), Some("MALFORMED_RESPONSE"));
    }

    #[test]
    fn malformed_payload_after_deltas_keeps_the_deltas() {
        let stream = sse(&[r#"{"choices":[{"delta":{"content":"Hi"}}]}"#, "oops"]);
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert_eq!(chunks.len(), 2);
        let error = error.unwrap();
        assert_eq!(error.message, "malformed SSE payload: oops");
        assert_eq!(
            failure_chunk(&error, false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "malformed SSE payload: oops", "code": "MALFORMED_RESPONSE"}}})
        );
    }

    #[test]
    fn scenario_missing_done_is_stream_closed_after_the_deltas() {
        let stream = sse(&[
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
        ]);
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert_eq!(
            chunks,
            vec![
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
                json!({"type": "text-delta", "index": 0, "text": "Hel"}),
                json!({"type": "text-delta", "index": 0, "text": "lo"}),
            ]
        );
        let error = error.unwrap();
        assert_eq!(error, end_of_stream_error());
        assert_eq!(error.message, "SSE stream ended without [DONE]");
        assert_eq!(
            failure_chunk(&error, false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}}})
        );
        // A [DONE] without its blank line is not an event.
        let (_, error) = translate_reads([b"data: [DONE]\n".as_slice()]);
        assert_eq!(error.unwrap().code.as_deref(), Some("STREAM_CLOSED"));
    }

    #[test]
    fn done_stops_translation() {
        let mut translator = Translator::new();
        assert!(!translator.is_done());
        translator
            .push_payload(r#"{"choices":[{"delta":{"content":"x"}}]}"#)
            .unwrap();
        assert_eq!(translator.push_payload("[DONE]").unwrap().len(), 2);
        assert!(translator.is_done());
        assert_eq!(
            translator.push_payload("garbage").unwrap(),
            Vec::<Value>::new()
        );
        // Events after [DONE] in the same read are never translated.
        let stream = format!(
            "{}data: garbage\n\n",
            sse(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"])
        );
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert!(error.is_none());
        // block-start, text-delta, block-end, finish.
        assert_eq!(chunks.len(), 4);
    }

    #[test]
    fn odd_wire_json_throws_type_errors_where_upstream_does() {
        let mut translator = Translator::new();
        let mut out = Vec::new();
        let error = translator
            .push_payload_into(r#"{"choices":[{"delta":{"content":"a"}},null]}"#, &mut out)
            .unwrap_err();
        assert_eq!(error.name, "TypeError");
        assert_eq!(
            error.message,
            "Cannot read properties of null (reading 'delta')"
        );
        assert_eq!(out.len(), 2, "chunks before the throw were already yielded");
        assert_eq!(
            Translator::new().push_payload("null").unwrap_err().message,
            "Cannot read properties of null (reading 'choices')"
        );
        assert_eq!(
            Translator::new()
                .push_payload(r#"{"choices":{}}"#)
                .unwrap_err()
                .message,
            "object is not iterable (cannot read property Symbol(Symbol.iterator))"
        );
        // Primitives without the properties are simply empty.
        assert_eq!(
            Translator::new().push_payload("5").unwrap(),
            Vec::<Value>::new()
        );
        assert_eq!(
            Translator::new()
                .push_payload(r#"{"choices":"ab","usage":0}"#)
                .unwrap(),
            Vec::<Value>::new()
        );
        // The adapter reports such throws as TRANSPORT with the cause kept.
        let wrapped = stream_error(error, "http://p", false, None);
        assert_eq!(wrapped.message, "DeepSeek API stream from http://p failed");
        assert_eq!(wrapped.code.as_deref(), Some("TRANSPORT"));
        assert_eq!(
            wrapped.chain(),
            "DeepSeek API stream from http://p failed: Cannot read properties of null (reading 'delta')"
        );
    }

    // ---- W10: HTTP and other failures ---------------------------------------

    fn error_body(message: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_request_error"}}))
            .unwrap()
    }

    #[test]
    fn http_401_and_403_are_auth() {
        for status in [401, 403] {
            let error = http_error(
                status,
                &[],
                &error_body("Authentication Fails, Your api key is invalid"),
            );
            assert_eq!(error.name, "LlmError");
            assert_eq!(
                error.failure.as_deref().cloned(),
                Some(
                    json!({"message": "Authentication Fails, Your api key is invalid", "code": "AUTH", "status": status})
                )
            );
        }
        // Even quota wording does not override AUTH.
        assert_eq!(
            http_error(401, &[], &error_body("insufficient quota"))
                .code
                .as_deref(),
            Some("AUTH")
        );
    }

    #[test]
    fn http_413_is_invalid_request() {
        let error = http_error(413, &[], b"");
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 413)", "code": "INVALID_REQUEST", "status": 413})
            )
        );
        assert_eq!(
            http_error(413, &[], &error_body("context length exceeded"))
                .code
                .as_deref(),
            Some("INVALID_REQUEST")
        );
    }

    #[test]
    fn http_429_with_retry_after_and_request_id() {
        let error = http_error(
            429,
            &headers(&[
                ("Retry-After", "7"),
                ("X-Request-Id", "req-1"),
                ("x-deepseek-request-id", "ds-1"),
            ]),
            &error_body("Rate limit reached for requests"),
        );
        assert_eq!(
            serde_json::to_string(error.failure.as_ref().unwrap()).unwrap(),
            r#"{"message":"Rate limit reached for requests","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":7000,"requestId":"req-1"}"#
        );
        let fallback = http_error(429, &headers(&[("x-deepseek-request-id", "ds-1")]), b"{}");
        assert_eq!(
            fallback.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 429)", "code": "RATE_LIMIT", "status": 429, "requestId": "ds-1"})
            )
        );
        // An empty x-request-id is not null, so there is no fallback.
        let empty = http_error(
            429,
            &headers(&[("x-request-id", ""), ("x-deepseek-request-id", "ds-1")]),
            b"",
        );
        assert!(empty.failure.unwrap().get("requestId").is_none());
        // Zero, non-integer, negative and date values give no delay.
        for value in ["0", "1.5", " ", "Wed, 21 Oct 2099 07:28:00 GMT", "-3"] {
            let error = http_error(429, &headers(&[("retry-after", value)]), b"");
            assert!(
                error.failure.unwrap().get("providerRetryAfterMs").is_none(),
                "{value}"
            );
        }
        assert_eq!(provider_retry_after_ms(Some("120")), Some(120_000.0));
        assert_eq!(provider_retry_after_ms(None), None);
    }

    #[test]
    fn http_quota_wording_wins_over_status() {
        let error = http_error(402, &[], &error_body("Insufficient Balance"));
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(json!({"message": "Insufficient Balance", "code": "QUOTA", "status": 402}))
        );
        assert_eq!(
            http_error(
                429,
                &[],
                &error_body("You exceeded your current quota, please check your plan")
            )
            .code
            .as_deref(),
            Some("QUOTA")
        );
        // The provider code alone can carry the wording.
        let by_code = serde_json::to_vec(
            &json!({"error": {"code": "insufficient_quota", "message": "nope"}}),
        )
        .unwrap();
        assert_eq!(
            http_error(429, &[], &by_code).code.as_deref(),
            Some("QUOTA")
        );
        assert_eq!(http_error(402, &[], b"").code.as_deref(), Some("HTTP_402"));
    }

    #[test]
    fn http_400_context_window_or_invalid_request() {
        let context = http_error(
            400,
            &[],
            &error_body(
                "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            ),
        );
        assert_eq!(context.code.as_deref(), Some("CONTEXT_WINDOW_EXCEEDED"));
        assert_eq!(context.failure.as_ref().unwrap()["status"], json!(400));
        let plain = http_error(
            400,
            &[],
            &error_body("Invalid request: messages[1].role is invalid"),
        );
        assert_eq!(
            plain.failure.as_deref().cloned(),
            Some(
                json!({"message": "Invalid request: messages[1].role is invalid", "code": "INVALID_REQUEST", "status": 400})
            )
        );
    }

    #[test]
    fn http_500_and_other_statuses() {
        for status in [500, 502, 503, 599] {
            assert_eq!(http_error(status, &[], b"").code.as_deref(), Some("SERVER"));
        }
        let teapot = http_error(418, &[], b"<html>");
        assert_eq!(
            teapot.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 418)", "code": "HTTP_418", "status": 418})
            )
        );
        // Body shapes without a usable message keep the default.
        for body in [
            &b"null"[..],
            b"[]",
            b"{\"error\":\"bad\"}",
            b"{\"error\":{\"message\":\"\"}}",
            b"not json",
        ] {
            assert_eq!(
                http_error(404, &[], body).message,
                "DeepSeek API error (HTTP 404)"
            );
        }
        // A truthy non-string message breaks the LlmError constructor.
        let broken = http_error(400, &[], b"{\"error\":{\"message\":42}}");
        assert_eq!(broken.name, "Error");
        assert_eq!(
            broken.message,
            "LlmError message must be a non-empty string"
        );
        assert_eq!(
            stream_error(broken, "http://p", false, None)
                .code
                .as_deref(),
            Some("TRANSPORT")
        );
    }

    #[test]
    fn wording_classifiers() {
        for detail in [
            "context_length_exceeded",
            "Context window exceeded",
            "error: context-length-overflow.",
            "context_window_limit_exceeded",
            "maximum context length is 8192 tokens",
            "max supported context window",
            "Request too large for the model's context window",
            "messages are too long for this context",
            "input is too long for this model",
            "Your prompt of 9000 tokens exceeds the model's context length",
            "the input overflows the context",
        ] {
            assert!(is_context_window_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "",
            "context length",
            "xcontext_length_exceeded",
            "context_length_exceededx",
            "the request exceeds the maximum allowed size",
            "input is too long",
            "maximumcontext length",
            "prompt\nexceeds the context",
        ] {
            assert!(!is_context_window_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "insufficient_quota",
            "Insufficient Balance",
            "insufficient credits",
            "quota exceeded",
            "usage limit reached",
            "You exceeded your current quota",
            "exceeds the quota",
            "credits depleted",
            "balance exhausted",
            "out of budget",
            "Out-of-credits",
        ] {
            assert!(is_quota_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "rate limit reached",
            "insufficientquota",
            "quotas exceeded",
            "outof credits",
            "too many requests",
        ] {
            assert!(!is_quota_exceeded_error(detail), "{detail}");
        }
    }

    #[test]
    fn failure_helpers_and_chunks() {
        assert_eq!(
            transport_error("http://h:1").failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API stream from http://h:1 failed", "code": "TRANSPORT"})
            )
        );
        assert_eq!(
            request_transport_error("http://h:1").message,
            "DeepSeek API request to http://h:1 failed"
        );
        assert_eq!(
            aborted_error().failure.as_deref().cloned(),
            Some(json!({"message": "DeepSeek request aborted by caller", "code": "ABORTED"}))
        );
        assert_eq!(
            idle_timeout_error(300_000).failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek stream idle timeout after 300000ms", "code": "TIMEOUT"})
            )
        );
        assert_eq!(
            no_body_error().failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API returned no response body", "code": "EMPTY_RESPONSE"})
            )
        );
        // aborted iff the signal fired or the code is ABORTED.
        assert_eq!(
            failure_chunk(&aborted_error(), false),
            json!({"type": "finish", "reason": {"kind": "aborted", "failure": {"message": "DeepSeek request aborted by caller", "code": "ABORTED"}}})
        );
        assert_eq!(
            failure_chunk(&transport_error("u"), true)["reason"]["kind"],
            json!("aborted")
        );
        assert_eq!(
            failure_chunk(&transport_error("u"), false)["reason"]["kind"],
            json!("error")
        );
        let http = http_error(429, &headers(&[("retry-after", "2")]), b"");
        assert_eq!(
            serde_json::to_string(&failure_chunk(&http, false)).unwrap(),
            r#"{"type":"finish","reason":{"kind":"error","failure":{"message":"DeepSeek API error (HTTP 429)","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":2000}}}"#
        );
        // Errors without a carried failure normalize to UNKNOWN.
        assert_eq!(
            failure_chunk(&JsError::type_error("boom"), false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "boom", "code": "UNKNOWN"}}})
        );
        assert_eq!(
            normalize_failure(&JsError::error("")),
            json!({"message": "LLM adapter failed", "code": "UNKNOWN"})
        );
    }

    #[test]
    fn stream_error_precedence() {
        let malformed = Translator::new().push_payload("x").unwrap_err();
        let timed_out = stream_error(malformed.clone(), "u", true, Some(5));
        assert_eq!(timed_out.message, "DeepSeek stream idle timeout after 5ms");
        assert_eq!(timed_out.cause.as_deref(), Some(&malformed));
        let aborted = stream_error(malformed.clone(), "u", true, None);
        assert_eq!(aborted.code.as_deref(), Some("ABORTED"));
        assert_eq!(stream_error(malformed.clone(), "u", false, None), malformed);
    }

    #[test]
    fn js_number_text_matches_javascript() {
        assert_eq!(number_text(5.0), "5");
        assert_eq!(number_text(-0.0), "0");
        assert_eq!(number_text(0.1), "0.1");
        assert_eq!(number_text(1e21), "1e+21");
        assert_eq!(number_text(1.5e-7), "1.5e-7");
        assert_eq!(
            number_text(123_456_789_012_345_680_000.0),
            "123456789012345680000"
        );
        assert_eq!(
            js_string(&json!([null, [1, [2]], {}])),
            ",1,2,[object Object]"
        );
    }
}
