//! The mock provider's shared state and its request handling, independent of any
//! transport: routing, body validation, script consumption, cache accounting and the
//! request log all happen here, synchronously, under one lock.
//!
//! Both socket arms (tokio, turmoil) call [`MockProvider::handle`] and then execute the
//! returned [`ResponsePlan`]; the harness can call the same method in-process.
//! Because everything that decides the response happens in one synchronous step per
//! request, responses depend only on the order requests arrive in, never on timing.
//!
//! One request goes through the submodules in this order: `route` (path, method,
//! size), then either `info` (`/models`, `/user/balance`) or `completion` (chat
//! and FIM: the body's fields from `request`, accounting, rules, an entry from
//! `choice`; `messages` first translates an Anthropic request into a chat
//! body), and finally `log` (which also gives every answer under
//! `/anthropic` Anthropic's error shape). This file holds the state they share and the
//! provider's public handle on it; `builder` makes one, `limits` bounds it.

mod builder;
mod choice;
mod completion;
mod info;
mod limits;
mod log;
mod messages;
#[cfg(test)]
mod messages_tests;
mod request;
mod route;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use serde_json::Value;

use crate::catalog::CatalogModel;
use crate::prompt_cache::{ChatPromptIds, PromptAccounting, PromptCache};
use crate::render::{ResponsePlan, WireFormat};
use crate::request_rules::ServedCalls;
use crate::script::{Endpoint, Script, ScriptError};
use crate::wire::{ErrorBody, Usage};

pub use builder::MockProviderBuilder;
pub use limits::ServerLimits;
pub use log::{
    LoggedRequest, LoggedRequests, RequestObserver, RequestOutcome, SCRIPT_EXHAUSTED_STATUS,
};
pub use messages::to_chat_body as anthropic_chat_body;
pub use request::IncomingRequest;
pub use route::Route;

/// A copy of a provider's state ([`MockProvider::checkpoint`]).
#[derive(Debug)]
pub struct Checkpoint(Box<State>);

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
    /// The last chat prompt, so the next one tokenizes only what changed.
    chat_prompt_ids: ChatPromptIds,
    log: std::collections::VecDeque<LoggedRequest>,
    requests_seen: u64,
    logged_body_bytes: usize,
    max_logged_requests: usize,
    max_logged_body_bytes: usize,
    connection_errors: Vec<String>,
}

/// What one request got: the plan to send, and what the log keeps of it.
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
        MockProviderBuilder::new(script)
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
        self.log_without_body(method, path, headers, handled)
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
        self.log_without_body(method, path, headers, handled)
    }

    /// Answer a request whose body did not arrive whole within
    /// [`ServerLimits::body_read_timeout_ms`] with 408 and `connection:
    /// close`, and log it (with an empty body), so a client trickling its body
    /// learns why and its connection slot is freed.
    pub fn handle_body_timeout(
        &self,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
    ) -> ResponsePlan {
        let limit = self.shared.limits.body_read_timeout_ms.unwrap_or_default();
        let mut handled = Handled::rejected(
            408,
            format!("The request body did not arrive within {limit} ms"),
            "request_timeout",
            None,
        );
        handled
            .plan
            .headers
            .push(("connection".to_owned(), "close".to_owned()));
        self.log_without_body(method, path, headers, handled)
    }

    /// Log a request whose body was never read whole, with an empty body,
    /// and answer it with `handled`.
    fn log_without_body(
        &self,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        handled: Handled,
    ) -> ResponsePlan {
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

    /// The requests in the log (as [`MockProvider::requests`]), moved out:
    /// the log is left empty, for a caller done with the provider that wants
    /// the requests without a copy of each body.
    pub fn take_requests(&self) -> Vec<LoggedRequest> {
        let mut state = self.lock();
        state.logged_body_bytes = 0;
        std::mem::take(&mut state.log).into()
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

impl State {
    /// Answer `request`: reject what the route check refuses, else dispatch on the
    /// route (a flat dispatch: each arm is one call).
    fn respond(&mut self, request: &IncomingRequest, limits: &ServerLimits) -> Handled {
        let route = match route::admit(request, limits) {
            Ok(route) => route,
            Err(rejected) => return *rejected,
        };
        match route {
            Route::Models => self.list_models(),
            Route::Model(id) => self.describe_model(&id),
            Route::Balance => self.report_balance(),
            Route::Chat { beta } => {
                self.complete(request, Endpoint::Chat, beta, WireFormat::OpenAi)
            }
            Route::Fim => self.complete(request, Endpoint::Fim, true, WireFormat::OpenAi),
            Route::Messages => self.complete_messages(request),
        }
    }
}
