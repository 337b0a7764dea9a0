//! DeepSeek's Anthropic-compatible endpoint, `POST /anthropic/v1/messages`,
//! served from the same script, rules and prefix cache as the chat endpoint.
//!
//! A Messages request is translated into the chat body it means (below), and
//! that body goes through the chat endpoint's path unchanged: entry choice
//! (`when` sees the translated messages), the request rules, and the prompt
//! cache (the canonical prompt of the translated body, so a conversation
//! re-sent with one more turn reuses its prefix exactly as on the chat API).
//! Only the answer's shape differs (`render::anthropic`), and every error
//! under `/anthropic` is reshaped into Anthropic's envelope here. The log
//! keeps the request as it arrived.
//!
//! The translation: `system` (a string, or text blocks, each its own system
//! message); each `user` message's `tool_result` blocks become `tool`
//! messages (`tool_call_id` = `tool_use_id`, content = the result's text), its
//! other blocks one `user` message (a single text block as a string, else the
//! blocks as content parts); each `assistant` message's `thinking` blocks
//! become `reasoning_content`, its text blocks `content`, its `tool_use`
//! blocks `tool_calls` (arguments = `input` as compact JSON); `tools` become
//! `function` tools (`input_schema` as `parameters`). `cache_control` marks
//! are dropped: DeepSeek's cache is automatic, and a mark must not change
//! the prompt.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{Handled, IncomingRequest, State};
use crate::render::{
    BodyAction, ResponsePlan, WireFormat, anthropic_error_body, anthropic_error_type_for_status,
    error_type_for_status,
};
use crate::script::Endpoint;
use crate::wire::ErrorBody;

/// The reasoning pass-back rule's message on the Anthropic endpoint, as a
/// public report of DeepSeek's endpoint quotes it (`anomalyco/opencode#24791`).
pub(crate) const THINKING_NOT_PASSED_BACK: &str =
    "The `content[].thinking` in the thinking mode must be passed back to the API.";

impl State {
    /// Answer a Messages request: translate it, then answer it as the chat
    /// request it means, in Anthropic's shapes; the log keeps the original body.
    pub(super) fn complete_messages(&mut self, request: &IncomingRequest) -> Handled {
        let original: Value = match serde_json::from_slice(&request.body) {
            Ok(value) => value,
            Err(error) => {
                let message = format!("Failed to parse the request body as JSON: {error}");
                return Handled::rejected(400, message, "invalid_request_error", None);
            }
        };
        let chat_body = match to_chat_body(&original) {
            Ok(body) => body,
            Err(message) => {
                return Handled::rejected(400, message, "invalid_request_error", Some(original));
            }
        };
        let translated = IncomingRequest {
            body: Bytes::from(chat_body.to_string()),
            ..request.clone()
        };
        let mut handled = self.complete(&translated, Endpoint::Chat, false, WireFormat::Anthropic);
        if handled.body_json.is_some() {
            handled.body_json = Some(original);
        }
        handled
    }
}

/// Give an error answer Anthropic's envelope, `{"type":"error","error":{"type",
/// "message"}}`: the chat endpoint's default type for the status becomes
/// Anthropic's (`server_error` is `api_error`), a scripted type is kept.
pub(super) fn reshape_error(plan: &mut ResponsePlan) {
    if plan.status < 400 {
        return;
    }
    let Ok(body) = serde_json::from_slice::<ErrorBody>(&plan.body_bytes()) else {
        return;
    };
    let detail = body.error;
    let error_type = if detail.error_type == error_type_for_status(plan.status) {
        anthropic_error_type_for_status(plan.status)
    } else {
        detail.error_type.as_str()
    };
    let reshaped = anthropic_error_body(error_type, &detail.message);
    plan.body = vec![BodyAction::Send(Bytes::from(reshaped))];
}

/// The chat body an Anthropic Messages body means (the module docs give the
/// translation), or the message of the 400 a body of the wrong shape gets.
/// Its canonical prompt is the one the request is accounted by.
pub fn to_chat_body(body: &Value) -> Result<Value, String> {
    let Some(object) = body.as_object() else {
        return Err("The request body must be a JSON object".into());
    };
    let required = |field: &str| format!("{field}: Field required");
    let model = match object.get("model") {
        None => return Err(required("model")),
        Some(Value::String(model)) => model.clone(),
        Some(_) => return Err("model: Input should be a valid string".into()),
    };
    let max_tokens = match object.get("max_tokens") {
        None => return Err(required("max_tokens")),
        Some(value) => value
            .as_u64()
            .ok_or("max_tokens: Input should be a valid integer")?,
    };
    let Some(Value::Array(messages)) = object.get("messages") else {
        return Err(match object.get("messages") {
            None => required("messages"),
            Some(_) => "messages: Input should be a valid list".into(),
        });
    };
    let mut chat_messages = system_messages(object.get("system"))?;
    for (index, message) in messages.iter().enumerate() {
        translate_message(index, message, &mut chat_messages)?;
    }
    let mut chat = Map::new();
    chat.insert("model".into(), Value::String(model));
    chat.insert("max_tokens".into(), json!(max_tokens));
    chat.insert("messages".into(), Value::Array(chat_messages));
    if let Some(tools) = object.get("tools") {
        let Value::Array(tools) = tools else {
            return Err("tools: Input should be a valid list".into());
        };
        chat.insert(
            "tools".into(),
            Value::Array(tools.iter().map(tool).collect()),
        );
    }
    for field in ["stream", "thinking"] {
        if let Some(value) = object.get(field) {
            chat.insert(field.into(), value.clone());
        }
    }
    Ok(Value::Object(chat))
}

/// The system messages of `system`: a string, or text blocks.
fn system_messages(system: Option<&Value>) -> Result<Vec<Value>, String> {
    match system {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![json!({"role": "system", "content": text})]),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(index, block)| match block_text(block) {
                Some(text) => Ok(json!({"role": "system", "content": text})),
                None => Err(format!("system.{index}: Input should be a text block")),
            })
            .collect(),
        Some(_) => Err("system: Input should be a valid string or list of text blocks".into()),
    }
}

/// The text of a `text` block.
fn block_text(block: &Value) -> Option<&str> {
    (block.get("type")?.as_str()? == "text")
        .then(|| block.get("text")?.as_str())
        .flatten()
}

/// Append the chat messages of Messages entry `index`.
fn translate_message(index: usize, message: &Value, out: &mut Vec<Value>) -> Result<(), String> {
    let role = message.get("role").and_then(Value::as_str);
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            let role = role.filter(|role| matches!(*role, "user" | "assistant"));
            let role = role.ok_or(format!(
                "messages.{index}.role: Input should be 'user' or 'assistant'"
            ))?;
            out.push(json!({"role": role, "content": text}));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(format!(
                "messages.{index}.content: Input should be a valid string or list of blocks"
            ));
        }
    };
    for (position, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str).is_none() {
            return Err(format!(
                "messages.{index}.content.{position}.type: Field required"
            ));
        }
    }
    match role {
        Some("user") => user_messages(index, blocks, out),
        Some("assistant") => {
            out.push(assistant_message(index, blocks)?);
            Ok(())
        }
        _ => Err(format!(
            "messages.{index}.role: Input should be 'user' or 'assistant'"
        )),
    }
}

/// A user message's blocks: each `tool_result` a `tool` message, each run of
/// other blocks one `user` message, in order.
fn user_messages(index: usize, blocks: &[Value], out: &mut Vec<Value>) -> Result<(), String> {
    let mut parts: Vec<Value> = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        if block["type"] != "tool_result" {
            parts.push(without_cache_control(block));
            continue;
        }
        flush_user_parts(&mut parts, out);
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            return Err(format!(
                "messages.{index}.content.{position}.tool_use_id: Field required"
            ));
        };
        let content = match block.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts.iter().filter_map(block_text).collect(),
            Some(_) => {
                return Err(format!(
                    "messages.{index}.content.{position}.content: Input should be a valid string or list of blocks"
                ));
            }
        };
        out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
    }
    flush_user_parts(&mut parts, out);
    Ok(())
}

/// One `user` message of the blocks gathered so far, if any.
fn flush_user_parts(parts: &mut Vec<Value>, out: &mut Vec<Value>) {
    let content = match parts.as_slice() {
        [] => return,
        [only] if only["type"] == "text" && only["text"].is_string() => only["text"].clone(),
        _ => Value::Array(parts.clone()),
    };
    parts.clear();
    out.push(json!({"role": "user", "content": content}));
}

/// An assistant message's blocks as one chat message.
fn assistant_message(index: usize, blocks: &[Value]) -> Result<Value, String> {
    let mut content = String::new();
    let mut reasoning: Option<String> = None;
    let mut tool_calls = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        let at = |field: &str| format!("messages.{index}.content.{position}.{field}");
        match block["type"].as_str() {
            Some("text") => content.push_str(block["text"].as_str().unwrap_or_default()),
            Some("thinking") => reasoning
                .get_or_insert_with(String::new)
                .push_str(block["thinking"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(format!("{}: Field required", at("id")));
                };
                let arguments = match block.get("input") {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(input) => input.to_string(),
                };
                tool_calls.push(json!({"id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments}}));
            }
            // Redacted thinking and anything else carry no text the chat
            // prompt would hold.
            _ => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if let Some(reasoning) = reasoning {
        message["reasoning_content"] = Value::String(reasoning);
    }
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    Ok(message)
}

/// A Messages tool as a chat `function` tool; a tool without `input_schema`
/// (a server tool) is kept as it is.
fn tool(tool: &Value) -> Value {
    let Some(schema) = tool.get("input_schema") else {
        return without_cache_control(tool);
    };
    let mut function = Map::new();
    function.insert(
        "name".into(),
        tool.get("name").cloned().unwrap_or(Value::Null),
    );
    if let Some(description) = tool.get("description") {
        function.insert("description".into(), description.clone());
    }
    function.insert("parameters".into(), schema.clone());
    json!({"type": "function", "function": function})
}

/// `block` without its `cache_control` mark.
fn without_cache_control(block: &Value) -> Value {
    let mut block = block.clone();
    if let Some(object) = block.as_object_mut() {
        object.remove("cache_control");
    }
    block
}
