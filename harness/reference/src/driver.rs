//! The one case driver: runs a case's commands in order and keeps the
//! per-command bookkeeping both levels share.
//!
//! For every command it counts the `system-prompt/change` events, takes the
//! evaluation journal and the listeners' records and keeps a thrown error, so that an observation
//! means the same at the assembly level and at the loop level. What a
//! command does is the level's business ([`Commands`]).

use dshc_model::{JsError, Registry};
use dshc_scenario::protocol::step_refs;
use dshc_scenario::protocol::{Command, Observation};

use super::scripted::{World, observed};

/// What one level does with a command.
pub(crate) trait Commands {
    /// Run `command`, filling any observation beyond the change count, the
    /// journal and the error.
    async fn run(
        &mut self,
        command: &Command,
        observation: &mut Observation,
    ) -> Result<(), JsError>;
}

/// Run `commands` in order, one observation each.
pub(crate) async fn run_commands(
    commands: &[Command],
    registry: &Registry,
    world: &World,
    level: &mut impl Commands,
) -> Vec<Observation> {
    let mut observations = Vec::with_capacity(commands.len());
    for command in commands {
        let changes_before = registry.change_count();
        let mut observation = Observation::default();
        // A step input taken from an earlier observation (`step_refs/1`).
        let ran = match step_refs::resolve(command, &observations) {
            Ok(command) => level.run(&command, &mut observation).await,
            Err(message) => Err(JsError::error(message)),
        };
        if let Err(error) = ran {
            observation.error = Some(observed(&error));
        }
        observation.changes = registry.change_count() - changes_before;
        observation.journal = world.take_journal();
        observation.records = world.take_records();
        observations.push(observation);
    }
    observations
}
