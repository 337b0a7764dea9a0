//! The bless flow: rewrite a scenario's expectations from what an
//! implementation observed (`DSHC_BLESS=1`). It never runs under CI.
//!
//! Blessing keeps the scenario's choice of what to assert: existing keys are
//! rewritten (a `prompt` becomes a `prompt_error` if rendering now fails, and
//! back); a step without expectations gets a compact default set. The result
//! is meant to be read in `git diff` before it is committed.

use serde::Serialize;

use super::format::{AssembleExpect, ExpectedError, RegisterExpect, Step};
use super::load::LoadedScenario;
use crate::protocol::{CaseResult, Observation, ObservedError, Rendered, RenderedSections};

/// Whether blessing was requested, refusing under CI.
pub fn bless_requested() -> Result<bool, String> {
    match std::env::var("DSHC_BLESS").as_deref() {
        Err(_) | Ok("") | Ok("0") => Ok(false),
        Ok("1") => {
            if std::env::var_os("CI").is_some() {
                Err("DSHC_BLESS=1 is refused when CI is set: CI never rewrites expectations".into())
            } else {
                Ok(true)
            }
        }
        Ok(other) => Err(format!("DSHC_BLESS must be 1 or 0, not {other:?}")),
    }
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
    old: Option<&RegisterExpect>,
    observation: &Observation,
) -> Option<RegisterExpect> {
    let old = old.cloned().unwrap_or_default();
    let new = RegisterExpect {
        error: observation.error.as_ref().map(expected),
        changes: old.changes.map(|_| observation.changes),
    };
    (new != RegisterExpect::default()).then_some(new)
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

fn to_item<T: Serialize>(value: &T) -> Result<toml_edit::Item, String> {
    #[derive(Serialize)]
    struct Wrapper<'a, T> {
        expect: &'a T,
    }
    let text = toml::to_string_pretty(&Wrapper { expect: value }).map_err(|e| e.to_string())?;
    let document: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    document
        .get("expect")
        .cloned()
        .ok_or_else(|| "serialized expectation has no `expect`".to_string())
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
pub fn blessed_source(scenario: &LoadedScenario, result: &CaseResult) -> Result<String, String> {
    let mut document: toml_edit::DocumentMut = scenario
        .source
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    match &result.config_error {
        Some(error) => {
            document["config_error"] = to_item(&expected(error))?;
            return Ok(document.to_string());
        }
        None => {
            document.remove("config_error");
        }
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
        let item = match step {
            Step::Assemble(s) => Some(to_item(&blessed_assemble(
                s.expect.as_deref(),
                observation,
            ))?),
            other => match other.register_expect() {
                Some(expect) => blessed_register(expect, observation)
                    .map(|e| to_item(&e))
                    .transpose()?,
                None => None,
            },
        };
        set_expect(table, item);
    }
    Ok(document.to_string())
}
