//! What the rendering tests share: a context, an entry using every stream part, and
//! readers of a plan's `data:` payloads.

use serde_json::Value;

use super::{RenderContext, ResponsePlan};
use crate::script::{Dialect, Endpoint, ScriptEntry, ScriptToolCall};
use crate::sse::{SseItem, parse_sse};
use crate::wire::{CompletionTokensDetails, PromptTokensDetails, Usage};

pub(super) fn context() -> RenderContext {
    RenderContext {
        response_number: 3,
        created_s: 1_735_689_602,
        model: "deepseek-v4-flash".into(),
        stream: true,
        include_usage: true,
        usage: Usage {
            prompt_tokens: 100,
            completion_tokens: 7,
            total_tokens: 107,
            prompt_cache_hit_tokens: 64,
            prompt_cache_miss_tokens: 36,
            prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: 64 }),
            completion_tokens_details: Some(CompletionTokensDetails {
                reasoning_tokens: 2,
            }),
        },
        max_tokens: Some(256_000),
        context_window: 131_072,
        dialect: Dialect::Openai,
        system_fingerprint: "fp_test".into(),
        endpoint: Endpoint::Chat,
        format: crate::render::WireFormat::OpenAi,
    }
}

pub(super) fn payloads(plan: &ResponsePlan) -> Vec<String> {
    parse_sse(&plan.body_bytes())
        .into_iter()
        .filter_map(|item| match item {
            SseItem::Data(data) => Some(data),
            SseItem::Comment(_) => None,
        })
        .collect()
}

pub(super) fn json_payloads(plan: &ResponsePlan) -> Vec<Value> {
    payloads(plan)
        .into_iter()
        .filter(|payload| payload != "[DONE]")
        .map(|payload| serde_json::from_str(&payload).expect("chunk is JSON"))
        .collect()
}

pub(super) fn full_entry() -> ScriptEntry {
    ScriptEntry {
        reasoning: ["Thin", "king"].into_iter().collect(),
        content: ["Hel", "lo"].into_iter().collect(),
        tool_calls: vec![
            ScriptToolCall {
                id: Some("call_a".into()),
                name: "read".into(),
                arguments: ["{\"pa", "th\":\"a\"}"].into_iter().collect(),
            },
            ScriptToolCall {
                id: None,
                name: "ls".into(),
                arguments: Default::default(),
            },
        ],
        finish_reason: Some("tool_calls".into()),
        ..ScriptEntry::stream()
    }
}
