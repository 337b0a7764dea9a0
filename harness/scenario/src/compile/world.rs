//! Checking a loop case's world and what its commands say of it: the mock
//! provider's script, the scripted routes and their errors, the agents'
//! options, the agents and routes commands name, and the simulated clock.

use serde_json::Value;

use super::{CompileError, MAX_EPOCH_MS, MAX_VIRTUAL_TIME_MS, addressed_agent, fail};
use crate::protocol::{
    ActOp, AgentSpec, Command, LoopCommand, LoopWorld, ModelResolution, PluginAction, PluginName,
    PluginsSpec, RouteSpec, ScriptedError, SettleModelCommand, SimulationSpec,
};

/// A loop case's world and what its commands say of it: the provider's
/// script, the routes, each agent's options, the agents and routes the
/// commands name, and the simulated clock.
pub(super) fn check_world(
    world: &LoopWorld,
    commands: &[Command],
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), CompileError> {
    if let Err(error) = world.provider.validate() {
        return fail("provider", error.to_string());
    }
    check_routes(&world.routes)?;
    let agents: Vec<(String, &AgentSpec)> = std::iter::once(("agent".to_string(), &world.agent))
        .chain(
            world
                .agents
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("agents[{i}]"), a)),
        )
        .collect();
    check_agent_options(&agents)?;
    check_attachments(world)?;
    check_messages_and_agents(commands, &agents, path_of)?;
    check_route_commands(commands, &world.routes, path_of)?;
    check_plugin_commands(commands, &world.plugins, path_of)?;
    check_clock(&world.simulation, commands)?;
    check_clock_stays_after_the_epoch(&world.simulation, commands, path_of)
}

/// The attachment service's images are stored bytes: their base64 is the
/// canonical form (padded, no stray bits), the one `Buffer` writes back, so
/// every implementation puts the same data URL on the wire.
fn check_attachments(world: &LoopWorld) -> Result<(), CompileError> {
    for (index, image) in world.adapter.attachments.iter().flatten().enumerate() {
        if !is_canonical_base64(&image.data) {
            return fail(
                &format!("adapter.attachments[{index}].data"),
                "an image's data is canonical base64 (padded with `=`, no bits past the last byte)",
            );
        }
    }
    Ok(())
}

fn is_canonical_base64(text: &str) -> bool {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if !bytes.len().is_multiple_of(4) || padding > 2 {
        return false;
    }
    let symbols = &bytes[..bytes.len() - padding];
    let values: Option<Vec<u8>> = symbols
        .iter()
        .map(|b| ALPHABET.iter().position(|a| a == b).map(|v| v as u8))
        .collect();
    let Some(values) = values else {
        return false;
    };
    // One `=` leaves 2 bits of the last symbol unused, two leave 4.
    let unused_mask = [0u8, 0b11, 0b1111][padding];
    values.last().is_none_or(|last| last & unused_mask == 0)
}

/// `AgentOptions.provider` and `model` are strings or `undefined`: any other
/// value could not name a route or a model.
fn check_agent_options(agents: &[(String, &AgentSpec)]) -> Result<(), CompileError> {
    for (path, agent) in agents {
        for (key, value) in [("provider", &agent.provider), ("model", &agent.model)] {
            if value.as_str().is_none() && !value.is_undefined() {
                return fail(
                    &format!("{path}.{key}"),
                    "a string, or `{ \"$js\" = \"undefined\" }` for none",
                );
            }
        }
    }
    Ok(())
}

/// Each message a command sends has its content one way, and each agent a
/// command names is one of the world's.
fn check_messages_and_agents(
    commands: &[Command],
    agents: &[(String, &AgentSpec)],
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), CompileError> {
    for (index, command) in commands.iter().enumerate() {
        if let Command::Loop(LoopCommand::Followup(message))
        | Command::Loop(LoopCommand::Steer(message))
        | Command::Loop(LoopCommand::Inject(message)) = command
            && message.text.is_some() == message.content.is_some()
        {
            return fail(&path_of(index), "a message has either `text` or `content`");
        }
        if let Some(id) = addressed_agent(command)
            && !agents.iter().any(|(_, agent)| agent.id == id)
        {
            return fail(
                &format!("{}.agent", path_of(index)),
                format!("no agent has id {id:?}"),
            );
        }
    }
    Ok(())
}

/// `plugin.dispose` names a configured plugin.
fn check_plugin_commands(
    commands: &[Command],
    plugins: &PluginsSpec,
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), CompileError> {
    for (index, command) in commands.iter().enumerate() {
        let Command::Loop(LoopCommand::Plugin(PluginAction::Dispose(name))) = command else {
            continue;
        };
        if !plugins.configures(*name) {
            let configured: Vec<&str> = PluginName::ALL
                .into_iter()
                .filter(|plugin| plugins.configures(*plugin))
                .map(PluginName::table)
                .collect();
            return fail(
                &format!("{}.dispose", path_of(index)),
                format!(
                    "{:?} is not configured in `[plugins]`, so it cannot be disposed (configured: {})",
                    name.table(),
                    if configured.is_empty() {
                        "none".to_owned()
                    } else {
                        configured.join(", ")
                    }
                ),
            );
        }
    }
    Ok(())
}

/// `register_route` and `unregister_route` name one of the world's routes
/// (`register_route`'s `route`, one of those with that name).
fn check_route_commands(
    commands: &[Command],
    routes: &[RouteSpec],
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), CompileError> {
    for (index, command) in commands.iter().enumerate() {
        let (provider, route) = match command {
            Command::Loop(LoopCommand::RegisterRoute(c)) => (&c.provider, c.route),
            Command::Loop(LoopCommand::UnregisterRoute(c)) => (&c.provider, 0),
            Command::Loop(LoopCommand::SettleModel(c)) => (&c.provider, c.route),
            _ => continue,
        };
        let named = routes.iter().filter(|r| &r.provider == provider).count();
        if named == 0 {
            return fail(
                &format!("{}.provider", path_of(index)),
                format!("no route in `routes` has provider {provider:?}"),
            );
        }
        if route >= named {
            return fail(
                &format!("{}.route", path_of(index)),
                format!(
                    "`routes` has {named} route(s) named {provider:?}, so `route` is below {named}"
                ),
            );
        }
        if let Command::Loop(LoopCommand::SettleModel(settle)) = command {
            let spec = routes
                .iter()
                .filter(|r| &r.provider == provider)
                .nth(route)
                .expect("counted above");
            check_settle_model(settle, spec, &path_of(index))?;
        }
    }
    Ok(())
}

/// `settle_model` settles a pending model of its route, with exactly one
/// of `returns` and `rejects`.
fn check_settle_model(
    settle: &SettleModelCommand,
    route: &RouteSpec,
    path: &str,
) -> Result<(), CompileError> {
    if settle.returns.is_some() == settle.rejects.is_some() {
        return fail(
            path,
            "`settle_model` has exactly one of `returns` and `rejects`",
        );
    }
    let resolution = route.models.get(&settle.model).unwrap_or(&route.model);
    if *resolution != ModelResolution::Pending {
        return fail(
            &format!("{path}.model"),
            format!(
                "the route's resolution of {:?} is not `pending`, so there is nothing to settle",
                settle.model
            ),
        );
    }
    Ok(())
}

/// The simulated clock stays bounded: the busy budget within
/// [`MAX_VIRTUAL_TIME_MS`], and start plus budget plus every wait and
/// forward clock jump within [`MAX_EPOCH_MS`].
fn check_clock(simulation: &SimulationSpec, commands: &[Command]) -> Result<(), CompileError> {
    if simulation.budget_ms > MAX_VIRTUAL_TIME_MS {
        return fail(
            "simulation.budget_ms",
            format!("at most {MAX_VIRTUAL_TIME_MS} ms of virtual time per case"),
        );
    }
    let waits = commands.iter().fold(0u64, |total, command| match command {
        Command::Loop(LoopCommand::Wait(wait)) => total.saturating_add(wait.ms),
        Command::Loop(LoopCommand::ClockJump(jump)) => {
            total.saturating_add(jump.ms.max(0).unsigned_abs())
        }
        _ => total,
    });
    let latest = simulation
        .start_ms
        .saturating_add(simulation.budget_ms)
        .saturating_add(waits);
    if latest > MAX_EPOCH_MS {
        return fail(
            "simulation.start_ms",
            format!(
                "the clock could pass {MAX_EPOCH_MS} (the end of JavaScript's Date range): \
                 start_ms + budget_ms + every wait must stay below it"
            ),
        );
    }
    Ok(())
}

/// No backward `clock_jump` takes the clock before the epoch: the clock is
/// at least the start plus every wait and jump so far (time only adds to
/// it), and a jump that could take it below 0 is refused instead of the
/// clock stopping at 0.
fn check_clock_stays_after_the_epoch(
    simulation: &SimulationSpec,
    commands: &[Command],
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), CompileError> {
    let mut earliest = i128::from(simulation.start_ms);
    for (index, command) in commands.iter().enumerate() {
        match command {
            Command::Loop(LoopCommand::Wait(wait)) => earliest += i128::from(wait.ms),
            Command::Loop(LoopCommand::ClockJump(jump)) => {
                earliest += i128::from(jump.ms);
                if earliest < 0 {
                    return fail(
                        &format!("{}.ms", path_of(index)),
                        format!(
                            "this backward jump could take the clock {} ms before the epoch \
                             (start_ms plus the waits and jumps before it); JavaScript's Date \
                             starts at 0",
                            -earliest
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Scripted routes: each response either gives `parts` or uses the
/// shorthands, each part is an object with a string `type` or a
/// `{sleep_ms}` pause, and an error is either plain or a valid `LlmError`.
fn check_routes(routes: &[RouteSpec]) -> Result<(), CompileError> {
    for (route_index, route) in routes.iter().enumerate() {
        let resolutions = std::iter::once((format!("routes[{route_index}].model"), &route.model))
            .chain(route.models.iter().map(|(id, resolution)| {
                (format!("routes[{route_index}].models.{id}"), resolution)
            }));
        for (path, resolution) in resolutions {
            if let ModelResolution::Rejects(error) = resolution {
                check_scripted_error(&path, error)?;
            }
        }
        for (index, response) in route.responses.iter().enumerate() {
            let path = format!("routes[{route_index}].responses[{index}]");
            if response.uses_shorthand() && !response.parts.is_empty() {
                return fail(
                    &format!("{path}.parts"),
                    "give either `parts` or the shorthands (reasoning, text, tool_calls, usage, finish)",
                );
            }
            if response.hangs && response.error.is_some() {
                return fail(
                    &format!("{path}.hangs"),
                    "a response that hangs raises no error",
                );
            }
            for (part_index, part) in response.parts.iter().enumerate() {
                check_stream_part(&format!("{path}.parts[{part_index}]"), part)?;
            }
            if let Some(error) = &response.error {
                check_scripted_error(&format!("{path}.error"), error)?;
            }
        }
    }
    Ok(())
}

/// One part of a scripted stream (a route's response, a `serve`d one): an
/// adapter-level part, a pause or an act.
pub(super) fn check_stream_part(path: &str, part: &Value) -> Result<(), CompileError> {
    let Some(object) = part.as_object() else {
        return fail(path, "a part is an object");
    };
    let pause = object.len() == 1 && object.get("sleep_ms").is_some_and(Value::is_u64);
    if let (1, Some(op)) = (object.len(), object.get("act")) {
        check_route_act(&format!("{path}.act"), op)
    } else if !pause && !object.get("type").is_some_and(Value::is_string) {
        fail(
            path,
            "a part has a string `type`, or is a pause `{ sleep_ms = N }` or an act `{ act = op }`",
        )
    } else {
        Ok(())
    }
}

/// A route's `{ act = op }` part: one act op that does not wait (a pause
/// is its own part) and records nothing (a route receives no fields).
fn check_route_act(path: &str, op: &Value) -> Result<(), CompileError> {
    match serde_json::from_value::<ActOp>(op.clone()) {
        Err(error) => fail(path, format!("a route's act is one act op: {error}")),
        Ok(ActOp::SleepMs(_)) => fail(
            path,
            "a route pauses with a `{ sleep_ms = N }` part, not an act",
        ),
        Ok(ActOp::Record(_)) => fail(
            path,
            "a route's act cannot record: a route receives no fields",
        ),
        Ok(_) => Ok(()),
    }
}

/// An `LlmError`'s own constructor checks, so every implementation can build it.
fn check_scripted_error(path: &str, error: &ScriptedError) -> Result<(), CompileError> {
    if error.code.is_none()
        && (error.status.is_some()
            || error.provider_retry_after_ms.is_some()
            || error.request_id.is_some())
    {
        return fail(
            path,
            "status, provider_retry_after_ms and request_id need a `code`",
        );
    }
    if error.code.is_some() && error.message.is_empty() {
        return fail(
            &format!("{path}.message"),
            "an LlmError message is non-empty",
        );
    }
    if error.code.as_deref() == Some("") {
        return fail(&format!("{path}.code"), "an LlmError code is non-empty");
    }
    if error
        .status
        .is_some_and(|status| !(100..=599).contains(&status))
    {
        return fail(
            &format!("{path}.status"),
            "a status is from 100 through 599",
        );
    }
    if error.provider_retry_after_ms == Some(0) {
        return fail(
            &format!("{path}.provider_retry_after_ms"),
            "a retry-after is positive",
        );
    }
    if error.request_id.as_deref() == Some("") {
        return fail(&format!("{path}.request_id"), "a request id is non-empty");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_canonical_base64;

    #[test]
    fn canonical_base64_is_what_a_buffer_writes_back() {
        for canonical in ["", "AA==", "AAA=", "AAAA", "iVBORw0KGgo=", "+/+/"] {
            assert!(is_canonical_base64(canonical), "{canonical:?}");
        }
        // Unpadded, stray bits after the last byte, a bad symbol, padding
        // inside, too much padding.
        for refused in ["AA", "AB==", "AAB=", "A-A=", "A=AA", "A===", "AAAAA"] {
            assert!(!is_canonical_base64(refused), "{refused:?}");
        }
    }
}
