//! Real clients against `dshc serve`: the official openai and Anthropic SDKs,
//! the Vercel AI SDK and LangChain's DeepSeek model, each driven through
//! `clients/session.toml` by a driver in `clients/` that prints what the
//! client surfaced, case by case.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};

use crate::serve::{scratch_dir, serve_with};

/// Run one real-client driver (`clients/run LANGUAGE BASE_URL`) against a
/// fresh `dshc serve` of `clients/session.toml`; its cases by name, and the
/// server's request log.
fn run_real_client(language: &str, dialect: &str) -> (BTreeMap<String, Value>, Vec<Value>) {
    let clients = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients");
    let log_path = scratch_dir().join(format!("client-{language}-{dialect}.jsonl"));
    let script = std::fs::read_to_string(clients.join("session.toml")).unwrap();
    let (served, _stderr) = serve_with(
        &format!("client-{language}-{dialect}"),
        &script,
        "",
        &format!("--quiet --dialect {dialect} --log '{}'", log_path.display()),
    );
    let output = Command::new(clients.join("run"))
        .args([language, &format!("http://{}", served.address)])
        .output()
        .expect("clients/run starts");
    assert!(
        output.status.success(),
        "the {language} client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let log_text = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        !log_text.contains("sk-dshc-test"),
        "the {language} client's API key reached the log file"
    );
    assert!(log_text.contains("Bearer [redacted]"), "{log_text}");
    let cases = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let case: Value = serde_json::from_str(line).expect("a JSON line");
            (case["case"].as_str().unwrap().to_owned(), case)
        })
        .collect();
    let log = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (cases, log)
}

/// Where one client's JSON lines keep what every DeepSeek chat client must
/// surface: JSON pointers into a case, the field of a tool call holding its
/// arguments, and the client's word for a tool-calls finish.
struct Surface {
    arguments: &'static str,
    prompt_tokens: &'static str,
    completion_tokens: &'static str,
    reasoning_tokens: &'static str,
    cache_hit: &'static str,
    tool_calls_finish: &'static str,
}

/// The openai SDKs: DeepSeek's wire fields as they are.
const OPENAI_SDK: Surface = Surface {
    arguments: "arguments",
    prompt_tokens: "/usage/prompt_tokens",
    completion_tokens: "/usage/completion_tokens",
    reasoning_tokens: "/usage/completion_tokens_details/reasoning_tokens",
    cache_hit: "/usage/prompt_cache_hit_tokens",
    tool_calls_finish: "tool_calls",
};

/// The Vercel AI SDK: its own usage shape and finish reasons, parsed inputs.
const AI_SDK: Surface = Surface {
    arguments: "input",
    prompt_tokens: "/usage/inputTokens",
    completion_tokens: "/usage/outputTokens",
    reasoning_tokens: "/usage/outputTokenDetails/reasoningTokens",
    cache_hit: "/usage/inputTokenDetails/cacheReadTokens",
    tool_calls_finish: "tool-calls",
};

/// LangChain: `usage_metadata`, parsed `args`, the wire's finish reason.
const LANGCHAIN: Surface = Surface {
    arguments: "args",
    prompt_tokens: "/usage/input_tokens",
    completion_tokens: "/usage/output_tokens",
    reasoning_tokens: "/usage/output_token_details/reasoning",
    cache_hit: "/usage/input_token_details/cache_read",
    tool_calls_finish: "tool_calls",
};

/// One real client's run of `session.toml` on the chat API: its cases, the
/// server's log (one entry per request: text 0, reasoning 1, tool calls 2,
/// tool results 3, non-streaming 4, the 429 5 and its retry 6, the three
/// 400s 7 to 9), and where its lines keep the common facts. Expected numbers
/// come from the script and the mock's documented tokenizer: "Hello!" is
/// `Hell`, `o`, `!`; "Six sevens are 42." is 9 tokens.
struct ChatSession {
    language: &'static str,
    surface: Surface,
    cases: BTreeMap<String, Value>,
    log: Vec<Value>,
}

impl ChatSession {
    fn run(language: &'static str, dialect: &str, surface: Surface) -> Self {
        let (cases, log) = run_real_client(language, dialect);
        Self {
            language,
            surface,
            cases,
            log,
        }
    }

    fn case(&self, name: &str) -> &Value {
        self.cases
            .get(name)
            .unwrap_or_else(|| panic!("{}: no {name} case", self.language))
    }

    fn number(&self, name: &str, pointer: &str) -> u64 {
        let case = self.case(name);
        case.pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("{}: {name}: no {pointer} in {case}", self.language))
    }

    /// The request `index` as the server logged it: its prompt's tokens by
    /// the mock's tokenizer, and its usage.
    fn logged(&self, index: usize) -> (u64, &Value) {
        let entry = &self.log[index];
        let prompt = mock_provider::canonical_prompt(&entry["body"]);
        (
            mock_provider::tokenizer::count_tokens(&prompt),
            &entry["usage"],
        )
    }

    /// The replayed assistant message of the tool round trip (request 3).
    fn replayed_assistant(&self) -> &Value {
        let messages = self.log[3]["body"]["messages"].as_array().unwrap();
        messages
            .iter()
            .find(|message| message["role"] == "assistant")
            .unwrap_or_else(|| panic!("{}: no assistant message replayed", self.language))
    }

    fn assert_text_and_reasoning(&self) {
        let (language, surface) = (self.language, &self.surface);
        let text = self.case("text");
        assert_eq!(text["text"], "Hello!", "{language}: {text}");
        assert_eq!(text["finish_reason"], "stop", "{language}: {text}");
        assert_eq!(self.number("text", surface.completion_tokens), 3);
        assert_eq!(self.number("text", surface.cache_hit), 0);
        let (prompt, usage) = self.logged(0);
        assert_eq!(usage["prompt_tokens"], prompt, "{language}");
        assert_eq!(self.number("text", surface.prompt_tokens), prompt);

        let reasoning = self.case("reasoning");
        assert_eq!(reasoning["reasoning"], "Six sevens are 42.", "{language}");
        assert_eq!(reasoning["text"], "42", "{language}");
        assert_eq!(self.number("reasoning", surface.reasoning_tokens), 9);
        // Reasoning and answer: 9 + 1 tokens.
        assert_eq!(self.number("reasoning", surface.completion_tokens), 10);
    }

    /// Both fragmented, parallel calls, whole; arguments compared as the
    /// wire's compact JSON (a client that parses them is re-serialized).
    fn assert_tool_calls(&self) {
        let calls = self.case("tool_calls");
        let finish = self.surface.tool_calls_finish;
        assert_eq!(calls["finish_reason"], finish, "{}: {calls}", self.language);
        let seen: Vec<Value> = calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| {
                let arguments = &call[self.surface.arguments];
                let arguments = match arguments.as_str() {
                    Some(text) => text.to_owned(),
                    None => arguments.to_string(),
                };
                json!({"id": call["id"], "name": call["name"], "arguments": arguments})
            })
            .collect();
        assert_eq!(
            seen,
            [
                json!({"id": "call_paris", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}),
                json!({"id": "call_rome", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}),
            ],
            "{}",
            self.language
        );
    }

    /// The follow-up passed the reasoning back (else the rules answer 400)
    /// and reused the cached prefix: system, tools and question.
    fn assert_tool_results(&self) {
        let language = self.language;
        assert_eq!(
            self.replayed_assistant()["reasoning_content"],
            "Two cities, two calls.",
            "{language}"
        );
        let results = self.case("tool_results");
        assert_eq!(results["text"], "Sunny in both.", "{language}: {results}");
        let hit = self.number("tool_results", self.surface.cache_hit);
        assert!(hit > 0 && hit.is_multiple_of(64), "{language}: {results}");
        let (prompt, usage) = self.logged(3);
        assert_eq!(usage["prompt_cache_hit_tokens"], hit, "{language}");
        assert_eq!(
            self.number("tool_results", self.surface.prompt_tokens),
            prompt
        );
    }

    fn assert_non_streaming_and_rate_limit(&self) {
        let language = self.language;
        let whole = self.case("non_streaming");
        assert_eq!(whole["text"], "Plain answer.", "{language}: {whole}");
        assert_eq!(whole["finish_reason"], "stop", "{language}: {whole}");
        assert_eq!(self.log[4]["outcome"]["streamed"], false, "{language}");
        let (prompt, _) = self.logged(4);
        assert_eq!(
            self.number("non_streaming", self.surface.prompt_tokens),
            prompt
        );

        // The client waited out Retry-After: 1 before its retry got the answer.
        let limited = self.case("rate_limit");
        assert_eq!(limited["text"], "After the wait.", "{language}: {limited}");
        assert!(
            self.number("rate_limit", "/elapsed_ms") >= 1000,
            "{limited}"
        );
        assert_eq!(self.log[5]["status"], 429, "{language}");
    }

    /// One of DeepSeek's 400s as the client raised it; its message.
    fn error(&self, name: &str, code: &str) -> &str {
        let error = &self.case(name)["error"];
        assert_eq!(error["status"], 400, "{}: {name}: {error}", self.language);
        assert_eq!(error["code"], code, "{}: {name}: {error}", self.language);
        error["message"].as_str().unwrap()
    }

    /// The three 400s, and the statuses of every request: `statuses` says
    /// which the client sent, so a retry of a 400 would show.
    fn assert_errors(&self, statuses: &[u64]) {
        let message = self.error("overflow", "invalid_request_error");
        assert!(
            message.contains("maximum context length is 64 tokens"),
            "{message}"
        );
        // DeepSeek's own body for a max_tokens outside V4's range.
        let message = self.error("max_tokens", "invalid_request_error");
        assert!(
            message.ends_with(
                "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]"
            ),
            "{message}"
        );
        // Named by the script file `dshc serve` was given.
        let message = self.error("exhausted", "script_exhausted");
        let script_file = format!(
            "client-{}-deepseek.toml has no answer for request {}",
            self.language,
            statuses.len()
        );
        assert!(message.contains(&script_file), "{message}");
        let seen: Vec<u64> = self
            .log
            .iter()
            .map(|r| r["status"].as_u64().unwrap())
            .collect();
        assert_eq!(seen, statuses, "{}", self.language);
    }

    /// Every case as the script means it: one request per case, the 429 and
    /// its retry, and nothing retried after the three 400s.
    fn assert_whole_session(&self) {
        self.assert_text_and_reasoning();
        self.assert_tool_calls();
        self.assert_tool_results();
        self.assert_non_streaming_and_rate_limit();
        self.assert_errors(&[200, 200, 200, 200, 200, 429, 200, 400, 400, 400]);
    }
}

/// What both official openai SDKs surface beyond the common facts: the wire
/// as it is, fingerprints and chunk framing included.
fn assert_openai_sdk_session(language: &'static str) {
    let session = ChatSession::run(language, "deepseek", OPENAI_SDK);
    session.assert_whole_session();
    let case = |name: &str| session.case(name);
    let text = case("text");
    assert_eq!(text["fingerprints"], json!(["fp_dshc_mock"]));
    // Usage arrives without include_usage, on the finish chunk: no empty-choices chunk.
    assert_eq!(text["empty_choice_chunks"], 0);
    let results = case("tool_results");
    assert_eq!(
        results["usage"]["prompt_tokens_details"]["cached_tokens"],
        results["usage"]["prompt_cache_hit_tokens"]
    );
    let whole = case("non_streaming");
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["fingerprints"], json!(["fp_dshc_mock"]));
}

#[test]
fn the_official_python_sdk_gets_the_deepseek_api() {
    assert_openai_sdk_session("python");
}

#[test]
fn the_official_node_sdk_gets_the_deepseek_api() {
    assert_openai_sdk_session("node");
}

/// The Vercel AI SDK (`ai` with `@ai-sdk/deepseek`) passes every case. It
/// hands over parts, not chunks, so the chunk framing is not asserted; it
/// replays its own response messages, reasoning included, and carries
/// DeepSeek's cache counts, fingerprint and `object` in `providerMetadata`.
#[test]
fn the_vercel_ai_sdk_gets_the_deepseek_api() {
    let session = ChatSession::run("ai-sdk", "deepseek", AI_SDK);
    session.assert_whole_session();
    for (name, object) in [
        ("text", "chat.completion.chunk"),
        ("non_streaming", "chat.completion"),
    ] {
        let deepseek = &session.case(name)["provider_metadata"]["deepseek"];
        assert_eq!(deepseek["systemFingerprint"], "fp_dshc_mock", "{name}");
        assert_eq!(deepseek["responseObject"], object, "{name}");
    }
    let calls = session.case("tool_calls");
    assert_eq!(calls["raw_finish_reason"], "tool_calls");
    // Five argument fragments in the script, one input delta each.
    assert_eq!(calls["input_deltas"], 5);
    assert_eq!(
        calls["replayed"],
        json!(["reasoning", "tool-call", "tool-call"])
    );
    let results = session.case("tool_results");
    let hit = &results["usage"]["inputTokenDetails"]["cacheReadTokens"];
    assert_eq!(
        results["provider_metadata"]["deepseek"]["promptCacheHitTokens"],
        *hit
    );
    let misses = results["usage"]["inputTokens"].as_u64().unwrap() - hit.as_u64().unwrap();
    assert_eq!(
        results["usage"]["inputTokenDetails"]["noCacheTokens"],
        misses
    );
    assert_eq!(
        results["provider_metadata"]["deepseek"]["promptCacheMissTokens"],
        misses
    );
    // Its own retries: the 429 once, the 400s not at all.
    for name in ["overflow", "max_tokens", "exhausted"] {
        assert_eq!(session.case(name)["error"]["retryable"], false, "{name}");
    }
}

/// `@langchain/deepseek` on Node 22 (from npm, `clients/node22`). A real
/// finding: its message conversion drops `reasoning_content` when an agent
/// loop replays the model's own tool-call message, so the tool round trip
/// gets DeepSeek's passback 400 (not retried) instead of the answer; every
/// other case passes. It raises an overflow as its own
/// `ContextOverflowError` (the API error as its cause). LangChain merges
/// chunks into one message, so the chunk framing is not asserted; its
/// retry waits its own back-off or `Retry-After`, whichever is longer, so
/// only the lower bound is.
#[test]
fn langchain_js_gets_the_deepseek_api_but_drops_reasoning_on_replay() {
    let session = ChatSession::run("langchain-node", "deepseek", LANGCHAIN);
    session.assert_text_and_reasoning();
    session.assert_tool_calls();
    // It surfaced the calls' reasoning (`additional_kwargs`), then replayed
    // the message without it.
    assert_eq!(
        session.case("tool_calls")["reasoning"],
        "Two cities, two calls."
    );
    let replayed = session.replayed_assistant();
    assert!(replayed.get("reasoning_content").is_none(), "{replayed}");
    assert_eq!(replayed["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(
        session.error("tool_results", "invalid_request_error"),
        "The `reasoning_content` in the thinking mode must be passed back to the API."
    );
    session.assert_non_streaming_and_rate_limit();
    session.assert_errors(&[200, 200, 200, 400, 200, 429, 200, 400, 400, 400]);
    assert_eq!(
        session.case("overflow")["error"]["name"],
        "ContextOverflowError"
    );
    assert_eq!(session.case("text")["fingerprint"], "fp_dshc_mock");
    assert_eq!(session.case("non_streaming")["fingerprint"], "fp_dshc_mock");
}

/// What both official Anthropic SDKs must surface from DeepSeek's
/// Anthropic-format API (`<base>/anthropic`, the SDKs append `/v1/messages`),
/// served from the same `session.toml`. Event order and shapes are
/// Anthropic's streaming guide; the texts of the 400s are DeepSeek's.
fn assert_anthropic_session(language: &str) {
    let (cases, log) = run_real_client(language, "deepseek");
    let case = |name: &str| &cases[name];
    let text_events = [
        "message_start",
        "content_block_start",
        "content_block_delta:text_delta",
        "content_block_delta:text_delta",
        "content_block_delta:text_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];

    let text = case("text");
    assert_eq!(text["text"], "Hello!", "{language}: {text}");
    assert_eq!(
        (&text["type"], &text["role"]),
        (&json!("message"), &json!("assistant"))
    );
    assert_eq!(text["id"], "msg_1");
    assert_eq!(text["stop_reason"], "end_turn");
    assert_eq!(text["events"], json!(text_events));
    assert_eq!(text["usage"]["output_tokens"], 3);
    assert_eq!(text["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(text["usage"]["cache_creation_input_tokens"], 0);
    // The request is accounted as the chat request it means: `system` first,
    // then the user's message (docs/mock-provider.md).
    let system = log[0]["body"]["system"].clone();
    let chat = json!({"model": "deepseek-v4-flash", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "Say hello."}]});
    let prompt = mock_provider::tokenizer::count_tokens(&mock_provider::canonical_prompt(&chat));
    assert_eq!(text["usage"]["input_tokens"], prompt, "{language}: {text}");

    let thinking = case("thinking");
    assert_eq!(thinking["blocks"], json!(["thinking", "text"]));
    assert_eq!(thinking["thinking"], "Six sevens are 42.");
    assert_eq!(thinking["text"], "42");
    assert_eq!(thinking["signatures"].as_array().unwrap().len(), 1);
    assert!(!thinking["signatures"][0].as_str().unwrap().is_empty());
    let events = thinking["events"].as_array().unwrap();
    assert_eq!(events[2], "content_block_delta:thinking_delta");
    assert_eq!(events[4], "content_block_delta:signature_delta");
    // Reasoning and answer: 9 + 1 tokens.
    assert_eq!(thinking["usage"]["output_tokens"], 10);

    let calls = case("tool_use");
    assert_eq!(calls["stop_reason"], "tool_use");
    assert_eq!(calls["blocks"], json!(["thinking", "tool_use", "tool_use"]));
    assert_eq!(
        calls["calls"],
        json!([
            {"id": "call_paris", "name": "get_weather", "input": {"city": "Paris"}},
            {"id": "call_rome", "name": "get_weather", "input": {"city": "Rome"}}
        ])
    );
    let json_deltas = calls["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| *event == "content_block_delta:input_json_delta")
        .count();
    assert_eq!(json_deltas, 5, "the scripted fragments, one delta each");

    // The thinking and tool_use blocks passed back with their tool_result
    // blocks: the answer, with the prefix the earlier request left cached.
    let results = case("tool_result");
    assert_eq!(results["text"], "Sunny in both.");
    let hit = results["usage"]["cache_read_input_tokens"]
        .as_u64()
        .unwrap();
    assert!(hit > 0 && hit % 64 == 0, "{language}: {results}");
    for (index, name) in [(0, "text"), (3, "tool_result")] {
        let usage = &case(name)["usage"];
        let logged = &log[index]["usage"];
        let input = usage["input_tokens"].as_u64().unwrap();
        let read = usage["cache_read_input_tokens"].as_u64().unwrap();
        assert_eq!(input + read, logged["prompt_tokens"], "{language}: {name}");
        assert_eq!(
            read, logged["prompt_cache_hit_tokens"],
            "{language}: {name}"
        );
    }

    let whole = case("whole");
    assert_eq!(whole["text"], "Plain answer.");
    assert_eq!(whole["type"], "message");
    assert_eq!(whole["stop_reason"], "end_turn");
    assert!(whole.get("events").is_none());
    assert_eq!(log[4]["outcome"]["streamed"], false, "{}", log[4]);

    assert_anthropic_faults(language, &cases, &log);
}

/// The Anthropic session's faults: the 429 waited out, and each 400 in
/// Anthropic's envelope with DeepSeek's text; nothing retried after them.
fn assert_anthropic_faults(language: &str, cases: &BTreeMap<String, Value>, log: &[Value]) {
    let case = |name: &str| &cases[name];
    let limited = case("rate_limit");
    assert_eq!(limited["text"], "After the wait.");
    assert!(limited["elapsed_ms"].as_u64().unwrap() >= 1000, "{limited}");

    let anthropic_error = |name: &str| {
        let error = &case(name)["error"];
        assert_eq!(error["status"], 400, "{language}: {name}: {error}");
        assert_eq!(error["body_type"], "error", "{language}: {name}");
        assert_eq!(error["type"], "invalid_request_error", "{language}: {name}");
        error["error_message"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        anthropic_error("thinking_dropped"),
        "The `content[].thinking` in the thinking mode must be passed back to the API."
    );
    assert!(anthropic_error("overflow").contains("maximum context length is 64 tokens"));
    assert_eq!(
        anthropic_error("max_tokens"),
        "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]"
    );
    assert!(anthropic_error("exhausted").contains("has no answer for request 11"));
    let statuses: Vec<u64> = log.iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 200, 429, 200, 400, 400, 400, 400],
        "{language}"
    );
    assert!(log.iter().all(|r| r["path"] == "/anthropic/v1/messages"));
}

#[test]
fn the_official_anthropic_python_sdk_gets_deepseeks_anthropic_api() {
    assert_anthropic_session("anthropic-python");
}

#[test]
fn the_official_anthropic_node_sdk_gets_deepseeks_anthropic_api() {
    assert_anthropic_session("anthropic-node");
}

#[test]
fn the_openai_dialect_gives_usage_only_when_asked() {
    let (cases, _log) = run_real_client("python", "openai");
    // The SDK sends no stream_options: no usage in any stream.
    for name in [
        "text",
        "reasoning",
        "tool_calls",
        "tool_results",
        "rate_limit",
    ] {
        assert!(cases[name]["usage"].is_null(), "{name}: {}", cases[name]);
        assert_eq!(cases[name]["empty_choice_chunks"], 0);
    }
    assert_eq!(cases["text"]["text"], "Hello!");
    assert!(
        cases["non_streaming"]["usage"]["total_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
}
