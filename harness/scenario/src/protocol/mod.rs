//! The adapter protocol (docs/adapter-protocol.md): numbered JSON-line
//! requests from the harness and replies from an implementation, the
//! [`Case`] they carry and the [`CaseResult`] they return.
//!
//! **API boundary:** the committed schema `docs/adapter-protocol.v1.json` is
//! generated from these types; changing them is a protocol change.

pub mod case;
pub mod commands;
pub mod js_json;
pub mod listener_ops;
pub mod loop_commands;
pub mod loop_ops;
pub mod order;
pub mod plain_json;
pub mod plugins;
pub mod providers;
pub mod result;
pub mod routes;
mod serde_defaults;
pub mod step_refs;
pub mod world;

pub use case::*;
pub use result::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The adapter protocol version this harness speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request from the harness to an adapter: one JSON line on its stdin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Request number, from 0, one higher per request; the reply echoes it.
    pub seq: u64,
    /// What is asked.
    #[serde(flatten)]
    pub body: RequestBody,
}

/// What the harness asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum RequestBody {
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
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_url: Option<String>,
        /// Extension `virtual_time/1` (offered through
        /// `capabilities.virtual_time`): run this loop case on a clock the
        /// harness drives, from `case.world.simulation.start_ms`, and send
        /// every provider request to the harness as a `provider_request`
        /// line instead of over a socket (there is no `provider_url`); each
        /// is answered by a `provider_response` request with the same `seq`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        virtual_time: bool,
    },
    /// Extension `virtual_time/1`: the answer to the `provider_request` the
    /// running case (`seq`) sent, computed by the harness's mock provider
    /// on its simulated network. Times are virtual milliseconds after the
    /// request was sent.
    ProviderResponse {
        /// The response.
        response: BridgeResponse,
    },
    /// Benchmark (extension `bench/1`, offered through
    /// `capabilities.bench`): run every command of `case` but the last once,
    /// then time `batches` batches of `iterations` runs of the last command,
    /// an `assemble`, each followed by rendering the system text and the
    /// runtime-context snapshot; reply `benched`.
    Bench {
        /// The fixture: registrations, then the measured `assemble`.
        case: Box<Case>,
        /// Steps per batch.
        iterations: u32,
        /// Batches.
        batches: u32,
    },
    /// Finish: the adapter replies, then exits.
    Stop,
}

/// Who is answering: the implementation under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImplementationInfo {
    /// Implementation name, e.g. `@deepseek-ai/dsh-system-prompt`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its language.
    pub language: String,
    /// Where it lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
}

/// What an implementation can run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Contract levels it implements; cases of other levels are skipped.
    pub levels: Vec<Level>,
    /// Whether it answers `bench` requests (extension `bench/1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bench: bool,
    /// Whether it runs loop cases on the harness's clock and sends provider
    /// requests over the protocol (extension `virtual_time/1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub virtual_time: bool,
    /// Whether it resolves step inputs taken from earlier observations
    /// (extension `step_refs/1`); a case with one is skipped otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_refs: bool,
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
        implementation: ImplementationInfo,
        /// What it supports.
        capabilities: Capabilities,
    },
    /// Answer to `run`: the case ran.
    Result(Box<CaseResult>),
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
    /// Answer to `bench`: the batch times.
    Benched(BenchReply),
    /// Not an answer: while running a `virtual_time` case, a request the
    /// implementation sends its provider. The harness answers it with a
    /// `provider_response` request of the same `seq`; the case's own answer
    /// comes later.
    ProviderRequest(BridgeRequest),
    /// Not an answer: while running a `virtual_time` case, the
    /// implementation aborted one of its provider requests before that
    /// exchange ended. No reply is expected.
    ProviderAbort(BridgeAbort),
    /// Answer to `stop`.
    Stopped {},
}

/// An HTTP request an implementation sends its provider (`virtual_time/1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeRequest {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path below the provider's base URL, with its query
    /// (`/chat/completions`).
    pub path: String,
    /// Header name and value pairs, in the order sent.
    #[serde(default)]
    pub headers: Vec<[String; 2]>,
    /// The body, as text (empty for none).
    #[serde(default)]
    pub body: String,
}

/// An aborted provider exchange (`virtual_time/1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeAbort {
    /// Which request of the case: 0 for its first `provider_request`, and
    /// so on.
    pub request: u64,
    /// When, in virtual ms after that request was sent.
    pub at_ms: u64,
}

/// The provider's answer to a [`BridgeRequest`], as its client saw it
/// arrive: the head, each body frame, and the end, each at a virtual time
/// after the request was sent (`virtual_time/1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeResponse {
    /// When the provider received the request; absent when it never did.
    /// An abort before then means the request was never delivered: report
    /// it (`provider_abort`), and the provider forgets it.
    pub received_at_ms: Option<u64>,
    /// When the status line and headers arrived; absent when no head ever
    /// came (the connection failed first: see `end`).
    pub head_at_ms: Option<u64>,
    /// HTTP status.
    #[serde(default)]
    pub status: u16,
    /// Header name and value pairs, in order (lowercase names).
    #[serde(default)]
    pub headers: Vec<[String; 2]>,
    /// Body frames in arrival order.
    #[serde(default)]
    pub frames: Vec<BridgeFrame>,
    /// How the exchange ended.
    pub end: BridgeEnd,
}

/// One body frame of a [`BridgeResponse`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeFrame {
    /// Arrival, in virtual ms after the request was sent.
    pub at_ms: u64,
    /// The bytes, as text (the mock provider writes UTF-8).
    pub data: String,
}

/// How a [`BridgeResponse`] ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeEnd {
    /// When, in virtual ms after the request was sent. For `open` (the
    /// provider still had something scheduled when the case's budget ran
    /// out), the budget's end.
    pub at_ms: u64,
    /// `complete` (the body ended), `dropped` (the connection failed: a
    /// fetch rejects or its body errors) or `open` (it never ended).
    pub kind: BridgeEndKind,
    /// For `dropped`: what the client saw.
    pub error: Option<String>,
}

/// See [`BridgeEnd::kind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BridgeEndKind {
    /// The body ended normally.
    #[default]
    Complete,
    /// The connection failed.
    Dropped,
    /// Still going when the budget ran out.
    Open,
}

/// What a `bench` request measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchReply {
    /// Wall time of each batch, in nanoseconds, by the implementation's own clock.
    pub batch_ns: Vec<u64>,
    /// Bytes of the last step's system text plus its snapshot (UTF-8), so the
    /// harness can check every implementation built the same registry.
    pub output_bytes: u64,
}

/// A protocol line that is not a valid message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtocolError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// Keys outside every message shape.
    #[error("unexpected keys {0:?}")]
    UnexpectedKeys(Vec<String>),
    /// The right keys with the wrong contents.
    #[error("{0}")]
    Invalid(String),
}

/// Parse one protocol line strictly: an object whose keys are exactly `seq`
/// plus the fields of one message, nothing unknown. (Serde cannot deny
/// unknown fields next to a flattened enum, so the key set is checked here.)
fn parse_strict<T: serde::de::DeserializeOwned>(
    line: &str,
    allowed: &[&[&str]],
) -> Result<T, ProtocolError> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| ProtocolError::NotJson(e.to_string()))?;
    let object = value.as_object().ok_or(ProtocolError::NotAnObject)?;
    let keys: std::collections::BTreeSet<&str> = object.keys().map(String::as_str).collect();
    let fits = allowed
        .iter()
        .any(|shape| keys.iter().all(|key| *key == "seq" || shape.contains(key)));
    if !fits {
        return Err(ProtocolError::UnexpectedKeys(
            keys.into_iter().map(str::to_string).collect(),
        ));
    }
    serde_json::from_value(value).map_err(|e| ProtocolError::Invalid(e.to_string()))
}

/// Parse a reply line, rejecting anything outside the schema.
pub fn parse_reply(line: &str) -> Result<Reply, ProtocolError> {
    parse_strict(
        line,
        &[
            &["started"],
            &["result"],
            &["skipped"],
            &["errored"],
            &["benched"],
            &["stopped"],
            &["provider_request"],
            &["provider_abort"],
        ],
    )
}

/// Parse a request line, rejecting anything outside the schema.
pub fn parse_request(line: &str) -> Result<Request, ProtocolError> {
    parse_strict(
        line,
        &[
            &["cmd", "version"],
            &["cmd", "case", "provider_url", "virtual_time"],
            &["cmd", "response"],
            &["cmd", "case", "iterations", "batches"],
            &["cmd"],
        ],
    )
}

/// For an optional member whose `null` means something (JavaScript's
/// `null`, not `undefined`): present is `Some`, `null` included, and absent
/// (with `#[serde(default)]`) is `None`. serde's `Option` would read a
/// present `null` as `None`.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_as_single_json_lines() {
        let request = Request {
            seq: 3,
            body: RequestBody::Stop,
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
            body: RequestBody::Run {
                case: Box::new(case.clone()),
                provider_url: Some("http://127.0.0.1:4000".into()),
                virtual_time: false,
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
            body: RequestBody::Run {
                case: Box::new(case.clone()),
                provider_url: None,
                virtual_time: false,
            },
        };
        let line = serde_json::to_string(&without).unwrap();
        assert!(
            !line.contains("provider_url") && !line.contains("virtual_time"),
            "{line}"
        );
        assert_eq!(parse_request(&line).unwrap(), without);
        // virtual_time/1: the run asks for the harness's clock; a provider
        // request from the adapter and its answer share the run's seq.
        let virtual_run = Request {
            seq: 3,
            body: RequestBody::Run {
                case: Box::new(case),
                provider_url: None,
                virtual_time: true,
            },
        };
        let line = serde_json::to_string(&virtual_run).unwrap();
        assert!(line.ends_with(r#","virtual_time":true}"#), "{line}");
        assert_eq!(parse_request(&line).unwrap(), virtual_run);
        let asked = parse_reply(
            r#"{"seq":3,"provider_request":{"method":"POST","path":"/chat/completions","headers":[["host","provider"]],"body":"{}"}}"#,
        )
        .unwrap();
        assert!(
            matches!(&asked.body, ReplyBody::ProviderRequest(r) if r.path == "/chat/completions")
        );
        let answer = Request {
            seq: 3,
            body: RequestBody::ProviderResponse {
                response: BridgeResponse {
                    head_at_ms: Some(3),
                    status: 200,
                    frames: vec![BridgeFrame {
                        at_ms: 4,
                        data: "data: [DONE]\n\n".into(),
                    }],
                    end: BridgeEnd {
                        at_ms: 4,
                        kind: BridgeEndKind::Complete,
                        error: None,
                    },
                    ..BridgeResponse::default()
                },
            },
        };
        let line = serde_json::to_string(&answer).unwrap();
        assert!(
            line.starts_with(r#"{"seq":3,"cmd":"provider_response","response":{"#),
            "{line}"
        );
        assert_eq!(parse_request(&line).unwrap(), answer);
        // A reply's run may leave `requests` out: the harness fills it.
        let reply = parse_reply(
            r#"{"seq":1,"result":{"observations":[],"run":{"log":[],"status":"idle","pending":[0,0],"live_events":[]}}}"#,
        )
        .unwrap();
        assert!(matches!(&reply.body, ReplyBody::Result(result) if result.run.is_some()));
    }

    /// JavaScript's `JSON.parse` rounds every number correctly; so must
    /// dshc, or an adapter's exact `contextWindow` reads one ulp off (found
    /// by the `adapter_reply` fuzz target).
    #[test]
    fn numbers_in_replies_parse_correctly_rounded() {
        let text = "1.0000222222222221e+38";
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let expected: f64 = text.parse().unwrap();
        assert_eq!(value.as_f64().map(f64::to_bits), Some(expected.to_bits()));
    }
}
