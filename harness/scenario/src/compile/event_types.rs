//! Event types a scenario names: each must be one a run can log. A
//! misspelt `select = { type = "turn/strat" }` would otherwise load and
//! only fail at run time, saying that no such event was logged; here it
//! is refused at load, with the nearest type a run could log.
//!
//! A run logs dsh's own kinds ([`dshc_model::session::event_kind::ALL`]),
//! and whatever the scenario itself puts in a log: the types of its direct
//! `append`s and of its agents' seeds.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fail;
use crate::format::{EventQuery, LoopExpect, Scenario};
use crate::pattern::{Contains, Operator, Pattern, PatternNode};
use crate::protocol::{Command, LoopCommand, LoopListenerCommand};
use dshc_model::session::event_kind;

use super::CompileError;

/// Refuse an event type no run of this scenario can log: in a
/// `session/event` observer's `event_types`, as the literal `type` of an
/// expected event or of a query's `select`, and in `expect.event_types`.
pub(super) fn check_event_types(scenario: &Scenario) -> Result<(), CompileError> {
    let known = loggable_types(scenario);
    for (index, step) in scenario.steps.iter().enumerate() {
        if let Command::Loop(
            LoopCommand::OnSessionEvent(LoopListenerCommand {
                event_types: Some(types),
                ..
            })
            | LoopCommand::OnSessionAppend(LoopListenerCommand {
                event_types: Some(types),
                ..
            }),
        ) = &step.command
        {
            for (position, kind) in types.iter().enumerate() {
                check_one(
                    &known,
                    &format!("steps[{index}].event_types[{position}]"),
                    kind,
                )?;
            }
        }
    }
    if let Some(expect) = &scenario.expect {
        check_expect(&known, expect)?;
    }
    Ok(())
}

/// The types of the expected events and of every query's `select`.
fn check_expect(known: &BTreeSet<String>, expect: &LoopExpect) -> Result<(), CompileError> {
    let events = |path: String, events: &Option<Vec<Pattern>>| {
        events
            .iter()
            .flatten()
            .enumerate()
            .map(move |(index, event)| (format!("{path}[{index}]"), event.clone()))
            .collect::<Vec<_>>()
    };
    let queries = |path: String, queries: &[EventQuery]| {
        let mut patterns = Vec::new();
        for (index, query) in queries.iter().enumerate() {
            patterns.push((format!("{path}[{index}].select"), query.select.clone()));
            for (key, pattern) in [
                ("before", &query.before),
                ("after", &query.after),
                ("directly_before", &query.directly_before),
                ("directly_after", &query.directly_after),
            ] {
                if let Some(pattern) = pattern {
                    patterns.push((format!("{path}[{index}].{key}"), pattern.clone()));
                }
            }
        }
        patterns
    };
    let mut patterns = events("expect.events".into(), &expect.events);
    patterns.extend(queries("expect.query".into(), &expect.query));
    patterns.extend(queries("expect.live".into(), &expect.live));
    for (id, agent) in &expect.agents {
        patterns.extend(events(format!("expect.agents.{id}.events"), &agent.events));
        patterns.extend(queries(format!("expect.agents.{id}.query"), &agent.query));
    }
    for (path, pattern) in patterns {
        if let Some((at, kind)) = literal_type(&pattern) {
            check_one(known, &format!("{path}{at}"), kind)?;
        }
    }
    let lists = std::iter::once(("expect.event_types".to_string(), &expect.event_types)).chain(
        expect.agents.iter().map(|(id, agent)| {
            (
                format!("expect.agents.{id}.event_types"),
                &agent.event_types,
            )
        }),
    );
    for (path, list) in lists {
        if let Some(tree) = list.as_ref().and_then(|list| list.tree().ok()) {
            for kind in listed_types(tree) {
                check_one(known, &path, &kind)?;
            }
        }
    }
    Ok(())
}

/// The event types a pattern on a list of event types names literally: its
/// elements' strings, in arrays, `$in_order`, `$prefix`, `$contains`,
/// `$some`, `$each`, `$exact` and `$equal`, through `$not`, `$any_of` and
/// `$match` (a prefix, a regular expression or a length names none).
fn listed_types(list: &PatternNode) -> Vec<String> {
    let mut kinds = Vec::new();
    let element = element_types;
    match list {
        PatternNode::Array(elements) => elements.iter().for_each(|e| element(e, &mut kinds)),
        PatternNode::Matcher(operators) => {
            for operator in operators {
                match operator {
                    Operator::InOrder(elements)
                    | Operator::Prefix(elements)
                    | Operator::Contains(Contains::Elements(elements)) => {
                        elements.iter().for_each(|e| element(e, &mut kinds));
                    }
                    Operator::SomeElement(e) | Operator::Each(e) => element(e, &mut kinds),
                    Operator::Exact(Value::Array(values))
                    | Operator::Equal(Value::Array(values)) => {
                        kinds.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    Operator::Not(inner) | Operator::Match(inner) => {
                        kinds.extend(listed_types(inner))
                    }
                    Operator::AnyOf(alternatives) => {
                        alternatives
                            .iter()
                            .for_each(|a| kinds.extend(listed_types(a)));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    kinds
}

/// The event types one element pattern names literally.
fn element_types(element: &PatternNode, kinds: &mut Vec<String>) {
    match element {
        PatternNode::Literal(Value::String(kind)) => kinds.push(kind.clone()),
        PatternNode::Matcher(operators) => {
            for operator in operators {
                match operator {
                    Operator::Exact(Value::String(kind)) | Operator::Equal(Value::String(kind)) => {
                        kinds.push(kind.clone());
                    }
                    Operator::Not(inner) => element_types(inner, kinds),
                    Operator::AnyOf(alternatives) => {
                        alternatives.iter().for_each(|a| element_types(a, kinds));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The event type an event pattern names as a plain string, if it does,
/// and where below the pattern: a string is short for `{ type = "..." }`.
fn literal_type(pattern: &Pattern) -> Option<(&'static str, &str)> {
    match pattern.tree().ok()? {
        PatternNode::Literal(Value::String(kind)) => Some(("", kind.as_str())),
        PatternNode::Object(entries) => {
            entries
                .iter()
                .find_map(|(key, node)| match (key.as_str(), node) {
                    ("type", PatternNode::Literal(Value::String(kind))) => {
                        Some((".type", kind.as_str()))
                    }
                    _ => None,
                })
        }
        _ => None,
    }
}

fn check_one(known: &BTreeSet<String>, path: &str, kind: &str) -> Result<(), CompileError> {
    if known.contains(kind) {
        return Ok(());
    }
    let nearest = known
        .iter()
        .min_by_key(|candidate| edit_distance(candidate, kind))
        .map(|candidate| format!(" (did you mean {candidate:?}?)"))
        .unwrap_or_default();
    fail(
        path,
        format!(
            "no run of this scenario logs an event of type {kind:?}{nearest}: a run logs dsh's \
             own types ({}) and those the scenario appends or seeds",
            event_kind::ALL.join(", ")
        ),
    )
}

/// dsh's kinds, and the types the scenario's appends and seeds log.
fn loggable_types(scenario: &Scenario) -> BTreeSet<String> {
    let mut known: BTreeSet<String> = event_kind::ALL.iter().map(|k| k.to_string()).collect();
    for step in &scenario.steps {
        if let Command::Loop(LoopCommand::Append(append)) = &step.command {
            known.insert(append.kind.clone());
        }
    }
    let seeds = scenario.agent.iter().chain(&scenario.agents);
    for event in seeds.flat_map(|agent| agent.seed.iter().flatten()) {
        if let Some(kind) = event.0.get("type").and_then(Value::as_str) {
            known.insert(kind.to_string());
        }
    }
    known
}

/// The Levenshtein distance of two strings, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("turn/start", "turn/start"), 0);
        assert_eq!(edit_distance("turn/start", "turn/strat"), 2);
        assert_eq!(edit_distance("step/end", "step/ends"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
