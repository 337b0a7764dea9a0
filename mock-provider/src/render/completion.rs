//! A non-streaming answer: the whole reply as one JSON object (`chat.completion` or
//! FIM `text_completion`), or its fault (a dropped connection, a malformed body, a
//! stall before the head).

use bytes::Bytes;

use super::{
    BodyAction, RenderContext, ResponsePlan, WireFormat, default_malformed_payload,
    push_request_id, tool_call_id,
};
use crate::script::{Endpoint, FaultKind, ScriptEntry, UsagePlacement};
use crate::wire::{CompletionChoiceWire, FunctionWire, MessageWire, TextChoiceWire, ToolCallWire};

/// The whole answer to a non-streaming request, or the entry's fault in its place.
pub(super) fn render_completion(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let object = match context.endpoint {
        Endpoint::Chat => "chat.completion",
        Endpoint::Fim => "text_completion",
    };
    let whole = if context.format == WireFormat::Anthropic {
        super::anthropic::whole_message(entry, context)
    } else {
        whole_completion(entry, context, object)
    };
    let mut head_delay_ms = entry.delay_ms;
    let body = match entry.fault {
        Some(FaultKind::DropConnection) => vec![BodyAction::DropConnection],
        Some(FaultKind::MalformedJson) => vec![BodyAction::Send(Bytes::from(
            entry
                .malformed_payload
                .clone()
                .unwrap_or_else(|| default_malformed_payload(context, object)),
        ))],
        Some(FaultKind::Stall) => {
            head_delay_ms += entry.stall_ms.unwrap_or(0);
            vec![BodyAction::Send(Bytes::from(whole))]
        }
        _ => vec![BodyAction::Send(Bytes::from(whole))],
    };
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    push_request_id(entry, &mut headers);
    ResponsePlan {
        head_delay_ms,
        status: 200,
        headers,
        body,
        closes_before_head: false,
    }
}

/// The completion object (`object`) of `entry`, as compact JSON.
fn whole_completion(entry: &ScriptEntry, context: &RenderContext, object: &'static str) -> String {
    let id = context.response_id();
    // A non-streaming answer carries usage unless the entry says `omit`.
    let usage = (entry.usage != Some(UsagePlacement::Omit)).then_some(Some(&context.usage));
    match context.endpoint {
        Endpoint::Chat => {
            let reasoning = entry.reasoning.concat();
            let tool_calls: Vec<ToolCallWire> = entry
                .tool_calls
                .iter()
                .enumerate()
                .map(|(index, call)| ToolCallWire {
                    id: tool_call_id(call.id.as_deref(), context.response_number, index),
                    kind: "function",
                    function: FunctionWire {
                        name: call.name.clone(),
                        arguments: call.arguments.concat(),
                    },
                })
                .collect();
            let choice = CompletionChoiceWire {
                index: 0,
                message: MessageWire {
                    role: "assistant",
                    content: entry.content.concat(),
                    reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
                    tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
                },
                logprobs: None,
                finish_reason: entry.finish_reason_or_default(),
            };
            context.response_json(&id, object, vec![choice], usage)
        }
        Endpoint::Fim => {
            let choice = TextChoiceWire {
                text: &entry.content.concat(),
                index: 0,
                logprobs: None,
                finish_reason: Some(entry.finish_reason_or_default()),
            };
            context.response_json(&id, object, vec![choice], usage)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::render::test_support::{context, full_entry};
    use crate::render::{BodyAction, RenderContext, render_response};
    use crate::script::{FaultKind, ScriptEntry};

    #[test]
    fn non_streaming_request_gets_one_completion_object() {
        let plan = render_response(
            &full_entry(),
            &RenderContext {
                stream: false,
                ..context()
            },
        );
        assert_eq!(plan.header("content-type"), Some("application/json"));
        assert_eq!(plan.body.len(), 1);
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["id"], "chatcmpl-3");
        assert_eq!(
            body["choices"][0],
            json!({"index": 0, "message": {"role": "assistant", "content": "Hello",
                "reasoning_content": "Thinking",
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "call_3_1", "type": "function", "function": {"name": "ls", "arguments": ""}}
                ]}, "logprobs": null, "finish_reason": "tool_calls"})
        );
        assert_eq!(body["usage"]["total_tokens"], 107);
    }

    #[test]
    fn non_streaming_faults() {
        let non_stream = RenderContext {
            stream: false,
            ..context()
        };
        let stalled = ScriptEntry {
            fault: Some(FaultKind::Stall),
            after_events: Some(0),
            stall_ms: Some(5_000),
            delay_ms: 10,
            ..ScriptEntry::content(["a"])
        };
        assert_eq!(render_response(&stalled, &non_stream).head_delay_ms, 5_010);
        let dropped = ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(0),
            ..ScriptEntry::content(["a"])
        };
        assert_eq!(
            render_response(&dropped, &non_stream).body,
            vec![BodyAction::DropConnection]
        );
    }
}
