//! The request log: what each request got ([`RequestOutcome`]), the logged request
//! with its one-line and JSON forms, the observer called as a request is logged,
//! and the bounds that drop the oldest requests first.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

#[cfg(doc)]
use super::MockProvider;
use super::{Handled, IncomingRequest, State};
use crate::prompt_cache::PromptAccounting;
use crate::render::ResponsePlan;
use crate::script::FaultKind;
use crate::wire::Usage;

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
                let fault = fault.map_or(String::new(), |fault| format!(" fault {}", fault.name()));
                format!("{head} entry {entry_index} ({kind}){fault}{cache}")
            }
            RequestOutcome::Rejected { message, .. } => format!("{head} rejected: {message}"),
            RequestOutcome::ScriptExhausted { served } => {
                format!("{head} script exhausted after {served} responses")
            }
            RequestOutcome::Info { .. } => head,
        }
    }

    /// The request and its answer as one JSON object (a line of `dshc serve
    /// --log`), with credentials redacted ([`redacted_header_value`]): the
    /// log goes to disk, and a client may have been pointed at the mock with
    /// a real key.
    pub fn to_json(&self) -> Value {
        let headers: Vec<Value> = self
            .headers
            .iter()
            .map(|(name, value)| json!([name, redacted_header_value(name, value)]))
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

/// Headers that carry credentials: their values never reach the log file.
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
];

/// A header's value as the log file shows it: a credential header keeps
/// only its scheme (`Bearer [redacted]`), so that a reader still sees how
/// the client authenticated; any other header is shown as sent.
pub fn redacted_header_value<'a>(name: &str, value: &'a str) -> std::borrow::Cow<'a, str> {
    if !CREDENTIAL_HEADERS
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret))
    {
        return value.into();
    }
    match value.split_once(' ') {
        Some((scheme, _)) if !scheme.is_empty() => format!("{scheme} [redacted]").into(),
        _ => "[redacted]".into(),
    }
}

impl State {
    /// Log `request` with what it got, tell the observer, drop the oldest
    /// requests past the bounds, and give back the plan to send.
    pub(super) fn log_request(
        &mut self,
        request: IncomingRequest,
        mut handled: Handled,
    ) -> ResponsePlan {
        if super::route::is_anthropic(&request.path) {
            super::messages::reshape_error(&mut handled.plan);
        }
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
}
