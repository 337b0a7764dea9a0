//! The bless flow: rewrite a scenario's expectations from what an
//! implementation observed (`DSHC_BLESS=1`). It never runs under CI.
//!
//! Blessing keeps the scenario's choice of what to assert: existing keys are
//! rewritten (a `prompt` becomes a `prompt_error` if rendering now fails, and
//! back); a step without expectations gets a compact default set. The result
//! is meant to be read in `git diff` before it is committed.

use serde::Serialize;

use dshc_scenario::format::{AssembleExpect, CommandExpect, ExpectedError, LoopExpect};
use dshc_scenario::load::LoadedScenario;
use dshc_scenario::protocol::{
    CaseResult, Command, LoopRun, Observation, ObservedError, Rendered, RenderedSections,
};

/// Blessing cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum BlessError {
    /// `DSHC_BLESS=1` under CI.
    #[error("DSHC_BLESS=1 is refused when CI is set: CI never rewrites expectations")]
    RefusedUnderCi,
    /// `DSHC_BLESS` is neither 1 nor 0.
    #[error("DSHC_BLESS must be 1 or 0, not {0:?}")]
    BadSetting(String),
    /// The scenario text does not parse as TOML.
    #[error("the scenario is not valid TOML: {0}")]
    Toml(#[from] toml_edit::TomlError),
    /// An observation has no TOML form.
    #[error("cannot write the expectation as TOML: {0}")]
    Unrepresentable(String),
}

/// Whether blessing was requested, refusing under CI.
pub fn bless_requested() -> Result<bool, BlessError> {
    match std::env::var("DSHC_BLESS").as_deref() {
        Err(_) | Ok("") | Ok("0") => Ok(false),
        Ok("1") => {
            if std::env::var_os("CI").is_some() {
                Err(BlessError::RefusedUnderCi)
            } else {
                Ok(true)
            }
        }
        Ok(other) => Err(BlessError::BadSetting(other.to_string())),
    }
}

fn unrepresentable(message: impl ToString) -> BlessError {
    BlessError::Unrepresentable(message.to_string())
}

fn expected(error: &ObservedError) -> ExpectedError {
    if error.name == "Error" {
        ExpectedError::Message(error.message.clone())
    } else {
        ExpectedError::Detailed {
            message: error.message.clone(),
            name: error.name.clone(),
        }
    }
}

fn blessed_register(
    old: Option<&CommandExpect>,
    observation: &Observation,
) -> Option<CommandExpect> {
    let old = old.cloned().unwrap_or_default();
    let new = CommandExpect {
        error: observation.error.as_ref().map(expected),
        changes: old.changes.map(|_| observation.changes),
    };
    (new != CommandExpect::default()).then_some(new)
}

fn blessed_assemble(old: Option<&AssembleExpect>, observation: &Observation) -> AssembleExpect {
    let fresh = old.is_none_or(|o| *o == AssembleExpect::default());
    let old = old.cloned().unwrap_or_default();
    let mut new = AssembleExpect {
        error: observation.error.as_ref().map(expected),
        journal: (fresh || old.journal.is_some()).then(|| observation.journal.clone()),
        changes: old.changes.map(|_| observation.changes),
        ..AssembleExpect::default()
    };
    let Some(assembly) = &observation.assembly else {
        return new;
    };
    new.sections = old.sections.map(|_| assembly.sections.clone());
    new.contexts = old.contexts.map(|_| assembly.contexts.clone());
    new.tools = old.tools.map(|_| assembly.tools.clone());
    new.tool_names = (fresh && !assembly.tools.is_empty() || old.tool_names.is_some())
        .then(|| assembly.tools.iter().map(|t| t.name.clone()).collect());
    new.variables = old.variables.map(|_| assembly.variables.clone());
    new.extra = old.extra.map(|_| assembly.extra.clone());
    let wants_prompt = fresh || old.prompt.is_some() || old.prompt_error.is_some();
    match (&observation.prompt, wants_prompt) {
        (Some(Rendered::Text(text)), true) => new.prompt = Some(text.clone()),
        (Some(Rendered::Error(error)), true) => new.prompt_error = Some(expected(error)),
        _ => {}
    }
    let wants_snapshot = fresh || old.snapshot.is_some() || old.snapshot_error.is_some();
    match (&observation.snapshot, wants_snapshot) {
        (Some(Rendered::Text(text)), true) => new.snapshot = Some(text.clone()),
        (Some(Rendered::Error(error)), true) => new.snapshot_error = Some(expected(error)),
        _ => {}
    }
    if old.snapshot_sections.is_some()
        && let Some(RenderedSections::Sections(sections)) = &observation.snapshot_sections
    {
        new.snapshot_sections = Some(sections.clone());
    }
    new
}

/// A loop scenario's `[expect]` with each stated key rewritten from the run.
/// `events` and `absent` are hand-picked assertions and stay as written.
fn blessed_loop(old: &LoopExpect, run: &LoopRun) -> LoopExpect {
    let types = || {
        run.log
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let errors = || {
        run.live_events
            .iter()
            .filter(|e| e["type"] == "agent/error")
            .map(|e| e["data"]["error"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    LoopExpect {
        event_types: old.event_types.as_ref().map(|_| types()),
        events: old.events.clone(),
        absent: old.absent.clone(),
        log: old
            .log
            .as_ref()
            .map(|_| run.log.iter().map(|e| format!("{e}\n")).collect()),
        requests: old
            .requests
            .as_ref()
            .map(|_| run.requests.iter().map(|r| r.body.clone()).collect()),
        request_headers: old
            .request_headers
            .as_ref()
            .map(|_| run.requests.iter().map(|r| r.headers.clone()).collect()),
        request_count: old.request_count.map(|_| run.requests.len()),
        cache_hit_tokens: old.cache_hit_tokens.as_ref().map(|_| {
            run.requests
                .iter()
                .map(|r| r.cache_hit_tokens.unwrap_or(0))
                .collect()
        }),
        status: old.status.as_ref().map(|_| run.status.clone()),
        pending: old.pending.map(|_| run.pending),
        agent_errors: old.agent_errors.as_ref().map(|_| errors()),
        failure: old.failure.as_ref().and(run.failure.clone()),
    }
}

/// An expectation as a TOML item: a table of inline values for a struct,
/// an inline value otherwise. Built straight from JSON so that key order
/// inside objects survives (TOML's table syntax would move scalar keys first).
fn to_item<T: Serialize>(value: &T) -> Result<toml_edit::Item, BlessError> {
    let json = serde_json::to_value(value).map_err(unrepresentable)?;
    match json {
        serde_json::Value::Object(fields) => {
            let mut table = toml_edit::Table::new();
            for (key, field) in &fields {
                if let Some(value) = toml_value(field)? {
                    table.insert(key, toml_edit::Item::Value(value));
                }
            }
            Ok(toml_edit::Item::Table(table))
        }
        other => toml_value(&other)?
            .map(toml_edit::Item::Value)
            .ok_or_else(|| unrepresentable("an expectation cannot be null")),
    }
}

/// A JSON value as an inline TOML value, keys in order; `None` for null.
fn toml_value(json: &serde_json::Value) -> Result<Option<toml_edit::Value>, BlessError> {
    use serde_json::Value as Json;
    Ok(Some(match json {
        Json::Null => return Ok(None),
        Json::Bool(b) => toml_edit::Value::from(*b),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml_edit::Value::from(i),
            (None, Some(f)) => toml_edit::Value::from(f),
            (None, None) => return Err(unrepresentable(format!("number {n} does not fit TOML"))),
        },
        // Multi-line text is written as a `"""` string, as people write it.
        Json::String(text) if text.contains('\n') => {
            let snippet = toml::to_string_pretty(&std::collections::BTreeMap::from([("v", text)]))
                .map_err(unrepresentable)?;
            let document: toml_edit::DocumentMut = snippet.parse()?;
            document["v"]
                .as_value()
                .cloned()
                .ok_or_else(|| unrepresentable("a string did not round-trip"))?
        }
        Json::String(text) => toml_edit::Value::from(text.as_str()),
        Json::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(
                    toml_value(item)?
                        .ok_or_else(|| unrepresentable("arrays cannot hold null in TOML"))?,
                );
            }
            // Lists of objects read best one element per line.
            if items.iter().any(Json::is_object) {
                for value in array.iter_mut() {
                    value.decor_mut().set_prefix("\n  ");
                }
                array.set_trailing("\n");
                array.set_trailing_comma(true);
            }
            toml_edit::Value::Array(array)
        }

        Json::Object(fields) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, field) in fields {
                if let Some(value) = toml_value(field)? {
                    table.insert(key, value);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    }))
}

fn set_expect(table: &mut toml_edit::Table, item: Option<toml_edit::Item>) {
    match item {
        Some(item) => {
            table.insert("expect", item);
        }
        None => {
            table.remove("expect");
        }
    }
}

/// The scenario text with expectations rewritten from `result`.
pub fn blessed_source(
    scenario: &LoadedScenario,
    result: &CaseResult,
) -> Result<String, BlessError> {
    let mut document: toml_edit::DocumentMut = scenario.source.parse()?;
    match &result.config_error {
        Some(error) => {
            document["config_error"] = to_item(&expected(error))?;
            return Ok(document.to_string());
        }
        None => {
            document.remove("config_error");
        }
    }
    if let (Some(old), Some(run)) = (&scenario.scenario.expect, &result.run) {
        document["expect"] = to_item(&blessed_loop(old, run))?;
    }
    let offset = scenario.scenario.scopes.len();
    let Some(steps) = document
        .get_mut("steps")
        .and_then(|s| s.as_array_of_tables_mut())
    else {
        return Ok(document.to_string());
    };
    for (index, step) in scenario.scenario.steps.iter().enumerate() {
        let Some(observation) = result.observations.get(offset + index) else {
            break;
        };
        let Some(table) = steps.get_mut(index) else {
            break;
        };
        let item = match step.command {
            Command::Assemble(_) => Some(to_item(&blessed_assemble(
                step.assemble_expect(),
                observation,
            ))?),
            _ => blessed_register(step.command_expect(), observation)
                .map(|e| to_item(&e))
                .transpose()?,
        };
        set_expect(table, item);
    }
    Ok(document.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use dshc_scenario::load::parse_scenario;

    use crate::runner::{Outcome, check};

    use super::*;

    /// Blessing a scenario with wrong expectations yields one that passes,
    /// keeps the keys it stated, and keeps JSON key order.
    fn bless_round_trip(source: &str) -> String {
        let path = Path::new("blessed.toml");
        let wrong = parse_scenario(path, source).expect("parses");
        assert!(
            matches!(check(&wrong), Outcome::Fail { .. }),
            "the input must fail first"
        );
        let result = crate::reference::run_case(&wrong.case).expect("a compiled case is valid");
        let blessed = blessed_source(&wrong, &result).expect("blesses");
        let fixed = parse_scenario(path, &blessed).expect("the blessed text parses");
        assert_eq!(check(&fixed), Outcome::Pass, "blessed:\n{blessed}");
        blessed
    }

    #[test]
    fn assembly_expectations_are_rewritten_in_place() {
        let blessed = bless_round_trip(
            "format = 1\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[config]\ninclude_harness_identity = false\npersona = \"A\\nB\"\n\n[[steps]]\ndo = \"tools\"\nprovider = { returns = { schemas = [{ name = \"t\", parameters = { z = 1, a = 2 } }] } }\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = \"wrong\"\nexpect.tools = []\n",
        );
        assert!(blessed.contains("prompt = \"\"\"\nA\nB\"\"\""), "{blessed}");
        assert!(
            blessed.contains("parameters = { z = 1, a = 2 }"),
            "{blessed}"
        );
    }

    #[test]
    fn loop_expectations_are_rewritten_and_hand_picked_events_kept() {
        let blessed = bless_round_trip(
            "format = 1\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[provider]\nresponses = [{ content = [\"ok\"] }]\n\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n\n[expect]\nrequest_count = 7\nstatus = \"running\"\nevents = [{ type = \"turn/end\", data = { turn = 1, reason = { kind = \"completed\" } } }]\n",
        );
        assert!(
            blessed.contains("request_count = 1") && blessed.contains("status = \"idle\""),
            "{blessed}"
        );
        assert!(
            blessed.contains("data = { turn = 1, reason = { kind = \"completed\" } }"),
            "{blessed}"
        );
    }
}
