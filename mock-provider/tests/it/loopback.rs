//! End-to-end tests over a real loopback socket: a plain hyper client talks to
//! `serve_tokio`, so the wire bytes, status lines, headers and connection behavior are
//! exactly what the DeepSeek adapter would see.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mock_provider::sse::{SseItem, SseParser, data_payloads};
use mock_provider::tokenizer::count_tokens;
use mock_provider::{
    CACHE_UNIT_TOKENS, MockProvider, RequestOutcome, Script, ScriptEntry, ServerLimits,
    canonical_prompt, serve_tokio,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the client observed for one request.
struct Observed {
    status: StatusCode,
    headers: HeaderMap,
    /// Body frames received, in order.
    frames: Vec<Bytes>,
    /// Set if the body ended with an error instead of a clean end.
    body_error: Option<String>,
}

impl Observed {
    fn body(&self) -> Vec<u8> {
        self.frames.concat()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body()).expect("body is JSON")
    }
}

async fn start(script: Script) -> (SocketAddr, MockProvider) {
    start_with_limits(script, ServerLimits::default()).await
}

async fn start_with_limits(script: Script, limits: ServerLimits) -> (SocketAddr, MockProvider) {
    let provider = MockProvider::with_limits(script, limits).expect("valid script");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().unwrap();
    tokio::spawn(serve_tokio(listener, provider.clone()));
    (address, provider)
}

/// A keep-alive client connection.
struct Client {
    sender: http1::SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(address: SocketAddr) -> Self {
        let stream = TcpStream::connect(address).await.expect("connect");
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Self { sender }
    }

    async fn send(&mut self, method: &str, path: &str, body: impl Into<Bytes>) -> Observed {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "mock")
            .header("authorization", "Bearer sk-test")
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .header("x-deepseek-harness-session-id", "session-1")
            .body(Full::new(body.into()))
            .unwrap();
        self.sender.ready().await.expect("connection ready");
        let response = self
            .sender
            .send_request(request)
            .await
            .expect("response head");
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = response.into_body();
        let mut frames = Vec::new();
        let mut body_error = None;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        frames.push(data);
                    }
                }
                Err(error) => {
                    body_error = Some(error.to_string());
                    break;
                }
            }
        }
        Observed {
            status,
            headers,
            frames,
            body_error,
        }
    }
}

async fn post_once(address: SocketAddr, path: &str, body: impl Into<Bytes>) -> Observed {
    Client::connect(address)
        .await
        .send("POST", path, body)
        .await
}

fn deepseek_body(messages: Value) -> Value {
    json!({
        "model": "deepseek-v4-flash",
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
        "tools": [
            {"type": "function", "function": {"name": "read", "description": "Read a file.",
              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
            {"type": "function", "function": {"name": "bash", "description": "Run a command.",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}
        ],
        "max_tokens": 256000
    })
}

fn first_messages() -> Value {
    json!([
        {"role": "system", "content": "You are dsh. Use the read tool to look at files before answering."},
        {"role": "user", "content": "What is in a.txt?"}
    ])
}

/// Classify each data payload of a chat-completions stream.
fn event_kinds(payloads: &[String]) -> Vec<&'static str> {
    payloads
        .iter()
        .map(|payload| {
            if payload == "[DONE]" {
                return "done";
            }
            let chunk: Value = serde_json::from_str(payload).expect("chunk JSON");
            let choices = chunk["choices"].as_array().expect("choices array");
            if choices.is_empty() {
                return "usage";
            }
            let choice = &choices[0];
            let delta = &choice["delta"];
            if choice["finish_reason"].is_string() {
                "finish"
            } else if delta.get("role").is_some() {
                "role"
            } else if delta.get("reasoning_content").is_some() {
                "reasoning"
            } else if delta.get("content").is_some() {
                "content"
            } else if delta.get("tool_calls").is_some() {
                "tool_call"
            } else {
                "other"
            }
        })
        .collect()
}

fn tool_turn_entry() -> ScriptEntry {
    serde_json::from_value(json!({
        "reasoning": ["The user wants ", "a.txt."],
        "content": ["Let me ", "read it."],
        "tool_calls": [{"id": "call_1", "name": "read", "arguments": ["{\"pa", "th\":\"a.txt\"}"]}],
        "finish_reason": "tool_calls"
    }))
    .unwrap()
}

#[tokio::test]
async fn streams_a_tool_turn_in_wire_order_with_computed_usage() {
    let (address, provider) = start(Script::new(vec![
        tool_turn_entry(),
        ScriptEntry::content(["It says hi."]),
    ]))
    .await;
    let mut client = Client::connect(address).await;
    let body = deepseek_body(first_messages());
    let body_text = body.to_string();
    let observed = client
        .send("POST", "/chat/completions", body_text.clone())
        .await;
    let prompt_tokens = check_tool_turn_stream(&observed, &body);

    // Second step on the same keep-alive connection: history appended, prefix reused.
    let second_body = deepseek_body(tool_result_messages());
    let second = client
        .send("POST", "/v1/chat/completions", second_body.to_string())
        .await;
    let expected_hit = check_reused_prefix(&second, &second_body, prompt_tokens);

    check_logged_tool_turns(&provider, &body, body_text, expected_hit);
}

/// The first turn of the tool-turn test: the stream's headers, events in wire order
/// and usage on the finish chunk. Returns the prompt's tokens.
fn check_tool_turn_stream(observed: &Observed, body: &Value) -> u64 {
    assert_eq!(observed.status, StatusCode::OK);
    assert_eq!(
        observed.headers["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert!(
        observed.headers.get("date").is_none(),
        "Date header reads the wall clock"
    );
    assert!(observed.body_error.is_none());
    let payloads = data_payloads(&observed.body());
    assert_eq!(
        event_kinds(&payloads),
        [
            "role",
            "reasoning",
            "reasoning",
            "content",
            "content",
            "tool_call",
            "tool_call",
            "finish",
            "done"
        ]
    );
    let chunks: Vec<Value> = payloads[..payloads.len() - 1]
        .iter()
        .map(|payload| serde_json::from_str(payload).unwrap())
        .collect();
    assert_eq!(
        chunks[5]["choices"][0]["delta"]["tool_calls"][0],
        json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"pa"}})
    );
    assert_eq!(
        chunks[6]["choices"][0]["delta"]["tool_calls"][0],
        json!({"index": 0, "function": {"arguments": "th\":\"a.txt\"}"}})
    );
    assert_eq!(chunks[7]["choices"][0]["finish_reason"], "tool_calls");
    // DeepSeek, asked for usage: `usage: null` before the finish chunk, usage on it.
    assert!(
        chunks[..7]
            .iter()
            .all(|chunk| chunk.get("usage") == Some(&Value::Null))
    );

    let prompt_tokens = count_tokens(&canonical_prompt(body));
    let reasoning_tokens = count_tokens("The user wants a.txt.");
    let completion_tokens =
        reasoning_tokens + count_tokens("Let me read it.") + count_tokens("{\"path\":\"a.txt\"}");
    assert_eq!(
        chunks[7]["usage"],
        json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_cache_hit_tokens": 0,
            "prompt_cache_miss_tokens": prompt_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}
        })
    );

    prompt_tokens
}

/// The first turn's messages followed by its tool call and the tool's result.
fn tool_result_messages() -> Value {
    let mut messages = first_messages().as_array().unwrap().clone();
    messages.push(json!({"role": "assistant", "content": "Let me read it.", "reasoning_content": "The user wants a.txt.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "hi"}));
    Value::Array(messages)
}

/// The second turn of the tool-turn test: the first prompt's whole cache units are
/// hits. Returns the hit tokens.
fn check_reused_prefix(second: &Observed, second_body: &Value, prompt_tokens: u64) -> u64 {
    assert_eq!(second.status, StatusCode::OK);
    let payloads = data_payloads(&second.body());
    let usage: Value = serde_json::from_str(&payloads[payloads.len() - 2]).unwrap();
    let expected_hit = prompt_tokens / CACHE_UNIT_TOKENS * CACHE_UNIT_TOKENS;
    assert!(expected_hit >= CACHE_UNIT_TOKENS);
    assert_eq!(usage["usage"]["prompt_cache_hit_tokens"], expected_hit);
    assert_eq!(
        usage["usage"]["prompt_tokens_details"]["cached_tokens"],
        expected_hit
    );
    assert_eq!(
        usage["usage"]["prompt_tokens"],
        count_tokens(&canonical_prompt(second_body))
    );
    assert!(usage["usage"].get("completion_tokens_details").is_none());

    expected_hit
}

/// The request log of the tool-turn test: both requests, their bodies, headers in
/// arrival order, and what each got.
fn check_logged_tool_turns(
    provider: &MockProvider,
    body: &Value,
    body_text: String,
    expected_hit: u64,
) {
    let log = provider.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/chat/completions");
    assert_eq!(log[1].path, "/v1/chat/completions");
    assert_eq!(log[0].body, Bytes::from(body_text));
    assert_eq!(log[0].body_json.as_ref(), Some(body));
    assert_eq!(log[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        log[0].header("x-deepseek-harness-session-id"),
        Some("session-1")
    );
    let header_names: Vec<&str> = log[0]
        .headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        &header_names[..5],
        [
            "host",
            "authorization",
            "content-type",
            "accept",
            "x-deepseek-harness-session-id"
        ]
    );
    assert!(matches!(
        log[0].outcome,
        RequestOutcome::Scripted {
            entry_index: 0,
            status: 200,
            fault: None,
            streamed: true,
            prompt_recorded: true
        }
    ));
    assert_eq!(log[1].usage.unwrap().prompt_cache_hit_tokens, expected_hit);
}

#[tokio::test]
async fn each_sse_event_arrives_as_its_own_frame_when_paced() {
    let entry = ScriptEntry {
        delay_ms: 5,
        keep_alive_before: vec![1],
        ..ScriptEntry::content(["a", "b"])
    };
    let (address, _provider) = start(Script::new(vec![entry])).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    // Chunked transfer, one frame per event: the client never sees two events glued.
    let mut parser = SseParser::new();
    let per_frame: Vec<usize> = observed
        .frames
        .iter()
        .map(|frame| parser.push(frame).len())
        .collect();
    assert!(per_frame.iter().all(|&count| count == 1), "{per_frame:?}");
    assert_eq!(observed.frames[1], Bytes::from_static(b": keep-alive\n\n"));
    assert!(matches!(
        SseParser::new().push(&observed.frames[1])[0],
        SseItem::Comment(_)
    ));
    // role, a, b, finish (with usage), [DONE], and the keep-alive.
    assert_eq!(observed.frames.len(), 6);
}

#[tokio::test]
async fn garbage_bytes_get_a_4xx_and_the_server_keeps_serving() {
    let (address, provider) = start(Script::new(vec![ScriptEntry::content(["ok"])])).await;
    for garbage in [
        &b"\x00\x01\x02 not http at all\r\n\r\n"[..],
        b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ] {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(garbage).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let status_line = String::from_utf8_lossy(&response);
        assert!(
            status_line.starts_with("HTTP/1.1 4"),
            "{garbage:?} got {status_line:?}"
        );
    }
    // Too many headers: 431 from hyper.
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut request = b"POST /chat/completions HTTP/1.1\r\nHost: x\r\n".to_vec();
    for index in 0..200 {
        request.extend_from_slice(format!("x-h{index}: v\r\n").as_bytes());
    }
    request.extend_from_slice(b"\r\n");
    stream.write_all(&request).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    assert!(
        response.starts_with(b"HTTP/1.1 431"),
        "{:?}",
        String::from_utf8_lossy(&response)
    );

    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    assert_eq!(observed.status, StatusCode::OK);
    assert_eq!(
        data_payloads(&observed.body()).last().map(String::as_str),
        Some("[DONE]")
    );
    assert!(!provider.connection_errors().is_empty());
    // Parse errors never reach the provider: only the good request is logged.
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test]
async fn invalid_requests_get_openai_shaped_4xx() {
    let (address, provider) = start_with_limits(
        Script::new(vec![ScriptEntry::content(["ok"])]),
        ServerLimits {
            max_body_bytes: 4096,
            ..ServerLimits::default()
        },
    )
    .await;
    let mut client = Client::connect(address).await;

    let not_json = client
        .send("POST", "/chat/completions", "{\"model\": ")
        .await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_json.json()["error"]["type"], "invalid_request_error");
    assert!(not_json.headers.get("content-length").is_some());

    let missing = client
        .send("POST", "/chat/completions", "{\"messages\": []}")
        .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert!(
        missing.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`model`")
    );

    let unknown = client.send("POST", "/v2/chat/completions?x=1", "{}").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"]["code"], "not_found");

    let wrong_method = client.send("GET", "/chat/completions", "").await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.headers["allow"], "POST");

    let big = json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(10_000)}]});
    let too_large = post_once(address, "/chat/completions", big.to_string()).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);

    // None of these consumed the script.
    let ok = client
        .send(
            "POST",
            "/chat/completions",
            deepseek_body(first_messages()).to_string(),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    let statuses: Vec<u16> = provider
        .requests()
        .iter()
        .map(|request| request.outcome.status())
        .collect();
    assert_eq!(statuses, [400, 400, 404, 405, 413, 200]);
    assert_eq!(provider.requests()[2].path, "/v2/chat/completions");
}

#[tokio::test]
async fn exhausted_script_answers_a_clear_non_retryable_error() {
    let (address, _provider) = start(Script::new(vec![ScriptEntry::content(["only"])])).await;
    let mut client = Client::connect(address).await;
    let body = deepseek_body(first_messages()).to_string();
    assert_eq!(
        client
            .send("POST", "/chat/completions", body.clone())
            .await
            .status,
        StatusCode::OK
    );
    let exhausted = client.send("POST", "/chat/completions", body).await;
    assert_eq!(exhausted.status, StatusCode::BAD_REQUEST);
    assert_eq!(exhausted.headers["x-should-retry"], "false");
    assert_eq!(
        exhausted.json()["error"]["message"],
        "dshc mock provider: the script has no answer for request 2 (POST /chat/completions): \
         all 1 entries are used (1 responses served)"
    );
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let entry: ScriptEntry = serde_json::from_value(
        json!({"fault": "rate_limit", "retry_after_s": 2, "request_id": "req-42"}),
    )
    .unwrap();
    let (address, provider) = start(Script::new(vec![entry])).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    assert_eq!(observed.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(observed.headers["retry-after"], "2");
    assert_eq!(observed.headers["x-request-id"], "req-42");
    assert_eq!(observed.json()["error"]["type"], "rate_limit_error");
    assert_eq!(provider.requests()[0].outcome.status(), 429);
}

#[tokio::test]
async fn dropped_connection_leaves_an_incomplete_body() {
    let entry: ScriptEntry = serde_json::from_value(json!({
        "content": ["a", "b", "c"], "fault": "drop_connection", "after_events": 2
    }))
    .unwrap();
    let (address, provider) = start(Script::new(vec![entry, ScriptEntry::content(["next"])])).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    assert_eq!(observed.status, StatusCode::OK);
    let error = observed
        .body_error
        .clone()
        .expect("body must fail, not end cleanly");
    assert!(!error.is_empty());
    let payloads = data_payloads(&observed.body());
    assert_eq!(event_kinds(&payloads), ["role", "content"]);
    // The server keeps serving new connections.
    let next = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    assert_eq!(next.status, StatusCode::OK);
    assert!(next.body_error.is_none());
    assert!(
        provider
            .connection_errors()
            .iter()
            .any(|message| message.contains("scripted connection drop")),
        "{:?}",
        provider.connection_errors()
    );
}

#[tokio::test]
async fn missing_done_ends_cleanly_without_done() {
    let entry: ScriptEntry =
        serde_json::from_value(json!({"content": ["a"], "fault": "missing_done"})).unwrap();
    let (address, _provider) = start(Script::new(vec![entry])).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    assert!(observed.body_error.is_none(), "{:?}", observed.body_error);
    let payloads = data_payloads(&observed.body());
    assert_eq!(event_kinds(&payloads), ["role", "content", "finish"]);
}

#[tokio::test]
async fn malformed_json_payload_arrives_verbatim() {
    let entry: ScriptEntry = serde_json::from_value(json!({
        "content": ["a"], "fault": "malformed_json", "after_events": 1, "malformed_payload": "{\"choices\": [tru"
    }))
    .unwrap();
    let (address, _provider) = start(Script::new(vec![entry])).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    let payloads = data_payloads(&observed.body());
    assert_eq!(payloads[1], "{\"choices\": [tru");
    assert!(serde_json::from_str::<Value>(&payloads[1]).is_err());
}

#[tokio::test]
async fn non_streaming_request_gets_a_completion_object() {
    let (address, _provider) = start(Script::new(vec![tool_turn_entry()])).await;
    let mut body = deepseek_body(first_messages());
    body.as_object_mut().unwrap().remove("stream");
    let observed = post_once(address, "/chat/completions", body.to_string()).await;
    assert_eq!(observed.status, StatusCode::OK);
    assert_eq!(observed.headers["content-type"], "application/json");
    assert_eq!(
        observed.headers["content-length"].to_str().unwrap(),
        observed.body().len().to_string()
    );
    let completion = observed.json();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "Let me read it."
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
    assert!(completion["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn scripts_load_from_toml() {
    let scenario = r#"
        created_start_s = 1700000000
        responses = [
          { reasoning = ["Think"], content = ["Hel", "lo"] },
          { tool_calls = [{ id = "call_1", name = "read", arguments = ["{\"pa", "th\":\"a\"}"] }], finish_reason = "tool_calls" },
          { fault = "rate_limit", retry_after_s = 2 },
          { content = "single fragment", fault = "stall", after_events = 1, stall_ms = 120000 },
        ]
    "#;
    let script: Script = toml::from_str(scenario).expect("TOML script parses");
    script.validate().expect("valid");
    assert_eq!(script.responses.len(), 4);
    assert_eq!(
        script.responses[1].tool_calls[0].arguments.concat(),
        "{\"path\":\"a\"}"
    );
    assert_eq!(script.responses[3].content.0, vec!["single fragment"]);
    let (address, _provider) = start(script).await;
    let observed = post_once(
        address,
        "/chat/completions",
        deepseek_body(first_messages()).to_string(),
    )
    .await;
    let first: Value = serde_json::from_str(&data_payloads(&observed.body())[0]).unwrap();
    assert_eq!(first["created"], 1_700_000_000);
    assert_eq!(first["id"], "chatcmpl-1");

    let typo = toml::from_str::<Script>("responses = [{ contnet = \"x\" }]").unwrap_err();
    assert!(
        typo.to_string().contains("unknown field `contnet`"),
        "{typo}"
    );
}

/// A client, connected when this returns, that has sent a request head
/// announcing a 1 MB body and goes on with one byte every 200 ms until the
/// server answers; the task yields what the server sent before closing.
async fn trickle_body(address: SocketAddr) -> tokio::task::JoinHandle<String> {
    let stream = TcpStream::connect(address).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let head = "POST /chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{";
    writer.write_all(head.as_bytes()).await.expect("head");
    tokio::spawn(async move {
        let trickle = tokio::spawn(async move {
            loop {
                mock_provider::sim_time::sleep(std::time::Duration::from_millis(200)).await;
                if writer.write_all(b" ").await.is_err() {
                    break;
                }
            }
        });
        let mut answer = Vec::new();
        let _ = reader.read_to_end(&mut answer).await;
        trickle.abort();
        String::from_utf8_lossy(&answer).into_owned()
    })
}

fn assert_timed_out(answer: &str) {
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(answer.contains("connection: close\r\n"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
}

#[tokio::test]
async fn a_trickled_body_gets_408_while_other_clients_are_served() {
    let (address, provider) = start_with_limits(
        Script::new(vec![ScriptEntry::content(["ok"])]),
        ServerLimits {
            body_read_timeout_ms: Some(2_000),
            ..ServerLimits::default()
        },
    )
    .await;
    let trickler = trickle_body(address).await;
    // The trickler holds a connection; another client is served meanwhile.
    let body = deepseek_body(first_messages()).to_string();
    let served = post_once(address, "/chat/completions", body).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_timed_out(&trickler.await.unwrap());
    let statuses: Vec<Option<u16>> = provider
        .requests()
        .iter()
        .map(|r| match r.outcome {
            RequestOutcome::Rejected { status, .. } => Some(status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.iter().filter(|s| **s == Some(408)).count(), 1);
    assert!(
        provider
            .connection_errors()
            .iter()
            .any(|e| e.contains("not whole within 2000 ms")),
        "{:?}",
        provider.connection_errors()
    );
}

#[tokio::test]
async fn tricklers_holding_every_connection_slot_free_them_at_the_body_deadline() {
    let (address, provider) = start_with_limits(
        Script::new(vec![ScriptEntry::content(["ok"])]),
        ServerLimits {
            body_read_timeout_ms: Some(1_000),
            max_connections: 2,
            ..ServerLimits::default()
        },
    )
    .await;
    let tricklers = [trickle_body(address).await, trickle_body(address).await];
    // Both slots are taken; this client waits in the backlog until a
    // trickler's deadline frees one (without the deadline: forever).
    let body = deepseek_body(first_messages()).to_string();
    let served = mock_provider::sim_time::timeout(
        std::time::Duration::from_secs(120),
        post_once(address, "/chat/completions", body),
    )
    .await
    .expect("the waiting client is served once a trickler times out");
    assert_eq!(served.status, StatusCode::OK);
    for trickler in tricklers {
        assert_timed_out(&trickler.await.unwrap());
    }
    assert_eq!(provider.request_count(), 3);
}
