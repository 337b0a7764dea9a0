//! Seeded generation of random but valid assembly-level scenarios, for
//! differential runs (`dshc diff`).
//!
//! Case `k` of seed `s` is generated from its own stream (`s` mixed with `k`),
//! so any single case replays alone with `--seed s --case k`. The pools below
//! deliberately mix shadowing across a three-level scope chain, dynamic
//! providers with side effects, listeners, configs and texts with tricky
//! braces and non-ASCII characters.

use indexmap::IndexMap;

use super::case_rng;
use super::rng::SplitMix64;
use dshc_scenario::format::*;
use dshc_scenario::protocol::*;

const SCOPES: &[&str] = &["leaf", "mid", "root", "other"];
const SECTION_NAMES: &[&str] = &[
    "intro",
    "rules",
    "style",
    "deployment:persona",
    "harness:identity",
    "tools-guide",
];
const CONTEXT_NAMES: &[&str] = &["sandbox", "clock", "mode"];
const VARIABLE_NAMES: &[&str] = &["model", "cwd", "user", "mode", "x1"];
const TOOL_NAMES: &[&str] = &[
    "read",
    "Bash",
    "edit",
    "write",
    "grep",
    "a_b",
    "ab",
    "é",
    "日本",
    "\u{1F600}x",
    "\u{FFFD}",
];
const TEXT_FRAGMENTS: &[&str] = &[
    "Use ",
    "the ",
    "tools",
    " carefully.",
    "\n",
    " ",
    "{{model}}",
    "{{cwd}}",
    "{{user}}",
    "{{mode}}",
    "{{x1}}",
    "{{nope}}",
    "{{ model }}",
    "{{Model}}",
    "{{",
    "}}",
    "{",
    "}",
    "{{{",
    "é",
    "日本語",
    "😀",
    "—",
    "\t",
    "",
];
const VALUE_FRAGMENTS: &[&str] = &[
    "m",
    "deepseek-chat",
    "/work",
    "{{cwd}}",
    "日本",
    "",
    " ",
    "x}}",
];

struct Generator {
    rng: SplitMix64,
    ids: Vec<String>,
    next_id: u32,
}

impl Generator {
    fn pick(&mut self, items: &[&str]) -> String {
        self.rng.pick(items).to_string()
    }

    fn fresh_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        let id = format!("{prefix}{}", self.next_id);
        self.ids.push(id.clone());
        id
    }

    fn scope(&mut self) -> Option<String> {
        if self.rng.percent(40) {
            None
        } else {
            Some(self.pick(SCOPES))
        }
    }

    fn text(&mut self, fragments: &[&str], max: u64) -> String {
        let count = self.rng.below(max + 1);
        (0..count).map(|_| self.pick(fragments)).collect()
    }

    fn order(&mut self) -> Order {
        match self.rng.below(20) {
            0 => Order(0.5),
            1 => Order(-0.0),
            2 if self.rng.percent(30) => Order(f64::NAN),
            _ => Order(self.rng.below(5) as f64 - 2.0),
        }
    }

    fn provider<T: Clone>(
        &mut self,
        mut value: impl FnMut(&mut Self) -> T,
        allow_effects: bool,
    ) -> ProviderSpec<T> {
        let provided = match self.rng.below(20) {
            0..=13 => Provided::Returns(value(self)),
            14..=16 => Provided::Sequence(
                (0..1 + self.rng.below(3))
                    .map(|_| SequenceItem::Value(value(self)))
                    .collect(),
            ),
            17 | 18 => Provided::Undefined,
            _ => Provided::Throws {
                message: self.text(&["boom", " ", "é", "{{x}}"], 3),
                cause: self.rng.percent(50).then(|| "disk".into()),
            },
        };
        let mut spec = ProviderSpec {
            provided,
            effects: Vec::new(),
        };
        if allow_effects && self.rng.percent(15) {
            let effect = if !self.ids.is_empty() && self.rng.percent(30) {
                let target = self.rng.pick(&self.ids).clone();
                Effect {
                    on_call: Some(1),
                    register: None,
                    dispose: Some(target),
                }
            } else {
                Effect {
                    on_call: Some(1 + self.rng.below(2) as u32),
                    register: Some(Box::new(self.registration(false))),
                    dispose: None,
                }
            };
            spec.effects.push(effect);
        }
        spec
    }

    fn text_spec(&mut self, allow_effects: bool) -> TextSpec {
        if self.rng.percent(40) {
            TextSpec::Static(self.text(TEXT_FRAGMENTS, 4))
        } else {
            TextSpec::Provider(self.provider(|g| g.text(TEXT_FRAGMENTS, 4), allow_effects))
        }
    }

    fn schema(&mut self) -> SchemaSpec {
        let mut parameters = serde_json::Map::new();
        parameters.insert("type".into(), "object".into());
        if self.rng.percent(50) {
            let mut properties = serde_json::Map::new();
            for key in ["path", "b", "a", "1"] {
                if self.rng.percent(40) {
                    properties.insert(key.into(), serde_json::json!({ "type": "string" }));
                }
            }
            parameters.insert("properties".into(), properties.into());
        }
        SchemaSpec {
            name: self.pick(TOOL_NAMES),
            description: if self.rng.percent(85) {
                Some(self.text(&["Reads a file.", " ", "é"], 2))
            } else {
                None
            },
            parameters: if self.rng.percent(90) {
                Some(parameters.into())
            } else {
                None
            },
            extra: if self.rng.percent(10) {
                Some(serde_json::Map::from_iter([(
                    "strict".to_string(),
                    true.into(),
                )]))
            } else {
                None
            },
            unclonable_symbol: None,
        }
    }

    fn tools_result(&mut self) -> ToolsResultSpec {
        let schemas = (0..self.rng.below(4))
            .map(|_| self.schema())
            .collect::<Vec<_>>();
        let known_names = if self.rng.percent(15) {
            Some(
                (0..self.rng.below(4))
                    .map(|_| self.pick(TOOL_NAMES))
                    .collect(),
            )
        } else {
            None
        };
        ToolsResultSpec {
            schemas,
            known_names,
        }
    }

    /// A registration step. Top-level ones may carry effects; nested ones not,
    /// which keeps effect chains finite.
    fn registration(&mut self, top_level: bool) -> Registration {
        let scope = self.scope();
        match self.rng.below(12) {
            0..=3 => Registration::Section(SectionCommand {
                id: Some(self.fresh_id("s")),
                scope,
                name: self.pick(SECTION_NAMES),
                order: self.order(),
                text: self.text_spec(top_level),
                complete: self.rng.percent(8),
            }),
            4..=5 => Registration::Context(ContextCommand {
                id: Some(self.fresh_id("c")),
                scope,
                name: self.pick(CONTEXT_NAMES),
                order: self.order(),
                text: self.text_spec(top_level),
            }),
            6..=8 => {
                let name = if self.rng.percent(90) {
                    self.pick(VARIABLE_NAMES)
                } else {
                    self.pick(&["Model", "_x", "1a"])
                };
                let value = if self.rng.percent(30) {
                    TextSpec::Static(self.text(VALUE_FRAGMENTS, 2))
                } else {
                    TextSpec::Provider(self.provider(|g| g.text(VALUE_FRAGMENTS, 2), top_level))
                };
                Registration::Variable(VariableCommand {
                    id: Some(self.fresh_id("v")),
                    scope,
                    name,
                    value,
                })
            }
            9..=10 => Registration::Tools(ToolsCommand {
                id: Some(self.fresh_id("t")),
                scope,
                provider: self.provider(|g| g.tools_result(), top_level),
            }),
            _ => Registration::Suppress(SuppressCommand {
                id: Some(self.fresh_id("x")),
                scope,
            }),
        }
    }

    fn listener_op(&mut self) -> ListenerOp {
        match self.rng.below(16) {
            0 => ListenerOp::AddSection(EntrySpec {
                name: self.pick(SECTION_NAMES),
                text: self.text(TEXT_FRAGMENTS, 3),
                index: Some(self.rng.below(3) as usize),
            }),
            1 => ListenerOp::RemoveSection(self.pick(SECTION_NAMES)),
            2 => ListenerOp::RenameSection(RenameSpec {
                from: self.pick(SECTION_NAMES),
                to: self.pick(SECTION_NAMES),
            }),
            3 => ListenerOp::SetSectionText(SetTextSpec {
                name: self.pick(SECTION_NAMES),
                text: self.text(TEXT_FRAGMENTS, 3),
            }),
            4 => ListenerOp::ReorderSections(vec![
                self.pick(SECTION_NAMES),
                self.pick(SECTION_NAMES),
            ]),
            5 => ListenerOp::AddContext(EntrySpec {
                name: self.pick(CONTEXT_NAMES),
                text: self.text(TEXT_FRAGMENTS, 2),
                index: None,
            }),
            6 => ListenerOp::RemoveContext(self.pick(CONTEXT_NAMES)),
            7 => ListenerOp::AddTool(self.schema()),
            8 => ListenerOp::RemoveTool(self.pick(TOOL_NAMES)),
            9 => ListenerOp::ReverseTools,
            10 => ListenerOp::SetVariable(SetVariableSpec {
                name: self.pick(VARIABLE_NAMES),
                value: self.text(VALUE_FRAGMENTS, 2),
            }),
            11 => ListenerOp::UnsetVariable(self.pick(VARIABLE_NAMES)),
            12 => ListenerOp::DeleteVariable(self.pick(VARIABLE_NAMES)),
            13 => ListenerOp::SetField(SetFieldSpec {
                name: "note".into(),
                value: self.text(VALUE_FRAGMENTS, 1).into(),
            }),
            14 => ListenerOp::Register(Box::new(self.registration(false))),
            _ => ListenerOp::SetToolParameter(SetToolParameterSpec {
                tool: self.pick(TOOL_NAMES),
                path: vec!["type".into()],
                value: "array".into(),
            }),
        }
    }

    fn listener(&mut self) -> Command {
        let mut ops: Vec<ListenerOp> = (0..self.rng.below(3)).map(|_| self.listener_op()).collect();
        match self.rng.below(10) {
            0 => {}
            1 => ops.push(ListenerOp::Throw("listener failed".into())),
            2 => ops.insert(
                0,
                ListenerOp::Replace(ReplaceSpec {
                    sections: vec![EntryData {
                        name: "new".into(),
                        text: Some(self.text(TEXT_FRAGMENTS, 2)),
                    }],
                    contexts: Vec::new(),
                    tools: Vec::new(),
                    variables: IndexMap::new(),
                }),
            ),
            _ => {
                let at = self.rng.below(ops.len() as u64 + 1) as usize;
                ops.insert(at, ListenerOp::Next);
            }
        }
        Command::Assembly(AssemblyCommand::Listen(ListenCommand {
            id: self.fresh_id("l"),
            scope: self.scope(),
            global: self.rng.percent(10),
            prepend: self.rng.percent(30),
            ops,
        }))
    }

    fn assemble(&mut self) -> Command {
        Command::Assembly(AssemblyCommand::Assemble(AssembleCommand {
            scope: self.scope(),
            context: serde_json::Map::new(),
        }))
    }

    fn config(&mut self) -> ConfigSpec {
        ConfigSpec {
            include_harness_identity: if self.rng.percent(50) {
                Some(self.rng.percent(50))
            } else {
                None
            },
            include_runtime_context: if self.rng.percent(15) {
                Some(false)
            } else {
                None
            },
            persona: if self.rng.percent(50) {
                Some(self.text(TEXT_FRAGMENTS, 3))
            } else {
                None
            },
            tool_order: if self.rng.percent(30) {
                let mut order: Vec<String> = (0..self.rng.below(3))
                    .map(|_| self.pick(TOOL_NAMES))
                    .collect();
                order.dedup();
                if self.rng.percent(95) {
                    let at = self.rng.below(order.len() as u64 + 1) as usize;
                    order.insert(at, "<unlisted-tools>".into());
                }
                Some(order)
            } else {
                None
            },
        }
    }
}

/// Generate case `case` of seed `seed`.
pub fn generate(seed: u64, case: u64) -> Scenario {
    let mut generator = Generator {
        rng: case_rng(seed, case),
        ids: Vec::new(),
        next_id: 0,
    };
    let config = generator.config();
    let mut steps = Vec::new();
    for _ in 0..2 + generator.rng.below(10) {
        let step = match generator.rng.below(10) {
            0..=5 => generator.registration(true).into(),
            6..=7 => generator.listener(),
            8 if !generator.ids.is_empty() => {
                let target = generator.rng.pick(&generator.ids).clone();
                Command::Assembly(AssemblyCommand::Dispose(DisposeCommand { target }))
            }
            _ => generator.assemble(),
        };
        steps.push(step);
    }
    for _ in 0..1 + generator.rng.below(2) {
        steps.push(generator.assemble());
    }
    let scopes = vec![
        ScopeSpec {
            name: "leaf".into(),
            parent: "mid".into(),
        },
        ScopeSpec {
            name: "mid".into(),
            parent: "root".into(),
        },
    ];
    Scenario {
        format: FORMAT_VERSION,
        title: format!("generated case {case} of seed {seed}"),
        description: None,
        covers: vec!["00:DIFF".into()],
        level: Level::Assembly,
        config,
        config_error: None,
        scopes,
        steps: steps.into_iter().map(Step::new).collect(),
        agent: None,
        provider: None,
        adapter: None,
        expect: None,
        simulation: None,
        tool_results: Vec::new(),
        plugins: None,
        routes: Vec::new(),
        agents: Vec::new(),
    }
}
