//! What an implementation answers for one case: one [`Observation`] per
//! command, and for a loop case the whole [`LoopRun`]. The in-process
//! reference and every external adapter produce these same types; only the
//! harness's oracle looks at expectations.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::case::{EntryData, ToolData, VariableValue};

/// An error as observed: class name, message and, for errors that carry
/// one (`LlmError`, Node's system errors), the machine code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedError {
    /// Error class (`Error`, `TypeError`, ...).
    pub name: String,
    /// Message.
    pub message: String,
    /// `error.code` when it is a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// The outcome of a render call: text or error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Rendered {
    /// Rendered text.
    Text(String),
    /// The render threw.
    Error(ObservedError),
}

/// A final assembly as observed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssemblyData {
    /// Sections in order.
    pub sections: Vec<EntryData>,
    /// Contexts in order.
    pub contexts: Vec<EntryData>,
    /// Tools in order.
    pub tools: Vec<ToolData>,
    /// Variables in key order.
    pub variables: IndexMap<String, VariableValue>,
    /// Extra top-level fields, in key order.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, Value>,
}

/// What one command did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// The command threw (registration, bind, dispose) or `assemble()` rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ObservedError>,
    /// `system-prompt/change` events emitted during the command.
    pub changes: u64,
    /// Provider and listener evaluations during the command, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<String>,
    /// What `record` ops of `system-prompt/assemble` listeners recorded
    /// during the command, in order: each `{listener, call, <field>...}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<Value>,
    /// What the command returned, for commands that read a value
    /// (`read_session`, `canonical_header`, `header_equals`, `fold_header`):
    /// absent for `undefined`, and `null` for `null` (a present `null` is a
    /// value, not its absence).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    pub value: Option<Value>,
    /// `assemble` only, on success: the final assembly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assembly: Option<AssemblyData>,
    /// `assemble` only, on success: `renderPrompt(assembly)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Rendered>,
    /// `assemble` only, on success: `renderContextSections(assembly)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_sections: Option<RenderedSections>,
    /// `assemble` only, on success: `renderContextSnapshot(assembly)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Rendered>,
}

/// The outcome of `renderContextSections`: entries or error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RenderedSections {
    /// Rendered non-empty contexts.
    Sections(Vec<EntryData>),
    /// The render threw.
    Error(ObservedError),
}

/// Everything an implementation observed for one case.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseResult {
    /// Loading the config threw; no command ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_error: Option<ObservedError>,
    /// One observation per command, in order.
    pub observations: Vec<Observation>,
    /// Loop level only: what the whole run produced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<LoopRun>,
}

/// What a loop-level run produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopRun {
    /// The session log, one event per element, as upstream serializes events.
    pub log: Vec<Value>,
    /// What the provider received, in order. An external adapter leaves this
    /// empty: the harness fills it from the log of the provider it started
    /// for the case (anything an adapter reports here is replaced).
    #[serde(default)]
    pub requests: Vec<ProviderRequest>,
    /// What scripted routes' `stream()` received, in call order: the
    /// request options as JSON (the signal left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_requests: Vec<Value>,
    /// The agent's final status.
    pub status: String,
    /// Inbox items pending at the end: `[next-turn, next-step]`.
    pub pending: [usize; 2],
    /// Live, non-durable events (`agent/error`, `agent/status`), in order.
    pub live_events: Vec<Value>,
    /// The run could not finish (virtual-time budget, setup failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// What acting listeners recorded (`record` ops), in order: each
    /// `{listener, call, <field>...}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<Value>,
    /// The world's further agents (`world.agents`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRun>,
    /// How each distinct system text was put together, so a cache report can
    /// name the section a changed byte belongs to. The reference reports it;
    /// an adapter may (without it, a cache break in the system text is named
    /// by its offset only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_layouts: Vec<PromptLayout>,
}

/// The sections of one system text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptLayout {
    /// The agent that rendered it.
    pub agent: String,
    /// The system text: the sections' texts joined with `"\n\n"`.
    pub system: String,
    /// The non-empty rendered sections, in prompt order.
    pub sections: Vec<LayoutSection>,
}

/// One rendered section of a [`PromptLayout`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutSection {
    /// The section name.
    pub name: String,
    /// Its rendered text.
    pub text: String,
    /// The layer of its registration: `global`, or `scope <key>`; absent when
    /// no layer registers it (a `system-prompt/assemble` listener added it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registered_in: Option<String>,
    /// The id of the scenario's `section` command that registered it (its
    /// `id`, by default the name, plus `@<scope>` when scoped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration: Option<String>,
}

/// What one further agent of a loop run ended with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentRun {
    /// The agent id.
    pub id: String,
    /// Its session log.
    pub log: Vec<Value>,
    /// Its final status.
    pub status: String,
    /// Its pending inbox items, `[next-turn, next-step]`.
    pub pending: [usize; 2],
}

/// One request the provider received.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderRequest {
    /// The HTTP headers as received, `[name, value]` in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<[String; 2]>,
    /// The parsed JSON body.
    pub body: Value,

    /// `prompt_cache_hit_tokens` the provider computed, when it answered with a stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_value_crosses_the_protocol_as_null_and_an_absent_one_as_none() {
        let null: Observation =
            serde_json::from_str(r#"{"changes": 0, "value": null}"#).expect("an observation");
        assert_eq!(null.value, Some(Value::Null));
        let text = serde_json::to_string(&null).expect("serializes");
        assert!(text.contains(r#""value":null"#), "{text}");
        let absent: Observation =
            serde_json::from_str(r#"{"changes": 0}"#).expect("an observation");
        assert_eq!(absent.value, None);
    }
}
