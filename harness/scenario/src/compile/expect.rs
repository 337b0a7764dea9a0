//! Checking a scenario's expectations: every pattern well formed
//! (`pattern.rs` says why not, at the pattern's place in the file), every
//! `$ref` naming a capture something in the scenario binds, and the few
//! shapes a literal of the wrong size could never match.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{CompileError, fail};
use crate::format::{AgentExpect, EventQuery, LoopExpect, Pattern, Scenario, StepExpect};
use crate::pattern::NameUse;

/// The capture names the scenario's patterns bind, and the `$ref`s they
/// read (each with the place of its pattern), collected while checking.
#[derive(Default)]
struct Names {
    bound: BTreeSet<String>,
    read: Vec<(String, String)>,
}

/// Every pattern of the scenario is well formed; a few shapes are checked
/// where a literal of the wrong size could never match; a `$ref` to a name
/// nothing binds is refused (under `$not` it would make a typo a pass).
pub(super) fn check_expectations(scenario: &Scenario) -> Result<(), CompileError> {
    let names = &mut Names::default();
    pattern(names, "config_error", &scenario.config_error)?;
    for (index, step) in scenario.steps.iter().enumerate() {
        check_step_expect(names, &format!("steps[{index}].expect"), &step.expect)?;
    }
    if let Some(expect) = &scenario.expect {
        check_loop_expect(names, scenario, expect)?;
    }
    for (path, name) in &names.read {
        if !names.bound.contains(name) {
            let bound: Vec<&str> = names.bound.iter().map(String::as_str).collect();
            let known = match bound.is_empty() {
                true => "nothing is captured in this scenario".to_string(),
                false => format!("captured: {}", bound.join(", ")),
            };
            return fail(
                path,
                format!("`$ref` {name:?} names a capture nothing binds ({known})"),
            );
        }
    }
    Ok(())
}

/// The patterns of one step's `expect`.
fn check_step_expect(
    names: &mut Names,
    path: &str,
    expect: &Option<StepExpect>,
) -> Result<(), CompileError> {
    match expect {
        None => {}
        Some(StepExpect::Command(e)) => {
            pattern(names, &format!("{path}.error"), &e.error)?;
            pattern(names, &format!("{path}.changes"), &e.changes)?;
            pattern(names, &format!("{path}.journal"), &e.journal)?;
            pattern(names, &format!("{path}.value"), &e.value)?;
        }
        Some(StepExpect::Assemble(e)) => {
            for (key, value) in [
                ("error", &e.error),
                ("sections", &e.sections),
                ("contexts", &e.contexts),
                ("tools", &e.tools),
                ("tool_names", &e.tool_names),
                ("variables", &e.variables),
                ("extra", &e.extra),
                ("prompt", &e.prompt),
                ("prompt_error", &e.prompt_error),
                ("snapshot", &e.snapshot),
                ("snapshot_sections", &e.snapshot_sections),
                ("snapshot_error", &e.snapshot_error),
                ("journal", &e.journal),
                ("records", &e.records),
                ("changes", &e.changes),
            ] {
                pattern(names, &format!("{path}.{key}"), value)?;
            }
        }
    }
    Ok(())
}

/// The patterns of the run-level `[expect]`, its `pending` shape, and the
/// further agents it names.
fn check_loop_expect(
    names: &mut Names,
    scenario: &Scenario,
    expect: &LoopExpect,
) -> Result<(), CompileError> {
    for (key, value) in [
        ("event_types", &expect.event_types),
        ("log", &expect.log),
        ("requests", &expect.requests),
        ("request_headers", &expect.request_headers),
        ("request_count", &expect.request_count),
        ("llm_requests", &expect.llm_requests),
        ("journal", &expect.journal),
        ("cache_hit_tokens", &expect.cache_hit_tokens),
        ("cache_breaks", &expect.cache_breaks),
        ("status", &expect.status),
        ("status_transitions", &expect.status_transitions),
        ("pending", &expect.pending),
        ("agent_errors", &expect.agent_errors),
        ("failure", &expect.failure),
    ] {
        pattern(names, &format!("expect.{key}"), value)?;
    }
    if let Some(Value::Array(items)) = expect.pending.as_ref().map(Pattern::source)
        && items.len() != 2
    {
        return fail(
            "expect.pending",
            format!(
                "`pending` is [next-turn, next-step]: 2 numbers, not {}",
                items.len()
            ),
        );
    }
    for (id, agent) in &expect.agents {
        check_agent_expect(names, scenario, id, agent)?;
    }
    for (index, call) in expect.llm_request.iter().enumerate() {
        pattern(
            names,
            &format!("expect.llm_request[{index}].options"),
            &Some(call.options.clone()),
        )?;
    }
    for (index, event) in expect.events.iter().flatten().enumerate() {
        pattern(
            names,
            &format!("expect.events[{index}]"),
            &Some(event.clone()),
        )?;
    }
    for (list, queries) in [("query", &expect.query), ("live", &expect.live)] {
        for (index, query) in queries.iter().enumerate() {
            check_query(names, &format!("expect.{list}[{index}]"), query)?;
        }
    }
    for (index, request) in expect.request.iter().enumerate() {
        let path = format!("expect.request[{index}]");
        pattern(names, &format!("{path}.body"), &request.body)?;
        pattern(names, &format!("{path}.headers"), &request.headers)?;
        pattern(
            names,
            &format!("{path}.cache_hit_tokens"),
            &request.cache_hit_tokens,
        )?;
    }
    Ok(())
}

/// The patterns of `expect.agents.<id>`, which must name one of `agents`.
fn check_agent_expect(
    names: &mut Names,
    scenario: &Scenario,
    id: &str,
    agent: &AgentExpect,
) -> Result<(), CompileError> {
    let path = format!("expect.agents.{id}");
    for (key, value) in [
        ("event_types", &agent.event_types),
        ("log", &agent.log),
        ("status", &agent.status),
        ("status_transitions", &agent.status_transitions),
        ("pending", &agent.pending),
        ("agent_errors", &agent.agent_errors),
    ] {
        pattern(names, &format!("{path}.{key}"), value)?;
    }
    for (index, event) in agent.events.iter().flatten().enumerate() {
        pattern(
            names,
            &format!("{path}.events[{index}]"),
            &Some(event.clone()),
        )?;
    }
    for (index, query) in agent.query.iter().enumerate() {
        check_query(names, &format!("{path}.query[{index}]"), query)?;
    }
    if !scenario.agents.iter().any(|a| a.id == id) {
        return fail(&path, format!("`agents` has no agent with id {id:?}"));
    }
    Ok(())
}

/// A pattern's own refusal (`pattern.rs`), at its place in the scenario;
/// the names it captures and refers to are noted in `names`.
fn pattern(names: &mut Names, path: &str, pattern: &Option<Pattern>) -> Result<(), CompileError> {
    let Some(pattern) = pattern else {
        return Ok(());
    };
    match pattern.tree() {
        Err(error) => fail(&format!("{path}{}", error.path), error.message.clone()),
        Ok(tree) => {
            tree.visit_names(&mut |used, name| match used {
                NameUse::Capture => {
                    names.bound.insert(name.to_string());
                }
                NameUse::Ref => names.read.push((path.to_string(), name.to_string())),
            });
            Ok(())
        }
    }
}

/// Every pattern of one event query.
fn check_query(names: &mut Names, path: &str, query: &EventQuery) -> Result<(), CompileError> {
    for name in query.capture.keys().chain(query.capture_each.keys()) {
        names.bound.insert(name.clone());
    }
    for (key, value) in [
        ("select", &Some(query.select.clone())),
        ("count", &query.count),
        ("first", &query.first),
        ("last", &query.last),
        ("each", &query.each),
        ("before", &query.before),
        ("after", &query.after),
        ("directly_before", &query.directly_before),
        ("directly_after", &query.directly_after),
    ] {
        pattern(names, &format!("{path}.{key}"), value)?;
    }
    if let Some(nth) = &query.nth {
        pattern(
            names,
            &format!("{path}.nth.event"),
            &Some(nth.event.clone()),
        )?;
    }
    Ok(())
}
