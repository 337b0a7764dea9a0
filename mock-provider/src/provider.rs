//! The mock provider's shared state and its request handling, independent of any
//! transport: routing, body validation, script consumption, cache accounting and the
//! request log all happen here, synchronously, under one lock.
//!
//! Both socket arms (tokio, turmoil) call [`MockProvider::handle`] and then execute the
//! returned [`ResponsePlan`]; the harness can call the same method in-process.
//! Because everything that decides the response happens in one synchronous step per
//! request, responses depend only on the order requests arrive in, never on timing.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::{CatalogModel, DEFAULT_CONTEXT_WINDOW_TOKENS, effective_catalog};
use crate::prompt_cache::{
    PromptAccounting, PromptCache, canonical_fim_prompt, canonical_prompt, token_ids,
};
use crate::render::{RenderContext, ResponsePlan, render_response};
use crate::request_rules::{self, RuleInput, RuleViolation, ServedCall, ServedCalls};
use crate::script::{Endpoint, FaultKind, MatchInput, Script, ScriptError};
use crate::wire::{
    BalanceInfoWire, BalanceWire, ErrorBody, ModelListWire, ModelWire, Usage, to_json,
};

/// What a request path asks for. Every path may carry one `/v1` or `/beta`
/// prefix (the bases OpenAI-style clients and LiteLLM use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /chat/completions`; `beta` when under `/beta` (prefix completion).
    Chat {
        /// Arrived under `/beta`.
        beta: bool,
    },
    /// `POST /completions`: fill-in-the-middle text completion.
    Fim,
    /// `GET /models`.
    Models,
    /// `GET /models/{id}`.
    Model(String),
    /// `GET /user/balance`.
    Balance,
}

impl Route {
    /// The route of `path`, or `None` for a path the API does not have.
    pub fn of(path: &str) -> Option<Self> {
        let (beta, rest) = if let Some(rest) = path.strip_prefix("/beta") {
            (true, rest)
        } else {
            (false, path.strip_prefix("/v1").unwrap_or(path))
        };
        match rest {
            "/chat/completions" => Some(Self::Chat { beta }),
            "/completions" => Some(Self::Fim),
            "/models" => Some(Self::Models),
            "/user/balance" => Some(Self::Balance),
            _ => rest
                .strip_prefix("/models/")
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(|id| Self::Model(id.to_owned())),
        }
    }

    fn method(&self) -> &'static str {
        match self {
            Self::Chat { .. } | Self::Fim => "POST",
            Self::Models | Self::Model(_) | Self::Balance => "GET",
        }
    }
}

/// A copy of a provider's state ([`MockProvider::checkpoint`]).
#[derive(Debug)]
pub struct Checkpoint(Box<State>);

/// Called with every request as it is logged (before its body is sent).
#[derive(Clone)]
pub struct RequestObserver(Arc<dyn Fn(&LoggedRequest) + Send + Sync>);

impl RequestObserver {
    /// Wrap a callback.
    pub fn new(callback: impl Fn(&LoggedRequest) + Send + Sync + 'static) -> Self {
        Self(Arc::new(callback))
    }
}

impl fmt::Debug for RequestObserver {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("RequestObserver")
    }
}

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
    /// A valid request no script entry answers (all used, or none matches);
    /// answered with a non-retryable 400, code `script_exhausted`.
    ScriptExhausted {
        /// Scripted responses served before this request.
        served: usize,
    },
    /// Answered from the catalog or the balance (`/models`, `/user/balance`).
    Info {
        /// 200, or 404 for a model the catalog does not have.
        status: u16,
    },
}

/// Status of the answer to an exhausted script.
pub const SCRIPT_EXHAUSTED_STATUS: u16 = 400;

impl RequestOutcome {
    /// The HTTP status sent.
    pub fn status(&self) -> u16 {
        match self {
            Self::Scripted { status, .. }
            | Self::Rejected { status, .. }
            | Self::Info { status } => *status,
            Self::ScriptExhausted { .. } => SCRIPT_EXHAUSTED_STATUS,
        }
    }
}

/// The request log in arrival order, as [`MockProvider::with_requests`] lends it.
pub type LoggedRequests<'a> = std::collections::vec_deque::Iter<'a, LoggedRequest>;

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
    /// One line for a person watching the server: number, method, path,
    /// status, and the script entry and cache hit of a scripted answer, e.g.
    /// `#3 POST /chat/completions 200 entry 2 (stream) cache 128/301`.
    pub fn summary_line(&self) -> String {
        let head = format!(
            "#{} {} {} {}",
            self.request_number,
            self.method,
            self.path,
            self.outcome.status()
        );
        let cache = self.prompt.map_or(String::new(), |prompt| {
            format!(
                " cache {}/{}",
                prompt.prompt_cache_hit_tokens, prompt.prompt_tokens
            )
        });
        match &self.outcome {
            RequestOutcome::Scripted {
                entry_index,
                fault,
                streamed,
                ..
            } => {
                let kind = match (*streamed, self.outcome.status()) {
                    (true, _) => "stream",
                    (false, 200) => "json",
                    (false, _) => "error",
                };
                let fault = fault.map_or(String::new(), |fault| {
                    format!(" fault {}", crate::script::fault_name(fault))
                });
                format!("{head} entry {entry_index} ({kind}){fault}{cache}")
            }
            RequestOutcome::Rejected { message, .. } => format!("{head} rejected: {message}"),
            RequestOutcome::ScriptExhausted { served } => {
                format!("{head} script exhausted after {served} responses")
            }
            RequestOutcome::Info { .. } => head,
        }
    }

    /// The request and its answer as one JSON object (a line of `dshc serve --log`).
    pub fn to_json(&self) -> Value {
        let headers: Vec<Value> = self
            .headers
            .iter()
            .map(|(name, value)| json!([name, value]))
            .collect();
        json!({
            "request_number": self.request_number,
            "method": self.method,
            "path": self.path,
            "headers": headers,
            "body": self.body_json.clone().unwrap_or_else(|| {
                Value::String(String::from_utf8_lossy(&self.body).into_owned())
            }),
            "outcome": self.outcome,
            "status": self.outcome.status(),
            "prompt": self.prompt.map(|prompt| json!({
                "prompt_tokens": prompt.prompt_tokens,
                "shared_prefix_tokens": prompt.shared_prefix_tokens,
                "prompt_cache_hit_tokens": prompt.prompt_cache_hit_tokens,
                "prompt_cache_miss_tokens": prompt.prompt_cache_miss_tokens,
            })),
            "usage": self.usage,
        })
    }

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

#[derive(Clone, Debug)]
struct State {
    script: Script,
    /// How the script is named in errors (a file path, a scenario).
    script_name: String,
    catalog: Vec<CatalogModel>,
    /// Entries used so far (a reusable entry is never marked).
    used: Vec<bool>,
    /// Scripted responses served so far.
    served: usize,
    served_calls: ServedCalls,
    observer: Option<RequestObserver>,
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
        Self::builder(script).limits(limits).build()
    }

    /// A provider with more options: limits, the script's name, an observer.
    pub fn builder(script: Script) -> MockProviderBuilder {
        MockProviderBuilder {
            script,
            limits: ServerLimits::default(),
            script_name: "the script".to_owned(),
            observer: None,
        }
    }

    fn build(builder: MockProviderBuilder) -> Result<Self, ScriptError> {
        let MockProviderBuilder {
            script,
            limits,
            script_name,
            observer,
        } = builder;
        script.validate()?;
        Ok(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    catalog: effective_catalog(&script.models),
                    used: vec![false; script.responses.len()],
                    script,
                    script_name,
                    served: 0,
                    served_calls: ServedCalls::new(),
                    observer,
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
        self.with_requests(|log| log.cloned().collect())
    }

    /// Look at the requests in the log (as [`MockProvider::requests`]) without
    /// copying them. `look` runs with the provider locked, so it must not
    /// call the provider.
    pub fn with_requests<R>(&self, look: impl FnOnce(LoggedRequests<'_>) -> R) -> R {
        look(self.lock().log.iter())
    }

    /// Number of requests received so far (dropped ones included).
    pub fn request_count(&self) -> usize {
        usize::try_from(self.lock().requests_seen).unwrap_or(usize::MAX)
    }

    /// Scripted responses served so far.
    pub fn responses_served(&self) -> usize {
        self.lock().served
    }

    /// Script entries not yet used (reusable entries are never used up).
    pub fn responses_remaining(&self) -> usize {
        let state = self.lock();
        state
            .script
            .responses
            .iter()
            .zip(&state.used)
            .filter(|(entry, used)| !entry.reuse && !**used)
            .count()
    }

    /// Everything the provider has seen and served so far, to come back to
    /// with [`MockProvider::restore`] (a request the harness learns was
    /// never delivered, say).
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint(Box::new(self.lock().clone()))
    }

    /// Go back to `checkpoint`: what was seen and served since is forgotten.
    pub fn restore(&self, checkpoint: Checkpoint) {
        *self.lock() = *checkpoint.0;
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

/// Options of a [`MockProvider`] (see [`MockProvider::builder`]).
#[derive(Debug)]
pub struct MockProviderBuilder {
    script: Script,
    limits: ServerLimits,
    script_name: String,
    observer: Option<RequestObserver>,
}

impl MockProviderBuilder {
    /// The limits the server arms enforce.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How errors name the script (default "the script"), e.g. its file.
    pub fn script_name(mut self, name: impl Into<String>) -> Self {
        self.script_name = name.into();
        self
    }

    /// Call `observer` with every request as it is logged.
    pub fn observer(mut self, observer: RequestObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Check the script and start serving it.
    pub fn build(self) -> Result<MockProvider, ScriptError> {
        MockProvider::build(self)
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
        if let (Some(observer), Some(logged)) = (&self.observer, self.log.back()) {
            (observer.0)(logged);
        }
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
        let Some(route) = Route::of(&request.path) else {
            return Handled::rejected(
                404,
                format!("No route for {} {}", request.method, request.path),
                "not_found",
                None,
            );
        };
        let method = route.method();
        if request.method != method {
            let mut handled = Handled::rejected(
                405,
                format!(
                    "Method {} is not allowed on {}; use {method}",
                    request.method, request.path
                ),
                "method_not_allowed",
                None,
            );
            handled.plan.headers.push(("allow".into(), method.into()));
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
        let beta = match route {
            Route::Models => return self.info(200, self.model_list()),
            Route::Model(id) => {
                return match self.catalog.iter().find(|model| model.id == id) {
                    Some(model) => self.info(200, to_json(&model_wire(model))),
                    None => Handled::rejected(
                        404,
                        format!("The model `{id}` does not exist"),
                        "model_not_found",
                        None,
                    ),
                };
            }
            Route::Balance => return self.info(200, self.balance()),
            Route::Chat { beta } => beta,
            Route::Fim => true,
        };
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
        let endpoint = if route == Route::Fim {
            Endpoint::Fim
        } else {
            Endpoint::Chat
        };
        let parsed = match ParsedRequest::from_body(&body_json, endpoint) {
            Ok(parsed) => parsed,
            Err(message) => {
                return Handled::rejected(400, message, "invalid_request_error", Some(body_json));
            }
        };
        let prompt_text = match endpoint {
            Endpoint::Chat => canonical_prompt(&body_json),
            Endpoint::Fim => canonical_fim_prompt(&body_json),
        };
        let prompt_ids = token_ids(&prompt_text);
        let prompt = self.cache.account_ids(&parsed.model, &prompt_ids);
        let known_window = self
            .catalog
            .iter()
            .find(|model| model.id == parsed.model)
            .map(|model| model.context_window);
        let rule_input = RuleInput {
            body: &body_json,
            beta,
            prompt_tokens: prompt.prompt_tokens,
            completion_tokens_requested: parsed.max_tokens,
            context_window: known_window,
            default_context_window: DEFAULT_CONTEXT_WINDOW_TOKENS,
        };
        let rules = &self.script.validation;
        let checked = match endpoint {
            Endpoint::Chat => request_rules::check_chat(&rule_input, &self.served_calls, rules),
            Endpoint::Fim => request_rules::check_fim(&rule_input, rules),
        };
        if let Err(RuleViolation { param, message, .. }) = checked {
            let error = ErrorBody::new(
                &message,
                "invalid_request_error",
                Some("invalid_request_error"),
            )
            .with_param(param);
            return Handled {
                plan: ResponsePlan::error(400, &error),
                outcome: RequestOutcome::Rejected {
                    status: 400,
                    message,
                },
                body_json: Some(body_json),
                prompt: None,
                usage: None,
            };
        }
        let match_input = MatchInput {
            model: &parsed.model,
            endpoint,
            stream: parsed.stream,
            messages: &parsed.messages,
        };
        let chosen = self
            .script
            .responses
            .iter()
            .zip(&self.used)
            .position(|(entry, used)| {
                (entry.reuse || !used)
                    && entry
                        .when
                        .as_ref()
                        .is_none_or(|when| when.matches(&match_input))
            });
        let Some(entry_index) = chosen else {
            return self.exhausted(request, body_json, &match_input);
        };
        let entry = self.script.responses[entry_index].clone();
        if !entry.reuse {
            self.used[entry_index] = true;
        }
        self.served += 1;
        let response_number = self.served as u64;

        let usage = Usage::from_counts(
            &prompt,
            entry.completion_counts(),
            entry.prompt_tokens_details,
            entry.reports_reasoning_tokens(),
        );
        let context = RenderContext {
            response_number,
            created_s: self.script.created_s_for(entry_index, response_number),
            model: parsed.model.clone(),
            stream: parsed.stream,
            include_usage: parsed.include_usage,
            usage,
            max_tokens: parsed.max_tokens,
            context_window: known_window.unwrap_or(DEFAULT_CONTEXT_WINDOW_TOKENS),
            dialect: self.script.dialect,
            system_fingerprint: self.script.system_fingerprint.clone(),
            endpoint,
        };
        let plan = render_response(&entry, &context);
        let is_http_error = entry.is_http_error();
        let prompt_recorded = !is_http_error && entry.fault != Some(FaultKind::DropConnection);
        if prompt_recorded {
            self.cache.record_ids(&parsed.model, prompt_ids);
        }
        if !is_http_error {
            for (index, call) in entry.tool_calls.iter().enumerate() {
                let id = crate::render::tool_call_id(call.id.as_deref(), response_number, index);
                self.served_calls.insert(
                    id,
                    ServedCall {
                        response_number,
                        with_reasoning: !entry.reasoning.is_empty(),
                    },
                );
            }
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

    /// The answer when no entry is left for a request: non-retryable, naming
    /// the script and the request.
    fn exhausted(
        &self,
        request: &IncomingRequest,
        body_json: Value,
        input: &MatchInput<'_>,
    ) -> Handled {
        let served = self.served;
        let number = self.requests_seen + 1;
        let unused = self
            .script
            .responses
            .iter()
            .zip(&self.used)
            .filter(|(entry, used)| entry.reuse || !**used)
            .count();
        let why = if unused == 0 {
            format!(
                "all {} entries are used ({served} responses served)",
                self.script.responses.len()
            )
        } else {
            let last = input
                .messages
                .last()
                .map(request_rules::message_text)
                .unwrap_or_default();
            let shown: String = last.chars().take(60).collect();
            format!(
                "none of the {unused} unused entries matches it (model {:?}, last message {shown:?})",
                input.model
            )
        };
        let message = format!(
            "dshc mock provider: {} has no answer for request {number} ({} {}): {why}",
            self.script_name, request.method, request.path
        );
        let mut plan = ResponsePlan::error(
            SCRIPT_EXHAUSTED_STATUS,
            &ErrorBody::new(message, "invalid_request_error", Some("script_exhausted")),
        );
        // The openai SDKs (and the clients built on them) honour this header.
        plan.headers
            .push(("x-should-retry".to_owned(), "false".to_owned()));
        Handled {
            plan,
            outcome: RequestOutcome::ScriptExhausted { served },
            body_json: Some(body_json),
            prompt: None,
            usage: None,
        }
    }

    fn info(&self, status: u16, body: String) -> Handled {
        Handled {
            plan: ResponsePlan {
                head_delay_ms: 0,
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body: vec![crate::render::BodyAction::Send(Bytes::from(body))],
            },
            outcome: RequestOutcome::Info { status },
            body_json: None,
            prompt: None,
            usage: None,
        }
    }

    fn model_list(&self) -> String {
        to_json(&ModelListWire {
            object: "list",
            data: self.catalog.iter().map(model_wire).collect(),
        })
    }

    fn balance(&self) -> String {
        let balance = self.script.balance.clone().unwrap_or_default();
        let total = crate::script::add_decimal_strings(
            &balance.granted_balance,
            &balance.topped_up_balance,
        )
        .unwrap_or_default();
        to_json(&BalanceWire {
            is_available: balance.is_available,
            balance_infos: vec![BalanceInfoWire {
                currency: &balance.currency,
                total_balance: total,
                granted_balance: &balance.granted_balance,
                topped_up_balance: &balance.topped_up_balance,
            }],
        })
    }
}

fn model_wire(model: &CatalogModel) -> ModelWire<'_> {
    ModelWire {
        id: &model.id,
        object: "model",
        owned_by: &model.owned_by,
    }
}

/// The fields of a chat or FIM body the mock acts on.
struct ParsedRequest {
    model: String,
    stream: bool,
    include_usage: bool,
    /// `max_tokens`, else `max_completion_tokens`.
    max_tokens: Option<u64>,
    /// The messages (for FIM: the prompt as one message of role `prompt`).
    messages: Vec<Value>,
}

impl ParsedRequest {
    fn from_body(body: &Value, endpoint: Endpoint) -> Result<Self, String> {
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
        let messages = match endpoint {
            Endpoint::Chat => match object.get("messages") {
                None => return Err(missing("messages")),
                Some(Value::Array(messages)) => messages.clone(),
                Some(_) => return Err("`messages` must be an array".into()),
            },
            Endpoint::Fim => {
                let prompt = match object.get("prompt") {
                    None => return Err(missing("prompt")),
                    Some(Value::String(prompt)) => prompt.clone(),
                    Some(_) => return Err("`prompt` must be a string".into()),
                };
                if !matches!(
                    object.get("suffix"),
                    None | Some(Value::Null | Value::String(_))
                ) {
                    return Err("`suffix` must be a string".into());
                }
                vec![json!({"role": "prompt", "content": prompt})]
            }
        };
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
        let max_tokens = object
            .get("max_tokens")
            .or_else(|| object.get("max_completion_tokens"))
            .and_then(Value::as_u64);
        Ok(Self {
            model,
            stream,
            include_usage,
            max_tokens,
            messages,
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
        // Not retryable: a client must not burn time retrying an empty script.
        assert_eq!(plan.status, 400);
        assert_eq!(plan.header("x-should-retry"), Some("false"));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body["error"]["message"],
            "dshc mock provider: the script has no answer for request 3 \
             (POST /chat/completions): all 2 entries are used (2 responses served)"
        );
        assert_eq!(body["error"]["code"], "script_exhausted");
        let log = provider.requests();
        assert_eq!(log.len(), 3);
        assert_eq!(
            log[2].outcome,
            RequestOutcome::ScriptExhausted { served: 2 }
        );
        assert_eq!(provider.responses_remaining(), 0);
    }

    fn text_of(plan: &ResponsePlan) -> String {
        data_payloads(&plan.body_bytes())
            .iter()
            .filter(|payload| *payload != "[DONE]")
            .filter_map(|payload| {
                let chunk: Value = serde_json::from_str(payload).unwrap();
                chunk["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }

    #[test]
    fn predicates_pick_entries_so_retries_do_not_shift_the_script() {
        let script: Script = serde_json::from_value(json!({"responses": [
            {"when": {"last_message_contains": "weather"}, "content": "Sunny.", "reuse": true},
            {"when": {"last_role": "tool"}, "content": "Read it."},
            {"content": "Anything else."}
        ]}))
        .unwrap();
        let provider = MockProvider::new(script).unwrap();
        let weather = json!([{"role": "user", "content": "the weather?"}]);
        // A retry of the same request gets the same reusable answer.
        assert_eq!(text_of(&provider.handle(chat(weather.clone()))), "Sunny.");
        assert_eq!(text_of(&provider.handle(chat(weather))), "Sunny.");
        let other = json!([{"role": "user", "content": "hello"}]);
        assert_eq!(
            text_of(&provider.handle(chat(other.clone()))),
            "Anything else."
        );
        let tool_turn = json!([
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "data"}
        ]);
        assert_eq!(text_of(&provider.handle(chat(tool_turn))), "Read it.");
        let plan = provider.handle(chat(other));
        assert_eq!(plan.status, 400);
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("none of the 1 unused entries matches it")
                && message.contains("last message \"hello\""),
            "{message}"
        );
        let entries: Vec<Option<usize>> = provider
            .requests()
            .iter()
            .map(|request| match request.outcome {
                RequestOutcome::Scripted { entry_index, .. } => Some(entry_index),
                _ => None,
            })
            .collect();
        assert_eq!(entries, [Some(0), Some(0), Some(2), Some(1), None]);
        // Ids count scripted responses, whichever entry answered.
        assert_eq!(provider.responses_served(), 4);
        assert_eq!(provider.responses_remaining(), 0);
    }

    fn get(path: &str) -> IncomingRequest {
        IncomingRequest {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    fn json_of(plan: &ResponsePlan) -> Value {
        serde_json::from_slice(&plan.body_bytes()).unwrap()
    }

    #[test]
    fn models_balance_beta_and_fim_are_served() {
        let script: Script = serde_json::from_value(json!({
            "responses": [
                {"when": {"endpoint": "fim"}, "content": ["fn ", "main() {}"]},
                {"content": "print('hi')"}
            ],
            "models": [{"id": "port-model", "context_window": 8192}],
            "balance": {"granted_balance": "1.50", "topped_up_balance": "2"}
        }))
        .unwrap();
        let provider = MockProvider::new(script).unwrap();
        let models = json_of(&provider.handle(get("/models")));
        assert_eq!(models["object"], "list");
        let ids: Vec<&str> = models["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|model| model["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "deepseek-v4-flash",
                "deepseek-v4-pro",
                "deepseek-chat",
                "deepseek-reasoner",
                "port-model"
            ]
        );
        assert_eq!(
            json_of(&provider.handle(get("/v1/models/port-model"))),
            json!({"id": "port-model", "object": "model", "owned_by": "deepseek"})
        );
        assert_eq!(provider.handle(get("/models/nope")).status, 404);
        assert_eq!(
            json_of(&provider.handle(get("/user/balance"))),
            json!({"is_available": true, "balance_infos": [{"currency": "CNY",
                "total_balance": "3.50", "granted_balance": "1.50", "topped_up_balance": "2"}]})
        );
        let fim = provider.handle(IncomingRequest::post_json(
            "/beta/completions",
            &json!({"model": "deepseek-v4-flash", "prompt": "def f():", "suffix": "\n", "stream": false}),
        ));
        let fim = json_of(&fim);
        assert_eq!(fim["object"], "text_completion");
        assert_eq!(fim["choices"][0]["text"], "fn main() {}");
        let prefix = provider.handle(IncomingRequest::post_json(
            "/beta/chat/completions",
            &json!({"model": "deepseek-v4-flash", "messages": [
                {"role": "user", "content": "code"},
                {"role": "assistant", "content": "```python\n", "prefix": true}
            ]}),
        ));
        assert_eq!(prefix.status, 200);
        assert_eq!(
            json_of(&prefix)["choices"][0]["message"]["content"],
            "print('hi')"
        );
        assert_eq!(provider.handle(get("/chat/completions")).status, 405);
        assert_eq!(provider.responses_served(), 2);
    }

    #[test]
    fn rule_violations_are_documented_400s_that_use_no_entry() {
        let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"])])).unwrap();
        let plan = provider.handle(chat(json!([
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "user", "content": "and?"}
        ])));
        assert_eq!(plan.status, 400);
        let error = &json_of(&plan)["error"];
        assert_eq!(error["type"], "invalid_request_error");
        assert_eq!(error["code"], "invalid_request_error");
        assert_eq!(error["param"], "messages[0].tool_calls");
        assert_eq!(provider.responses_served(), 0);
        let relaxed = Script {
            validation: crate::script::Validation::off(),
            ..Script::new(vec![ScriptEntry::content(["x"])])
        };
        let provider = MockProvider::new(relaxed).unwrap();
        let plan = provider.handle(chat(json!([
            {"role": "tool", "tool_call_id": "c", "content": "stray"}
        ])));
        assert_eq!(plan.status, 200);
    }

    #[test]
    fn a_thinking_tool_call_replayed_without_its_reasoning_is_refused() {
        let provider = MockProvider::new(Script::new(vec![
            ScriptEntry {
                reasoning: ["Need the file."].into_iter().collect(),
                tool_calls: vec![crate::script::ScriptToolCall {
                    id: Some("call_r".into()),
                    name: "read".into(),
                    arguments: ["{}"].into_iter().collect(),
                }],
                finish_reason: Some("tool_calls".into()),
                ..ScriptEntry::stream()
            },
            ScriptEntry::content(["done"]),
        ]))
        .unwrap();
        let question = json!({"role": "user", "content": "read it"});
        provider.handle(chat(json!([question.clone()])));
        let call = json!([{"id": "call_r", "type": "function",
                           "function": {"name": "read", "arguments": "{}"}}]);
        let result = json!({"role": "tool", "tool_call_id": "call_r", "content": "data"});
        let without = provider.handle(chat(json!([
            question.clone(),
            {"role": "assistant", "content": "", "tool_calls": call.clone()},
            result.clone()
        ])));
        assert_eq!(without.status, 400);
        assert_eq!(
            json_of(&without)["error"]["param"],
            "messages[1].reasoning_content"
        );
        let with = provider.handle(chat(json!([
            question,
            {"role": "assistant", "content": "", "reasoning_content": "Need the file.",
             "tool_calls": call},
            result
        ])));
        assert_eq!(with.status, 200);
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
                post("/completion", "{}"),
                404,
                "No route for POST /completion",
            ),
            (
                post("/completions", r#"{"model": "m"}"#),
                400,
                "missing field `prompt`",
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
        assert_eq!(log.len(), 10);
        assert!(
            log.iter()
                .all(|request| matches!(request.outcome, RequestOutcome::Rejected { .. }))
        );
        assert_eq!(
            log.iter()
                .map(|request| request.request_number)
                .collect::<Vec<_>>(),
            (1..=10).collect::<Vec<_>>()
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
