//! The agent loop around the assembly (spec 05–08): turns, proposed steps,
//! the inbox claim, one assembly per proposed step, runtime-context
//! projection, per-step render, per-attempt request build, header logging,
//! streaming, retries, tools, failures and cancellation.
//!
//! The driver is `async` and single-threaded. Its only waits are real ones
//! (a listener that blocks, the provider's stream), on `tokio::time`, which
//! is virtual under turmoil; ids come from a counter. So a scenario and a
//! seed determine every byte of the session log.

pub mod listeners;
pub mod plugins;
pub mod scripted_route;
pub mod transport;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use dshc_model::header::{canonical_header_owned, header_equals, request_proposal};
use dshc_model::inbox::{Inbox, Target};
use dshc_model::js::{JsValue, object};
use dshc_model::llm::{BlockAssembler, ModelInfo, prepare_call};
use dshc_model::render::{
    join_context_sections, join_prompt_sections, render_context_sections, render_prompt_sections,
};
use dshc_model::runtime_context::RuntimeContextProjection;
use dshc_model::session::{Session, SurfaceMeta};
use dshc_model::{
    AbortSignal, AgentFacts, AssembleContext, Assembly, JsError, PromptEntry, Registry, ScopeKey,
};
use listeners::{
    Decision, LocalFuture, LoopListeners, PreStepPayload, RequestErrorAction, RequestErrorPayload,
    RequestPayload, TurnStoppingPayload,
};
use scripted_route::{ScriptedRoute, ScriptedStream};
use transport::{ChunkStream, Connection};

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

/// A scripted tool result (the loop-level contract of 99 §2).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutcome {
    /// Result text.
    pub text: String,
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
    fn reach(&self, limit: String) -> JsError {
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
    fn checked_max_tokens(&self) -> Result<Option<u64>, JsError> {
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

enum Phase {
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

/// What a step returned.
#[derive(Clone, Debug, PartialEq)]
enum TurnEnd {
    Completed,
    MaxTokens,
    Blocked,
}

impl TurnEnd {
    fn to_json(&self) -> Value {
        match self {
            TurnEnd::Completed => json!({"kind": "completed"}),
            TurnEnd::MaxTokens => json!({"kind": "max-tokens"}),
            TurnEnd::Blocked => json!({"kind": "blocked"}),
        }
    }
}

/// A live `ctx.logger.warn` record.
pub fn logger_warn(message: String) -> Value {
    json!({"type": "logger/warn", "data": {"message": message}})
}

/// The chunk source of one attempt.
enum Chunks {
    Wire(ChunkStream),
    Scripted(ScriptedStream),
}

impl Chunks {
    async fn next(&mut self) -> Option<Value> {
        match self {
            Chunks::Wire(stream) => stream.next().await,
            Chunks::Scripted(stream) => stream.next().await,
        }
    }
}

/// `signal.throwIfAborted()` for a signal aborted without a reason object.
fn throw_if_aborted(signal: &AbortSignal) -> Result<(), JsError> {
    if signal.is_aborted() {
        Err(JsError::abort())
    } else {
        Ok(())
    }
}

struct AgentState {
    context: LoopContext,
    id: String,
    options: AgentOptions,
    /// `options.maxTokens`, checked.
    max_tokens: Option<u64>,
    session: Session,
    inbox: Inbox,
    phase: RefCell<Phase>,
    scope: ScopeKey,
    projection: RuntimeContextProjection,
    header_logged: Cell<bool>,
    listeners: LoopListeners,
    drivers: Cell<u64>,
    idle: RefCell<Vec<std::task::Waker>>,
    /// Each distinct system text this agent sent, with its sections.
    prompt_layouts: RefCell<Vec<PromptLayout>>,
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
pub struct Agent(Rc<AgentState>);

/// A weak handle to an [`Agent`], for closures the agent itself stores.
#[derive(Clone)]
pub struct WeakAgent(std::rc::Weak<AgentState>);

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
                .find(|e| e.kind == "turn/start")
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
        })))
    }

    /// Each distinct system text this agent rendered, in first-use order.
    pub fn prompt_layouts(&self) -> Vec<PromptLayout> {
        self.0.prompt_layouts.borrow().clone()
    }

    /// Remember how `system` was laid out, once per distinct text.
    fn record_layout(&self, system: &str, sections: &[PromptEntry]) {
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

    /// `idle` or `running`.
    pub fn status(&self) -> &'static str {
        match &*self.0.phase.borrow() {
            Phase::Idle { .. } => "idle",
            Phase::Running { .. } => "running",
        }
    }

    /// Pending inbox counts `(next-turn, next-step)`.
    pub fn pending(&self) -> (usize, usize) {
        (
            self.0.inbox.next_turn().len(),
            self.0.inbox.next_step().len(),
        )
    }

    fn emit(&self, kind: &str, data: Value) {
        self.0.context.live_events.borrow_mut().push(object([
            ("type", json!(kind)),
            ("agent", json!(self.0.id)),
            ("data", data),
        ]));
    }

    fn set_running(&self, running: Option<Phase>) {
        let previous = self.status();
        *self.0.phase.borrow_mut() = running.unwrap_or(Phase::Idle { last_turn: 0 });
        let now = self.status();
        if now != previous {
            self.emit("agent/status", json!({"status": now}));
            self.notify_status(now);
        }
    }

    /// `dispatch.emit('agent/status', {status})`: each listener runs
    /// contained (dsh-agent `agentEvents`): a throw or a later rejection is
    /// a warning, never the loop's failure.
    fn notify_status(&self, status: &str) {
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

    /// `send(message, target, wakeup)` (05 L1.2).
    pub fn send(&self, message: Value, target: Target, wakeup: bool) -> Result<(), JsError> {
        let waking_after_abort = wakeup
            && matches!(&*self.0.phase.borrow(), Phase::Running { abort, .. } if abort.is_aborted());
        let target = if waking_after_abort {
            Target::NextTurn
        } else {
            target
        };
        self.0.inbox.append(target, message)?;
        if wakeup {
            self.wake_driver(waking_after_abort);
        }
        Ok(())
    }

    /// `followup`: a new turn.
    pub fn followup(&self, message: Value) -> Result<(), JsError> {
        self.send(message, Target::NextTurn, true)
    }

    /// `steer`: input for the next step, waking.
    pub fn steer(&self, message: Value) -> Result<(), JsError> {
        self.send(message, Target::NextStep, true)
    }

    /// `inject`: input for the next step, not waking.
    pub fn inject(&self, message: Value) -> Result<(), JsError> {
        self.send(message, Target::NextStep, false)
    }

    /// `cancel(cause, {keepInbox})` (08 C1).
    pub fn cancel(&self, cause: Value, keep_inbox: bool) -> Result<(), JsError> {
        if !keep_inbox {
            self.0.inbox.clear()?;
            if let Phase::Running { wake_requested, .. } = &mut *self.0.phase.borrow_mut() {
                *wake_requested = false;
            }
        }
        if let Phase::Running { abort, .. } = &*self.0.phase.borrow() {
            abort.abort(cause);
        }
        Ok(())
    }

    fn wake_driver(&self, wake_after_abort: bool) {
        let last_turn = {
            let mut phase = self.0.phase.borrow_mut();
            match &mut *phase {
                Phase::Running {
                    abort,
                    wake_requested,
                    ..
                } => {
                    let disposed = abort.reason().is_some_and(|r| r["kind"] == "disposed");
                    if !disposed && wake_after_abort {
                        *wake_requested = true;
                    }
                    return;
                }
                Phase::Idle { last_turn } => *last_turn,
            }
        };
        self.set_running(Some(Phase::Running {
            abort: AbortSignal::new(),
            turn: last_turn,
            step: 0,
            wake_requested: false,
        }));
        self.0.drivers.set(self.0.drivers.get() + 1);
        let agent = self.clone();
        let mut driver: LocalFuture<()> = Box::pin(async move { agent.kick().await });
        // The driver starts synchronously inside the initiator (05 L1.3): run
        // it to its first real suspension before `send` returns.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        if driver.as_mut().poll(&mut cx).is_pending() {
            tokio::task::spawn_local(driver);
        }
    }

    /// Wait until no driver runs.
    pub async fn when_idle(&self) {
        std::future::poll_fn(|cx| {
            if self.status() == "idle" {
                std::task::Poll::Ready(())
            } else {
                self.0.idle.borrow_mut().push(cx.waker().clone());
                std::task::Poll::Pending
            }
        })
        .await
    }

    async fn kick(&self) {
        // A failed turn was already reported; the driver just stops.
        while let Ok(true) = self.turn().await {}
        let (turn, wake_requested) = match &*self.0.phase.borrow() {
            Phase::Running {
                turn,
                wake_requested,
                ..
            } => (*turn, *wake_requested),
            Phase::Idle { last_turn } => (*last_turn, false),
        };
        self.set_running(Some(Phase::Idle { last_turn: turn }));
        for waker in self.0.idle.borrow_mut().drain(..) {
            waker.wake();
        }
        if wake_requested && self.0.inbox.has_pending() {
            self.wake_driver(false);
        }
    }

    fn signal(&self) -> AbortSignal {
        match &*self.0.phase.borrow() {
            Phase::Running { abort, .. } => abort.clone(),
            Phase::Idle { .. } => AbortSignal::new(),
        }
    }

    fn phase_turn_step(&self) -> (u64, u64) {
        match &*self.0.phase.borrow() {
            Phase::Running { turn, step, .. } => (*turn, *step),
            Phase::Idle { last_turn } => (*last_turn, 0),
        }
    }

    fn set_phase_turn(&self, value: u64) {
        if let Phase::Running { turn, .. } = &mut *self.0.phase.borrow_mut() {
            *turn = value;
        }
    }

    fn set_phase_step(&self, value: u64) {
        if let Phase::Running { step, .. } = &mut *self.0.phase.borrow_mut() {
            *step = value;
        }
    }

    fn append(
        &self,
        kind: &str,
        data: Value,
        meta: SurfaceMeta,
    ) -> Result<dshc_model::session::Event, JsError> {
        self.0.session.append(kind, data, meta)
    }

    /// One turn (05 §2). `Ok(true)` = another queued turn follows.
    async fn turn(&self) -> Result<bool, JsError> {
        let signal = self.signal();
        throw_if_aborted(&signal)?;
        let (last_turn, _) = self.phase_turn_step();
        let turn = last_turn + 1;
        self.append("turn/start", json!({"turn": turn}), SurfaceMeta::default())?;
        self.set_phase_turn(turn);
        let mut turn_ends: Option<Value> = None;
        let outcome = self.turn_body(turn, &signal, &mut turn_ends).await;
        let result = match outcome {
            Ok(continues) => Ok(continues),
            Err(error) => {
                if signal.is_aborted() {
                    turn_ends = Some(json!({"kind": "aborted", "reason": signal.reason()}));
                } else {
                    let failure =
                        error.failure.as_deref().cloned().unwrap_or_else(
                            || json!({"message": error.chain(), "code": "UNKNOWN"}),
                        );

                    turn_ends = Some(json!({"kind": "error", "error": failure}));
                    let (_, step) = self.phase_turn_step();
                    // The live event carries the Error itself; its message
                    // (not the cause chain `turn/end` logs) is what listeners see.
                    self.emit(
                        "agent/error",
                        json!({"turn": turn, "step": step, "error": error.message}),
                    );
                }
                Err(error)
            }
        };
        self.append(
            "turn/end",
            json!({"turn": turn, "reason": turn_ends}),
            SurfaceMeta::default(),
        )?;
        let continues = result?;
        if !continues {
            return Ok(false);
        }
        if !self.0.inbox.has_pending() {
            return Ok(false);
        }
        if let Phase::Running {
            abort,
            wake_requested,
            step,
            ..
        } = &mut *self.0.phase.borrow_mut()
        {
            *abort = AbortSignal::new();
            *wake_requested = false;
            *step = 0;
        }
        Ok(true)
    }

    /// The loop of proposed steps. `Ok(true)` after a normal break,
    /// `Ok(false)` when the driver must stop and park.
    async fn turn_body(
        &self,
        turn: u64,
        signal: &AbortSignal,
        turn_ends: &mut Option<Value>,
    ) -> Result<bool, JsError> {
        let mut target = Target::NextTurn;
        loop {
            throw_if_aborted(signal)?;
            let (_, opened) = self.phase_turn_step();
            let step = opened + 1;
            let (messages, assembly) = match self.pre_step(target, turn, step, signal).await? {
                (Decision::Reject, _) => {
                    *turn_ends = Some(TurnEnd::Blocked.to_json());
                    return Ok(false);
                }
                (Decision::Enter(messages), assembly) => (messages, assembly),
            };
            if turn_ends.is_some() && messages.is_empty() {
                break;
            }
            if opened == 0 && messages.is_empty() {
                *turn_ends = Some(TurnEnd::Completed.to_json());
                return Ok(false);
            }
            throw_if_aborted(signal)?;
            let context = &self.0.context;
            let steps = context.steps_opened.get() + 1;
            if steps > context.limits.max_steps {
                return Err(context.reach(format!("max_steps = {}", context.limits.max_steps)));
            }
            context.steps_opened.set(steps);
            self.append(
                "step/start",
                json!({"turn": turn, "step": step}),
                SurfaceMeta::default(),
            )?;
            self.set_phase_step(step);
            let stepped = async {
                for message in messages {
                    self.append("user/message", message, SurfaceMeta::append())?;
                }
                self.step(&assembly, turn, step, signal).await
            }
            .await;
            self.append(
                "step/end",
                json!({"turn": turn, "step": step}),
                SurfaceMeta::default(),
            )?;
            let step_end = stepped?;
            let sticky_max_tokens = turn_ends
                .as_ref()
                .is_some_and(|t| t["kind"] == "max-tokens");
            if !sticky_max_tokens {
                *turn_ends = step_end.map(|end| end.to_json());
            }
            throw_if_aborted(signal)?;
            if turn_ends.is_some() && self.0.inbox.next_step().is_empty() {
                let payload = TurnStoppingPayload {
                    turn,
                    signal: signal.clone(),
                };
                listeners::run_serial(&self.0.listeners.turn_stopping, payload).await?;
                throw_if_aborted(signal)?;
            }
            if turn_ends.is_some() && self.0.inbox.next_step().is_empty() {
                break;
            }
            target = Target::NextStep;
        }
        Ok(true)
    }

    fn assemble_context(&self, signal: &AbortSignal) -> AssembleContext {
        AssembleContext {
            scope: Some(self.0.scope.clone()),
            agent: Some(AgentFacts {
                provider: self.0.options.provider.clone(),
                model: self.0.options.model.clone(),
                cwd: self.0.session.cwd(),
            }),
            signal: Some(signal.clone()),
            extra: Map::new(),
        }
    }

    /// The proposed-step boundary (05 §3).
    async fn pre_step(
        &self,
        target: Target,
        turn: u64,
        step: u64,
        signal: &AbortSignal,
    ) -> Result<(Decision, Assembly), JsError> {
        let claimed = self.0.inbox.claim(target)?;
        let assembly = self
            .0
            .context
            .registry
            .assemble(self.assemble_context(signal))
            .await?;
        throw_if_aborted(signal)?;
        let sections = render_context_sections(&assembly)?;
        let snapshot = join_context_sections(&sections);
        let candidate = self
            .0
            .projection
            .project(&snapshot, &sections)
            .map(|(content, source)| user_message(&self.0.context.ids, content, source));
        let default_messages: Vec<Value> = claimed.iter().cloned().chain(candidate).collect();
        let payload = PreStepPayload {
            messages: claimed,
            turn,
            step,
            signal: signal.clone(),
        };
        let default: Rc<dyn Fn() -> LocalFuture<Result<Decision, JsError>>> = Rc::new(move || {
            let messages = default_messages.clone();
            Box::pin(async move { Ok(Decision::Enter(messages)) })
        });
        let decision = self.0.listeners.pre_step.dispatch(payload, default).await?;
        throw_if_aborted(signal)?;
        Ok((decision, assembly))
    }

    /// One step: render once, then attempts until success or give-up (05 §4).
    async fn step(
        &self,
        assembly: &Assembly,
        turn: u64,
        step: u64,
        signal: &AbortSignal,
    ) -> Result<Option<TurnEnd>, JsError> {
        throw_if_aborted(signal)?;
        let sections = render_prompt_sections(assembly)?;
        let system = join_prompt_sections(&sections);
        self.record_layout(&system, &sections);
        // A schema whose description or parameters is `undefined` cannot be
        // logged: the session's append accepts only lossless JSON, and the
        // header carries the schemas as assembled.
        let tools_are_json = assembly
            .tools
            .iter()
            .all(|tool| tool.description.is_some() && tool.parameters.is_some());
        let tools: Vec<Value> = assembly
            .tools
            .iter()
            .map(|tool| {
                let mut object = Map::new();
                object.insert("name".into(), json!(tool.name));
                if let Some(description) = &tool.description {
                    object.insert("description".into(), json!(description));
                }
                if let Some(parameters) = &tool.parameters {
                    object.insert("parameters".into(), parameters.clone());
                }
                Value::Object(object)
            })
            .collect();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let context = &self.0.context;
            if attempts > context.limits.max_attempts_per_step {
                return Err(context.reach(format!(
                    "max_attempts_per_step = {}",
                    context.limits.max_attempts_per_step
                )));
            }
            let messages = self.0.session.derive_messages();
            let (request, route) = self
                .build_request(
                    turn,
                    step,
                    (&tools, tools_are_json),
                    &system,
                    messages,
                    signal,
                )
                .await?;
            // Shared with the wire stream, not copied (it holds every message).
            let request = Rc::new(request);
            let mut assembler = BlockAssembler::default();
            let mut chunk_seqs = Vec::new();
            let streamed = self
                .stream(
                    &request,
                    route,
                    signal,
                    &mut assembler,
                    &mut chunk_seqs,
                    turn,
                    step,
                )
                .await;
            if let Err(error) = streamed {
                if signal.is_aborted() {
                    let content = assembler.interrupted_blocks();
                    if !content.is_empty() {
                        let message = self.assistant_message(content, &request);
                        self.log_assistant_message(
                            turn, step, message, true, &assembler, chunk_seqs,
                        )?;
                    }
                }
                return Err(error);
            }
            let finish = assembler.finish();
            let kind = finish["kind"].as_str().unwrap_or_default().to_string();
            if kind == "error" || kind == "aborted" {
                let failure = finish["failure"].clone();
                let payload = RequestErrorPayload {
                    turn,
                    step,
                    provider: request["provider"].as_str().unwrap_or_default().to_string(),
                    failure: failure.clone(),
                    signal: signal.clone(),
                };
                let default: Rc<dyn Fn() -> LocalFuture<Result<RequestErrorAction, JsError>>> =
                    Rc::new(|| Box::pin(async { Ok(RequestErrorAction::GiveUp) }));
                let action = self
                    .0
                    .listeners
                    .request_error
                    .dispatch(payload, default)
                    .await?;
                throw_if_aborted(signal)?;
                if action == RequestErrorAction::Retry {
                    continue;
                }
                return Err(JsError::llm(failure));
            }
            let message = self.assistant_message(assembler.blocks(), &request);
            self.log_assistant_message(turn, step, message.clone(), false, &assembler, chunk_seqs)?;
            if kind == "max-tokens" {
                return Ok(Some(TurnEnd::MaxTokens));
            }
            let calls: Vec<Value> = message["content"]
                .as_array()
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter(|b| b["type"] == "tool-call")
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            if calls.is_empty() {
                return Ok(Some(TurnEnd::Completed));
            }
            let concluded = self.run_tools(turn, step, &calls, signal).await?;
            return Ok(if concluded {
                Some(TurnEnd::Completed)
            } else {
                None
            });
        }
    }

    /// Log one `assistant/chunk` and feed it to the assembler.
    fn log_chunk(
        &self,
        turn: u64,
        step: u64,
        chunk: Value,
        assembler: &mut BlockAssembler,
        chunk_seqs: &mut Vec<u64>,
    ) -> Result<(), JsError> {
        let event = self.append(
            "assistant/chunk",
            object([
                ("turn", json!(turn)),
                ("step", json!(step)),
                ("chunk", chunk),
            ]),
            SurfaceMeta::default(),
        )?;
        chunk_seqs.push(event.seq);
        assembler.push(&event.data["chunk"]);
        Ok(())
    }

    /// `assistant/message {turn, step, message, interrupted?, usage?}`, citing
    /// the attempt's chunks.
    fn log_assistant_message(
        &self,
        turn: u64,
        step: u64,
        message: Value,
        interrupted: bool,
        assembler: &BlockAssembler,
        chunk_seqs: Vec<u64>,
    ) -> Result<(), JsError> {
        let mut data = Map::new();
        data.insert("turn".into(), json!(turn));
        data.insert("step".into(), json!(step));
        data.insert("message".into(), message);
        if interrupted {
            data.insert("interrupted".into(), json!(true));
        }
        if let Some(usage) = assembler.usage() {
            data.insert("usage".into(), usage.clone());
        }
        self.append(
            "assistant/message",
            Value::Object(data),
            SurfaceMeta::append_citing(chunk_seqs),
        )?;
        Ok(())
    }

    fn assistant_message(&self, content: Vec<Value>, request: &Value) -> Value {
        object([
            ("role", json!("assistant")),
            ("content", Value::Array(content)),
            (
                "source",
                json!({"kind": "model", "provider": request["provider"], "model": request["model"]}),
            ),
            ("id", json!(self.0.context.ids.next("msg"))),
        ])
    }

    #[allow(clippy::too_many_arguments)]
    async fn stream(
        &self,
        request: &Rc<Value>,
        route: Option<AdapterRoute>,
        signal: &AbortSignal,
        assembler: &mut BlockAssembler,
        chunk_seqs: &mut Vec<u64>,
        turn: u64,
        step: u64,
    ) -> Result<(), JsError> {
        let mut chunks = match route {
            None => {
                // No adapter and no `llm/stream` middleware: dispatch fails terminally.
                let provider = request["provider"].as_str().unwrap_or_default();
                let failure = json!({"message": format!("no adapter registered for provider \"{provider}\""), "code": "NO_ADAPTER"});
                let chunk =
                    json!({"type": "finish", "reason": {"kind": "error", "failure": failure}});
                throw_if_aborted(signal)?;
                self.log_chunk(turn, step, chunk, assembler, chunk_seqs)?;
                return throw_if_aborted(signal);
            }
            Some(AdapterRoute::Wire(wire)) => {
                let probe = signal.clone();
                Chunks::Wire(ChunkStream::new(
                    wire.connection,
                    Rc::clone(request),
                    Box::new(move || probe.is_aborted()),
                ))
            }
            Some(AdapterRoute::Scripted(scripted)) => {
                self.0.context.llm_calls.borrow_mut().push(LlmCall {
                    session: self.0.session.id(),
                    at: self.0.session.len(),
                    request: Value::clone(request),
                });
                Chunks::Scripted(scripted.stream(signal.clone()))
            }
        };
        throw_if_aborted(signal)?;
        loop {
            let next = tokio::select! {
                biased;
                _ = signal.aborted() => return Err(JsError::abort()),
                next = chunks.next() => next,
            };
            let Some(chunk) = next else { break };
            throw_if_aborted(signal)?;
            self.log_chunk(turn, step, chunk, assembler, chunk_seqs)?;
        }
        throw_if_aborted(signal)
    }

    /// Tool execution with the scripted runtime: serial, each call logged as
    /// `tool/call`, run (taking its scripted virtual time), then logged as
    /// `tool/result`. Once the signal aborts, no further call starts: each
    /// gets a synthetic call and `aborted before dispatch` result (08 C5),
    /// while a call already started still commits its result.
    async fn run_tools(
        &self,
        turn: u64,
        step: u64,
        calls: &[Value],
        signal: &AbortSignal,
    ) -> Result<bool, JsError> {
        let mut concluded = false;
        for call in calls {
            let id = call["id"].as_str().unwrap_or_default();
            let name = call["name"].as_str().unwrap_or_default();
            let arguments = call["arguments"].as_str().unwrap_or_default();
            let call_event = self.append(
                "tool/call",
                json!({"turn": turn, "step": step, "callId": id, "name": name, "arguments": arguments}),
                SurfaceMeta::default(),
            )?;
            // dsh-tools: a call that never started is "aborted before
            // dispatch"; a started call whose signal aborted while it ran
            // ends "aborted", keeping only its additional contexts.
            let (outcome, abort_code) = if signal.is_aborted() {
                let skipped = ToolOutcome {
                    text: "Error: tool call aborted before dispatch".into(),
                    is_error: true,
                    ..ToolOutcome::default()
                };
                (skipped, Some("ABORTED_BEFORE_DISPATCH"))
            } else {
                let outcome = (self.0.context.tools)(ToolCall {
                    name: name.to_string(),
                    arguments: arguments.to_string(),
                    call_id: id.to_string(),
                    signal: signal.clone(),
                    agent: self.downgrade(),
                })
                .await;
                if signal.is_aborted() {
                    let aborted = ToolOutcome {
                        text: "Error: tool call aborted".into(),
                        is_error: true,
                        additional_contexts: outcome.additional_contexts,
                        ..ToolOutcome::default()
                    };
                    (aborted, Some("ABORTED"))
                } else {
                    (outcome, None)
                }
            };
            let message = json!({
                "source": {"kind": "tool", "callId": id},
                "content": [{"type": "tool-result", "toolCallId": id, "content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}],
                "role": "user",
                "id": self.0.context.ids.next("msg"),
            });
            let mut data = Map::new();
            data.insert("turn".into(), json!(turn));
            data.insert("step".into(), json!(step));
            data.insert("message".into(), message);
            if let Some(code) = abort_code {
                data.insert("error".into(), json!({"name": "AbortError", "code": code}));
            } else if let Some(info) = &outcome.error_info {
                data.insert("error".into(), info.clone());
            }
            self.append(
                "tool/result",
                Value::Object(data),
                SurfaceMeta::append_citing(vec![call_event.seq]),
            )?;
            for text in &outcome.additional_contexts {
                let context = user_message(
                    &self.0.context.ids,
                    json!([{"type": "text", "text": text}]),
                    json!({"kind": "tool", "callId": id}),
                );
                let end = self.0.inbox.next_step().len();
                self.0
                    .inbox
                    .splice(Target::NextStep, end, 0, vec![context])?;
            }
            concluded |= outcome.concludes_turn;
        }
        Ok(concluded)
    }

    /// `buildRequest` (07 §1), once per attempt.
    async fn build_request(
        &self,
        turn: u64,
        step: u64,
        (tools, tools_are_json): (&[Value], bool),
        system: &str,
        messages: Vec<Value>,
        signal: &AbortSignal,
    ) -> Result<(Value, Option<AdapterRoute>), JsError> {
        let session = &self.0.session;
        let persisted = session.request_header();
        let provider = self.0.options.provider.clone().unwrap_or_default();
        let model = self.0.options.model.clone().unwrap_or_default();
        let seed = if self.0.header_logged.get() {
            request_proposal(persisted.as_ref().unwrap_or(&Value::Null))
        } else {
            let mut seed = Map::new();
            seed.insert("provider".into(), json!(provider));
            seed.insert("model".into(), json!(model));
            if let Some(header) = &persisted {
                let config = &header["config"];
                let same_route =
                    config["provider"] == json!(provider) && config["model"] == json!(model);
                let defaulted = header["adapterDefaults"]["reasoningEffort"] == json!(true);
                if same_route
                    && !defaulted
                    && let Some(effort) = config.get("reasoningEffort")
                {
                    seed.insert("reasoningEffort".into(), effort.clone());
                }
            }
            if let Some(max_tokens) = self.0.max_tokens {
                seed.insert("maxTokens".into(), json!(max_tokens));
            }
            Value::Object(seed)
        };
        let default: Rc<dyn Fn() -> LocalFuture<Result<Value, JsError>>> = Rc::new(move || {
            let seed = seed.clone();
            Box::pin(async move { Ok(seed) })
        });
        let payload = RequestPayload {
            turn,
            step,
            signal: signal.clone(),
        };
        let proposed = self.0.listeners.request.dispatch(payload, default).await?;
        throw_if_aborted(signal)?;
        let filled = |key: &str| {
            proposed
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        if !filled("provider") || !filled("model") {
            return Err(JsError::error(format!(
                "agent \"{}\" has no provider/model: set AgentOptions.provider and AgentOptions.model or supply both via the agent/request waterfall",
                self.0.id
            )));
        }
        let provider = proposed["provider"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let route = self.0.context.adapters.borrow().get(&provider).cloned();
        let model = proposed["model"].as_str().unwrap_or_default();
        let info = match &route {
            None => None,
            Some(AdapterRoute::Wire(wire)) => Some(
                wire.models
                    .get(model)
                    .unwrap_or(&wire.default_model)
                    .clone(),
            ),
            Some(AdapterRoute::Scripted(scripted)) => Some(scripted.resolve(model, signal).await?),
        };
        let (config, adapter_defaults, context_window) = match &info {
            None => (proposed.clone(), None, None),
            Some(info) => {
                let prepared = prepare_call(&proposed, info)?;
                (
                    prepared.config,
                    Some(prepared.adapter_defaults),
                    prepared.context_window,
                )
            }
        };
        throw_if_aborted(signal)?;
        let mut header = Map::new();
        header.insert("config".into(), config.clone());
        if let Some(defaults) = adapter_defaults {
            header.insert("adapterDefaults".into(), defaults);
        }
        if !system.is_empty() {
            header.insert("system".into(), json!(system));
        }
        if !tools.is_empty() {
            header.insert("tools".into(), Value::Array(tools.to_vec()));
        }
        let header = canonical_header_owned(header);
        // The request is the canonical header's config, system and tools
        // with the messages; the header itself then moves into the log.
        let mut request = header["config"].as_object().cloned().unwrap_or_default();
        request.insert("messages".into(), Value::Array(messages));
        if let Some(system) = header.get("system") {
            request.insert("system".into(), system.clone());
        }
        if let Some(tools) = header.get("tools") {
            request.insert("tools".into(), tools.clone());
        }
        request.insert("sessionId".into(), json!(session.id()));
        let baseline = session.request_header();
        let changed = baseline.as_ref().is_none_or(|b| !header_equals(b, &header));
        let must_log = !self.0.header_logged.get() || changed;
        if must_log && !tools_are_json {
            return Err(JsError::error(
                "session event \"request/header\" carries non-JSON-serializable data",
            ));
        }
        if !self.0.header_logged.get() {
            let reason = if baseline.is_none() {
                "initial"
            } else {
                "resume"
            };
            self.append(
                "request/header",
                object([("header", header), ("reason", json!(reason))]),
                SurfaceMeta::default(),
            )?;
            self.0.header_logged.set(true);
        } else if changed {
            self.append(
                "request/header",
                object([("header", header), ("reason", json!("change"))]),
                SurfaceMeta::default(),
            )?;
        }
        let mut request_context = Map::new();
        request_context.insert("provider".into(), config["provider"].clone());
        request_context.insert("model".into(), config["model"].clone());
        if let Some(window) = context_window {
            request_context.insert("contextWindow".into(), json!(window));
        }
        let request_context = Value::Object(request_context);
        let previous = session.request_context();
        let differs = previous.as_ref().is_none_or(|p| {
            p.get("provider") != request_context.get("provider")
                || p.get("model") != request_context.get("model")
                || p.get("contextWindow") != request_context.get("contextWindow")
        });
        if differs {
            self.append("request/context", request_context, SurfaceMeta::default())?;
        }
        throw_if_aborted(signal)?;
        Ok((Value::Object(request), route))
    }
}
