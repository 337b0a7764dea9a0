//! The DeepSeek / OpenAI chat-completions JSON shapes the mock sends, as typed serde
//! structs so field names and key order are fixed in one place and cannot drift between
//! the streaming, non-streaming and error paths.

use serde::{Deserialize, Serialize};

use crate::prompt_cache::PromptAccounting;
use crate::script::CompletionCounts;

/// The `usage` object, with DeepSeek's cache fields and the OpenAI-compatible details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cache hits included.
    pub prompt_tokens: u64,
    /// Generated tokens (reasoning included).
    pub completion_tokens: u64,
    /// `prompt_tokens + completion_tokens`.
    pub total_tokens: u64,
    /// Prompt tokens served from the prefix cache (DeepSeek field).
    pub prompt_cache_hit_tokens: u64,
    /// `prompt_tokens − prompt_cache_hit_tokens` (DeepSeek field).
    pub prompt_cache_miss_tokens: u64,
    /// OpenAI-compatible cache detail; absent when the script turns it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Reasoning detail; present only when the entry scripts reasoning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Same value as `prompt_cache_hit_tokens`.
    pub cached_tokens: u64,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionTokensDetails {
    /// Tokens of the reasoning text.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Combine prompt accounting and completion counts into the wire usage object.
    pub fn from_counts(
        prompt: &PromptAccounting,
        completion: CompletionCounts,
        include_prompt_details: bool,
        include_reasoning_details: bool,
    ) -> Self {
        Self {
            prompt_tokens: prompt.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            total_tokens: prompt
                .prompt_tokens
                .saturating_add(completion.completion_tokens),
            prompt_cache_hit_tokens: prompt.prompt_cache_hit_tokens,
            prompt_cache_miss_tokens: prompt.prompt_cache_miss_tokens,
            prompt_tokens_details: include_prompt_details.then_some(PromptTokensDetails {
                cached_tokens: prompt.prompt_cache_hit_tokens,
            }),
            completion_tokens_details: include_reasoning_details.then_some(
                CompletionTokensDetails {
                    reasoning_tokens: completion.reasoning_tokens,
                },
            ),
        }
    }
}

/// One response object: a `chat.completion.chunk`, a `chat.completion` or a
/// FIM `text_completion`, streamed or whole. They differ only in `object`
/// and in the shape of their choices.
#[derive(Debug, Serialize)]
pub(crate) struct ResponseWire<'a, Choice> {
    pub id: &'a str,
    pub object: &'static str,
    pub created: u64,
    pub model: &'a str,
    pub system_fingerprint: &'a str,
    pub choices: Vec<Choice>,
    /// Absent (`None`), `null` (`Some(None)`, OpenAI's chunks before the usage
    /// chunk) or the usage object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<&'a Usage>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChunkChoiceWire<'a> {
    pub index: u32,
    pub delta: DeltaWire<'a>,
    /// Always `null` (log probabilities are not modelled).
    pub logprobs: Option<()>,
    /// Serialized as `null` on every chunk but the finish chunk.
    pub finish_reason: Option<&'a str>,
}

#[derive(Debug, Default, Serialize)]
pub(crate) struct DeltaWire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Absent, `null` (`Some(None)`: DeepSeek's thinking-mode opening chunk) or text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDeltaWire<'a>>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ToolCallDeltaWire<'a> {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub function: FunctionDeltaWire<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionDeltaWire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub arguments: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct CompletionChoiceWire<'a> {
    pub index: u32,
    pub message: MessageWire,
    pub logprobs: Option<()>,
    pub finish_reason: &'a str,
}

/// One FIM choice, streamed or whole.
#[derive(Debug, Serialize)]
pub(crate) struct TextChoiceWire<'a> {
    pub text: &'a str,
    pub index: u32,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'a str>,
}

/// `GET /models`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelListWire<'a> {
    pub object: &'static str,
    pub data: Vec<ModelWire<'a>>,
}

/// One model of `GET /models` (also `GET /models/{id}`).
#[derive(Debug, Serialize)]
pub(crate) struct ModelWire<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub owned_by: &'a str,
}

/// `GET /user/balance`.
#[derive(Debug, Serialize)]
pub(crate) struct BalanceWire<'a> {
    pub is_available: bool,
    pub balance_infos: Vec<BalanceInfoWire<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct BalanceInfoWire<'a> {
    pub currency: &'a str,
    pub total_balance: String,
    pub granted_balance: &'a str,
    pub topped_up_balance: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct MessageWire {
    pub role: &'static str,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallWire>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ToolCallWire {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionWire,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionWire {
    pub name: String,
    pub arguments: String,
}

/// The OpenAI/DeepSeek error envelope `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error itself.
    pub error: ErrorDetail,
}

/// The inner error object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Human-readable message (the adapter surfaces it as the error message).
    pub message: String,
    /// Error class, e.g. `invalid_request_error`, `rate_limit_error`, `server_error`.
    #[serde(rename = "type")]
    pub error_type: String,
    /// Offending parameter, when a validation rule names one.
    pub param: Option<String>,
    /// Machine-readable code, e.g. `context_length_exceeded`.
    pub code: Option<String>,
}

impl ErrorBody {
    /// Build an error body.
    pub fn new(
        message: impl Into<String>,
        error_type: impl Into<String>,
        code: Option<&str>,
    ) -> Self {
        Self {
            error: ErrorDetail {
                message: message.into(),
                error_type: error_type.into(),
                param: None,
                code: code.map(str::to_owned),
            },
        }
    }

    /// The same body naming the offending parameter.
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.error.param = Some(param.into());
        self
    }

    /// Compact JSON bytes of the body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("error body serializes")
    }
}

/// Serialize a wire struct to compact JSON (cannot fail for these types).
pub(crate) fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire structs serialize")
}
