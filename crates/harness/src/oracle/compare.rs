//! Comparing a scenario's expectations with what an implementation observed.
//!
//! Only the keys a scenario states are compared, except that an error nobody
//! expected always fails. Each mismatch names the step and key, and carries
//! both sides in a form a person can diff.

use serde::Serialize;

use serde_json::Value;

use dshc_scenario::format::{
    AssembleExpect, CommandExpect, EventExpect, ExpectedError, LoopExpect, Scenario,
};
use dshc_scenario::protocol::{
    AssemblyData, CaseResult, Command, LoopRun, Observation, ObservedError, Rendered,
    RenderedSections,
};

/// One expectation that did not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Where: `config_error`, `steps[3].expect.prompt`, ...
    pub path: String,
    /// The expected side, rendered for a diff.
    pub expected: String,
    /// The observed side, rendered for a diff.
    pub actual: String,
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("<unserializable: {e}>"))
}

fn error_text(error: Option<&ObservedError>) -> String {
    match error {
        None => "(no error)".into(),
        Some(error) => format!("{}: {}", error.name, error.message),
    }
}

fn expected_error_text(error: Option<&ExpectedError>) -> String {
    match error {
        None => "(no error)".into(),
        Some(ExpectedError::Message(message)) => format!("<any>: {message}"),
        Some(ExpectedError::Detailed { message, name }) => format!("{name}: {message}"),
    }
}

fn error_matches(expected: Option<&ExpectedError>, actual: Option<&ObservedError>) -> bool {
    match (expected, actual) {
        (None, None) => true,
        (Some(expected), Some(actual)) => {
            expected.message() == actual.message
                && expected.name().is_none_or(|name| name == actual.name)
        }
        _ => false,
    }
}

struct Collector {
    mismatches: Vec<Mismatch>,
}

impl Collector {
    fn push(&mut self, path: String, expected: String, actual: String) {
        self.mismatches.push(Mismatch {
            path,
            expected,
            actual,
        });
    }

    fn error(
        &mut self,
        path: String,
        expected: Option<&ExpectedError>,
        actual: Option<&ObservedError>,
    ) {
        if !error_matches(expected, actual) {
            self.push(path, expected_error_text(expected), error_text(actual));
        }
    }

    fn value<T: Serialize + PartialEq>(
        &mut self,
        path: String,
        expected: &Option<T>,
        actual: Option<&T>,
    ) {
        let Some(expected) = expected else { return };
        if actual != Some(expected) {
            let actual = actual.map(json).unwrap_or_else(|| "(not observed)".into());
            self.push(path, json(expected), actual);
        }
    }

    fn text(&mut self, path: String, expected: &Option<String>, actual: Option<&Rendered>) {
        let Some(expected) = expected else { return };
        match actual {
            Some(Rendered::Text(text)) if text == expected => {}
            Some(Rendered::Text(text)) => self.push(path, expected.clone(), text.clone()),
            Some(Rendered::Error(error)) => {
                self.push(path, expected.clone(), error_text(Some(error)))
            }
            None => self.push(path, expected.clone(), "(not observed)".into()),
        }
    }

    fn render_error(
        &mut self,
        path: String,
        expected: &Option<ExpectedError>,
        actual: Option<&Rendered>,
    ) {
        let Some(expected) = expected else { return };
        match actual {
            Some(Rendered::Error(error)) => self.error(path, Some(expected), Some(error)),
            Some(Rendered::Text(text)) => self.push(
                path,
                expected_error_text(Some(expected)),
                format!("(rendered) {text}"),
            ),
            None => self.push(
                path,
                expected_error_text(Some(expected)),
                "(not observed)".into(),
            ),
        }
    }

    fn register(&mut self, path: &str, expect: Option<&CommandExpect>, observation: &Observation) {
        let default = CommandExpect::default();
        let expect = expect.unwrap_or(&default);
        self.error(
            format!("{path}.error"),
            expect.error.as_ref(),
            observation.error.as_ref(),
        );
        self.value(
            format!("{path}.changes"),
            &expect.changes,
            Some(&observation.changes),
        );
    }

    fn assemble(&mut self, path: &str, expect: Option<&AssembleExpect>, observation: &Observation) {
        let default = AssembleExpect::default();
        let expect = expect.unwrap_or(&default);
        self.error(
            format!("{path}.error"),
            expect.error.as_ref(),
            observation.error.as_ref(),
        );
        self.value(
            format!("{path}.journal"),
            &expect.journal,
            Some(&observation.journal),
        );
        self.value(
            format!("{path}.changes"),
            &expect.changes,
            Some(&observation.changes),
        );
        let assembly: Option<&AssemblyData> = observation.assembly.as_ref();
        self.value(
            format!("{path}.sections"),
            &expect.sections,
            assembly.map(|a| &a.sections),
        );
        self.value(
            format!("{path}.contexts"),
            &expect.contexts,
            assembly.map(|a| &a.contexts),
        );
        self.value(
            format!("{path}.tools"),
            &expect.tools,
            assembly.map(|a| &a.tools),
        );
        let tool_names: Option<Vec<String>> =
            assembly.map(|a| a.tools.iter().map(|t| t.name.clone()).collect());
        self.value(
            format!("{path}.tool_names"),
            &expect.tool_names,
            tool_names.as_ref(),
        );
        self.value(
            format!("{path}.variables"),
            &expect.variables,
            assembly.map(|a| &a.variables),
        );
        self.value(
            format!("{path}.extra"),
            &expect.extra,
            assembly.map(|a| &a.extra),
        );
        self.text(
            format!("{path}.prompt"),
            &expect.prompt,
            observation.prompt.as_ref(),
        );
        self.render_error(
            format!("{path}.prompt_error"),
            &expect.prompt_error,
            observation.prompt.as_ref(),
        );
        self.text(
            format!("{path}.snapshot"),
            &expect.snapshot,
            observation.snapshot.as_ref(),
        );
        self.render_error(
            format!("{path}.snapshot_error"),
            &expect.snapshot_error,
            observation.snapshot.as_ref(),
        );
        if let Some(expected) = &expect.snapshot_sections {
            match &observation.snapshot_sections {
                Some(RenderedSections::Sections(sections)) if sections == expected => {}
                Some(RenderedSections::Sections(sections)) => self.push(
                    format!("{path}.snapshot_sections"),
                    json(expected),
                    json(sections),
                ),
                Some(RenderedSections::Error(error)) => self.push(
                    format!("{path}.snapshot_sections"),
                    json(expected),
                    error_text(Some(error)),
                ),
                None => self.push(
                    format!("{path}.snapshot_sections"),
                    json(expected),
                    "(not observed)".into(),
                ),
            }
        }
    }
}

/// Compare a scenario's expectations with a case result.
pub fn compare(scenario: &Scenario, result: &CaseResult) -> Vec<Mismatch> {
    let mut collector = Collector {
        mismatches: Vec::new(),
    };
    collector.error(
        "config_error".into(),
        scenario.config_error.as_ref(),
        result.config_error.as_ref(),
    );
    if result.config_error.is_some() {
        return collector.mismatches;
    }
    let offset = scenario.scopes.len();
    for (index, binding) in scenario.scopes.iter().enumerate() {
        if let Some(observation) = result.observations.get(index) {
            collector.error(
                format!("scopes[{index}] ({} -> {})", binding.name, binding.parent),
                None,
                observation.error.as_ref(),
            );
        }
    }
    if result.observations.len() != offset + scenario.steps.len() {
        collector.push(
            "observations".into(),
            format!("{} observations", offset + scenario.steps.len()),
            format!("{} observations", result.observations.len()),
        );
        return collector.mismatches;
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        let observation = &result.observations[offset + index];
        let path = format!("steps[{index}].expect");
        match step.command {
            Command::Assemble(_) => collector.assemble(&path, step.assemble_expect(), observation),
            _ => collector.register(&path, step.command_expect(), observation),
        }
    }
    if let Some(run) = &result.run {
        collector.run(scenario.expect.as_deref(), run);
    }
    collector.mismatches
}

impl Collector {
    /// Loop-level expectations over a whole run.
    fn run(&mut self, expect: Option<&LoopExpect>, run: &LoopRun) {
        let expected_failure = expect.and_then(|e| e.failure.as_ref());
        if run.failure.as_ref() != expected_failure {
            let wanted = expected_failure.map_or("(the run finishes)".into(), Clone::clone);
            let actual = run
                .failure
                .clone()
                .unwrap_or_else(|| "(the run finished)".into());
            self.push("run".into(), wanted, actual);
        }
        for violation in &run.violations {
            self.push("invariant".into(), "(holds)".into(), violation.clone());
        }
        let Some(expect) = expect else { return };
        let types: Vec<String> = run
            .log
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect();
        self.value(
            "expect.event_types".into(),
            &expect.event_types,
            Some(&types),
        );
        if let Some(absent) = &expect.absent {
            let present: Vec<&String> = absent.iter().filter(|kind| types.contains(kind)).collect();
            if !present.is_empty() {
                self.push(
                    "expect.absent".into(),
                    json(absent),
                    format!("present: {}", json(&present)),
                );
            }
        }
        if let Some(events) = &expect.events {
            let mut cursor = 0;
            for (index, wanted) in events.iter().enumerate() {
                match run.log[cursor..]
                    .iter()
                    .position(|event| event_matches(wanted, event))
                {
                    Some(found) => cursor += found + 1,
                    None => {
                        let nearest: Vec<&Value> = run
                            .log
                            .iter()
                            .filter(|e| e["type"] == wanted.kind.as_str())
                            .collect();
                        self.push(
                            format!("expect.events[{index}] ({})", wanted.kind),
                            json(wanted),
                            format!(
                                "no match after seq {cursor}; events of that type:\n{}",
                                json(&nearest)
                            ),
                        );
                        break;
                    }
                }
            }
        }
        if let Some(log) = &expect.log {
            let actual: String = run.log.iter().map(|e| format!("{e}\n")).collect();
            if &actual != log {
                self.push("expect.log".into(), log.clone(), actual);
            }
        }
        let bodies: Vec<Value> = run.requests.iter().map(|r| r.body.clone()).collect();
        self.value("expect.requests".into(), &expect.requests, Some(&bodies));
        let headers: Vec<Vec<[String; 2]>> =
            run.requests.iter().map(|r| r.headers.clone()).collect();
        self.value(
            "expect.request_headers".into(),
            &expect.request_headers,
            Some(&headers),
        );

        self.value(
            "expect.request_count".into(),
            &expect.request_count,
            Some(&run.requests.len()),
        );
        let hits: Vec<u64> = run
            .requests
            .iter()
            .map(|r| r.cache_hit_tokens.unwrap_or(0))
            .collect();
        self.value(
            "expect.cache_hit_tokens".into(),
            &expect.cache_hit_tokens,
            Some(&hits),
        );
        self.value("expect.status".into(), &expect.status, Some(&run.status));
        self.value("expect.pending".into(), &expect.pending, Some(&run.pending));
        let errors: Vec<String> = run
            .live_events
            .iter()
            .filter(|e| e["type"] == "agent/error")
            .map(|e| e["data"]["error"].as_str().unwrap_or_default().to_string())
            .collect();
        self.value(
            "expect.agent_errors".into(),
            &expect.agent_errors,
            Some(&errors),
        );
    }
}

/// Whether a logged event has every field the expectation states.
fn event_matches(wanted: &EventExpect, event: &Value) -> bool {
    event["type"] == wanted.kind.as_str()
        && wanted.seq.is_none_or(|seq| event["seq"] == seq)
        && wanted
            .data
            .as_ref()
            .is_none_or(|data| json(data) == json(&event["data"]))
        && wanted
            .surface_op
            .as_ref()
            .is_none_or(|op| Some(op) == event.get("surfaceOp"))
        && wanted
            .source_event_seqs
            .as_ref()
            .is_none_or(|seqs| event.get("sourceEventSeqs") == Some(&serde_json::json!(seqs)))
}

/// Whether two case results are identical, key order included.
pub fn same_result(a: &CaseResult, b: &CaseResult) -> bool {
    json(a) == json(b)
}
