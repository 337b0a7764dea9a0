//! What a scripted loop listener does: the ops of each `agent/*` waterfall
//! (`pre-step`, `request`, `request-error`) and the acts every listener and
//! tool body shares ([`ActOp`]: sleep, move the wall clock, cancel, dispose,
//! send a message, throw, record what it received).
//!
//! A waterfall's op is one of its own or one of the shared acts. Read as a
//! plain untagged choice, a misspelt op would only say that nothing matched;
//! so each is read by name ([`listener_op`]): an unknown name is refused with
//! the ops of that listener, and a known one with a bad argument names the op.

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::plain_json;

/// The names of the ops every listener and tool body shares ([`ActOp`]).
pub const ACT_OP_NAMES: [&str; 9] = [
    "sleep_ms",
    "clock_jump",
    "cancel",
    "dispose_agent",
    "followup",
    "steer",
    "inject",
    "throw",
    "record",
];

/// The op's name: the string itself, or the single key of a table.
fn op_name(value: &Value) -> Option<&str> {
    match value {
        Value::String(name) => Some(name),
        Value::Object(table) if table.len() == 1 => table.keys().next().map(String::as_str),
        _ => None,
    }
}

/// Read one op of a `listener` (`agent/request`, say) by its name: one of
/// `own_names` (read as `Own`) or of [`ACT_OP_NAMES`]; any other name, or a
/// value that is no op, is refused naming the field, its value and the valid
/// alternatives.
pub(crate) fn listener_op<'de, D: Deserializer<'de>, Own: DeserializeOwned, Op>(
    deserializer: D,
    listener: &str,
    own_names: &[&str],
    own: impl FnOnce(Own) -> Op,
    act: impl FnOnce(ActOp) -> Op,
) -> Result<Op, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let alternatives = || {
        own_names
            .iter()
            .chain(&ACT_OP_NAMES)
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(name) = op_name(&value).map(str::to_string) else {
        return Err(D::Error::custom(format!(
            "each {listener} op is a name or a table with one key, not {value}; the ops are {}",
            alternatives()
        )));
    };
    let in_op = |error: serde_json::Error| D::Error::custom(format!("op `{name}`: {error}"));
    if ACT_OP_NAMES.contains(&name.as_str()) {
        serde_json::from_value(value).map(act).map_err(in_op)
    } else if own_names.contains(&name.as_str()) {
        serde_json::from_value(value).map(own).map_err(in_op)
    } else {
        Err(D::Error::custom(format!(
            "unknown {listener} op `{name}`; the ops are {}",
            alternatives()
        )))
    }
}

/// A pre-step listener op. `current` starts as `enter` with the claimed
/// messages (no runtime-context candidate); `next` replaces it with the inner
/// decision. Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
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
    /// Append a user message: its text, or `{text | content, source}`.
    AppendMessage(MessageArg),
    /// Insert a user message first: its text, or `{text | content, source}`.
    PrependMessage(MessageArg),
    /// Wait until the turn's signal aborts, then throw its abort error.
    WaitForAbort,
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

/// An `llm/stream` middleware op. The listener is synchronous, so its ops
/// run at the call, in order, and it returns the stream the last `next` or
/// `serve` gave (`next()`'s when neither is given). Every [`ActOp`] but
/// `sleep_ms` works here too; a throw is the middleware's, not the
/// adapter's (it is thrown, not a finish chunk).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LlmStreamOp {
    /// `next()`: the inner listeners' stream, the adapter's innermost.
    Next,
    /// This stream instead, without calling `next()`: parts as a route
    /// response's `parts` (with `{sleep_ms}` pauses and `{act}` acts).
    Serve(#[serde(deserialize_with = "plain_json::list")] Vec<Value>),
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum LlmStreamOwn {
    Next,
    Serve(#[serde(deserialize_with = "plain_json::list")] Vec<Value>),
}

impl<'de> Deserialize<'de> for LlmStreamOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let own = |op: LlmStreamOwn| match op {
            LlmStreamOwn::Next => LlmStreamOp::Next,
            LlmStreamOwn::Serve(parts) => LlmStreamOp::Serve(parts),
        };
        listener_op(
            deserializer,
            "llm/stream",
            &["next", "serve"],
            own,
            LlmStreamOp::Act,
        )
    }
}

/// An `agent/request` op. `current` starts as `{}`; `next` gives the seed
/// config. Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RequestOp {
    /// `current = await next()`.
    Next,
    /// A new object: `{...current, ...set}`.
    Set(#[serde(deserialize_with = "plain_json::map")] serde_json::Map<String, Value>),
    /// A new object without this key.
    Remove(String),
    /// Act or observe.
    #[serde(untagged)]
    Act(ActOp),
}

/// An `agent/request-error` op. `current` starts as `undefined` (give up).
/// Every [`ActOp`] works here too.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
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

/// [`PreStepOp`]'s own ops, as read (the acts are read as [`ActOp`]).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum PreStepOwn {
    Next,
    Reject,
    EnterEmpty,
    DropRuntimeContext,
    RewriteRuntimeContext(String),
    Reverse,
    AppendMessage(MessageArg),
    PrependMessage(MessageArg),
    WaitForAbort,
}

impl<'de> Deserialize<'de> for PreStepOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let own = |op: PreStepOwn| match op {
            PreStepOwn::Next => PreStepOp::Next,
            PreStepOwn::Reject => PreStepOp::Reject,
            PreStepOwn::EnterEmpty => PreStepOp::EnterEmpty,
            PreStepOwn::DropRuntimeContext => PreStepOp::DropRuntimeContext,
            PreStepOwn::RewriteRuntimeContext(text) => PreStepOp::RewriteRuntimeContext(text),
            PreStepOwn::Reverse => PreStepOp::Reverse,
            PreStepOwn::AppendMessage(message) => PreStepOp::AppendMessage(message),
            PreStepOwn::PrependMessage(message) => PreStepOp::PrependMessage(message),
            PreStepOwn::WaitForAbort => PreStepOp::WaitForAbort,
        };
        let names = [
            "next",
            "reject",
            "enter_empty",
            "drop_runtime_context",
            "rewrite_runtime_context",
            "reverse",
            "append_message",
            "prepend_message",
            "wait_for_abort",
        ];
        listener_op(deserializer, "agent/pre-step", &names, own, PreStepOp::Act)
    }
}

/// [`RequestOp`]'s own ops, as read.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RequestOwn {
    Next,
    Set(#[serde(deserialize_with = "plain_json::map")] serde_json::Map<String, Value>),
    Remove(String),
}

impl<'de> Deserialize<'de> for RequestOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let own = |op: RequestOwn| match op {
            RequestOwn::Next => RequestOp::Next,
            RequestOwn::Set(fields) => RequestOp::Set(fields),
            RequestOwn::Remove(key) => RequestOp::Remove(key),
        };
        let names = ["next", "set", "remove"];
        listener_op(deserializer, "agent/request", &names, own, RequestOp::Act)
    }
}

/// [`RequestErrorOp`]'s own ops, as read.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RequestErrorOwn {
    Next,
    Retry,
    GiveUp,
}

impl<'de> Deserialize<'de> for RequestErrorOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let own = |op: RequestErrorOwn| match op {
            RequestErrorOwn::Next => RequestErrorOp::Next,
            RequestErrorOwn::Retry => RequestErrorOp::Retry,
            RequestErrorOwn::GiveUp => RequestErrorOp::GiveUp,
        };
        let names = ["next", "retry", "give_up"];
        listener_op(
            deserializer,
            "agent/request-error",
            &names,
            own,
            RequestErrorOp::Act,
        )
    }
}

/// What any scripted loop listener can do, whatever its event: act on the
/// agent, fail, wait, or record what it received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ActOp {
    /// Wait this many virtual milliseconds (ignoring the signal).
    SleepMs(u64),
    /// Move the wall clock (`Date.now()`) by this many milliseconds,
    /// negative backward, leaving timers alone (as the `clock_jump` command);
    /// at most [`MAX_ACT_CLOCK_JUMP_MS`] either way.
    ClockJump(ActClockJump),
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
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

/// A message a listener sends: its text, or a table with its `text` or its
/// `content` blocks, and its `source`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageArg {
    /// A user prompt with this text.
    Text(String),
    /// A user message.
    Message(MessageTable),
}

/// A string is the text; a table is read as a [`MessageTable`], so that an
/// error inside it names its own rule.
impl<'de> Deserialize<'de> for MessageArg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::serde_defaults::string_or_table(
            deserializer,
            |f| f.write_str("a string (the text) or a table `{text | content, source}`"),
            MessageArg::Text,
            MessageArg::Message,
        )
    }
}

/// A user message a listener sends, as a table: exactly one of `text` and
/// `content`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, try_from = "MessageFields")]
pub struct MessageTable {
    /// Its text: the content is one text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its content blocks as given (several text blocks, images, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Value>>,
    /// Its `source` (default `{kind = "user"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

/// [`MessageTable`] as read, before its one rule is checked (the schema
/// is this one's, under the table's name).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MessageTable")]
struct MessageFields {
    /// Its text: the content is one text block.
    #[serde(default)]
    text: Option<String>,
    /// Its content blocks as given (several text blocks, images, ...).
    #[serde(default, deserialize_with = "plain_json::option_list")]
    content: Option<Vec<Value>>,
    /// Its `source` (default `{kind = "user"}`).
    #[serde(default, deserialize_with = "plain_json::option")]
    source: Option<Value>,
}

impl TryFrom<MessageFields> for MessageTable {
    type Error = String;

    fn try_from(fields: MessageFields) -> Result<Self, String> {
        let MessageFields {
            text,
            content,
            source,
        } = fields;
        if text.is_some() == content.is_some() {
            return Err("a message table sets exactly one of `text` and `content`".into());
        }
        Ok(MessageTable {
            text,
            content,
            source,
        })
    }
}

impl MessageArg {
    /// The message's content blocks: one text block, or `content` as given.
    pub fn blocks(&self) -> Value {
        let text = match self {
            MessageArg::Text(text) => text,
            MessageArg::Message(MessageTable {
                content: Some(content),
                ..
            }) => return Value::Array(content.clone()),
            MessageArg::Message(table) => table.text.as_deref().unwrap_or_default(),
        };
        serde_json::json!([{"type": "text", "text": text}])
    }

    /// The message's source: `{kind: user}` unless given.
    pub fn source(&self) -> Value {
        match self {
            MessageArg::Message(MessageTable {
                source: Some(source),
                ..
            }) => source.clone(),
            _ => serde_json::json!({"kind": "user"}),
        }
    }
}

/// A `clock_jump` act's milliseconds, within [`MAX_ACT_CLOCK_JUMP_MS`]
/// either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "i64", into = "i64")]
pub struct ActClockJump(pub i64);

impl TryFrom<i64> for ActClockJump {
    type Error = String;

    fn try_from(ms: i64) -> Result<Self, String> {
        if ms.unsigned_abs() > MAX_ACT_CLOCK_JUMP_MS.unsigned_abs() {
            return Err(format!(
                "a clock_jump act moves the clock at most {MAX_ACT_CLOCK_JUMP_MS} ms either way, \
                 not {ms}"
            ));
        }
        Ok(ActClockJump(ms))
    }
}

impl From<ActClockJump> for i64 {
    fn from(jump: ActClockJump) -> i64 {
        jump.0
    }
}

/// How far one `clock_jump` act may move the wall clock, either way: a day.
/// An act can run many times, so this bounds each run; the loader bounds
/// the commands' own jumps by the clock's range.
pub const MAX_ACT_CLOCK_JUMP_MS: i64 = 86_400_000;

/// What a listener throws.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
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

/// [`ThrowArg::Coded`] as read, so that a table's error names its field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CodedThrow {
    message: String,
    code: String,
}

/// A string is the message; a table is read as `{message, code}`, so that
/// a missing or unknown field is named, where an untagged choice would only
/// say that nothing matched.
impl<'de> Deserialize<'de> for ThrowArg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::serde_defaults::string_or_table(
            deserializer,
            |f| {
                f.write_str(
                    "a string (an Error's message) or a table `{message, code}` (an LlmError)",
                )
            },
            ThrowArg::Message,
            |CodedThrow { message, code }| ThrowArg::Coded { message, code },
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request_op(toml_text: &str) -> Result<RequestOp, String> {
        #[derive(Debug, Deserialize)]
        struct Holder {
            op: RequestOp,
        }
        toml::from_str::<Holder>(toml_text)
            .map(|holder| holder.op)
            .map_err(|error| error.message().to_string())
    }

    #[test]
    fn every_op_reads_by_its_name() {
        assert_eq!(request_op("op = \"next\""), Ok(RequestOp::Next));
        assert_eq!(
            request_op("op = { remove = \"model\" }"),
            Ok(RequestOp::Remove("model".into()))
        );
        assert_eq!(
            request_op("op = { sleep_ms = 3 }"),
            Ok(RequestOp::Act(ActOp::SleepMs(3)))
        );
        assert_eq!(
            request_op("op = \"dispose_agent\""),
            Ok(RequestOp::Act(ActOp::DisposeAgent))
        );
        for name in [
            "next",
            "reject",
            "enter_empty",
            "drop_runtime_context",
            "reverse",
            "wait_for_abort",
        ] {
            let op: PreStepOp = serde_json::from_value(Value::String(name.into())).expect(name);
            assert_eq!(
                serde_json::to_value(&op).unwrap(),
                Value::String(name.into())
            );
        }
        for name in ["next", "retry", "give_up"] {
            let op: RequestErrorOp =
                serde_json::from_value(Value::String(name.into())).expect(name);
            assert_eq!(
                serde_json::to_value(&op).unwrap(),
                Value::String(name.into())
            );
        }
    }

    #[test]
    fn a_wrong_op_is_named_with_the_alternatives() {
        let unknown = request_op("op = { sett = { model = \"m2\" } }").unwrap_err();
        assert!(
            unknown.starts_with(
                "unknown agent/request op `sett`; the ops are `next`, `set`, `remove`, `sleep_ms`"
            ),
            "{unknown}"
        );
        let bad_argument = request_op("op = { set = \"m2\" }").unwrap_err();
        assert!(
            bad_argument.starts_with("op `set`: invalid type: string \"m2\""),
            "{bad_argument}"
        );
        let bad_act = request_op("op = { sleep_ms = \"soon\" }").unwrap_err();
        assert!(bad_act.starts_with("op `sleep_ms`: "), "{bad_act}");
        let no_op = request_op("op = 3").unwrap_err();
        assert!(
            no_op.contains("a name or a table with one key, not 3"),
            "{no_op}"
        );
    }
}
