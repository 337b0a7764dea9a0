//! What an implementation is asked to run: a [`Case`] and its commands.
//!
//! A case is a compiled scenario: defaults resolved, ids assigned, and no
//! expectations. These types are the adapter protocol's API boundary (the
//! committed `docs/adapter-protocol.v1.json` is generated from them); a
//! scenario file's step is a [`Command`] plus its expectation, so files and
//! cases share these shapes without the protocol ever carrying an `expect`.
//!
//! The types a case is made of live in submodules by meaning, all
//! re-exported here: [`super::commands`] (the command vocabulary and the
//! registry commands), [`super::loop_commands`], [`super::providers`],
//! [`super::listener_ops`], [`super::loop_ops`], [`super::world`] and
//! [`super::routes`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::commands::*;
pub use super::js_json::JsJson;
pub use super::listener_ops::*;
pub use super::loop_commands::*;
pub use super::loop_ops::*;
pub use super::order::Order;
pub use super::plugins::*;
pub use super::providers::*;
pub use super::routes::*;
pub use super::world::*;

/// One compiled scenario.
#[serde_with::skip_serializing_none]
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
    /// Commands, run in order, every default id filled in. Top-level scope
    /// bindings come first as `bind`.
    pub commands: Vec<Command>,
    /// Loop level only: the agent's world with every default resolved.
    pub world: Option<LoopWorld>,
}

/// The contract level a scenario exercises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Registry, `assemble()`, rendering and tool order (spec 01–04).
    #[default]
    Assembly,
    /// The agent loop around the assembly: turns, steps, requests and the
    /// session log (spec 05–10).
    Loop,
}

impl Level {
    /// The level's name in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Level::Assembly => "assembly",
            Level::Loop => "loop",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// `SystemPrompt` config (spec 01 §1). Absent keys take upstream defaults.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    /// Register `harness:identity` (default true).
    pub include_harness_identity: Option<bool>,
    /// `false` registers a global runtime-context suppressor (default true).
    pub include_runtime_context: Option<bool>,
    /// Text of `deployment:persona` (default empty).
    pub persona: Option<String>,
    /// Explicit tool order, with the `<unlisted-tools>` rest entry.
    pub tool_order: Option<Vec<String>>,
}
