//! The scenario file format, version 1: serde types and their JSON Schema.
//!
//! A scenario is language-neutral data: a config, optional scope parents, an
//! ordered list of steps and, at the loop level, the agent's world and
//! expectations on the whole run. A [`Step`] is a protocol [`Command`] plus
//! its expectation: compiling a scenario splits the two, so a case sent to
//! an implementation carries no expectation and an adapter never parses
//! these files. Field docs here become the committed schema's descriptions.

use std::borrow::Cow;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::protocol::{
    AdapterSpec, AgentSpec, Command, ConfigSpec, EntryData, Level, PluginsSpec, SimulationSpec,
    ToolData, ToolResultSpec, VariableValue,
};

/// One scenario step: a command, and what it is expected to do. In a file
/// the expectation is the step's `expect` key; `assemble` steps expect an
/// assembly and its renders ([`AssembleExpect`]), every other kind an error
/// and a change count ([`CommandExpect`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What to do.
    pub command: Command,
    /// What to compare afterwards.
    pub expect: Option<StepExpect>,
}

/// A step's expectation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StepExpect {
    /// Of any command but `assemble`.
    Command(CommandExpect),
    /// Of an `assemble` command.
    Assemble(Box<AssembleExpect>),
}

impl Step {
    /// A step that expects nothing in particular.
    pub fn new(command: Command) -> Self {
        Step {
            command,
            expect: None,
        }
    }

    /// The expectation of a non-`assemble` step (`None` when it states none).
    pub fn command_expect(&self) -> Option<&CommandExpect> {
        match &self.expect {
            Some(StepExpect::Command(expect)) => Some(expect),
            _ => None,
        }
    }

    /// The expectation of an `assemble` step (`None` when it states none).
    pub fn assemble_expect(&self) -> Option<&AssembleExpect> {
        match &self.expect {
            Some(StepExpect::Assemble(expect)) => Some(expect),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        let expect = table.remove("expect");
        let command: Command = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| D::Error::custom(e.message().trim_end()))?;
        let expect = match expect {
            None => None,
            Some(value) => Some(match command {
                Command::Assemble(_) => StepExpect::Assemble(Box::new(
                    value
                        .try_into()
                        .map_err(|e: toml::de::Error| D::Error::custom(e.message().trim_end()))?,
                )),
                _ => StepExpect::Command(
                    value
                        .try_into()
                        .map_err(|e: toml::de::Error| D::Error::custom(e.message().trim_end()))?,
                ),
            }),
        };
        Ok(Step { command, expect })
    }
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = toml::Value::try_from(&self.command).map_err(S::Error::custom)?;
        if let (Some(expect), Some(table)) = (&self.expect, value.as_table_mut()) {
            let expect = toml::Value::try_from(expect).map_err(S::Error::custom)?;
            table.insert("expect".into(), expect);
        }
        value.serialize(serializer)
    }
}

impl JsonSchema for Step {
    fn schema_name() -> Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = Command::json_schema(generator);
        let command_expect = generator.subschema_for::<CommandExpect>().to_value();
        let assemble_expect = generator.subschema_for::<AssembleExpect>().to_value();
        schema.insert(
            "description".into(),
            "A scenario step: a command (`do` selects the kind) and its `expect`.".into(),
        );
        let variants = schema.get_mut("oneOf").and_then(Value::as_array_mut);
        for variant in variants.into_iter().flatten() {
            let kind = variant.pointer("/properties/do/const").cloned();
            let (expect, description) = if kind == Some(Value::from("assemble")) {
                (
                    &assemble_expect,
                    "What to compare. Only the keys present are compared.",
                )
            } else {
                (
                    &command_expect,
                    "The command's expected error and change count.",
                )
            };
            if let Some(properties) = variant.get_mut("properties").and_then(Value::as_object_mut) {
                properties.insert(
                    "expect".into(),
                    serde_json::json!({ "description": description, "allOf": [expect] }),
                );
            }
        }
        schema
    }
}

/// The only scenario format version this harness reads.
pub const FORMAT_VERSION: u32 = 1;

/// One scenario file.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Scenario format version. Must be 1.
    pub format: u32,
    /// One line saying what the scenario shows.
    pub title: String,
    /// Longer explanation: the rule, where it comes from, why it matters.
    pub description: Option<String>,
    /// Spec clauses this scenario covers, as `<chapter>:<clause>` ids from
    /// `scenarios/clauses.toml`, e.g. `02:A3.1`.
    pub covers: Vec<String>,
    /// Which level of the contract the scenario exercises.
    #[serde(default)]
    pub level: Level,
    /// `SystemPrompt` plugin config.
    #[serde(default)]
    pub config: ConfigSpec,
    /// Expect loading the config to fail with this error; no steps run.
    pub config_error: Option<ExpectedError>,
    /// Scope parent bindings made before the first step, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeSpec>,
    /// Steps, run in order in one fresh registry.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Loop level: the agent under test.
    pub agent: Option<AgentSpec>,
    /// Loop level: the mock provider's script, one response per request.
    pub provider: Option<mock_provider::Script>,
    /// Loop level: the DeepSeek adapter registration.
    pub adapter: Option<AdapterSpec>,
    /// Loop level: simulated time and network.
    pub simulation: Option<SimulationSpec>,
    /// Loop level: scripted tool results, by tool name in order (the last repeats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultSpec>,
    /// Loop level: context plugins (spec 10).
    pub plugins: Option<PluginsSpec>,
    /// Loop level: expectations on the whole run, checked after the last step
    /// (and after the agent went idle).
    pub expect: Option<Box<LoopExpect>>,
}

/// Expectations on a loop run.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopExpect {
    /// The event types of the whole log, in order.
    pub event_types: Option<Vec<String>>,
    /// Events that appear in this order (others may come between); each
    /// compares the fields it states, `data` exactly.
    pub events: Option<Vec<EventExpect>>,
    /// Event types that must not appear.
    pub absent: Option<Vec<String>>,
    /// The whole session log as JSON lines, byte for byte.
    pub log: Option<String>,
    /// The request bodies the provider received, in order.
    pub requests: Option<Vec<Value>>,
    /// The HTTP headers of each request the provider received, `[name, value]`
    /// in arrival order (names lowercased).
    pub request_headers: Option<Vec<Vec<[String; 2]>>>,
    /// How many requests the provider received.
    pub request_count: Option<usize>,
    /// `prompt_cache_hit_tokens` the provider reported per request.
    pub cache_hit_tokens: Option<Vec<u64>>,
    /// The agent's final status (`idle` or `running`).
    pub status: Option<String>,
    /// Inbox items still pending at the end: `[next-turn, next-step]`.
    pub pending: Option<[usize; 2]>,
    /// Messages of live `agent/error` events, in order.
    pub agent_errors: Option<Vec<String>>,
    /// The run fails before its steps with exactly this text, e.g.
    /// `setup failed: TypeError: <message>` when a plugin rejects its config
    /// at load. Without it, any run failure is a mismatch.
    pub failure: Option<String>,
}

/// One expected event.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventExpect {
    /// Event type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its seq.
    pub seq: Option<u64>,
    /// Its data, exactly (key order included).
    pub data: Option<Value>,
    /// `surfaceOp`.
    pub surface_op: Option<Value>,
    /// `sourceEventSeqs`.
    pub source_event_seqs: Option<Vec<u64>>,
}

/// A scope parent binding (`createScope(ctx, key, {parent})`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeSpec {
    /// The child scope.
    pub name: String,
    /// Its parent scope.
    pub parent: String,
}

/// An expected error: its message, or its message and class name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExpectedError {
    /// The exact message.
    Message(String),
    /// The exact message and error class (`Error`, `TypeError`, ...).
    Detailed {
        /// Exact message.
        message: String,
        /// Error class name.
        name: String,
    },
}

impl ExpectedError {
    /// The expected message.
    pub fn message(&self) -> &str {
        match self {
            ExpectedError::Message(message) | ExpectedError::Detailed { message, .. } => message,
        }
    }

    /// The expected class name, if given.
    pub fn name(&self) -> Option<&str> {
        match self {
            ExpectedError::Message(_) => None,
            ExpectedError::Detailed { name, .. } => Some(name),
        }
    }
}

/// What any step but `assemble` can expect of its command.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandExpect {
    /// The call throws this error.
    pub error: Option<ExpectedError>,
    /// Number of `system-prompt/change` events the step emitted.
    pub changes: Option<u64>,
}

/// What an `assemble` step compares. Keys left out are not compared; an
/// unexpected error always fails.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleExpect {
    /// `assemble()` rejects with this error.
    pub error: Option<ExpectedError>,
    /// Final sections, in order.
    pub sections: Option<Vec<EntryData>>,
    /// Final contexts, in order.
    pub contexts: Option<Vec<EntryData>>,
    /// Final tools, in order, compared in full.
    pub tools: Option<Vec<ToolData>>,
    /// Final tool names, in order (shorthand when schemas don't matter).
    pub tool_names: Option<Vec<String>>,
    /// Final variables, in key order.
    pub variables: Option<IndexMap<String, VariableValue>>,
    /// Extra top-level fields on the final assembly.
    pub extra: Option<serde_json::Map<String, Value>>,
    /// `renderPrompt(assembly)`, byte-exact.
    pub prompt: Option<String>,
    /// `renderPrompt(assembly)` throws this.
    pub prompt_error: Option<ExpectedError>,
    /// `renderContextSnapshot(assembly)`, byte-exact.
    pub snapshot: Option<String>,
    /// `renderContextSections(assembly)`: the non-empty rendered contexts.
    pub snapshot_sections: Option<Vec<EntryData>>,
    /// Rendering the context snapshot throws this.
    pub snapshot_error: Option<ExpectedError>,
    /// Provider and listener evaluations during the step, in order:
    /// `variable <id>`, `section <id>`, `context <id>`, `tools <id>`, `listener <id>`.
    pub journal: Option<Vec<String>>,
    /// Number of `system-prompt/change` events during the step.
    pub changes: Option<u64>,
}
