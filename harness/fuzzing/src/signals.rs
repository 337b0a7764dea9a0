//! Which spec clauses a generated case exercised, read off the case and
//! what the reference observed, so `dshc diff` and `dshc sim` can print
//! clauses beside command kinds, as `dshc coverage` does for files.
//!
//! A generated case names no clause, so each clause of the catalog
//! (`scenarios/clauses.toml`) may list `signals`: things a run shows only
//! when it exercised that clause. A clause is exercised by a case that shows
//! any one of them. A clause without signals is not counted either way; the
//! print says how many there are. The forms:
//!
//! | signal | shown when |
//! |---|---|
//! | `command:<kind>` | a step is of that kind |
//! | `command:<kind>:<path>=<json>` (or `=*`, `~<regex>`) | such a step's field at `path` is that value (present, matches) |
//! | `config:<key>` | the config sets `key` |
//! | `plugin:<table>` | that context plugin is configured |
//! | `fault:<kind>` | a provider response has that fault |
//! | `routes`, `agents`, `step_refs` | the world has scripted routes, several agents; a step takes an earlier step's value |
//! | `event:<type>` (or with `:<path>=<json>`, `=*`, `~<regex>`) | some agent logged such an event |
//! | `live:<type>` | such a live event was observed |
//! | `error~<regex>` | a step's error, a render error or the config error matches |
//!
//! Paths are dotted; `*` stands for any element of an array or value of an
//! object. `tests/it/signals.rs` checks that every clause's signals are
//! well formed and that each is shown by a bundled scenario covering it.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::step_refs::{takes_json, uses_step_refs};
use dshc_scenario::protocol::{CaseResult, LoopRun, Observation, Rendered, RenderedSections};

/// What a field must be.
#[derive(Clone, Debug)]
pub enum Test {
    /// Present, whatever its value.
    Present,
    /// Equal to this value.
    Equals(Value),
    /// A string this regex matches.
    Matches(Regex),
}

impl Test {
    fn holds(&self, value: &Value) -> bool {
        match self {
            Test::Present => true,
            Test::Equals(expected) => value == expected,
            Test::Matches(regex) => value.as_str().is_some_and(|text| regex.is_match(text)),
        }
    }
}

/// A dotted path and what the value there must be.
#[derive(Clone, Debug)]
pub struct Field {
    path: Vec<String>,
    test: Test,
}

impl Field {
    fn parse(text: &str) -> Result<Field, String> {
        let split = text.find(['=', '~']).ok_or_else(|| {
            format!("{text:?}: a field test is <path>=<json value>, <path>=* or <path>~<regex>")
        })?;
        let (path, rest) = text.split_at(split);
        let test = match (&rest[..1], &rest[1..]) {
            ("=", "*") => Test::Present,
            ("=", json) => Test::Equals(
                serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned())),
            ),
            (_, regex) => {
                Test::Matches(Regex::new(regex).map_err(|e| format!("{text:?}: not a regex: {e}"))?)
            }
        };
        Ok(Field {
            path: path.split('.').map(str::to_owned).collect(),
            test,
        })
    }

    /// Whether some value at the path (`*` being any element) passes.
    fn holds(&self, value: &Value) -> bool {
        fn walk(value: &Value, path: &[String], test: &Test) -> bool {
            let Some((first, rest)) = path.split_first() else {
                return test.holds(value);
            };
            match (first.as_str(), value) {
                ("*", Value::Array(items)) => items.iter().any(|item| walk(item, rest, test)),
                ("*", Value::Object(fields)) => fields.values().any(|item| walk(item, rest, test)),
                (key, Value::Object(fields)) => {
                    field(fields, key).is_some_and(|item| walk(item, rest, test))
                }
                (index, Value::Array(items)) => index
                    .parse::<usize>()
                    .ok()
                    .and_then(|index| items.get(index))
                    .is_some_and(|item| walk(item, rest, test)),
                _ => false,
            }
        }
        walk(value, &self.path, &self.test)
    }
}

/// `fields[key]`. Every case's events are walked for every signal, and
/// their objects are small: comparing a few keys costs less than hashing
/// `key` (serde_json's maps hash with SipHash). Keys are unique, so both
/// ways find the same field.
fn field<'a>(fields: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    const SCANNED_LEN: usize = 12;
    if fields.len() <= SCANNED_LEN {
        fields
            .iter()
            .find_map(|(name, item)| (name == key).then_some(item))
    } else {
        fields.get(key)
    }
}

/// One signal of a clause (see the module docs).
#[derive(Clone, Debug)]
pub enum Signal {
    /// A step of this kind, with this field when given.
    Command(String, Option<Field>),
    /// The config sets this key.
    Config(String),
    /// This context plugin is configured.
    Plugin(String),
    /// A provider response has this fault.
    Fault(String),
    /// The world has scripted routes.
    Routes,
    /// The world has several agents.
    Agents,
    /// A step takes a value from an earlier one.
    StepRefs,
    /// An agent logged an event of this type, with this field when given.
    Event(String, Option<Field>),
    /// A live event of this type was observed.
    Live(String),
    /// An error of a step, a render or the config matches.
    Error(Regex),
}

impl Signal {
    /// Read one signal.
    pub fn parse(text: &str) -> Result<Signal, String> {
        // `<kind or type>[:<field test>]`: kinds and event types hold no `:`.
        let typed = |rest: &str| -> Result<(String, Option<Field>), String> {
            match rest.split_once(':') {
                Some((kind, field)) => Ok((kind.to_owned(), Some(Field::parse(field)?))),
                None => Ok((rest.to_owned(), None)),
            }
        };
        if let Some(regex) = text.strip_prefix("error~") {
            return Regex::new(regex)
                .map(Signal::Error)
                .map_err(|e| format!("{text:?}: not a regex: {e}"));
        }
        let (head, rest) = text.split_once(':').unwrap_or((text, ""));
        Ok(match (head, rest) {
            ("command", rest) if !rest.is_empty() => {
                let (kind, field) = typed(rest)?;
                Signal::Command(kind, field)
            }
            ("event", rest) if !rest.is_empty() => {
                let (kind, field) = typed(rest)?;
                Signal::Event(kind, field)
            }
            ("config", key) if !key.is_empty() => Signal::Config(key.to_owned()),
            ("plugin", name) if !name.is_empty() => Signal::Plugin(name.to_owned()),
            ("fault", kind) if !kind.is_empty() => Signal::Fault(kind.to_owned()),
            ("live", kind) if !kind.is_empty() => Signal::Live(kind.to_owned()),
            ("routes", "") => Signal::Routes,
            ("agents", "") => Signal::Agents,
            ("step_refs", "") => Signal::StepRefs,
            _ => {
                return Err(format!(
                    "{text:?} is no signal: command:<kind>[:<field test>], config:<key>, \
                     plugin:<table>, fault:<kind>, routes, agents, step_refs, \
                     event:<type>[:<field test>], live:<type> or error~<regex>"
                ));
            }
        })
    }
}

/// Whether an object anywhere in `value` has `key`.
fn holds_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(fields) => {
            fields.contains_key(key) || fields.values().any(|v| holds_key(v, key))
        }
        Value::Array(items) => items.iter().any(|v| holds_key(v, key)),
        _ => false,
    }
}

/// `value` as JSON; `null` if it cannot be written as JSON.
fn as_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What one case showed, read once for every clause.
pub struct Shown<'a> {
    scenario: &'a Scenario,
    /// Each step's command kind, and the command as JSON, written when a
    /// signal on its fields first asks.
    commands: Vec<(&'static str, OnceCell<Value>)>,
    errors: Vec<&'a str>,
    run: Option<&'a LoopRun>,
    /// The config and the plugin tables as JSON, each serialized when a
    /// signal first asks (a case is asked about every clause's signals).
    config: OnceCell<Value>,
    plugins: OnceCell<Value>,
    /// The logged events by type, built when an event signal first asks.
    events: OnceCell<BTreeMap<&'a str, Vec<&'a Value>>>,
}

impl<'a> Shown<'a> {
    /// A case: its scenario, the observations of its commands, and at the
    /// loop level its run.
    pub fn new(
        scenario: &'a Scenario,
        observations: &'a [Observation],
        config_error: Option<&'a str>,
        run: Option<&'a LoopRun>,
    ) -> Shown<'a> {
        let commands = scenario
            .steps
            .iter()
            .map(|step| (step.command.kind(), OnceCell::new()))
            .collect();
        let mut errors: Vec<&str> = config_error.into_iter().collect();
        for observation in observations {
            errors.extend(observation.error.iter().map(|e| e.message.as_str()));
            for rendered in [&observation.prompt, &observation.snapshot] {
                if let Some(Rendered::Error(error)) = rendered {
                    errors.push(&error.message);
                }
            }
            if let Some(RenderedSections::Error(error)) = observation.snapshot_sections.as_ref() {
                errors.push(&error.message);
            }
        }
        Shown {
            scenario,
            commands,
            errors,
            run,
            config: OnceCell::new(),
            plugins: OnceCell::new(),
            events: OnceCell::new(),
        }
    }

    /// A case and the reference's whole result.
    pub fn of_result(scenario: &'a Scenario, result: &'a CaseResult) -> Shown<'a> {
        Shown::new(
            scenario,
            &result.observations,
            result.config_error.as_ref().map(|e| e.message.as_str()),
            result.run.as_ref(),
        )
    }

    /// The logged events of type `kind` (the run's log, then each agent's),
    /// from an index by type built at the first ask.
    fn events_of(&self, kind: &str) -> &[&'a Value] {
        let events = self.events.get_or_init(|| {
            let mut events: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
            let logs = self.run.into_iter().flat_map(|run| {
                run.log
                    .iter()
                    .chain(run.agents.iter().flat_map(|agent| agent.log.iter()))
            });
            for event in logs {
                if let Some(kind) = event.get("type").and_then(Value::as_str) {
                    events.entry(kind).or_default().push(event);
                }
            }
            events
        });
        events.get(kind).map_or(&[], Vec::as_slice)
    }

    /// Step `index`'s command as JSON.
    fn command_json(&self, index: usize) -> &Value {
        self.commands[index]
            .1
            .get_or_init(|| as_json(&self.scenario.steps[index].command))
    }

    /// Whether the case shows `signal`.
    pub fn shows(&self, signal: &Signal) -> bool {
        let world = self.scenario;
        match signal {
            Signal::Command(kind, field) => {
                self.commands.iter().enumerate().any(|(index, (k, _))| {
                    k == kind
                        && field
                            .as_ref()
                            .is_none_or(|field| field.holds(self.command_json(index)))
                })
            }
            Signal::Config(key) => self
                .config
                .get_or_init(|| as_json(&world.config))
                .get(key)
                .is_some_and(|v| !v.is_null()),
            Signal::Plugin(name) => self
                .plugins
                .get_or_init(|| as_json(&world.plugins))
                .get(name)
                .is_some_and(|v| !v.is_null()),
            // A scripted response's `fault`, by the name a file gives it.
            Signal::Fault(kind) => world.provider.as_ref().is_some_and(|script| {
                (script.responses.iter()).any(|entry| entry.fault.is_some_and(|f| f.name() == kind))
            }),
            Signal::Routes => !world.routes.is_empty(),
            Signal::Agents => !world.agents.is_empty(),
            // A file writes `{ "$ref" = name }`, a generator the protocol's
            // `{"$from": ...}`: either, in a command that takes any value.
            Signal::StepRefs => {
                uses_step_refs(world.steps.iter().map(|step| &step.command))
                    || world.steps.iter().enumerate().any(|(index, step)| {
                        takes_json(&step.command) && holds_key(self.command_json(index), "$ref")
                    })
            }
            Signal::Event(kind, field) => self
                .events_of(kind)
                .iter()
                .any(|event| field.as_ref().is_none_or(|f| f.holds(event))),
            Signal::Live(kind) => self.run.is_some_and(|run| {
                run.live_events
                    .iter()
                    .any(|event| event["type"] == kind.as_str())
            }),
            Signal::Error(regex) => self.errors.iter().any(|error| regex.is_match(error)),
        }
    }
}
