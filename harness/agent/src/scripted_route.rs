//! A scripted LLM adapter below the wire, as upstream's own loop tests
//! script the model: registered for a provider route, each `stream()` call
//! takes the next scripted response and yields its parts; `resolveModel()`
//! answers from a script too. No HTTP and no wire format are involved, so a
//! scenario can state exactly which adapter-level parts the loop receives.
//!
//! The types here are the agent's own (the harness converts the scenario's
//! route spec), so the agent crate stays independent of the scenario format.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde_json::{Map, Value, json};

use dshc_deepseek::failure_chunk;
use dshc_model::js::timer_delay_ms;
use dshc_model::llm::{ModelInfo, validate_model_info};
use dshc_model::{AbortSignal, JsError};

/// An error the script raises: an `LlmError` when `code` is set, else a
/// plain `Error`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedFailure {
    /// The message.
    pub message: String,
    /// `LlmError` code.
    pub code: Option<String>,
    /// `LlmError` `status`.
    pub status: Option<u16>,
    /// `LlmError` `providerRetryAfterMs`.
    pub provider_retry_after_ms: Option<u64>,
    /// `LlmError` `requestId`.
    pub request_id: Option<String>,
}

impl ScriptedFailure {
    /// The thrown error, as upstream's constructors build it.
    pub fn to_error(&self) -> JsError {
        let Some(code) = &self.code else {
            return JsError::error(self.message.clone());
        };
        let mut failure = Map::new();
        failure.insert("message".into(), json!(self.message));
        failure.insert("code".into(), json!(code));
        if let Some(status) = self.status {
            failure.insert("status".into(), json!(status));
        }
        if let Some(retry_after) = self.provider_retry_after_ms {
            failure.insert("providerRetryAfterMs".into(), json!(retry_after));
        }
        if let Some(request_id) = &self.request_id {
            failure.insert("requestId".into(), json!(request_id));
        }
        JsError::llm(Value::Object(failure))
    }
}

/// What `resolveModel` does.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// Resolve to this metadata (upstream's shape; identity fields default
    /// to the route and the model).
    Returns(Map<String, Value>),
    /// Reject with this error.
    Rejects(ScriptedFailure),
    /// Settle only when the lookup's signal aborts.
    Blocks,
    /// Wait, whatever the signal does, until [`ScriptedRoute::settle`]
    /// gives this model its resolution (every waiting lookup, and every
    /// later one, gets it).
    Pending,
}

/// One scripted `stream()` call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedResponse {
    /// Virtual time before the first part.
    pub delay_ms: u64,
    /// Parts in upstream's vocabulary, and `{sleep_ms}` pauses.
    pub parts: Vec<Value>,
    /// Thrown after the parts.
    pub error: Option<ScriptedFailure>,
    /// After the parts, wait for the abort.
    pub hangs: bool,
}

/// A scripted adapter for one provider route. Its cursor is shared by every
/// registration of the route, so a re-registered route goes on where it stopped.
#[derive(Debug)]
pub struct ScriptedRoute {
    /// The provider route.
    pub provider: String,
    /// Resolution of models not in `resolutions`.
    pub default_resolution: Resolution,
    /// Resolution per model id.
    pub resolutions: BTreeMap<String, Resolution>,
    /// One per `stream()` call.
    pub responses: Vec<ScriptedResponse>,
    calls: Cell<usize>,
    /// What [`ScriptedRoute::settle`] gave a pending model, by model id.
    settled: RefCell<BTreeMap<String, Resolution>>,
    /// Wakes the lookups waiting on a pending model.
    settling: tokio::sync::Notify,
}

impl ScriptedRoute {
    /// A route at the start of its script.
    pub fn new(
        provider: String,
        default_resolution: Resolution,
        resolutions: BTreeMap<String, Resolution>,
        responses: Vec<ScriptedResponse>,
    ) -> Self {
        ScriptedRoute {
            provider,
            default_resolution,
            resolutions,
            responses,
            calls: Cell::new(0),
            settled: RefCell::default(),
            settling: tokio::sync::Notify::new(),
        }
    }

    /// Settle `model`'s pending resolution: the lookups waiting on it, and
    /// every later one, get `resolution`. A model that is not pending is
    /// refused.
    pub fn settle(&self, model: &str, resolution: Resolution) -> Result<(), JsError> {
        if *self.resolution_of(model) != Resolution::Pending {
            return Err(JsError::error(format!(
                "route {:?} model {model:?} is not pending",
                self.provider
            )));
        }
        self.settled
            .borrow_mut()
            .insert(model.to_owned(), resolution);
        self.settling.notify_waiters();
        Ok(())
    }

    fn resolution_of(&self, model: &str) -> &Resolution {
        self.resolutions
            .get(model)
            .unwrap_or(&self.default_resolution)
    }

    /// `resolveModel(provider, model, signal)` followed by upstream's
    /// validation of what it returned.
    pub async fn resolve(&self, model: &str, signal: &AbortSignal) -> Result<ModelInfo, JsError> {
        let mut resolution = self.resolution_of(model).clone();
        while resolution == Resolution::Pending {
            let settled = self.settled.borrow().get(model).cloned();
            match settled {
                Some(settled) => resolution = settled,
                None => self.settling.notified().await,
            }
        }
        match &resolution {
            Resolution::Returns(metadata) => {
                let mut resolved = Map::new();
                resolved.insert("provider".into(), json!(self.provider));
                resolved.insert("id".into(), json!(model));
                resolved.insert("name".into(), json!(model));
                resolved.extend(metadata.clone());
                validate_model_info(&self.provider, model, &resolved)
            }
            Resolution::Rejects(failure) => Err(failure.to_error()),
            Resolution::Blocks | Resolution::Pending => {
                signal.aborted().await;
                Err(JsError::abort())
            }
        }
    }

    /// Start the next `stream()` call; `act` runs its `{act = op}` parts
    /// (none without it).
    pub fn stream(&self, signal: AbortSignal, act: Option<PartAct>) -> ScriptedStream {
        let call = self.calls.get() + 1;
        self.calls.set(call);
        let response = match self.responses.get(call - 1) {
            Some(response) => response.clone(),
            None => ScriptedResponse {
                error: Some(ScriptedFailure {
                    message: format!(
                        "scripted route \"{}\" has no response for call {call}",
                        self.provider
                    ),
                    ..ScriptedFailure::default()
                }),
                ..ScriptedResponse::default()
            },
        };
        ScriptedStream {
            delay_ms: response.delay_ms,
            parts: response.parts.into(),
            error: response.error,
            hangs: response.hangs,
            signal,
            done: false,
            act,
        }
    }
}

/// Runs a scripted response's `{act = op}` part (the op as JSON) on the
/// agent that made the call; an error is the stream's, as a throw inside
/// upstream's generator is.
pub type PartAct = Box<dyn Fn(&Value) -> Result<(), JsError>>;

impl ScriptedStream {
    /// A stream of `parts` (with pauses and acts) that an `llm/stream`
    /// middleware serves itself.
    pub fn served(parts: Vec<Value>, signal: AbortSignal, act: Option<PartAct>) -> ScriptedStream {
        ScriptedStream {
            delay_ms: 0,
            parts: parts.into(),
            error: None,
            hangs: false,
            signal,
            done: false,
            act,
        }
    }
}

/// The chunks of one scripted call, in virtual time.
pub struct ScriptedStream {
    delay_ms: u64,
    parts: VecDeque<Value>,
    error: Option<ScriptedFailure>,
    hangs: bool,
    signal: AbortSignal,
    done: bool,
    act: Option<PartAct>,
}

impl ScriptedStream {
    /// The next chunk, or `None` after the last. A raised error becomes one
    /// terminal `finish` chunk (`adapterStream`'s catch), `aborted` when the
    /// call's signal fired.
    pub async fn next(&mut self) -> Option<Value> {
        if self.done {
            return None;
        }
        // Pauses are `setTimeout`s, as upstream's tests script them: a
        // zero-delay pause is not due at the same instant.
        if self.delay_ms > 0 {
            let delay_ms = timer_delay_ms(std::mem::take(&mut self.delay_ms));
            mock_provider::sim_time::sleep(Duration::from_millis(delay_ms)).await;
        }
        while let Some(part) = self.parts.pop_front() {
            let only = part.as_object().is_some_and(|o| o.len() == 1);
            if let (true, Some(ms)) = (only, part.get("sleep_ms").and_then(Value::as_u64)) {
                mock_provider::sim_time::sleep(Duration::from_millis(timer_delay_ms(ms))).await;
            } else if let (true, Some(op)) = (only, part.get("act")) {
                if let Some(Err(error)) = self.act.as_ref().map(|act| act(op)) {
                    self.done = true;
                    return Some(failure_chunk(&error, self.signal.is_aborted()));
                }
            } else {
                return Some(part);
            }
        }
        self.done = true;
        if self.hangs {
            self.signal.aborted().await;
            return Some(failure_chunk(&JsError::abort(), true));
        }
        let error = self.error.take()?;
        Some(failure_chunk(&error.to_error(), self.signal.is_aborted()))
    }
}
