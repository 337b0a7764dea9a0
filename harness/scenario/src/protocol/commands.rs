//! The commands of a case that act on the prompt registry: the [`Command`]
//! vocabulary itself (`do` selects the kind) and the payloads of the
//! registry-level commands (listeners, disposal, scopes and `assemble`).
//! The registering commands live with the providers they carry
//! ([`super::providers`]), since a provider's effect registers in turn.
//!
//! The loop-level commands' payloads live in [`super::loop_commands`].

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::listener_ops::ListenerOp;
use super::loop_commands::{
    AppendCommand, CancelCommand, CanonicalHeaderCommand, ClockJumpCommand, CompactCommand,
    DisposeAgentCommand, FirePreStepCommand, FoldHeaderCommand, HeaderEqualsCommand,
    LoopListenerCommand, MessageCommand, ReadSessionCommand, RegisterRouteCommand, ResumeCommand,
    RouteCommand, SettleModelCommand, WaitCommand, WaitIdleCommand,
};
use super::loop_ops::{ActOp, LlmStreamOp, PreStepOp, RequestErrorOp, RequestOp};
use super::plain_json;
use super::plugins::PluginAction;
use super::providers::{
    ContextCommand, Registration, SectionCommand, SuppressCommand, ToolsCommand, VariableCommand,
};

/// One command of a case, split by the level that runs it: an
/// [`AssemblyCommand`] runs at either level (the registry, assembly and the
/// header helpers), a [`LoopCommand`] needs an agent. In a scenario file and
/// on the protocol it is one table or object whose `do` selects the kind;
/// each step is a command plus, for most kinds, its `expect`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "WireCommand")]
pub enum Command {
    /// A command of the assembly level.
    Assembly(AssemblyCommand),
    /// A command of the loop level.
    Loop(LoopCommand),
}

/// Declares [`AssemblyCommand`], [`LoopCommand`] and the flat `WireCommand`
/// that both serialize as, from one list per level, so the level a command
/// belongs to is written once, here.
macro_rules! commands_by_level {
    (
        assembly { $( $(#[$a_meta:meta])* $a_name:literal => $a_kind:ident($a_payload:ty), )* }
        loop { $( $(#[$l_meta:meta])* $l_name:literal => $l_kind:ident($l_payload:ty), )* }
    ) => {
        /// The commands that run at either level: the prompt registry's,
        /// `assemble`, and the session header helpers.
        #[derive(Clone, Debug, PartialEq)]
        pub enum AssemblyCommand { $( $(#[$a_meta])* $a_kind($a_payload), )* }

        /// The commands that need an agent (`level = "loop"`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum LoopCommand { $( $(#[$l_meta])* $l_kind($l_payload), )* }

        /// One command of a case. `do` selects the kind. In a scenario file each
        /// step is a command plus, for most kinds, its `expect`.
        #[derive(Deserialize, JsonSchema)]
        #[serde(tag = "do")]
        #[schemars(rename = "Command")]
        enum WireCommand {
            $( $(#[$a_meta])* #[serde(rename = $a_name)] $a_kind($a_payload), )*
            $( $(#[$l_meta])* #[serde(rename = $l_name)] $l_kind($l_payload), )*
        }

        /// A command as it is written: [`WireCommand`]'s shape, borrowing
        /// the payload, so that writing a command copies nothing.
        #[derive(Serialize)]
        #[serde(tag = "do")]
        enum WireCommandRef<'a> {
            $( #[serde(rename = $a_name)] $a_kind(&'a $a_payload), )*
            $( #[serde(rename = $l_name)] $l_kind(&'a $l_payload), )*
        }

        impl Serialize for Command {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Command::Assembly(AssemblyCommand::$a_kind(c)) => WireCommandRef::$a_kind(c), )*
                    $( Command::Loop(LoopCommand::$l_kind(c)) => WireCommandRef::$l_kind(c), )*
                }
                .serialize(serializer)
            }
        }

        impl AssemblyCommand {
            /// The `do` kinds of the assembly level, in the schema's order.
            pub const KINDS: &[&str] = &[$( $a_name, )*];
        }

        impl LoopCommand {
            /// The `do` kinds that need an agent, in the schema's order.
            pub const KINDS: &[&str] = &[$( $l_name, )*];
        }

        impl Command {
            /// Every `do` kind, in the schema's order.
            pub const KINDS: &[&str] = &[$( $a_name, )* $( $l_name, )*];

            /// This command's kind: its `do`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( Command::Assembly(AssemblyCommand::$a_kind(_)) => $a_name, )*
                    $( Command::Loop(LoopCommand::$l_kind(_)) => $l_name, )*
                }
            }

            /// The command of kind `kind` (its `do`) whose other fields
            /// `payload` holds. Unlike reading a whole `do`-tagged table,
            /// this reads the payload straight from `payload`, so a
            /// path-tracking deserializer sees every field on the way.
            pub fn from_payload<'de, D: serde::Deserializer<'de>>(
                kind: &str,
                payload: D,
            ) -> Result<Command, D::Error> {
                match kind {
                    $( $a_name => <$a_payload>::deserialize(payload)
                        .map(|c| Command::Assembly(AssemblyCommand::$a_kind(c))), )*
                    $( $l_name => <$l_payload>::deserialize(payload)
                        .map(|c| Command::Loop(LoopCommand::$l_kind(c))), )*
                    other => Err(serde::de::Error::unknown_variant(other, Command::KINDS)),
                }
            }
        }

        impl From<WireCommand> for Command {
            fn from(wire: WireCommand) -> Self {
                match wire {
                    $( WireCommand::$a_kind(c) => Command::Assembly(AssemblyCommand::$a_kind(c)), )*
                    $( WireCommand::$l_kind(c) => Command::Loop(LoopCommand::$l_kind(c)), )*
                }
            }
        }
    };
}

commands_by_level! {
    assembly {
        /// `systemPrompt.section(...)`.
        "section" => Section(SectionCommand),
        /// `systemPrompt.context(...)`.
        "context" => Context(ContextCommand),
        /// `systemPrompt.suppressRuntimeContext()`.
        "suppress" => Suppress(SuppressCommand),
        /// `systemPrompt.tools(provider)`.
        "tools" => Tools(ToolsCommand),
        /// `systemPrompt.variable(name, provider)`.
        "variable" => Variable(VariableCommand),
        /// `ctx.on('system-prompt/assemble', listener, options)`.
        "listen" => Listen(ListenCommand),
        /// Call a registration's disposer.
        "dispose" => Dispose(DisposeCommand),
        /// Dispose a scope (`createScope(...).dispose()`): every registration
        /// and listener made on it goes.
        "dispose_scope" => DisposeScope(ScopeCommand),
        /// A plugin that owns a group of global registrations (`ctx.plugin`):
        /// they are made in its context, in order, and disposing `id` disposes
        /// the plugin, so all of them go in one step.
        "owner" => Owner(OwnerCommand),
        /// `ctx.on('system-prompt/change', listener)`: journals `change <id>`
        /// on every event and throws on the calls `throw_on` names.
        "on_change" => OnChange(ChangeListenerCommand),
        /// Bind a scope's parent at this point.
        "bind" => Bind(BindCommand),
        /// `assemble({scope})`, then render the prompt and the context snapshot.
        "assemble" => Assemble(AssembleCommand),
        /// `canonicalHeader(header)` (dsh-session), as the step's `value`.
        "canonical_header" => CanonicalHeader(CanonicalHeaderCommand),
        /// `headerEquals(a, b)` (dsh-session), as the step's `value`.
        "header_equals" => HeaderEquals(HeaderEqualsCommand),
        /// `foldRequestHeader(events, baseline)` (dsh-session), as the step's
        /// `value` (none when it is `undefined`).
        "fold_header" => FoldHeader(FoldHeaderCommand),
        /// What the registry holds, layer by layer, as the step's `value`.
        "read_registry" => ReadRegistry(ReadRegistryCommand),
    }
    loop {
        /// Loop: `agent.followup(message)`.
        "followup" => Followup(MessageCommand),
        /// Loop: `agent.steer(message)`.
        "steer" => Steer(MessageCommand),
        /// Loop: `agent.inject(message)`.
        "inject" => Inject(MessageCommand),
        /// Loop: `agent.cancel(reason, {keepInbox})`.
        "cancel" => Cancel(CancelCommand),
        /// Loop: let virtual time pass. While the agent is idle the clock jumps
        /// (nothing is in flight); otherwise the simulation runs through it.
        "wait" => Wait(WaitCommand),
        /// Loop: wait until the agent is idle.
        "wait_idle" => WaitIdle(WaitIdleCommand),
        /// Loop: append a compaction summary replacing a surface range.
        "compact" => Compact(CompactCommand),
        /// Loop: a new agent over a session rebuilt from this log, as a new
        /// process would build it: waits for idle, drops the old agent with its
        /// scoped registrations and listeners, keeps global registrations.
        "resume" => Resume(ResumeCommand),
        /// Loop: dispose the agent (cancel `disposed`, wait, drop its scope).
        "dispose_agent" => DisposeAgent(DisposeAgentCommand),
        /// Loop: an `agent/pre-step` listener.
        "on_pre_step" => OnPreStep(LoopListenerCommand<PreStepOp>),
        /// Loop: an `agent/request` listener.
        "on_request" => OnRequest(LoopListenerCommand<RequestOp>),
        /// Loop: an `agent/request-error` listener.
        "on_request_error" => OnRequestError(LoopListenerCommand<RequestErrorOp>),
        /// Loop: an `agent/turn-stopping` listener (serial; it only acts).
        "on_turn_stopping" => OnTurnStopping(LoopListenerCommand<ActOp>),
        /// Loop: an `agent/status` listener on the agent (a contained event:
        /// a throw is logged as a warning).
        "on_status" => OnStatus(LoopListenerCommand<ActOp>),
        /// Loop: a `session/event` observer on the agent's session (contained
        /// like `on_status`; runs after each append).
        "on_session_event" => OnSessionEvent(LoopListenerCommand<ActOp>),
        /// Loop: a hook inside `session.append` on the agent's session, run
        /// before the event enters the log (upstream: an `internal/dispatch`
        /// listener for `session/event`): synchronous, and a throw vetoes
        /// the append, which then throws it.
        "on_session_append" => OnSessionAppend(LoopListenerCommand<ActOp>),
        /// Loop: an `llm/stream` middleware, on the LLM runtime: it sees
        /// every agent's model calls.
        "on_llm_stream" => OnLlmStream(LoopListenerCommand<LlmStreamOp>),
        /// Loop: act on a context plugin's inputs (spec 10).
        "plugin" => Plugin(PluginAction),
        /// Loop: `session.append(type, data, {surfaceOp, sourceEventSeqs})` on an
        /// agent's session, with any values.
        "append" => Append(AppendCommand),
        /// Loop: read an agent's session: its folded request header and
        /// context, surface nodes and derived messages (the step's `value`).
        "read_session" => ReadSession(ReadSessionCommand),
        /// Loop: fire an agent's `agent/pre-step` waterfall directly, without the
        /// loop, with these messages; the decision is the step's `value`
        /// (`{kind = "enter", messages}` or `{kind = "reject"}`).
        "fire_pre_step" => FirePreStep(FirePreStepCommand),
        /// Loop: move the wall clock (`Date.now()`, event times) by `ms`,
        /// forward or backward, while timers keep their course.
        "clock_jump" => ClockJump(ClockJumpCommand),
        /// Loop: `llm.registerAdapter([provider], adapter)` for one of the
        /// world's scripted routes of that name, the first by default (its
        /// script goes on where it stopped).
        "register_route" => RegisterRoute(RegisterRouteCommand),
        /// Loop: dispose the route's current registration (a no-op when it has none).
        "unregister_route" => UnregisterRoute(RouteCommand),
        /// Loop: settle a scripted route's pending model resolution.
        "settle_model" => SettleModel(SettleModelCommand),
    }
}

impl JsonSchema for Command {
    fn schema_name() -> Cow<'static, str> {
        WireCommand::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        WireCommand::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        WireCommand::json_schema(generator)
    }
}

impl From<AssemblyCommand> for Command {
    fn from(command: AssemblyCommand) -> Self {
        Command::Assembly(command)
    }
}

impl From<LoopCommand> for Command {
    fn from(command: LoopCommand) -> Self {
        Command::Loop(command)
    }
}

impl From<Registration> for AssemblyCommand {
    fn from(registration: Registration) -> Self {
        match registration {
            Registration::Section(c) => AssemblyCommand::Section(c),
            Registration::Context(c) => AssemblyCommand::Context(c),
            Registration::Suppress(c) => AssemblyCommand::Suppress(c),
            Registration::Tools(c) => AssemblyCommand::Tools(c),
            Registration::Variable(c) => AssemblyCommand::Variable(c),
        }
    }
}

impl From<Registration> for Command {
    fn from(registration: Registration) -> Self {
        Command::Assembly(registration.into())
    }
}

/// Registers a waterfall listener on `system-prompt/assemble`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListenCommand {
    /// Listener handle, used in the journal (`listener <id>`) and by `dispose`.
    pub id: String,
    /// Register from this scope's context (a tagged listener); absent = untagged.
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleCommand {
    /// `assemble({scope})`; absent = `assemble({})`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// More fields of the assemble context, passed to every provider
    /// (e.g. `{ who = "ann" }`).
    #[serde(
        default,
        skip_serializing_if = "serde_json::Map::is_empty",
        deserialize_with = "plain_json::map"
    )]
    pub context: serde_json::Map<String, Value>,
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeListenerCommand {
    /// Listener id (for `dispose` and the journal).
    pub id: String,
    /// Throw `new Error(throws)` on these invocations (1-based); default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throw_on: Option<Vec<u32>>,
    /// The message it throws.
    #[serde(default = "default_change_error")]
    pub throws: String,
}

fn default_change_error() -> String {
    "change listener failed".into()
}

/// Read the registry's contents: `{global, scopes}`, each layer's
/// sections and contexts (`{name, order, complete?, text?}`), variable
/// names and counts of tool providers and suppressors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRegistryCommand {}
