//! The payloads of the loop-level commands: what a step asks of an agent
//! (messages, cancel, waits, compaction, resume), of its session (direct
//! appends and reads, the pre-step waterfall, the wall clock, request
//! headers) and of its scripted routes, and the scripted loop listeners.
//!
//! Kept apart from the registry commands ([`super::commands`]) because only
//! a `level = "loop"` case may use them (`compile::needs_loop`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::js_json::JsJson;
use super::plain_json;

/// A message sent to the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Text of a user prompt: its content is one text block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The message's content blocks as given (several text blocks, tool
    /// results, ...), instead of `text`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option_list"
    )]
    pub content: Option<Vec<Value>>,
    /// The message's `source` (default `{kind = "user"}`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The abort cause (default `{kind = "user"}`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitIdleCommand {
    /// The agent to wait for (default: every agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Compact the surface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Summary text.
    pub text: String,
    /// First replaced surface node (seq); default the first node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    /// Last replaced surface node (seq); default the last node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
}

/// Resume: the same agent id over its log, optionally with other options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// New `AgentOptions.provider` (default: as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<JsJson>,
    /// New `AgentOptions.model` (default: as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<JsJson>,
    /// New `AgentOptions.maxTokens` (default: as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<JsJson>,
}

/// Dispose the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisposeAgentCommand {
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// A scripted loop listener.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "Op: Deserialize<'de>"))]
pub struct LoopListenerCommand<Op> {
    /// Listener id (for `dispose`).
    pub id: String,
    /// The agent it addresses (default: the world's first, `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,

    /// Register outermost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepend: bool,
    /// Act only on these invocations (1-based); on others just pass through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Vec<u32>>,
    /// `session/event` observers and session append hooks only: look only
    /// at events of these types; the others do not reach it and are not
    /// counted as invocations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Vec<String>>,
    /// What it does, in order.
    pub ops: Vec<Op>,
}

/// A direct append to an agent's session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendCommand {
    /// The agent whose session (default: the first agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The event type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event data, any value.
    pub data: JsJson,
    /// `surfaceOp`, any value (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<JsJson>,
    /// `sourceEventSeqs`, any value (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<JsJson>,
}

/// Read an agent's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSessionCommand {
    /// The agent whose session (default: the first agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Fire the pre-step waterfall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FirePreStepCommand {
    /// The agent (default: the first agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The payload's turn (default 1).
    #[serde(default = "one")]
    pub turn: u64,
    /// The payload's step (default 1).
    #[serde(default = "one")]
    pub step: u64,
    /// The claimed messages, as given (user messages); the default decision
    /// enters with them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "plain_json::list"
    )]
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

/// Fold request headers from a log, from a baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FoldHeaderCommand {
    /// The events, `[{type, data}, ...]`: each `request/header` event's
    /// `data.header` replaces the state with its canonical form.
    pub events: JsJson,
    /// The state before the first event (`foldRequestHeader`'s second
    /// argument), returned as given when no event is a header; absent means
    /// `undefined` (and `null` is `null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    pub baseline: Option<JsJson>,
}

/// Names one of the world's scripted routes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteCommand {
    /// The route's provider name.
    pub provider: String,
}

/// Settles a scripted route's pending model resolution
/// (`model = "pending"`): the lookups waiting on it, and every later one,
/// resolve with `returns` or reject with `rejects` (exactly one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SettleModelCommand {
    /// The route's provider name.
    pub provider: String,
    /// Which of the world's routes with that name (as `register_route`'s).
    #[serde(default, skip_serializing_if = "super::serde_defaults::is_zero")]
    pub route: usize,
    /// The model whose resolution is pending.
    pub model: String,
    /// Resolve with this metadata (as a route's `model.returns`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option_map"
    )]
    pub returns: Option<serde_json::Map<String, serde_json::Value>>,
    /// Reject with this error (as a route's `model.rejects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejects: Option<super::ScriptedError>,
}

/// Registers one of the world's scripted routes under its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRouteCommand {
    /// The route's provider name.
    pub provider: String,
    /// Which of the world's routes with that name, from 0 in `routes`
    /// order (default 0): another route, with its own script, can be
    /// registered under a name once the first is unregistered (while it is
    /// registered, the name is taken: `DUPLICATE_ADAPTER`).
    #[serde(default, skip_serializing_if = "super::serde_defaults::is_zero")]
    pub route: usize,
}
