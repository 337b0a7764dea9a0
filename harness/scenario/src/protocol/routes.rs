//! Scripted routes: LLM adapters registered for a provider route below the
//! wire, as upstream's own loop tests script the model. Each `stream()` call
//! consumes the next [`RouteResponse`]; `resolveModel()` answers from a
//! [`ModelResolution`]. No HTTP is involved.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plain_json;
use super::serde_defaults::{is_true, is_zero, yes};

/// A scripted LLM adapter registered for one provider route
/// (`llm.registerAdapter([provider], adapter)`), as upstream's own loop
/// tests script the model: each `stream()` call consumes the next response;
/// `resolveModel()` answers from `model`/`models`. No HTTP is involved.
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

/// What `resolveModel` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelResolution {
    /// Resolve to this metadata, in upstream's shape (`name`, `description`,
    /// `context = {contextWindow}`, `defaultMaxTokens`, `reasoning =
    /// {efforts = [{id, name}], defaultEffort}`, `inputModalities`);
    /// `provider`, `id` and `name` default to the route, the model and the
    /// model. Upstream validates it; invalid metadata fails the call.
    Returns(#[serde(deserialize_with = "plain_json::map")] serde_json::Map<String, Value>),
    /// Reject with this error.
    Rejects(ScriptedError),
    /// Never settle until the lookup's signal aborts, then reject with its reason.
    Blocks,
    /// Stay pending, whatever the lookup's signal does, until a
    /// `settle_model` step settles it.
    Pending,
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// The message.
    pub message: String,
    /// `LlmError` code (`RATE_LIMIT`, `SERVER`, ...); absent: a plain `Error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `LlmError` `status` (100–599).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `LlmError` `providerRetryAfterMs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<u64>,
    /// `LlmError` `requestId`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// One scripted `stream()` call: optional delay, the parts it yields, then
/// how it ends. With none of `error`, `throws` and `hangs` the iterator
/// simply completes. Either `parts` or the shorthands (`reasoning`, `text`,
/// `tool_calls`, `usage`, `finish`) may be given, not both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteResponse {
    /// Virtual time before the first part.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Adapter-level stream parts, yielded as given (`{type = "block-start",
    /// index, blockType}`, `text-delta`, `reasoning-delta`, `tool-call-delta`,
    /// `block-end`, `usage`, `finish`), with `{sleep_ms = N}` pauses and
    /// `{act = op}` acts between them (one act op, not `record` nor
    /// `sleep_ms`, on the agent whose call the route answers, run inside the
    /// generator: a throw is the stream's).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "plain_json::list"
    )]
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
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option_map"
    )]
    pub usage: Option<serde_json::Map<String, Value>>,
    /// Shorthand: the `finish` part's reason (default `{kind = "tool-calls"}`
    /// with tool calls, else `{kind = "stop"}`); a string is short for `{kind}`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
    pub finish: Option<Value>,
    /// After the parts, throw this error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptedError>,
    /// After the parts, never yield again until the call's signal aborts,
    /// then throw its reason.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hangs: bool,
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
