//! What every agent of a run shares: the prompt registry, the adapter
//! routes, the tool runner, id minting, the live-event list and the run's
//! limits, plus the small message constructors they all use.
//!
//! It exists so the per-agent modules (`agent`, `driver`, `request`,
//! `stream`, `tools`) depend on one plain description of the world around
//! them instead of on each other.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use dshc_model::js::object;
use dshc_model::llm::ModelInfo;
use dshc_model::{AbortSignal, JsError};

use crate::scripted_route::ScriptedRoute;
use crate::transport::Connection;
use dshc_model::session::event_kind;

/// Deterministic id minting: `msg-1`, `msg-2`, ...
#[derive(Clone, Default)]
pub struct Ids(Rc<Cell<u64>>);

impl Ids {
    /// The next id with this prefix.
    pub fn next(&self, prefix: &str) -> String {
        self.0.set(self.0.get() + 1);
        format!("{prefix}-{}", self.0.get())
    }
}

/// `createUserMessage`: `{content, source, role: 'user', id}`.
pub fn user_message(ids: &Ids, content: Value, source: Value) -> Value {
    object([
        ("content", content),
        ("source", source),
        ("role", json!("user")),
        ("id", json!(ids.next("msg"))),
    ])
}

/// The DeepSeek adapter's registration: its models and its connection.
#[derive(Clone)]
pub struct WireRoute {
    /// Model info by id; unknown ids use `default_model`.
    pub models: BTreeMap<String, ModelInfo>,
    /// Info for a model not in `models`.
    pub default_model: ModelInfo,
    /// How to reach the provider.
    pub connection: Rc<Connection>,
}

/// One adapter registration for a provider route.
#[derive(Clone)]
pub enum AdapterRoute {
    /// The DeepSeek adapter over HTTP.
    Wire(WireRoute),
    /// A scripted adapter below the wire.
    Scripted(Rc<ScriptedRoute>),
}

impl AdapterRoute {
    /// Whether two registrations hold the same adapter: dsh-llm compares
    /// adapters by identity, and a route re-registered here keeps its adapter.
    pub fn is_same_adapter(&self, other: &AdapterRoute) -> bool {
        match (self, other) {
            (AdapterRoute::Wire(one), AdapterRoute::Wire(two)) => {
                Rc::ptr_eq(&one.connection, &two.connection)
            }
            (AdapterRoute::Scripted(one), AdapterRoute::Scripted(two)) => Rc::ptr_eq(one, two),
            _ => false,
        }
    }
}

/// One `stream()` call of a scripted route: the session it served, the log
/// length at dispatch (for replay), and the request it received.
#[derive(Clone, Debug, PartialEq)]
pub struct LlmCall {
    /// Session id.
    pub session: String,
    /// Session log length when the call was made.
    pub at: usize,
    /// The request options (without the signal).
    pub request: Value,
}

/// Bounds on one run of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopLimits {
    /// Provider attempts within one step (retries included).
    pub max_attempts_per_step: u32,
    /// Steps opened, over every turn and agent of the run.
    pub max_steps: u64,
    /// Turns started, over every agent of the run: a listener that cancels
    /// and follows up before any step opens starts turn after turn at one
    /// virtual instant, which no step or time limit would end.
    pub max_turns: u64,
    /// Bytes of the requests the agents build over the run, each counted
    /// as its JSON text and summed over every attempt. A request carries
    /// the whole history, so a run's cost (building, sending, logging and
    /// judging its requests) grows with this sum, quadratically in its
    /// steps: a bound on steps alone would still let a long run cost
    /// gigabytes.
    pub max_request_bytes: u64,
}

impl Default for LoopLimits {
    fn default() -> Self {
        LoopLimits {
            max_attempts_per_step: 100,
            max_steps: 1_000,
            max_turns: 1_000,
            max_request_bytes: 16 << 20,
        }
    }
}

/// A live `ctx.logger.warn` record.
pub fn logger_warn(message: String) -> Value {
    json!({"type": event_kind::LOGGER_WARN, "data": {"message": message}})
}

/// `signal.throwIfAborted()` for a signal aborted without a reason object.
pub(crate) fn throw_if_aborted(signal: &AbortSignal) -> Result<(), JsError> {
    if signal.is_aborted() {
        Err(JsError::abort())
    } else {
        Ok(())
    }
}
