//! Turning a parsed scenario into a [`Case`]: semantic validation, default
//! ids, and each step's command without its expectation.
//!
//! Everything an implementation needs is resolved here, once, so adapters in
//! other languages never re-implement scenario defaults.
//!
//! This module holds the entry points and the level checks; the checks
//! themselves are split by what they look at: `commands` (each command,
//! and the default ids it fills), `expect` (the expectations' patterns)
//! and `world` (a loop case's world). Every refusal goes through one
//! `fail` call, so `tests/it/refusals.rs` can count them.

mod commands;
mod event_types;
mod expect;
mod step_inputs;
mod world;

use crate::format::{FORMAT_VERSION, Scenario};
use crate::protocol::{
    AssemblyCommand, BindCommand, Case, Command, Level, ListenerOp, LoopCommand, LoopWorld,
    RouteResponse, RouteSpec,
};
use commands::Compiler;
use expect::check_expectations;
use world::check_world;

/// The most virtual time a loop case may span (`simulation.budget_ms`; a
/// `wait` while every agent is idle jumps the clock and does not count).
/// Time in which every host waits on a timer is skipped at the cost of one
/// step (`mock_provider::sim_time`) but counts; a busy millisecond costs a
/// step of real CPU, so this bounds a case's running time.
pub const MAX_VIRTUAL_TIME_MS: u64 = 86_400_000;
/// The latest epoch milliseconds a simulated clock may reach: the end of
/// JavaScript's `Date` range. A world whose start, budget and waits could
/// pass it is refused, so the clock never wraps.
pub const MAX_EPOCH_MS: u64 = 8_640_000_000_000_000;

/// A scenario that parses but does not make sense.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{path}: {message}")]
pub struct CompileError {
    /// Where in the scenario, e.g. `steps[3].provider`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Refuse, naming where in the scenario and what is wrong.
fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, CompileError> {
    Err(CompileError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// Compile a scenario into the case an implementation runs.
pub fn compile(id: &str, scenario: &Scenario) -> Result<Case, CompileError> {
    check_format_version(scenario.format)?;
    check_expectations(scenario)?;
    event_types::check_event_types(scenario)?;
    if scenario.covers.is_empty() {
        return fail("covers", "name at least one spec clause");
    }
    if scenario.config_error.is_some() && !scenario.steps.is_empty() {
        return fail(
            "config_error",
            "a scenario whose config fails to load has no steps",
        );
    }
    let binds = scenario.scopes.len();
    let commands: Vec<Command> = scenario
        .scopes
        .iter()
        .map(|binding| {
            Command::Assembly(AssemblyCommand::Bind(BindCommand {
                scope: binding.name.clone(),
                parent: binding.parent.clone(),
            }))
        })
        .chain(scenario.steps.iter().map(|step| step.command.clone()))
        .collect();
    let mut commands = commands;
    step_inputs::bind_step_refs(scenario, binds, &mut commands)?;
    let mut case = Case {
        id: id.to_string(),
        level: scenario.level,
        config: scenario.config.clone(),
        commands,
        world: world_of(scenario)?,
    };
    let step_path = |index: usize| match index.checked_sub(binds) {
        Some(step) => format!("steps[{step}]"),
        None => format!("scopes[{index}]"),
    };
    check_case(&mut case, &step_path)?;
    Ok(case)
}

/// This dshc reads format 2; a format 1 scenario is pointed at `dshc migrate`.
fn check_format_version(format: u32) -> Result<(), CompileError> {
    if format == 1 {
        return fail(
            "format",
            format!(
                "scenario format 1 is no longer read; `dshc migrate <file>` rewrites it as \
                 format {FORMAT_VERSION}, keeping what it asserts"
            ),
        );
    }
    if format != FORMAT_VERSION {
        return fail(
            "format",
            format!("unsupported scenario format {format} (this dshc reads {FORMAT_VERSION})"),
        );
    }
    Ok(())
}

/// The world a scenario describes: none at the assembly level, which may
/// not describe one; at the loop level every default resolved and the
/// routes' shorthands expanded.
fn world_of(scenario: &Scenario) -> Result<Option<LoopWorld>, CompileError> {
    let loop_parts = scenario.agent.is_some()
        || !scenario.agents.is_empty()
        || scenario.provider.is_some()
        || scenario.adapter.is_some()
        || scenario.simulation.is_some()
        || !scenario.tool_results.is_empty()
        || scenario.plugins.is_some()
        || !scenario.routes.is_empty()
        || scenario.expect.is_some();
    match scenario.level {
        Level::Assembly if loop_parts => fail(
            "level",
            "agent, provider, adapter, simulation, tool_results, routes and expect need `level = \"loop\"`",
        ),
        Level::Assembly => Ok(None),
        Level::Loop => {
            let mut world = LoopWorld {
                agent: scenario.agent.clone().unwrap_or_default(),
                agents: scenario.agents.clone(),
                provider: scenario.provider.clone().unwrap_or_default(),
                adapter: scenario.adapter.clone().unwrap_or_default(),
                simulation: scenario.simulation.clone().unwrap_or_default(),
                tool_results: scenario.tool_results.clone(),
                plugins: scenario.plugins.clone().unwrap_or_default(),
                routes: scenario.routes.clone(),
            };
            expand_route_shorthands(&mut world.routes);
            Ok(Some(world))
        }
    }
}

/// Adapters see parts only: each response given in shorthands becomes the
/// parts they stand for.
fn expand_route_shorthands(routes: &mut [RouteSpec]) {
    for response in routes.iter_mut().flat_map(|r| r.responses.iter_mut()) {
        if response.uses_shorthand() && response.parts.is_empty() {
            *response = RouteResponse {
                delay_ms: response.delay_ms,
                parts: response.expanded_parts(),
                error: response.error.take(),
                hangs: response.hangs,
                ..RouteResponse::default()
            };
        }
    }
}

/// Check a case the way [`compile`] checks the cases it makes: for cases
/// that arrive from elsewhere (`dshc adapter` reads them from any client).
pub fn validate_case(case: &Case) -> Result<(), CompileError> {
    let mut copy = case.clone();
    check_case(&mut copy, &|index| format!("commands[{index}]"))
}

/// Fill default ids and check every command, the dispose targets and the
/// level. Filling is idempotent, so a compiled case passes unchanged.
fn check_case(case: &mut Case, path_of: &dyn Fn(usize) -> String) -> Result<(), CompileError> {
    let mut compiler = Compiler::default();
    for (index, command) in case.commands.iter_mut().enumerate() {
        compiler.command(&path_of(index), command)?;
        step_inputs::check_step_refs(index, &path_of(index), command)?;
    }
    if let Some(world) = case.world.as_mut() {
        compiler.tool_results(&mut world.tool_results)?;
    }
    compiler.check_dispose_targets()?;
    match (case.level, &case.world) {
        (Level::Assembly, _) => match case.commands.iter().position(needs_loop) {
            Some(index) => fail(&path_of(index), "this step needs `level = \"loop\"`"),
            None => Ok(()),
        },
        (Level::Loop, None) => fail("world", "a loop case needs its world"),
        (Level::Loop, Some(world)) => match case.commands.iter().position(records_assembly) {
            Some(index) => fail(
                &path_of(index),
                "an assemble listener's `record` is assembly level only: at the loop level the \
                 agent's own assemblies run between steps, where no step's `records` sees them",
            ),
            None => check_world(world, &case.commands, path_of),
        },
    }
}

/// Commands and listener ops that only make sense around an agent: every
/// [`LoopCommand`], and a listener that waits for an abort or sleeps.
pub fn needs_loop(command: &Command) -> bool {
    match command {
        Command::Assembly(AssemblyCommand::Listen(listen)) => listen
            .ops
            .iter()
            .any(|op| matches!(op, ListenerOp::WaitForAbort | ListenerOp::SleepMs(_))),
        Command::Assembly(_) => false,
        Command::Loop(_) => true,
    }
}

/// A `system-prompt/assemble` listener with a `record` op.
fn records_assembly(command: &Command) -> bool {
    matches!(command, Command::Assembly(AssemblyCommand::Listen(listen))
        if listen.ops.iter().any(|op| matches!(op, ListenerOp::Record(_))))
}

/// The agent a loop command names with `agent`, if any.
pub fn addressed_agent(command: &Command) -> Option<&str> {
    let Command::Loop(command) = command else {
        return None;
    };
    let agent = match command {
        LoopCommand::Followup(c) | LoopCommand::Steer(c) | LoopCommand::Inject(c) => &c.agent,
        LoopCommand::Cancel(c) => &c.agent,
        LoopCommand::WaitIdle(c) => &c.agent,
        LoopCommand::Compact(c) => &c.agent,
        LoopCommand::Resume(c) => &c.agent,
        LoopCommand::DisposeAgent(c) => &c.agent,
        LoopCommand::OnPreStep(c) => &c.agent,
        LoopCommand::OnRequest(c) => &c.agent,
        LoopCommand::OnRequestError(c) => &c.agent,
        LoopCommand::OnTurnStopping(c) => &c.agent,
        LoopCommand::OnStatus(c) => &c.agent,
        LoopCommand::OnSessionEvent(c) => &c.agent,
        LoopCommand::OnSessionAppend(c) => &c.agent,
        LoopCommand::OnLlmStream(c) => &c.agent,
        LoopCommand::Append(c) => &c.agent,
        LoopCommand::ReadSession(c) => &c.agent,
        LoopCommand::FirePreStep(c) => &c.agent,
        LoopCommand::Wait(_)
        | LoopCommand::Plugin(_)
        | LoopCommand::ClockJump(_)
        | LoopCommand::RegisterRoute(_)
        | LoopCommand::UnregisterRoute(_)
        | LoopCommand::SettleModel(_) => return None,
    };
    agent.as_deref()
}
