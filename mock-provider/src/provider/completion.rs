//! The chat and FIM endpoints: a body of the right shape is accounted against the
//! prefix cache, checked against the real API's rules, answered from the script
//! entry [`super::choice`] picks, and remembered (its prompt in the cache, the tool
//! calls it served for the reasoning pass-back rule).

use serde_json::Value;

use super::request::ParsedRequest;
use super::{Handled, IncomingRequest, RequestOutcome, State};
use crate::catalog::DEFAULT_CONTEXT_WINDOW_TOKENS;
use crate::prompt_cache::{PromptAccounting, canonical_fim_prompt, token_ids};
use crate::render::{RenderContext, ResponsePlan, WireFormat, render_response};
use crate::request_rules::{self, RuleInput, RuleViolation, ServedCall};
use crate::script::{Endpoint, FaultKind, MatchInput, ScriptEntry};
use crate::wire::{ErrorBody, Usage};

/// A chat or FIM request whose body has the right shape, with its prompt accounted.
struct Accepted {
    endpoint: Endpoint,
    /// The API it arrived on (the shape of the answer and of a rule's message).
    format: WireFormat,
    /// Sent to the `/beta` base (FIM always is).
    beta: bool,
    body_json: Value,
    parsed: ParsedRequest,
    prompt_ids: Vec<u32>,
    prompt: PromptAccounting,
    /// The requested model's context window, when the catalog has the model.
    known_window: Option<u64>,
    max_output_tokens: Option<u64>,
}

impl State {
    /// Answer a chat (`endpoint` chat) or FIM request: parse and account it, check
    /// the rules, then answer from the first entry that takes it.
    pub(super) fn complete(
        &mut self,
        request: &IncomingRequest,
        endpoint: Endpoint,
        beta: bool,
        format: WireFormat,
    ) -> Handled {
        let accepted = match self.accept(request, endpoint, beta, format) {
            Ok(accepted) => accepted,
            Err(rejected) => return *rejected,
        };
        if let Err(violation) = self.check_rules(&accepted) {
            return violation_answer(violation, accepted.format, accepted.body_json);
        }
        let match_input = MatchInput {
            model: &accepted.parsed.model,
            endpoint,
            stream: accepted.parsed.stream,
            messages: accepted.parsed.messages(&accepted.body_json),
        };
        let Some(entry_index) = self.choose_entry(&match_input) else {
            let exhausted = self.exhausted(request, &match_input);
            return Handled {
                body_json: Some(accepted.body_json),
                ..exhausted
            };
        };
        self.serve(entry_index, accepted)
    }

    /// Parse the body and account its prompt, or the 400 a malformed body gets
    /// (boxed, as in [`super::route::admit`]).
    fn accept(
        &mut self,
        request: &IncomingRequest,
        endpoint: Endpoint,
        beta: bool,
        format: WireFormat,
    ) -> Result<Accepted, Box<Handled>> {
        let body_json: Value = match serde_json::from_slice(&request.body) {
            Ok(value) => value,
            Err(error) => {
                return Err(Box::new(Handled::rejected(
                    400,
                    format!("Failed to parse the request body as JSON: {error}"),
                    "invalid_request_error",
                    None,
                )));
            }
        };
        let parsed = match ParsedRequest::from_body(&body_json, endpoint) {
            Ok(parsed) => parsed,
            Err(message) => {
                return Err(Box::new(Handled::rejected(
                    400,
                    message,
                    "invalid_request_error",
                    Some(body_json),
                )));
            }
        };
        let prompt_ids = match endpoint {
            Endpoint::Chat => self.chat_prompt_ids.of(&body_json),
            Endpoint::Fim => token_ids(&canonical_fim_prompt(&body_json)),
        };
        let prompt = self.cache.account_ids(&parsed.model, &prompt_ids);
        let known = self.catalog.iter().find(|model| model.id == parsed.model);
        let known_window = known.map(|model| model.context_window);
        let max_output_tokens = known.and_then(|model| model.max_output_tokens);
        Ok(Accepted {
            endpoint,
            format,
            beta,
            body_json,
            parsed,
            prompt_ids,
            prompt,
            known_window,
            max_output_tokens,
        })
    }

    /// The real API's rules for this endpoint (see [`crate::request_rules`]).
    fn check_rules(&self, accepted: &Accepted) -> Result<(), RuleViolation> {
        let rule_input = RuleInput {
            body: &accepted.body_json,
            beta: accepted.beta,
            prompt_tokens: accepted.prompt.prompt_tokens,
            completion_tokens_requested: accepted.parsed.max_tokens,
            context_window: accepted.known_window,
            default_context_window: DEFAULT_CONTEXT_WINDOW_TOKENS,
            max_output_tokens: accepted.max_output_tokens,
        };
        let rules = &self.script.validation;
        match accepted.endpoint {
            Endpoint::Chat => request_rules::check_chat(&rule_input, &self.served_calls, rules),
            Endpoint::Fim => request_rules::check_fim(&rule_input, rules),
        }
    }

    /// Answer from entry `entry_index`: use it, render it, and remember what it
    /// served (the prompt, unless no generation ran to the end; its tool calls).
    fn serve(&mut self, entry_index: usize, accepted: Accepted) -> Handled {
        let (entry, response_number) = self.take_entry(entry_index);
        let usage = Usage::from_counts(
            &accepted.prompt,
            entry.completion_counts(),
            entry.prompt_tokens_details,
            entry.reports_reasoning_tokens(),
        );
        let context = self.render_context(entry_index, response_number, &accepted, usage);
        let plan = render_response(&entry, &context);
        // An HTTP error or a bodiless success completes nothing: no prompt is
        // cached, no tool call remembered, no usage reported.
        let streamless = entry.is_streamless();
        let prompt_recorded = !streamless && entry.fault != Some(FaultKind::DropConnection);
        if prompt_recorded {
            self.cache
                .record_ids(&accepted.parsed.model, accepted.prompt_ids);
        }
        if !streamless {
            self.remember_tool_calls(&entry, response_number);
        }
        Handled {
            outcome: RequestOutcome::Scripted {
                entry_index,
                status: plan.status,
                fault: entry.fault,
                streamed: accepted.parsed.stream && !streamless,
                prompt_recorded,
            },
            plan,
            body_json: Some(accepted.body_json),
            prompt: Some(accepted.prompt),
            usage: (!streamless).then_some(usage),
        }
    }

    /// Everything the rendering of the `response_number`-th response depends on
    /// besides its entry.
    fn render_context(
        &self,
        entry_index: usize,
        response_number: u64,
        accepted: &Accepted,
        usage: Usage,
    ) -> RenderContext {
        RenderContext {
            response_number,
            created_s: self.script.created_s_for(entry_index, response_number),
            model: accepted.parsed.model.clone(),
            stream: accepted.parsed.stream,
            include_usage: accepted.parsed.include_usage,
            usage,
            max_tokens: accepted.parsed.max_tokens,
            context_window: accepted
                .known_window
                .unwrap_or(DEFAULT_CONTEXT_WINDOW_TOKENS),
            dialect: self.script.dialect,
            system_fingerprint: self.script.system_fingerprint.clone(),
            endpoint: accepted.endpoint,
            format: accepted.format,
        }
    }

    /// Remember the tool calls `entry` streamed, by id, for the reasoning
    /// pass-back rule.
    fn remember_tool_calls(&mut self, entry: &ScriptEntry, response_number: u64) {
        for (index, call) in entry.tool_calls.iter().enumerate() {
            let id = crate::render::tool_call_id(call.id.as_deref(), response_number, index);
            self.served_calls.insert(
                id,
                ServedCall {
                    response_number,
                    with_reasoning: !entry.reasoning.is_empty(),
                },
            );
        }
    }
}

/// DeepSeek's 400 for a broken rule; the log keeps what exactly was wrong.
fn violation_answer(violation: RuleViolation, format: WireFormat, body_json: Value) -> Handled {
    let RuleViolation {
        rule,
        param,
        mut message,
        detail,
    } = violation;
    if format == WireFormat::Anthropic && rule == "reasoning_passback" {
        // The Anthropic endpoint names the block the client dropped.
        message = super::messages::THINKING_NOT_PASSED_BACK.to_owned();
    }
    let mut error = ErrorBody::new(
        &message,
        "invalid_request_error",
        Some("invalid_request_error"),
    );
    error.error.param = param;
    Handled {
        plan: ResponsePlan::error(400, &error),
        outcome: RequestOutcome::Rejected {
            status: 400,
            message: format!("{message} ({detail})"),
        },
        body_json: Some(body_json),
        prompt: None,
        usage: None,
    }
}
