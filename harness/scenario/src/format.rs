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

pub use crate::pattern::Pattern;
use crate::protocol::{
    AdapterSpec, AgentSpec, AssemblyCommand, Command, ConfigSpec, Level, PluginsSpec, RouteSpec,
    SimulationSpec, ToolResultSpec,
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
    Command(Box<CommandExpect>),
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
        let kind = match table.remove("do") {
            Some(toml::Value::String(kind)) => kind,
            Some(other) => {
                return Err(D::Error::invalid_type(
                    unexpected(&other),
                    &"a command kind (a string)",
                ));
            }
            None => return Err(D::Error::missing_field("do")),
        };
        let command = command_of(&kind, table).map_err(D::Error::custom)?;
        let expect = match expect {
            None => None,
            Some(value) => Some(match command {
                Command::Assembly(AssemblyCommand::Assemble(_)) => StepExpect::Assemble(Box::new(
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

/// Read the command of kind `kind` from the rest of its step's table. An
/// error inside names where: `text: invalid type ...` ([`split_field_path`]
/// takes the path back off, so the loader can point at that field).
fn command_of(kind: &str, payload: toml::Table) -> Result<Command, String> {
    let mut track = serde_path_to_error::Track::new();
    let deserializer =
        serde_path_to_error::Deserializer::new(toml::Value::Table(payload), &mut track);
    Command::from_payload(kind, deserializer).map_err(|error: toml::de::Error| {
        let message = error.message().trim_end();
        match track.path().to_string().as_str() {
            // The table itself, or an empty key at its top.
            "." | "" => message.to_string(),
            path => format!("{path}: {message}"),
        }
    })
}

/// The field path a step's error starts with, and the rest of the message
/// (`("ops[1]", "unknown variant ...")`), when it starts with one.
pub fn split_field_path(message: &str) -> Option<(&str, &str)> {
    let (path, rest) = message.split_once(": ")?;
    let is_path = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '$'));
    is_path.then_some((path, rest))
}

/// What serde calls a TOML value of the wrong type.
fn unexpected(value: &toml::Value) -> serde::de::Unexpected<'_> {
    use serde::de::Unexpected;
    match value {
        toml::Value::String(s) => Unexpected::Str(s),
        toml::Value::Integer(i) => Unexpected::Signed(*i),
        toml::Value::Float(f) => Unexpected::Float(*f),
        toml::Value::Boolean(b) => Unexpected::Bool(*b),
        toml::Value::Datetime(_) => Unexpected::Other("a datetime"),
        toml::Value::Array(_) => Unexpected::Seq,
        toml::Value::Table(_) => Unexpected::Map,
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

/// The scenario format version this harness reads. Format 1 files are
/// upgraded by `dshc migrate` (the loader says so).
pub const FORMAT_VERSION: u32 = 2;

/// One scenario file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Scenario format version. Must be 2.
    pub format: u32,
    /// One line saying what the scenario shows.
    pub title: String,
    /// Longer explanation: the rule, where it comes from, why it matters.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// Expect loading the config to fail with this error (message, or
    /// `{name, message, code}`); no steps run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_error: Option<Pattern>,
    /// Scope parent bindings made before the first step, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeSpec>,
    /// Steps, run in order in one fresh registry.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Loop level: the agent under test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
    /// Loop level: more agents, each with its own session (commands name
    /// one with `agent = "<id>"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentSpec>,
    /// Loop level: the mock provider's script, one response per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<mock_provider::Script>,
    /// Loop level: the DeepSeek adapter registration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterSpec>,
    /// Loop level: simulated time and network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulation: Option<SimulationSpec>,
    /// Loop level: scripted tool results, by tool name in order (the last repeats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultSpec>,
    /// Loop level: context plugins (spec 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<PluginsSpec>,
    /// Loop level: scripted routes at the LLM-adapter level (no HTTP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteSpec>,
    /// Loop level: expectations on the whole run, checked after the last step
    /// (and after the agent went idle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Box<LoopExpect>>,
}

/// Expectations on a loop run. Every value is a [`Pattern`]
/// (`docs/matching.md`); keys left out are not compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopExpect {
    /// The list of event types of the whole log (`["turn/start", ...]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Pattern>,
    /// Events that appear in this order, others between; each a pattern on
    /// the event as logged (`{type, seq, time, data, sourceEventSeqs?,
    /// surfaceOp?}`), so only the fields it names are compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Pattern>>,
    /// Queries over the session log: select events, then assert on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<EventQuery>,
    /// Event types that must not appear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absent: Option<Vec<String>>,
    /// The whole session log as JSON lines (as `JSON.stringify` writes each
    /// event), byte for byte when a string: key order is compared here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Pattern>,
    /// The request bodies the provider received, as an array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<Pattern>,
    /// One request the provider received, by position.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request: Vec<RequestExpect>,
    /// The HTTP headers of each request, `[name, value]` in arrival order
    /// (names lowercased): where header order is the contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<Pattern>,
    /// How many requests the provider received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_count: Option<Pattern>,
    /// What scripted routes' `stream()` received, as an array of request
    /// options (`{provider, model, messages, system?, tools?, sessionId, ...}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_requests: Option<Pattern>,
    /// One scripted-route call, by position.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_request: Vec<LlmRequestExpect>,
    /// `prompt_cache_hit_tokens` the provider reported, per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<Pattern>,
    /// The prompt-cache breaks (`dshc cache-report`), as an array of
    /// `{request, after_request, byte, element}`: `[]` says no request breaks
    /// the cache. `element` is `{kind = "system", offset, section?,
    /// registered_in?, registration?}`, `{kind = "tool", index, name}` or
    /// `{kind = "message", index, role, event?, seq?, source?}`; the section
    /// fields need the implementation to report its prompt layouts (the
    /// reference does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_breaks: Option<Pattern>,
    /// The agent's final status (`idle` or `running`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Pattern>,
    /// Every status the agent reported (`agent/status`), in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_transitions: Option<Pattern>,
    /// Inbox items still pending at the end: `[next-turn, next-step]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pattern>,
    /// Messages of live `agent/error` events, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_errors: Option<Pattern>,
    /// Queries over the live (non-durable) events: `agent/status`,
    /// `agent/error`, `logger/warn`, each `{type, agent, data}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<EventQuery>,
    /// What acting listeners recorded, in order: an array of
    /// `{listener, call, <field>...}` entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<Pattern>,
    /// Expectations on a further agent's session, by agent id.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub agents: IndexMap<String, AgentExpect>,
    /// The run fails before or while running its steps with this text, e.g.
    /// `setup failed: TypeError: <message>` when a plugin rejects its config
    /// at load. Without it, any run failure is a mismatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Pattern>,
}

/// Expectations on one further agent: its log, status and inbox, stated
/// as for the main agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentExpect {
    /// The list of event types of its log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Pattern>,
    /// Events in this order, others between.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Pattern>>,
    /// Queries over its log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<EventQuery>,
    /// Event types that must not appear in its log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absent: Option<Vec<String>>,
    /// Its whole log as JSON lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Pattern>,
    /// Its final status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Pattern>,
    /// Every status it reported, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_transitions: Option<Pattern>,
    /// Its pending inbox items, `[next-turn, next-step]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pattern>,
    /// Messages of its live `agent/error` events, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_errors: Option<Pattern>,
}

/// A query over events: which events ([`EventQuery::select`]), then what
/// must hold of them. Every assertion given must hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventQuery {
    /// The events: a pattern on each event as logged, e.g.
    /// `{ type = "assistant/chunk", data = { chunk = { type = "finish" } } }`;
    /// a string is short for `{ type = "<string>" }`.
    pub select: Pattern,
    /// How many: `2`, `0` (none), `{ "$ge" = 1 }`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<Pattern>,
    /// The first selected event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<Pattern>,
    /// The last selected event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<Pattern>,
    /// One selected event by position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nth: Option<NthEvent>,
    /// Every selected event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub each: Option<Pattern>,
    /// The last selected event comes before the first event this selects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Pattern>,
    /// The first selected event comes after the last event this selects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Pattern>,
    /// Each selected event is immediately followed by an event this selects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directly_before: Option<Pattern>,
    /// Each selected event immediately follows an event this selects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directly_after: Option<Pattern>,
    /// Bind a name to the value at a path (`data.message.id`,
    /// `data.content[0].text`) of the first selected event.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub capture: IndexMap<String, String>,
    /// Bind a name to the array of the values at a path across every
    /// selected event (`{ chunk_seqs = "seq" }`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub capture_each: IndexMap<String, String>,
}

/// One selected event by position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NthEvent {
    /// Position in the selection, from 0.
    pub index: usize,
    /// What must hold of it.
    pub event: Pattern,
}

/// One request the provider received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestExpect {
    /// Its position, from 0.
    pub index: usize,
    /// Its JSON body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Pattern>,
    /// Its headers as an object: lowercased name → value (repeated names
    /// joined with `, `).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<Pattern>,
    /// The `prompt_cache_hit_tokens` it was answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<Pattern>,
}

/// One scripted-route `stream()` call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmRequestExpect {
    /// Its position over all routes, from 0.
    pub index: usize,
    /// The request options it received.
    pub options: Pattern,
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

/// What any step but `assemble` can expect of its command.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandExpect {
    /// The call throws this error: a string (pattern) for its message, or an
    /// object pattern over `{name, message, code}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Pattern>,
    /// Number of `system-prompt/change` events the step emitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Pattern>,
    /// Provider and listener evaluations during the step, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<Pattern>,
    /// What the command returned (`read_session`, `canonical_header`,
    /// `header_equals`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Pattern>,
}

/// What an `assemble` step compares. Keys left out are not compared; an
/// unexpected error always fails. Every value is a [`Pattern`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleExpect {
    /// `assemble()` rejects with this error (message, or `{name, message, code}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Pattern>,
    /// Final sections, `[{name, text?}]` in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<Pattern>,
    /// Final contexts, `[{name, text?}]` in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Pattern>,
    /// Final tools, `[{name, description?, parameters?}]` in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Pattern>,
    /// Final tool names, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Pattern>,
    /// Final variables, an object (an `undefined` value is `{ undefined = true }`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variables: Option<Pattern>,
    /// Extra top-level fields on the final assembly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Pattern>,
    /// `renderPrompt(assembly)`; a string is byte-exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Pattern>,
    /// `renderPrompt(assembly)` throws this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_error: Option<Pattern>,
    /// `renderContextSnapshot(assembly)`; a string is byte-exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Pattern>,
    /// `renderContextSections(assembly)`: the non-empty rendered contexts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_sections: Option<Pattern>,
    /// Rendering the context snapshot throws this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_error: Option<Pattern>,
    /// Provider and listener evaluations during the step, in order:
    /// `variable <id>`, `section <id>`, `context <id>`, `tools <id>`, `listener <id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<Pattern>,
    /// What `record` ops of assemble listeners recorded during the step, in
    /// order: an array of `{listener, call, <field>...}` entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<Pattern>,
    /// Number of `system-prompt/change` events during the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Pattern>,
}
