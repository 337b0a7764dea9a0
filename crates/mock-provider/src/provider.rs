//! The mock provider's shared state and its request handling, independent of any
//! transport: routing, body validation, script consumption, cache accounting and the
//! request log all happen here, synchronously, under one lock.
//!
//! Both socket arms (tokio, turmoil) call [`MockProvider::handle`] and then execute the
//! returned [`ResponsePlan`]; the harness can call the same method in-process.
//! Because everything that decides the response happens in one synchronous step per
//! request, responses depend only on the order requests arrive in, never on timing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::prompt_cache::{PromptAccounting, PromptCache, canonical_prompt};
use crate::render::{RenderContext, ResponsePlan, render_response};
use crate::script::{FaultKind, Script, ScriptError};
use crate::wire::{ErrorBody, Usage};

/// The request paths that reach the script.
pub const CHAT_COMPLETIONS_PATHS: [&str; 2] = ["/chat/completions", "/v1/chat/completions"];

/// Limits the HTTP server enforces (malformed or oversized input gets a 4xx, never a panic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest accepted request body; larger bodies get 413. Default 16 MiB.
    pub max_body_bytes: usize,
    /// Most request headers accepted; more gets 431 (from hyper). Default 100.
    pub max_headers: usize,
    /// Largest request head (request line + headers) in bytes; more gets 431. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Close a connection whose next request head does not arrive within this many
    /// milliseconds of tokio time. hyper starts this timer whenever the connection waits
    /// for a head, *including while an idle keep-alive connection waits for the next
    /// request*, so it also models a server closing idle connections. Default `None`
    /// (off): a simulated client that backs off for minutes between retries keeps its
    /// connection. Set e.g. `Some(30_000)` to model slow-head / idle-close behavior.
    pub header_read_timeout_ms: Option<u64>,
    /// Most connections served at once; further ones wait in the listen
    /// backlog until one closes. Default 256.
    pub max_connections: usize,
    /// Most requests kept in the request log; the oldest are dropped
    /// first (request numbers go on counting). Default 10 000.
    pub max_logged_requests: usize,
    /// Most body bytes kept in the request log, over all logged requests;
    /// the oldest requests are dropped first. Default 64 MiB.
    pub max_logged_body_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 * 1024 * 1024,
            max_headers: 100,
            max_header_bytes: 64 * 1024,
            header_read_timeout_ms: None,
            max_connections: 256,
            max_logged_requests: 10_000,
            max_logged_body_bytes: 64 * 1024 * 1024,
        }
    }
}

/// A request as the provider sees it, transport-independent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// URI path without the query, e.g. `/chat/completions`.
    pub path: String,
    /// Headers in arrival order as (lowercase name, value) pairs; values that are not
    /// UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Bytes,
}

impl IncomingRequest {
    /// A `POST` of `body` as JSON to `path`, with a JSON content type (for in-process use).
    pub fn post_json(path: &str, body: &Value) -> Self {
        Self {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(body.to_string()),
        }
    }
}

/// What the provider did with a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestOutcome {
    /// Answered from script entry `entry_index`.
    Scripted {
        /// 0-based index of the entry in `Script::responses`.
        entry_index: usize,
        /// Status sent (200 unless the entry is an HTTP error).
        status: u16,
        /// The entry's fault, if any.
        fault: Option<FaultKind>,
        /// True if answered as an SSE stream, false for a single JSON object.
        streamed: bool,
        /// True if this request's prompt was added to the prefix cache.
        prompt_recorded: bool,
    },
    /// Rejected before reaching the script (no entry consumed).
    Rejected {
        /// 400, 404, 405 or 413.
        status: u16,
        /// The error message sent.
        message: String,
    },
    /// A valid request arrived after the last script entry; answered with 500.
    ScriptExhausted {
        /// Entries served before this request.
        served: usize,
    },
}

impl RequestOutcome {
    /// The HTTP status sent.
    pub fn status(&self) -> u16 {
        match self {
            Self::Scripted { status, .. } | Self::Rejected { status, .. } => *status,
            Self::ScriptExhausted { .. } => 500,
        }
    }
}

/// One request received, with what was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedRequest {
    /// 1-based arrival order over all requests (rejected ones included).
    pub request_number: u64,
    /// HTTP method.
    pub method: String,
    /// URI path without the query.
    pub path: String,
    /// Headers in arrival order, (lowercase name, value).
    pub headers: Vec<(String, String)>,
    /// Raw body bytes (empty when the body was rejected as too large).
    pub body: Bytes,
    /// The body parsed as JSON, when it is JSON.
    pub body_json: Option<Value>,
    /// What was answered.
    pub outcome: RequestOutcome,
    /// Prompt accounting of a scripted request (also for HTTP-error entries).
    pub prompt: Option<PromptAccounting>,
    /// Usage computed for a 200 response (sent unless the entry omits it).
    pub usage: Option<Usage>,
}

impl LoggedRequest {
    /// First value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// A scripted DeepSeek-compatible provider. Cheap to clone; clones share the script
/// cursor, the prefix cache and the request log.
///
/// # Which prompts are cached
///
/// A request's prompt is recorded in the prefix cache when its entry is answered with
/// 200 and its generation runs to the end on the server side: every stream entry except
/// `fault = "drop_connection"` (stall, malformed and missing-`[DONE]` streams still
/// generate everything), and every non-streaming answer except `drop_connection`. HTTP
/// error entries and rejected requests record nothing. The decision is taken from the
/// script when the request is handled, so it does not depend on timing or on whether
/// the client read the stream; a prompt is visible to the very next request.
#[derive(Debug, Clone)]
pub struct MockProvider {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    limits: ServerLimits,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    script: Script,
    next_entry: usize,
    cache: PromptCache,
    log: std::collections::VecDeque<LoggedRequest>,
    requests_seen: u64,
    logged_body_bytes: usize,
    max_logged_requests: usize,
    max_logged_body_bytes: usize,
    connection_errors: Vec<String>,
}

struct Handled {
    plan: ResponsePlan,
    outcome: RequestOutcome,
    body_json: Option<Value>,
    prompt: Option<PromptAccounting>,
    usage: Option<Usage>,
}

impl Handled {
    fn rejected(status: u16, message: String, code: &str, body_json: Option<Value>) -> Self {
        let error_type = crate::render::error_type_for_status(status);
        Self {
            plan: ResponsePlan::error(status, &ErrorBody::new(&message, error_type, Some(code))),
            outcome: RequestOutcome::Rejected { status, message },
            body_json,
            prompt: None,
            usage: None,
        }
    }
}

impl MockProvider {
    /// A provider serving `script` with default [`ServerLimits`].
    pub fn new(script: Script) -> Result<Self, ScriptError> {
        Self::with_limits(script, ServerLimits::default())
    }

    /// A provider serving `script` with explicit limits.
    pub fn with_limits(script: Script, limits: ServerLimits) -> Result<Self, ScriptError> {
        script.validate()?;
        Ok(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    script,
                    next_entry: 0,
                    cache: PromptCache::new(),
                    log: std::collections::VecDeque::new(),
                    requests_seen: 0,
                    logged_body_bytes: 0,
                    max_logged_requests: limits.max_logged_requests.max(1),
                    max_logged_body_bytes: limits.max_logged_body_bytes,
                    connection_errors: Vec::new(),
                }),
                limits,
            }),
        })
    }

    /// The limits the server arms enforce.
    pub fn limits(&self) -> &ServerLimits {
        &self.shared.limits
    }

    /// Decide the response to `request`, consume a script entry if it is a valid
    /// chat-completions request, update the prefix cache, and log it. No I/O.
    pub fn handle(&self, request: IncomingRequest) -> ResponsePlan {
        let mut state = self.lock();
        let handled = state.respond(&request, &self.shared.limits);
        state.log_request(request, handled)
    }

    /// Answer a request whose body exceeded [`ServerLimits::max_body_bytes`] with 413
    /// and log it (with an empty body).
    pub fn handle_oversized(
        &self,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
    ) -> ResponsePlan {
        let limit = self.shared.limits.max_body_bytes;
        let handled = Handled::rejected(
            413,
            format!("Request body is larger than the limit of {limit} bytes"),
            "request_too_large",
            None,
        );
        let request = IncomingRequest {
            method,
            path,
            headers,
            body: Bytes::new(),
        };
        self.lock().log_request(request, handled)
    }

    /// Answer a request whose body could not be read to its end (the client
    /// closed or broke the body) with 400 and log it with the bytes that did
    /// arrive, so every answer the provider gives is in the log.
    pub fn handle_unreadable(
        &self,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
    ) -> ResponsePlan {
        let handled = Handled::rejected(
            400,
            "Failed to read the request body".to_string(),
            "invalid_request_body",
            None,
        );
        let request = IncomingRequest {
            method,
            path,
            headers,
            body: Bytes::new(),
        };
        self.lock().log_request(request, handled)
    }

    /// The requests in the log, in arrival order: every request received,
    /// unless [`ServerLimits::max_logged_requests`] or
    /// [`ServerLimits::max_logged_body_bytes`] dropped the oldest.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.lock().log.iter().cloned().collect()
    }

    /// Number of requests received so far (dropped ones included).
    pub fn request_count(&self) -> usize {
        usize::try_from(self.lock().requests_seen).unwrap_or(usize::MAX)
    }

    /// Script entries consumed so far.
    pub fn responses_served(&self) -> usize {
        self.lock().next_entry
    }

    /// Script entries not yet consumed.
    pub fn responses_remaining(&self) -> usize {
        let state = self.lock();
        state.script.responses.len() - state.next_entry
    }

    /// A copy of the prefix cache as it is now.
    pub fn prompt_cache(&self) -> PromptCache {
        self.lock().cache.clone()
    }

    /// Connection-level errors seen by the server arms (HTTP parse errors, aborted
    /// bodies, header timeouts), as hyper's messages, in order.
    pub fn connection_errors(&self) -> Vec<String> {
        self.lock().connection_errors.clone()
    }

    #[cfg(feature = "server")]
    pub(crate) fn record_connection_error(&self, message: String) {
        self.lock().connection_errors.push(message);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is only mutated in short non-panicking sections; a poisoned lock
        // (a panicking test thread) still holds consistent data.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn log_request(&mut self, request: IncomingRequest, handled: Handled) -> ResponsePlan {
        self.requests_seen += 1;
        self.logged_body_bytes += request.body.len();
        self.log.push_back(LoggedRequest {
            request_number: self.requests_seen,
            method: request.method,
            path: request.path,
            headers: request.headers,
            body: request.body,
            body_json: handled.body_json,
            outcome: handled.outcome,
            prompt: handled.prompt,
            usage: handled.usage,
        });
        // Bounded: a long-running server drops its oldest requests first.
        while self.log.len() > self.max_logged_requests
            || (self.logged_body_bytes > self.max_logged_body_bytes && self.log.len() > 1)
        {
            if let Some(dropped) = self.log.pop_front() {
                self.logged_body_bytes -= dropped.body.len();
            }
        }
        handled.plan
    }

    fn respond(&mut self, request: &IncomingRequest, limits: &ServerLimits) -> Handled {
        if !CHAT_COMPLETIONS_PATHS.contains(&request.path.as_str()) {
            return Handled::rejected(
                404,
                format!("No route for {} {}", request.method, request.path),
                "not_found",
                None,
            );
        }
        if request.method != "POST" {
            let mut handled = Handled::rejected(
                405,
                format!(
                    "Method {} is not allowed on {}; use POST",
                    request.method, request.path
                ),
                "method_not_allowed",
                None,
            );
            handled.plan.headers.push(("allow".into(), "POST".into()));
            return handled;
        }
        if request.body.len() > limits.max_body_bytes {
            return Handled::rejected(
                413,
                format!(
                    "Request body is larger than the limit of {} bytes",
                    limits.max_body_bytes
                ),
                "request_too_large",
                None,
            );
        }
        let body_json: Value = match serde_json::from_slice(&request.body) {
            Ok(value) => value,
            Err(error) => {
                return Handled::rejected(
                    400,
                    format!("Failed to parse the request body as JSON: {error}"),
                    "invalid_request_error",
                    None,
                );
            }
        };
        let parsed = match ChatRequest::from_body(&body_json) {
            Ok(parsed) => parsed,
            Err(message) => {
                return Handled::rejected(400, message, "invalid_request_error", Some(body_json));
            }
        };
        let Some(entry) = self.script.responses.get(self.next_entry).cloned() else {
            let served = self.next_entry;
            let message = format!(
                "mock-provider: script exhausted after {served} responses (no entry for this request)"
            );
            return Handled {
                plan: ResponsePlan::error(
                    500,
                    &ErrorBody::new(message, "server_error", Some("script_exhausted")),
                ),
                outcome: RequestOutcome::ScriptExhausted { served },
                body_json: Some(body_json),
                prompt: None,
                usage: None,
            };
        };
        let entry_index = self.next_entry;
        self.next_entry += 1;

        let prompt_text = canonical_prompt(&body_json);
        let prompt = self.cache.account(&parsed.model, &prompt_text);
        let usage = Usage::from_counts(
            &prompt,
            entry.completion_counts(),
            entry.prompt_tokens_details,
            entry.reports_reasoning_tokens(),
        );
        let context = RenderContext {
            response_number: entry_index as u64 + 1,
            created_s: self.script.created_s_for(entry_index),
            model: parsed.model.clone(),
            stream: parsed.stream,
            include_usage: parsed.include_usage,
            usage,
            max_tokens: parsed.max_tokens,
        };
        let plan = render_response(&entry, &context);
        let is_http_error = entry.is_http_error();
        let prompt_recorded = !is_http_error && entry.fault != Some(FaultKind::DropConnection);
        if prompt_recorded {
            self.cache.record(&parsed.model, &prompt_text);
        }
        Handled {
            outcome: RequestOutcome::Scripted {
                entry_index,
                status: plan.status,
                fault: entry.fault,
                streamed: parsed.stream && !is_http_error,
                prompt_recorded,
            },
            plan,
            body_json: Some(body_json),
            prompt: Some(prompt),
            usage: (!is_http_error).then_some(usage),
        }
    }
}

/// The fields of a chat-completions body the mock acts on.
struct ChatRequest {
    model: String,
    stream: bool,
    include_usage: bool,
    max_tokens: Option<u64>,
}

impl ChatRequest {
    fn from_body(body: &Value) -> Result<Self, String> {
        let Some(object) = body.as_object() else {
            return Err("The request body must be a JSON object".into());
        };
        let missing = |field: &str| {
            format!(
                "Failed to deserialize the JSON body into the target type: missing field `{field}`"
            )
        };
        let model = match object.get("model") {
            None => return Err(missing("model")),
            Some(Value::String(model)) => model.clone(),
            Some(_) => return Err("`model` must be a string".into()),
        };
        match object.get("messages") {
            None => return Err(missing("messages")),
            Some(Value::Array(_)) => {}
            Some(_) => return Err("`messages` must be an array".into()),
        }
        if !matches!(
            object.get("tools"),
            None | Some(Value::Null | Value::Array(_))
        ) {
            return Err("`tools` must be an array".into());
        }
        let stream = match object.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(stream)) => *stream,
            Some(_) => return Err("`stream` must be a boolean".into()),
        };
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Self {
            model,
            stream,
            include_usage,
            max_tokens: object.get("max_tokens").and_then(Value::as_u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::prompt_cache::CACHE_UNIT_TOKENS;
    use crate::script::ScriptEntry;
    use crate::sse::data_payloads;

    const SYSTEM: &str = "You are dsh, a coding agent. Answer briefly, use tools for file access, \
        and report what you changed. Never guess file contents.";

    fn chat(messages: Value) -> IncomingRequest {
        IncomingRequest::post_json(
            "/chat/completions",
            &json!({"model": "deepseek-v4-flash", "messages": messages, "stream": true,
                    "stream_options": {"include_usage": true}}),
        )
    }

    fn usage_of(plan: &ResponsePlan) -> Value {
        let payloads = data_payloads(&plan.body_bytes());
        let usage_chunk = &payloads[payloads.len() - 2];
        serde_json::from_str::<Value>(usage_chunk).unwrap()["usage"].clone()
    }

    #[test]
    fn the_request_log_keeps_the_newest_within_its_limits() {
        let limits = ServerLimits {
            max_logged_requests: 2,
            ..ServerLimits::default()
        };
        let provider = MockProvider::with_limits(Script::new(Vec::new()), limits).unwrap();
        let messages = json!([{"role": "user", "content": "hi"}]);
        for _ in 0..5 {
            provider.handle(chat(messages.clone()));
        }
        let numbers: Vec<u64> = provider
            .requests()
            .iter()
            .map(|r| r.request_number)
            .collect();
        assert_eq!(numbers, [4, 5]);
        assert_eq!(provider.request_count(), 5);
        let by_bytes = ServerLimits {
            max_logged_body_bytes: 1,
            ..ServerLimits::default()
        };
        let provider = MockProvider::with_limits(Script::new(Vec::new()), by_bytes).unwrap();
        for _ in 0..3 {
            provider.handle(chat(messages.clone()));
        }
        assert_eq!(provider.requests().len(), 1, "always the newest one");
    }

    #[test]
    fn entries_are_consumed_in_order_then_exhausted() {
        let provider = MockProvider::new(Script::new(vec![
            ScriptEntry::content(["one"]),
            ScriptEntry::content(["two"]),
        ]))
        .unwrap();
        let messages = json!([{"role": "user", "content": "hi"}]);
        for expected in ["one", "two"] {
            let plan = provider.handle(chat(messages.clone()));
            let payloads = data_payloads(&plan.body_bytes());
            assert!(payloads[1].contains(expected), "{payloads:?}");
        }
        let plan = provider.handle(chat(messages));
        assert_eq!(plan.status, 500);
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body["error"]["message"],
            "mock-provider: script exhausted after 2 responses (no entry for this request)"
        );
        let log = provider.requests();
        assert_eq!(log.len(), 3);
        assert_eq!(
            log[2].outcome,
            RequestOutcome::ScriptExhausted { served: 2 }
        );
        assert_eq!(provider.responses_remaining(), 0);
    }

    #[test]
    fn ids_and_created_are_deterministic() {
        let provider =
            MockProvider::new(Script::new(vec![ScriptEntry::content(["x"]); 2])).unwrap();
        let messages = json!([{"role": "user", "content": "hi"}]);
        let first = data_payloads(&provider.handle(chat(messages.clone())).body_bytes());
        let second = data_payloads(&provider.handle(chat(messages)).body_bytes());
        let first: Value = serde_json::from_str(&first[0]).unwrap();
        let second: Value = serde_json::from_str(&second[0]).unwrap();
        assert_eq!(
            (first["id"].as_str(), first["created"].as_u64()),
            (Some("chatcmpl-1"), Some(1_735_689_600))
        );
        assert_eq!(
            (second["id"].as_str(), second["created"].as_u64()),
            (Some("chatcmpl-2"), Some(1_735_689_601))
        );
    }

    #[test]
    fn cache_hits_grow_with_appended_history() {
        let provider = MockProvider::new(Script::new(vec![
            ScriptEntry::content(["Hel", "lo"]),
            ScriptEntry::content(["again"]),
        ]))
        .unwrap();
        let first_messages = json!([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "read src/main.rs please"}
        ]);
        let first = usage_of(&provider.handle(chat(first_messages.clone())));
        assert_eq!(first["prompt_cache_hit_tokens"], 0);
        assert_eq!(first["prompt_tokens_details"]["cached_tokens"], 0);
        assert_eq!(first["completion_tokens"], 2);

        let mut second_messages = first_messages.as_array().unwrap().clone();
        second_messages.push(json!({"role": "assistant", "content": "Hello"}));
        second_messages.push(json!({"role": "user", "content": "thanks"}));
        let second = usage_of(&provider.handle(chat(Value::Array(second_messages))));
        let shared =
            crate::tokenizer::count_tokens(&canonical_prompt(&json!({"messages": first_messages})));
        let expected_hit = shared / CACHE_UNIT_TOKENS * CACHE_UNIT_TOKENS;
        assert!(expected_hit > 0);
        assert_eq!(second["prompt_cache_hit_tokens"], expected_hit);
        assert_eq!(
            second["prompt_tokens_details"]["cached_tokens"],
            expected_hit
        );
        assert_eq!(
            second["prompt_cache_miss_tokens"].as_u64().unwrap(),
            second["prompt_tokens"].as_u64().unwrap() - expected_hit
        );
        let log = provider.requests();
        assert_eq!(log[1].prompt.unwrap().shared_prefix_tokens, shared);
        assert_eq!(log[1].usage.unwrap().prompt_cache_hit_tokens, expected_hit);
    }

    #[test]
    fn http_errors_and_dropped_streams_do_not_feed_the_cache() {
        let provider = MockProvider::new(Script::new(vec![
            ScriptEntry::fault(FaultKind::ServerError),
            ScriptEntry {
                fault: Some(FaultKind::DropConnection),
                after_events: Some(1),
                ..ScriptEntry::content(["x"])
            },
            ScriptEntry {
                fault: Some(FaultKind::MissingDone),
                ..ScriptEntry::content(["x"])
            },
            ScriptEntry::content(["x"]),
        ]))
        .unwrap();
        let messages =
            json!([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}]);
        for _ in 0..4 {
            provider.handle(chat(messages.clone()));
        }
        let log = provider.requests();
        let hits: Vec<u64> = log
            .iter()
            .map(|request| request.prompt.unwrap().prompt_cache_hit_tokens)
            .collect();
        assert_eq!(hits[0..3], [0, 0, 0]);
        assert!(hits[3] > 0);
        let recorded: Vec<bool> = log
            .iter()
            .map(|request| {
                matches!(
                    request.outcome,
                    RequestOutcome::Scripted {
                        prompt_recorded: true,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(recorded, [false, false, true, true]);
        assert_eq!(log[0].usage, None);
        assert_eq!(
            provider
                .prompt_cache()
                .recorded_prompt_count("deepseek-v4-flash"),
            2
        );
    }

    #[test]
    fn prompt_tokens_details_can_be_left_out() {
        let provider = MockProvider::new(Script::new(vec![ScriptEntry {
            prompt_tokens_details: false,
            ..ScriptEntry::content(["x"])
        }]))
        .unwrap();
        let usage = usage_of(&provider.handle(chat(json!([{"role": "user", "content": "q"}]))));
        assert!(usage.get("prompt_tokens_details").is_none(), "{usage}");
        assert!(usage.get("completion_tokens_details").is_none(), "{usage}");
        assert_eq!(usage["prompt_cache_hit_tokens"], 0);
    }

    #[test]
    fn invalid_requests_are_rejected_without_consuming_the_script() {
        let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"])])).unwrap();
        let post = |path: &str, body: &str| IncomingRequest {
            method: "POST".into(),
            path: path.into(),
            headers: Vec::new(),
            body: Bytes::from(body.to_owned()),
        };
        let cases = [
            (
                post("/chat/completions", "{not json"),
                400,
                "Failed to parse the request body as JSON",
            ),
            (
                post("/chat/completions", "[1]"),
                400,
                "must be a JSON object",
            ),
            (
                post("/chat/completions", r#"{"messages": []}"#),
                400,
                "missing field `model`",
            ),
            (
                post("/chat/completions", r#"{"model": "m"}"#),
                400,
                "missing field `messages`",
            ),
            (
                post("/chat/completions", r#"{"model": 1, "messages": []}"#),
                400,
                "`model` must be a string",
            ),
            (
                post(
                    "/chat/completions",
                    r#"{"model": "m", "messages": [], "stream": "yes"}"#,
                ),
                400,
                "`stream` must be a boolean",
            ),
            (
                post(
                    "/chat/completions",
                    r#"{"model": "m", "messages": [], "tools": {}}"#,
                ),
                400,
                "`tools` must be an array",
            ),
            (
                post("/completions", "{}"),
                404,
                "No route for POST /completions",
            ),
            (
                IncomingRequest {
                    method: "GET".into(),
                    ..post("/v1/chat/completions", "")
                },
                405,
                "Method GET is not allowed",
            ),
        ];
        for (request, status, message) in cases {
            let plan = provider.handle(request);
            assert_eq!(plan.status, status, "{message}");
            let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
            let sent = body["error"]["message"].as_str().unwrap();
            assert!(sent.contains(message), "{sent}");
            assert!(body["error"]["type"].is_string());
        }
        assert_eq!(provider.responses_served(), 0);
        let log = provider.requests();
        assert_eq!(log.len(), 9);
        assert!(
            log.iter()
                .all(|request| matches!(request.outcome, RequestOutcome::Rejected { .. }))
        );
        assert_eq!(
            log.iter()
                .map(|request| request.request_number)
                .collect::<Vec<_>>(),
            (1..=9).collect::<Vec<_>>()
        );
        let plan = provider.handle(chat(json!([])));
        assert_eq!(plan.status, 200);
    }

    #[test]
    fn oversized_bodies_get_413() {
        let limits = ServerLimits {
            max_body_bytes: 10,
            ..ServerLimits::default()
        };
        let provider =
            MockProvider::with_limits(Script::new(vec![ScriptEntry::content(["x"])]), limits)
                .unwrap();
        let plan = provider.handle(chat(json!([{"role": "user", "content": "far too long"}])));
        assert_eq!(plan.status, 413);
        let plan = provider.handle_oversized("POST".into(), "/chat/completions".into(), Vec::new());
        assert_eq!(plan.status, 413);
        assert_eq!(provider.responses_served(), 0);
        assert_eq!(provider.requests()[1].outcome.status(), 413);
    }

    #[test]
    fn invalid_scripts_are_refused_up_front() {
        let error = MockProvider::new(Script::new(vec![ScriptEntry::fault(FaultKind::HttpError)]))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "script entry 0: fault `http_error` needs `status` (400-599)"
        );
    }
}
