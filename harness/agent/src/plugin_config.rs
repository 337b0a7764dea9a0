//! The context plugins' configuration and inputs, as the loop sees them.
//!
//! These are the agent's own types: what upstream's plugin configs hold
//! (absent fields keep upstream's defaults, numbers stay JavaScript numbers
//! so that invalid values reach the plugins' own checks) plus the stand-ins
//! for their outside inputs. The scenario format has its own serde types and
//! the harness converts; the loop never sees a scenario file.

use indexmap::IndexMap;
use serde_json::Value;

/// Which plugins an agent has, and in what order they register.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginsConfig {
    /// Explicit registration order; configured plugins left out follow in
    /// the default order (agent instructions, time, tmux, session reference).
    pub order: Vec<PluginName>,
    /// `@deepseek-ai/dsh-time-context`.
    pub time_context: Option<TimeContextConfig>,
    /// `@deepseek-ai/dsh-tmux-context`.
    pub tmux_context: Option<TmuxContextConfig>,
    /// `@deepseek-ai/dsh-agent-instructions`.
    pub agent_instructions: Option<AgentInstructionsConfig>,
    /// `@deepseek-ai/dsh-session-reference`.
    pub session_reference: Option<SessionReferenceConfig>,
}

/// A plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PluginName {
    /// time-context.
    TimeContext,
    /// tmux-context.
    TmuxContext,
    /// agent-instructions.
    AgentInstructions,
    /// session-reference.
    SessionReference,
}

/// time-context: its config and the host's zone table (fixed UTC offsets).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeContextConfig {
    /// `config.timeZone`; `None` = the process zone.
    pub time_zone: Option<String>,
    /// `config.refreshIntervalMs`, unchecked.
    pub refresh_interval_ms: Option<f64>,
    /// The host's own zone; `None` = `UTC`.
    pub process_time_zone: Option<String>,
    /// Known zones: name → `+HH:MM` / `-HH:MM`.
    pub zones: IndexMap<String, String>,
}

/// tmux-context: its config and the shell query's first answer.
#[derive(Clone, Debug, PartialEq)]
pub struct TmuxContextConfig {
    /// `config.refreshIntervalMs`, unchecked.
    pub refresh_interval_ms: Option<f64>,
    /// Whether the `ctx.shell` executor exists.
    pub shell: bool,
    /// What the query returns until an input change; `None` = not in tmux.
    pub query: Option<TmuxQuery>,
}

/// The result of tmux-context's one shell query.
#[derive(Clone, Debug, PartialEq)]
pub enum TmuxQuery {
    /// Exit 0 with this pane's fields.
    Pane(TmuxPane),
    /// A non-zero exit.
    Exit(i32),
    /// The executor rejects the command with this message.
    Rejected(String),
}

/// The tmux fields the plugin reads.
#[derive(Clone, Debug, PartialEq)]
pub struct TmuxPane {
    /// `#{session_name}`.
    pub session: String,
    /// `#{window_index}`.
    pub window_index: String,
    /// `#{window_name}`.
    pub window_name: String,
    /// `#{pane_index}`.
    pub pane_index: String,
    /// `#{pane_id}`; empty = the query yields nothing.
    pub pane_id: String,
    /// `#{window_active}`.
    pub window_active: String,
    /// `#{pane_active}`.
    pub pane_active: String,
    /// `#{window_layout}`.
    pub layout: String,
}

/// agent-instructions: its config and the `ctx.fs` stand-in's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentInstructionsConfig {
    /// `config.maxBytes`; `0` disables the plugin.
    pub max_bytes: u64,
    /// `config.maxSourceBytes`; `None` = 1048576.
    pub max_source_bytes: Option<u64>,
    /// `config.projectRootMarkers`; `None` = `[".git"]`.
    pub project_root_markers: Option<Vec<String>>,
    /// `config.instructionFileCandidates`; `None` = `["AGENTS.md", "CLAUDE.md"]`.
    pub instruction_file_candidates: Option<Vec<String>>,
    /// `config.localInstructionFileCandidates`.
    pub local_instruction_file_candidates: Option<Vec<String>>,
    /// The resolved `$DSH_HOME`; `None` = `/home/user/.dsh`.
    pub dsh_home: Option<String>,
    /// Whether the `ctx.fs` provider exists.
    pub fs: bool,
    /// Files: absolute path → UTF-8 content.
    pub files: IndexMap<String, String>,
    /// Extra directories (absolute).
    pub dirs: Vec<String>,
}

/// session-reference: its config and the other sessions' surfaces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionReferenceConfig {
    /// `config.maxReferences`, unchecked; `None` = 3.
    pub max_references: Option<f64>,
    /// `config.maxReferenceBytes`, unchecked; `None` = 65536.
    pub max_reference_bytes: Option<f64>,
    /// Other sessions by id.
    pub sessions: IndexMap<String, ReferencedSession>,
}

/// One other session's surface, as `sessionQuery.readSurface` returns it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReferencedSession {
    /// `session.header.cwd`.
    pub cwd: Option<String>,
    /// `capturedThroughSeq`; `None` = the last message's index.
    pub captured_through_seq: Option<u64>,
    /// Surface messages, oldest first.
    pub messages: Vec<SurfaceMessage>,
    /// Reading this session fails with this message.
    pub read_error: Option<String>,
}

/// One surface message of another session.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceMessage {
    /// Its event kind.
    pub role: SurfaceRole,
    /// Its text.
    pub text: String,
    /// A `user/message`'s source; `None` = `{kind: "user"}`.
    pub source: Option<Value>,
}

/// The event kind of a surface message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceRole {
    /// `user/message`.
    User,
    /// `assistant/message`.
    Assistant,
    /// `tool/result`.
    Tool,
}

/// A change to a plugin's outside inputs while the loop runs.
#[derive(Clone, Debug, PartialEq)]
pub enum InputChange {
    /// tmux's query answers this from now on.
    Tmux(TmuxQuery),
    /// Create or overwrite a file (its version changes).
    WriteFile {
        /// Absolute path.
        path: String,
        /// New content.
        content: String,
    },
    /// Delete a file.
    RemoveFile(String),
    /// Replace another session's surface.
    SetSession {
        /// The session id.
        id: String,
        /// Its new surface.
        session: ReferencedSession,
    },
}
