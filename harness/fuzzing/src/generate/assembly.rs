//! Seeded generation of random but valid assembly-level scenarios, for
//! differential runs (`dshc diff`).
//!
//! Case `k` of seed `s` is generated from its own stream (`s` mixed with `k`),
//! so any single case replays alone with `--seed s --case k`. The pools below
//! deliberately mix shadowing across a three-level scope chain, dynamic
//! providers with side effects, listeners, configs and texts with tricky
//! braces and non-ASCII characters. Every command kind of the level is made:
//! the registry's own actors (plugin owners, change listeners that throw or
//! not, scope disposal and binding), providers that return, run through a
//! sequence, read the assemble context, return `undefined` or throw, every
//! listener op of the level, the session header helpers, and names and texts
//! that need escaping (quotes, backslashes, control and format characters,
//! astral characters, and malformed references whose 16-unit snippet cuts a
//! surrogate pair, so a lone surrogate reaches the wire as U+FFFD).
//!
//! How often each optional part is made is the seed's swarm ([`FEATURES`],
//! [`swarm`]).

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::case_rng;
use super::rng::SplitMix64;
use super::swarm::{CaseSwarm, Feature, Swarm, feature};
use dshc_model::session::event_kind;
use dshc_model::tool_order::TOOL_ORDER_REST;
use dshc_scenario::format::*;
use dshc_scenario::protocol::*;

/// The optional parts of an assembly case, with the range of odds a seed
/// draws for each (percent per chance to make one).
pub const FEATURES: &[Feature] = &[
    feature("listen", 5, 40),
    feature("dispose", 2, 25),
    feature("owner", 2, 25),
    feature("on_change", 2, 25),
    feature("dispose_scope", 2, 20),
    feature("bind", 2, 20),
    feature("headers", 2, 20),
    feature("read_registry", 2, 15),
    feature("effects", 5, 30),
    feature("sequence", 5, 35),
    feature("context_field", 5, 35),
    feature("computes", 5, 30),
    feature("undefined", 2, 20),
    feature("throws", 2, 20),
    feature("escapes", 5, 40),
    // Schemas `structuredClone` refuses (02 A4.2), and complete sections
    // often enough that two are effective at once (02 A5.2).
    feature("unclonable", 2, 15),
    feature("complete", 5, 40),
];

/// Separates the assembly generator's swarm from the loop's.
const SALT: u64 = 0xA55E_3B1E_0000_0001;

/// The swarm of seed `seed` for assembly cases.
pub fn swarm(seed: u64) -> Swarm {
    Swarm::of_seed(seed, SALT, FEATURES)
}

const SCOPES: &[&str] = &["leaf", "mid", "root", "other"];
/// Fields of the assemble context a `context_field` provider reads.
const CONTEXT_FIELDS: &[&str] = &["who", "mode", "absent"];
/// Texts and names that need escaping somewhere: in TOML, in JSON, in the
/// protocol, or in JavaScript's UTF-16 strings.
const ESCAPES: &[&str] = &[
    "\"",
    "\\",
    "'''",
    "\"\"\"",
    "\u{2028}",
    "\u{2029}",
    "\u{FEFF}",
    "\u{200D}",
    "e\u{301}",
    "\u{1F469}\u{200D}\u{1F467}",
    "\u{10FFFF}",
    "\u{10000}",
    "\r\n",
    "\u{0}",
    "\u{1B}[0m",
    "\u{7F}",
    "\u{FFFE}",
    "</script>",
    "${x}",
    "$js",
    // A malformed reference 15 units before an astral character: the
    // 16-unit snippet of its error ends in a lone high surrogate.
    "{{abc} }}xxxxxx\u{1F600}yz",
    "{{a}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}",
];
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
    swarm: CaseSwarm,
    ids: Vec<String>,
    /// The plugin owners made so far (see [`Generator::owner`]).
    owners: Vec<String>,
    next_id: u32,
}

impl Generator {
    fn pick(&mut self, items: &[&str]) -> String {
        self.rng.pick(items).to_string()
    }

    fn roll(&mut self, feature: &str) -> bool {
        self.swarm.roll(feature, &mut self.rng)
    }

    /// A name from `items`, or one that needs escaping.
    fn name(&mut self, items: &[&str]) -> String {
        let base = self.pick(items);
        if self.roll("escapes") {
            let escape = self.pick(ESCAPES);
            format!("{base}{escape}")
        } else {
            base
        }
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
        let mut text: String = (0..count).map(|_| self.pick(fragments)).collect();
        if self.roll("escapes") {
            let escape = self.pick(ESCAPES);
            if self.rng.percent(50) {
                text.insert_str(0, &escape);
            } else {
                text.push_str(&escape);
            }
        }
        text
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
        let provided = if self.roll("throws") {
            let message = self.text(&["boom", " ", "é", "{{x}}"], 3);
            let cause = self.rng.percent(50).then(|| self.text(&["disk", "é"], 2));
            Provided::Throws { message, cause }
        } else if self.roll("undefined") {
            Provided::Undefined
        } else if self.roll("sequence") {
            let items = (0..1 + self.rng.below(3))
                .map(|_| {
                    if self.swarm.has("undefined") && self.rng.percent(25) {
                        SequenceItem::Undefined(UndefinedMarker {
                            js: "undefined".into(),
                        })
                    } else {
                        SequenceItem::Value(value(self))
                    }
                })
                .collect();
            Provided::Sequence(items)
        } else {
            Provided::Returns(value(self))
        };
        let mut spec = ProviderSpec {
            provided,
            effects: Vec::new(),
        };
        if allow_effects && self.roll("effects") {
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
            TextSpec::Provider(self.text_provider(TEXT_FRAGMENTS, 4, allow_effects))
        }
    }

    /// A text provider: any provider, or one that reads the assemble context.
    fn text_provider(
        &mut self,
        fragments: &'static [&'static str],
        max: u64,
        allow_effects: bool,
    ) -> ProviderSpec<String> {
        if self.roll("context_field") {
            ProviderSpec {
                provided: Provided::ContextField(self.pick(CONTEXT_FIELDS)),
                effects: Vec::new(),
            }
        } else if self.roll("computes") {
            let token = self.pick(&["{call}", "{scope}", "{call}{scope}", "{scope"]);
            let template = token + &self.text(fragments, max);
            ProviderSpec {
                provided: Provided::Computes(template),
                effects: Vec::new(),
            }
        } else {
            self.provider(|g| g.text(fragments, max), allow_effects)
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
            // Now and then the name toolOrder reserves for its rest entry,
            // which assembly refuses from a provider.
            name: if self.rng.percent(2) {
                TOOL_ORDER_REST.into()
            } else {
                self.name(TOOL_NAMES)
            },
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
            unclonable_symbol: self.roll("unclonable").then(|| "token".to_owned()),
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
                name: self.name(SECTION_NAMES),
                order: self.order(),
                text: self.text_spec(top_level),
                complete: self.roll("complete"),
            }),
            4..=5 => Registration::Context(ContextCommand {
                id: Some(self.fresh_id("c")),
                scope,
                name: self.name(CONTEXT_NAMES),
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
                    TextSpec::Provider(self.text_provider(VALUE_FRAGMENTS, 2, top_level))
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
        match self.rng.below(19) {
            18 => ListenerOp::Record(self.record_fields()),
            16 => ListenerOp::SetContextText(SetTextSpec {
                name: self.pick(CONTEXT_NAMES),
                text: self.text(TEXT_FRAGMENTS, 2),
            }),
            17 if !self.ids.is_empty() => ListenerOp::Dispose(self.rng.pick(&self.ids).clone()),
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

    /// One to three fields for a `record` op, in a random order (repeats
    /// allowed: a repeated field is recorded once, where it first stands).
    fn record_fields(&mut self) -> Vec<AssemblyRecordField> {
        (0..=self.rng.below(3))
            .map(|_| *self.rng.pick(&AssemblyRecordField::ALL))
            .collect()
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
        let mut context = serde_json::Map::new();
        if self.swarm.has("context_field") {
            for field in &CONTEXT_FIELDS[..2] {
                if self.rng.percent(70) {
                    context.insert((*field).into(), self.text(VALUE_FRAGMENTS, 2).into());
                }
            }
        }
        Command::Assembly(AssemblyCommand::Assemble(AssembleCommand {
            scope: self.scope(),
            context,
        }))
    }

    /// A plugin owning one to three global registrations.
    fn owner(&mut self) -> Command {
        // Not in `ids`: a provider's effect or a listener that disposes a
        // plugin does not wait for its teardown, which cordis runs a
        // microtask later (`Fiber._unload`); the reference tears it down at
        // once. Only the `dispose` command, which waits, disposes owners.
        self.next_id += 1;
        let id = format!("o{}", self.next_id);
        self.owners.push(id.clone());
        let registrations = (0..1 + self.rng.below(3))
            .map(|_| {
                let mut registration = self.registration(false);
                set_global(&mut registration);
                registration
            })
            .collect();
        Command::Assembly(AssemblyCommand::Owner(OwnerCommand { id, registrations }))
    }

    /// A `system-prompt/change` listener that throws on some calls, or never.
    fn on_change(&mut self) -> Command {
        let id = self.fresh_id("ch");
        let throw_on = self
            .rng
            .percent(60)
            .then(|| (1..=4).filter(|_| self.rng.percent(40)).collect());
        let throws = self.text(&["vetoed", " ", "é", "{{x}}"], 2);
        Command::Assembly(AssemblyCommand::OnChange(ChangeListenerCommand {
            id,
            throw_on,
            throws,
        }))
    }

    /// Bind an unbound scope (or rebind one, which is refused).
    fn bind(&mut self) -> Command {
        let scope = self.pick(&["other", "root", "other", "leaf"]);
        let parent = self.pick(&["root", "mid", "top", "leaf"]);
        Command::Assembly(AssemblyCommand::Bind(BindCommand { scope, parent }))
    }

    /// `canonical_header`, `header_equals` or `fold_header` over headers with
    /// every part present, empty or absent.
    fn header_command(&mut self) -> Command {
        if self.rng.percent(25) {
            return self.fold_header();
        }
        let a = self.header();
        if self.rng.percent(40) {
            return Command::Assembly(AssemblyCommand::CanonicalHeader(CanonicalHeaderCommand {
                header: JsJson(a),
            }));
        }
        let b = if self.rng.percent(40) {
            a.clone()
        } else {
            self.header()
        };
        Command::Assembly(AssemblyCommand::HeaderEquals(HeaderEqualsCommand {
            a: JsJson(a),
            b: JsJson(b),
        }))
    }

    /// `fold_header` over a few events, headers among them or not, from a
    /// baseline header, `null` or none.
    fn fold_header(&mut self) -> Command {
        let mut events = Vec::new();
        for _ in 0..self.rng.below(4) {
            events.push(if self.rng.percent(50) {
                json!({"type": event_kind::REQUEST_HEADER, "data": {"header": self.header()}})
            } else {
                json!({"type": event_kind::USER_MESSAGE, "data": {"content": "hi"}})
            });
        }
        let baseline = match self.rng.below(3) {
            0 => None,
            1 => Some(JsJson(json!({"$js": "null"}))),
            _ => Some(JsJson(self.header())),
        };
        Command::Assembly(AssemblyCommand::FoldHeader(FoldHeaderCommand {
            events: JsJson(Value::Array(events)),
            baseline,
        }))
    }

    fn header(&mut self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert("provider".into(), self.pick(&["p", "q"]).into());
        config.insert("model".into(), self.pick(&["m", "n"]).into());
        if self.rng.percent(40) {
            config.insert("maxTokens".into(), json!(self.rng.below(3) * 500));
        }
        if self.rng.percent(30) {
            config.insert("reasoningEffort".into(), self.pick(&["low", "high"]).into());
        }
        if self.rng.percent(20) {
            config.insert("temperature".into(), json!(0.5));
        }
        if self.rng.percent(20) {
            config.insert("stop".into(), json!(["a"]));
        }
        if self.rng.percent(20) {
            config.insert("extra".into(), json!(1));
        }
        let mut header = serde_json::Map::new();
        header.insert("config".into(), config.into());
        if self.rng.percent(40) {
            header.insert(
                "adapterDefaults".into(),
                json!({"maxTokens": self.rng.percent(50), "reasoningEffort": self.rng.percent(50)}),
            );
        }
        if self.rng.percent(60) {
            header.insert("system".into(), self.text(TEXT_FRAGMENTS, 2).into());
        }
        if self.rng.percent(50) {
            let tools: Vec<Value> = (0..self.rng.below(3))
                .map(|_| {
                    let name = self.pick(TOOL_NAMES);
                    if self.rng.percent(50) {
                        json!({"name": name, "description": "d"})
                    } else {
                        json!({"description": "d", "name": name})
                    }
                })
                .collect();
            header.insert("tools".into(), tools.into());
        }
        Value::Object(header)
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
                let mut order: Vec<String> = (0..self.rng.below(4))
                    .map(|_| self.pick(TOOL_NAMES))
                    .collect();
                // Mostly a valid order; sometimes one that construction
                // refuses: a name listed twice, or no rest entry, or two.
                if self.rng.percent(90) {
                    let mut seen = std::collections::BTreeSet::new();
                    order.retain(|name| seen.insert(name.clone()));
                }
                let rest_entries = match self.rng.below(20) {
                    0 => 0,
                    19 => 2,
                    _ => 1,
                };
                for _ in 0..rest_entries {
                    let at = self.rng.below(order.len() as u64 + 1) as usize;
                    order.insert(at, TOOL_ORDER_REST.into());
                }
                Some(order)
            } else {
                None
            },
        }
    }
}

impl Generator {
    /// One step: a part the case's swarm rolls, or else a registration or an
    /// `assemble`.
    fn step(&mut self) -> Command {
        if self.roll("listen") {
            return self.listener();
        }
        if !(self.ids.is_empty() && self.owners.is_empty()) && self.roll("dispose") {
            let targets: Vec<String> = self.ids.iter().chain(&self.owners).cloned().collect();
            let target = self.rng.pick(&targets).clone();
            return Command::Assembly(AssemblyCommand::Dispose(DisposeCommand { target }));
        }
        if self.roll("owner") {
            return self.owner();
        }
        if self.roll("on_change") {
            return self.on_change();
        }
        if self.roll("dispose_scope") {
            let scope = self.pick(SCOPES);
            return Command::Assembly(AssemblyCommand::DisposeScope(ScopeCommand { scope }));
        }
        if self.roll("bind") {
            return self.bind();
        }
        if self.roll("headers") {
            return self.header_command();
        }
        if self.roll("read_registry") {
            return Command::Assembly(AssemblyCommand::ReadRegistry(ReadRegistryCommand {}));
        }
        if self.rng.percent(80) {
            self.registration(true).into()
        } else {
            self.assemble()
        }
    }
}

/// Make a registration global (an owner's are).
fn set_global(registration: &mut Registration) {
    let scope = match registration {
        Registration::Section(c) => &mut c.scope,
        Registration::Context(c) => &mut c.scope,
        Registration::Suppress(c) => &mut c.scope,
        Registration::Tools(c) => &mut c.scope,
        Registration::Variable(c) => &mut c.scope,
    };
    *scope = None;
}

/// Generate case `case` of seed `seed`.
pub fn generate(seed: u64, case: u64) -> Scenario {
    let mut rng = case_rng(seed, case);
    let swarm = swarm(seed).for_case(&mut rng);
    let mut generator = Generator {
        rng,
        swarm,
        ids: Vec::new(),
        owners: Vec::new(),
        next_id: 0,
    };
    let config = generator.config();
    let mut steps = Vec::new();
    for _ in 0..2 + generator.rng.below(10) {
        let step = generator.step();
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
