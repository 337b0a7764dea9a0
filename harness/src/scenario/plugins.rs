//! Scenario format for the context plugins of spec 10 (time, tmux, agent
//! instructions, session references): their configuration and the actions a
//! scenario can take on their inputs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which context plugins the agent's loop has, and how they are set up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsSpec {}

/// An action on a plugin's inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PluginAction {}
