//! Checking a scenario's expectations: every pattern well formed
//! (`pattern.rs` says why not, at the pattern's place in the file), and the
//! few shapes a literal of the wrong size could never match.

use serde_json::Value;

use super::{CompileError, fail};
use crate::format::{AgentExpect, EventQuery, LoopExpect, Pattern, Scenario, StepExpect};

/// Every pattern of the scenario is well formed; a few shapes are checked
/// where a literal of the wrong size could never match.
pub(super) fn check_expectations(scenario: &Scenario) -> Result<(), CompileError> {
    pattern("config_error", &scenario.config_error)?;
    for (index, step) in scenario.steps.iter().enumerate() {
        check_step_expect(&format!("steps[{index}].expect"), &step.expect)?;
    }
    match &scenario.expect {
        Some(expect) => check_loop_expect(scenario, expect),
        None => Ok(()),
    }
}

/// The patterns of one step's `expect`.
fn check_step_expect(path: &str, expect: &Option<StepExpect>) -> Result<(), CompileError> {
    match expect {
        None => {}
        Some(StepExpect::Command(e)) => {
            pattern(&format!("{path}.error"), &e.error)?;
            pattern(&format!("{path}.changes"), &e.changes)?;
            pattern(&format!("{path}.journal"), &e.journal)?;
            pattern(&format!("{path}.value"), &e.value)?;
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
                ("changes", &e.changes),
            ] {
                pattern(&format!("{path}.{key}"), value)?;
            }
        }
    }
    Ok(())
}

/// The patterns of the run-level `[expect]`, its `pending` shape, and the
/// further agents it names.
fn check_loop_expect(scenario: &Scenario, expect: &LoopExpect) -> Result<(), CompileError> {
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
        pattern(&format!("expect.{key}"), value)?;
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
        check_agent_expect(scenario, id, agent)?;
    }
    for (index, call) in expect.llm_request.iter().enumerate() {
        pattern(
            &format!("expect.llm_request[{index}].options"),
            &Some(call.options.clone()),
        )?;
    }
    for (index, event) in expect.events.iter().flatten().enumerate() {
        pattern(&format!("expect.events[{index}]"), &Some(event.clone()))?;
    }
    for (list, queries) in [("query", &expect.query), ("live", &expect.live)] {
        for (index, query) in queries.iter().enumerate() {
            check_query(&format!("expect.{list}[{index}]"), query)?;
        }
    }
    for (index, request) in expect.request.iter().enumerate() {
        let path = format!("expect.request[{index}]");
        pattern(&format!("{path}.body"), &request.body)?;
        pattern(&format!("{path}.headers"), &request.headers)?;
        pattern(
            &format!("{path}.cache_hit_tokens"),
            &request.cache_hit_tokens,
        )?;
    }
    Ok(())
}

/// The patterns of `expect.agents.<id>`, which must name one of `agents`.
fn check_agent_expect(
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
        pattern(&format!("{path}.{key}"), value)?;
    }
    for (index, event) in agent.events.iter().flatten().enumerate() {
        pattern(&format!("{path}.events[{index}]"), &Some(event.clone()))?;
    }
    for (index, query) in agent.query.iter().enumerate() {
        check_query(&format!("{path}.query[{index}]"), query)?;
    }
    if !scenario.agents.iter().any(|a| a.id == id) {
        return fail(&path, format!("`agents` has no agent with id {id:?}"));
    }
    Ok(())
}

/// A pattern's own refusal (`pattern.rs`), at its place in the scenario.
fn pattern(path: &str, pattern: &Option<Pattern>) -> Result<(), CompileError> {
    match pattern.as_ref().map(Pattern::validate) {
        Some(Err(error)) => fail(&format!("{path}{}", error.path), error.message),
        Some(Ok(())) | None => Ok(()),
    }
}

/// Every pattern of one event query.
fn check_query(path: &str, query: &EventQuery) -> Result<(), CompileError> {
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
        pattern(&format!("{path}.{key}"), value)?;
    }
    if let Some(nth) = &query.nth {
        pattern(&format!("{path}.nth.event"), &Some(nth.event.clone()))?;
    }
    Ok(())
}
