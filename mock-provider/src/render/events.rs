//! The `data:` events of a streamed answer in wire order, chat or FIM, with the
//! dialect's details: where usage goes, what the role and finish deltas hold.

use bytes::Bytes;

use super::{DONE_EVENT, RenderContext, UsageField, WireFormat, data_event, tool_call_id};
use crate::script::{Dialect, Endpoint, ScriptEntry, UsagePlacement};
use crate::wire::{
    ChunkChoiceWire, DeltaWire, FunctionDeltaWire, TextChoiceWire, ToolCallDeltaWire,
};

/// The `data:` events of a streamed entry, without faults, keep-alives or delays, each
/// as the exact bytes `data: <json>\n\n`; the last one is `data: [DONE]\n\n`. An
/// Anthropic stream's events are `event: <type>\ndata: <json>\n\n`, ending with
/// `message_stop`.
pub fn stream_events(entry: &ScriptEntry, context: &RenderContext) -> Vec<Bytes> {
    if context.format == WireFormat::Anthropic {
        // An Anthropic stream carries its usage in `message_start` and
        // `message_delta`, whatever the entry's placement says.
        return super::anthropic::message_events(entry, context);
    }
    let placement = usage_placement(entry, context);
    // Before the usage: `"usage": null` on every chunk when the request asked
    // for usage (`stream_options.include_usage`), no key at all otherwise;
    // DeepSeek's API reference and OpenAI's agree on this.
    let no_usage_yet = context.include_usage.then_some(None);
    let finish_usage = match placement {
        UsagePlacement::OnFinish => Some(Some(&context.usage)),
        _ => no_usage_yet,
    };
    let mut events = match context.endpoint {
        Endpoint::Chat => chat_chunks(entry, context, no_usage_yet, finish_usage),
        Endpoint::Fim => text_chunks(entry, context, no_usage_yet, finish_usage),
    };
    if placement == UsagePlacement::Trailing {
        let id = context.response_id();
        let usage = Some(Some(&context.usage));
        let no_choices: Vec<()> = Vec::new();
        events.push(data_event(&context.response_json(
            &id,
            context.chunk_object(),
            no_choices,
            usage,
        )));
    }
    events.push(Bytes::from_static(DONE_EVENT.as_bytes()));
    events
}

/// The chat chunks of a stream up to and including the finish chunk.
fn chat_chunks(
    entry: &ScriptEntry,
    context: &RenderContext,
    no_usage_yet: UsageField<'_>,
    finish_usage: UsageField<'_>,
) -> Vec<Bytes> {
    let id = context.response_id();
    let chunk = |delta: DeltaWire<'_>, finish_reason: Option<&str>, usage: UsageField<'_>| {
        let choice = ChunkChoiceWire {
            index: 0,
            delta,
            logprobs: None,
            finish_reason,
        };
        data_event(&context.response_json(&id, "chat.completion.chunk", vec![choice], usage))
    };
    let mut events = Vec::new();
    if entry.role_chunk {
        // DeepSeek opens a thinking answer with null content and empty reasoning.
        let thinking = context.dialect == Dialect::Deepseek && !entry.reasoning.is_empty();
        events.push(chunk(
            DeltaWire {
                role: Some("assistant"),
                content: Some((!thinking).then_some("")),
                reasoning_content: thinking.then_some(""),
                ..DeltaWire::default()
            },
            None,
            no_usage_yet,
        ));
    }
    for fragment in entry.reasoning.iter() {
        events.push(chunk(
            DeltaWire {
                reasoning_content: Some(fragment),
                ..DeltaWire::default()
            },
            None,
            no_usage_yet,
        ));
    }
    for fragment in entry.content.iter() {
        events.push(chunk(
            DeltaWire {
                content: Some(Some(fragment)),
                ..DeltaWire::default()
            },
            None,
            no_usage_yet,
        ));
    }
    for (index, call) in entry.tool_calls.iter().enumerate() {
        let call_id = tool_call_id(call.id.as_deref(), context.response_number, index);
        let fragments: Vec<&str> = if call.arguments.is_empty() {
            vec![""]
        } else {
            call.arguments.iter().map(String::as_str).collect()
        };
        for (position, fragment) in fragments.into_iter().enumerate() {
            let first = position == 0;
            let delta = ToolCallDeltaWire {
                index,
                id: first.then_some(call_id.as_str()),
                kind: first.then_some("function"),
                function: FunctionDeltaWire {
                    name: first.then_some(call.name.as_str()),
                    arguments: fragment,
                },
            };
            events.push(chunk(
                DeltaWire {
                    tool_calls: Some(vec![delta]),
                    ..DeltaWire::default()
                },
                None,
                no_usage_yet,
            ));
        }
    }
    let finish_delta = match context.dialect {
        Dialect::Deepseek => DeltaWire {
            content: Some(Some("")),
            ..DeltaWire::default()
        },
        Dialect::Openai => DeltaWire::default(),
    };
    events.push(chunk(
        finish_delta,
        Some(entry.finish_reason_or_default()),
        finish_usage,
    ));
    events
}

/// The FIM chunks of a stream: one per content fragment, then the finish chunk.
fn text_chunks(
    entry: &ScriptEntry,
    context: &RenderContext,
    no_usage_yet: UsageField<'_>,
    finish_usage: UsageField<'_>,
) -> Vec<Bytes> {
    let id = context.response_id();
    let chunk = |text: &str, finish_reason: Option<&str>, usage: UsageField<'_>| {
        let choice = TextChoiceWire {
            text,
            index: 0,
            logprobs: None,
            finish_reason,
        };
        data_event(&context.response_json(&id, "text_completion", vec![choice], usage))
    };
    let mut events: Vec<Bytes> = entry
        .content
        .iter()
        .map(|fragment| chunk(fragment, None, no_usage_yet))
        .collect();
    events.push(chunk(
        "",
        Some(entry.finish_reason_or_default()),
        finish_usage,
    ));
    events
}

/// Where usage goes for this entry and request (see [`ScriptEntry::usage`]).
pub fn usage_placement(entry: &ScriptEntry, context: &RenderContext) -> UsagePlacement {
    entry.usage.unwrap_or(match context.dialect {
        Dialect::Deepseek => UsagePlacement::OnFinish,
        Dialect::Openai if context.include_usage => UsagePlacement::Trailing,
        Dialect::Openai => UsagePlacement::Omit,
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::{Value, json};

    use crate::render::test_support::{context, full_entry, json_payloads};
    use crate::render::{BodyAction, RenderContext, render_response};
    use crate::script::{Dialect, Endpoint, ScriptEntry, UsagePlacement};

    #[test]
    fn stream_has_the_official_event_order_and_exact_bytes() {
        let plan = render_response(&full_entry(), &context());
        assert_eq!(plan.status, 200);
        assert_eq!(
            plan.header("content-type"),
            Some("text/event-stream; charset=utf-8")
        );
        assert!(
            plan.body
                .iter()
                .all(|action| matches!(action, BodyAction::Send(_)))
        );
        let frames = plan.frames();
        assert_eq!(frames.len(), 11);
        assert_eq!(
            frames[0],
            &Bytes::from_static(
                b"data: {\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1735689602,\
                  \"model\":\"deepseek-v4-flash\",\"system_fingerprint\":\"fp_test\",\"choices\":[{\"index\":0,\
                  \"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\
                  \"usage\":null}\n\n"
            )
        );
        assert_eq!(
            frames[5],
            &Bytes::from_static(
                b"data: {\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1735689602,\
                  \"model\":\"deepseek-v4-flash\",\"system_fingerprint\":\"fp_test\",\"choices\":[{\"index\":0,\
                  \"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":\
                  {\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]},\"logprobs\":null,\"finish_reason\":null}],\
                  \"usage\":null}\n\n"
            )
        );
        assert_eq!(frames[10], &Bytes::from_static(b"data: [DONE]\n\n"));

        let chunks = json_payloads(&plan);
        let deltas: Vec<&Value> = chunks
            .iter()
            .map(|chunk| &chunk["choices"][0]["delta"])
            .collect();
        assert_eq!(deltas[1], &json!({"reasoning_content": "Thin"}));
        assert_eq!(deltas[2], &json!({"reasoning_content": "king"}));
        assert_eq!(deltas[3], &json!({"content": "Hel"}));
        assert_eq!(deltas[4], &json!({"content": "lo"}));
        assert_eq!(
            deltas[6],
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"a\"}"}}]})
        );
        assert_eq!(
            deltas[7],
            &json!({"tool_calls": [{"index": 1, "id": "call_3_1", "type": "function",
                    "function": {"name": "ls", "arguments": ""}}]})
        );
        assert_eq!(deltas[8], &json!({}));
        assert_eq!(chunks[8]["choices"][0]["finish_reason"], "tool_calls");
        assert!(chunks[..9].iter().all(|chunk| chunk["usage"].is_null()));
        assert_eq!(chunks[9]["choices"], json!([]));
        assert_eq!(
            chunks[9]["usage"],
            json!({"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
                   "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
                   "prompt_tokens_details": {"cached_tokens": 64},
                   "completion_tokens_details": {"reasoning_tokens": 2}})
        );
        for chunk in &chunks {
            assert_eq!(chunk["id"], "chatcmpl-3");
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert_eq!(chunk["created"], 1_735_689_602);
            assert_eq!(chunk["model"], "deepseek-v4-flash");
        }
    }

    #[test]
    fn usage_follows_include_usage_and_placement() {
        let entry = ScriptEntry::content(["x"]);
        let without = RenderContext {
            include_usage: false,
            ..context()
        };
        let chunks = json_payloads(&render_response(&entry, &without));
        assert!(chunks.iter().all(|chunk| chunk["usage"].is_null()));
        assert_eq!(chunks.len(), 3);

        let on_finish = ScriptEntry {
            usage: Some(UsagePlacement::OnFinish),
            ..entry.clone()
        };
        let chunks = json_payloads(&render_response(&on_finish, &context()));
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[2]["usage"]["prompt_tokens"], 100);

        let omitted = ScriptEntry {
            usage: Some(UsagePlacement::Omit),
            ..entry
        };
        let chunks = json_payloads(&render_response(&omitted, &context()));
        assert!(chunks.iter().all(|chunk| chunk["usage"].is_null()));
    }

    #[test]
    fn deepseek_sends_usage_on_the_finish_chunk_whatever_the_request_asks() {
        for include_usage in [false, true] {
            let deepseek = RenderContext {
                dialect: Dialect::Deepseek,
                include_usage,
                ..context()
            };
            let plan = render_response(&full_entry(), &deepseek);
            let chunks = json_payloads(&plan);
            // role, 2 reasoning, 2 content, 3 tool-call fragments, finish; no usage chunk.
            assert_eq!(chunks.len(), 9);
            assert!(
                chunks
                    .iter()
                    .all(|chunk| !chunk["choices"].as_array().unwrap().is_empty())
            );
            // With include_usage every chunk before the last says `usage: null`
            // (DeepSeek's API reference); without it, the key is absent.
            for chunk in &chunks[..8] {
                let expected = include_usage.then_some(&Value::Null);
                assert_eq!(
                    chunk.get("usage"),
                    expected,
                    "include_usage {include_usage}"
                );
            }
            let finish = &chunks[8];
            assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
            assert_eq!(finish["choices"][0]["delta"], json!({"content": ""}));
            assert_eq!(finish["usage"]["prompt_cache_hit_tokens"], 64);
            // A thinking answer opens with null content and empty reasoning.
            assert_eq!(
                chunks[0]["choices"][0]["delta"],
                json!({"role": "assistant", "content": null, "reasoning_content": ""})
            );
            for chunk in &chunks {
                assert_eq!(chunk["system_fingerprint"], "fp_test");
                assert!(chunk["choices"][0]["logprobs"].is_null());
            }
        }
        let plain = render_response(
            &ScriptEntry::content(["x"]),
            &RenderContext {
                dialect: Dialect::Deepseek,
                ..context()
            },
        );
        assert_eq!(
            json_payloads(&plain)[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
    }

    #[test]
    fn fim_answers_are_text_completions() {
        let fim = RenderContext {
            endpoint: Endpoint::Fim,
            dialect: Dialect::Deepseek,
            ..context()
        };
        let entry = ScriptEntry::content(["fn ", "main"]);
        let chunks = json_payloads(&render_response(&entry, &fim));
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[0]["object"], "text_completion");
        assert_eq!(chunks[0]["id"], "cmpl-3");
        assert_eq!(
            chunks[1]["choices"][0],
            json!({"text": "main", "index": 0, "logprobs": null, "finish_reason": null})
        );
        assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[2]["usage"]["total_tokens"], 107);
        let whole = render_response(
            &entry,
            &RenderContext {
                stream: false,
                ..fim
            },
        );
        let body: Value = serde_json::from_slice(&whole.body_bytes()).unwrap();
        assert_eq!(body["choices"][0]["text"], "fn main");
        assert_eq!(body["object"], "text_completion");
        assert_eq!(body["usage"]["prompt_tokens"], 100);
    }

    #[test]
    fn role_chunk_can_be_turned_off() {
        let entry = ScriptEntry {
            role_chunk: false,
            ..ScriptEntry::content(["x"])
        };
        let chunks = json_payloads(&render_response(&entry, &context()));
        assert_eq!(chunks[0]["choices"][0]["delta"], json!({"content": "x"}));
    }
}
