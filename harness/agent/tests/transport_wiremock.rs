//! The reference's DeepSeek transport against an independent HTTP server
//! (wiremock, written by nobody here) serving canned DeepSeek responses:
//! the success path and the error paths a real deployment produces (status
//! codes, Retry-After and request-id headers, a body cut short, a payload
//! that is not JSON), each turned into the chunks and failure upstream's
//! adapter yields (spec 09 W7–W10).

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

use std::rc::Rc;

use dshc_agent::transport::{ChunkStream, Connection, Endpoint};
use dshc_deepseek::WireOptions;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn request() -> Value {
    json!({
        "provider": "deepseek-official", "model": "deepseek-v4-flash", "maxTokens": 100,
        "messages": [{"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "m1"}],
        "sessionId": "s-1",
    })
}

/// Serve `response` for the chat-completions POST and collect the chunks
/// the reference's transport yields for it.
fn chunks_for(response: ResponseTemplate) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/chat/completions"))
            .and(header("authorization", "Bearer sk-test"))
            .and(body_partial_json(
                json!({"model": "deepseek-v4-flash", "stream": true}),
            ))
            .respond_with(response)
            .expect(1)
            .mount(&server)
            .await;
        let connection = Rc::new(Connection {
            endpoint: Endpoint::Socket(*server.address()),
            wire: WireOptions::default(),
            stream_idle_timeout_ms: 10_000,
            api_key: "sk-test".into(),
            user_id: "user".into(),
        });
        let mut stream = ChunkStream::new(
            connection,
            request().into(),
            Box::new(|| false),
            std::rc::Rc::new(|| 0),
        );
        let mut chunks = Vec::new();
        while let Some(chunk) = stream.next().await {
            chunks.push(chunk);
        }
        server.verify().await;
        chunks
    })
}

fn sse(payloads: &[&str]) -> String {
    payloads.iter().map(|p| format!("data: {p}\n\n")).collect()
}

fn finish(chunks: &[Value]) -> &Value {
    let last = chunks.last().expect("a chunk");
    assert_eq!(last["type"], "finish", "{chunks:?}");
    &last["reason"]
}

#[test]
fn a_stream_with_usage_becomes_blocks_usage_and_a_stop() {
    let body = sse(&[
        r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":9}}"#,
        "[DONE]",
    ]);
    let chunks = chunks_for(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"));
    let kinds: Vec<&str> = chunks
        .iter()
        .map(|c| c["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        kinds,
        [
            "block-start",
            "text-delta",
            "text-delta",
            "block-end",
            "usage",
            "finish"
        ]
    );
    assert_eq!(chunks[3]["block"], json!({"type": "text", "text": "Hello"}));
    assert_eq!(chunks[4]["usage"]["inputTokens"], 9);
    assert_eq!(finish(&chunks), &json!({"kind": "stop"}));
}

#[test]
fn a_429_keeps_its_retry_after_and_request_id() {
    let response = ResponseTemplate::new(429)
        .insert_header("retry-after", "2")
        .insert_header("x-request-id", "req-7")
        .set_body_json(
            json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
        );
    let chunks = chunks_for(response);
    let failure = &finish(&chunks)["failure"];
    assert_eq!(failure["code"], "RATE_LIMIT", "{failure}");
    assert_eq!(failure["status"], 429);
    assert_eq!(failure["providerRetryAfterMs"], 2000);
    assert_eq!(failure["requestId"], "req-7");
    assert_eq!(failure["message"], "Rate limit reached");
}

#[test]
fn statuses_map_to_their_codes() {
    for (status, body, code) in [
        (401, json!({"error": {"message": "bad key"}}), "AUTH"),
        (403, json!({}), "AUTH"),
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 131072 tokens"}}),
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (
            400,
            json!({"error": {"message": "bad request"}}),
            "INVALID_REQUEST",
        ),
        (
            402,
            json!({"error": {"message": "Insufficient Balance"}}),
            "QUOTA",
        ),
        (500, json!({"error": {"message": "oops"}}), "SERVER"),
        (503, json!({}), "SERVER"),
        (418, json!({}), "HTTP_418"),
    ] {
        let chunks = chunks_for(ResponseTemplate::new(status).set_body_json(body));
        let failure = &finish(&chunks)["failure"];
        assert_eq!(failure["code"], code, "HTTP {status}: {failure}");
        assert_eq!(failure["status"], status);
    }
}

#[test]
fn an_error_body_that_is_not_json_uses_the_generic_message() {
    let chunks = chunks_for(
        ResponseTemplate::new(502).set_body_raw("<html>bad gateway</html>", "text/html"),
    );
    let failure = &finish(&chunks)["failure"];
    assert_eq!(failure["code"], "SERVER");
    assert_eq!(failure["message"], "DeepSeek API error (HTTP 502)");
}

#[test]
fn a_stream_cut_short_keeps_its_deltas_and_fails_as_closed() {
    let body = sse(&[r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"par"}}]}"#]);
    let chunks = chunks_for(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"));
    assert_eq!(
        chunks[1],
        json!({"type": "text-delta", "index": 0, "text": "par"})
    );
    assert_eq!(finish(&chunks)["failure"]["code"], "STREAM_CLOSED");
}

#[test]
fn a_payload_that_is_not_json_is_a_malformed_response() {
    let body = sse(&["{not json", "[DONE]"]);
    let chunks = chunks_for(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"));
    let failure = &finish(&chunks)["failure"];
    assert_eq!(failure["code"], "MALFORMED_RESPONSE", "{failure}");
    assert!(
        failure["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("malformed SSE payload"),
        "{failure}"
    );
}
