//! Comparing a scenario's expectations with what an implementation observed.
//!
//! Only the keys a scenario states are compared, except that an error nobody
//! expected always fails. Each mismatch names the step and key, and carries
//! both sides in a form a person can diff.

use serde::Serialize;

use crate::protocol::{
    AssemblyData, CaseResult, Observation, ObservedError, Rendered, RenderedSections,
};
use crate::scenario::format::{AssembleExpect, ExpectedError, RegisterExpect, Scenario, Step};

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

    fn register(&mut self, path: &str, expect: Option<&RegisterExpect>, observation: &Observation) {
        let default = RegisterExpect::default();
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
        match step {
            Step::Assemble(s) => collector.assemble(&path, s.expect.as_deref(), observation),
            Step::Section(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Context(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Suppress(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Tools(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Variable(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Dispose(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Bind(s) => collector.register(&path, s.expect.as_ref(), observation),
            Step::Listen(_) => collector.register(&path, None, observation),
        }
    }
    collector.mismatches
}

/// Whether two case results are identical, key order included.
pub fn same_result(a: &CaseResult, b: &CaseResult) -> bool {
    json(a) == json(b)
}
