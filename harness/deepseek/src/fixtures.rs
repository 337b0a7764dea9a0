//! Test builders shared by the modules' tests: messages, requests, SSE
//! streams and headers.

use serde_json::{Value, json};

use crate::*;

pub fn user(texts: &[&str]) -> Value {
    let content: Vec<Value> = texts
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    json!({"content": content, "source": {"kind": "user"}, "role": "user", "id": "u1"})
}

pub fn assistant(content: Value) -> Value {
    json!({
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", "provider": PROVIDER, "model": "deepseek-v4-flash"},
        "id": "a1",
    })
}

pub fn tool_result(call_id: &str, texts: &[&str]) -> Value {
    let content: Vec<Value> = texts
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    json!({
        "source": {"kind": "tool", "callId": call_id},
        "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": false}],
        "role": "user",
        "id": "t1",
    })
}

pub fn request(messages: Vec<Value>) -> Value {
    json!({
        "provider": PROVIDER,
        "model": "deepseek-v4-flash",
        "messages": messages,
        "sessionId": "s1",
    })
}

pub fn body(request: &Value) -> Value {
    serialize_request(request, &DeepSeekDefaults::default()).unwrap()
}

pub fn body_of(messages: Vec<Value>) -> Value {
    body(&request(messages))
}

pub fn thinking(request: &Value, defaults: &DeepSeekDefaults) -> Result<Thinking, JsError> {
    resolve_thinking(request, defaults)
}

pub fn thinking_of(thinking: Option<&str>, effort: Option<&str>) -> Thinking {
    Thinking {
        thinking: thinking.map(String::from),
        reasoning_effort: effort.map(String::from),
    }
}

pub fn defaults(thinking: Option<&str>, effort: Option<&str>) -> DeepSeekDefaults {
    DeepSeekDefaults {
        thinking: thinking.map(String::from),
        reasoning_effort: effort.map(String::from),
    }
}

pub fn translate_all(payloads: &[&str]) -> Vec<Value> {
    let mut translator = Translator::new();
    let mut chunks = Vec::new();
    for payload in payloads {
        chunks.extend(translator.push_payload(payload).unwrap());
    }
    assert!(translator.is_done());
    chunks
}

pub fn texts(chunks: &[Value]) -> Vec<String> {
    chunks
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect()
}

pub fn sse(payloads: &[&str]) -> String {
    payloads.iter().map(|p| format!("data: {p}\n\n")).collect()
}

pub fn data(text: &str) -> SseItem {
    SseItem::Data(text.into())
}

pub fn comment(text: &str) -> SseItem {
    SseItem::Comment(text.into())
}

pub fn decode_reads(reads: &[&[u8]]) -> Vec<SseItem> {
    let mut decoder = SseDecoder::new();
    reads.iter().flat_map(|read| decoder.push(read)).collect()
}

pub fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

// ---- W1–W3: request body --------------------------------------------
