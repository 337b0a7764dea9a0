//! The Anthropic-format endpoint through [`MockProvider::handle`]: how a
//! Messages body becomes the chat body it means, what it shares with the chat
//! endpoint (rules, prefix cache, log), and the Anthropic error envelope.

use serde_json::{Value, json};

use super::messages::to_chat_body;
use super::{IncomingRequest, MockProvider};
use crate::prompt_cache::canonical_prompt;
use crate::render::ResponsePlan;
use crate::script::{FaultKind, Script, ScriptEntry, ScriptToolCall};
use crate::tokenizer::count_tokens;

const PATH: &str = "/anthropic/v1/messages";
const SYSTEM: &str = "You are dsh, a coding agent. Answer briefly, use tools for file access, \
    and report what you changed. Never guess file contents. Say which file you read.";

fn messages(body: &Value) -> IncomingRequest {
    IncomingRequest::post_json(PATH, body)
}

fn body(messages: Value) -> Value {
    json!({"model": "deepseek-v4-flash", "max_tokens": 1024, "system": SYSTEM,
           "messages": messages})
}

fn json_of(plan: &ResponsePlan) -> Value {
    serde_json::from_slice(&plan.body_bytes()).unwrap()
}

/// The Anthropic envelope: `{"type":"error","error":{"type","message"}}`, nothing else.
fn anthropic_error(plan: &ResponsePlan) -> (String, String) {
    let body = json_of(plan);
    assert_eq!(body["type"], "error", "{body}");
    let keys: Vec<&String> = body["error"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "message"], "{body}");
    (
        body["error"]["type"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn a_messages_body_becomes_the_chat_body_it_means() {
    let anthropic = json!({
        "model": "deepseek-v4-pro", "max_tokens": 100, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 50},
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read", "description": "Read a file.",
                   "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a."}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Need a.", "signature": "s"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": [{"type": "text", "text": "A's text"}]},
                {"type": "text", "text": "Now summarise.", "cache_control": {"type": "ephemeral"}}]},
        ],
    });
    assert_eq!(
        to_chat_body(&anthropic).unwrap(),
        json!({
            "model": "deepseek-v4-pro", "max_tokens": 100,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Read a."},
                {"role": "assistant", "content": "Reading.", "reasoning_content": "Need a.",
                 "tool_calls": [{"id": "t1", "type": "function",
                                 "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "A's text"},
                {"role": "user", "content": "Now summarise."},
            ],
            "tools": [{"type": "function", "function": {"name": "read",
                       "description": "Read a file.", "parameters": {"type": "object"}}}],
            "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 50},
        })
    );
}

#[test]
fn a_malformed_messages_body_gets_an_anthropic_400() {
    let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"])])).unwrap();
    let cases = [
        (
            json!({"model": "m", "messages": []}),
            "max_tokens: Field required",
        ),
        (
            json!({"max_tokens": 1, "messages": []}),
            "model: Field required",
        ),
        (
            json!({"model": "m", "max_tokens": 1}),
            "messages: Field required",
        ),
        (
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": "x"}]}),
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"text": "x"}]}]}),
            "messages.0.content.0.type: Field required",
        ),
        (
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}),
            "messages.0.content.0.tool_use_id: Field required",
        ),
    ];
    for (bad, expected) in cases {
        let plan = provider.handle(messages(&bad));
        assert_eq!(plan.status, 400, "{bad}");
        assert_eq!(
            anthropic_error(&plan),
            ("invalid_request_error".to_owned(), expected.to_owned())
        );
    }
    let mut not_json = messages(&json!({}));
    not_json.body = bytes::Bytes::from_static(b"{");
    assert_eq!(
        anthropic_error(&provider.handle(not_json)).0,
        "invalid_request_error"
    );
    assert_eq!(
        provider.responses_served(),
        0,
        "no entry is used by a bad body"
    );
}

#[test]
fn every_error_under_the_anthropic_base_has_anthropics_envelope() {
    let script = Script::new(vec![
        ScriptEntry {
            retry_after_s: Some(2),
            ..ScriptEntry::fault(FaultKind::RateLimit)
        },
        ScriptEntry::fault(FaultKind::ServerError),
    ]);
    let provider = MockProvider::new(script).unwrap();
    let hello = body(json!([{"role": "user", "content": "hi"}]));
    let limited = provider.handle(messages(&hello));
    assert_eq!(
        (limited.status, limited.header("retry-after")),
        (429, Some("2"))
    );
    assert_eq!(anthropic_error(&limited).0, "rate_limit_error");
    let failed = provider.handle(messages(&hello));
    assert_eq!(failed.status, 500);
    assert_eq!(anthropic_error(&failed).0, "api_error");
    let exhausted = provider.handle(messages(&hello));
    assert_eq!(exhausted.status, 400);
    assert_eq!(exhausted.header("x-should-retry"), Some("false"));
    assert!(
        anthropic_error(&exhausted)
            .1
            .contains("has no answer for request 3")
    );
    let unknown = provider.handle(IncomingRequest::post_json(
        "/anthropic/v1/models",
        &json!({}),
    ));
    assert_eq!(
        (unknown.status, anthropic_error(&unknown).0.as_str()),
        (404, "not_found_error")
    );
    let mut get = messages(&hello);
    get.method = "GET".into();
    let wrong_method = provider.handle(get);
    assert_eq!(
        (wrong_method.status, wrong_method.header("allow")),
        (405, Some("POST"))
    );
    assert_eq!(anthropic_error(&wrong_method).0, "invalid_request_error");
    let oversized = provider.handle_oversized("POST".into(), PATH.into(), Vec::new());
    assert_eq!(
        (oversized.status, anthropic_error(&oversized).0.as_str()),
        (413, "request_too_large")
    );
    // The chat endpoint keeps DeepSeek's own envelope.
    let chat = provider.handle(IncomingRequest::post_json("/nope", &json!({})));
    assert_eq!(json_of(&chat)["error"]["code"], "not_found");
}

#[test]
fn the_rules_apply_with_the_anthropic_wording() {
    let script = Script::new(vec![
        ScriptEntry {
            reasoning: ["Need a."].into_iter().collect(),
            tool_calls: vec![ScriptToolCall {
                id: Some("t1".into()),
                name: "read".into(),
                arguments: ["{\"path\":\"a\"}"].into_iter().collect(),
            }],
            finish_reason: Some("tool_calls".into()),
            ..ScriptEntry::stream()
        },
        ScriptEntry::content(["Done."]),
    ]);
    let provider = MockProvider::new(script).unwrap();
    let question = json!({"role": "user", "content": "Read a."});
    assert_eq!(
        provider.handle(messages(&body(json!([question])))).status,
        200
    );
    let tool_use = json!({"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "A"}]});
    let dropped = json!([question, {"role": "assistant", "content": [tool_use]}, result]);
    let plan = provider.handle(messages(&body(dropped)));
    assert_eq!(plan.status, 400);
    assert_eq!(
        anthropic_error(&plan).1,
        "The `content[].thinking` in the thinking mode must be passed back to the API."
    );
    let unanswered = json!([question, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Need a.", "signature": "s"}, tool_use]},
        {"role": "user", "content": "Go on."}]);
    let plan = provider.handle(messages(&body(unanswered)));
    assert!(
        anthropic_error(&plan).1.starts_with(
            "An assistant message with 'tool_calls' must be followed by tool messages"
        )
    );
    let passed_back = json!([question, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Need a.", "signature": "s"}, tool_use]}, result]);
    assert_eq!(provider.handle(messages(&body(passed_back))).status, 200);
}

#[test]
fn a_messages_request_is_accounted_as_the_chat_request_it_means() {
    let script = Script::new(vec![ScriptEntry {
        reuse: true,
        ..ScriptEntry::content(["ok"])
    }]);
    let provider = MockProvider::new(script).unwrap();
    let first = body(json!([{"role": "user", "content": "Read a."}]));
    let whole = json_of(&provider.handle(messages(&first)));
    // Documented mapping: `system` as the leading system message.
    let chat = json!({"messages": [{"role": "system", "content": SYSTEM},
                                   {"role": "user", "content": "Read a."}]});
    let prompt = count_tokens(&canonical_prompt(&chat));
    assert_eq!(
        whole["usage"],
        json!({"input_tokens": prompt, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 0, "output_tokens": 1})
    );
    // The conversation re-sent with one more turn reads the cached prefix:
    // whole 64-token units of the first prompt.
    let longer = body(json!([{"role": "user", "content": "Read a."},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "And b."}]));
    let usage = &json_of(&provider.handle(messages(&longer)))["usage"];
    let read = usage["cache_read_input_tokens"].as_u64().unwrap();
    assert_eq!(read, prompt / 64 * 64, "{usage}");
    assert!(read > 0);
    // The log keeps the request as it arrived, and the chat usage.
    let logged = provider.requests();
    assert_eq!(logged[1].body_json.as_ref(), Some(&longer));
    assert_eq!(logged[1].usage.unwrap().prompt_cache_hit_tokens, read);
}
