//! The world of a loop case: the agents, the DeepSeek adapter
//! registration, simulated time and network, and scripted tool results,
//! each with its defaults resolved. The mock provider's script is
//! `mock_provider`'s own type; scripted routes are in [`super::routes`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::js_json::JsJson;
use super::loop_ops::ActOp;
use super::plain_json;
use super::plugins::PluginsSpec;
use super::providers::Registration;
use super::routes::RouteSpec;
use super::serde_defaults::{is_zero, yes};

/// The loop-level world of a case: everything with its defaults resolved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopWorld {
    /// The agent under test.
    pub agent: AgentSpec,
    /// More agents, each with its own session, created after `agent` in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentSpec>,
    /// The mock provider's script.
    pub provider: mock_provider::Script,
    /// The DeepSeek adapter registration.
    pub adapter: AdapterSpec,
    /// Simulated time and network.
    pub simulation: SimulationSpec,
    /// Scripted tool results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultSpec>,
    /// Context plugins.
    #[serde(default)]
    pub plugins: PluginsSpec,
    /// Scripted routes at the LLM-adapter level, below the wire.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteSpec>,
}

/// The agent: `AgentOptions` and its session. Option and session fields
/// hold JavaScript values ([`JsJson`]), so a scenario can state what an
/// implementation must refuse (a negative, fractional or NaN `maxTokens`, a
/// relative `cwd`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Agent id; also the name of its scope (`scope = "<id>"` registers on it).
    #[serde(default = "default_agent_id")]
    pub id: String,
    /// `AgentOptions.provider`: a string, or `{ "$js" = "undefined" }` for
    /// none; absent = `deepseek-official`, the DeepSeek route.
    #[serde(default = "default_provider")]
    pub provider: JsJson,
    /// `AgentOptions.model`: a string or undefined; absent = `deepseek-v4-flash`.
    #[serde(default = "default_model")]
    pub model: JsJson,
    /// `AgentOptions.maxTokens`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub max_tokens: JsJson,
    /// Session `meta.cwd`, any value; absent = `/work`.
    #[serde(default = "default_cwd")]
    pub cwd: JsJson,
    /// Session `meta.parentSession`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub parent_session: JsJson,
    /// Session `meta.seedLength`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub seed_length: JsJson,
    /// Session `meta.origin`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub origin: JsJson,
    /// Session `meta.delegationDepth`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub delegation_depth: JsJson,
    /// Session `meta.agentPreset`, any value (default undefined).
    #[serde(
        default = "JsJson::undefined",
        skip_serializing_if = "JsJson::is_undefined"
    )]
    pub agent_preset: JsJson,
    /// The session's seed: its initial events, any values, checked as
    /// `createAgent({seed})` checks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Vec<JsJson>>,
}

impl Default for AgentSpec {
    fn default() -> Self {
        AgentSpec {
            id: default_agent_id(),
            provider: default_provider(),
            model: default_model(),
            max_tokens: JsJson::undefined(),
            cwd: default_cwd(),
            parent_session: JsJson::undefined(),
            seed_length: JsJson::undefined(),
            origin: JsJson::undefined(),
            delegation_depth: JsJson::undefined(),
            agent_preset: JsJson::undefined(),
            seed: None,
        }
    }
}

fn default_agent_id() -> String {
    "agent".into()
}

fn default_provider() -> JsJson {
    JsJson(Value::String("deepseek-official".into()))
}

fn default_model() -> JsJson {
    JsJson(Value::String("deepseek-v4-flash".into()))
}

fn default_cwd() -> JsJson {
    JsJson(Value::String("/work".into()))
}

/// The DeepSeek adapter registration (spec 09 W5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterSpec {
    /// Whether the route is registered at all (false: `NO_ADAPTER`).
    #[serde(default = "yes")]
    pub registered: bool,
    /// The provider route name.
    #[serde(default = "default_route")]
    pub provider: String,
    /// Catalog models; others use the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelSpec>,
    /// Context window of models not in the catalog (default 1000000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_context_window: Option<u64>,
    /// Output cap of models not in the catalog (default 256000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Deployment default effort: `off`, `low`, `high` (default) or `max`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Deployment thinking: `enabled` or `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Idle watchdog between stream reads (default 300000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// `maxRequestImageBytes`: the bound on a request's base64 image payload
    /// (default 20971520); the oldest images over it are sent as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_image_bytes: Option<u64>,
    /// The durable attachment service (`ctx.attachments`) the adapter reads
    /// images through, with the images it holds. Absent: there is none, so
    /// a request with an image fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<AttachmentSpec>>,
}

impl AdapterSpec {
    /// What the DeepSeek adapter builds request bodies from besides the
    /// request: the thinking defaults, the attachment service, the image
    /// bound (its default when unstated), the models that accept images.
    pub fn wire_options(&self) -> dshc_deepseek::WireOptions {
        let attachments = self.attachments.as_ref().map(|held| {
            let mut service = dshc_deepseek::Attachments::default();
            for image in held {
                let stored = match &image.error {
                    Some(failure) => Err(dshc_deepseek::AttachmentFault {
                        code: failure.code.clone(),
                        message: failure.message.clone(),
                    }),
                    None => Ok(dshc_deepseek::StoredImage {
                        media_type: image.media_type.clone(),
                        base64: image.data.clone(),
                    }),
                };
                service.insert(&image.id, stored);
            }
            service
        });
        dshc_deepseek::WireOptions {
            defaults: dshc_deepseek::DeepSeekDefaults {
                thinking: self.thinking.clone(),
                reasoning_effort: self.reasoning_effort.clone(),
            },
            attachments,
            max_request_image_bytes: self
                .max_request_image_bytes
                .unwrap_or(dshc_deepseek::DEFAULT_MAX_REQUEST_IMAGE_BYTES),
            image_models: self
                .models
                .iter()
                .filter(|model| {
                    model
                        .input_modalities
                        .iter()
                        .flatten()
                        .any(|m| *m == Modality::Image)
                })
                .map(|model| model.id.clone())
                .collect(),
        }
    }
}

impl Modality {
    /// Its name in the catalog (`inputModalities`).
    pub fn name(self) -> &'static str {
        match self {
            Modality::Text => "text",
            Modality::Image => "image",
        }
    }
}

/// One image the attachment service holds, under its `attachmentId`. Its
/// read gives these bytes under this media type, or throws an
/// `AttachmentError` with `error`'s code and message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachmentSpec {
    /// The `attachmentId` image blocks name it by.
    pub id: String,
    /// The stored media type (`image/png`, ...), which the data URL carries.
    #[serde(default = "default_media_type")]
    pub media_type: String,
    /// The stored bytes, in canonical base64.
    #[serde(default)]
    pub data: String,
    /// The read fails instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AttachmentFailure>,
}

/// An `AttachmentError` a read throws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachmentFailure {
    /// Its `code` (`ATTACHMENT_NOT_FOUND`, `ATTACHMENT_CORRUPT`, ...).
    pub code: String,
    /// Its message.
    pub message: String,
}

fn default_media_type() -> String {
    "image/png".into()
}

impl Default for AdapterSpec {
    fn default() -> Self {
        AdapterSpec {
            registered: true,
            provider: default_route(),
            models: Vec::new(),
            default_context_window: None,
            max_tokens: None,
            reasoning_effort: None,
            thinking: None,
            stream_idle_timeout_ms: None,
            max_request_image_bytes: None,
            attachments: None,
        }
    }
}

fn default_route() -> String {
    "deepseek-official".into()
}

/// One catalog model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Model id.
    pub id: String,
    /// Its context window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Its output cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// `inputModalities` (default `["text"]`): `image` lets requests with
    /// images through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<Modality>>,
}

/// An input modality a catalog model accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Simulated time and network (turmoil).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// The seed of the simulated network.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// One-way message latency.
    #[serde(default = "default_latency_ms")]
    pub latency_ms: u64,
    /// Epoch milliseconds at the start (default 1767225600000, 2026-01-01T00:00:00Z).
    #[serde(default = "default_start_ms")]
    pub start_ms: u64,
    /// Virtual-time budget; a run still busy after it is an error.
    #[serde(default = "default_budget_ms")]
    pub budget_ms: u64,
}

impl Default for SimulationSpec {
    fn default() -> Self {
        SimulationSpec {
            seed: default_seed(),
            latency_ms: default_latency_ms(),
            start_ms: default_start_ms(),
            budget_ms: default_budget_ms(),
        }
    }
}

fn default_seed() -> u64 {
    1
}

fn default_latency_ms() -> u64 {
    1
}

fn default_start_ms() -> u64 {
    1_767_225_600_000
}

fn default_budget_ms() -> u64 {
    3_600_000
}

/// A scripted tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResultSpec {
    /// Tool name the result answers.
    pub name: String,
    /// Result text.
    #[serde(default)]
    pub text: String,
    /// The result's content blocks as given (text and image blocks), in
    /// place of the one text block `text` renders to; `text` stays the
    /// tool's returned value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option_list"
    )]
    pub content: Option<Vec<Value>>,
    /// `isError`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Context messages spliced into the next-step inbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_contexts: Vec<String>,
    /// `concludesTurn`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concludes_turn: bool,
    /// Virtual time the call takes (a cancel can land while it runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// What the tool body does after `delay_ms`, in order, before it returns
    /// its result: act ops (a `throw` makes the call fail as the tool
    /// runtime renders a failure), `wait_for_abort`, and prompt registrations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<ToolOp>,
}

/// An op of a scripted tool body, read by its name as a listener's op is
/// ([`super::loop_ops`]), so that a wrong one is named with the alternatives.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolOp {
    /// Wait until the call's signal aborts.
    WaitForAbort,
    /// Register a prompt entry (on its `scope`, global by default).
    Register(Registration),
    /// Dispose a registration by id.
    Dispose(String),
    /// Act or observe (record: `call_id`, `arguments`, `aborted`, `last_event`).
    #[serde(untagged)]
    Act(ActOp),
}

/// [`ToolOp`]'s own ops, as read (the acts are read as [`ActOp`]).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ToolOwn {
    WaitForAbort,
    Register(Registration),
    Dispose(String),
}

impl<'de> Deserialize<'de> for ToolOp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let own = |op: ToolOwn| match op {
            ToolOwn::WaitForAbort => ToolOp::WaitForAbort,
            ToolOwn::Register(registration) => ToolOp::Register(registration),
            ToolOwn::Dispose(id) => ToolOp::Dispose(id),
        };
        let names = ["wait_for_abort", "register", "dispose"];
        super::loop_ops::listener_op(deserializer, "tool body", &names, own, ToolOp::Act)
    }
}
