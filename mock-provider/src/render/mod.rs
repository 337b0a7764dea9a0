//! Pure rendering of one script entry into a [`ResponsePlan`]: status, headers and the
//! exact body bytes with the pauses and faults between them.
//!
//! Keeping this free of I/O means the SSE wire format and every fault can be unit-tested
//! byte for byte, the socket server is a thin executor of the plan, and the harness can
//! reuse the same bytes in-process without a socket.
//!
//! [`render_response`] picks one of three renderings: `events` (the `data:` events of a
//! stream, per dialect, chat or FIM) paced and broken by `stream`, the single JSON
//! object of `completion`, or the JSON error body of `error`. `plan` holds what they
//! produce; this file holds what they share.

mod anthropic;
mod completion;
mod error;
mod events;
mod plan;
mod stream;
#[cfg(test)]
mod test_support;

use bytes::Bytes;

use crate::script::{Dialect, Endpoint, FaultKind, ScriptEntry};
use crate::wire::{ResponseWire, Usage, to_json};

pub(crate) use anthropic::{
    error_body as anthropic_error_body, error_type_for_status as anthropic_error_type_for_status,
};
pub use error::error_type_for_status;
pub use events::{stream_events, usage_placement};
pub use plan::{BodyAction, ResponsePlan};

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
    /// Whose wire shapes the answer takes: the chat API's, or the Anthropic
    /// endpoint's (`/anthropic/v1/messages`).
    pub format: WireFormat,
}

/// The API a request arrived on, which decides the shape of its answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WireFormat {
    /// DeepSeek's OpenAI-compatible API (chat completions, FIM).
    #[default]
    OpenAi,
    /// DeepSeek's Anthropic-compatible API (`/anthropic/v1/messages`).
    Anthropic,
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

/// Render `entry` for a request described by `context` (pure: no I/O, no clock).
///
/// The entry should have passed [`ScriptEntry::validate`]; an invalid entry still
/// renders, following the fields it has.
pub fn render_response(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    if entry.is_http_error() {
        return error::render_http_error(entry, context);
    }
    if entry.fault == Some(FaultKind::NoContent) {
        return error::render_no_content(entry);
    }
    if entry.fault == Some(FaultKind::CloseBeforeHead) {
        return error::render_close_before_head(entry);
    }
    if context.stream {
        stream::render_stream(entry, context)
    } else {
        completion::render_completion(entry, context)
    }
}

/// The `usage` field of a response object: absent, `null`, or the usage.
type UsageField<'a> = Option<Option<&'a Usage>>;

/// Add the scripted `x-request-id` header, if any.
fn push_request_id(entry: &ScriptEntry, headers: &mut Vec<(String, String)>) {
    if let Some(request_id) = &entry.request_id {
        headers.push(("x-request-id".to_owned(), request_id.clone()));
    }
}

/// The wire id of tool call `index`: the scripted one, else `call_<n>_<index>`.
pub(crate) fn tool_call_id(scripted: Option<&str>, response_number: u64, index: usize) -> String {
    scripted.map_or_else(|| format!("call_{response_number}_{index}"), str::to_owned)
}

/// The bytes of one `data:` event carrying `payload` (a single line).
pub fn data_event(payload: &str) -> Bytes {
    // Sized once: every chunk of every stream is written through here.
    let mut event = Vec::with_capacity(payload.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(payload.as_bytes());
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// The payload `malformed_json` sends unless the entry scripts one: a truncated chunk.
fn default_malformed_payload(context: &RenderContext, object: &str) -> String {
    if context.format == WireFormat::Anthropic {
        return anthropic::default_malformed_payload();
    }
    format!(
        "{{\"id\":\"{}\",\"object\":\"{object}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"",
        context.response_id()
    )
}
