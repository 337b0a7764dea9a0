//! Pure rendering of one script entry into a [`ResponsePlan`]: status, headers and the
//! exact body bytes with the pauses and faults between them.
//!
//! Keeping this free of I/O means the SSE wire format and every fault can be unit-tested
//! byte for byte, the socket server is a thin executor of the plan, and the harness can
//! reuse the same bytes in-process without a socket.

use bytes::Bytes;

use crate::request_rules::context_length_message;
use crate::script::{Dialect, Endpoint, FaultKind, ScriptEntry, UsagePlacement};
use crate::wire::{
    ChunkChoiceWire, CompletionChoiceWire, DeltaWire, ErrorBody, FunctionDeltaWire, FunctionWire,
    MessageWire, ResponseWire, TextChoiceWire, ToolCallDeltaWire, ToolCallWire, Usage, to_json,
};

/// The bytes of one keep-alive comment event.
pub const KEEP_ALIVE_COMMENT: &str = ": keep-alive\n\n";

/// The bytes of the terminating event.
pub const DONE_EVENT: &str = "data: [DONE]\n\n";

/// Everything the entry's response depends on besides the entry itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderContext {
    /// 1-based number of this scripted response; ids are `chatcmpl-<n>` and default
    /// tool-call ids `call_<n>_<index>`.
    pub response_number: u64,
    /// `created` field, Unix seconds.
    pub created_s: u64,
    /// `model` echoed in every chunk (the request's model).
    pub model: String,
    /// Whether the request asked for a stream (`stream: true`).
    pub stream: bool,
    /// Whether the request sent `stream_options.include_usage: true`.
    pub include_usage: bool,
    /// Usage of this response (prompt accounting + completion counts).
    pub usage: Usage,
    /// The request's `max_tokens` (else `max_completion_tokens`), quoted by the
    /// `context_overflow` message.
    pub max_tokens: Option<u64>,
    /// The requested model's context window, quoted by the `context_overflow` message.
    pub context_window: u64,
    /// Whose wire details to follow.
    pub dialect: Dialect,
    /// `system_fingerprint` of every chunk and completion.
    pub system_fingerprint: String,
    /// Chat completion or FIM text completion.
    pub endpoint: Endpoint,
}

impl RenderContext {
    /// The response id, `chatcmpl-<response_number>` (`cmpl-<n>` for FIM).
    pub fn response_id(&self) -> String {
        match self.endpoint {
            Endpoint::Chat => format!("chatcmpl-{}", self.response_number),
            Endpoint::Fim => format!("cmpl-{}", self.response_number),
        }
    }

    /// The `object` of a streamed chunk.
    fn chunk_object(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Fim => "text_completion",
        }
    }

    /// A response object of this response, as compact JSON.
    fn response_json<Choice: serde::Serialize>(
        &self,
        id: &str,
        object: &'static str,
        choices: Vec<Choice>,
        usage: UsageField<'_>,
    ) -> String {
        to_json(&ResponseWire {
            id,
            object,
            created: self.created_s,
            model: &self.model,
            system_fingerprint: &self.system_fingerprint,
            choices,
            usage,
        })
    }
}

/// One step of writing a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyAction {
    /// Wait this long (tokio time) before the next action; nothing is written.
    Sleep {
        /// Milliseconds to wait.
        delay_ms: u64,
    },
    /// Write these bytes as one body frame (one SSE event or comment, or a whole JSON body).
    Send(Bytes),
    /// Abort the connection: the body never completes (a chunked body lacks its
    /// terminating chunk), and nothing after this action is sent.
    DropConnection,
}

/// A fully rendered response: what to send, when, and how it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsePlan {
    /// Wait this long (tokio time) before sending the status line and headers.
    pub head_delay_ms: u64,
    /// HTTP status code.
    pub status: u16,
    /// Response headers, in order (lowercase names).
    pub headers: Vec<(String, String)>,
    /// Body actions, in order.
    pub body: Vec<BodyAction>,
}

impl ResponsePlan {
    /// An HTTP error with a JSON error body.
    pub fn error(status: u16, body: &ErrorBody) -> Self {
        Self {
            head_delay_ms: 0,
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![BodyAction::Send(Bytes::from(body.to_json()))],
        }
    }

    /// All bytes a patient client receives (every `Send`, concatenated).
    pub fn body_bytes(&self) -> Bytes {
        let mut all = Vec::new();
        for action in &self.body {
            if let BodyAction::Send(bytes) = action {
                all.extend_from_slice(bytes);
            }
        }
        Bytes::from(all)
    }

    /// The `Send` frames, in order.
    pub fn frames(&self) -> Vec<&Bytes> {
        self.body
            .iter()
            .filter_map(|action| match action {
                BodyAction::Send(bytes) => Some(bytes),
                _ => None,
            })
            .collect()
    }

    /// True if the body ends by dropping the connection.
    pub fn drops_connection(&self) -> bool {
        self.body.contains(&BodyAction::DropConnection)
    }

    /// Value of a response header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Sum of all waits (head delay plus every `Sleep`), in milliseconds.
    pub fn total_delay_ms(&self) -> u64 {
        self.head_delay_ms
            + self
                .body
                .iter()
                .map(|action| match action {
                    BodyAction::Sleep { delay_ms } => *delay_ms,
                    _ => 0,
                })
                .sum::<u64>()
    }
}

/// Render `entry` for a request described by `context` (pure: no I/O, no clock).
///
/// The entry should have passed [`ScriptEntry::validate`]; an invalid entry still
/// renders, following the fields it has.
pub fn render_response(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    if entry.is_http_error() {
        return render_http_error(entry, context);
    }
    if context.stream {
        render_stream(entry, context)
    } else {
        render_completion(entry, context)
    }
}

/// The `data:` events of a streamed entry, without faults, keep-alives or delays, each
/// as the exact bytes `data: <json>\n\n`; the last one is `data: [DONE]\n\n`.
pub fn stream_events(entry: &ScriptEntry, context: &RenderContext) -> Vec<Bytes> {
    let placement = usage_placement(entry, context);
    // Before the usage: OpenAI sends `"usage": null` when usage was asked for,
    // DeepSeek no key at all.
    let no_usage_yet =
        (context.dialect == Dialect::Openai && context.include_usage).then_some(None);
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

type UsageField<'a> = Option<Option<&'a Usage>>;

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

fn render_stream(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let events = stream_events(entry, context);
    let event_count = events.len();
    let (end, fault_at) = match entry.fault {
        Some(FaultKind::MissingDone) => {
            let without_done = event_count - 1;
            (
                entry
                    .after_events
                    .map_or(without_done, |n| n.min(without_done)),
                None,
            )
        }
        Some(kind @ (FaultKind::DropConnection | FaultKind::Stall | FaultKind::MalformedJson)) => (
            event_count,
            Some((kind, entry.after_events.unwrap_or(0).min(event_count))),
        ),
        _ => (event_count, None),
    };
    let mut body = Vec::new();
    for (position, event) in events.into_iter().take(end).enumerate() {
        if let Some((kind, at)) = fault_at
            && at == position
            && apply_stream_fault(kind, entry, context, &mut body)
        {
            return stream_plan(entry, body);
        }
        if entry.delay_ms > 0 {
            body.push(BodyAction::Sleep {
                delay_ms: entry.delay_ms,
            });
        }
        for _ in entry.keep_alive_before.iter().filter(|&&k| k == position) {
            body.push(keep_alive());
        }
        body.push(BodyAction::Send(event));
    }
    for _ in entry.keep_alive_before.iter().filter(|&&k| k >= end) {
        body.push(keep_alive());
    }
    if let Some((kind, at)) = fault_at
        && at >= end
    {
        apply_stream_fault(kind, entry, context, &mut body);
    }
    stream_plan(entry, body)
}

/// Push the fault's actions; returns true if the body ends here.
fn apply_stream_fault(
    kind: FaultKind,
    entry: &ScriptEntry,
    context: &RenderContext,
    body: &mut Vec<BodyAction>,
) -> bool {
    match kind {
        FaultKind::DropConnection => {
            body.push(BodyAction::DropConnection);
            true
        }
        FaultKind::Stall => {
            body.push(BodyAction::Sleep {
                delay_ms: entry.stall_ms.unwrap_or(0),
            });
            false
        }
        FaultKind::MalformedJson => {
            let payload = entry
                .malformed_payload
                .clone()
                .unwrap_or_else(|| default_malformed_payload(context, context.chunk_object()));
            body.push(BodyAction::Send(data_event(&payload)));
            false
        }
        _ => false,
    }
}

fn stream_plan(entry: &ScriptEntry, body: Vec<BodyAction>) -> ResponsePlan {
    let mut headers = vec![
        (
            "content-type".to_owned(),
            "text/event-stream; charset=utf-8".to_owned(),
        ),
        ("cache-control".to_owned(), "no-cache".to_owned()),
    ];
    push_request_id(entry, &mut headers);
    ResponsePlan {
        head_delay_ms: 0,
        status: 200,
        headers,
        body,
    }
}

fn render_completion(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let id = context.response_id();
    // A non-streaming answer carries usage unless the entry says `omit`.
    let usage = (entry.usage != Some(UsagePlacement::Omit)).then_some(Some(&context.usage));
    let object = match context.endpoint {
        Endpoint::Chat => "chat.completion",
        Endpoint::Fim => "text_completion",
    };
    let whole = match context.endpoint {
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
    }
}

fn render_http_error(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let kind = entry.fault.unwrap_or(FaultKind::ServerError);
    let (status, default_message, default_type, code) = match kind {
        FaultKind::RateLimit => (
            429,
            "Rate limit reached for requests. Please slow down and retry later.".to_owned(),
            "rate_limit_error",
            Some("rate_limit_exceeded"),
        ),
        FaultKind::ContextOverflow => {
            let completion = context.max_tokens.unwrap_or(0);
            (
                400,
                context_length_message(
                    context.context_window,
                    context.usage.prompt_tokens,
                    completion,
                ),
                "invalid_request_error",
                // DeepSeek repeats the type as the code.
                Some("invalid_request_error"),
            )
        }
        FaultKind::HttpError => {
            let status = entry.status.unwrap_or(500);
            (
                status,
                format!("HTTP error {status} (scripted)"),
                error_type_for_status(status),
                None,
            )
        }
        _ => (
            500,
            "The server had an error while processing your request. Sorry about that!".to_owned(),
            "server_error",
            Some("internal_server_error"),
        ),
    };
    let body = ErrorBody::new(
        entry.message.clone().unwrap_or(default_message),
        entry.error_type.as_deref().unwrap_or(default_type),
        code,
    );
    let mut plan = ResponsePlan::error(status, &body);
    plan.head_delay_ms = entry.delay_ms;
    if let Some(seconds) = entry.retry_after_s {
        plan.headers
            .push(("retry-after".to_owned(), seconds.to_string()));
    }
    push_request_id(entry, &mut plan.headers);
    plan
}

/// The `error.type` used for a status when the script does not set one.
pub fn error_type_for_status(status: u16) -> &'static str {
    match status {
        401 | 403 => "authentication_error",
        402 => "insufficient_quota",
        404 => "not_found_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

fn push_request_id(entry: &ScriptEntry, headers: &mut Vec<(String, String)>) {
    if let Some(request_id) = &entry.request_id {
        headers.push(("x-request-id".to_owned(), request_id.clone()));
    }
}

pub(crate) fn tool_call_id(scripted: Option<&str>, response_number: u64, index: usize) -> String {
    scripted.map_or_else(|| format!("call_{response_number}_{index}"), str::to_owned)
}

fn keep_alive() -> BodyAction {
    BodyAction::Send(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes()))
}

/// The bytes of one `data:` event carrying `payload` (a single line).
pub fn data_event(payload: &str) -> Bytes {
    Bytes::from(format!("data: {payload}\n\n"))
}

fn default_malformed_payload(context: &RenderContext, object: &str) -> String {
    format!(
        "{{\"id\":\"{}\",\"object\":\"{object}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"",
        context.response_id()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::script::ScriptToolCall;
    use crate::sse::{SseItem, parse_sse};
    use crate::wire::{CompletionTokensDetails, PromptTokensDetails};

    fn context() -> RenderContext {
        RenderContext {
            response_number: 3,
            created_s: 1_735_689_602,
            model: "deepseek-v4-flash".into(),
            stream: true,
            include_usage: true,
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 7,
                total_tokens: 107,
                prompt_cache_hit_tokens: 64,
                prompt_cache_miss_tokens: 36,
                prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: 64 }),
                completion_tokens_details: Some(CompletionTokensDetails {
                    reasoning_tokens: 2,
                }),
            },
            max_tokens: Some(256_000),
            context_window: 131_072,
            dialect: Dialect::Openai,
            system_fingerprint: "fp_test".into(),
            endpoint: Endpoint::Chat,
        }
    }

    fn payloads(plan: &ResponsePlan) -> Vec<String> {
        parse_sse(&plan.body_bytes())
            .into_iter()
            .filter_map(|item| match item {
                SseItem::Data(data) => Some(data),
                SseItem::Comment(_) => None,
            })
            .collect()
    }

    fn json_payloads(plan: &ResponsePlan) -> Vec<Value> {
        payloads(plan)
            .into_iter()
            .filter(|payload| payload != "[DONE]")
            .map(|payload| serde_json::from_str(&payload).expect("chunk is JSON"))
            .collect()
    }

    fn full_entry() -> ScriptEntry {
        ScriptEntry {
            reasoning: ["Thin", "king"].into_iter().collect(),
            content: ["Hel", "lo"].into_iter().collect(),
            tool_calls: vec![
                ScriptToolCall {
                    id: Some("call_a".into()),
                    name: "read".into(),
                    arguments: ["{\"pa", "th\":\"a\"}"].into_iter().collect(),
                },
                ScriptToolCall {
                    id: None,
                    name: "ls".into(),
                    arguments: Default::default(),
                },
            ],
            finish_reason: Some("tool_calls".into()),
            ..ScriptEntry::stream()
        }
    }

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
            assert!(chunks[..8].iter().all(|chunk| chunk.get("usage").is_none()));
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

    #[test]
    fn delays_and_keep_alives_are_placed_before_their_event() {
        let entry = ScriptEntry {
            delay_ms: 10,
            keep_alive_before: vec![1, 1, 99],
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        let sleep = BodyAction::Sleep { delay_ms: 10 };
        let keep = BodyAction::Send(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes()));
        let kinds: Vec<&str> = plan
            .body
            .iter()
            .map(|action| match action {
                BodyAction::Sleep { .. } => "sleep",
                BodyAction::Send(bytes) if bytes.starts_with(b":") => "keep",
                BodyAction::Send(_) => "event",
                BodyAction::DropConnection => "drop",
            })
            .collect();
        // events: role, content, finish, usage, [DONE]
        assert_eq!(
            kinds,
            [
                "sleep", "event", "sleep", "keep", "keep", "event", "sleep", "event", "sleep",
                "event", "sleep", "event", "keep"
            ]
        );
        assert_eq!(plan.body[0], sleep);
        assert_eq!(plan.body[3], keep);
        assert_eq!(plan.total_delay_ms(), 50);
        let comments: Vec<SseItem> = parse_sse(&plan.body_bytes())
            .into_iter()
            .filter(|item| matches!(item, SseItem::Comment(_)))
            .collect();
        assert_eq!(comments, vec![SseItem::Comment(" keep-alive".into()); 3]);
    }

    #[test]
    fn drop_connection_cuts_after_n_events() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(2),
            ..ScriptEntry::content(["a", "b", "c"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body.len(), 3);
        assert_eq!(plan.body[2], BodyAction::DropConnection);
        assert!(plan.drops_connection());
        assert_eq!(payloads(&plan).len(), 2);
    }

    #[test]
    fn stall_pauses_after_n_events_then_continues() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::Stall),
            after_events: Some(2),
            stall_ms: Some(600_000),
            ..ScriptEntry::content(["a", "b"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body[2], BodyAction::Sleep { delay_ms: 600_000 });
        assert_eq!(plan.total_delay_ms(), 600_000);
        assert_eq!(payloads(&plan).last().map(String::as_str), Some("[DONE]"));
        assert_eq!(payloads(&plan).len(), 6);
    }

    #[test]
    fn malformed_json_inserts_a_non_json_payload() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::MalformedJson),
            after_events: Some(1),
            ..ScriptEntry::content(["a"])
        };
        let all = payloads(&render_response(&entry, &context()));
        assert_eq!(all.len(), 6);
        assert!(serde_json::from_str::<Value>(&all[1]).is_err());
        assert!(all[1].starts_with("{\"id\":\"chatcmpl-3\""));
        assert_eq!(all[5], "[DONE]");

        let custom = ScriptEntry {
            malformed_payload: Some("not json".into()),
            ..entry
        };
        assert_eq!(
            payloads(&render_response(&custom, &context()))[1],
            "not json"
        );
    }

    #[test]
    fn missing_done_ends_without_done() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::MissingDone),
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        let all = payloads(&plan);
        assert_eq!(all.len(), 4);
        assert!(all.iter().all(|payload| payload != "[DONE]"));
        assert!(!plan.drops_connection());

        let early = ScriptEntry {
            after_events: Some(1),
            ..entry
        };
        assert_eq!(payloads(&render_response(&early, &context())).len(), 1);
    }

    #[test]
    fn fault_after_the_last_event_happens_at_the_end() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(1000),
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body.last(), Some(&BodyAction::DropConnection));
        assert_eq!(payloads(&plan).last().map(String::as_str), Some("[DONE]"));
    }

    #[test]
    fn http_errors_have_openai_shaped_bodies() {
        let rate_limited = ScriptEntry {
            retry_after_s: Some(2),
            request_id: Some("req-9".into()),
            ..ScriptEntry::fault(FaultKind::RateLimit)
        };
        let plan = render_response(&rate_limited, &context());
        assert_eq!(plan.status, 429);
        assert_eq!(plan.header("retry-after"), Some("2"));
        assert_eq!(plan.header("x-request-id"), Some("req-9"));
        assert_eq!(plan.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(body["error"]["type"], "rate_limit_error");
        assert!(body["error"]["param"].is_null());

        let plan = render_response(&ScriptEntry::fault(FaultKind::ServerError), &context());
        assert_eq!(plan.status, 500);
        assert_eq!(plan.header("retry-after"), None);

        let plan = render_response(&ScriptEntry::fault(FaultKind::ContextOverflow), &context());
        assert_eq!(plan.status, 400);
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("maximum context length is 131072 tokens"),
            "{message}"
        );
        assert_eq!(body["error"]["code"], "invalid_request_error");
        assert!(message.contains(
            "you requested 256100 tokens (100 in the messages, 256000 in the completion)"
        ));
        assert_eq!(body["error"]["type"], "invalid_request_error");

        let custom = ScriptEntry {
            status: Some(402),
            message: Some("Insufficient Balance".into()),
            delay_ms: 30,
            ..ScriptEntry::fault(FaultKind::HttpError)
        };
        let plan = render_response(&custom, &context());
        assert_eq!((plan.status, plan.head_delay_ms), (402, 30));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body,
            json!({"error": {"message": "Insufficient Balance", "type": "insufficient_quota",
                             "param": null, "code": null}})
        );
    }

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
