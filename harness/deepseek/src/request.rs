//! The request body (09 W1–W3) and headers (W6): how a prepared call
//! becomes DeepSeek chat-completions JSON, byte for byte in upstream's key order.

use dshc_model::js::{JsError, RoundTrip, join_element_text};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::*;

fn block_type(block: &Value) -> Option<&str> {
    prop(block, "type").and_then(Value::as_str)
}

/// Whether content blocks hold an image, including inside tool results
/// (`contentHasImage`).
pub fn content_has_image(blocks: &[Value]) -> bool {
    blocks.iter().any(|block| match block_type(block) {
        Some("image") => true,
        Some("tool-result") => content_has_image(items(prop(block, "content"))),
        _ => false,
    })
}

/// Whether any message of a harness request holds an image.
pub fn request_has_image(request: &Value) -> bool {
    items(prop(request, "messages"))
        .iter()
        .any(|message| content_has_image(items(prop(message, "content"))))
}

/// The error the adapter's `stream()` throws for image input to a model whose
/// catalog entry does not list the `image` modality. Upstream checks this
/// before serializing; with the default (text-only) catalog it is what an
/// image in the history actually produces.
pub fn image_input_error(model: &str) -> JsError {
    llm_error(
        &format!("DeepSeek model \"{model}\" does not accept image input."),
        "UNSUPPORTED_CONTENT",
        None,
        None,
        None,
    )
}

/// The text blocks' texts joined with "" (`flattenText`).
pub(crate) fn flatten_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|block| block_type(block) == Some("text"))
        .map(|block| join_element_text(prop(block, "text")))
        .collect()
}

/// `serializeAssistant`: an assistant message's wire form, as a JSON value
/// (the image path builds its messages as values).
pub(crate) fn serialize_assistant(blocks: &[Value]) -> Value {
    serde_json::to_value(Assistant(blocks)).expect("a wire message serializes with string keys")
}

/// An assistant message on the wire: its text, its reasoning when there is
/// any, its tool calls when there are any.
struct Assistant<'a>(&'a [Value]);

impl Serialize for Assistant<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let blocks = self.0;
        let reasoning: String = blocks
            .iter()
            .filter(|block| block_type(block) == Some("reasoning"))
            .map(|block| join_element_text(prop(block, "text")))
            .collect();
        let mut wire = serializer.serialize_map(None)?;
        wire.serialize_entry("role", "assistant")?;
        wire.serialize_entry("content", &flatten_text(blocks))?;
        if !reasoning.is_empty() {
            wire.serialize_entry("reasoning_content", &reasoning)?;
        }
        if blocks.iter().any(is_tool_call) {
            let calls = blocks.iter().filter(|block| is_tool_call(block));
            wire.serialize_entry("tool_calls", &Seq(calls.map(ToolCall)))?;
        }
        wire.end()
    }
}

/// Whether a content block is a tool call.
fn is_tool_call(block: &Value) -> bool {
    block_type(block) == Some("tool-call")
}

/// The elements an iterator gives, as a JSON array (serialized once).
struct Seq<I>(I);

impl<I: Iterator<Item = T> + Clone, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.clone())
    }
}

/// A tool-call block as a wire tool call.
struct ToolCall<'a>(&'a Value);

impl Serialize for ToolCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let block = self.0;
        let mut call = serializer.serialize_map(None)?;
        serialize_defined(&mut call, "id", prop(block, "id"))?;
        serialize_function(
            &mut call,
            [
                ("name", prop(block, "name")),
                ("arguments", prop(block, "arguments")),
            ],
        )?;
        call.end()
    }
}

/// `key: value` only when the value is defined (what `JSON.stringify` does
/// with `undefined` properties), written as a round trip leaves it.
fn serialize_defined<M: SerializeMap>(
    map: &mut M,
    key: &str,
    value: Option<&Value>,
) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, &RoundTrip(value)),
        None => Ok(()),
    }
}

/// `"type": "function", "function": {fields}`, the part a wire tool and a
/// wire tool call share; each field written by [`serialize_defined`].
fn serialize_function<M: SerializeMap, const N: usize>(
    map: &mut M,
    fields: [(&'static str, Option<&Value>); N],
) -> Result<(), M::Error> {
    map.serialize_entry("type", "function")?;
    map.serialize_entry("function", &Defined(fields))
}

/// An object of request-given values, each written by [`serialize_defined`].
struct Defined<'a, const N: usize>([(&'static str, Option<&'a Value>); N]);

impl<const N: usize> Serialize for Defined<'_, N> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            serialize_defined(&mut map, key, value)?;
        }
        map.end()
    }
}

/// `{"role": role, "content": content}`.
#[derive(Serialize)]
struct RoleContent<'a, C> {
    role: &'a str,
    content: C,
}

/// A tool result as its own `tool` message: the call it answers, and its
/// text (`(no output)` when empty).
struct ToolMessage<'a>(&'a Value);

impl Serialize for ToolMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let result = self.0;
        let text = flatten_text(items(prop(result, "content")));
        let text = if text.is_empty() {
            "(no output)"
        } else {
            &text
        };
        let mut tool = serializer.serialize_map(None)?;
        tool.serialize_entry("role", "tool")?;
        serialize_defined(&mut tool, "tool_call_id", prop(result, "toolCallId"))?;
        tool.serialize_entry("content", text)?;
        tool.end()
    }
}

/// Append one harness message's wire messages to `wire` (W2): a system or
/// assistant message becomes one; any other message its text (sent only
/// when non-empty or when it holds no tool results), then one `tool`
/// message per tool-result block. The caller has checked for images.
fn serialize_message<S: SerializeSeq>(wire: &mut S, message: &Value) -> Result<(), S::Error> {
    let blocks = items(prop(message, "content"));
    match prop(message, "role").and_then(Value::as_str) {
        Some("system") => wire.serialize_element(&RoleContent {
            role: "system",
            content: flatten_text(blocks),
        }),
        Some("assistant") => wire.serialize_element(&Assistant(blocks)),
        _ => {
            let mut results = blocks
                .iter()
                .filter(|block| block_type(block) == Some("tool-result"))
                .peekable();
            let text = flatten_text(blocks);
            if !text.is_empty() || results.peek().is_none() {
                wire.serialize_element(&RoleContent {
                    role: "user",
                    content: text,
                })?;
            }
            results.try_for_each(|result| wire.serialize_element(&ToolMessage(result)))
        }
    }
}

/// What an image gets on the text path.
fn unsupported_image() -> JsError {
    llm_error(
        "The DeepSeek chat-completions adapter does not support image content.",
        "UNSUPPORTED_CONTENT",
        None,
        None,
        None,
    )
}

/// `serializeMessages` (W2): harness history → chat-completions messages.
/// Each tool-result block becomes its own `tool` message after the owning
/// user message's text (which is sent only when non-empty or when the message
/// has no tool results). Any image is `UNSUPPORTED_CONTENT`.
pub fn serialize_messages(messages: &[Value]) -> Result<Vec<Value>, JsError> {
    if messages
        .iter()
        .any(|message| content_has_image(items(prop(message, "content"))))
    {
        return Err(unsupported_image());
    }
    let wire = HistoryMessages {
        system: None,
        history: messages,
    };
    match serde_json::to_value(wire).expect("wire messages serialize with string keys") {
        Value::Array(wire) => Ok(wire),
        _ => unreachable!("messages serialize as an array"),
    }
}

/// The text path's messages: the request's system text, when present, then
/// the history's wire messages.
struct HistoryMessages<'a> {
    system: Option<&'a Value>,
    history: &'a [Value],
}

impl Serialize for HistoryMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut wire = serializer.serialize_seq(None)?;
        if let Some(system) = self.system {
            wire.serialize_element(&RoleContent {
                role: "system",
                content: RoundTrip(system),
            })?;
        }
        for message in self.history {
            serialize_message(&mut wire, message)?;
        }
        wire.end()
    }
}

/// The chat-completions body of a request, written from the request where
/// it lies (W1, W3, W4): keys `model, messages, stream, stream_options,
/// thinking?, reasoning_effort?, tools?, temperature?, max_tokens?, stop?`.
/// The system text leads `messages` whenever `request.system` is present
/// (even `""`; the loop omits an empty one). Every value taken from the
/// request is written as a `JSON.parse`/`JSON.stringify` round trip leaves
/// it ([`RoundTrip`]). Serialize it for the bytes; [`WireBody::to_value`]
/// gives it as a JSON value.
pub struct WireBody<'a> {
    request: &'a Value,
    thinking: Thinking,
    /// The image path's messages, system text included; on the text path
    /// (`None`) they are written from the request's.
    image_messages: Option<Value>,
}

impl<'a> WireBody<'a> {
    /// The text path's body; the caller has checked for images.
    pub(crate) fn text(request: &'a Value, defaults: &DeepSeekDefaults) -> Result<Self, JsError> {
        Ok(Self {
            request,
            thinking: resolve_thinking(request, defaults)?,
            image_messages: None,
        })
    }

    /// The image path's body around its serialized messages.
    pub(crate) fn with_messages(
        request: &'a Value,
        messages: Vec<Value>,
        defaults: &DeepSeekDefaults,
    ) -> Result<Self, JsError> {
        Ok(Self {
            request,
            thinking: resolve_thinking(request, defaults)?,
            image_messages: Some(Value::Array(messages)),
        })
    }

    /// The body as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a wire body serializes with string keys")
    }

    /// The body's bytes: compact JSON, as `JSON.stringify` writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a wire body serializes with string keys")
    }
}

/// A harness tool schema as a wire tool.
struct WireTool<'a>(&'a Value);

impl Serialize for WireTool<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tool = self.0;
        let mut wire = serializer.serialize_map(None)?;
        serialize_function(
            &mut wire,
            [
                ("name", prop(tool, "name")),
                ("description", prop(tool, "description")),
                ("parameters", prop(tool, "parameters")),
            ],
        )?;
        wire.end()
    }
}

/// `stream_options`: usage comes in the stream's last chunk.
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `thinking`: `{"type": "enabled" | "disabled"}`.
#[derive(Serialize)]
struct ThinkingType<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
}

impl Serialize for WireBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut body = serializer.serialize_map(None)?;
        serialize_defined(&mut body, "model", prop(request, "model"))?;
        match &self.image_messages {
            Some(messages) => body.serialize_entry("messages", &RoundTrip(messages))?,
            None => body.serialize_entry(
                "messages",
                &HistoryMessages {
                    system: prop(request, "system"),
                    history: items(prop(request, "messages")),
                },
            )?,
        }
        body.serialize_entry("stream", &true)?;
        body.serialize_entry(
            "stream_options",
            &StreamOptions {
                include_usage: true,
            },
        )?;
        if let Some(kind) = &self.thinking.thinking {
            body.serialize_entry("thinking", &ThinkingType { kind })?;
        }
        if let Some(effort) = &self.thinking.reasoning_effort {
            body.serialize_entry("reasoning_effort", effort)?;
        }
        let tools = items(prop(request, "tools"));
        if !tools.is_empty() {
            body.serialize_entry("tools", &Seq(tools.iter().map(WireTool)))?;
        }
        serialize_defined(&mut body, "temperature", prop(request, "temperature"))?;
        serialize_defined(&mut body, "max_tokens", prop(request, "maxTokens"))?;
        serialize_defined(&mut body, "stop", prop(request, "stop"))?;
        body.end()
    }
}

/// `serializeRequest` (W1–W4), text-only path: the [`WireBody`] as a JSON
/// value. Errors are `LlmError`s: `UNSUPPORTED_CONTENT` (checked first),
/// then `UNSUPPORTED_REASONING_EFFORT`.
pub fn serialize_request(request: &Value, defaults: &DeepSeekDefaults) -> Result<Value, JsError> {
    if request_has_image(request) {
        return Err(unsupported_image());
    }
    Ok(WireBody::text(request, defaults)?.to_value())
}

/// The request URL: `{baseURL}/chat/completions`.
pub fn chat_completions_url(base_url: &str) -> String {
    format!("{base_url}/chat/completions")
}

/// The request headers in upstream's insertion order (W6): bearer auth, JSON
/// body, SSE accept, attribution ([`USER_AGENT`]), the anonymous user id,
/// the session id when known, and the compaction marker. No cache directive.
pub fn request_headers(
    api_key: &str,
    user_id: &str,
    session_id: Option<&str>,
    compaction: bool,
) -> Vec<(String, String)> {
    let mut headers = vec![
        ("authorization".to_string(), format!("Bearer {api_key}")),
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
        ("user-agent".to_string(), USER_AGENT.to_string()),
        (
            "x-deepseek-harness-user-id".to_string(),
            user_id.to_string(),
        ),
    ];
    if let Some(session_id) = session_id {
        headers.push((
            "x-deepseek-harness-session-id".to_string(),
            session_id.to_string(),
        ));
    }
    if compaction {
        headers.push(("x-deepseek-harness-compact".to_string(), "1".to_string()));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    #[test]
    fn scenario_system_first_then_history_with_streaming_usage() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        let body = body(&req);
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}])
        );
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"deepseek-v4-flash","messages":[{"role":"system","content":"S"},{"role":"user","content":"u"}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn scenario_absent_system_adds_no_system_message() {
        let body = body(&request(vec![user(&["u"])]));
        assert_eq!(body["messages"], json!([{"role": "user", "content": "u"}]));
        // The adapter itself only tests for presence: a present "" is sent
        // (the loop is what omits an empty rendered prompt).
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("");
        assert_eq!(
            serialize_request(&req, &DeepSeekDefaults::default()).unwrap()["messages"][0],
            json!({"role": "system", "content": ""})
        );
    }

    #[test]
    fn scenario_user_text_blocks_join_without_separator() {
        let body = body_of(vec![user(&["a", "b"])]);
        assert_eq!(body["messages"], json!([{"role": "user", "content": "ab"}]));
    }

    #[test]
    fn scenario_empty_tool_result_is_no_output_and_no_user_message() {
        let body = body_of(vec![tool_result("c1", &[])]);
        assert_eq!(
            body["messages"],
            json!([{"role": "tool", "tool_call_id": "c1", "content": "(no output)"}])
        );
        let body = body_of(vec![tool_result("c2", &["", ""])]);
        assert_eq!(body["messages"][0]["content"], json!("(no output)"));
        let body = body_of(vec![tool_result("c3", &["x", "y"])]);
        assert_eq!(body["messages"][0]["content"], json!("xy"));
    }

    #[test]
    fn user_text_precedes_its_tool_results() {
        let message = json!({
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "r1"}], "isError": false},
                {"type": "text", "text": "note"},
                {"type": "tool-result", "toolCallId": "c2", "content": [], "isError": true},
            ],
            "source": {"kind": "user"},
            "role": "user",
            "id": "m",
        });
        assert_eq!(
            body_of(vec![message])["messages"],
            json!([
                {"role": "user", "content": "note"},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"},
                {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
            ])
        );
        // A user message with neither text nor tool results still goes out.
        assert_eq!(
            body_of(vec![user(&[])])["messages"],
            json!([{"role": "user", "content": ""}])
        );
    }

    #[test]
    fn scenario_assistant_tool_call_only_turn_has_empty_string_content() {
        let turn = assistant(json!([
            {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}
        ]));
        assert_eq!(
            serde_json::to_string(&body_of(vec![turn])["messages"][0]).unwrap(),
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}"#
        );
    }

    #[test]
    fn assistant_reasoning_is_sent_back_only_when_non_empty() {
        let turn = assistant(json!([
            {"type": "reasoning", "text": "th"},
            {"type": "text", "text": "A"},
            {"type": "reasoning", "text": "ink"},
            {"type": "text", "text": "B"},
        ]));
        assert_eq!(
            serde_json::to_string(&body_of(vec![turn])["messages"][0]).unwrap(),
            r#"{"role":"assistant","content":"AB","reasoning_content":"think"}"#
        );
        let plain =
            assistant(json!([{"type": "reasoning", "text": ""}, {"type": "text", "text": "A"}]));
        assert_eq!(
            body_of(vec![plain])["messages"][0],
            json!({"role": "assistant", "content": "A"})
        );
    }

    #[test]
    fn system_role_history_message_flattens_text() {
        let message = json!({"role": "system", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]});
        assert_eq!(
            body_of(vec![message])["messages"],
            json!([{"role": "system", "content": "xy"}])
        );
    }

    #[test]
    fn images_are_unsupported_content_even_nested_in_tool_results() {
        let expected = "The DeepSeek chat-completions adapter does not support image content.";
        let image = json!({"content": [{"type": "image", "attachment": {"id": "i"}}], "role": "user", "id": "m"});
        let error =
            serialize_request(&request(vec![image]), &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(error.message, expected);
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(json!({"message": expected, "code": "UNSUPPORTED_CONTENT"}))
        );
        let nested = json!({"content": [{"type": "tool-result", "toolCallId": "c", "content": [{"type": "image"}], "isError": false}], "role": "user", "id": "m"});
        let nested_request = request(vec![nested]);
        assert!(request_has_image(&nested_request));
        let error = serialize_request(&nested_request, &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
        // The image check runs before effort validation.
        let mut both = request(vec![
            json!({"content": [{"type": "image"}], "role": "assistant"}),
        ]);
        both["reasoningEffort"] = json!("medium");
        assert_eq!(
            serialize_request(&both, &DeepSeekDefaults::default())
                .unwrap_err()
                .code
                .as_deref(),
            Some("UNSUPPORTED_CONTENT")
        );
        assert!(!request_has_image(&request(vec![user(&["u"])])));
        let gate = image_input_error("deepseek-v4-flash");
        assert_eq!(
            gate.message,
            "DeepSeek model \"deepseek-v4-flash\" does not accept image input."
        );
        assert_eq!(gate.code.as_deref(), Some("UNSUPPORTED_CONTENT"));
    }

    #[test]
    fn top_level_key_order_with_every_optional_field() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        req["reasoningEffort"] = json!("high");
        req["temperature"] = json!(0.5);
        req["maxTokens"] = json!(256000);
        req["stop"] = json!(["END"]);
        req["purpose"] = json!("agent");
        req["tools"] = json!([
            {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"b": {}, "1": {}}}},
            {"name": "bash", "description": "Run", "parameters": {"type": "object"}},
        ]);
        let text = serde_json::to_string(&body(&req)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"model":"deepseek-v4-flash","messages":[{"role":"system","content":"S"},{"role":"user","content":"u"}],"#,
                r#""stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"enabled"},"reasoning_effort":"high","#,
                r#""tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"1":{},"b":{}}}}},"#,
                r#"{"type":"function","function":{"name":"bash","description":"Run","parameters":{"type":"object"}}}],"#,
                r#""temperature":0.5,"max_tokens":256000,"stop":["END"]}"#
            )
        );
    }

    #[test]
    fn empty_tools_and_unset_fields_are_omitted_and_numbers_are_js_numbers() {
        let mut req = request(vec![user(&["u"])]);
        req["tools"] = json!([]);
        req["temperature"] = json!(1.0);
        let body = body(&req);
        assert!(body.get("tools").is_none());
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("stop").is_none());
        assert!(body.get("thinking").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(serde_json::to_string(&body["temperature"]).unwrap(), "1");
    }

    #[test]
    fn no_cache_directive_anywhere() {
        let mut req = request(vec![user(&["u"])]);
        req["system"] = json!("S");
        let text = serde_json::to_string(&body(&req)).unwrap();
        assert!(!text.contains("cache"), "{text}");
        let headers = request_headers("k", "u", Some("s"), true);
        assert!(
            headers
                .iter()
                .all(|(n, v)| !n.contains("cache") && !v.contains("cache"))
        );
    }

    #[test]
    fn scenario_two_step_tool_turn_is_prefix_identical() {
        let mut first = request(vec![user(&["list files"])]);
        first["system"] = json!("S");
        first["reasoningEffort"] = json!("high");
        first["maxTokens"] = json!(256000);
        first["tools"] =
            json!([{"name": "ls", "description": "List", "parameters": {"type": "object"}}]);
        let mut second = first.clone();
        let messages = second["messages"].as_array_mut().unwrap();
        messages.push(assistant(json!([
            {"type": "reasoning", "text": "need ls"},
            {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"},
        ])));
        messages.push(tool_result("c1", &["a.txt"]));
        let one = body(&first);
        let two = body(&second);
        let one_messages = one["messages"].as_array().unwrap();
        let two_messages = two["messages"].as_array().unwrap();
        assert_eq!(&two_messages[..one_messages.len()], one_messages.as_slice());
        assert_eq!(
            &two_messages[one_messages.len()..],
            &[
                json!({"role": "assistant", "content": "", "reasoning_content": "need ls", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}),
            ]
        );
        let without_messages = |mut body: Value| {
            body.as_object_mut().unwrap().remove("messages");
            body
        };
        assert_eq!(without_messages(one.clone()), without_messages(two.clone()));
        // Byte view: request 1's serialized message list (minus its `]`) is
        // a prefix of request 2's.
        let one_text = serde_json::to_string(&one["messages"]).unwrap();
        let two_text = serde_json::to_string(&two["messages"]).unwrap();
        assert!(two_text.starts_with(&one_text[..one_text.len() - 1]));
    }

    // ---- W4: thinking ------------------------------------------------------

    #[test]
    fn headers_in_upstream_order() {
        assert_eq!(
            request_headers("sk-1", "anon", Some("sess"), false),
            headers(&[
                ("authorization", "Bearer sk-1"),
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
                ("user-agent", "dshc/0.1.0 (reference)"),
                ("x-deepseek-harness-user-id", "anon"),
                ("x-deepseek-harness-session-id", "sess"),
            ])
        );
        let compact = request_headers("k", "u", None, true);
        assert_eq!(compact.len(), 6);
        assert_eq!(
            compact.last().unwrap(),
            &("x-deepseek-harness-compact".to_string(), "1".to_string())
        );
        assert!(
            compact
                .iter()
                .all(|(n, _)| n != "x-deepseek-harness-session-id")
        );
        assert_eq!(
            chat_completions_url(PUBLIC_BASE_URL),
            "https://api.deepseek.com/chat/completions"
        );
    }

    // ---- W7: SSE framing ---------------------------------------------------
}
