//! Scenario format for the context plugins of spec 10 (time, tmux, agent
//! instructions, session references): their configuration and the actions a
//! scenario can take on their inputs.
//!
//! Upstream, these plugins read the wall clock and the host's time zones, run
//! a shell query against tmux, read `AGENTS.md` files from disk and read other
//! sessions through a query service. A scenario replaces each of those with
//! data (spec 99 §2): a table of fixed-offset zones, a scripted pane state, a
//! fake file map and scripted session surfaces. Everything else (placement,
//! intervals, suppression, digests, budgets, error texts) is modelled.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::js_json::JsNumber;
use super::plain_json;
use super::serde_defaults::{is_true, yes};

/// Which context plugins the agent's loop has, and how they are set up
/// (the scenario's `[plugins]` table). A plugin is installed when its table
/// is present; each one registers its `agent/pre-step` listener when the
/// agent is created (and again for the new agent after a `resume`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsSpec {
    /// Registration order. Default: `agent_instructions`, `time_context`,
    /// `tmux_context`, `session_reference` (the configured ones). Prepend
    /// listeners registered later are outer (10 P1), so this decides which
    /// plugin edits the decision last. Must name configured plugins only;
    /// configured plugins left out follow in the default order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<PluginName>>,
    /// `@deepseek-ai/dsh-time-context` (opt-in, prepend listener).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_context: Option<TimeContextSpec>,
    /// `@deepseek-ai/dsh-tmux-context` (opt-in, prepend listener).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_context: Option<TmuxContextSpec>,
    /// `@deepseek-ai/dsh-agent-instructions` (plain listener).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_instructions: Option<AgentInstructionsSpec>,
    /// `@deepseek-ai/dsh-session-reference` (prepend listener registered by
    /// the resolver service).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_reference: Option<SessionReferenceSpec>,
}

/// A plugin, by its table name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PluginName {
    /// `[plugins.time_context]`.
    TimeContext,
    /// `[plugins.tmux_context]`.
    TmuxContext,
    /// `[plugins.agent_instructions]`.
    AgentInstructions,
    /// `[plugins.session_reference]`.
    SessionReference,
}

impl PluginName {
    /// Every plugin, in the default registration order.
    pub const ALL: [PluginName; 4] = [
        PluginName::AgentInstructions,
        PluginName::TimeContext,
        PluginName::TmuxContext,
        PluginName::SessionReference,
    ];

    /// Its `[plugins]` table name.
    pub fn table(self) -> &'static str {
        match self {
            PluginName::TimeContext => "time_context",
            PluginName::TmuxContext => "tmux_context",
            PluginName::AgentInstructions => "agent_instructions",
            PluginName::SessionReference => "session_reference",
        }
    }
}

impl PluginsSpec {
    /// Whether `[plugins]` configures `name`.
    pub fn configures(&self, name: PluginName) -> bool {
        match name {
            PluginName::TimeContext => self.time_context.is_some(),
            PluginName::TmuxContext => self.tmux_context.is_some(),
            PluginName::AgentInstructions => self.agent_instructions.is_some(),
            PluginName::SessionReference => self.session_reference.is_some(),
        }
    }
}

/// time-context config (10 TC1–TC4). Stand-in for the host's time zone
/// database: zones are fixed UTC offsets named in `zones` (no daylight
/// saving); `UTC` is always known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeContextSpec {
    /// `config.timeZone`: the fallback display zone. Absent = the process
    /// zone (`process_time_zone`). Must be `UTC` or a key of `zones`
    /// (matched case-insensitively, then reported under the key's spelling,
    /// as `Intl` canonicalizes); otherwise loading fails with
    /// `time-context: invalid IANA timeZone "<v>"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `config.refreshIntervalMs`. Absent or `0` = every entering step. Must
    /// be a non-negative safe integer, else loading throws a `TypeError`
    /// (any JavaScript number is accepted here, `NaN` and the infinities
    /// included, so that invalid values can be tested).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_interval_ms: Option<JsNumber>,
    /// The simulated host's own zone (default `UTC`); must be `UTC` or a key
    /// of `zones`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_time_zone: Option<String>,
    /// Known zones: IANA-like name → fixed offset `+HH:MM` / `-HH:MM`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub zones: IndexMap<String, String>,
}

/// tmux-context config (10 TM1–TM5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TmuxContextSpec {
    /// `config.refreshIntervalMs`: minimum time between injections. Must be
    /// a non-negative safe integer, else loading throws a `TypeError`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_interval_ms: Option<JsNumber>,
    /// Whether the `ctx.shell` executor service exists (default true);
    /// without it the plugin never queries.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub shell: bool,
    /// What the shell query returns until a `tmux` action changes it.
    /// Default: not inside a tmux pane (the query exits 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<TmuxQuery>,
}

/// The result of the plugin's one read-only shell query (stand-in for
/// `tmux display-message` with the tty check). Exactly one key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TmuxQuery {
    /// Exit 0 with this pane's fields.
    Pane(TmuxPane),
    /// A non-zero exit (not in tmux, an inherited `$TMUX_PANE`, tmux failed).
    Exit(i32),
    /// The executor rejects the command with this message (logged as a
    /// warning; the turn continues).
    Rejected(String),
}

/// The tmux fields the plugin reads, in query order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TmuxPane {
    /// `#{session_name}`.
    pub session: String,
    /// `#{window_index}`.
    pub window_index: String,
    /// `#{window_name}` (rendered JSON-quoted).
    pub window_name: String,
    /// `#{pane_index}`.
    pub pane_index: String,
    /// `#{pane_id}`, e.g. `%3`. Empty = the query yields nothing.
    pub pane_id: String,
    /// `#{window_active}` (`1` or `0`).
    pub window_active: String,
    /// `#{pane_active}` (`1` or `0`).
    pub pane_active: String,
    /// `#{window_layout}`.
    pub layout: String,
}

/// agent-instructions config (10 AI1–AI4) plus its fake file system (the
/// `ctx.fs` provider stand-in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInstructionsSpec {
    /// `config.maxBytes`: UTF-8 budget of one rendered batch (required
    /// upstream). `0` disables the plugin.
    pub max_bytes: u64,
    /// `config.maxSourceBytes` (default 1048576): larger files are skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_source_bytes: Option<u64>,
    /// `config.projectRootMarkers` (default `[".git"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_root_markers: Option<Vec<String>>,
    /// `config.instructionFileCandidates` (default `["AGENTS.md", "CLAUDE.md"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_file_candidates: Option<Vec<String>>,
    /// `config.localInstructionFileCandidates` (default
    /// `["AGENTS.local.md", "CLAUDE.local.md"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_instruction_file_candidates: Option<Vec<String>>,
    /// The resolved `$DSH_HOME` (default `/home/user/.dsh`; the simulated OS
    /// home is `/home/user`, so only the default displays as `~/.dsh`,
    /// anything else as `$DSH_HOME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsh_home: Option<String>,
    /// Whether the `ctx.fs` provider exists (default true); without it the
    /// plugin composes nothing.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub fs: bool,
    /// The fake file system: absolute path → UTF-8 content. Each file starts
    /// at version 1; a `write_file` action bumps it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub files: IndexMap<String, String>,
    /// Extra directories (absolute), e.g. `/work/.git` as a root marker.
    /// Parents of files exist implicitly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<String>,
}

/// session-reference config (10 SR1–SR2) plus the surfaces of the other
/// sessions (the `sessionQuery.readSurface` stand-in).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionReferenceSpec {
    /// `config.maxReferences` (default 3, at most 3): distinct sessions one
    /// message may cite. cordis checks the config against the resolver's
    /// schema first (an integer from 1, this one at most 3), refusing it
    /// with `ValidationError: invalid config: ...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_references: Option<JsNumber>,
    /// `config.maxReferenceBytes` (default 65536): UTF-8 bytes of one
    /// rendered reference object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reference_bytes: Option<JsNumber>,
    /// Other sessions by id. Reading an id not listed fails with
    /// `session "<id>" not found`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub sessions: IndexMap<String, ReferencedSession>,
}

/// One other session's current surface, as `readSurface` returns it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferencedSession {
    /// `session.header.cwd`; absent = `null` in the recall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `capturedThroughSeq`; absent = `messages.len() - 1` (`null` when
    /// there are no messages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured_through_seq: Option<u64>,
    /// The surface messages, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<SurfaceMessage>,
    /// Reading this session fails with this message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
}

/// One surface message of another session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SurfaceMessage {
    /// `user` (a `user/message`), `assistant` or `tool` (a `tool/result`,
    /// never projected).
    pub role: SurfaceRole,
    /// The message's text.
    pub text: String,
    /// A `user/message`'s source (default `{kind = "user"}`); only `user`
    /// sources and compaction checkpoints
    /// (`{kind = "plugin", plugin = "compact"}`) are projected.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
    pub source: Option<Value>,
}

/// The event kind of a surface message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceRole {
    /// `user/message`.
    User,
    /// `assistant/message`.
    Assistant,
    /// `tool/result`.
    Tool,
}

/// An action on a plugin's inputs (`do = "plugin"` plus exactly one key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PluginAction {
    /// Change what the tmux query returns from now on.
    Tmux(TmuxQuery),
    /// Create or overwrite a file of the fake file system (bumps its version).
    WriteFile(WriteFileAction),
    /// Delete a file of the fake file system.
    RemoveFile(String),
    /// Replace another session's surface (later reads see the new one).
    SetSession(SetSessionAction),
    /// Dispose a configured plugin, as disposing its fiber does: its
    /// listeners leave every agent, agents created later (a `resume`) go
    /// without it, and what it logged stays.
    Dispose(PluginName),
}

/// Write a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileAction {
    /// Absolute path.
    pub path: String,
    /// New UTF-8 content.
    pub content: String,
}

/// Replace a referenced session's surface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSessionAction {
    /// The session id.
    pub id: String,
    /// Its new surface.
    pub session: ReferencedSession,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Command, LoopCommand};

    #[test]
    fn plugin_commands_round_trip_through_toml_and_json() {
        let text = r#"
            [[steps]]
            do = "plugin"
            write_file = { path = "/work/AGENTS.md", content = "x" }
            [[steps]]
            do = "plugin"
            tmux = { exit = 1 }
            [[steps]]
            do = "plugin"
            remove_file = "/work/AGENTS.md"
        "#;
        #[derive(Deserialize)]
        struct Steps {
            steps: Vec<Command>,
        }
        let steps: Steps = toml::from_str(text).expect("parses");
        assert_eq!(
            steps.steps[1],
            Command::Loop(LoopCommand::Plugin(PluginAction::Tmux(TmuxQuery::Exit(1))))
        );
        for step in steps.steps {
            let json = serde_json::to_value(&step).expect("serializes");
            let back: Command = serde_json::from_value(json).expect("deserializes");
            assert_eq!(back, step);
        }
    }
}
