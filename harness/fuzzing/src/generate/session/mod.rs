//! Seeded random loop sessions for `dshc sim`: registrations that change
//! between steps, provider faults and retries, tool rounds, steering,
//! cancels, compaction, suppression and resume, all from one seed.
//!
//! Session `k` of seed `s` comes from its own stream, so one session replays
//! alone with `--seed s --session k`. The generator keeps to situations
//! whose invariants it can state (see [`SessionFacts`]).

use mock_provider::{FaultKind, Fragments, Script, ScriptEntry, ScriptToolCall};
use serde_json::json;

mod hooks;
mod images;
mod session_api;
mod settings;
mod variety;
mod world;

use images::ImageWorld;
use settings::{refused_at_creation, refused_deployment};
use world::WorldParts;

use super::case_rng;
use super::rng::SplitMix64;
use super::swarm::{CaseSwarm, Feature, Swarm, feature};
use dshc_model::session::event_kind;
use dshc_scenario::format::*;
use dshc_scenario::protocol::*;

/// The optional parts of a session, with the range of odds a seed draws for
/// each (percent per chance to make one): the faults and the actions between
/// and inside turns.
pub const FEATURES: &[Feature] = &[
    feature("fault", 2, 50),
    feature("rate_limit", 100, 100),
    feature("server_error", 100, 100),
    feature("malformed_json", 100, 100),
    feature("missing_done", 100, 100),
    feature("drop_connection", 100, 100),
    feature("context_overflow", 100, 100),
    feature("http_error", 100, 100),
    feature("stall", 100, 100),
    feature("no_content", 100, 100),
    feature("close_before_head", 100, 100),
    feature("retry", 30, 100),
    feature("steer", 2, 40),
    feature("inject", 2, 30),
    feature("cancel", 2, 30),
    feature("compact", 2, 30),
    feature("suppress", 2, 20),
    feature("resume", 2, 25),
    feature("long_wait", 5, 50),
    feature("clock_jump", 2, 30),
    feature("pre_step_message", 2, 20),
    feature("observers", 2, 60),
    feature("session_api", 2, 30),
    feature("registry", 2, 30),
    feature("headers", 2, 20),
    feature("dispose_agent", 2, 30),
    feature("second_agent", 2, 40),
    feature("routes", 2, 40),
    feature("time_context", 2, 40),
    feature("tmux_context", 2, 40),
    feature("dispose_plugin", 2, 30),
    feature("pending_model", 5, 50),
    feature("route_act", 5, 50),
    // Times on the 1 ms grid, for fine interleavings; a session without it
    // draws every duration on a coarser grid, which the reference then
    // ticks on (`dshc-reference`'s `loop_level::grid`).
    feature("fine_time", 20, 60),
    // The DeepSeek deployment's own settings (catalog, defaults, thinking).
    feature("deployment", 2, 40),
    // The first agent's options and session meta off their defaults, valid
    // or not; a resume that changes them.
    feature("agent_options", 2, 30),
    // Tool results other than a plain success: contexts for the
    // next step, a concluded turn, time taken, a body that throws or
    // cancels and sends.
    feature("tool_outcomes", 2, 50),
    // Images: stored in the deployment's attachment service (or not), shown
    // in prompts and tool results, to a model that accepts them (or not).
    feature("images", 2, 40),
    // A hook inside the first agent's session appends that vetoes one kind
    // of event (`on_session_append`).
    feature("session_hooks", 2, 30),
    // The rarer paths of `variety.rs`: the agent-instructions and
    // session-reference plugins, listeners that decide a turn, answers cut
    // at max_tokens, prompts with their own source, a resume onto another
    // model.
    feature("agent_instructions", 2, 40),
    feature("session_reference", 2, 40),
    feature("deciding_listeners", 2, 30),
    feature("max_tokens", 2, 30),
    feature("message_sources", 2, 30),
    feature("resume_options", 20, 60),
    feature("tool_order_failure", 2, 10),
];

/// The grids a session's durations are drawn on when it does not keep
/// `fine_time`, in ms.
const COARSE_TICKS_MS: &[u64] = &[2, 5, 10];

/// Separates the loop generator's swarm from the assembly one's.
const SALT: u64 = 0x5E55_1011_0000_0002;

/// The swarm of seed `seed` for loop sessions.
pub fn swarm(seed: u64) -> Swarm {
    Swarm::of_seed(seed, SALT, FEATURES)
}

/// Facts about a generated session, for invariants beyond the universal
/// ones. Derived from the scenario itself, so they stay true while a
/// failing session is shrunk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFacts {
    /// The text of a static, global complete section registered before any turn.
    pub complete_text: Option<String>,
    /// Whether a global suppressor is registered at some point (it survives resume).
    pub suppressed: bool,
    /// Whether the deployment or the first agent has a setting its setup
    /// refuses (then the run must fail its setup, and nothing else).
    pub refused_at_setup: bool,
    /// Whether a session append hook is registered: then a step may fail
    /// with its veto, or with the reentry refusal of a hook that appends.
    pub hooked: bool,
}

impl SessionFacts {
    /// The facts of a scenario shaped like the generator's.
    pub fn of(scenario: &Scenario) -> SessionFacts {
        let before_first_turn = scenario
            .steps
            .iter()
            .map(|s| &s.command)
            .take_while(|c| !matches!(c, Command::Loop(LoopCommand::Followup(_))));
        let complete_text = before_first_turn
            .filter_map(|step| match step {
                Command::Assembly(AssemblyCommand::Section(s))
                    if s.complete && s.scope.is_none() =>
                {
                    match &s.text {
                        TextSpec::Static(text) => Some(text.clone()),
                        TextSpec::Provider(_) => None,
                    }
                }
                _ => None,
            })
            .next();
        let suppressed = scenario
            .steps
            .iter()
            .any(|s| matches!(&s.command, Command::Assembly(AssemblyCommand::Suppress(s)) if s.scope.is_none()));
        SessionFacts {
            complete_text,
            suppressed,
            refused_at_setup: scenario.agent.as_ref().is_some_and(refused_at_creation)
                || scenario.adapter.as_ref().is_some_and(refused_deployment),
            hooked: scenario
                .steps
                .iter()
                .any(|s| matches!(&s.command, Command::Loop(LoopCommand::OnSessionAppend(_)))),
        }
    }
}

/// Whether a step's error is a veto a generated session hook made (see
/// [`SessionFacts::hooked`]).
pub fn is_hook_veto(message: &str) -> bool {
    message.starts_with(hooks::VETO) || message == dshc_model::session::REENTRANT_APPEND
}

/// Whether a step's error is the session API's compaction finding an empty
/// surface: its step input (the surface's first node) then reads nothing.
pub fn is_empty_surface_input(message: &str) -> bool {
    message.starts_with("a step input takes command") && message.contains("value.surface[0]")
}

const TOOL_NAMES: &[&str] = &["read", "Bash", "edit", "grep", "write", "é"];
const WORDS: &[&str] = &[
    "Keep", "edits", "small.", "Run", "tests", "first.", "日本", "—", "{ }",
];

struct Generator {
    rng: SplitMix64,
    swarm: CaseSwarm,
    registered_tools: Vec<String>,
    counter: u32,
    /// Whether the `side` scope is bound (to the agent's).
    side_bound: bool,
    /// The world's optional parts, once drawn.
    world: WorldParts,
    /// Every duration the session states is a multiple of this.
    tick_ms: u64,
    /// The context plugins disposed so far.
    disposed_plugins: Vec<PluginName>,
    /// The session's images, when it has them.
    images: Option<ImageWorld>,
}

impl Generator {
    fn roll(&mut self, feature: &str) -> bool {
        self.swarm.roll(feature, &mut self.rng)
    }

    /// A duration in `low..low + span` ms, drawn uniformly from the
    /// session's grid (its least multiple there when none is in range).
    fn duration_ms(&mut self, low: u64, span: u64) -> u64 {
        let tick = self.tick_ms;
        let first = low.div_ceil(tick) * tick;
        let count = (low + span).saturating_sub(first).div_ceil(tick).max(1);
        first + tick * self.rng.below(count)
    }

    fn words(&mut self, max: u64) -> String {
        let count = 1 + self.rng.below(max);
        (0..count)
            .map(|_| *self.rng.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn text(&mut self) -> TextSpec {
        if self.rng.percent(50) {
            TextSpec::Static(self.words(6))
        } else {
            let values = (0..2 + self.rng.below(2))
                .map(|_| SequenceItem::Value(self.words(5)))
                .collect();
            TextSpec::Provider(ProviderSpec {
                provided: Provided::Sequence(values),
                effects: Vec::new(),
            })
        }
    }

    fn tools(&mut self) -> Command {
        let mut schemas = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let name = self.rng.pick(TOOL_NAMES).to_string();
            if !self.registered_tools.contains(&name) {
                self.registered_tools.push(name.clone());
            }
            let key = if self.rng.percent(50) {
                "path"
            } else {
                "pattern"
            };
            schemas.push(SchemaSpec {
                name,
                description: Some(self.words(4)),
                parameters: Some(
                    json!({"type": "object", "properties": {key: {"type": "string"}}}),
                ),
                extra: None,
                unclonable_symbol: None,
            });
        }
        Command::Assembly(AssemblyCommand::Tools(ToolsCommand {
            id: Some(self.id("tools")),
            scope: if self.rng.percent(30) {
                Some("agent".into())
            } else {
                None
            },
            provider: ProviderSpec::returning(ToolsResultSpec {
                schemas,
                known_names: None,
            }),
        }))
    }

    fn response(&mut self) -> ScriptEntry {
        let delay_ms = self.duration_ms(0, 15);
        let faults: Vec<FaultKind> = [
            ("rate_limit", FaultKind::RateLimit),
            ("server_error", FaultKind::ServerError),
            ("malformed_json", FaultKind::MalformedJson),
            ("missing_done", FaultKind::MissingDone),
            ("drop_connection", FaultKind::DropConnection),
            ("context_overflow", FaultKind::ContextOverflow),
            ("http_error", FaultKind::HttpError),
            ("stall", FaultKind::Stall),
            ("no_content", FaultKind::NoContent),
            ("close_before_head", FaultKind::CloseBeforeHead),
        ]
        .into_iter()
        .filter(|(name, _)| self.swarm.has(name))
        .map(|(_, fault)| fault)
        .collect();
        if !faults.is_empty() && self.roll("fault") {
            let fault = *self.rng.pick(&faults);
            return self.fault(fault);
        }
        let roll = self.rng.below(100);
        if roll < 70 || self.registered_tools.is_empty() {
            let fragments = (0..1 + self.rng.below(4))
                .map(|_| format!("{} ", self.words(2)))
                .collect();
            let mut entry = ScriptEntry {
                content: Fragments(fragments),
                delay_ms,
                ..ScriptEntry::stream()
            };
            if self.rng.percent(20) {
                entry.reasoning = Fragments(vec!["Thinking ".into(), self.words(2)]);
            }
            if self.roll("max_tokens") {
                entry.finish_reason = Some("length".into());
            }
            return entry;
        }
        let name = self.rng.pick(&self.registered_tools).clone();
        let call = ScriptToolCall {
            id: None,
            name,
            arguments: Fragments(vec!["{\"path\":".into(), "\"a.txt\"}".into()]),
        };
        ScriptEntry {
            tool_calls: vec![call],
            finish_reason: Some("tool_calls".into()),
            delay_ms,
            ..ScriptEntry::stream()
        }
    }

    /// A provider fault, with what it streams before it breaks.
    fn fault(&mut self, fault: FaultKind) -> ScriptEntry {
        let mut entry = ScriptEntry::fault(fault);
        match fault {
            // Whole seconds mostly; now and then a date (the session's
            // clock starts at 2026-01-01T00:00:00Z, so the first is in the
            // future until a clock jump), or a value that is neither.
            FaultKind::RateLimit => match self.rng.below(10) {
                0..=5 => entry.retry_after_s = Some(1),
                6 | 7 => {
                    entry.retry_after = Some(
                        (*self.rng.pick(&[
                            "Thu, 01 Jan 2026 00:00:02 GMT",
                            "Wed, 31 Dec 2025 23:59:00 GMT",
                        ]))
                        .into(),
                    );
                }
                _ => entry.retry_after = Some((*self.rng.pick(&["1.5", "soon"])).into()),
            },
            FaultKind::HttpError => {
                entry.status = Some(*self.rng.pick(&[400, 401, 402, 429, 503]));
                // Now and then a body without a usable error object, or an
                // empty request id: what the status alone must then decide.
                entry.error_body = self
                    .rng
                    .pick(&[
                        None,
                        None,
                        Some("{}"),
                        Some(r#"{"error":null}"#),
                        Some("not json"),
                    ])
                    .map(str::to_string);
                if self.rng.percent(20) {
                    entry.request_id = Some(String::new());
                }
            }
            FaultKind::Stall => {
                entry.content = Fragments(vec!["slow ".into(), "text".into()]);
                entry.after_events = Some(1);
                entry.stall_ms = Some(*self.rng.pick(&[50, 1_500]));
            }
            FaultKind::MalformedJson | FaultKind::DropConnection | FaultKind::MissingDone => {
                entry.content = Fragments(vec!["partial ".into(), "text".into()]);
                if fault != FaultKind::MissingDone {
                    entry.after_events = Some(1 + self.rng.below(2) as usize);
                }
            }
            _ => {}
        }
        entry
    }
}

/// Generate session `session` of seed `seed`.
pub fn generate_session(seed: u64, session: u64) -> Scenario {
    let mut rng = case_rng(seed ^ 0x5151_5151, session);
    let swarm = swarm(seed).for_case(&mut rng);
    let mut g = Generator {
        rng,
        swarm,
        registered_tools: Vec::new(),
        counter: 0,
        side_bound: false,
        world: WorldParts::default(),
        tick_ms: 1,
        disposed_plugins: Vec::new(),
        images: None,
    };
    if !g.roll("fine_time") {
        g.tick_ms = *g.rng.pick(COARSE_TICKS_MS);
    }
    g.images = g.image_world();
    let mut steps = g.registry_steps();
    if g.roll("observers") {
        steps.extend(g.observers());
    }
    let hooked = g.session_hook().map(|hook| steps.push(hook)).is_some();
    let world = g.world_parts();
    g.world = world.clone();
    let mut suppressed = false;
    let turns = 1 + g.rng.below(4);
    let mut reserved_disposal = None;
    for turn in 0..turns {
        g.turn_steps(turn, &mut suppressed, &mut steps);
        steps.extend(reserved_disposal.take());
        g.between_turns(&mut steps);
        if turn + 1 < turns
            && let Some((register, dispose)) = g.reserved_tool_name()
        {
            steps.push(register);
            reserved_disposal = Some(dispose);
        }
        if turn == 0 && hooked && g.rng.percent(30) {
            steps.push(Command::Assembly(AssemblyCommand::Dispose(
                DisposeCommand {
                    target: "hook".into(),
                },
            )));
        }
    }
    if g.roll("dispose_agent") {
        steps.push(Command::Loop(LoopCommand::DisposeAgent(
            DisposeAgentCommand::default(),
        )));
    }
    let responses = (0..turns * 4 + 4).map(|_| g.response()).collect();
    let tool_results = g.tool_results();
    let agent = g.first_agent();
    let mut adapter = g.deployment();
    g.image_settings(&mut adapter);
    Scenario {
        format: FORMAT_VERSION,
        title: format!("simulated session {session} of seed {seed}"),
        description: None,
        covers: vec!["00:DIFF".into()],
        level: Level::Loop,
        config: g.config(),
        config_error: None,
        scopes: Vec::new(),
        steps: steps.into_iter().map(Step::new).collect(),
        agent,
        provider: Some(Script::new(responses)),
        adapter: Some(adapter),
        simulation: Some(SimulationSpec {
            seed: seed ^ session,
            latency_ms: g.tick_ms * (1 + g.rng.below(3)),
            ..SimulationSpec::default()
        }),
        tool_results,
        plugins: world.plugins,
        routes: world.routes,
        agents: world.agents,
        expect: None,
    }
}

impl Generator {
    /// The registrations before the first turn: sections (maybe a complete
    /// one), runtime contexts, tool providers and a retrying
    /// `agent/request-error` listener. The draws' order is the seed's
    /// meaning: changing it changes every session.
    fn registry_steps(&mut self) -> Vec<Command> {
        let mut steps = Vec::new();
        for index in 0..1 + self.rng.below(3) {
            steps.push(Command::Assembly(AssemblyCommand::Section(
                SectionCommand {
                    id: None,
                    scope: if self.rng.percent(30) {
                        Some("agent".into())
                    } else {
                        None
                    },
                    name: format!("guide{index}"),
                    order: Order(self.rng.below(5) as f64),
                    text: self.text(),
                    complete: false,
                },
            )));
        }
        if self.rng.percent(10) {
            let text = format!("COMPLETE {}", self.words(4));
            steps.push(Command::Assembly(AssemblyCommand::Section(
                SectionCommand {
                    id: None,
                    scope: None,
                    name: "complete".into(),
                    order: Order(50.0),
                    text: TextSpec::Static(text),
                    complete: true,
                },
            )));
        }
        for index in 0..self.rng.below(3) {
            steps.push(Command::Assembly(AssemblyCommand::Context(
                ContextCommand {
                    id: None,
                    scope: None,
                    name: format!("ctx{index}"),
                    order: Order(index as f64),
                    text: self.text(),
                },
            )));
        }
        for _ in 0..self.rng.below(3) {
            let tools = self.tools();
            steps.push(tools);
        }
        if self.roll("retry") {
            let calls: Vec<u32> = (1..=8).filter(|_| self.rng.percent(60)).collect();
            steps.push(Command::Loop(LoopCommand::OnRequestError(
                LoopListenerCommand {
                    calls: Some(calls),
                    ..listener("retry", false, vec![RequestErrorOp::Retry])
                },
            )));
        }
        if self.roll("pre_step_message") {
            steps.push(self.pre_step_message());
        }
        steps.extend(self.deciding_listeners());
        steps
    }

    /// A pre-step listener that enters one more message on its first
    /// calls: two text blocks with a plugin source, first or last.
    fn pre_step_message(&mut self) -> Command {
        let message = MessageArg::Message(MessageTable {
            text: None,
            content: Some(vec![
                json!({"type": "text", "text": self.words(3)}),
                json!({"type": "text", "text": self.words(2)}),
            ]),
            source: Some(json!({"kind": "plugin", "plugin": "dshc-sim"})),
        });
        let op = match self.rng.percent(50) {
            true => PreStepOp::AppendMessage(message),
            false => PreStepOp::PrependMessage(message),
        };
        let prepend = self.rng.percent(50);
        let calls = vec![1, 2 + self.rng.below(3) as u32];
        Command::Loop(LoopCommand::OnPreStep(LoopListenerCommand {
            calls: Some(calls),
            ..listener("enrich", prepend, vec![PreStepOp::Next, op])
        }))
    }

    /// One turn: a follow-up, maybe a steer or a cancel, the wait for idle,
    /// then maybe a compaction, a suppression (once), a resume or a wait.
    fn turn_steps(&mut self, turn: u64, suppressed: &mut bool, steps: &mut Vec<Command>) {
        let text = self.prompt_text(turn);
        let content = self.prompt_content(&text);
        let source = self.prompt_source();
        steps.push(Command::Loop(LoopCommand::Followup(MessageCommand {
            agent: None,
            text: content.is_none().then_some(text),
            content,
            source,
        })));

        if self.roll("steer") {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.duration_ms(1, 20),
            })));
            steps.push(Command::Loop(LoopCommand::Steer(MessageCommand {
                agent: None,
                text: Some(self.words(3)),
                content: None,
                source: None,
            })));
        }
        if self.roll("inject") {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.duration_ms(1, 20),
            })));
            steps.push(Command::Loop(LoopCommand::Inject(MessageCommand {
                agent: None,
                text: Some(self.words(3)),
                content: None,
                source: None,
            })));
        }
        if self.roll("cancel") {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.duration_ms(0, 25),
            })));
            steps.push(Command::Loop(LoopCommand::Cancel(CancelCommand {
                agent: None,
                reason: None,
                keep_inbox: self.rng.percent(30),
            })));
        }
        steps.push(Command::Loop(LoopCommand::WaitIdle(
            WaitIdleCommand::default(),
        )));
        if self.roll("compact") {
            steps.push(Command::Loop(LoopCommand::Compact(CompactCommand {
                agent: None,
                text: format!("summary {turn}"),
                start: None,
                end: None,
            })));
        }
        if !*suppressed && self.roll("suppress") {
            *suppressed = true;
            steps.push(Command::Assembly(AssemblyCommand::Suppress(
                SuppressCommand {
                    id: None,
                    scope: None,
                },
            )));
        }
        if self.roll("resume") {
            let resume = self.resume();
            steps.push(Command::Loop(LoopCommand::Resume(resume)));
        }
        if self.roll("long_wait") {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.duration_ms(0, 2_000),
            })));
        }
    }

    /// A result for every tool the providers registered; as the swarm
    /// rolls, a body moves the wall clock.
    fn tool_results(&mut self) -> Vec<ToolResultSpec> {
        let names = self.registered_tools.clone();
        names
            .into_iter()
            .map(|name| {
                let mut ops = Vec::new();
                if self.roll("clock_jump") {
                    let tick = self.tick_ms as i64;
                    let ms = *self.rng.pick(&[-60_000, -tick, tick, 1_000, 3_600_000]);
                    ops.push(ToolOp::Act(ActOp::ClockJump(ActClockJump(ms))));
                }
                let text = format!("{name} done");
                let result = ToolResultSpec {
                    content: self.tool_content(&text),
                    text,
                    name,
                    is_error: false,
                    additional_contexts: Vec::new(),
                    concludes_turn: false,
                    delay_ms: 0,
                    ops,
                };
                if self.roll("tool_outcomes") {
                    self.tool_outcome(result)
                } else {
                    result
                }
            })
            .collect()
    }

    /// A tool result other than a plain success, each part drawn alone.
    /// (Not `is_error`: upstream renders a failing body itself, so a port
    /// cannot be compared on it; a body that throws is drawn instead.)
    fn tool_outcome(&mut self, mut result: ToolResultSpec) -> ToolResultSpec {
        if self.rng.percent(30) {
            result.additional_contexts = vec![format!("context {}", self.words(2))];
        }
        result.concludes_turn = self.rng.percent(15);
        if self.rng.percent(30) {
            result.delay_ms = self.duration_ms(1, 400);
        }
        match self.rng.below(10) {
            0 => result.ops.push(ToolOp::Act(ActOp::Throw(ThrowArg::Message(
                "tool broke".into(),
            )))),
            // A cancel from inside the call, then a message sent while the
            // aborted turn is still winding down.
            1 | 2 => {
                result.ops.push(ToolOp::Act(ActOp::Cancel(CancelArgs {
                    reason: None,
                    keep_inbox: self.rng.percent(50),
                })));
                let message = MessageArg::Text(format!("after {}", self.words(2)));
                result.ops.push(ToolOp::Act(if self.rng.percent(50) {
                    ActOp::Followup(message)
                } else {
                    ActOp::Steer(message)
                }));
            }
            3 => result
                .ops
                .push(ToolOp::Act(ActOp::Followup(MessageArg::Text(
                    "more".into(),
                )))),
            _ => {}
        }
        result
    }
}

/// What an observing listener records of each call.
fn record(fields: &[RecordField]) -> ActOp {
    ActOp::Record(fields.to_vec())
}

/// A listener on the world's first agent that acts on every call it gets.
fn listener<Op>(id: &str, prepend: bool, ops: Vec<Op>) -> LoopListenerCommand<Op> {
    LoopListenerCommand {
        id: id.to_string(),
        agent: None,
        prepend,
        calls: None,
        event_types: None,
        ops,
    }
}

impl Generator {
    /// Listeners that watch and record, on every `agent/*` event a listener
    /// can observe, each kept or not (they change nothing of the run but the
    /// journal), and, as the swarm rolls `cancel`, one that acts.
    fn observers(&mut self) -> Vec<Command> {
        use RecordField::{
            Aborted, Event, Failure, LastEvent, Messages, Provider, Status, Step, Turn,
        };
        let mut steps = Vec::new();
        if self.rng.percent(60) {
            steps.push(Command::Loop(LoopCommand::OnStatus(listener(
                "status",
                false,
                vec![record(&[Status])],
            ))));
        }
        if self.rng.percent(60) {
            // Half of them look at a few types only.
            let event_types = self.rng.percent(50).then(|| {
                [
                    event_kind::TURN_START,
                    event_kind::STEP_START,
                    event_kind::TOOL_CALL,
                    event_kind::USER_MESSAGE,
                    event_kind::TURN_END,
                ]
                .into_iter()
                .filter(|_| self.rng.percent(50))
                .map(str::to_string)
                .collect()
            });
            steps.push(Command::Loop(LoopCommand::OnSessionEvent(
                LoopListenerCommand {
                    event_types,
                    ..listener("events", false, vec![record(&[Event])])
                },
            )));
        }
        if self.rng.percent(60) {
            steps.push(Command::Loop(LoopCommand::OnTurnStopping(listener(
                "stopping",
                false,
                vec![record(&[Turn, Aborted, LastEvent])],
            ))));
        }
        if self.rng.percent(60) {
            let mut ops = vec![PreStepOp::Act(record(&[Turn, Step, Messages]))];
            ops.insert(self.rng.below(2) as usize, PreStepOp::Next);
            let prepend = self.rng.percent(50);
            steps.push(Command::Loop(LoopCommand::OnPreStep(listener(
                "pre", prepend, ops,
            ))));
        }
        if self.rng.percent(60) {
            let ops = vec![
                RequestOp::Next,
                RequestOp::Act(record(&[Turn, Step, Aborted])),
            ];
            steps.push(Command::Loop(LoopCommand::OnRequest(listener(
                "request", false, ops,
            ))));
        }
        if self.rng.percent(40) {
            let ops = vec![
                RequestErrorOp::Act(record(&[Turn, Step, Provider, Failure])),
                RequestErrorOp::Next,
            ];
            steps.push(Command::Loop(LoopCommand::OnRequestError(listener(
                "seen-error",
                true,
                ops,
            ))));
        }
        if self.roll("cancel") {
            // An observer that acts: it cancels the turn the first time one
            // of a few event types is logged (a tool call's, say, between
            // its logging and its dispatch).
            let event_type = *self.rng.pick(&[
                event_kind::TOOL_CALL,
                event_kind::STEP_START,
                event_kind::ASSISTANT_MESSAGE,
                event_kind::TOOL_RESULT,
            ]);
            let cancel = ActOp::Cancel(CancelArgs {
                reason: None,
                keep_inbox: self.rng.percent(50),
            });
            steps.push(Command::Loop(LoopCommand::OnSessionEvent(
                LoopListenerCommand {
                    calls: Some(vec![1]),
                    event_types: Some(vec![event_type.to_string()]),
                    ..listener("stopper", false, vec![cancel])
                },
            )));
        }
        steps.extend(self.llm_stream_middleware());
        steps
    }

    /// Middleware on the LLM runtime that looks at every call and passes it
    /// on, before or after the inner ones run.
    fn llm_stream_middleware(&mut self) -> Option<Command> {
        if !self.rng.percent(40) {
            return None;
        }
        let record = record(&[RecordField::Provider, RecordField::LastEvent]);
        let mut ops = vec![LlmStreamOp::Act(record)];
        ops.insert(self.rng.below(2) as usize, LlmStreamOp::Next);
        Some(Command::Loop(LoopCommand::OnLlmStream(listener(
            "llm-stream",
            false,
            ops,
        ))))
    }

    /// Between turns: move the wall clock, use the session API, change the
    /// registry or call the header helpers, each as the case's swarm rolls.
    fn between_turns(&mut self, steps: &mut Vec<Command>) {
        if self.roll("clock_jump") {
            let tick = self.tick_ms as i64;
            let ms = *self
                .rng
                .pick(&[-86_400_000, -60_000, -tick, tick, 1_000, 3_600_000]);
            steps.push(Command::Loop(LoopCommand::ClockJump(ClockJumpCommand {
                ms,
            })));
        }
        if self.roll("session_api") {
            let commands = self.session_api(steps.len());
            steps.extend(commands);
        }
        if self.roll("registry") {
            steps.extend(self.registry_change());
        }
        if self.roll("headers") {
            steps.push(self.header_helper());
        }
        self.world_steps(steps);
    }

    /// A change to the registry between turns: a section, an owner of one, a
    /// variable, an assembly listener, a change listener, a disposal, a scope
    /// bound and disposed, or an `assemble` of its own.
    fn registry_change(&mut self) -> Vec<Command> {
        let section = |g: &mut Self, id: String| SectionCommand {
            id: Some(id),
            scope: None,
            name: format!("late{}", g.counter),
            order: Order(g.rng.below(5) as f64),
            text: TextSpec::Static(g.words(3)),
            complete: false,
        };
        let command = match self.rng.below(9) {
            0 => {
                let id = self.id("late");
                AssemblyCommand::Section(section(self, id))
            }
            1 => {
                let id = self.id("owner");
                let member = self.id("member");
                AssemblyCommand::Owner(OwnerCommand {
                    id,
                    registrations: vec![Registration::Section(section(self, member))],
                })
            }
            2 => AssemblyCommand::Variable(VariableCommand {
                id: Some(self.id("var")),
                scope: None,
                name: format!("v{}", self.counter),
                value: TextSpec::Static(self.words(1)),
            }),
            3 => AssemblyCommand::Listen(ListenCommand {
                id: self.id("assemble"),
                scope: None,
                global: false,
                prepend: self.rng.percent(50),
                ops: vec![
                    ListenerOp::Next,
                    ListenerOp::AddSection(EntrySpec {
                        name: "listener-note".into(),
                        text: self.words(2),
                        index: None,
                    }),
                ],
            }),
            4 => AssemblyCommand::OnChange(ChangeListenerCommand {
                id: self.id("change"),
                throw_on: None,
                throws: "unused".into(),
            }),
            5 => {
                // A scope is bound to its parent once.
                let bind = (!std::mem::replace(&mut self.side_bound, true)).then(|| {
                    Command::Assembly(AssemblyCommand::Bind(BindCommand {
                        scope: "side".into(),
                        parent: "agent".into(),
                    }))
                });
                return bind
                    .into_iter()
                    .chain([
                        Command::Assembly(AssemblyCommand::Section(SectionCommand {
                            scope: Some("side".into()),
                            ..section(self, format!("side{}", self.counter))
                        })),
                        Command::Assembly(AssemblyCommand::DisposeScope(ScopeCommand {
                            scope: "side".into(),
                        })),
                    ])
                    .collect();
            }
            6 => {
                let id = self.id("gone");
                return vec![
                    Command::Assembly(AssemblyCommand::Section(section(self, id.clone()))),
                    Command::Assembly(AssemblyCommand::Dispose(DisposeCommand { target: id })),
                ];
            }
            7 => AssemblyCommand::ReadRegistry(ReadRegistryCommand {}),
            _ => AssemblyCommand::Assemble(AssembleCommand {
                scope: self.rng.percent(50).then(|| "agent".into()),
                context: serde_json::Map::new(),
            }),
        };
        vec![Command::Assembly(command)]
    }

    /// `canonical_header`, `header_equals` or `fold_header` over a small header.
    fn header_helper(&mut self) -> Command {
        let header = |g: &mut Self| {
            let mut header =
                json!({"config": {"provider": "p", "model": *g.rng.pick(&["m", "n"])}});
            if g.rng.percent(50) {
                header["system"] = json!(g.words(2));
            }
            if g.rng.percent(30) {
                header["adapterDefaults"] = json!({"maxTokens": g.rng.percent(50)});
            }
            header
        };
        let a = header(self);
        if self.rng.percent(25) {
            // `fold_header` over the header's event and a message, from
            // another header or none.
            let mut events =
                vec![json!({"type": event_kind::USER_MESSAGE, "data": {"content": "hi"}})];
            if self.rng.percent(60) {
                events.push(json!({"type": event_kind::REQUEST_HEADER, "data": {"header": a}}));
            }
            let baseline = self.rng.percent(50).then(|| JsJson(header(self)));
            return Command::Assembly(AssemblyCommand::FoldHeader(FoldHeaderCommand {
                events: JsJson(serde_json::Value::Array(events)),
                baseline,
            }));
        }
        if self.rng.percent(50) {
            Command::Assembly(AssemblyCommand::CanonicalHeader(CanonicalHeaderCommand {
                header: JsJson(a),
            }))
        } else {
            let b = if self.rng.percent(50) {
                a.clone()
            } else {
                header(self)
            };
            Command::Assembly(AssemblyCommand::HeaderEquals(HeaderEqualsCommand {
                a: JsJson(a),
                b: JsJson(b),
            }))
        }
    }
}
