//! Where the reference and an adapter observed one case differently, at two
//! grains: each observed *field* that differs (the unit a regression file
//! pins and the shrinker keeps), and inside each field every differing
//! *leaf* (what a person reads: a path, the reference's value, the
//! adapter's value).
//!
//! This is the one definition of "the two sides disagree" for `dshc diff`:
//! an assembly result is compared whole; a loop result as the contract
//! observes it: each command's observation, each agent's session log, the
//! provider traffic (bodies and cache hits: transport headers are each
//! implementation's own), all byte for byte, then as values (key order
//! aside) the live events, the final status, inbox, failure, scripted-route
//! calls and the acting listeners' journal.

use serde::Serialize;
use serde_json::{Map, Value, json};

use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{CaseResult, LoopRun, Observation};

/// Where an observed field sits in a case result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Loading the config.
    Config,
    /// The observation of command `index`: the scope bindings first, then
    /// the steps.
    Command(usize),
    /// The loop run as a whole (the world's agent, the traffic).
    Run,
    /// A further agent of the loop run, by id.
    Agent(String),
}

/// One observed field on which the two sides differ.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDifference {
    /// Where it sits.
    pub place: Place,
    /// The field: `error`, `changes`, `journal`, `records`, `value`, `sections`,
    /// `contexts`, `tools`, `variables`, `extra`, `prompt`, `snapshot`,
    /// `snapshot_sections` of a command; `log`, `requests`, `live_events`,
    /// `status`, `pending`, `failure`, `llm_requests`, `journal` of a run.
    pub field: String,
    /// The path a person reads, as the judge names the expectation:
    /// `steps[2].expect.sections`, `scopes[0].error`, `config_error`,
    /// `expect.log`, `expect.agents.b.log`.
    pub path: String,
    /// What the shrinker keeps: the command kind (`config`, `scope`, `run`,
    /// `agent` elsewhere) and the field, e.g. `assemble.sections`.
    pub class: String,
    /// The reference's value (`None`: not observed).
    pub reference: Option<Value>,
    /// The adapter's value.
    pub adapter: Option<Value>,
}

/// One differing leaf inside a field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Leaf {
    /// `steps[2].expect.sections[1].text`.
    pub path: String,
    /// The reference's value there (`None`: absent).
    pub reference: Option<Value>,
    /// The adapter's value there.
    pub adapter: Option<Value>,
}

/// Every field on which `other` differs from `reference`, in the order of
/// the case: the config, each command, then the run. Empty when they agree.
pub fn differences(
    scenario: &Scenario,
    reference: &CaseResult,
    other: &CaseResult,
) -> Vec<FieldDifference> {
    let mut found = Vec::new();
    let mut push = |place: Place,
                    field: &str,
                    path: String,
                    class: String,
                    a: Option<Value>,
                    b: Option<Value>| {
        if !same(a.as_ref(), b.as_ref()) {
            found.push(FieldDifference {
                place,
                field: field.to_string(),
                path,
                class,
                reference: a,
                adapter: b,
            });
        }
    };
    let config = |result: &CaseResult| to_json(&result.config_error);
    push(
        Place::Config,
        "error",
        "config_error".into(),
        "config.error".into(),
        config(reference),
        config(other),
    );
    let count = reference.observations.len().max(other.observations.len());
    for index in 0..count {
        let (name, kind) = command_name(scenario, index);
        let ours = observation_fields(reference.observations.get(index));
        let theirs = observation_fields(other.observations.get(index));
        for key in union(&ours, &theirs) {
            push(
                Place::Command(index),
                &key,
                format!("{name}.{key}"),
                format!("{kind}.{key}"),
                ours.get(&key).cloned(),
                theirs.get(&key).cloned(),
            );
        }
    }
    if reference.run.is_some() || other.run.is_some() {
        for (place, field, a, b) in run_fields(reference.run.as_ref(), other.run.as_ref()) {
            let (path, class) = match &place {
                Place::Agent(id) => (format!("expect.agents.{id}.{field}"), "agent"),
                _ => (format!("expect.{field}"), "run"),
            };
            // Bytes are the contract in the logs and the wire bodies; the
            // run's other fields are compared as values (key order aside).
            let in_bytes = matches!(field, "log" | "requests");
            if in_bytes || a != b {
                push(place, field, path, format!("{class}.{field}"), a, b);
            }
        }
    }
    found
}

/// The judge's name for command `index`, and its kind (`do`).
fn command_name(scenario: &Scenario, index: usize) -> (String, String) {
    let scopes = scenario.scopes.len();
    if index < scopes {
        return (format!("scopes[{index}]"), "scope".into());
    }
    match scenario.steps.get(index - scopes) {
        Some(step) => (
            format!("steps[{}].expect", index - scopes),
            step.command.kind().to_owned(),
        ),
        None => (format!("observations[{index}]"), "command".into()),
    }
}

/// An observation's fields as the judge reads them: the assembly's parts
/// (`sections`, `contexts`, `tools`, `variables`, `extra`) beside the
/// command's own (`error`, `changes`, `journal`, `records`, `value`, the
/// renders).
fn observation_fields(observation: Option<&Observation>) -> Map<String, Value> {
    let Some(Value::Object(observed)) = observation.and_then(|o| serde_json::to_value(o).ok())
    else {
        return Map::new();
    };
    // In the observation's own order, the assembly's parts where it stands.
    let mut fields = Map::new();
    for (key, value) in observed {
        match (key.as_str(), value) {
            ("assembly", Value::Object(assembly)) => {
                fields.extend(assembly);
                fields.entry("extra").or_insert_with(|| json!({}));
            }
            (_, value) => {
                fields.insert(key, value);
            }
        }
        if !fields.contains_key("journal") && fields.contains_key("changes") {
            fields.insert("journal".into(), json!([]));
        }
    }
    fields
}

/// The run's fields, the world's agent first, then each further agent (by
/// the reference's order, then any only the adapter ran).
fn run_fields(
    ours: Option<&LoopRun>,
    theirs: Option<&LoopRun>,
) -> Vec<(Place, &'static str, Option<Value>, Option<Value>)> {
    let pick = |run: Option<&LoopRun>, field: &str| -> Option<Value> {
        let run = run?;
        Some(match field {
            "log" => json!(run.log),
            "requests" => Value::Array(
                run.requests
                    .iter()
                    .map(|r| json!({"body": r.body, "cache_hit_tokens": r.cache_hit_tokens}))
                    .collect(),
            ),
            "live_events" => json!(run.live_events),
            "status" => json!(run.status),
            "pending" => json!(run.pending),
            "failure" => json!(run.failure),
            "llm_requests" => json!(run.llm_requests),
            _ => json!(run.journal),
        })
    };
    let mut fields = Vec::new();
    for field in [
        "log",
        "requests",
        "live_events",
        "status",
        "pending",
        "failure",
        "llm_requests",
        "journal",
    ] {
        fields.push((Place::Run, field, pick(ours, field), pick(theirs, field)));
    }
    let agents = |run: Option<&LoopRun>| -> Vec<(String, Value)> {
        run.map(|run| {
            run.agents
                .iter()
                .map(|agent| (agent.id.clone(), json!(agent.log)))
                .collect()
        })
        .unwrap_or_default()
    };
    let (our_agents, their_agents) = (agents(ours), agents(theirs));
    let find = |list: &[(String, Value)], id: &str| {
        list.iter()
            .find(|(other, _)| other == id)
            .map(|(_, log)| log.clone())
    };
    let mut ids: Vec<&String> = our_agents.iter().map(|(id, _)| id).collect();
    ids.extend(
        their_agents
            .iter()
            .map(|(id, _)| id)
            .filter(|id| find(&our_agents, id).is_none()),
    );
    for id in ids {
        fields.push((
            Place::Agent(id.clone()),
            "log",
            find(&our_agents, id),
            find(&their_agents, id),
        ));
    }
    fields
}

/// The keys of both objects: `ours` in order, then those only `theirs` has.
fn union(ours: &Map<String, Value>, theirs: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = ours.keys().cloned().collect();
    keys.extend(theirs.keys().filter(|k| !ours.contains_key(*k)).cloned());
    keys
}

fn to_json<T: Serialize>(value: &Option<T>) -> Option<Value> {
    value.as_ref().and_then(|v| serde_json::to_value(v).ok())
}

/// Byte equality of two values as JSON text, key order included.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let text = |v: Option<&Value>| v.map(|v| serde_json::to_string(v).unwrap_or_default());
    text(a) == text(b)
}

impl FieldDifference {
    /// Every differing leaf inside the field, in order.
    pub fn leaves(&self) -> Vec<Leaf> {
        let mut out = Vec::new();
        leaves(
            &self.path,
            self.reference.as_ref(),
            self.adapter.as_ref(),
            &mut out,
        );
        out
    }
}

fn leaves(path: &str, ours: Option<&Value>, theirs: Option<&Value>, out: &mut Vec<Leaf>) {
    if same(ours, theirs) {
        return;
    }
    let before = out.len();
    match (ours, theirs) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            for key in union(a, b) {
                leaves(&key_path(path, &key), a.get(&key), b.get(&key), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for index in 0..a.len().max(b.len()) {
                leaves(&format!("{path}[{index}]"), a.get(index), b.get(index), out);
            }
        }
        _ => {}
    }
    // Scalars, a changed type, or the same members in another key order.
    if out.len() == before {
        out.push(Leaf {
            path: path.to_string(),
            reference: ours.cloned(),
            adapter: theirs.cloned(),
        });
    }
}

/// `path.key`, or `path["key"]` for a key that is not a plain identifier.
fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", serde_json::to_string(key).unwrap_or_default())
    }
}

/// A value as one short line of JSON: `(absent)` for none, cut at
/// `max_chars` characters with `…` (the whole value is in the JSON file).
pub fn short(value: Option<&Value>, max_chars: usize) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = serde_json::to_string(value).unwrap_or_default();
    if text.chars().count() <= max_chars {
        return text;
    }
    let cut: String = text.chars().take(max_chars).collect();
    format!("{cut}…")
}

/// The structural diff of a disagreement, one differing leaf per line
/// (`path: reference X, adapter Y`), at most `max_lines` of them, then how
/// many more there are.
pub fn structural_diff(differences: &[FieldDifference], max_lines: usize) -> Vec<String> {
    let all: Vec<Leaf> = differences
        .iter()
        .flat_map(FieldDifference::leaves)
        .collect();
    let mut lines: Vec<String> = all
        .iter()
        .take(max_lines)
        .map(|leaf| {
            format!(
                "{}: reference {}, adapter {}",
                leaf.path,
                short(leaf.reference.as_ref(), 120),
                short(leaf.adapter.as_ref(), 120)
            )
        })
        .collect();
    if all.len() > max_lines {
        lines.push(format!("… and {} more differences", all.len() - max_lines));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(a: Value, b: Value) -> Vec<Leaf> {
        let mut out = Vec::new();
        leaves("x", Some(&a), Some(&b), &mut out);
        out
    }

    #[test]
    fn leaves_name_each_differing_member_and_element() {
        let found = diff(
            json!({"a": 1, "b": [1, 2, {"c": "x"}], "d": true}),
            json!({"a": 1, "b": [1, 3, {"c": "y"}, 4], "e": null}),
        );
        let paths: Vec<&str> = found.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["x.b[1]", "x.b[2].c", "x.b[3]", "x.d", "x.e"]);
        assert_eq!(found[2].reference, None);
        assert_eq!(found[2].adapter, Some(json!(4)));
    }

    #[test]
    fn key_order_alone_is_a_difference_of_the_object_and_odd_keys_are_quoted() {
        let found = diff(json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "x");
        assert_eq!(key_path("x", "a b"), "x[\"a b\"]");
        assert_eq!(short(Some(&json!("abcdef")), 4), "\"abc…");
        assert_eq!(short(None, 4), "(absent)");
    }
}
