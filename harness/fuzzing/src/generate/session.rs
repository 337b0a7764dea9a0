//! Seeded random loop sessions for `dshc sim`: registrations that change
//! between steps, provider faults and retries, tool rounds, steering,
//! cancels, compaction, suppression and resume, all from one seed.
//!
//! Session `k` of seed `s` comes from its own stream, so one session replays
//! alone with `--seed s --session k`. The generator keeps to situations
//! whose invariants it can state (see [`SessionFacts`]).

use mock_provider::{FaultKind, Fragments, Script, ScriptEntry, ScriptToolCall};
use serde_json::json;

use super::case_rng;
use super::rng::SplitMix64;
use dshc_scenario::format::*;
use dshc_scenario::protocol::*;

/// Facts about a generated session, for invariants beyond the universal
/// ones. Derived from the scenario itself, so they stay true while a
/// failing session is shrunk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFacts {
    /// The text of a static, global complete section registered before any turn.
    pub complete_text: Option<String>,
    /// Whether a global suppressor is registered at some point (it survives resume).
    pub suppressed: bool,
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
        }
    }
}

const TOOL_NAMES: &[&str] = &["read", "Bash", "edit", "grep", "write", "é"];
const WORDS: &[&str] = &[
    "Keep", "edits", "small.", "Run", "tests", "first.", "日本", "—", "{ }",
];

struct Generator {
    rng: SplitMix64,
    registered_tools: Vec<String>,
    counter: u32,
}

impl Generator {
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
        let delay_ms = self.rng.below(15);
        let roll = self.rng.below(100);
        if roll < 55 || self.registered_tools.is_empty() && roll < 75 {
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
            return entry;
        }
        if roll < 75 {
            let name = self.rng.pick(&self.registered_tools).clone();
            let call = ScriptToolCall {
                id: None,
                name,
                arguments: Fragments(vec!["{\"path\":".into(), "\"a.txt\"}".into()]),
            };
            return ScriptEntry {
                tool_calls: vec![call],
                finish_reason: Some("tool_calls".into()),
                delay_ms,
                ..ScriptEntry::stream()
            };
        }
        let fault = *self.rng.pick(&[
            FaultKind::RateLimit,
            FaultKind::ServerError,
            FaultKind::MalformedJson,
            FaultKind::MissingDone,
            FaultKind::DropConnection,
        ]);
        let mut entry = ScriptEntry::fault(fault);
        match fault {
            FaultKind::RateLimit => entry.retry_after_s = Some(1),
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
    let mut g = Generator {
        rng: case_rng(seed ^ 0x5151_5151, session),
        registered_tools: Vec::new(),
        counter: 0,
    };
    let mut steps = g.registry_steps();
    let mut suppressed = false;
    let turns = 1 + g.rng.below(4);
    for turn in 0..turns {
        g.turn_steps(turn, &mut suppressed, &mut steps);
    }
    let responses = (0..turns * 4 + 4).map(|_| g.response()).collect();
    let tool_results = g.tool_results();
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
        agent: None,
        provider: Some(Script::new(responses)),
        adapter: Some(AdapterSpec {
            stream_idle_timeout_ms: Some(60_000),
            ..AdapterSpec::default()
        }),
        simulation: Some(SimulationSpec {
            seed: seed ^ session,
            latency_ms: 1 + g.rng.below(3),
            ..SimulationSpec::default()
        }),
        tool_results,
        plugins: None,
        routes: Vec::new(),
        agents: Vec::new(),
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
        if self.rng.percent(70) {
            let calls: Vec<u32> = (1..=8).filter(|_| self.rng.percent(60)).collect();
            steps.push(Command::Loop(LoopCommand::OnRequestError(
                LoopListenerCommand {
                    id: "retry".into(),
                    agent: None,
                    prepend: false,
                    calls: Some(calls),
                    ops: vec![RequestErrorOp::Retry],
                },
            )));
        }
        steps
    }

    /// One turn: a follow-up, maybe a steer or a cancel, the wait for idle,
    /// then maybe a compaction, a suppression (once), a resume or a wait.
    fn turn_steps(&mut self, turn: u64, suppressed: &mut bool, steps: &mut Vec<Command>) {
        steps.push(Command::Loop(LoopCommand::Followup(MessageCommand {
            agent: None,
            text: Some(format!("task {turn}: {}", self.words(4))),
            content: None,
            source: None,
        })));
        if self.rng.percent(15) {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: 1 + self.rng.below(20),
            })));
            steps.push(Command::Loop(LoopCommand::Steer(MessageCommand {
                agent: None,
                text: Some(self.words(3)),
                content: None,
                source: None,
            })));
        }
        if self.rng.percent(10) {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.rng.below(25),
            })));
            steps.push(Command::Loop(LoopCommand::Cancel(CancelCommand {
                agent: None,
                reason: None,
                keep_inbox: false,
            })));
        }
        steps.push(Command::Loop(LoopCommand::WaitIdle(
            WaitIdleCommand::default(),
        )));
        if self.rng.percent(15) {
            steps.push(Command::Loop(LoopCommand::Compact(CompactCommand {
                agent: None,
                text: format!("summary {turn}"),
                start: None,
                end: None,
            })));
        }
        if self.rng.percent(10) && !*suppressed {
            *suppressed = true;
            steps.push(Command::Assembly(AssemblyCommand::Suppress(
                SuppressCommand {
                    id: None,
                    scope: None,
                },
            )));
        }
        if self.rng.percent(10) {
            steps.push(Command::Loop(LoopCommand::Resume(ResumeCommand::default())));
        }
        if self.rng.percent(30) {
            steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                ms: self.rng.below(2_000),
            })));
        }
    }

    /// A result for every tool the providers registered.
    fn tool_results(&self) -> Vec<ToolResultSpec> {
        self.registered_tools
            .iter()
            .map(|name| ToolResultSpec {
                name: name.clone(),
                text: format!("{name} done"),
                is_error: false,
                additional_contexts: Vec::new(),
                concludes_turn: false,
                delay_ms: 0,
                ops: Vec::new(),
            })
            .collect()
    }

    /// The plugin config: identity, runtime context and persona.
    fn config(&mut self) -> ConfigSpec {
        ConfigSpec {
            include_harness_identity: Some(self.rng.percent(50)),
            include_runtime_context: if self.rng.percent(10) {
                Some(false)
            } else {
                None
            },
            persona: if self.rng.percent(50) {
                Some(self.words(5))
            } else {
                None
            },
            tool_order: None,
        }
    }
}
