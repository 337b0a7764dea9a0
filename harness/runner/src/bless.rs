//! The bless flow: rewrite a scenario's expectations from what an
//! implementation observed (`DSHC_BLESS=1`). It never runs under CI.
//!
//! Blessing keeps the scenario's choice of what to assert: existing keys are
//! rewritten (a `prompt` becomes a `prompt_error` if rendering now fails, and
//! back); a step without expectations gets a compact default set. The result
//! is meant to be read in `git diff` before it is committed.

use serde::Serialize;

use dshc_model::js::stringify;
use dshc_scenario::format::{AssembleExpect, CommandExpect, LoopExpect, Pattern, StepExpect};
use dshc_scenario::pattern::PatternNode;
use serde_json::{Map, Value, json};

use dshc_model::session::event_kind;
use dshc_oracle::matching::Matcher;
use dshc_scenario::load::LoadedScenario;
use dshc_scenario::protocol::{
    AssemblyCommand, CaseResult, Command, LoopRun, Observation, ObservedError, Rendered,
    RenderedSections,
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
    /// The rewritten text would not load; the file is left as it was.
    #[error("the blessed text would not load, so the file is kept: {0}")]
    WouldNotLoad(String),
    /// The reference refused the case.
    #[error("the reference cannot run the case: {0}")]
    Invalid(#[from] dshc_scenario::compile::CompileError),
    /// The reference panicked on the case ([`crate::contain`]).
    #[error("the reference panicked on the case: {0}")]
    Panicked(String),
    /// The rewritten file could not replace the original (which is kept).
    #[error("cannot write {path}: {error}")]
    Write {
        /// The scenario file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
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

/// An observed error as an expectation: its message when it is a plain
/// `Error`, else `{name, message}`.
fn expected_error(error: &ObservedError) -> Value {
    if error.name == "Error" {
        Value::String(error.message.clone())
    } else {
        json!({ "name": error.name, "message": error.message })
    }
}

/// An observed value written as a pattern that matches it: as itself,
/// except that an object with a `$` key (a tool's `$schema`, say), which a
/// pattern would read as a matcher, is written under `$equal`.
fn as_pattern(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => {
            json!({ "$equal": value })
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, field)| (key.clone(), as_pattern(field)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(as_pattern).collect()),
        other => other.clone(),
    }
}

/// `pattern` rewritten so that it holds for `actual`: kept where it holds
/// already (matchers included), its shape kept where it is a plain object or
/// an array of the same length, the observed value where nothing else fits.
fn bless_node(pattern: &PatternNode, actual: Option<&Value>) -> Option<Value> {
    let mut matcher = Matcher::new();
    if matcher.test_node(pattern, actual) {
        return Some(pattern.to_value());
    }
    let actual = actual?;
    match (pattern, actual) {
        (PatternNode::Object(fields), Value::Object(object)) => {
            let mut blessed = Map::new();
            for (key, field) in fields {
                let value = bless_node(field, object.get(key))
                    .unwrap_or_else(|| json!({ "$absent": true }));
                blessed.insert(key.clone(), value);
            }
            Some(Value::Object(blessed))
        }
        (PatternNode::Array(patterns), Value::Array(items)) if patterns.len() == items.len() => {
            Some(Value::Array(
                patterns
                    .iter()
                    .zip(items)
                    .map(|(p, item)| bless_node(p, Some(item)).unwrap_or_else(|| as_pattern(item)))
                    .collect(),
            ))
        }
        _ => Some(as_pattern(actual)),
    }
}

/// The blessed form of a stated pattern (`None` when the value is absent).
/// A pattern that does not parse holds for nothing: the observed value
/// replaces it.
fn bless(pattern: &Option<Pattern>, actual: Option<&Value>) -> Option<Pattern> {
    let blessed = match pattern.as_ref()?.tree() {
        Ok(node) => bless_node(node, actual),
        Err(_) => actual.map(as_pattern),
    };
    blessed.map(Pattern::new)
}

fn blessed_error(pattern: &Option<Pattern>, actual: Option<&ObservedError>) -> Option<Pattern> {
    let error = actual?;
    let about_message = pattern
        .as_ref()
        .is_some_and(|p| p.source().is_string() || p.is_matcher());
    let observed = if about_message {
        Value::String(error.message.clone())
    } else {
        serde_json::to_value(error).ok()?
    };
    match pattern {
        Some(pattern) => bless(&Some(pattern.clone()), Some(&observed)),
        None => Some(Pattern::new(expected_error(error))),
    }
}

fn blessed_command(
    old: Option<&CommandExpect>,
    observation: &Observation,
) -> Option<CommandExpect> {
    let old = old.cloned().unwrap_or_default();
    let new = CommandExpect {
        error: blessed_error(&old.error, observation.error.as_ref()),
        changes: bless(&old.changes, Some(&Value::from(observation.changes))),
        journal: bless(&old.journal, Some(&serde_json::json!(observation.journal))),
        value: bless(&old.value, observation.value.as_ref()),
    };
    (new != CommandExpect::default()).then_some(new)
}

fn rendered_value(rendered: &Option<Rendered>) -> (Option<Value>, Option<&ObservedError>) {
    match rendered {
        Some(Rendered::Text(text)) => (Some(Value::String(text.clone())), None),
        Some(Rendered::Error(error)) => (None, Some(error)),
        None => (None, None),
    }
}

fn blessed_assemble(old: Option<&AssembleExpect>, observation: &Observation) -> AssembleExpect {
    let fresh = old.is_none_or(|o| *o == AssembleExpect::default());
    let old = old.cloned().unwrap_or_default();
    let stated = |p: &Option<Pattern>, fresh_value: bool| {
        if p.is_some() {
            p.clone()
        } else if fresh_value {
            Some(Pattern::new(Value::Null))
        } else {
            None
        }
    };
    let journal = json!(observation.journal);
    let mut new = AssembleExpect {
        error: blessed_error(&old.error, observation.error.as_ref()),
        journal: bless(&stated(&old.journal, fresh), Some(&journal)),
        records: bless(
            &stated(&old.records, fresh && !observation.records.is_empty()),
            Some(&json!(observation.records)),
        ),
        changes: bless(&old.changes, Some(&Value::from(observation.changes))),
        ..AssembleExpect::default()
    };
    let Some(assembly) = observation
        .assembly
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
    else {
        return new;
    };
    let names = Value::Array(
        assembly["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["name"].clone())
            .collect(),
    );
    let has_tools = names.as_array().is_some_and(|n| !n.is_empty());
    new.sections = bless(&old.sections, assembly.get("sections"));
    new.contexts = bless(&old.contexts, assembly.get("contexts"));
    new.tools = bless(&old.tools, assembly.get("tools"));
    new.tool_names = bless(&stated(&old.tool_names, fresh && has_tools), Some(&names));
    new.variables = bless(&old.variables, assembly.get("variables"));
    new.extra = bless(
        &old.extra,
        Some(assembly.get("extra").unwrap_or(&json!({}))),
    );
    let (prompt, prompt_error) = rendered_value(&observation.prompt);
    let wants_prompt = fresh || old.prompt.is_some() || old.prompt_error.is_some();
    if wants_prompt {
        new.prompt = bless(&stated(&old.prompt, true), prompt.as_ref());
        new.prompt_error = blessed_error(&old.prompt_error, prompt_error);
    }
    let (snapshot, snapshot_error) = rendered_value(&observation.snapshot);
    let wants_snapshot = fresh || old.snapshot.is_some() || old.snapshot_error.is_some();
    if wants_snapshot {
        new.snapshot = bless(&stated(&old.snapshot, true), snapshot.as_ref());
        new.snapshot_error = blessed_error(&old.snapshot_error, snapshot_error);
    }
    if let Some(RenderedSections::Sections(sections)) = &observation.snapshot_sections {
        new.snapshot_sections = bless(&old.snapshot_sections, Some(&json!(sections)));
    }
    new
}

/// A loop scenario's `[expect]` with each stated value rewritten from the
/// run. Event lists, queries and per-request expectations are hand-picked
/// assertions and stay as written (a still-failing one is reported).
fn blessed_loop(old: &LoopExpect, run: &LoopRun) -> LoopExpect {
    let types = Value::Array(run.log.iter().map(|e| e["type"].clone()).collect());
    let errors = Value::Array(
        run.live_events
            .iter()
            .filter(|e| e["type"] == event_kind::AGENT_ERROR)
            .map(|e| e["data"]["error"].clone())
            .collect(),
    );
    let transitions = Value::Array(
        run.live_events
            .iter()
            .filter(|e| e["type"] == event_kind::AGENT_STATUS)
            .map(|e| e["data"]["status"].clone())
            .collect(),
    );
    let log = Value::String(run.log.iter().map(|e| stringify(e) + "\n").collect());
    let bodies = Value::Array(run.requests.iter().map(|r| r.body.clone()).collect());
    let headers = json!(run.requests.iter().map(|r| &r.headers).collect::<Vec<_>>());
    let hits = json!(
        run.requests
            .iter()
            .map(|r| r.cache_hit_tokens.unwrap_or(0))
            .collect::<Vec<_>>()
    );
    LoopExpect {
        event_types: bless(&old.event_types, Some(&types)),
        log: bless(&old.log, Some(&log)),
        requests: bless(&old.requests, Some(&bodies)),
        request_headers: bless(&old.request_headers, Some(&headers)),
        request_count: bless(&old.request_count, Some(&Value::from(run.requests.len()))),
        cache_hit_tokens: bless(&old.cache_hit_tokens, Some(&hits)),
        status: bless(&old.status, Some(&Value::String(run.status.clone()))),
        status_transitions: bless(&old.status_transitions, Some(&transitions)),
        pending: bless(&old.pending, Some(&json!(run.pending))),
        agent_errors: bless(&old.agent_errors, Some(&errors)),
        failure: match (&old.failure, &run.failure) {
            (_, None) => None,
            (old, Some(failure)) => bless(
                &Some(old.clone().unwrap_or(Pattern::new(Value::Null))),
                Some(&Value::String(failure.clone())),
            ),
        },
        ..old.clone()
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

/// Rewrite a scenario file's expectations from the reference's run of it,
/// replacing the file only once the new text is whole
/// ([`dshc_scenario::data_file::replace_file`]).
pub fn bless_file(scenario: &LoadedScenario) -> Result<(), BlessError> {
    let result = crate::contain::contained(|| dshc_reference::run_case(&scenario.case))
        .map_err(BlessError::Panicked)??;
    let text = blessed_source(scenario, &result)?;
    if let Err(error) = dshc_scenario::load::parse_scenario(&scenario.path, &text) {
        return Err(BlessError::WouldNotLoad(error.to_string()));
    }
    dshc_scenario::data_file::replace_file(&scenario.path, &text).map_err(|error| {
        BlessError::Write {
            path: scenario.path.display().to_string(),
            error,
        }
    })
}

/// The scenario text with expectations rewritten from `result`.
pub fn blessed_source(
    scenario: &LoadedScenario,
    result: &CaseResult,
) -> Result<String, BlessError> {
    let mut document: toml_edit::DocumentMut = scenario.source.parse()?;
    match &result.config_error {
        Some(error) => {
            let blessed = blessed_error(&scenario.scenario.config_error, Some(error));
            document["config_error"] = to_item(&blessed)?;
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
        let item = match (&step.command, &step.expect) {
            (Command::Assembly(AssemblyCommand::Assemble(_)), expect) => {
                let old = match expect {
                    Some(StepExpect::Assemble(old)) => Some(old.as_ref()),
                    _ => None,
                };
                Some(to_item(&blessed_assemble(old, observation))?)
            }
            (_, _) => blessed_command(step.command_expect(), observation)
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

    use crate::check::{Outcome, check};

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
        let result = dshc_reference::run_case(&wrong.case).expect("a compiled case is valid");
        let blessed = blessed_source(&wrong, &result).expect("blesses");
        let fixed = parse_scenario(path, &blessed).expect("the blessed text parses");
        assert_eq!(check(&fixed), Outcome::Pass, "blessed:\n{blessed}");
        blessed
    }

    #[test]
    fn assembly_expectations_are_rewritten_in_place() {
        let blessed = bless_round_trip(
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[config]\ninclude_harness_identity = false\npersona = \"A\\nB\"\n\n[[steps]]\ndo = \"tools\"\nprovider = { returns = { schemas = [{ name = \"t\", parameters = { z = 1, a = 2 } }] } }\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = \"wrong\"\nexpect.tools = []\n",
        );
        assert!(blessed.contains("prompt = \"\"\"\nA\nB\"\"\""), "{blessed}");
        assert!(
            blessed.contains("parameters = { z = 1, a = 2 }"),
            "{blessed}"
        );
    }

    #[test]
    fn observed_dollar_keys_are_written_as_values_not_matchers() {
        let blessed = bless_round_trip(
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[config]\ninclude_harness_identity = false\n\n[[steps]]\ndo = \"tools\"\nprovider = { returns = { schemas = [{ name = \"t\", parameters = { \"$schema\" = \"s\", \"$ref\" = \"#/x\", type = \"object\" } }] } }\n\n[[steps]]\ndo = \"assemble\"\nexpect.tools = []\n",
        );
        assert!(blessed.contains("\"$equal\" = {"), "{blessed}");
    }

    #[test]
    fn a_blessed_text_that_would_not_load_keeps_the_file() {
        let dir = std::env::temp_dir().join(format!("dshc-bless-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        let path = dir.join("s.toml");
        let source = "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[config]\ninclude_harness_identity = false\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = \"wrong\"\n";
        std::fs::write(&path, source).expect("written");
        let mut loaded = parse_scenario(&path, source).expect("parses");
        // A source the blessing cannot make load (its clause list emptied
        // after loading): the check before the rename refuses it.
        loaded.source = loaded.source.replace("[\"03:R4\"]", "[]");
        let error = bless_file(&loaded).expect_err("refused");
        assert!(matches!(error, BlessError::WouldNotLoad(_)), "{error}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), source);
        std::fs::remove_dir_all(&dir).expect("removed");
    }

    #[test]
    fn loop_expectations_are_rewritten_and_hand_picked_events_kept() {
        let blessed = bless_round_trip(
            "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[provider]\nresponses = [{ content = [\"ok\"] }]\n\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n\n[expect]\nrequest_count = 7\nstatus = \"running\"\nevents = [{ type = \"turn/end\", data = { turn = 1, reason = { kind = \"completed\" } } }]\n",
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
