//! The data an implementation receives and returns for one case: the
//! language-neutral core of the adapter protocol (docs/adapter-protocol.md).
//!
//! A [`Case`] is a compiled scenario: defaults resolved, ids assigned,
//! expectations removed. An implementation runs its commands in order in a
//! fresh registry and answers with one [`Observation`] per command. The
//! in-process reference and every external adapter produce the same types,
//! and only [`crate::oracle::compare`] looks at expectations.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario::format::{
    ConfigSpec, EntryData, Level, LoopWorld, Step, ToolData, VariableValue,
};

/// One compiled scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Stable case id: the scenario path relative to the scenario root,
    /// without extension.
    pub id: String,
    /// Contract level.
    pub level: Level,
    /// Plugin config.
    pub config: ConfigSpec,
    /// Commands, run in order: scenario steps with `expect` removed and every
    /// default id filled in. Top-level scope bindings come first as `bind`.
    pub commands: Vec<Step>,
    /// Loop level only: the agent's world with every default resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<LoopWorld>,
}

/// An error as observed: class name and message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedError {
    /// Error class (`Error`, `TypeError`, ...).
    pub name: String,
    /// Message.
    pub message: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ObservedError>,
    /// `system-prompt/change` events emitted during the command.
    pub changes: u64,
    /// Provider and listener evaluations during the command, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<String>,
    /// `assemble` only, on success: the final assembly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assembly: Option<AssemblyData>,
    /// `assemble` only, on success: `renderPrompt(assembly)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Rendered>,
    /// `assemble` only, on success: `renderContextSections(assembly)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_sections: Option<RenderedSections>,
    /// `assemble` only, on success: `renderContextSnapshot(assembly)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<ObservedError>,
    /// One observation per command, in order.
    pub observations: Vec<Observation>,
    /// Loop level only: what the whole run produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// The agent's final status.
    pub status: String,
    /// Inbox items pending at the end: `[next-turn, next-step]`.
    pub pending: [usize; 2],
    /// Live, non-durable events (`agent/error`, `agent/status`), in order.
    pub live_events: Vec<Value>,
    /// The run could not finish (virtual-time budget, setup failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Violated run invariants (replay equality, change-only logging, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
}

/// The adapter protocol version this harness speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request from the harness to an adapter: one JSON line on its stdin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Request number, from 0, one higher per request; the reply echoes it.
    pub seq: u64,
    /// The command.
    #[serde(flatten)]
    pub command: Command,
}

/// What the harness asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// The handshake; always the first request.
    Start {
        /// Protocol version the harness speaks.
        version: u32,
    },
    /// Run one case in a fresh registry.
    Run {
        /// The case.
        case: Box<Case>,
        /// Loop level only: the base URL (`http://127.0.0.1:<port>`, no
        /// trailing slash) of the mock provider the harness started for this
        /// case on a loopback socket, serving `case.world.provider`. Point the
        /// implementation's DeepSeek adapter at it (`baseURL`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_url: Option<String>,
    },
    /// Finish: the adapter replies, then exits.
    Stop,
}

/// Who is answering: the implementation under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Implementation {
    /// Implementation name, e.g. `@deepseek-ai/dsh-system-prompt`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its language.
    pub language: String,
    /// Where it lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
}

/// What an implementation can run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Contract levels it implements; cases of other levels are skipped.
    pub levels: Vec<Level>,
}

/// A reply from an adapter: one JSON line on its stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reply {
    /// The request's `seq`.
    pub seq: u64,
    /// The answer.
    #[serde(flatten)]
    pub body: ReplyBody,
}

/// The answer to a request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ReplyBody {
    /// Answer to `start`.
    Started {
        /// Protocol version the adapter speaks; must equal the harness's.
        version: u32,
        /// The implementation.
        implementation: Implementation,
        /// What it supports.
        capabilities: Capabilities,
    },
    /// Answer to `run`: the case ran.
    Result(CaseResult),
    /// Answer to `run`: the implementation declines this case.
    Skipped {
        /// Why.
        reason: String,
    },
    /// Answer to `run`: the adapter caught an error of its own.
    Errored {
        /// What went wrong (message, stack, ...).
        context: String,
    },
    /// Answer to `stop`.
    Stopped {},
}

/// Parse one protocol line strictly: an object whose keys are exactly `seq`
/// plus the fields of one message, nothing unknown. (Serde cannot deny
/// unknown fields next to a flattened enum, so the key set is checked here.)
fn parse_strict<T: serde::de::DeserializeOwned>(
    line: &str,
    allowed: &[&[&str]],
) -> Result<T, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let keys: std::collections::BTreeSet<&str> = object.keys().map(String::as_str).collect();
    let fits = allowed
        .iter()
        .any(|shape| keys.iter().all(|key| *key == "seq" || shape.contains(key)));
    if !fits {
        let keys: Vec<&str> = keys.into_iter().collect();
        return Err(format!("unexpected keys {keys:?}"));
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Parse a reply line, rejecting anything outside the schema.
pub fn parse_reply(line: &str) -> Result<Reply, String> {
    parse_strict(
        line,
        &[
            &["started"],
            &["result"],
            &["skipped"],
            &["errored"],
            &["stopped"],
        ],
    )
}

/// Parse a request line, rejecting anything outside the schema.
pub fn parse_request(line: &str) -> Result<Request, String> {
    parse_strict(
        line,
        &[
            &["cmd", "version"],
            &["cmd", "case", "provider_url"],
            &["cmd"],
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_as_single_json_lines() {
        let request = Request {
            seq: 3,
            command: Command::Stop,
        };
        let line = serde_json::to_string(&request).unwrap();
        assert_eq!(line, r#"{"seq":3,"cmd":"stop"}"#);
        assert_eq!(parse_request(&line).unwrap(), request);

        let reply = Reply {
            seq: 4,
            body: ReplyBody::Skipped {
                reason: "no loop".into(),
            },
        };
        let line = serde_json::to_string(&reply).unwrap();
        assert_eq!(line, r#"{"seq":4,"skipped":{"reason":"no loop"}}"#);
        assert_eq!(parse_reply(&line).unwrap(), reply);
        assert!(parse_reply(r#"{"seq":4,"skipped":{"reason":"x"},"junk":1}"#).is_err());
        assert!(parse_reply(r#"{"seq":4}"#).is_err());
        assert!(parse_reply(r#"{"seq":4,"skipped":{"reason":"x","extra":1}}"#).is_err());
        assert!(parse_reply("[1]").is_err());
    }

    #[test]
    fn a_loop_run_request_carries_the_provider_url_and_an_assembly_one_does_not() {
        let case: Case = serde_json::from_value(serde_json::json!({
            "id": "x", "level": "loop", "config": {}, "commands": []
        }))
        .unwrap();
        let request = Request {
            seq: 1,
            command: Command::Run {
                case: Box::new(case.clone()),
                provider_url: Some("http://127.0.0.1:4000".into()),
            },
        };
        let line = serde_json::to_string(&request).unwrap();
        assert!(
            line.ends_with(r#","provider_url":"http://127.0.0.1:4000"}"#),
            "{line}"
        );
        assert_eq!(parse_request(&line).unwrap(), request);
        let without = Request {
            seq: 2,
            command: Command::Run {
                case: Box::new(case),
                provider_url: None,
            },
        };
        let line = serde_json::to_string(&without).unwrap();
        assert!(!line.contains("provider_url"), "{line}");
        assert_eq!(parse_request(&line).unwrap(), without);
        // A reply's run may leave `requests` out: the harness fills it.
        let reply = parse_reply(
            r#"{"seq":1,"result":{"observations":[],"run":{"log":[],"status":"idle","pending":[0,0],"live_events":[]}}}"#,
        )
        .unwrap();
        assert!(matches!(
            reply.body,
            ReplyBody::Result(CaseResult { run: Some(_), .. })
        ));
    }
}
