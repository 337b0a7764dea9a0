//! A disagreement as expectations: every observed field in which the two
//! sides differ, stated at the reference's full value, so the regression
//! file fails wherever the adapter still observes what it did. Nothing else
//! is stated, so the file's description can say exactly what it asserts.

use serde_json::{Value, json};

use dshc_model::js::stringify;
use dshc_scenario::format::{
    AssembleExpect, CommandExpect, EventQuery, LoopExpect, Pattern, Scenario, StepExpect,
};
use dshc_scenario::protocol::{
    AssemblyCommand, CaseResult, Command, Observation, ObservedError, Rendered, RenderedSections,
};

use super::differences::{FieldDifference, Place};

/// A scenario with its disagreement pinned.
#[derive(Clone, Debug)]
pub struct Pinned {
    /// The scenario, its expectations the pinned fields only.
    pub scenario: Scenario,
    /// What it asserts, one line each, as the judge names the keys.
    pub asserted: Vec<String>,
    /// Fields that differ but have no expectation key (the judge may still
    /// fail them by itself, e.g. an observation count).
    pub unpinned: Vec<String>,
}

/// The expectations of `scenario` replaced by the reference's full values of
/// the fields in `differences`.
pub fn pin(scenario: &Scenario, reference: &CaseResult, differences: &[FieldDifference]) -> Pinned {
    let mut pinned = Pinned {
        scenario: scenario.clone(),
        asserted: Vec::new(),
        unpinned: Vec::new(),
    };
    pinned.scenario.config_error = None;
    pinned.scenario.expect = None;
    for step in &mut pinned.scenario.steps {
        step.expect = None;
    }
    for difference in differences {
        let stated = match &difference.place {
            Place::Config => pin_config(&mut pinned.scenario, reference),
            Place::Command(index) => {
                pin_command(&mut pinned.scenario, reference, *index, difference)
            }
            Place::Run => pin_run(&mut pinned.scenario, reference, difference),
            Place::Agent(id) => pin_agent(&mut pinned.scenario, reference, id),
        };
        match stated {
            Some(line) => pinned.asserted.push(line),
            None => pinned.unpinned.push(difference.path.clone()),
        }
    }
    pin_shared_errors(&mut pinned, reference, differences);
    pinned
}

/// An error the two sides share is no difference, but a step whose error no
/// expectation states always fails: each such error of the reference is
/// pinned too, so that the file passes on the reference.
fn pin_shared_errors(pinned: &mut Pinned, reference: &CaseResult, differences: &[FieldDifference]) {
    let offset = pinned.scenario.scopes.len();
    for (index, observation) in reference.observations.iter().enumerate() {
        let stated = differences
            .iter()
            .any(|d| d.place == Place::Command(index) && d.field == "error");
        if observation.error.is_none() || stated || index < offset {
            continue;
        }
        let shared = FieldDifference {
            place: Place::Command(index),
            field: "error".into(),
            path: format!("steps[{}].expect.error", index - offset),
            class: String::new(),
            reference: None,
            adapter: None,
        };
        if let Some(line) = pin_command(&mut pinned.scenario, reference, index, &shared) {
            pinned
                .asserted
                .push(format!("{line} (the same on both sides)"));
        }
    }
}

/// A value as a pattern that holds for it alone: `$exact` (key order
/// included) for objects and arrays, the value itself for a scalar. TOML has
/// no `null`, so a value holding one is spelled out: `null` as `$type`, an
/// object as its keys in order (`$keys`) and each member (`$match`).
pub fn full_value(value: &Value) -> Value {
    if !holds_null(value) {
        return match value {
            Value::Object(_) | Value::Array(_) => json!({ "$exact": value }),
            scalar => scalar.clone(),
        };
    }
    match value {
        Value::Null => json!({ "$type": "null" }),
        Value::Array(items) => Value::Array(items.iter().map(full_value).collect()),
        Value::Object(members) => {
            let keys: Vec<&String> = members.keys().collect();
            let each: serde_json::Map<String, Value> = members
                .iter()
                .map(|(key, member)| (key.clone(), full_value(member)))
                .collect();
            json!({ "$keys": keys, "$match": each })
        }
        scalar => scalar.clone(),
    }
}

fn holds_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(holds_null),
        Value::Object(members) => members.values().any(holds_null),
        _ => false,
    }
}

/// An error at full value: its name, message and code (absent when it has none).
fn error_pattern(error: &ObservedError) -> Pattern {
    let code = match &error.code {
        Some(code) => json!(code),
        None => json!({ "$absent": true }),
    };
    Pattern::new(json!({ "name": error.name, "message": error.message, "code": code }))
}

fn pin_config(scenario: &mut Scenario, reference: &CaseResult) -> Option<String> {
    match &reference.config_error {
        Some(error) => {
            scenario.config_error = Some(error_pattern(error));
            Some("config_error: the reference's error".into())
        }
        None => Some("config_error: none (an unexpected config error always fails)".into()),
    }
}

fn pin_command(
    scenario: &mut Scenario,
    reference: &CaseResult,
    index: usize,
    difference: &FieldDifference,
) -> Option<String> {
    let field = difference.field.as_str();
    let step_index = index.checked_sub(scenario.scopes.len())?;
    let observation = reference.observations.get(index)?;
    let step = scenario.steps.get_mut(step_index)?;
    let path = &difference.path;
    if field == "error" && observation.error.is_none() {
        return Some(format!("{path}: none (an unexpected error always fails)"));
    }
    if matches!(
        step.command,
        Command::Assembly(AssemblyCommand::Assemble(_))
    ) {
        let mut expect = match step.expect.take() {
            Some(StepExpect::Assemble(expect)) => *expect,
            _ => AssembleExpect::default(),
        };
        let stated = pin_assembly(&mut expect, field, observation, path);
        step.expect = Some(StepExpect::Assemble(Box::new(expect)));
        return stated;
    }
    let mut expect = match step.expect.take() {
        Some(StepExpect::Command(expect)) => *expect,
        _ => CommandExpect::default(),
    };
    let pattern = match field {
        "error" => observation.error.as_ref().map(error_pattern),
        "changes" => Some(Pattern::new(json!(observation.changes))),
        "journal" => Some(Pattern::new(full_value(&json!(observation.journal)))),
        "value" => Some(Pattern::new(match &observation.value {
            Some(value) => full_value(value),
            None => json!({ "$absent": true }),
        })),
        _ => None,
    };
    let slot = match field {
        "error" => Some(&mut expect.error),
        "changes" => Some(&mut expect.changes),
        "journal" => Some(&mut expect.journal),
        "value" => Some(&mut expect.value),
        _ => None,
    };
    let stated = match (slot, pattern) {
        (Some(slot), Some(pattern)) => {
            *slot = Some(pattern);
            Some(path.clone())
        }
        _ => None,
    };
    step.expect =
        (expect != CommandExpect::default()).then(|| StepExpect::Command(Box::new(expect)));
    stated
}

/// One field of an `assemble` step's observation into its expectation.
fn pin_assembly(
    expect: &mut AssembleExpect,
    field: &str,
    observation: &Observation,
    path: &str,
) -> Option<String> {
    let assembly = observation
        .assembly
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok());
    let part = |key: &str| {
        let value = assembly.as_ref()?.get(key).cloned();
        Some(Pattern::new(full_value(
            &value.unwrap_or_else(|| json!({})),
        )))
    };
    let (slot, pattern): (&mut Option<Pattern>, Option<Pattern>) = match field {
        "error" => (
            &mut expect.error,
            observation.error.as_ref().map(error_pattern),
        ),
        "changes" => (
            &mut expect.changes,
            Some(Pattern::new(json!(observation.changes))),
        ),
        "journal" => (
            &mut expect.journal,
            Some(Pattern::new(full_value(&json!(observation.journal)))),
        ),
        "records" => (
            &mut expect.records,
            Some(Pattern::new(full_value(&json!(observation.records)))),
        ),
        "sections" => (&mut expect.sections, part("sections")),
        "contexts" => (&mut expect.contexts, part("contexts")),
        "tools" => (&mut expect.tools, part("tools")),
        "variables" => (&mut expect.variables, part("variables")),
        "extra" => (&mut expect.extra, part("extra")),
        "prompt" | "snapshot" => return pin_render(expect, field, observation, path),
        "snapshot_sections" => match &observation.snapshot_sections {
            Some(RenderedSections::Sections(sections)) => (
                &mut expect.snapshot_sections,
                Some(Pattern::new(full_value(&json!(sections)))),
            ),
            _ => return None,
        },
        _ => return None,
    };
    *slot = Some(pattern?);
    Some(path.to_string())
}

/// `prompt`/`snapshot` as the text, or `prompt_error`/`snapshot_error` as
/// the error the reference's render threw.
fn pin_render(
    expect: &mut AssembleExpect,
    field: &str,
    observation: &Observation,
    path: &str,
) -> Option<String> {
    let (rendered, text_slot, error_slot) = if field == "prompt" {
        (
            &observation.prompt,
            &mut expect.prompt,
            &mut expect.prompt_error,
        )
    } else {
        (
            &observation.snapshot,
            &mut expect.snapshot,
            &mut expect.snapshot_error,
        )
    };
    match rendered.as_ref()? {
        Rendered::Text(text) => {
            *text_slot = Some(Pattern::new(json!(text)));
            Some(path.to_string())
        }
        Rendered::Error(error) => {
            *error_slot = Some(error_pattern(error));
            Some(format!("{path}_error"))
        }
    }
}

fn log_text(log: &[Value]) -> Pattern {
    Pattern::new(Value::String(
        log.iter().map(|e| stringify(e) + "\n").collect(),
    ))
}

fn pin_run(
    scenario: &mut Scenario,
    reference: &CaseResult,
    difference: &FieldDifference,
) -> Option<String> {
    let run = reference.run.as_ref()?;
    let expect = scenario.expect.get_or_insert_with(Box::default);
    let LoopExpect {
        log,
        requests,
        cache_hit_tokens,
        status,
        pending,
        failure,
        llm_requests,
        journal,
        live,
        ..
    } = expect.as_mut();
    match difference.field.as_str() {
        "log" => *log = Some(log_text(&run.log)),
        "requests" => {
            let bodies: Vec<&Value> = run.requests.iter().map(|r| &r.body).collect();
            *requests = Some(Pattern::new(full_value(&json!(bodies))));
            let hits: Vec<u64> = run
                .requests
                .iter()
                .map(|r| r.cache_hit_tokens.unwrap_or(0))
                .collect();
            *cache_hit_tokens = Some(Pattern::new(json!(hits)));
            return Some("expect.requests, expect.cache_hit_tokens".into());
        }
        "live_events" => {
            *live = live_queries(&run.live_events, difference);
            return Some(
                "expect.live (the live events: their count and each differing one)".into(),
            );
        }
        "status" => *status = Some(Pattern::new(json!(run.status))),
        "pending" => *pending = Some(Pattern::new(full_value(&json!(run.pending)))),
        "failure" => match &run.failure {
            Some(text) => *failure = Some(Pattern::new(json!(text))),
            None => {
                return Some(
                    "expect.failure: none (an unexpected run failure always fails)".into(),
                );
            }
        },
        "llm_requests" => *llm_requests = Some(Pattern::new(full_value(&json!(run.llm_requests)))),
        "journal" => *journal = Some(Pattern::new(full_value(&json!(run.journal)))),
        _ => return None,
    }
    Some(difference.path.clone())
}

/// The live events as queries: how many there are, and each event at a
/// position where the two sides differ, at full value.
fn live_queries(events: &[Value], difference: &FieldDifference) -> Vec<EventQuery> {
    let theirs = difference
        .adapter
        .as_ref()
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let query = |value: Value| serde_json::from_value::<EventQuery>(value).ok();
    let mut queries: Vec<EventQuery> = query(json!({ "select": {}, "count": events.len() }))
        .into_iter()
        .collect();
    for (index, event) in events.iter().enumerate() {
        if theirs.get(index) != Some(event) {
            let nth =
                json!({ "select": {}, "nth": { "index": index, "event": full_value(event) } });
            queries.extend(query(nth));
        }
    }
    queries
}

fn pin_agent(scenario: &mut Scenario, reference: &CaseResult, id: &str) -> Option<String> {
    let agent = reference.run.as_ref()?.agents.iter().find(|a| a.id == id)?;
    let expect = scenario.expect.get_or_insert_with(Box::default);
    let entry = expect.agents.entry(id.to_string()).or_default();
    entry.log = Some(log_text(&agent.log));
    Some(format!("expect.agents.{id}.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_values_are_exact_and_spell_out_null() {
        assert_eq!(full_value(&json!("a")), json!("a"));
        assert_eq!(
            full_value(&json!([1, {"a": 2}])),
            json!({"$exact": [1, {"a": 2}]})
        );
        assert_eq!(
            full_value(&json!({"b": null, "a": [1]})),
            json!({"$keys": ["b", "a"], "$match": {"b": {"$type": "null"}, "a": {"$exact": [1]}}})
        );
    }
}
