//! The script-wide switches: whose wire details to follow ([`Dialect`]) and which of
//! the real API's request rules to enforce ([`Validation`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::default_true;

/// The API whose wire details the mock reproduces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// DeepSeek's API: every stream carries usage on its finish chunk (whatever
    /// `stream_options` says) and no separate usage chunk; the finish delta is
    /// `{"content": ""}`; a thinking answer opens with
    /// `{"role": "assistant", "content": null, "reasoning_content": ""}`; chunks
    /// carry no `usage` key before the finish chunk.
    #[default]
    Deepseek,
    /// OpenAI's behaviour for OpenAI-style clients: usage only when the request
    /// sets `stream_options.include_usage`, then in a separate last chunk with
    /// `choices: []`, and `"usage": null` on every chunk before it.
    Openai,
}

impl Dialect {
    pub(super) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The request rules the mock enforces as the real API does, each answered
/// with a documented 400 (`docs/mock-provider.md`) before any script entry is
/// consumed. All are on by default except `known_model`; `enabled = false`
/// turns every rule off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Master switch (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// An assistant message of the current turn that made tool calls in an answer
    /// this mock streamed with reasoning must carry that `reasoning_content` back
    /// (unless the request disables thinking). Default true.
    #[serde(default = "default_true")]
    pub reasoning_passback: bool,
    /// Every assistant `tool_calls` entry is answered by a `tool` message right
    /// after it, and every `tool` message answers a call of the assistant message
    /// before it. Default true.
    #[serde(default = "default_true")]
    pub tool_results: bool,
    /// Prompt tokens plus `max_tokens` (or `max_completion_tokens`) must fit the
    /// model's context window. Default true.
    #[serde(default = "default_true")]
    pub context_window: bool,
    /// `max_tokens` (or `max_completion_tokens`) lies in the model's range,
    /// `[1, max_output_tokens]` of the catalog. Default true.
    #[serde(default = "default_true")]
    pub max_tokens: bool,
    /// A message with `prefix: true` must be the last one, from the assistant,
    /// sent to the `/beta` base. Default true.
    #[serde(default = "default_true")]
    pub prefix_completion: bool,
    /// The model must be in the catalog (DeepSeek answers "Model Not Exist").
    /// Default false: ports and tests use their own model ids.
    #[serde(default)]
    pub known_model: bool,
}

impl Default for Validation {
    fn default() -> Self {
        Self {
            enabled: true,
            reasoning_passback: true,
            tool_results: true,
            context_window: true,
            max_tokens: true,
            prefix_completion: true,
            known_model: false,
        }
    }
}

impl Validation {
    /// Every rule off.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    pub(super) fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `rule` is checked (the master switch and the rule both on).
    pub fn checks(&self, rule: bool) -> bool {
        self.enabled && rule
    }
}
