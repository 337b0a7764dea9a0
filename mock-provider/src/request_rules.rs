//! The request rules of the real API that the mock enforces, so an app that
//! sends something DeepSeek would refuse learns it from the mock, with the
//! same kind of 400, instead of in production.
//!
//! Each rule is a pure check of one request body (and, for the reasoning
//! passback, of what this mock answered before). A violation is answered as
//! DeepSeek answers it: HTTP 400, `type` and `code` `invalid_request_error`
//! (DeepSeek puts the type in both), DeepSeek's own message and `param`
//! (`null` wherever DeepSeek sends `null`); no script entry is used. Where
//! DeepSeek's wording is not on public record the mock words it itself and
//! names the field. Each violation also carries the mock's own account of
//! what was wrong (which message, which call), for the request log and the
//! stderr line, never for the client. [`crate::script::Validation`]
//! switches each rule. The rules, their texts and the public source of each
//! are listed in `docs/mock-provider.md`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::script::Validation;

/// A tool call this mock streamed, remembered for the reasoning passback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServedCall {
    /// The scripted response (1-based) that made the call.
    pub response_number: u64,
    /// Whether that response carried reasoning.
    pub with_reasoning: bool,
}

/// Tool calls served so far, by call id.
pub(crate) type ServedCalls = BTreeMap<String, ServedCall>;

/// A rule a request broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleViolation {
    /// The rule's name, as in [`Validation`] (`tool_results`, …).
    pub rule: &'static str,
    /// `error.param` as sent: `None` (JSON `null`) where DeepSeek sends
    /// `null`, else the field at fault.
    pub param: Option<String>,
    /// The message sent in `error.message`.
    pub message: String,
    /// What exactly was wrong, e.g. which message and call: for the request
    /// log, not sent to the client.
    pub detail: String,
}

/// What the rules need to know about the request besides its body.
pub(crate) struct RuleInput<'a> {
    /// The parsed body.
    pub body: &'a Value,
    /// Whether it arrived under `/beta`.
    pub beta: bool,
    /// Tokens of its prompt (the mock's tokenizer).
    pub prompt_tokens: u64,
    /// `max_tokens`, else `max_completion_tokens`.
    pub completion_tokens_requested: Option<u64>,
    /// The requested model's window, when the model is known.
    pub context_window: Option<u64>,
    /// The window used for a model outside the catalog.
    pub default_context_window: u64,
    /// The requested model's largest `max_tokens`, when the catalog gives one.
    pub max_output_tokens: Option<u64>,
}

/// Check a chat-completions request against the enabled rules; the first
/// violation, in the order the rules are listed here, is returned.
pub(crate) fn check_chat(
    input: &RuleInput<'_>,
    served: &ServedCalls,
    rules: &Validation,
) -> Result<(), RuleViolation> {
    let messages = input
        .body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if rules.checks(rules.known_model) {
        known_model(input)?;
    }
    if rules.checks(rules.max_tokens) {
        max_tokens(input)?;
    }
    if rules.checks(rules.prefix_completion) {
        prefix_completion(messages, input.beta)?;
    }
    if rules.checks(rules.tool_results) {
        tool_results(messages)?;
    }
    if rules.checks(rules.reasoning_passback) && !thinking_disabled(input.body) {
        reasoning_passback(messages, served)?;
    }
    if rules.checks(rules.context_window) {
        context_window(input)?;
    }
    Ok(())
}

/// Check a FIM request (only the model and the window apply).
pub(crate) fn check_fim(input: &RuleInput<'_>, rules: &Validation) -> Result<(), RuleViolation> {
    if rules.checks(rules.known_model) {
        known_model(input)?;
    }
    if rules.checks(rules.max_tokens) {
        max_tokens(input)?;
    }
    if rules.checks(rules.context_window) {
        context_window(input)?;
    }
    Ok(())
}

/// DeepSeek's words for a request it refuses, as its 400s carry them.
pub mod deepseek_says {
    /// A model the API does not serve.
    pub const MODEL_NOT_EXIST: &str = "Model Not Exist";
    /// An assistant message whose tool calls are not all answered right after it.
    pub const INSUFFICIENT_TOOL_MESSAGES: &str = "An assistant message with 'tool_calls' must be \
        followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages \
        following tool_calls message)";
    /// A `tool` message with no assistant `tool_calls` message before it.
    pub const ORPHAN_TOOL_MESSAGE: &str =
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'";
    /// Thinking-mode tool calls sent back without their reasoning.
    pub const REASONING_NOT_PASSED_BACK: &str =
        "The `reasoning_content` in the thinking mode must be passed back to the API.";
    /// `prefix: true` outside the `/beta` base URL.
    pub const PREFIX_NEEDS_BETA: &str = "prefix is only available when using beta api (set base_url=\"https://api.deepseek.com/beta\")";

    /// `max_tokens` outside the model's range.
    pub fn invalid_max_tokens(max_output_tokens: u64) -> String {
        format!(
            "Invalid max_tokens value, the valid range of max_tokens is [1, {max_output_tokens}]"
        )
    }
}

fn max_tokens(input: &RuleInput<'_>) -> Result<(), RuleViolation> {
    let (Some(limit), Some(requested)) =
        (input.max_output_tokens, input.completion_tokens_requested)
    else {
        return Ok(());
    };
    if (1..=limit).contains(&requested) {
        return Ok(());
    }
    Err(RuleViolation {
        rule: "max_tokens",
        param: None,
        message: deepseek_says::invalid_max_tokens(limit),
        detail: format!("max_tokens {requested} is outside [1, {limit}]"),
    })
}

fn known_model(input: &RuleInput<'_>) -> Result<(), RuleViolation> {
    if input.context_window.is_some() {
        return Ok(());
    }
    Err(RuleViolation {
        rule: "known_model",
        param: None,
        message: deepseek_says::MODEL_NOT_EXIST.into(),
        detail: "the model is not in the catalog".into(),
    })
}

fn context_window(input: &RuleInput<'_>) -> Result<(), RuleViolation> {
    let window = input.context_window.unwrap_or(input.default_context_window);
    let completion = input.completion_tokens_requested.unwrap_or(0);
    let requested = input.prompt_tokens.saturating_add(completion);
    if requested <= window {
        return Ok(());
    }
    Err(RuleViolation {
        rule: "context_window",
        param: None,
        message: context_length_message(window, input.prompt_tokens, completion),
        detail: format!("{requested} tokens requested, the window is {window}"),
    })
}

/// DeepSeek's wording for a request larger than the model's window (the
/// upstream adapter, like every OpenAI-style client, recognises the phrase
/// "maximum context length").
pub fn context_length_message(window: u64, prompt_tokens: u64, completion_tokens: u64) -> String {
    format!(
        "This model's maximum context length is {window} tokens. However, you requested {} \
         tokens ({prompt_tokens} in the messages, {completion_tokens} in the completion). \
         Please reduce the length of the messages or completion.",
        prompt_tokens.saturating_add(completion_tokens)
    )
}

fn prefix_completion(messages: &[Value], beta: bool) -> Result<(), RuleViolation> {
    let last = messages.len().saturating_sub(1);
    for (index, message) in messages.iter().enumerate() {
        if message.get("prefix") != Some(&Value::Bool(true)) {
            continue;
        }
        // DeepSeek's wording is on record only for the base URL; the other
        // two misuses are worded here, naming the field.
        let (param, message) = if index != last {
            let text = "only the last message may set `prefix: true`";
            (
                Some(format!("messages[{index}].prefix")),
                format!("Invalid messages[{index}]: {text}"),
            )
        } else if role(message) != Some("assistant") {
            let text = "`prefix: true` is allowed only on an assistant message";
            (
                Some(format!("messages[{index}].prefix")),
                format!("Invalid messages[{index}]: {text}"),
            )
        } else if !beta {
            (None, deepseek_says::PREFIX_NEEDS_BETA.to_owned())
        } else {
            continue;
        };
        return Err(RuleViolation {
            rule: "prefix_completion",
            param,
            message,
            detail: format!("messages[{index}] sets `prefix: true`"),
        });
    }
    Ok(())
}

fn tool_results(messages: &[Value]) -> Result<(), RuleViolation> {
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        match role(message) {
            Some("tool") => {
                return Err(RuleViolation {
                    rule: "tool_results",
                    param: None,
                    message: deepseek_says::ORPHAN_TOOL_MESSAGE.into(),
                    detail: format!(
                        "messages[{index}] has role `tool` but answers no `tool_calls` entry of \
                         the assistant message right before it"
                    ),
                });
            }
            Some("assistant") => {
                let mut pending: Vec<&str> = call_ids(message);
                let mut next = index + 1;
                while let Some(tool) = messages.get(next).filter(|m| role(m) == Some("tool")) {
                    let answered = tool.get("tool_call_id").and_then(Value::as_str);
                    match answered.and_then(|id| pending.iter().position(|call| *call == id)) {
                        Some(position) => {
                            pending.remove(position);
                        }
                        None => {
                            return Err(RuleViolation {
                                rule: "tool_results",
                                param: None,
                                message: deepseek_says::INSUFFICIENT_TOOL_MESSAGES.into(),
                                detail: format!(
                                    "messages[{next}]: `tool_call_id` {} answers no unanswered \
                                     call of messages[{index}]",
                                    answered.map_or("(missing)".to_owned(), |id| format!("{id:?}"))
                                ),
                            });
                        }
                    }
                    next += 1;
                }
                if !pending.is_empty() {
                    return Err(RuleViolation {
                        rule: "tool_results",
                        param: None,
                        message: deepseek_says::INSUFFICIENT_TOOL_MESSAGES.into(),
                        detail: format!(
                            "messages[{index}]: no `tool` message answers {}",
                            quoted_list(&pending)
                        ),
                    });
                }
                index = next;
                continue;
            }
            _ => {}
        }
        index += 1;
    }
    Ok(())
}

/// DeepSeek's thinking-mode guide: the reasoning of a turn in which the model
/// called tools "must be passed back to the API in all subsequent" turns, so
/// every assistant message of the request is checked, not only the open
/// turn's. Only messages whose calls this mock made with reasoning are
/// judged: the final answer of a tool turn has no call id to tie it to a
/// response.
fn reasoning_passback(messages: &[Value], served: &ServedCalls) -> Result<(), RuleViolation> {
    for (index, message) in messages.iter().enumerate() {
        if role(message) != Some("assistant") {
            continue;
        }
        let thought = call_ids(message)
            .into_iter()
            .find_map(|id| served.get(id).filter(|call| call.with_reasoning));
        let Some(call) = thought else { continue };
        let has_reasoning = message
            .get("reasoning_content")
            .and_then(Value::as_str)
            .is_some_and(|text| !text.is_empty());
        if !has_reasoning {
            return Err(RuleViolation {
                rule: "reasoning_passback",
                param: None,
                message: deepseek_says::REASONING_NOT_PASSED_BACK.into(),
                detail: format!(
                    "messages[{index}] has no `reasoning_content`, but its tool calls were made \
                     in thinking mode (response {})",
                    call.response_number
                ),
            });
        }
    }
    Ok(())
}

fn thinking_disabled(body: &Value) -> bool {
    body.pointer("/thinking/type").and_then(Value::as_str) == Some("disabled")
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn call_ids(message: &Value) -> Vec<&str> {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|call| call.get("id").and_then(Value::as_str))
        .collect()
}

fn quoted_list(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use crate::script::message_text;
    use serde_json::json;

    use super::*;

    fn input(body: &Value) -> RuleInput<'_> {
        RuleInput {
            body,
            beta: false,
            prompt_tokens: 10,
            completion_tokens_requested: None,
            context_window: Some(100),
            default_context_window: 1_000,
            max_output_tokens: Some(50),
        }
    }

    // DeepSeek's texts as public reports quote them (docs/mock-provider.md
    // cites each), written out here rather than read from `deepseek_says`.
    const INSUFFICIENT: &str = "An assistant message with 'tool_calls' must be followed by tool \
        messages responding to each 'tool_call_id'. (insufficient tool messages following \
        tool_calls message)";
    const ORPHAN: &str =
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'";

    fn check(body: Value, served: &ServedCalls) -> Result<(), RuleViolation> {
        check_chat(&input(&body), served, &Validation::default())
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn tool_calls_need_one_answer_each_right_after_them() {
        let served = ServedCalls::new();
        let ok = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"}
        ]});
        assert_eq!(check(ok, &served), Ok(()));

        let unanswered = json!({"messages": [
            {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"}
        ]});
        let violation = check(unanswered, &served).unwrap_err();
        assert_eq!(violation.rule, "tool_results");
        assert_eq!(
            (violation.param, violation.message.as_str()),
            (None, INSUFFICIENT)
        );
        assert!(
            violation.detail.contains("messages[0]") && violation.detail.contains("\"b\""),
            "{}",
            violation.detail
        );

        let stray = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]});
        let violation = check(stray, &served).unwrap_err();
        assert_eq!(
            (violation.param, violation.message.as_str()),
            (None, ORPHAN)
        );
        assert!(
            violation.detail.starts_with("messages[1]"),
            "{}",
            violation.detail
        );

        let wrong_id = json!({"messages": [
            {"role": "assistant", "content": "", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "z", "content": "1"}
        ]});
        let violation = check(wrong_id, &served).unwrap_err();
        assert_eq!(violation.message, INSUFFICIENT);
        assert!(violation.detail.contains("\"z\""), "{}", violation.detail);
    }

    #[test]
    fn reasoning_of_a_thinking_tool_call_must_come_back_in_every_later_request() {
        let mut served = ServedCalls::new();
        served.insert(
            "a".into(),
            ServedCall {
                response_number: 1,
                with_reasoning: true,
            },
        );
        served.insert(
            "plain".into(),
            ServedCall {
                response_number: 2,
                with_reasoning: false,
            },
        );
        let turn = |assistant: Value| {
            json!({"messages": [
                {"role": "user", "content": "go"},
                assistant,
                {"role": "tool", "tool_call_id": "a", "content": "1"}
            ]})
        };
        let dropped = turn(json!({"role": "assistant", "content": "", "tool_calls": [call("a")]}));
        let violation = check(dropped.clone(), &served).unwrap_err();
        assert_eq!(violation.rule, "reasoning_passback");
        assert_eq!(
            (violation.param, violation.message.as_str()),
            (
                None,
                "The `reasoning_content` in the thinking mode must be passed back to the API."
            )
        );
        assert!(
            violation.detail.contains("messages[1]") && violation.detail.contains("response 1")
        );

        let passed_back = turn(json!({"role": "assistant", "content": "",
            "reasoning_content": "thought", "tool_calls": [call("a")]}));
        assert_eq!(check(passed_back, &served), Ok(()));

        // A later turn still needs it: the tool turn's reasoning stays in the context.
        let mut later = dropped.clone();
        later["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "new question"}));
        let violation = check(later, &served).unwrap_err();
        assert!(
            violation.detail.contains("messages[1]"),
            "{}",
            violation.detail
        );

        // Thinking off, or a call answered without reasoning: no rule.
        let mut disabled = dropped;
        disabled["thinking"] = json!({"type": "disabled"});
        assert_eq!(check(disabled, &served), Ok(()));
        let plain = json!({"messages": [
            {"role": "assistant", "content": "", "tool_calls": [call("plain")]},
            {"role": "tool", "tool_call_id": "plain", "content": "1"}
        ]});
        assert_eq!(check(plain, &served), Ok(()));
    }

    #[test]
    fn the_window_counts_the_prompt_and_the_requested_completion() {
        let body = json!({"messages": []});
        let mut request = input(&body);
        request.max_output_tokens = None;
        request.completion_tokens_requested = Some(90);
        assert_eq!(
            check_chat(&request, &ServedCalls::new(), &Validation::default()),
            Ok(())
        );
        request.completion_tokens_requested = Some(91);
        let violation =
            check_chat(&request, &ServedCalls::new(), &Validation::default()).unwrap_err();
        assert_eq!(
            violation.message,
            "This model's maximum context length is 100 tokens. However, you requested 101 \
             tokens (10 in the messages, 91 in the completion). Please reduce the length of \
             the messages or completion."
        );
        request.context_window = None;
        assert_eq!(
            check_chat(&request, &ServedCalls::new(), &Validation::default()),
            Ok(()),
            "an unknown model gets the default window"
        );
        let strict = Validation {
            known_model: true,
            ..Validation::default()
        };
        assert_eq!(
            check_chat(&request, &ServedCalls::new(), &strict)
                .unwrap_err()
                .message,
            "Model Not Exist"
        );
        assert_eq!(
            check_chat(&request, &ServedCalls::new(), &Validation::off()),
            Ok(())
        );
    }

    #[test]
    fn prefix_completion_is_the_last_assistant_message_on_beta() {
        let body = json!({"messages": [
            {"role": "user", "content": "write"},
            {"role": "assistant", "content": "```py\n", "prefix": true}
        ]});
        let mut request = input(&body);
        let rules = Validation::default();
        let violation = check_chat(&request, &ServedCalls::new(), &rules).unwrap_err();
        assert_eq!(
            (violation.param, violation.message.as_str()),
            (
                None,
                "prefix is only available when using beta api (set base_url=\"https://api.deepseek.com/beta\")"
            )
        );
        request.beta = true;
        assert_eq!(check_chat(&request, &ServedCalls::new(), &rules), Ok(()));
        let misplaced = json!({"messages": [
            {"role": "user", "content": "write", "prefix": true}
        ]});
        let request = RuleInput {
            beta: true,
            ..input(&misplaced)
        };
        let violation = check_chat(&request, &ServedCalls::new(), &rules).unwrap_err();
        assert_eq!(violation.param.as_deref(), Some("messages[0].prefix"));
    }

    #[test]
    fn max_tokens_lies_in_the_models_range() {
        let body = json!({"messages": []});
        let rules = Validation::default();
        let mut request = input(&body);
        request.context_window = Some(1_000);
        for (requested, refused) in [
            (Some(1), false),
            (Some(50), false),
            (None, false),
            (Some(51), true),
            (Some(0), true),
        ] {
            request.completion_tokens_requested = requested;
            let checked = check_chat(&request, &ServedCalls::new(), &rules);
            assert_eq!(checked.is_err(), refused, "max_tokens {requested:?}");
            if let Err(violation) = checked {
                assert_eq!(
                    (violation.param, violation.message.as_str()),
                    (
                        None,
                        "Invalid max_tokens value, the valid range of max_tokens is [1, 50]"
                    )
                );
            }
        }
        request.max_output_tokens = None;
        request.completion_tokens_requested = Some(51);
        assert_eq!(
            check_chat(&request, &ServedCalls::new(), &rules),
            Ok(()),
            "no limit known"
        );
        let off = Validation {
            max_tokens: false,
            ..rules
        };
        request.max_output_tokens = Some(50);
        assert_eq!(check_chat(&request, &ServedCalls::new(), &off), Ok(()));
    }

    #[test]
    fn message_text_reads_strings_and_parts() {
        assert_eq!(message_text(&json!({"content": "hi"})), "hi");
        assert_eq!(
            message_text(
                &json!({"content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"text": "b"}]})
            ),
            "ab"
        );
        assert_eq!(message_text(&json!({"content": null})), "");
    }
}
