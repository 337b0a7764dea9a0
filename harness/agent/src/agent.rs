//! The agent handle: one agent over one session, its per-agent state, how
//! it is created (restoring the inbox and runtime-context state from the
//! log), what it exposes, and the helpers every phase uses to write the
//! session log and the live events.
//!
//! With it live the types that refer to each other: the [`LoopContext`]
//! every agent of a run shares (which holds the run's tool runner) and the
//! tool interface (a [`ToolCall`] carries a handle on its agent). Keeping
//! them in one module keeps the crate's modules acyclic: the other modules
//! (`driver`, `request`, `stream`, `tools`) each add their part of
//! `impl Agent` over this state, and none of them is used from here.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use dshc_model::inbox::Inbox;
use dshc_model::js::{JsValue, object};
use dshc_model::runtime_context::RuntimeContextProjection;
use dshc_model::session::{DerivedMessages, Session, SurfaceMeta};
use dshc_model::{
    AbortSignal, AgentFacts, AssembleContext, JsError, PromptEntry, Registry, ScopeKey,
    ToolProviderResult,
};

use crate::context::{AdapterRoute, Ids, LlmCall, LoopLimits, logger_warn};
use crate::listeners::{Listeners, LocalFuture, LoopListeners};
use crate::plugin_world::SharedWorld;
use dshc_model::session::event_kind;

/// `AgentOptions`.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// Provider route.
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Explicit output cap: any value, checked when the agent is created.
    pub max_tokens: JsValue,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            provider: None,
            model: None,
            max_tokens: JsValue::Undefined,
        }
    }
}

impl AgentOptions {
    /// `assertAgentOptions`: an output cap that cannot be represented exactly
    /// on the request wire is refused before anything is published.
    pub(crate) fn checked_max_tokens(&self) -> Result<Option<u64>, JsError> {
        match &self.max_tokens {
            JsValue::Undefined => Ok(None),
            value => match value.as_number() {
                Some(tokens) if value.is_safe_integer() && tokens > 0.0 => Ok(Some(tokens as u64)),
                _ => Err(JsError::type_error(
                    "agent maxTokens must be a positive safe integer",
                )),
            },
        }
    }
}

pub(crate) struct AgentState {
    pub(crate) context: LoopContext,
    pub(crate) id: String,
    pub(crate) options: AgentOptions,
    /// `options.maxTokens`, checked.
    pub(crate) max_tokens: Option<u64>,
    pub(crate) session: Session,
    pub(crate) inbox: Inbox,
    pub(crate) phase: RefCell<Phase>,
    pub(crate) scope: ScopeKey,
    pub(crate) projection: RuntimeContextProjection,
    pub(crate) header_logged: Cell<bool>,
    pub(crate) listeners: LoopListeners,
    pub(crate) drivers: Cell<u64>,
    pub(crate) idle: RefCell<Vec<std::task::Waker>>,
    /// Each distinct system text this agent sent, with its sections.
    pub(crate) prompt_layouts: RefCell<Vec<PromptLayout>>,
    /// The history the last finished attempt sent, for the next attempt to
    /// extend instead of copying every message again.
    pub(crate) sent_history: RefCell<Option<DerivedMessages>>,
}

/// How one system text was put together, so a cache report can name the
/// section a changed byte belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptLayout {
    /// The rendered system text (the sections' texts joined with `"\n\n"`).
    pub system: String,
    /// The non-empty rendered sections, in prompt order.
    pub sections: Vec<LaidOutSection>,
}

/// One section of a [`PromptLayout`].
#[derive(Clone, Debug, PartialEq)]
pub struct LaidOutSection {
    /// The section name.
    pub name: String,
    /// Its rendered text.
    pub text: String,
    /// The layer whose registration it is: `Some(None)` the global layer,
    /// `Some(Some(scope))` a scope's, `None` none (an assemble listener added it).
    pub layer: Option<Option<ScopeKey>>,
}

/// One agent over one session. Cloning shares it.
#[derive(Clone)]
pub struct Agent(pub(crate) Rc<AgentState>);

/// A weak handle to an [`Agent`], for closures the agent itself stores.
#[derive(Clone)]
pub struct WeakAgent(pub(crate) std::rc::Weak<AgentState>);

impl WeakAgent {
    /// The agent, if it still exists.
    pub fn upgrade(&self) -> Option<Agent> {
        self.0.upgrade().map(Agent)
    }
}

impl Agent {
    /// A weak handle.
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent(Rc::downgrade(&self.0))
    }

    /// Create an agent over `session` (constructing also restores the inbox and
    /// the runtime-context state from the log).
    pub fn new(
        context: LoopContext,
        id: &str,
        scope: ScopeKey,
        options: AgentOptions,
        session: Session,
    ) -> Result<Agent, JsError> {
        let max_tokens = options.checked_max_tokens()?;
        let last_turn = session.with_events(|events| {
            events
                .iter()
                .rev()
                .find(|e| e.kind == event_kind::TURN_START)
                .and_then(|e| e.data["turn"].as_u64())
                .unwrap_or(0)
        });
        let inbox = Inbox::replay(&session, 0)?;
        let warnings = context.live_events.clone();
        session.set_warning_sink(Rc::new(move |message| {
            warnings.borrow_mut().push(logger_warn(message));
        }));
        let projection = RuntimeContextProjection::attach(&session);
        Ok(Agent(Rc::new(AgentState {
            context,
            id: id.to_string(),
            options,
            max_tokens,
            session,
            inbox,
            phase: RefCell::new(Phase::Idle { last_turn }),
            scope,
            projection,
            header_logged: Cell::new(false),
            listeners: LoopListeners::default(),
            drivers: Cell::new(0),
            idle: RefCell::new(Vec::new()),
            prompt_layouts: RefCell::new(Vec::new()),
            sent_history: RefCell::new(None),
        })))
    }

    /// Each distinct system text this agent rendered, in first-use order.
    pub fn prompt_layouts(&self) -> Vec<PromptLayout> {
        self.0.prompt_layouts.borrow().clone()
    }

    /// Remember how `system` was laid out, once per distinct text.
    pub(crate) fn record_layout(&self, system: &str, sections: &[PromptEntry]) {
        let mut layouts = self.0.prompt_layouts.borrow_mut();
        if layouts.iter().any(|layout| layout.system == system) {
            return;
        }
        let registry = &self.0.context.registry;
        layouts.push(PromptLayout {
            system: system.to_owned(),
            sections: sections
                .iter()
                .map(|section| LaidOutSection {
                    name: section.name.to_string(),
                    text: section.text.as_deref().unwrap_or_default().to_owned(),
                    layer: registry.section_origin(Some(&self.0.scope), &section.name),
                })
                .collect(),
        });
    }

    /// The agent's session.
    pub fn session(&self) -> &Session {
        &self.0.session
    }

    /// The agent's scope key.
    pub fn scope(&self) -> &ScopeKey {
        &self.0.scope
    }

    /// The agent's listeners.
    pub fn listeners(&self) -> &LoopListeners {
        &self.0.listeners
    }

    /// The agent's inbox (context plugins keep pending input there, 10 AI2).
    pub fn inbox(&self) -> &Inbox {
        &self.0.inbox
    }

    /// The shared loop context.
    pub fn context(&self) -> &LoopContext {
        &self.0.context
    }

    /// Pending inbox counts `(next-turn, next-step)`.
    pub fn pending(&self) -> (usize, usize) {
        (
            self.0.inbox.next_turn().len(),
            self.0.inbox.next_step().len(),
        )
    }

    pub(crate) fn emit(&self, kind: &str, data: Value) {
        self.0.context.live_events.borrow_mut().push(object([
            ("type", json!(kind)),
            ("agent", json!(self.0.id)),
            ("data", data),
        ]));
    }

    /// `dispatch.emit('agent/status', {status})`: each listener runs
    /// contained (dsh-agent `agentEvents`): a throw or a later rejection is
    /// a warning, never the loop's failure.
    pub(crate) fn notify_status(&self, status: &str) {
        let status = status.to_string();
        let warnings = self.0.context.live_events.clone();
        let warn = move |what: &str, error: JsError| {
            warnings.borrow_mut().push(logger_warn(format!(
                "agent event \"agent/status\" listener {what}: {}",
                error.to_js_string()
            )));
        };
        for listener in self.0.listeners.status.snapshot() {
            match listener(&status) {
                Ok(None) => {}
                Ok(Some(rest)) => {
                    let warn = warn.clone();
                    tokio::task::spawn_local(async move {
                        if let Err(error) = rest.await {
                            warn("rejected", error);
                        }
                    });
                }
                Err(error) => warn("threw", error),
            }
        }
    }

    pub(crate) fn append(
        &self,
        kind: &str,
        data: Value,
        meta: SurfaceMeta,
    ) -> Result<dshc_model::session::Event, JsError> {
        self.0.session.append(kind, data, meta)
    }
}

/// An agent's status, as `agent/status` reports it (05 L1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentStatus {
    /// No driver runs: the inbox waits for a send.
    Idle,
    /// A driver runs turns.
    Running,
}

impl AgentStatus {
    /// The word dsh writes (`idle`, `running`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Idle => "idle",
            AgentStatus::Running => "running",
        }
    }
}

/// The agent's phase (05 §1): idle after its last turn, or running a turn
/// with that turn's signal, its open step, and whether a wake came in after
/// an abort.
pub(crate) enum Phase {
    Idle {
        last_turn: u64,
    },
    Running {
        abort: AbortSignal,
        turn: u64,
        step: u64,
        wake_requested: bool,
    },
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
    pub plugin_world: SharedWorld,
    /// Bounds on one run, which upstream does not have: an always-retrying
    /// listener or an endless tool loop would run forever there. Reaching
    /// one fails the turn and is reported in [`LoopContext::limit_reached`].
    pub limits: LoopLimits,
    /// The first limit reached, as `name = value`.
    pub limit_reached: Rc<RefCell<Option<String>>>,
    /// Steps opened so far in the run.
    pub steps_opened: Rc<Cell<u64>>,
    /// Turns started so far in the run.
    pub turns_started: Rc<Cell<u64>>,
    /// Bytes of the requests built so far in the run
    /// ([`LoopLimits::max_request_bytes`]).
    pub request_bytes: Rc<Cell<u64>>,
    /// What a scripted route's `{act = op}` part does to the agent whose
    /// call it answers (the harness's act ops); none: such parts do nothing.
    pub route_actor: Option<RouteActor>,
    /// `llm/stream` middleware, on the LLM runtime: every agent's calls.
    pub llm_stream: Rc<Listeners<LlmStreamFn>>,
}

/// What an `llm/stream` middleware gives back: `None` for the adapter's
/// stream (what the innermost `next()` returns), or the parts of a stream
/// it serves itself.
pub type LlmStreamAnswer = Option<Vec<serde_json::Value>>;

/// An `llm/stream` middleware: called with the calling agent, the request
/// and `next` (the inner middleware, then the adapter), synchronously, as
/// dsh-llm's waterfall calls it; an error is thrown to the loop.
pub type LlmStreamFn = Rc<
    dyn Fn(
        &Agent,
        &serde_json::Value,
        &dyn Fn() -> Result<LlmStreamAnswer, JsError>,
    ) -> Result<LlmStreamAnswer, JsError>,
>;

/// Runs one act op (as JSON) on an agent: a scripted route's `{act}` part.
pub type RouteActor = Rc<dyn Fn(&Agent, &serde_json::Value) -> Result<(), JsError>>;

impl LoopContext {
    /// Whether a limit was reached: the run is over, and no agent starts
    /// another turn.
    pub(crate) fn run_ended(&self) -> bool {
        self.limit_reached.borrow().is_some()
    }

    /// Count `request` against [`LoopLimits::max_request_bytes`]: past the
    /// limit, the error that ends the turn (the request is not sent).
    pub(crate) fn count_request(&self, request: &serde_json::Value) -> Result<(), JsError> {
        let total = self.request_bytes.get().saturating_add(json_len(request));
        if total > self.limits.max_request_bytes {
            return Err(self.reach(format!(
                "max_request_bytes = {}",
                self.limits.max_request_bytes
            )));
        }
        self.request_bytes.set(total);
        Ok(())
    }

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

    /// Register what the loop's own services put in the registry: the tool
    /// runtime's one global tool provider (dsh-tools contributes the wire
    /// schemas of its registered tools through it; the scripted tools are
    /// kept out of the prompt, so it contributes none), then the loop's
    /// three global variables (01 R1.2).
    pub fn register_loop_services(&self) -> Result<(), JsError> {
        self.registry.tools(
            None,
            Rc::new(|_: &AssembleContext, _: &Registry| {
                Ok(Some(ToolProviderResult {
                    schemas: Rc::from([]),
                    known_names: None,
                }))
            }),
        )?;
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
                    Ok(context.agent.as_ref().and_then(pick).map(Rc::from))
                }),
            )?;
        }
        Ok(())
    }
}

/// A scripted tool result (the loop-level contract of 99 §2).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutcome {
    /// Result text.
    pub text: String,
    /// The result's content blocks, when they are not the one text block of
    /// `text` (images, several blocks).
    pub content: Option<Vec<Value>>,
    /// `isError`.
    pub is_error: bool,
    /// The result's `error.info` (`{name, code}` of a harness error the
    /// tool threw), logged as the `tool/result`'s `error`.
    pub error_info: Option<Value>,
    /// Context messages spliced into the next-step inbox.
    pub additional_contexts: Vec<String>,
    /// `concludesTurn`.
    pub concludes_turn: bool,
}

impl ToolOutcome {
    /// dsh-tools `toolErrorResult`: what a tool body's throw becomes.
    pub fn thrown(error: &JsError) -> ToolOutcome {
        let message = if error.message.is_empty() {
            "tool call failed".to_string()
        } else {
            error.message.clone()
        };
        ToolOutcome {
            text: format!("Error: {message}"),
            is_error: true,
            error_info: error
                .code
                .as_ref()
                .map(|code| json!({"name": error.name, "code": code})),
            ..ToolOutcome::default()
        }
    }
}

/// One tool call as the runtime hands it to the tool body.
#[derive(Clone)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The raw arguments text.
    pub arguments: String,
    /// The call id.
    pub call_id: String,
    /// The call's signal (the turn's).
    pub signal: AbortSignal,
    /// The agent the call runs for.
    pub agent: WeakAgent,
}

/// Runs a tool call's body; it may wait, act on the agent and fail.
pub type ToolRunner = Rc<dyn Fn(ToolCall) -> LocalFuture<ToolOutcome>>;

/// The length of `value`'s compact JSON text as serde_json writes it,
/// counted without writing it. Every attempt counts its whole request
/// (`max_request_bytes`), so this walks the value directly rather than
/// through a serializer: a string is its bytes, two quotes, and one more
/// byte for each escape serde_json writes in two (`\"`, `\\`, `\b`, `\t`,
/// `\n`, `\f`, `\r`) or five more for one it writes as `\u00XX`.
fn json_len(value: &serde_json::Value) -> u64 {
    use serde_json::Value;
    fn string_len(text: &str) -> u64 {
        /// The bytes serde_json adds to write each byte of a string.
        const EXTRA: [u8; 256] = {
            let mut extra = [0u8; 256];
            let mut byte = 0;
            while byte < 0x20 {
                extra[byte] = 5;
                byte += 1;
            }
            let mut short = [b'"', b'\\', 0x08, 0x09, 0x0A, 0x0C, 0x0D].as_slice();
            while let [first, rest @ ..] = short {
                extra[*first as usize] = 1;
                short = rest;
            }
            extra
        };
        let extra: u64 = text
            .bytes()
            .map(|byte| u64::from(EXTRA[usize::from(byte)]))
            .sum();
        text.len() as u64 + 2 + extra
    }
    // Between n items or entries, n - 1 commas; around them, two brackets.
    let separated = |count: usize| count.saturating_sub(1) as u64 + 2;
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => number.to_string().len() as u64,
        Value::String(text) => string_len(text),
        Value::Array(items) => separated(items.len()) + items.iter().map(json_len).sum::<u64>(),
        Value::Object(fields) => {
            separated(fields.len())
                + fields
                    .iter()
                    .map(|(key, item)| string_len(key) + 1 + json_len(item))
                    .sum::<u64>()
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::json_len;

    fn json_value() -> impl Strategy<Value = Value> {
        // Every byte class the escapes tell apart: plain ASCII, the two-byte
        // and six-byte escapes, DEL, and multi-byte UTF-8.
        let text = "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é€😀]{0,12}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |x| x.is_finite())
                .prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((text, inner), 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_counted_length_is_the_written_length(value in json_value()) {
            let written = serde_json::to_vec(&value).expect("a Value writes");
            prop_assert_eq!(json_len(&value), written.len() as u64);
        }
    }

    #[test]
    fn every_escape_is_counted_as_serde_json_writes_it() {
        for byte in 0u8..=0x7F {
            let value = Value::String(char::from(byte).to_string());
            let written = serde_json::to_vec(&value).expect("a Value writes");
            assert_eq!(json_len(&value), written.len() as u64, "byte {byte:#04x}");
        }
    }
}
