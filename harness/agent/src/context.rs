//! What every agent of a run shares: the prompt registry, the adapter
//! routes, the tool runner, id minting, the live-event list and the run's
//! limits, plus the small message constructors they all use.
//!
//! It exists so the per-agent modules (`agent`, `driver`, `request`,
//! `stream`, `tools`) depend on one plain description of the world around
//! them instead of on each other.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use dshc_model::js::object;
use dshc_model::llm::ModelInfo;
use dshc_model::{AbortSignal, AgentFacts, AssembleContext, JsError, Registry};

use crate::plugins;
use crate::scripted_route::ScriptedRoute;
use crate::tools::ToolRunner;
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

/// A plain user prompt.
pub fn user_prompt(ids: &Ids, text: &str) -> Value {
    user_message(
        ids,
        json!([{"type": "text", "text": text}]),
        json!({"kind": "user"}),
    )
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

/// Everything agents share: the registry, adapters, tools, ids.
#[derive(Clone)]
pub struct LoopContext {
    /// The prompt registry (global layer shared by all agents).
    pub registry: Registry,
    /// Adapter routes by provider (`llm.registerAdapter`); routes can come
    /// and go while the loop runs.
    pub adapters: Rc<RefCell<BTreeMap<String, AdapterRoute>>>,
    /// Every scripted-route `stream()` call, in order.
    pub llm_calls: Rc<RefCell<Vec<LlmCall>>>,
    /// The tool runtime stand-in.
    pub tools: ToolRunner,
    /// Id minting.
    pub ids: Ids,
    /// Live (non-durable) events: `agent/error`, `agent/status`, ... in order.
    pub live_events: Rc<RefCell<Vec<Value>>>,
    /// What the context plugins read from outside the session (files, the
    /// tmux pane, other sessions); shared so it outlives a resume (spec 10).
    pub plugin_world: plugins::SharedWorld,
    /// Bounds on one run, which upstream does not have: an always-retrying
    /// listener or an endless tool loop would run forever there. Reaching
    /// one fails the turn and is reported in [`LoopContext::limit_reached`].
    pub limits: LoopLimits,
    /// The first limit reached, as `name = value`.
    pub limit_reached: Rc<RefCell<Option<String>>>,
    /// Steps opened so far in the run.
    pub steps_opened: Rc<Cell<u64>>,
}

/// Bounds on one run of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopLimits {
    /// Provider attempts within one step (retries included).
    pub max_attempts_per_step: u32,
    /// Steps opened, over every turn and agent of the run.
    pub max_steps: u64,
}

impl Default for LoopLimits {
    fn default() -> Self {
        LoopLimits {
            max_attempts_per_step: 100,
            max_steps: 1_000,
        }
    }
}

impl LoopContext {
    /// Record that `limit` (`name = value`) was reached; the error that ends
    /// the turn.
    pub(crate) fn reach(&self, limit: String) -> JsError {
        self.limit_reached.borrow_mut().get_or_insert(limit.clone());
        JsError::error(format!("dshc limit reached: {limit}"))
    }
}

impl LoopContext {
    /// `llm.registerAdapter([provider], adapter)`: all-or-nothing, refusing
    /// an empty or taken provider name as upstream does.
    pub fn register_route(&self, provider: &str, route: AdapterRoute) -> Result<(), JsError> {
        if provider.is_empty() {
            return Err(JsError::llm(dshc_model::llm::failure(
                "adapter provider names must be non-empty",
                "INVALID_ADAPTER",
            )));
        }
        let mut adapters = self.adapters.borrow_mut();
        if adapters.contains_key(provider) {
            return Err(JsError::llm(dshc_model::llm::failure(
                &format!("an adapter for provider \"{provider}\" is already registered"),
                "DUPLICATE_ADAPTER",
            )));
        }
        adapters.insert(provider.to_string(), route);
        Ok(())
    }

    /// Dispose a route's registration (a no-op when it has none).
    pub fn unregister_route(&self, provider: &str) {
        self.adapters.borrow_mut().remove(provider);
    }

    /// Register the loop's three global variables (01 R1.2).
    pub fn register_loop_variables(&self) -> Result<(), JsError> {
        type Pick = fn(&AgentFacts) -> Option<String>;
        let fields: [(&str, Pick); 3] = [
            ("provider", |a| a.provider.clone()),
            ("model", |a| a.model.clone()),
            ("cwd", |a| a.cwd.clone()),
        ];
        for (name, pick) in fields {
            self.registry.variable(
                None,
                name,
                Rc::new(move |context: &AssembleContext, _| {
                    Ok(context.agent.as_ref().and_then(pick))
                }),
            )?;
        }
        Ok(())
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
