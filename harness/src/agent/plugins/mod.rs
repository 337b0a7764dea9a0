//! The context plugins of spec 10 as `agent/pre-step` listeners.

use crate::agent::Agent;
use crate::model::JsError;
use crate::model::session::Clock;
use crate::scenario::plugins::{PluginAction, PluginsSpec};

/// Register the configured plugins on a new agent.
pub fn install(_agent: &Agent, _spec: &PluginsSpec, _clock: &Clock) -> Result<(), JsError> {
    Ok(())
}

/// Perform a scenario action on a plugin's inputs.
pub fn act(_agent: &Agent, action: &PluginAction) -> Result<(), JsError> {
    match *action {}
}
