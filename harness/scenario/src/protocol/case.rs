//! What an implementation is asked to run: a [`Case`] and its commands.
//!
//! A case is a compiled scenario: defaults resolved, ids assigned, and no
//! expectations. These types are the adapter protocol's API boundary (the
//! committed `docs/adapter-protocol.v1.json` is generated from them); a
//! scenario file's step is a [`Command`] plus its expectation, so files and
//! cases share these shapes without the protocol ever carrying an `expect`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::js_json::JsJson;
pub use super::order::Order;
pub use super::plugins::*;

/// One compiled scenario.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Stable case id: the scenario path relative to the scenario root,
    /// without extension.
    pub id: String,
    /// Contract level.
    pub level: Level,
    /// Plugin config.
    pub config: ConfigSpec,
    /// Commands, run in order, every default id filled in. Top-level scope
    /// bindings come first as `bind`.
    pub commands: Vec<Command>,
    /// Loop level only: the agent's world with every default resolved.
    pub world: Option<LoopWorld>,
}

/// A registration a provider effect or a listener performs while it runs:
/// the registering commands, by the same `do` names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Registration {
    /// `systemPrompt.section(...)`.
    Section(SectionCommand),
    /// `systemPrompt.context(...)`.
    Context(ContextCommand),
    /// `systemPrompt.suppressRuntimeContext()`.
    Suppress(SuppressCommand),
    /// `systemPrompt.tools(provider)`.
    Tools(ToolsCommand),
    /// `systemPrompt.variable(name, provider)`.
    Variable(VariableCommand),
}

/// The loop-level world of a case: everything with its defaults resolved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopWorld {
    /// The agent under test.
    pub agent: AgentSpec,
    /// More agents, each with its own session, created after `agent` in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentSpec>,
    /// The mock provider's script.
    pub provider: mock_provider::Script,
    /// The DeepSeek adapter registration.
    pub adapter: AdapterSpec,
    /// Simulated time and network.
    pub simulation: SimulationSpec,
    /// Scripted tool results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultSpec>,
    /// Context plugins.
    #[serde(default)]
    pub plugins: PluginsSpec,
    /// Scripted routes at the LLM-adapter level, below the wire.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteSpec>,
}

/// A scripted LLM adapter registered for one provider route
/// (`llm.registerAdapter([provider], adapter)`), as upstream's own loop
/// tests script the model: each `stream()` call consumes the next response;
/// `resolveModel()` answers from `model`/`models`. No HTTP is involved.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The provider route, e.g. `mock`.
    pub provider: String,
    /// Registered before the agent is created (default true); `false` waits
    /// for a `register_route` step.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub registered: bool,
    /// How `resolveModel(provider, model)` answers for a model not in
    /// `models` (default: `returns = {}`, no metadata).
    #[serde(default, skip_serializing_if = "ModelResolution::is_default")]
    pub model: ModelResolution,
    /// Per model id, how `resolveModel` answers.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ModelResolution>,
    /// One per `stream()` call, in order; a call after the last raises
    /// `Error: scripted route "<provider>" has no response for call <n>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<RouteResponse>,
}

fn is_true(value: &bool) -> bool {
    *value
}

/// What `resolveModel` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelResolution {
    /// Resolve to this metadata, in upstream's shape (`name`, `description`,
    /// `context = {contextWindow}`, `defaultMaxTokens`, `reasoning =
    /// {efforts = [{id, name}], defaultEffort}`, `inputModalities`);
    /// `provider`, `id` and `name` default to the route, the model and the
    /// model. Upstream validates it; invalid metadata fails the call.
    Returns(serde_json::Map<String, Value>),
    /// Reject with this error.
    Rejects(ScriptedError),
    /// Never settle until the lookup's signal aborts, then reject with its reason.
    Blocks,
}

impl Default for ModelResolution {
    fn default() -> Self {
        ModelResolution::Returns(serde_json::Map::new())
    }
}

impl ModelResolution {
    fn is_default(&self) -> bool {
        *self == ModelResolution::default()
    }
}

/// An error a scripted route raises: an `LlmError` when `code` is given
/// (with its optional facts), else a plain `Error`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// The message.
    pub message: String,
    /// `LlmError` code (`RATE_LIMIT`, `SERVER`, ...); absent: a plain `Error`.
    pub code: Option<String>,
    /// `LlmError` `status` (100–599).
    pub status: Option<u16>,
    /// `LlmError` `providerRetryAfterMs`.
    pub provider_retry_after_ms: Option<u64>,
    /// `LlmError` `requestId`.
    pub request_id: Option<String>,
}

/// One scripted `stream()` call: optional delay, the parts it yields, then
/// how it ends. With none of `error`, `throws` and `hangs` the iterator
/// simply completes. Either `parts` or the shorthands (`reasoning`, `text`,
/// `tool_calls`, `usage`, `finish`) may be given, not both.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteResponse {
    /// Virtual time before the first part.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Adapter-level stream parts, yielded as given (`{type = "block-start",
    /// index, blockType}`, `text-delta`, `reasoning-delta`, `tool-call-delta`,
    /// `block-end`, `usage`, `finish`), and `{sleep_ms = N}` pauses between them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Value>,
    /// Shorthand: a reasoning block streamed as these deltas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
    /// Shorthand: a text block streamed as these deltas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    /// Shorthand: tool-call blocks, each streamed as argument fragments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Shorthand: a `usage` part with this object (`{inputTokens, outputTokens, ...}`).
    pub usage: Option<serde_json::Map<String, Value>>,
    /// Shorthand: the `finish` part's reason (default `{kind = "tool-calls"}`
    /// with tool calls, else `{kind = "stop"}`); a string is short for `{kind}`.
    pub finish: Option<Value>,
    /// After the parts, throw this error.
    pub error: Option<ScriptedError>,
    /// After the parts, never yield again until the call's signal aborts,
    /// then throw its reason.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hangs: bool,
}

/// One shorthand tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Argument fragments, one `tool-call-delta` each (default one empty fragment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
}

impl RouteResponse {
    /// Whether any shorthand field is set.
    pub fn uses_shorthand(&self) -> bool {
        !self.reasoning.is_empty()
            || !self.text.is_empty()
            || !self.tool_calls.is_empty()
            || self.usage.is_some()
            || self.finish.is_some()
    }

    /// The parts this response yields: `parts` as given, or the shorthands
    /// expanded into upstream's vocabulary (blocks in the order reasoning,
    /// text, tool calls; then usage; then finish). Pauses stay in place.
    pub fn expanded_parts(&self) -> Vec<Value> {
        if !self.uses_shorthand() {
            return self.parts.clone();
        }
        let mut parts = Vec::new();
        let mut index = 0u64;
        for (kind, deltas) in [("reasoning", &self.reasoning), ("text", &self.text)] {
            if deltas.is_empty() {
                continue;
            }
            parts.push(
                serde_json::json!({"type": "block-start", "index": index, "blockType": kind}),
            );
            for delta in deltas {
                parts.push(serde_json::json!({"type": format!("{kind}-delta"), "index": index, "text": delta}));
            }
            parts.push(serde_json::json!({"type": "block-end", "index": index, "block": {"type": kind, "text": deltas.concat()}}));
            index += 1;
        }
        for call in &self.tool_calls {
            parts.push(serde_json::json!({"type": "block-start", "index": index, "blockType": "tool-call"}));
            let fragments: Vec<&str> = if call.arguments.is_empty() {
                vec![""]
            } else {
                call.arguments.iter().map(String::as_str).collect()
            };
            for (position, fragment) in fragments.iter().enumerate() {
                let mut delta =
                    serde_json::json!({"type": "tool-call-delta", "index": index, "id": call.id});
                if position == 0 {
                    delta["name"] = Value::String(call.name.clone());
                }
                delta["argumentsDelta"] = Value::String((*fragment).to_string());
                parts.push(delta);
            }
            parts.push(serde_json::json!({"type": "block-end", "index": index, "block": {"type": "tool-call", "id": call.id, "name": call.name, "arguments": call.arguments.concat()}}));
            index += 1;
        }
        if let Some(usage) = &self.usage {
            parts.push(serde_json::json!({"type": "usage", "usage": usage}));
        }
        let reason = match &self.finish {
            Some(Value::String(kind)) => serde_json::json!({"kind": kind}),
            Some(reason) => reason.clone(),
            None if !self.tool_calls.is_empty() => serde_json::json!({"kind": "tool-calls"}),
            None => serde_json::json!({"kind": "stop"}),
        };
        parts.push(serde_json::json!({"type": "finish", "reason": reason}));
        parts
    }
}

/// The agent: `AgentOptions` and its session. Option and session fields
/// hold JavaScript values ([`JsJson`]), so a scenario can state what an
/// implementation must refuse (a negative, fractional or NaN `maxTokens`, a
/// relative `cwd`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Agent id; also the name of its scope (`scope = "<id>"` registers on it).
    #[serde(default = "default_agent_id")]
    pub id: String,
    /// `AgentOptions.provider`: a string, or `{ "$js" = "undefined" }` for
    /// none; absent = `deepseek-official`, the DeepSeek route.
    #[serde(default = "default_provider")]
    pub provider: JsJson,
    /// `AgentOptions.model`: a string or undefined; absent = `deepseek-v4-flash`.
    #[serde(default = "default_model")]
    pub model: JsJson,
    /// `AgentOptions.maxTokens`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub max_tokens: JsJson,
    /// Session `meta.cwd`, any value; absent = `/work`.
    #[serde(default = "default_cwd")]
    pub cwd: JsJson,
    /// Session `meta.parentSession`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub parent_session: JsJson,
    /// Session `meta.seedLength`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub seed_length: JsJson,
    /// Session `meta.origin`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub origin: JsJson,
    /// Session `meta.delegationDepth`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub delegation_depth: JsJson,
    /// Session `meta.agentPreset`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub agent_preset: JsJson,
    /// The session's seed: its initial events, any values, checked as
    /// `createAgent({seed})` checks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Vec<JsJson>>,
}

fn default_agent_id() -> String {
    "agent".into()
}

fn default_provider() -> JsJson {
    JsJson(Value::String("deepseek-official".into()))
}

fn default_model() -> JsJson {
    JsJson(Value::String("deepseek-v4-flash".into()))
}

fn default_cwd() -> JsJson {
    JsJson(Value::String("/work".into()))
}

impl Default for AgentSpec {
    fn default() -> Self {
        AgentSpec {
            id: default_agent_id(),
            provider: default_provider(),
            model: default_model(),
            max_tokens: JsJson::undefined(),
            cwd: default_cwd(),
            parent_session: JsJson::undefined(),
            seed_length: JsJson::undefined(),
            origin: JsJson::undefined(),
            delegation_depth: JsJson::undefined(),
            agent_preset: JsJson::undefined(),
            seed: None,
        }
    }
}

/// The DeepSeek adapter registration (spec 09 W5).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterSpec {
    /// Whether the route is registered at all (false: `NO_ADAPTER`).
    #[serde(default = "yes")]
    pub registered: bool,
    /// The provider route name.
    #[serde(default = "default_route")]
    pub provider: String,
    /// Catalog models; others use the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelSpec>,
    /// Context window of models not in the catalog (default 1000000).
    pub default_context_window: Option<u64>,
    /// Output cap of models not in the catalog (default 256000).
    pub max_tokens: Option<u64>,
    /// Deployment default effort: `off`, `low`, `high` (default) or `max`.
    pub reasoning_effort: Option<String>,
    /// Deployment thinking: `enabled` or `disabled`.
    pub thinking: Option<String>,
    /// Idle watchdog between stream reads (default 300000).
    pub stream_idle_timeout_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

fn default_route() -> String {
    "deepseek-official".into()
}

impl Default for AdapterSpec {
    fn default() -> Self {
        AdapterSpec {
            registered: true,
            provider: default_route(),
            models: Vec::new(),
            default_context_window: None,
            max_tokens: None,
            reasoning_effort: None,
            thinking: None,
            stream_idle_timeout_ms: None,
        }
    }
}

/// One catalog model.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Model id.
    pub id: String,
    /// Its context window.
    pub context_window: Option<u64>,
    /// Its output cap.
    pub max_tokens: Option<u64>,
}

/// Simulated time and network (turmoil).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// The seed of the simulated network.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// One-way message latency.
    #[serde(default = "default_latency_ms")]
    pub latency_ms: u64,
    /// Epoch milliseconds at the start (default 1767225600000, 2026-01-01T00:00:00Z).
    #[serde(default = "default_start_ms")]
    pub start_ms: u64,
    /// Virtual-time budget; a run still busy after it is an error.
    #[serde(default = "default_budget_ms")]
    pub budget_ms: u64,
}

fn default_seed() -> u64 {
    1
}

fn default_latency_ms() -> u64 {
    1
}

fn default_start_ms() -> u64 {
    1_767_225_600_000
}

fn default_budget_ms() -> u64 {
    3_600_000
}

impl Default for SimulationSpec {
    fn default() -> Self {
        SimulationSpec {
            seed: default_seed(),
            latency_ms: default_latency_ms(),
            start_ms: default_start_ms(),
            budget_ms: default_budget_ms(),
        }
    }
}

/// A scripted tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResultSpec {
    /// Tool name the result answers.
    pub name: String,
    /// Result text.
    #[serde(default)]
    pub text: String,
    /// `isError`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Context messages spliced into the next-step inbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_contexts: Vec<String>,
    /// `concludesTurn`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concludes_turn: bool,
    /// Virtual time the call takes (a cancel can land while it runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// What the tool body does after `delay_ms`, in order, before it returns
    /// its result: act ops (a `throw` makes the call fail as the tool
    /// runtime renders a failure), `wait_for_abort`, and prompt registrations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<ToolOp>,
}

/// An op of a scripted tool body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolOp {
    /// Wait until the call's signal aborts.
    WaitForAbort,
    /// Register a prompt entry (on its `scope`, global by default).
    Register(Registration),
    /// Dispose a registration by id.
    Dispose(String),
    /// Act or observe (record: `call_id`, `arguments`, `aborted`, `last_event`).
    #[serde(untagged)]
    Act(ActOp),
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The contract level a scenario exercises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Registry, `assemble()`, rendering and tool order (spec 01–04).
    #[default]
    Assembly,
    /// The agent loop around the assembly: turns, steps, requests and the
    /// session log (spec 05–10).
    Loop,
}

/// `SystemPrompt` config (spec 01 §1). Absent keys take upstream defaults.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    /// Register `harness:identity` (default true).
    pub include_harness_identity: Option<bool>,
    /// `false` registers a global runtime-context suppressor (default true).
    pub include_runtime_context: Option<bool>,
    /// Text of `deployment:persona` (default empty).
    pub persona: Option<String>,
    /// Explicit tool order, with the `<unlisted-tools>` rest entry.
    pub tool_order: Option<Vec<String>>,
}

/// One command of a case. `do` selects the kind. In a scenario file each
/// step is a command plus, for most kinds, its `expect`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Command {
    /// `systemPrompt.section(...)`.
    Section(SectionCommand),
    /// `systemPrompt.context(...)`.
    Context(ContextCommand),
    /// `systemPrompt.suppressRuntimeContext()`.
    Suppress(SuppressCommand),
    /// `systemPrompt.tools(provider)`.
    Tools(ToolsCommand),
    /// `systemPrompt.variable(name, provider)`.
    Variable(VariableCommand),
    /// `ctx.on('system-prompt/assemble', listener, options)`.
    Listen(ListenCommand),
    /// Call a registration's disposer.
    Dispose(DisposeCommand),
    /// Dispose a scope (`createScope(...).dispose()`): every registration
    /// and listener made on it goes.
    DisposeScope(ScopeCommand),
    /// A plugin that owns a group of global registrations (`ctx.plugin`):
    /// they are made in its context, in order, and disposing `id` disposes
    /// the plugin, so all of them go in one step.
    Owner(OwnerCommand),
    /// `ctx.on('system-prompt/change', listener)`: journals `change <id>`
    /// on every event and throws on the calls `throw_on` names.
    OnChange(ChangeListenerCommand),
    /// Bind a scope's parent at this point.
    Bind(BindCommand),
    /// `assemble({scope})`, then render the prompt and the context snapshot.
    Assemble(AssembleCommand),
    /// Loop: `agent.followup(message)`.
    Followup(MessageCommand),
    /// Loop: `agent.steer(message)`.
    Steer(MessageCommand),
    /// Loop: `agent.inject(message)`.
    Inject(MessageCommand),
    /// Loop: `agent.cancel(reason, {keepInbox})`.
    Cancel(CancelCommand),
    /// Loop: let virtual time pass. While the agent is idle the clock jumps
    /// (nothing is in flight); otherwise the simulation runs through it.
    Wait(WaitCommand),

    /// Loop: wait until the agent is idle.
    WaitIdle(WaitIdleCommand),
    /// Loop: append a compaction summary replacing a surface range.
    Compact(CompactCommand),
    /// Loop: a new agent over a session rebuilt from this log, as a new
    /// process would build it: waits for idle, drops the old agent with its
    /// scoped registrations and listeners, keeps global registrations.
    Resume(ResumeCommand),
    /// Loop: dispose the agent (cancel `disposed`, wait, drop its scope).
    DisposeAgent(DisposeAgentCommand),
    /// Loop: an `agent/pre-step` listener.
    OnPreStep(LoopListenerCommand<PreStepOp>),
    /// Loop: an `agent/request` listener.
    OnRequest(LoopListenerCommand<RequestOp>),
    /// Loop: an `agent/request-error` listener.
    OnRequestError(LoopListenerCommand<RequestErrorOp>),
    /// Loop: an `agent/turn-stopping` listener (serial; it only acts).
    OnTurnStopping(LoopListenerCommand<ActOp>),
    /// Loop: an `agent/status` listener on the agent (a contained event:
    /// a throw is logged as a warning).
    OnStatus(LoopListenerCommand<ActOp>),
    /// Loop: a `session/event` observer on the agent's session (contained
    /// like `on_status`; runs after each append).
    OnSessionEvent(LoopListenerCommand<ActOp>),
    /// Loop: act on a context plugin's inputs (spec 10).
    Plugin(PluginAction),
    /// Loop: `session.append(type, data, {surfaceOp, sourceEventSeqs})` on an
    /// agent's session, with any values.
    Append(AppendCommand),
    /// Loop: read an agent's session: its folded request header and
    /// context, surface nodes and derived messages (the step's `value`).
    ReadSession(ReadSessionCommand),
    /// Loop: fire an agent's `agent/pre-step` waterfall directly, without the
    /// loop, with these messages; the decision is the step's `value`
    /// (`{kind = "enter", messages}` or `{kind = "reject"}`).
    FirePreStep(FirePreStepCommand),
    /// Loop: move the wall clock (`Date.now()`, event times) by `ms`,
    /// forward or backward, while timers keep their course.
    ClockJump(ClockJumpCommand),
    /// `canonicalHeader(header)` (dsh-session), as the step's `value`.
    CanonicalHeader(CanonicalHeaderCommand),
    /// `headerEquals(a, b)` (dsh-session), as the step's `value`.
    HeaderEquals(HeaderEqualsCommand),
    /// Loop: `llm.registerAdapter([provider], adapter)` for the world's
    /// scripted route of that name (its script goes on where it stopped).
    RegisterRoute(RouteCommand),
    /// Loop: dispose the route's current registration (a no-op when it has none).
    UnregisterRoute(RouteCommand),
}

/// Names a scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeCommand {
    /// The scope's name.
    pub scope: String,
}

/// A plugin owning a group of registrations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerCommand {
    /// The owner's id (for `dispose`).
    pub id: String,
    /// The global registrations it makes, in order.
    pub registrations: Vec<Registration>,
}

/// A scripted `system-prompt/change` listener.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeListenerCommand {
    /// Listener id (for `dispose` and the journal).
    pub id: String,
    /// Throw `new Error(throws)` on these invocations (1-based); default none.
    pub throw_on: Option<Vec<u32>>,
    /// The message it throws.
    #[serde(default = "default_change_error")]
    pub throws: String,
}

fn default_change_error() -> String {
    "change listener failed".into()
}

/// A direct append to an agent's session.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendCommand {
    /// The agent whose session (default: the first agent).
    pub agent: Option<String>,
    /// The event type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event data, any value.
    pub data: JsJson,
    /// `surfaceOp`, any value (default: none).
    pub surface_op: Option<JsJson>,
    /// `sourceEventSeqs`, any value (default: none).
    pub source_event_seqs: Option<JsJson>,
}

/// Read an agent's session.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSessionCommand {
    /// The agent whose session (default: the first agent).
    pub agent: Option<String>,
}

/// Fire the pre-step waterfall.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FirePreStepCommand {
    /// The agent (default: the first agent).
    pub agent: Option<String>,
    /// The payload's turn (default 1).
    #[serde(default = "one")]
    pub turn: u64,
    /// The payload's step (default 1).
    #[serde(default = "one")]
    pub step: u64,
    /// The claimed messages, as given (user messages); the default decision
    /// enters with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Value>,
}

fn one() -> u64 {
    1
}

/// Move the wall clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockJumpCommand {
    /// Milliseconds to add (negative: backward).
    pub ms: i64,
}

/// Canonicalize a request header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanonicalHeaderCommand {
    /// The header, `{config, adapterDefaults?, system?, tools?}`.
    pub header: JsJson,
}

/// Compare two request headers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeaderEqualsCommand {
    /// One header.
    pub a: JsJson,
    /// The other.
    pub b: JsJson,
}

/// Names one of the world's scripted routes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteCommand {
    /// The route's provider name.
    pub provider: String,
}

/// A message sent to the agent.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,
    /// Text of a user prompt: its content is one text block.
    pub text: Option<String>,
    /// The message's content blocks as given (several text blocks, tool
    /// results, ...), instead of `text`.
    pub content: Option<Vec<Value>>,
    /// The message's `source` (default `{kind = "user"}`).
    pub source: Option<Value>,
}

impl MessageCommand {
    /// The message's content blocks.
    pub fn blocks(&self) -> Value {
        match (&self.content, &self.text) {
            (Some(content), _) => Value::Array(content.clone()),
            (None, text) => {
                serde_json::json!([{"type": "text", "text": text.clone().unwrap_or_default()}])
            }
        }
    }
}

/// Cancel the agent.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,
    /// The abort cause (default `{kind = "user"}`).
    pub reason: Option<Value>,
    /// `{keepInbox: true}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_inbox: bool,
}

/// Let virtual time pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitCommand {
    /// Milliseconds.
    pub ms: u64,
}

/// Wait for idle: the addressed agent, or every agent when none is named.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitIdleCommand {
    /// The agent to wait for (default: every agent).
    pub agent: Option<String>,
}

/// Compact the surface.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,
    /// Summary text.
    pub text: String,
    /// First replaced surface node (seq); default the first node.
    pub start: Option<u64>,
    /// Last replaced surface node (seq); default the last node.
    pub end: Option<u64>,
}

/// Resume: the same agent id over its log, optionally with other options.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,
    /// New `AgentOptions.provider` (default: as before).
    pub provider: Option<JsJson>,
    /// New `AgentOptions.model` (default: as before).
    pub model: Option<JsJson>,
    /// New `AgentOptions.maxTokens` (default: as before).
    pub max_tokens: Option<JsJson>,
}

/// Dispose the agent.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisposeAgentCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,
}

/// A scripted loop listener.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "Op: Deserialize<'de>"))]
pub struct LoopListenerCommand<Op> {
    /// Listener id (for `dispose`).
    pub id: String,
    /// The agent it addresses (default: the world's first, `agent`).
    pub agent: Option<String>,

    /// Register outermost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepend: bool,
    /// Act only on these invocations (1-based); on others just pass through.
    pub calls: Option<Vec<u32>>,
    /// What it does, in order.
    pub ops: Vec<Op>,
}

/// A pre-step listener op. `current` starts as `enter` with the claimed
/// messages (no runtime-context candidate); `next` replaces it with the inner
/// decision. Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PreStepOp {
    /// `current = await next()`.
    Next,
    /// `current = {kind: 'reject'}`.
    Reject,
    /// `current = {kind: 'enter', messages: []}`.
    EnterEmpty,
    /// Remove the runtime-context snapshot message(s) from `current`.
    DropRuntimeContext,
    /// Rewrite the text of the runtime-context message (same source).
    RewriteRuntimeContext(String),
    /// Reverse `current`'s messages.
    Reverse,
    /// Append a user message with this text.
    AppendMessage(String),
    /// Insert a user message with this text first.
    PrependMessage(String),
    /// Wait until the turn's signal aborts, then throw its abort error.
    WaitForAbort,
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

/// An `agent/request` op. `current` starts as `{}`; `next` gives the seed
/// config. Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RequestOp {
    /// `current = await next()`.
    Next,
    /// A new object: `{...current, ...set}`.
    Set(serde_json::Map<String, Value>),
    /// A new object without this key.
    Remove(String),
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

/// An `agent/request-error` op. `current` starts as `undefined` (give up).
/// Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RequestErrorOp {
    /// `current = await next()`.
    Next,
    /// `current = {kind: 'retry'}`.
    Retry,
    /// `current = undefined`.
    GiveUp,
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

/// What any scripted loop listener can do, whatever its event: act on the
/// agent, fail, wait, or record what it received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ActOp {
    /// Wait this many virtual milliseconds (ignoring the signal).
    SleepMs(u64),
    /// `agent.cancel(reason, {keepInbox})` on the listener's agent.
    Cancel(CancelArgs),
    /// Start disposing the listener's agent, without waiting for it.
    DisposeAgent,
    /// `agent.followup(message)`.
    Followup(MessageArg),
    /// `agent.steer(message)`.
    Steer(MessageArg),
    /// `agent.inject(message)`.
    Inject(MessageArg),
    /// Throw: a string throws `new Error(message)`; `{message, code}` an
    /// `LlmError(message, code)`.
    Throw(ThrowArg),
    /// Append one entry to the run's journal: `{listener, call}` plus each
    /// named field of what the listener received, in the order given.
    Record(Vec<RecordField>),
}

/// The arguments of an [`ActOp::Cancel`].
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    /// The abort cause (default `{kind = "user"}`).
    pub reason: Option<Value>,
    /// `{keepInbox: true}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_inbox: bool,
}

/// A message a listener sends: its text, or `{text, source}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageArg {
    /// A user prompt with this text.
    Text(String),
    /// A user message with this text and source (default `{kind = "user"}`).
    Message {
        /// The text.
        text: String,
        /// The message's `source`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<Value>,
    },
}

impl MessageArg {
    /// The text and the source (`{kind: user}` unless given).
    pub fn parts(&self) -> (&str, Value) {
        match self {
            MessageArg::Text(text) => (text, serde_json::json!({"kind": "user"})),
            MessageArg::Message { text, source } => (
                text,
                source
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({"kind": "user"})),
            ),
        }
    }
}

/// What a listener throws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ThrowArg {
    /// `new Error(message)`.
    Message(String),
    /// `new LlmError(message, code)`.
    Coded {
        /// The message.
        message: String,
        /// The `LlmError` code.
        code: String,
    },
}

/// A field a listener records of what it received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordField {
    /// The payload's `turn` (pre-step, request, request-error, turn-stopping).
    Turn,
    /// The payload's `step` (pre-step, request, request-error).
    Step,
    /// The pre-step payload's messages, each `{text, source}` (text blocks joined).
    Messages,
    /// Whether the payload's signal has aborted (the waterfalls and turn-stopping).
    Aborted,
    /// The request-error payload's `provider`.
    Provider,
    /// The request-error payload's `failure`.
    Failure,
    /// The status-change payload's `status`.
    Status,
    /// The session-event observer's event, `{type, seq}`.
    Event,
    /// The `type` of the last event in the agent's session log (`null` when empty).
    LastEvent,
    /// A tool call's id.
    CallId,
    /// A tool call's arguments, parsed.
    Arguments,
}

impl RecordField {
    /// The JSON key the field is recorded under.
    pub fn key(self) -> &'static str {
        match self {
            RecordField::Turn => "turn",
            RecordField::Step => "step",
            RecordField::Messages => "messages",
            RecordField::Aborted => "aborted",
            RecordField::Provider => "provider",
            RecordField::Failure => "failure",
            RecordField::Status => "status",
            RecordField::Event => "event",
            RecordField::LastEvent => "last_event",
            RecordField::CallId => "call_id",
            RecordField::Arguments => "arguments",
        }
    }
}

/// Registers a prompt section.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionCommand {
    /// Handle for `dispose` and journal entries. Default: the name, plus
    /// `@<scope>` when scoped.
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    pub scope: Option<String>,
    /// Section name.
    pub name: String,
    /// Sort key. TOML `nan` and `inf` are allowed, to test validation.
    pub order: Order,
    /// A string is static text; a table is a text provider.
    pub text: TextSpec,
    /// The section's `complete` flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
}

/// Registers a runtime-context entry.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextCommand {
    /// Handle; default the name, plus `@<scope>` when scoped.
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    pub scope: Option<String>,
    /// Context name.
    pub name: String,
    /// Sort key.
    pub order: Order,
    /// A string is static text; a table is a text provider.
    pub text: TextSpec,
}

/// Registers a runtime-context suppressor.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuppressCommand {
    /// Handle; default `suppress#<n>` (n counts suppressor registrations from 1).
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    pub scope: Option<String>,
}

/// Registers a tool provider.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsCommand {
    /// Handle; default `tools#<n>` (n counts tool-provider registrations from 1).
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    pub scope: Option<String>,
    /// The scripted provider.
    pub provider: ProviderSpec<ToolsResultSpec>,
}

/// Registers a prompt variable.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariableCommand {
    /// Handle; default the name, plus `@<scope>` when scoped.
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    pub scope: Option<String>,
    /// Variable name (validated by the registry).
    pub name: String,
    /// The provider. A plain string is short for `{ returns = "..." }`:
    /// variables are always functions, so every form is journaled.
    pub value: TextSpec,
}

/// Registers a waterfall listener on `system-prompt/assemble`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListenCommand {
    /// Listener handle, used in the journal (`listener <id>`) and by `dispose`.
    pub id: String,
    /// Register from this scope's context (a tagged listener); absent = untagged.
    pub scope: Option<String>,
    /// `{global: true}`: receive every assembly regardless of scope.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global: bool,
    /// `{prepend: true}`: run outside the listeners registered before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepend: bool,
    /// What the listener does, in order. Without a `next` op it never calls
    /// `next()`, so inner listeners and the default do not run.
    pub ops: Vec<ListenerOp>,
}

/// Calls a registration's disposer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisposeCommand {
    /// The `id` of an earlier registration or listener.
    pub target: String,
}

/// Binds a scope's parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BindCommand {
    /// The child scope.
    pub scope: String,
    /// Its parent.
    pub parent: String,
}

/// Assembles for a scope and renders the result.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleCommand {
    /// `assemble({scope})`; absent = `assemble({})`.
    pub scope: Option<String>,
    /// More fields of the assemble context, passed to every provider
    /// (e.g. `{ who = "ann" }`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub context: serde_json::Map<String, Value>,
}

/// Section or context text, or a variable's value provider.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TextSpec {
    /// A string. For sections and contexts: static text, never "evaluated".
    /// For variables: a provider returning this string.
    Static(String),
    /// A scripted provider.
    Provider(ProviderSpec<String>),
}

/// A scripted provider. Exactly one of `returns`, `sequence`,
/// `returns_undefined` and `throws` is set. Returned objects are created once
/// at registration and returned by reference on every call, as a JavaScript
/// closure over a constant would.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "T: Deserialize<'de>"))]
pub struct ProviderSpec<T> {
    /// Return this value on every call.
    pub returns: Option<T>,
    /// Return the n-th value on the n-th call; after the last, repeat the
    /// last. An item `{ "$js" = "undefined" }` returns `undefined`.
    pub sequence: Option<Vec<SequenceItem<T>>>,
    /// Return the assemble context's field of this name (what the caller
    /// passed to `assemble`), `undefined` when it is not a string.
    pub context_field: Option<String>,
    /// Return `undefined`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub returns_undefined: bool,
    /// Throw `new Error(throws)`.
    pub throws: Option<String>,
    /// With `throws`: attach `{cause: new Error(cause)}`.
    pub cause: Option<String>,
    /// Side effects run during the call, before it returns or throws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
}

/// One value of a provider's `sequence`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, bound(deserialize = "T: Deserialize<'de>"))]
pub enum SequenceItem<T> {
    /// `undefined` (`{ "$js" = "undefined" }`).
    Undefined(UndefinedMarker),
    /// A value.
    Value(T),
}

impl<T> SequenceItem<T> {
    /// The value, `None` for `undefined`.
    pub fn value(&self) -> Option<&T> {
        match self {
            SequenceItem::Undefined(_) => None,
            SequenceItem::Value(value) => Some(value),
        }
    }
}

/// `{ "$js" = "undefined" }`, and nothing else.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct UndefinedMarker {
    /// Always `undefined`.
    #[serde(rename = "$js")]
    pub js: String,
}

impl<'de> Deserialize<'de> for UndefinedMarker {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = JsJson::deserialize(deserializer)?;
        if value.is_undefined() {
            Ok(UndefinedMarker {
                js: "undefined".into(),
            })
        } else {
            Err(serde::de::Error::custom(
                "not `{ \"$js\" = \"undefined\" }`",
            ))
        }
    }
}

/// A registry side effect performed from inside a provider or listener.
/// Exactly one of `register` and `dispose` is set. A failing registration
/// makes the provider throw that error.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// Only on this call (1-based); absent = on every call.
    pub on_call: Option<u32>,
    /// Register an entry.
    pub register: Option<Box<Registration>>,
    /// Dispose the registration with this id.
    pub dispose: Option<String>,
}

/// What a tool provider returns.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsResultSpec {
    /// Visible schemas.
    #[serde(default)]
    pub schemas: Vec<SchemaSpec>,
    /// Pre-restriction known names; replaces the implicit schema names.
    pub known_names: Option<Vec<String>>,
}

/// A tool schema as a provider returns it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaSpec {
    /// Tool name.
    pub name: String,
    /// Description; absent = `undefined`.
    pub description: Option<String>,
    /// JSON parameters; absent = `undefined`.
    pub parameters: Option<Value>,
    /// Extra fields on the schema object (e.g. `strict = true`); assembly drops them.
    pub extra: Option<serde_json::Map<String, Value>>,
    /// Put `Symbol(<this>)` into `parameters` under the key `unclonable`, so
    /// `structuredClone` fails.
    pub unclonable_symbol: Option<String>,
}

/// One operation of a scripted listener. `current` starts as the argument
/// object; `next` replaces it with what `next()` resolved to; `replace` with a
/// brand-new object. Edits apply to `current`, which the listener returns.
/// Edits naming an absent entry do nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ListenerOp {
    /// `current = await next()`.
    Next,
    /// `throw new Error(message)`.
    Throw(String),
    /// `current = {sections, contexts, tools, variables}`, a new object.
    Replace(ReplaceSpec),
    /// Insert a section at `index` (default: append).
    AddSection(EntrySpec),
    /// Remove every section with this name.
    RemoveSection(String),
    /// Rename the first section with this name.
    RenameSection(RenameSpec),
    /// Set the text of the first section with this name, in place.
    SetSectionText(SetTextSpec),
    /// Reorder sections: listed names first, in list order; the rest after,
    /// in their current order.
    ReorderSections(Vec<String>),
    /// Insert a context at `index` (default: append).
    AddContext(EntrySpec),
    /// Remove every context with this name.
    RemoveContext(String),
    /// Set the text of the first context with this name, in place.
    SetContextText(SetTextSpec),
    /// Append a tool schema (as given; nothing is cloned or ordered).
    AddTool(SchemaSpec),
    /// Remove every tool with this name.
    RemoveTool(String),
    /// Reverse the tool list in place.
    ReverseTools,
    /// Set a value inside the first tool with this name's parameters, in place.
    SetToolParameter(SetToolParameterSpec),
    /// `variables[name] = value`.
    SetVariable(SetVariableSpec),
    /// `variables[name] = undefined`.
    UnsetVariable(String),
    /// `delete variables[name]`.
    DeleteVariable(String),
    /// Set an extra top-level field on the assembly object.
    SetField(SetFieldSpec),
    /// Register an entry.
    Register(Box<Registration>),
    /// Dispose the registration with this id.
    Dispose(String),
    /// Loop level: wait until the assembly's signal aborts, then throw its
    /// abort error (a cooperative blocked assembly).
    WaitForAbort,
    /// Loop level: wait this many virtual milliseconds, ignoring the signal.
    SleepMs(u64),
}

/// A new assembly object built by a listener.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceSpec {
    /// Sections.
    #[serde(default)]
    pub sections: Vec<EntryData>,
    /// Contexts.
    #[serde(default)]
    pub contexts: Vec<EntryData>,
    /// Tools.
    #[serde(default)]
    pub tools: Vec<SchemaSpec>,
    /// Variables, in order.
    #[serde(default)]
    pub variables: IndexMap<String, VariableValue>,
}

/// A section or context a listener inserts.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    /// Name.
    pub name: String,
    /// Text.
    pub text: String,
    /// Insert position; absent = append. Clamped to the list length.
    pub index: Option<usize>,
}

/// Rename an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameSpec {
    /// Current name.
    pub from: String,
    /// New name.
    pub to: String,
}

/// Set an entry's text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTextSpec {
    /// Entry name.
    pub name: String,
    /// New text.
    pub text: String,
}

/// Set a value inside a tool's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetToolParameterSpec {
    /// Tool name.
    pub tool: String,
    /// Object keys from `parameters` down to the key to set; intermediate
    /// objects must exist.
    pub path: Vec<String>,
    /// The value.
    pub value: Value,
}

/// Set a variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetVariableSpec {
    /// Name (any string).
    pub name: String,
    /// Value.
    pub value: String,
}

/// Set an extra field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetFieldSpec {
    /// Field name (not `sections`, `contexts`, `tools` or `variables`).
    pub name: String,
    /// Value.
    pub value: Value,
}

/// A section or context: name and text (absent text = `undefined`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryData {
    /// Name.
    pub name: String,
    /// Text; absent = `undefined`.
    pub text: Option<String>,
}

/// A tool schema in an assembly: exactly `{name, description, parameters}`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolData {
    /// Name.
    pub name: String,
    /// Description; absent = `undefined`.
    pub description: Option<String>,
    /// Parameters; absent = `undefined`. Key order is compared.
    pub parameters: Option<Value>,
}

/// A variable's value: a string, or `{ undefined = true }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a string, or `{ undefined = true }` for a variable that is undefined"
)]
pub enum VariableValue {
    /// A string value.
    Value(String),
    /// `undefined` (the key exists with no value).
    Undefined {
        /// Must be true.
        undefined: bool,
    },
}

/// A string is static text; a table is a provider, deserialized as one so
/// that an error inside it names its own field (an untagged enum would only
/// say that no variant matched).
impl<'de> Deserialize<'de> for TextSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = TextSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a string (the text) or a provider table with one of `returns`, \
                     `sequence`, `returns_undefined` or `throws`",
                )
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<TextSpec, E> {
                Ok(TextSpec::Static(text.to_string()))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<TextSpec, A::Error> {
                ProviderSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(TextSpec::Provider)
            }
        }
        deserializer.deserialize_any(Text)
    }
}

impl From<Registration> for Command {
    fn from(registration: Registration) -> Self {
        match registration {
            Registration::Section(c) => Command::Section(c),
            Registration::Context(c) => Command::Context(c),
            Registration::Suppress(c) => Command::Suppress(c),
            Registration::Tools(c) => Command::Tools(c),
            Registration::Variable(c) => Command::Variable(c),
        }
    }
}
