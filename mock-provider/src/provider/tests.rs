//! The provider's behaviour through [`MockProvider::handle`], end to end: entry
//! choice and exhaustion, the informational routes, the rules, ids, cache
//! accounting, the request log and its bounds, and the rejections.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{IncomingRequest, MockProvider, RequestOutcome, ServerLimits};
use crate::prompt_cache::{CACHE_UNIT_TOKENS, canonical_prompt};
use crate::render::ResponsePlan;
use crate::script::{FaultKind, Script, ScriptEntry};
use crate::sse::data_payloads;

const SYSTEM: &str = "You are dsh, a coding agent. Answer briefly, use tools for file access, \
    and report what you changed. Never guess file contents.";

fn chat(messages: Value) -> IncomingRequest {
    IncomingRequest::post_json(
        "/chat/completions",
        &json!({"model": "deepseek-v4-flash", "messages": messages, "stream": true,
                "stream_options": {"include_usage": true}}),
    )
}

fn usage_of(plan: &ResponsePlan) -> Value {
    let payloads = data_payloads(&plan.body_bytes());
    let usage_chunk = &payloads[payloads.len() - 2];
    serde_json::from_str::<Value>(usage_chunk).unwrap()["usage"].clone()
}

#[test]
fn the_request_log_keeps_the_newest_within_its_limits() {
    let limits = ServerLimits {
        max_logged_requests: 2,
        ..ServerLimits::default()
    };
    let provider = MockProvider::with_limits(Script::new(Vec::new()), limits).unwrap();
    let messages = json!([{"role": "user", "content": "hi"}]);
    for _ in 0..5 {
        provider.handle(chat(messages.clone()));
    }
    let numbers: Vec<u64> = provider
        .requests()
        .iter()
        .map(|r| r.request_number)
        .collect();
    assert_eq!(numbers, [4, 5]);
    assert_eq!(provider.request_count(), 5);
    let by_bytes = ServerLimits {
        max_logged_body_bytes: 1,
        ..ServerLimits::default()
    };
    let provider = MockProvider::with_limits(Script::new(Vec::new()), by_bytes).unwrap();
    for _ in 0..3 {
        provider.handle(chat(messages.clone()));
    }
    assert_eq!(provider.requests().len(), 1, "always the newest one");
}

#[test]
fn taken_requests_leave_the_log_empty_and_its_byte_bound_reset() {
    let messages = json!([{"role": "user", "content": "hi"}]);
    let body_len = chat(messages.clone()).body.len();
    // Room for exactly two bodies.
    let bound = ServerLimits {
        max_logged_body_bytes: 2 * body_len,
        ..ServerLimits::default()
    };
    let provider = MockProvider::with_limits(Script::new(Vec::new()), bound).unwrap();
    provider.handle(chat(messages.clone()));
    let taken = provider.take_requests();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].request_number, 1);
    assert!(provider.requests().is_empty());
    // The bytes taken away no longer count: two more bodies fit.
    provider.handle(chat(messages.clone()));
    provider.handle(chat(messages));
    let numbers: Vec<u64> = provider
        .requests()
        .iter()
        .map(|r| r.request_number)
        .collect();
    assert_eq!(numbers, [2, 3]);
    assert_eq!(provider.request_count(), 3);
}

#[test]
fn entries_are_consumed_in_order_then_exhausted() {
    let provider = MockProvider::new(Script::new(vec![
        ScriptEntry::content(["one"]),
        ScriptEntry::content(["two"]),
    ]))
    .unwrap();
    let messages = json!([{"role": "user", "content": "hi"}]);
    for expected in ["one", "two"] {
        let plan = provider.handle(chat(messages.clone()));
        let payloads = data_payloads(&plan.body_bytes());
        assert!(payloads[1].contains(expected), "{payloads:?}");
    }
    let plan = provider.handle(chat(messages));
    // Not retryable: a client must not burn time retrying an empty script.
    assert_eq!(plan.status, 400);
    assert_eq!(plan.header("x-should-retry"), Some("false"));
    let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
    assert_eq!(
        body["error"]["message"],
        "dshc mock provider: the script has no answer for request 3 \
         (POST /chat/completions): all 2 entries are used (2 responses served)"
    );
    assert_eq!(body["error"]["code"], "script_exhausted");
    let log = provider.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(
        log[2].outcome,
        RequestOutcome::ScriptExhausted { served: 2 }
    );
    assert_eq!(provider.responses_remaining(), 0);
}

fn text_of(plan: &ResponsePlan) -> String {
    data_payloads(&plan.body_bytes())
        .iter()
        .filter(|payload| *payload != "[DONE]")
        .filter_map(|payload| {
            let chunk: Value = serde_json::from_str(payload).unwrap();
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn predicates_pick_entries_so_retries_do_not_shift_the_script() {
    let script: Script = serde_json::from_value(json!({"responses": [
        {"when": {"last_message_contains": "weather"}, "content": "Sunny.", "reuse": true},
        {"when": {"last_role": "tool"}, "content": "Read it."},
        {"content": "Anything else."}
    ]}))
    .unwrap();
    let provider = MockProvider::new(script).unwrap();
    let weather = json!([{"role": "user", "content": "the weather?"}]);
    // A retry of the same request gets the same reusable answer.
    assert_eq!(text_of(&provider.handle(chat(weather.clone()))), "Sunny.");
    assert_eq!(text_of(&provider.handle(chat(weather))), "Sunny.");
    let other = json!([{"role": "user", "content": "hello"}]);
    assert_eq!(
        text_of(&provider.handle(chat(other.clone()))),
        "Anything else."
    );
    let tool_turn = json!([
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "data"}
    ]);
    assert_eq!(text_of(&provider.handle(chat(tool_turn))), "Read it.");
    let plan = provider.handle(chat(other));
    assert_eq!(plan.status, 400);
    let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("none of the 1 unused entries matches it")
            && message.contains("last message \"hello\""),
        "{message}"
    );
    let entries: Vec<Option<usize>> = provider
        .requests()
        .iter()
        .map(|request| match request.outcome {
            RequestOutcome::Scripted { entry_index, .. } => Some(entry_index),
            _ => None,
        })
        .collect();
    assert_eq!(entries, [Some(0), Some(0), Some(2), Some(1), None]);
    // Ids count scripted responses, whichever entry answered.
    assert_eq!(provider.responses_served(), 4);
    assert_eq!(provider.responses_remaining(), 0);
}

fn get(path: &str) -> IncomingRequest {
    IncomingRequest {
        method: "GET".into(),
        path: path.into(),
        headers: Vec::new(),
        body: Bytes::new(),
    }
}

fn json_of(plan: &ResponsePlan) -> Value {
    serde_json::from_slice(&plan.body_bytes()).unwrap()
}

#[test]
fn models_balance_beta_and_fim_are_served() {
    let script: Script = serde_json::from_value(json!({
        "responses": [
            {"when": {"endpoint": "fim"}, "content": ["fn ", "main() {}"]},
            {"content": "print('hi')"}
        ],
        "models": [{"id": "port-model", "context_window": 8192}],
        "balance": {"granted_balance": "1.50", "topped_up_balance": "2"}
    }))
    .unwrap();
    let provider = MockProvider::new(script).unwrap();
    let models = json_of(&provider.handle(get("/models")));
    assert_eq!(models["object"], "list");
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["deepseek-v4-flash", "deepseek-v4-pro", "port-model"]);
    assert_eq!(
        json_of(&provider.handle(get("/v1/models/port-model"))),
        json!({"id": "port-model", "object": "model", "owned_by": "deepseek"})
    );
    assert_eq!(provider.handle(get("/models/nope")).status, 404);
    assert_eq!(
        json_of(&provider.handle(get("/user/balance"))),
        json!({"is_available": true, "balance_infos": [{"currency": "CNY",
            "total_balance": "3.50", "granted_balance": "1.50", "topped_up_balance": "2"}]})
    );
    let fim = provider.handle(IncomingRequest::post_json(
        "/beta/completions",
        &json!({"model": "deepseek-v4-flash", "prompt": "def f():", "suffix": "\n", "stream": false}),
    ));
    let fim = json_of(&fim);
    assert_eq!(fim["object"], "text_completion");
    assert_eq!(fim["choices"][0]["text"], "fn main() {}");
    let prefix = provider.handle(IncomingRequest::post_json(
        "/beta/chat/completions",
        &json!({"model": "deepseek-v4-flash", "messages": [
            {"role": "user", "content": "code"},
            {"role": "assistant", "content": "```python\n", "prefix": true}
        ]}),
    ));
    assert_eq!(prefix.status, 200);
    assert_eq!(
        json_of(&prefix)["choices"][0]["message"]["content"],
        "print('hi')"
    );
    assert_eq!(provider.handle(get("/chat/completions")).status, 405);
    assert_eq!(provider.responses_served(), 2);
}

#[test]
fn rule_violations_are_documented_400s_that_use_no_entry() {
    let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"])])).unwrap();
    let plan = provider.handle(chat(json!([
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "user", "content": "and?"}
    ])));
    assert_eq!(plan.status, 400);
    let error = &json_of(&plan)["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "invalid_request_error");
    // DeepSeek's body: its text, and `param: null`.
    assert_eq!(
        error["message"],
        "An assistant message with 'tool_calls' must be followed by tool messages responding \
         to each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
    );
    assert_eq!(error["param"], Value::Null);
    assert_eq!(provider.responses_served(), 0);
    // The log keeps what exactly was wrong.
    provider.with_requests(|log| {
        let logged = log.last().unwrap().summary_line();
        assert!(
            logged.contains("messages[0]: no `tool` message answers \"c\""),
            "{logged}"
        );
    });
    let relaxed = Script {
        validation: crate::script::Validation::off(),
        ..Script::new(vec![ScriptEntry::content(["x"])])
    };
    let provider = MockProvider::new(relaxed).unwrap();
    let plan = provider.handle(chat(json!([
        {"role": "tool", "tool_call_id": "c", "content": "stray"}
    ])));
    assert_eq!(plan.status, 200);
}

#[test]
fn a_thinking_tool_call_replayed_without_its_reasoning_is_refused() {
    let provider = MockProvider::new(Script::new(vec![
        ScriptEntry {
            reasoning: ["Need the file."].into_iter().collect(),
            tool_calls: vec![crate::script::ScriptToolCall {
                id: Some("call_r".into()),
                name: "read".into(),
                arguments: ["{}"].into_iter().collect(),
            }],
            finish_reason: Some("tool_calls".into()),
            ..ScriptEntry::stream()
        },
        ScriptEntry::content(["done"]),
    ]))
    .unwrap();
    let question = json!({"role": "user", "content": "read it"});
    provider.handle(chat(json!([question.clone()])));
    let call = json!([{"id": "call_r", "type": "function",
                       "function": {"name": "read", "arguments": "{}"}}]);
    let result = json!({"role": "tool", "tool_call_id": "call_r", "content": "data"});
    let without = provider.handle(chat(json!([
        question.clone(),
        {"role": "assistant", "content": "", "tool_calls": call.clone()},
        result.clone()
    ])));
    assert_eq!(without.status, 400);
    assert_eq!(
        json_of(&without)["error"],
        json!({"message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
               "type": "invalid_request_error", "param": null, "code": "invalid_request_error"})
    );
    let with = provider.handle(chat(json!([
        question,
        {"role": "assistant", "content": "", "reasoning_content": "Need the file.",
         "tool_calls": call},
        result
    ])));
    assert_eq!(with.status, 200);
}

#[test]
fn ids_and_created_are_deterministic() {
    let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"]); 2])).unwrap();
    let messages = json!([{"role": "user", "content": "hi"}]);
    let first = data_payloads(&provider.handle(chat(messages.clone())).body_bytes());
    let second = data_payloads(&provider.handle(chat(messages)).body_bytes());
    let first: Value = serde_json::from_str(&first[0]).unwrap();
    let second: Value = serde_json::from_str(&second[0]).unwrap();
    assert_eq!(
        (first["id"].as_str(), first["created"].as_u64()),
        (Some("chatcmpl-1"), Some(1_735_689_600))
    );
    assert_eq!(
        (second["id"].as_str(), second["created"].as_u64()),
        (Some("chatcmpl-2"), Some(1_735_689_601))
    );
}

#[test]
fn cache_hits_grow_with_appended_history() {
    let provider = MockProvider::new(Script::new(vec![
        ScriptEntry::content(["Hel", "lo"]),
        ScriptEntry::content(["again"]),
    ]))
    .unwrap();
    let first_messages = json!([
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "read src/main.rs please"}
    ]);
    let first = usage_of(&provider.handle(chat(first_messages.clone())));
    assert_eq!(first["prompt_cache_hit_tokens"], 0);
    assert_eq!(first["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(first["completion_tokens"], 2);

    let mut second_messages = first_messages.as_array().unwrap().clone();
    second_messages.push(json!({"role": "assistant", "content": "Hello"}));
    second_messages.push(json!({"role": "user", "content": "thanks"}));
    let second = usage_of(&provider.handle(chat(Value::Array(second_messages))));
    let shared =
        crate::tokenizer::count_tokens(&canonical_prompt(&json!({"messages": first_messages})));
    let expected_hit = shared / CACHE_UNIT_TOKENS * CACHE_UNIT_TOKENS;
    assert!(expected_hit > 0);
    assert_eq!(second["prompt_cache_hit_tokens"], expected_hit);
    assert_eq!(
        second["prompt_tokens_details"]["cached_tokens"],
        expected_hit
    );
    assert_eq!(
        second["prompt_cache_miss_tokens"].as_u64().unwrap(),
        second["prompt_tokens"].as_u64().unwrap() - expected_hit
    );
    let log = provider.requests();
    assert_eq!(log[1].prompt.unwrap().shared_prefix_tokens, shared);
    assert_eq!(log[1].usage.unwrap().prompt_cache_hit_tokens, expected_hit);
}

#[test]
fn http_errors_and_dropped_streams_do_not_feed_the_cache() {
    let provider = MockProvider::new(Script::new(vec![
        ScriptEntry::fault(FaultKind::ServerError),
        ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(1),
            ..ScriptEntry::content(["x"])
        },
        ScriptEntry {
            fault: Some(FaultKind::MissingDone),
            ..ScriptEntry::content(["x"])
        },
        ScriptEntry::content(["x"]),
    ]))
    .unwrap();
    let messages =
        json!([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}]);
    for _ in 0..4 {
        provider.handle(chat(messages.clone()));
    }
    let log = provider.requests();
    let hits: Vec<u64> = log
        .iter()
        .map(|request| request.prompt.unwrap().prompt_cache_hit_tokens)
        .collect();
    assert_eq!(hits[0..3], [0, 0, 0]);
    assert!(hits[3] > 0);
    let recorded: Vec<bool> = log
        .iter()
        .map(|request| {
            matches!(
                request.outcome,
                RequestOutcome::Scripted {
                    prompt_recorded: true,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(recorded, [false, false, true, true]);
    assert_eq!(log[0].usage, None);
    assert_eq!(
        provider
            .prompt_cache()
            .recorded_prompt_count("deepseek-v4-flash"),
        2
    );
}

#[test]
fn prompt_tokens_details_can_be_left_out() {
    let provider = MockProvider::new(Script::new(vec![ScriptEntry {
        prompt_tokens_details: false,
        ..ScriptEntry::content(["x"])
    }]))
    .unwrap();
    let usage = usage_of(&provider.handle(chat(json!([{"role": "user", "content": "q"}]))));
    assert!(usage.get("prompt_tokens_details").is_none(), "{usage}");
    assert!(usage.get("completion_tokens_details").is_none(), "{usage}");
    assert_eq!(usage["prompt_cache_hit_tokens"], 0);
}

#[test]
fn invalid_requests_are_rejected_without_consuming_the_script() {
    let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"])])).unwrap();
    let post = |path: &str, body: &str| IncomingRequest {
        method: "POST".into(),
        path: path.into(),
        headers: Vec::new(),
        body: Bytes::from(body.to_owned()),
    };
    let cases = [
        (
            post("/chat/completions", "{not json"),
            400,
            "Failed to parse the request body as JSON",
        ),
        (
            post("/chat/completions", "[1]"),
            400,
            "must be a JSON object",
        ),
        (
            post("/chat/completions", r#"{"messages": []}"#),
            400,
            "missing field `model`",
        ),
        (
            post("/chat/completions", r#"{"model": "m"}"#),
            400,
            "missing field `messages`",
        ),
        (
            post("/chat/completions", r#"{"model": 1, "messages": []}"#),
            400,
            "`model` must be a string",
        ),
        (
            post(
                "/chat/completions",
                r#"{"model": "m", "messages": [], "stream": "yes"}"#,
            ),
            400,
            "`stream` must be a boolean",
        ),
        (
            post(
                "/chat/completions",
                r#"{"model": "m", "messages": [], "tools": {}}"#,
            ),
            400,
            "`tools` must be an array",
        ),
        (
            post("/completion", "{}"),
            404,
            "No route for POST /completion",
        ),
        (
            post("/beta/completions", r#"{"model": "m"}"#),
            400,
            "missing field `prompt`",
        ),
        (
            IncomingRequest {
                method: "GET".into(),
                ..post("/v1/chat/completions", "")
            },
            405,
            "Method GET is not allowed",
        ),
    ];
    for (request, status, message) in cases {
        let plan = provider.handle(request);
        assert_eq!(plan.status, status, "{message}");
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        let sent = body["error"]["message"].as_str().unwrap();
        assert!(sent.contains(message), "{sent}");
        assert!(body["error"]["type"].is_string());
    }
    assert_eq!(provider.responses_served(), 0);
    let log = provider.requests();
    assert_eq!(log.len(), 10);
    assert!(
        log.iter()
            .all(|request| matches!(request.outcome, RequestOutcome::Rejected { .. }))
    );
    assert_eq!(
        log.iter()
            .map(|request| request.request_number)
            .collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let plan = provider.handle(chat(json!([])));
    assert_eq!(plan.status, 200);
}

#[test]
fn fim_is_served_only_under_beta_and_runs_of_slashes_count_as_one() {
    let post = |path: &str, body: &str| IncomingRequest {
        method: "POST".into(),
        path: path.into(),
        headers: Vec::new(),
        body: Bytes::from(body.to_owned()),
    };
    let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["x"]); 2])).unwrap();
    for path in ["/completions", "/v1//completions"] {
        let plan = provider.handle(post(path, r#"{"model": "m", "prompt": "x"}"#));
        assert_eq!(plan.status, 404, "{path}");
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body["error"]["message"],
            format!(
                "No route for POST {path}: FIM completion is a beta feature, served under the /beta base URL"
            )
        );
    }
    assert_eq!(provider.responses_served(), 0);
    let fim = provider.handle(post(
        "/beta//completions",
        r#"{"model": "m", "prompt": "x"}"#,
    ));
    assert_eq!(fim.status, 200);
    // A base URL with a trailing slash: `//chat/completions` is the chat route.
    let chat = provider.handle(post(
        "//chat/completions",
        r#"{"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]}"#,
    ));
    assert_eq!(chat.status, 200);
    assert_eq!(provider.responses_served(), 2);
}

#[test]
fn oversized_bodies_get_413() {
    let limits = ServerLimits {
        max_body_bytes: 10,
        ..ServerLimits::default()
    };
    let provider =
        MockProvider::with_limits(Script::new(vec![ScriptEntry::content(["x"])]), limits).unwrap();
    let plan = provider.handle(chat(json!([{"role": "user", "content": "far too long"}])));
    assert_eq!(plan.status, 413);
    let plan = provider.handle_oversized("POST".into(), "/chat/completions".into(), Vec::new());
    assert_eq!(plan.status, 413);
    assert_eq!(provider.responses_served(), 0);
    assert_eq!(provider.requests()[1].outcome.status(), 413);
}

#[test]
fn invalid_scripts_are_refused_up_front() {
    let error =
        MockProvider::new(Script::new(vec![ScriptEntry::fault(FaultKind::HttpError)])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "script entry 0: fault `http_error` needs `status` (400-599)"
    );
}
