//! The loop level (spec 05–10): a case run inside turmoil, the reference
//! agent on one simulated host and the mock provider on another, all time
//! virtual and all randomness from the scenario's seed.
//!
//! [`run_loop_case`] executes a case's commands against a real
//! [`dshc_agent::Agent`] and reports the session log, the requests the
//! provider received and the agent's final state.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use mock_provider::MockProvider;
use serde_json::{Value, json};

use dshc_agent::scripted_route::{Resolution, ScriptedFailure, ScriptedResponse, ScriptedRoute};
use dshc_agent::transport::{Connection, Endpoint};
use dshc_agent::{
    AdapterRoute, Agent, AgentOptions, Ids, LoopContext, LoopLimits, PromptLayout, ToolCall,
    ToolOutcome, ToolRunner, WireRoute, user_message,
};
use dshc_deepseek::{DeepSeekConnection, DeepSeekDefaults, DeepSeekModel, resolve_model};
use dshc_model::js::JsValue;
use dshc_model::session::{Clock, Session, SessionMeta};
use dshc_model::{JsError, Registry, ScopeKey};
use dshc_scenario::protocol::{
    ActOp, AgentRun, AgentSpec, AssemblyCommand, Case, CaseResult, Command, JsJson, LayoutSection,
    LoopCommand, LoopRun, LoopWorld, MessageCommand, ModelResolution, Observation,
    PromptLayout as ProtocolLayout, ProviderRequest, RecordField, ScriptedError, ToolOp,
    ToolResultSpec,
};

mod commands;
pub(crate) mod grid;

use crate::assembly_level::AssemblyCommands;
use crate::driver::{Commands, run_commands};
use crate::loop_listeners::{self, Acting, ArmedTimers, Journal, ListenerWorld};
use crate::plugins::plugins_config;
use crate::scripted;
use crate::scripted::{World, config_of, dispose, observed};

/// The provider host name and port inside the simulation.
pub const PROVIDER_HOST: &str = "provider";
/// The provider port.
pub const PROVIDER_PORT: u16 = 443;

/// The DeepSeek wire route the world registers, if it does; the plugin's
/// refusal of its config, if it refuses it.
fn wire_route(world: &LoopWorld) -> Result<Option<(String, AdapterRoute)>, JsError> {
    let spec = &world.adapter;
    if !spec.registered {
        return Ok(None);
    }
    let mut deepseek = DeepSeekConnection {
        defaults: DeepSeekDefaults {
            thinking: spec.thinking.clone(),
            reasoning_effort: spec.reasoning_effort.clone(),
        },
        ..DeepSeekConnection::default()
    };

    if !spec.models.is_empty() {
        deepseek.models = spec
            .models
            .iter()
            .map(|m| DeepSeekModel {
                id: m.id.clone(),
                context_window: m.context_window,
                max_tokens: m.max_tokens,
                input_modalities: m
                    .input_modalities
                    .as_ref()
                    .map(|modalities| modalities.iter().map(|m| m.name().to_owned()).collect()),
            })
            .collect();
    }
    if let Some(window) = spec.default_context_window {
        deepseek.default_context_window = window;
    }
    if let Some(max_tokens) = spec.max_tokens {
        deepseek.max_tokens = max_tokens;
    }
    if let Some(timeout_ms) = spec.stream_idle_timeout_ms {
        deepseek.stream_idle_timeout_ms = timeout_ms;
    }
    if let Some(bound) = spec.max_request_image_bytes {
        deepseek.max_request_image_bytes = bound;
    }
    deepseek.validate()?;
    let models = deepseek
        .models
        .iter()
        .map(|m| (m.id.clone(), resolve_model(&deepseek, &m.id)))
        .collect();
    let connection = Rc::new(Connection {
        endpoint: Endpoint::Simulated {
            host: PROVIDER_HOST.into(),
            port: PROVIDER_PORT,
        },
        wire: spec.wire_options(),
        stream_idle_timeout_ms: deepseek.stream_idle_timeout_ms,
        api_key: "sk-dshc-simulated".into(),
        user_id: "dshc-user".into(),
    });
    let default_model = resolve_model(&deepseek, "");
    let route = AdapterRoute::Wire(WireRoute {
        models,
        default_model,
        connection,
    });
    Ok(Some((spec.provider.clone(), route)))
}

/// A scripted error as the agent's.
fn scripted_failure(error: &ScriptedError) -> ScriptedFailure {
    ScriptedFailure {
        message: error.message.clone(),
        code: error.code.clone(),
        status: error.status,
        provider_retry_after_ms: error.provider_retry_after_ms,
        request_id: error.request_id.clone(),
    }
}

/// A route's model resolution as the agent's.
fn route_resolution(resolution: &ModelResolution) -> Resolution {
    match resolution {
        ModelResolution::Returns(metadata) => Resolution::Returns(metadata.clone()),
        ModelResolution::Rejects(error) => Resolution::Rejects(scripted_failure(error)),
        ModelResolution::Blocks => Resolution::Blocks,
        ModelResolution::Pending => Resolution::Pending,
    }
}

/// What a scripted route's `{act = op}` part does: the act op on the agent
/// whose call the route answers, as a listener's would run (it records
/// nothing: a route receives no fields).
fn route_actor(
    journal: &Journal,
    armed_timers: &ArmedTimers,
    scripted: &Rc<World>,
    wall_clock: &Rc<std::cell::Cell<i64>>,
) -> dshc_agent::RouteActor {
    let (journal, armed_timers) = (journal.clone(), armed_timers.clone());
    let (scripted, wall_clock) = (scripted.clone(), wall_clock.clone());
    Rc::new(move |agent: &Agent, op: &Value| {
        let op: ActOp = serde_json::from_value(op.clone())
            .map_err(|error| JsError::error(format!("a route's act: {error}")))?;
        let world = ListenerWorld {
            journal: journal.clone(),
            scripted: scripted.clone(),
            armed_timers: armed_timers.clone(),
            wall_clock_jumped_ms: wall_clock.clone(),
        };
        let facts: loop_listeners::Facts = Rc::new(|_| Value::Null);
        Acting::new(agent.downgrade(), world, "route".into(), 0, facts).act(&op)
    })
}

/// The world's scripted routes, each with its own script cursor.
fn scripted_routes(world: &LoopWorld) -> Vec<Rc<ScriptedRoute>> {
    world
        .routes
        .iter()
        .map(|route| {
            let responses = route
                .responses
                .iter()
                .map(|response| ScriptedResponse {
                    delay_ms: response.delay_ms,
                    parts: response.expanded_parts(),
                    error: response.error.as_ref().map(scripted_failure),
                    hangs: response.hangs,
                })
                .collect();
            Rc::new(ScriptedRoute::new(
                route.provider.clone(),
                route_resolution(&route.model),
                route
                    .models
                    .iter()
                    .map(|(id, r)| (id.clone(), route_resolution(r)))
                    .collect(),
                responses,
            ))
        })
        .collect()
}

/// Register the routes a world starts with: the wire route, then each
/// scripted route marked `registered`, in order (upstream's plugin load order).
fn register_initial_routes(
    context: &LoopContext,
    world: &LoopWorld,
    scripted: &[Rc<ScriptedRoute>],
) -> Result<(), JsError> {
    if let Some((provider, route)) = wire_route(world)? {
        context.register_route(&provider, route)?;
    }
    for (spec, route) in world.routes.iter().zip(scripted) {
        if spec.registered {
            context.register_route(&spec.provider, AdapterRoute::Scripted(route.clone()))?;
        }
    }
    Ok(())
}

/// Scripted tool bodies: by name, in order, the last one repeating. Each
/// waits its `delay_ms`, runs its ops (registrations through the case's
/// registry, acts on the calling agent) and returns its result; a throw
/// becomes the runtime's rendering of a failed call.
fn tool_runner(
    results: &[ToolResultSpec],
    registry: &Registry,
    scripted: &Rc<World>,
    (journal, armed_timers, wall_clock): (&Journal, &ArmedTimers, &Rc<std::cell::Cell<i64>>),
) -> ToolRunner {
    let results: Rc<[ToolResultSpec]> = results.to_vec().into();
    let used: Rc<RefCell<BTreeMap<String, usize>>> = Rc::default();
    let (registry, scripted, journal) = (registry.clone(), scripted.clone(), journal.clone());
    let (armed_timers, wall_clock) = (armed_timers.clone(), wall_clock.clone());
    Rc::new(move |call: ToolCall| {
        let matching: Vec<ToolResultSpec> = results
            .iter()
            .filter(|r| r.name == call.name)
            .cloned()
            .collect();
        let Some(last) = matching.last().cloned() else {
            // A name with no scripted result is a tool nobody registered:
            // dsh-tools' runtime fails the call with its ToolNotFoundError.
            let unknown = JsError {
                name: "ToolNotFoundError".into(),
                code: Some("UNKNOWN_TOOL".into()),
                ..JsError::error(format!("unknown tool \"{}\"", call.name))
            };
            return Box::pin(async move { ToolOutcome::thrown(&unknown) });
        };
        let calls = {
            let mut used = used.borrow_mut();
            let count = used.entry(call.name.clone()).or_default();
            *count += 1;
            *count
        };
        let spec = matching.get(calls - 1).cloned().unwrap_or(last);
        let world = ListenerWorld {
            journal: journal.clone(),
            scripted: scripted.clone(),
            armed_timers: armed_timers.clone(),
            wall_clock_jumped_ms: wall_clock.clone(),
        };
        let (registry, scripted) = (registry.clone(), scripted.clone());
        Box::pin(async move {
            if spec.delay_ms > 0 {
                let delay_ms = dshc_model::js::timer_delay_ms(spec.delay_ms);
                mock_provider::sim_time::sleep(Duration::from_millis(delay_ms)).await;
            }
            match run_tool_ops(&spec, &call, calls, world, &registry, &scripted).await {
                Ok(()) => ToolOutcome {
                    text: spec.text.clone(),
                    content: spec.content.clone(),
                    is_error: spec.is_error,
                    error_info: None,
                    additional_contexts: spec.additional_contexts.clone(),
                    concludes_turn: spec.concludes_turn,
                },
                Err(error) => ToolOutcome::thrown(&error),
            }
        })
    })
}

async fn run_tool_ops(
    spec: &ToolResultSpec,
    call: &ToolCall,
    calls: usize,
    world: ListenerWorld,
    registry: &Registry,
    scripted: &Rc<World>,
) -> Result<(), JsError> {
    let facts = {
        let call = call.clone();
        Rc::new(move |field| match field {
            RecordField::CallId => json!(call.call_id),
            RecordField::Arguments => {
                serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!(call.arguments))
            }
            _ => json!(call.signal.is_aborted()),
        })
    };
    let acting = Acting::new(
        call.agent.clone(),
        world,
        spec.name.clone(),
        u32::try_from(calls).unwrap_or(u32::MAX),
        facts,
    );
    for op in &spec.ops {
        match op {
            ToolOp::WaitForAbort => {
                call.signal.aborted().await;
            }
            ToolOp::Register(registration) => {
                scripted::register(registration, &Rc::downgrade(scripted), registry)?
            }
            ToolOp::Dispose(target) => {
                dispose(target, &Rc::downgrade(scripted));
            }
            ToolOp::Act(op) => acting.run(std::slice::from_ref(op)).await?,
        }
    }
    Ok(())
}

/// The loop level's commands: the registry ones plus the agent's.
/// One agent of the world with the spec it was created from (a resume
/// with other options changes the spec).
struct LoopAgent {
    spec: AgentSpec,
    agent: Agent,
}

struct LoopCommands {
    assembly: AssemblyCommands,
    context: LoopContext,
    world: LoopWorld,
    /// The world's agents: `world.agent` first, then `world.agents`.
    agents: Vec<LoopAgent>,
    clock: Clock,
    /// Virtual time skipped while the agent was idle (see [`Command::Wait`]).
    skipped_ms: Rc<std::cell::Cell<u64>>,
    /// How far the wall clock was moved by `clock_jump` (timers are not).
    jumped_ms: Rc<std::cell::Cell<i64>>,
    /// The world's scripted routes, in `world.routes` order.
    routes: Vec<Rc<ScriptedRoute>>,
    /// What acting listeners recorded.
    journal: Journal,
    /// Scripted sleeps waiting on a timer (see [`Command::Wait`]).
    armed_timers: ArmedTimers,
}

impl LoopCommands {
    /// A new agent with the world's plugins installed.
    fn new_agent(
        context: &LoopContext,
        world: &LoopWorld,
        spec: &AgentSpec,
        session: Session,
        clock: &Clock,
    ) -> Result<Agent, JsError> {
        let options = AgentOptions {
            provider: spec.provider.as_str().map(str::to_string),
            model: spec.model.as_str().map(str::to_string),
            max_tokens: JsValue::from_encoded(&spec.max_tokens.0),
        };
        let agent = Agent::new(
            context.clone(),
            &spec.id,
            ScopeKey::new(&spec.id),
            options,
            session,
        )?;
        dshc_agent::plugins::install(&agent, &plugins_config(&world.plugins), clock)?;
        Ok(agent)
    }

    fn message(&self, command: &MessageCommand) -> Value {
        let source = command
            .source
            .clone()
            .unwrap_or_else(|| json!({"kind": "user"}));
        user_message(&self.context.ids, command.blocks(), source)
    }

    /// The position of the agent a command names (default: the first).
    fn position(&self, id: &Option<String>) -> usize {
        id.as_deref()
            .and_then(|id| self.agents.iter().position(|a| a.spec.id == id))
            .unwrap_or(0)
    }

    /// The agent a command names (default: the first).
    fn agent(&self, id: &Option<String>) -> &Agent {
        &self.agents[self.position(id)].agent
    }

    /// What a scripted listener on the named agent shares: the run's
    /// journal, and how to dispose that agent without waiting for it.
    fn listener_world(&self) -> ListenerWorld {
        ListenerWorld {
            journal: self.journal.clone(),
            scripted: self.assembly.world.clone(),
            armed_timers: self.armed_timers.clone(),
            wall_clock_jumped_ms: self.jumped_ms.clone(),
        }
    }

    /// Dispose every registration made on an agent's scope.
    fn drop_agent_scope(&self, id: &str) {
        for disposer in self.assembly.world.disposers_in(id) {
            disposer.dispose();
        }
    }

    /// The world's scripted route for `provider` (the compiler checked it exists).
    /// The world's `index`-th scripted route named `provider`.
    fn route(&self, provider: &str, index: usize) -> Result<Rc<ScriptedRoute>, JsError> {
        self.world
            .routes
            .iter()
            .zip(&self.routes)
            .filter(|(spec, _)| spec.provider == provider)
            .nth(index)
            .map(|(_, route)| route.clone())
            .ok_or_else(|| JsError::error(format!("no scripted route {provider:?}")))
    }

    fn remove_loop_listener(&self, id: &str) {
        let listener = loop_listeners::listener_id(id);
        for LoopAgent { agent, .. } in &self.agents {
            let listeners = agent.listeners();
            listeners.pre_step.remove(listener);
            listeners.request.remove(listener);
            listeners.request_error.remove(listener);
            listeners.turn_stopping.remove(listener);
            listeners.status.remove(listener);
            agent.session().remove_listener(listener);
        }
        self.context.llm_stream.remove(listener);
    }
}

impl Commands for LoopCommands {
    async fn run(
        &mut self,
        command: &Command,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        match command {
            Command::Assembly(AssemblyCommand::Dispose(c)) => self.dispose(c),
            Command::Assembly(command) => self.assembly.run(command, observation).await,
            Command::Loop(command) => self.run_loop_command(command, observation).await,
        }
    }
}

impl LoopCommands {
    /// A command that acts on the agents, their sessions or the world.
    async fn run_loop_command(
        &mut self,
        command: &LoopCommand,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        match command {
            LoopCommand::Followup(m) => self.agent(&m.agent).followup(self.message(m)),
            LoopCommand::Steer(m) => self.agent(&m.agent).steer(self.message(m)),
            LoopCommand::Inject(m) => self.agent(&m.agent).inject(self.message(m)),
            LoopCommand::Cancel(c) => self.cancel(c),
            LoopCommand::Wait(c) => self.wait(c).await,
            LoopCommand::WaitIdle(c) => self.wait_idle(c).await,
            LoopCommand::Compact(c) => self.compact(c),
            LoopCommand::Resume(c) => self.resume(c).await,
            LoopCommand::DisposeAgent(c) => self.dispose_agent(c).await,
            LoopCommand::OnPreStep(c) => self.listen(c, loop_listeners::on_pre_step),
            LoopCommand::OnRequest(c) => self.listen(c, loop_listeners::on_request),
            LoopCommand::OnRequestError(c) => self.listen(c, loop_listeners::on_request_error),
            LoopCommand::OnTurnStopping(c) => self.listen(c, loop_listeners::on_turn_stopping),
            LoopCommand::OnStatus(c) => self.listen(c, loop_listeners::on_status),
            LoopCommand::OnSessionEvent(c) => self.listen(c, loop_listeners::on_session_event),
            LoopCommand::OnSessionAppend(c) => self.listen(c, loop_listeners::on_session_append),
            LoopCommand::OnLlmStream(c) => self.listen(c, loop_listeners::on_llm_stream),
            LoopCommand::Plugin(action) => self.plugin(action),
            LoopCommand::Append(c) => self.append(c, observation),
            LoopCommand::ReadSession(c) => self.read_session(c, observation),
            LoopCommand::FirePreStep(c) => self.fire_pre_step(c, observation).await,
            LoopCommand::ClockJump(c) => self.clock_jump(c),
            LoopCommand::RegisterRoute(c) => self.register_route(c),
            LoopCommand::UnregisterRoute(c) => self.unregister_route(c),
            LoopCommand::SettleModel(c) => self.settle_model(c),
        }
    }
}

/// A layout in protocol form, each section named by the layer and the
/// scenario command that registered it.
fn layout_of(agent: &str, layout: PromptLayout, commands: &[Command]) -> ProtocolLayout {
    let sections = layout
        .sections
        .into_iter()
        .map(|section| {
            let scope = section
                .layer
                .clone()
                .map(|scope| scope.map(|s| s.to_string()));
            let registration = scope.as_ref().and_then(|scope| {
                commands.iter().find_map(|command| match command {
                    Command::Assembly(AssemblyCommand::Section(c))
                        if c.name == section.name && c.scope == *scope =>
                    {
                        c.id.clone()
                    }
                    _ => None,
                })
            });
            LayoutSection {
                name: section.name,
                text: section.text,
                registered_in: scope.map(|scope| {
                    scope.map_or_else(|| "global".to_owned(), |key| format!("scope {key}"))
                }),
                registration,
            }
        })
        .collect();
    ProtocolLayout {
        agent: agent.to_owned(),
        system: layout.system,
        sections,
    }
}

/// A fresh simulation of `simulation` (seed, latency, budget) ticking
/// `tick`, with no host yet: the network every loop case runs on.
pub(crate) fn simulation<'a>(
    simulation: &dshc_scenario::protocol::SimulationSpec,
    tick: Duration,
) -> turmoil::Sim<'a> {
    turmoil::Builder::new()
        .rng_seed(simulation.seed)
        .min_message_latency(Duration::from_millis(simulation.latency_ms))
        .max_message_latency(Duration::from_millis(simulation.latency_ms))
        .simulation_duration(Duration::from_millis(simulation.budget_ms))
        .tick_duration(tick)
        .build()
}

/// A fresh simulation (see `simulation`, 1 ms ticks) with `provider`
/// served on its host [`PROVIDER_HOST`]:[`PROVIDER_PORT`]: the network
/// every loop case runs on, the reference's agent or a bridged
/// implementation's requests (`adapter::bridge`).
pub fn provider_simulation<'a>(
    provider: &MockProvider,
    spec: &dshc_scenario::protocol::SimulationSpec,
) -> turmoil::Sim<'a> {
    provider_simulation_ticking(provider, spec, mock_provider::sim_time::TICK)
}

fn provider_simulation_ticking<'a>(
    provider: &MockProvider,
    spec: &dshc_scenario::protocol::SimulationSpec,
    tick: Duration,
) -> turmoil::Sim<'a> {
    let mut sim = simulation(spec, tick);
    let host_provider = provider.clone();
    sim.host(PROVIDER_HOST, move || {
        let provider = host_provider.clone();
        async move {
            mock_provider::sim_time::enlist();
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PROVIDER_PORT)).await?;
            mock_provider::serve_turmoil(listener, provider).await?;
            Ok(())
        }
    });
    sim
}

/// Run a loop-level case in a fresh simulation, the mock provider in
/// process: as `ticks` says, on the case's grid (`grid::tick_of`) and again
/// at 1 ms if a timer fell off it, or at 1 ms.
pub(crate) fn run_loop_case(case: &Case, limits: LoopLimits, ticks: crate::Ticks) -> CaseResult {
    let Some(world) = &case.world else {
        return failed_run("a loop case needs its world");
    };
    let every_ms = mock_provider::sim_time::TICK;
    let tick = match ticks {
        crate::Ticks::CaseGrid => grid::tick_of(case),
        crate::Ticks::Grid(tick) => tick,
        crate::Ticks::EveryMs => every_ms,
    };
    if tick > every_ms
        && let Some(result) = run_in_process(case, world, limits, tick)
    {
        return result;
    }
    run_in_process(case, world, limits, every_ms)
        .unwrap_or_else(|| failed_run("a 1 ms run cannot leave its grid"))
}

/// One run of `run_loop_case` on a `tick` grid; `None` if it left the grid.
fn run_in_process(
    case: &Case,
    world: &LoopWorld,
    limits: LoopLimits,
    tick: Duration,
) -> Option<CaseResult> {
    let provider = match MockProvider::new(world.provider.clone()) {
        Ok(provider) => provider,
        Err(error) => return Some(failed_run(&error.to_string())),
    };
    let sim = provider_simulation_ticking(&provider, &world.simulation, tick);
    run_agent_ticking(sim, case, Some(provider), limits, tick)
}

/// Run a loop case's agent on `sim`, whose provider host is in place and
/// which ticks 1 ms. `provider` is that host's mock provider when it runs
/// in process: its request log is the run's `requests`; without it they
/// stay empty (the harness that answered the requests fills them in).
pub(crate) fn run_agent_in(
    sim: turmoil::Sim<'_>,
    case: &Case,
    provider: Option<MockProvider>,
    limits: LoopLimits,
) -> CaseResult {
    let tick = mock_provider::sim_time::TICK;
    run_agent_ticking(sim, case, provider, limits, tick)
        .unwrap_or_else(|| failed_run("a 1 ms run cannot leave its grid"))
}

/// [`run_agent_in`] on a `sim` ticking `tick`; `None` if a timer fell off
/// its grid.
fn run_agent_ticking(
    mut sim: turmoil::Sim<'_>,
    case: &Case,
    provider: Option<MockProvider>,
    limits: LoopLimits,
    tick: Duration,
) -> Option<CaseResult> {
    // The agent's host owns its copy of the case; the world moves out of
    // it into the run (one copy of each per run).
    let mut case = case.clone();
    let Some(world) = case.world.take() else {
        return Some(failed_run("a loop case needs its world"));
    };
    let output: Rc<RefCell<Option<CaseResult>>> = Rc::new(RefCell::new(None));
    let sink = output.clone();
    let client_provider = provider.clone();
    let budget = Duration::from_millis(world.simulation.budget_ms);
    let latency = Duration::from_millis(world.simulation.latency_ms);
    // Boxed: the run's future is many kilobytes, and turmoil and tokio
    // move it by value several times on the way into its task.
    sim.client(
        "agent-host",
        Box::pin(async move {
            mock_provider::sim_time::enlist();
            let result = drive(&case, world, client_provider.as_ref(), limits).await;
            *sink.borrow_mut() = Some(result);
            Ok(())
        }),
    );
    // The provider's host and the agent's: idle time is skipped.
    let finished = match mock_provider::sim_time::run_on_grid(&mut sim, budget, latency, tick, 2) {
        mock_provider::sim_time::GridRun::Exact(finished) => finished,
        mock_provider::sim_time::GridRun::OffGrid { .. } => return None,
    };
    let mut result = output.borrow_mut().take().unwrap_or_default();
    if let Err(error) = finished {
        let run = result.run.get_or_insert_with(LoopRun::default);
        run.failure = Some(format!("the simulation did not finish: {error}"));
        run.requests = provider.as_ref().map(provider_requests).unwrap_or_default();
    }
    Some(result)
}

pub(crate) fn failed_run(message: &str) -> CaseResult {
    CaseResult {
        run: Some(LoopRun {
            failure: Some(message.to_string()),
            ..LoopRun::default()
        }),
        ..CaseResult::default()
    }
}

/// The world's agents, `world.agent` first, each created as
/// `agentLoop.createAgent` creates one: a session id already in the store
/// is refused before anything else.
fn create_agents(
    context: &LoopContext,
    world: &LoopWorld,
    clock: &Clock,
) -> Result<Vec<LoopAgent>, JsError> {
    let mut agents: Vec<LoopAgent> = Vec::new();
    for spec in std::iter::once(&world.agent).chain(&world.agents) {
        if agents.iter().any(|a| a.spec.id == spec.id) {
            return Err(JsError::error(format!(
                "session \"{}\" already exists",
                spec.id
            )));
        }
        let session = new_session(spec, clock)?;
        let agent = LoopCommands::new_agent(context, world, spec, session, clock)?;
        agents.push(LoopAgent {
            spec: spec.clone(),
            agent,
        });
    }
    Ok(agents)
}

/// `agentLoop.createAgent`'s session: one id for the agent and its session,
/// the header validated from the agent spec's `meta` fields.
fn new_session(spec: &AgentSpec, clock: &Clock) -> Result<Session, JsError> {
    let js = |value: &JsJson| JsValue::from_encoded(&value.0);
    let meta = SessionMeta {
        cwd: js(&spec.cwd),
        parent_session: js(&spec.parent_session),
        seed_length: js(&spec.seed_length),
        origin: js(&spec.origin),
        delegation_depth: js(&spec.delegation_depth),
        agent_preset: js(&spec.agent_preset),
    };
    let seed: Option<Vec<JsValue>> = spec.seed.as_ref().map(|seed| seed.iter().map(js).collect());
    Session::create(&spec.id, &meta, seed.as_deref(), clock.clone())
}

/// What `provider` received: every request that carried a JSON body, in
/// arrival order, with its headers and the cache-hit tokens it was answered with.
pub fn provider_requests(provider: &MockProvider) -> Vec<ProviderRequest> {
    provider_requests_of(provider.requests())
}

/// [`provider_requests`] of a logged request list.
fn provider_requests_of(log: Vec<mock_provider::LoggedRequest>) -> Vec<ProviderRequest> {
    log.into_iter()
        .filter_map(|r| {
            Some(ProviderRequest {
                headers: r
                    .headers
                    .into_iter()
                    .map(|(name, value)| [name, value])
                    .collect(),
                body: r.body_json?,
                cache_hit_tokens: r.usage.map(|u| u.prompt_cache_hit_tokens),
            })
        })
        .collect()
}

async fn drive(
    case: &Case,
    world: LoopWorld,
    provider: Option<&MockProvider>,
    limits: LoopLimits,
) -> CaseResult {
    let registry = match Registry::new(config_of(&case.config)) {
        Ok(registry) => registry,
        Err(error) => {
            return CaseResult {
                config_error: Some(observed(&error)),
                ..CaseResult::default()
            };
        }
    };
    let clock = CaseClock::starting_at(world.simulation.start_ms);
    let scripted = Rc::new(World::default());
    let (journal, armed_timers) = (Journal::default(), ArmedTimers::default());
    let context = LoopContext {
        registry: registry.clone(),
        adapters: Rc::default(),
        llm_calls: Rc::default(),
        tools: tool_runner(
            &world.tool_results,
            &registry,
            &scripted,
            (&journal, &armed_timers, &clock.jumped_ms),
        ),
        ids: Ids::default(),
        live_events: Rc::new(RefCell::new(Vec::new())),
        plugin_world: Default::default(),
        limits,
        limit_reached: Rc::new(RefCell::new(None)),
        steps_opened: Rc::new(std::cell::Cell::new(0)),
        turns_started: Rc::new(std::cell::Cell::new(0)),
        request_bytes: Rc::new(std::cell::Cell::new(0)),
        route_actor: Some(route_actor(
            &journal,
            &armed_timers,
            &scripted,
            &clock.jumped_ms,
        )),
        llm_stream: Rc::default(),
    };
    let routes = scripted_routes(&world);
    let setup = context
        .register_loop_services()
        .and_then(|()| register_initial_routes(&context, &world, &routes))
        .and_then(|()| create_agents(&context, &world, &clock.clock));
    let agents = match setup {
        Ok(agents) => agents,
        Err(error) => return failed_run(&format!("setup failed: {error}")),
    };
    let mut runner = LoopCommands {
        assembly: AssemblyCommands {
            registry: registry.clone(),
            world: scripted.clone(),
        },
        context,
        world,
        agents,
        clock: clock.clock,
        skipped_ms: clock.skipped_ms,
        jumped_ms: clock.jumped_ms,
        routes,
        journal,
        armed_timers,
    };
    let observations = run_commands(&case.commands, &registry, &scripted, &mut runner).await;
    for LoopAgent { agent, .. } in &runner.agents {
        agent.when_idle().await;
    }
    CaseResult {
        config_error: None,
        observations,
        run: Some(finished_run(&runner, case, provider)),
    }
}

/// A case's clock: virtual time since the start, plus the milliseconds
/// `wait` skipped while every agent was idle and the (signed) `clock_jump`s.
struct CaseClock {
    clock: Clock,
    skipped_ms: Rc<std::cell::Cell<u64>>,
    jumped_ms: Rc<std::cell::Cell<i64>>,
}

impl CaseClock {
    fn starting_at(start_ms: u64) -> CaseClock {
        let start = tokio::time::Instant::now();
        let skipped_ms = Rc::new(std::cell::Cell::new(0u64));
        let jumped_ms = Rc::new(std::cell::Cell::new(0i64));
        let (skipped, jumped) = (skipped_ms.clone(), jumped_ms.clone());
        // Saturating: a clock that would pass the end of JavaScript's `Date`
        // range stops there, and one jumped back past the epoch stops at 0;
        // the loader refuses worlds that could do either.
        let clock: Clock = Rc::new(move || {
            let elapsed = tokio::time::Instant::now()
                .duration_since(start)
                .as_millis();
            let monotonic = start_ms
                .saturating_add(skipped.get())
                .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX));
            monotonic.saturating_add_signed(jumped.get())
        });
        CaseClock {
            clock,
            skipped_ms,
            jumped_ms,
        }
    }
}

/// What a finished case's run observed: every agent's log, status and
/// inbox, the provider's traffic (when it runs in process), the scripted
/// routes' calls and the prompt layouts. The run is over, so each record is
/// moved out of where it was kept, not copied.
fn finished_run(runner: &LoopCommands, case: &Case, provider: Option<&MockProvider>) -> LoopRun {
    let mut agent_runs: Vec<AgentRun> = runner
        .agents
        .iter()
        .map(|LoopAgent { spec, agent }| {
            let (next_turn, next_step) = agent.pending();
            AgentRun {
                id: spec.id.clone(),
                log: agent.session().take_log_json(),
                status: agent.status().as_str().to_owned(),
                pending: [next_turn, next_step],
            }
        })
        .collect();
    let prompt_layouts = runner
        .agents
        .iter()
        .flat_map(|LoopAgent { spec, agent }| {
            agent
                .prompt_layouts()
                .into_iter()
                .map(|layout| layout_of(&spec.id, layout, &case.commands))
        })
        .collect();
    let main = agent_runs.remove(0);
    let llm_calls = runner.context.llm_calls.take();
    LoopRun {
        log: main.log,
        requests: provider
            .map(|provider| provider_requests_of(provider.take_requests()))
            .unwrap_or_default(),
        llm_requests: llm_calls.into_iter().map(|call| call.request).collect(),
        status: main.status,
        pending: main.pending,
        live_events: runner.context.live_events.take(),
        failure: runner
            .context
            .limit_reached
            .borrow()
            .as_ref()
            .map(|limit| format!("limit reached: {limit}")),
        agents: agent_runs,
        journal: runner.journal.take(),
        prompt_layouts,
    }
}
