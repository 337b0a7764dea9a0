//! An entry in the wire format of DeepSeek's Anthropic-compatible endpoint
//! (`POST /anthropic/v1/messages`): the SSE events of a streamed message
//! (`event:` line, then `data:`) and the whole `message` object. The same
//! entry answers the chat endpoint; only the shape differs, so a script needs
//! nothing new to serve Anthropic clients.
//!
//! Wire order (Anthropic's streaming guide): `message_start`, one block per
//! thinking (`thinking_delta`s, then one `signature_delta`), text
//! (`text_delta`s) and tool call (`input_json_delta`s), each opened by
//! `content_block_start` and closed by `content_block_stop`, then
//! `message_delta` (`stop_reason`, usage) and `message_stop`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{RenderContext, tool_call_id};
use crate::script::ScriptEntry;
use crate::wire::Usage;

/// The message id of the `n`-th scripted response.
pub(crate) fn message_id(response_number: u64) -> String {
    format!("msg_{response_number}")
}

/// The signature sent with the thinking of the `n`-th response (DeepSeek's
/// value is opaque; the mock's is deterministic).
pub(crate) fn thinking_signature(response_number: u64) -> String {
    format!("dshc-mock-signature-{response_number}")
}

/// Anthropic's `stop_reason` for a scripted `finish_reason`: `stop` is
/// `end_turn`, `tool_calls` is `tool_use`, `length` is `max_tokens`,
/// `content_filter` is `refusal`; anything else is sent verbatim.
pub(crate) fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        "content_filter" => "refusal",
        other => other,
    }
}

/// Anthropic's usage object: `input_tokens` counts the prompt tokens the
/// cache did not serve, `cache_read_input_tokens` the ones it did (so their
/// sum is the prompt, as in Anthropic's prompt-caching guide), and nothing is
/// ever written at a premium (`cache_creation_input_tokens` 0: DeepSeek's
/// cache is automatic).
pub(crate) fn usage_json(usage: &Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": usage.prompt_cache_miss_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.prompt_cache_hit_tokens,
        "output_tokens": output_tokens,
    })
}

/// The `input` object of a tool call: its arguments parsed, `{}` when empty,
/// the raw text as a JSON string when the script's arguments are not JSON.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// Whether the message has a text block: when the entry scripts content, or
/// when it scripts nothing else (every message has at least one block).
fn has_text_block(entry: &ScriptEntry) -> bool {
    !entry.content.is_empty() || (entry.reasoning.is_empty() && entry.tool_calls.is_empty())
}

/// The `content` blocks of the whole message, in wire order.
fn content_blocks(entry: &ScriptEntry, context: &RenderContext) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !entry.reasoning.is_empty() {
        blocks.push(json!({
            "type": "thinking",
            "thinking": entry.reasoning.concat(),
            "signature": thinking_signature(context.response_number),
        }));
    }
    if has_text_block(entry) {
        blocks.push(json!({"type": "text", "text": entry.content.concat()}));
    }
    for (index, call) in entry.tool_calls.iter().enumerate() {
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_call_id(call.id.as_deref(), context.response_number, index),
            "name": call.name,
            "input": tool_input(&call.arguments.concat()),
        }));
    }
    blocks
}

/// The whole `message` object answering a non-streamed request, as compact JSON.
pub(super) fn whole_message(entry: &ScriptEntry, context: &RenderContext) -> String {
    json!({
        "id": message_id(context.response_number),
        "type": "message",
        "role": "assistant",
        "model": context.model,
        "content": content_blocks(entry, context),
        "stop_reason": stop_reason(entry.finish_reason_or_default()),
        "stop_sequence": null,
        "usage": usage_json(&context.usage, context.usage.completion_tokens),
    })
    .to_string()
}

/// One SSE event: `event: <type>` then `data: <json>`.
fn event(payload: &Value) -> Bytes {
    let kind = payload["type"].as_str().unwrap_or("message");
    Bytes::from(format!("event: {kind}\ndata: {payload}\n\n"))
}

/// The events of one content block: its start, its deltas, its stop.
fn block_events(index: usize, start: Value, deltas: Vec<Value>) -> Vec<Bytes> {
    let mut events = vec![event(&json!({
        "type": "content_block_start", "index": index, "content_block": start,
    }))];
    for delta in deltas {
        events.push(event(&json!({
            "type": "content_block_delta", "index": index, "delta": delta,
        })));
    }
    events.push(event(
        &json!({"type": "content_block_stop", "index": index}),
    ));
    events
}

/// The events of a streamed message, in wire order, without pacing or faults.
pub(super) fn message_events(entry: &ScriptEntry, context: &RenderContext) -> Vec<Bytes> {
    let mut events = vec![event(&json!({
        "type": "message_start",
        "message": {
            "id": message_id(context.response_number),
            "type": "message",
            "role": "assistant",
            "model": context.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage_json(&context.usage, 0),
        },
    }))];
    let mut index = 0;
    if !entry.reasoning.is_empty() {
        let mut deltas: Vec<Value> = entry
            .reasoning
            .iter()
            .map(|fragment| json!({"type": "thinking_delta", "thinking": fragment}))
            .collect();
        deltas.push(json!({
            "type": "signature_delta",
            "signature": thinking_signature(context.response_number),
        }));
        let start = json!({"type": "thinking", "thinking": "", "signature": ""});
        events.extend(block_events(index, start, deltas));
        index += 1;
    }
    if has_text_block(entry) {
        let deltas = entry
            .content
            .iter()
            .map(|fragment| json!({"type": "text_delta", "text": fragment}))
            .collect();
        events.extend(block_events(
            index,
            json!({"type": "text", "text": ""}),
            deltas,
        ));
        index += 1;
    }
    for (position, call) in entry.tool_calls.iter().enumerate() {
        let id = tool_call_id(call.id.as_deref(), context.response_number, position);
        let start = json!({"type": "tool_use", "id": id, "name": call.name, "input": {}});
        let fragments: Vec<&str> = if call.arguments.is_empty() {
            vec![""]
        } else {
            call.arguments.iter().map(String::as_str).collect()
        };
        let deltas = fragments
            .into_iter()
            .map(|fragment| json!({"type": "input_json_delta", "partial_json": fragment}))
            .collect();
        events.extend(block_events(index, start, deltas));
        index += 1;
    }
    events.push(event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(entry.finish_reason_or_default()), "stop_sequence": null},
        "usage": usage_json(&context.usage, context.usage.completion_tokens),
    })));
    events.push(event(&json!({"type": "message_stop"})));
    events
}

/// The payload `malformed_json` sends in an Anthropic stream unless the entry
/// scripts one: a truncated text delta.
pub(super) fn default_malformed_payload() -> String {
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
        .to_owned()
}

/// Anthropic's `error.type` for a status (Anthropic's errors page), used when
/// the body carries the chat endpoint's default type for that status.
pub(crate) fn error_type_for_status(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

/// An error body in Anthropic's shape, `{"type":"error","error":{"type","message"}}`.
pub(crate) fn error_body(error_type: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": error_type, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::render::test_support::{context, full_entry};
    use crate::render::{RenderContext, WireFormat, render_response};
    use crate::script::{FaultKind, ScriptEntry};

    fn anthropic(stream: bool) -> RenderContext {
        RenderContext {
            format: WireFormat::Anthropic,
            stream,
            ..context()
        }
    }

    /// Each frame as (its `event:` name, its `data:` JSON); every frame must be
    /// exactly `event: <name>\ndata: <json>\n\n`, the name the payload's `type`.
    fn events(frames: &[&bytes::Bytes]) -> Vec<(String, Value)> {
        frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).unwrap();
                let body = text
                    .strip_suffix("\n\n")
                    .expect("an event ends with a blank line");
                let (event, data) = body.split_once('\n').expect("two lines");
                let name = event.strip_prefix("event: ").expect("event line first");
                let payload: Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(payload["type"], name, "{text}");
                (name.to_owned(), payload)
            })
            .collect()
    }

    #[test]
    fn a_stream_has_anthropics_event_order_blocks_and_usage() {
        let plan = render_response(&full_entry(), &anthropic(true));
        assert_eq!(plan.status, 200);
        assert_eq!(
            plan.header("content-type"),
            Some("text/event-stream; charset=utf-8")
        );
        let events = events(&plan.frames());
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                // thinking: two fragments, then the signature
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                // text: two fragments
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                // tool call `read`: two argument fragments; `ls`: one empty one
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        let start = &events[0].1["message"];
        assert_eq!(start["id"], "msg_3");
        assert_eq!(
            (&start["role"], &start["content"]),
            (&json!("assistant"), &json!([]))
        );
        assert!(start["stop_reason"].is_null());
        // The prompt's 100 tokens: 64 read from the cache, 36 not.
        assert_eq!(
            start["usage"],
            json!({"input_tokens": 36, "cache_creation_input_tokens": 0,
                   "cache_read_input_tokens": 64, "output_tokens": 0})
        );
        assert_eq!(
            events[1].1["content_block"],
            json!({"type": "thinking", "thinking": "", "signature": ""})
        );
        assert_eq!(
            events[2].1,
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "thinking_delta", "thinking": "Thin"}})
        );
        assert_eq!(events[4].1["delta"]["type"], "signature_delta");
        assert_eq!(
            events[7].1["delta"],
            json!({"type": "text_delta", "text": "Hel"})
        );
        assert_eq!(events[7].1["index"], 1);
        assert_eq!(
            events[10].1["content_block"],
            json!({"type": "tool_use", "id": "call_a", "name": "read", "input": {}})
        );
        assert_eq!(
            events[12].1["delta"],
            json!({"type": "input_json_delta", "partial_json": "th\":\"a\"}"})
        );
        assert_eq!(events[14].1["content_block"]["id"], "call_3_1");
        assert_eq!(events[14].1["index"], 3);
        assert_eq!(
            events[16].1,
            json!({"type": "content_block_stop", "index": 3})
        );
        assert_eq!(
            events[17].1,
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"input_tokens": 36, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 64, "output_tokens": 7}})
        );
        assert_eq!(events[18].1, json!({"type": "message_stop"}));
    }

    #[test]
    fn a_whole_message_has_one_block_per_part() {
        let plan = render_response(&full_entry(), &anthropic(false));
        assert_eq!(plan.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body,
            json!({
                "id": "msg_3", "type": "message", "role": "assistant",
                "model": "deepseek-v4-flash",
                "content": [
                    {"type": "thinking", "thinking": "Thinking",
                     "signature": "dshc-mock-signature-3"},
                    {"type": "text", "text": "Hello"},
                    {"type": "tool_use", "id": "call_a", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "call_3_1", "name": "ls", "input": {}},
                ],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 36, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 64, "output_tokens": 7},
            })
        );
        // An empty entry still has a (empty) text block; `stop` is `end_turn`,
        // `length` is `max_tokens`.
        let plan = render_response(&ScriptEntry::stream(), &anthropic(false));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(body["content"], json!([{"type": "text", "text": ""}]));
        assert_eq!(body["stop_reason"], "end_turn");
        let cut = ScriptEntry {
            finish_reason: Some("length".into()),
            ..ScriptEntry::content(["x"])
        };
        let body: Value =
            serde_json::from_slice(&render_response(&cut, &anthropic(false)).body_bytes()).unwrap();
        assert_eq!(body["stop_reason"], "max_tokens");
    }

    #[test]
    fn stream_faults_strike_anthropic_events() {
        let missing_stop = ScriptEntry {
            fault: Some(FaultKind::MissingDone),
            ..ScriptEntry::content(["a"])
        };
        let frames = render_response(&missing_stop, &anthropic(true)).body_bytes();
        let text = std::str::from_utf8(&frames).unwrap();
        assert!(text.ends_with("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":36,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":64,\"output_tokens\":7}}\n\n"), "{text}");
        let malformed = ScriptEntry {
            fault: Some(FaultKind::MalformedJson),
            after_events: Some(1),
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&malformed, &anthropic(true));
        let frames = plan.frames();
        assert_eq!(
            frames[1].as_ref(),
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\n\n"
        );
        assert_eq!(frames.len(), 7, "six events and the malformed one");
    }
}
