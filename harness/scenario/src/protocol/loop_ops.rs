//! What a scripted loop listener does: the ops of each `agent/*` waterfall
//! (`pre-step`, `request`, `request-error`) and the acts every listener and
//! tool body shares ([`ActOp`]: sleep, cancel, dispose, send a message,
//! throw, record what it received).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
