//! Comparing a scenario's expectations with what an implementation observed.
//!
//! Every expectation is a pattern, checked by the one matching module
//! ([`super::matching`]) against the observation in JSON form: the same code
//! for both levels and for every implementation. Keys a scenario leaves out
//! are not compared, except that an error nobody expected always fails. Each
//! mismatch names the expectation, the matcher and what was there; a query
//! or an event list that finds nothing shows the nearest candidates.

use std::borrow::Cow;

use crate::invariants::Violation;
use serde::Serialize;
use serde_json::{Map, Value, json};

use dshc_model::js::stringify;
use dshc_scenario::format::{
    AgentExpect, EventQuery, LoopExpect, Pattern, RequestExpect, Scenario, StepExpect,
};
use dshc_scenario::protocol::{
    AgentRun, CaseResult, LoopRun, Observation, ObservedError, Rendered, RenderedSections,
};

use super::matching::{Matcher, Miss, show};
use dshc_model::session::event_kind;

/// One expectation that did not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Where: `config_error`, `steps[3].expect.prompt`, `expect.query[0].count`, ...
    pub path: String,
    /// The expected side, naming the matcher, rendered for a diff.
    pub expected: String,
    /// The observed side, rendered for a diff.
    pub actual: String,
}

/// How many candidates a failed selection shows.
const MAX_CANDIDATES: usize = 8;

fn error_json(error: &ObservedError) -> Value {
    serde_json::to_value(error).unwrap_or_else(|e| json!({ "unserializable": e.to_string() }))
}

fn error_text(error: &ObservedError) -> String {
    match &error.code {
        Some(code) => format!("{}: {} [{code}]", error.name, error.message),
        None => format!("{}: {}", error.name, error.message),
    }
}

/// The value at a dotted path (`data.message.content[0].text`).
pub fn value_at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = value;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            current = current.get(key)?;
        }
        for index in indices.split('[').filter(|i| !i.is_empty()) {
            let index: usize = index.trim_end_matches(']').parse().ok()?;
            current = current.get(index)?;
        }
    }
    Some(current)
}

/// A query's selector as a pattern: a string is short for `{type = ...}`.
fn selector(pattern: &Pattern) -> Cow<'_, Pattern> {
    match pattern.source() {
        Value::String(kind) => Cow::Owned(Pattern::new(json!({ "type": kind }))),
        _ => Cow::Borrowed(pattern),
    }
}

/// The headers of a request as an object: lowercased names, repeated
/// names joined with `, ` (as fetch's `Headers` reads them).
fn headers_object(headers: &[[String; 2]]) -> Value {
    let mut object = Map::new();
    for [name, value] in headers {
        let name = name.to_ascii_lowercase();
        let joined = match object.get(&name).and_then(Value::as_str) {
            Some(previous) => format!("{previous}, {value}"),
            None => value.clone(),
        };
        object.insert(name, Value::String(joined));
    }
    Value::Object(object)
}

struct Comparison {
    matcher: Matcher,
    mismatches: Vec<Mismatch>,
}

impl Comparison {
    fn push(&mut self, path: String, expected: String, actual: String) {
        self.mismatches.push(Mismatch {
            path,
            expected,
            actual,
        });
    }

    fn miss(&mut self, path: &str, miss: Miss) {
        self.push(format!("{path}{}", miss.path), miss.expected, miss.actual);
    }

    /// `pattern` (when stated) against `actual` (`None`: absent).
    fn value(&mut self, path: &str, pattern: Option<&Pattern>, actual: Option<&Value>) {
        let Some(pattern) = pattern else { return };
        if let Err(miss) = self.matcher.check(pattern, actual) {
            self.miss(path, miss);
        }
    }

    /// An error expectation: a string or string matcher is about the
    /// message; an object is a partial pattern over `{name, message, code}`.
    /// An error nobody expected always fails.
    fn error(&mut self, path: &str, pattern: Option<&Pattern>, actual: Option<&ObservedError>) {
        match (pattern, actual) {
            (None, None) => {}
            (None, Some(error)) => self.push(path.into(), "(no error)".into(), error_text(error)),
            (Some(pattern), None) => {
                if let Err(miss) = self.matcher.check(pattern, None) {
                    let actual = "(no error)".to_string();
                    self.miss(path, Miss { actual, ..miss });
                }
            }
            (Some(pattern), Some(error)) => {
                let about_message = pattern.source().is_string() || pattern.is_matcher();
                let result = if about_message {
                    let message = Value::String(error.message.clone());
                    self.matcher
                        .check(pattern, Some(&message))
                        .map_err(|miss| Miss {
                            path: ".message".into(),
                            actual: error_text(error),
                            ..miss
                        })
                } else {
                    self.matcher.check(pattern, Some(&error_json(error)))
                };
                if let Err(miss) = result {
                    self.miss(path, miss);
                }
            }
        }
    }

    fn rendered(&mut self, path: &str, pattern: Option<&Pattern>, actual: Option<&Rendered>) {
        let Some(pattern) = pattern else { return };
        match actual {
            Some(Rendered::Text(text)) => {
                self.value(path, Some(pattern), Some(&Value::String(text.clone())))
            }
            Some(Rendered::Error(error)) => self.push(
                path.into(),
                show(Some(pattern.source())),
                format!("(rendering threw) {}", error_text(error)),
            ),
            None => self.push(
                path.into(),
                show(Some(pattern.source())),
                "(not observed)".into(),
            ),
        }
    }

    fn render_error(&mut self, path: &str, pattern: Option<&Pattern>, actual: Option<&Rendered>) {
        let Some(pattern) = pattern else { return };
        match actual {
            Some(Rendered::Error(error)) => self.error(path, Some(pattern), Some(error)),
            Some(Rendered::Text(text)) => self.push(
                path.into(),
                show(Some(pattern.source())),
                format!("(rendered) {text}"),
            ),
            None => self.push(
                path.into(),
                show(Some(pattern.source())),
                "(not observed)".into(),
            ),
        }
    }

    fn command(&mut self, path: &str, step: &StepExpect, observation: &Observation) {
        match step {
            StepExpect::Command(expect) => {
                self.error(
                    &format!("{path}.error"),
                    expect.error.as_ref(),
                    observation.error.as_ref(),
                );
                let changes = Value::from(observation.changes);
                self.value(
                    &format!("{path}.changes"),
                    expect.changes.as_ref(),
                    Some(&changes),
                );
                let journal = json!(observation.journal);
                self.value(
                    &format!("{path}.journal"),
                    expect.journal.as_ref(),
                    Some(&journal),
                );
                self.value(
                    &format!("{path}.value"),
                    expect.value.as_ref(),
                    observation.value.as_ref(),
                );
            }
            StepExpect::Assemble(expect) => self.assemble(path, expect, observation),
        }
    }

    fn assemble(
        &mut self,
        path: &str,
        expect: &dshc_scenario::format::AssembleExpect,
        observation: &Observation,
    ) {
        self.error(
            &format!("{path}.error"),
            expect.error.as_ref(),
            observation.error.as_ref(),
        );
        let journal = json!(observation.journal);
        self.value(
            &format!("{path}.journal"),
            expect.journal.as_ref(),
            Some(&journal),
        );
        let records = Value::Array(observation.records.clone());
        self.value(
            &format!("{path}.records"),
            expect.records.as_ref(),
            Some(&records),
        );
        let changes = Value::from(observation.changes);
        self.value(
            &format!("{path}.changes"),
            expect.changes.as_ref(),
            Some(&changes),
        );
        let assembly = observation
            .assembly
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok());
        let field = |key: &str| assembly.as_ref().and_then(|a| a.get(key)).cloned();
        let tool_names = assembly.as_ref().map(|a| {
            let names = a["tools"].as_array().into_iter().flatten();
            Value::Array(names.map(|t| t["name"].clone()).collect())
        });
        let extra = assembly
            .as_ref()
            .map(|a| a.get("extra").cloned().unwrap_or(json!({})));
        for (key, pattern, actual) in [
            ("sections", &expect.sections, field("sections")),
            ("contexts", &expect.contexts, field("contexts")),
            ("tools", &expect.tools, field("tools")),
            ("tool_names", &expect.tool_names, tool_names),
            ("variables", &expect.variables, field("variables")),
            ("extra", &expect.extra, extra),
        ] {
            if pattern.is_some() && actual.is_none() {
                let wanted = show(pattern.as_ref().map(Pattern::source));
                self.push(format!("{path}.{key}"), wanted, "(no assembly)".into());
                continue;
            }
            self.value(&format!("{path}.{key}"), pattern.as_ref(), actual.as_ref());
        }
        self.rendered(
            &format!("{path}.prompt"),
            expect.prompt.as_ref(),
            observation.prompt.as_ref(),
        );
        self.render_error(
            &format!("{path}.prompt_error"),
            expect.prompt_error.as_ref(),
            observation.prompt.as_ref(),
        );
        self.rendered(
            &format!("{path}.snapshot"),
            expect.snapshot.as_ref(),
            observation.snapshot.as_ref(),
        );
        self.render_error(
            &format!("{path}.snapshot_error"),
            expect.snapshot_error.as_ref(),
            observation.snapshot.as_ref(),
        );
        if let Some(pattern) = &expect.snapshot_sections {
            let key = format!("{path}.snapshot_sections");
            match &observation.snapshot_sections {
                Some(RenderedSections::Sections(sections)) => {
                    let sections = json!(sections);
                    self.value(&key, Some(pattern), Some(&sections));
                }
                Some(RenderedSections::Error(error)) => {
                    self.push(key, show(Some(pattern.source())), error_text(error))
                }
                None => self.push(key, show(Some(pattern.source())), "(not observed)".into()),
            }
        }
    }

    /// The candidates shown when nothing matches `pattern`: events of the
    /// type it names (or all), each with its first differing field.
    fn candidates(&mut self, pattern: &Pattern, events: &[Value]) -> String {
        let kind = pattern.source().get("type").filter(|k| k.is_string());
        let mut lines = Vec::new();
        let mut shown = 0;
        for event in events {
            if kind.is_some_and(|kind| event.get("type") != Some(kind)) {
                continue;
            }
            if shown == MAX_CANDIDATES {
                lines.push("  …".to_string());
                break;
            }
            shown += 1;
            let seq = event.get("seq").map_or("-".into(), |s| show(Some(s)));
            let why = match self.matcher.probe(pattern, Some(event)) {
                Ok(()) => "matches".to_string(),
                Err(miss) => format!(
                    "{}: expected {}, got {}",
                    miss.path, miss.expected, miss.actual
                ),
            };
            lines.push(format!("  seq {seq} ({}): {why}", show(event.get("type"))));
        }
        if lines.is_empty() {
            match kind {
                Some(kind) => format!("no event of type {} at all", show(Some(kind))),
                None => "the log is empty".into(),
            }
        } else {
            format!("nearest candidates:\n{}", lines.join("\n"))
        }
    }

    /// The events `pattern` matches, tried one by one with no capture kept
    /// and no copy of the captures made.
    fn select(&mut self, pattern: &Pattern, events: &[Value]) -> Vec<usize> {
        (0..events.len())
            .filter(|&i| self.matcher.probe(pattern, Some(&events[i])).is_ok())
            .collect()
    }

    fn query(&mut self, path: &str, query: &EventQuery, events: &[Value]) {
        let select = selector(&query.select);
        let selected = self.select(&select, events);
        if let Some(count) = &query.count {
            let len = Value::from(selected.len());
            if let Err(miss) = self.matcher.check(count, Some(&len)) {
                let actual = format!("{} ({})", miss.actual, self.candidates(&select, events));
                self.push(format!("{path}.count"), miss.expected, actual);
            }
        }
        let needs_events = query.first.is_some()
            || query.last.is_some()
            || query.nth.is_some()
            || query.before.is_some()
            || query.after.is_some()
            || query.directly_before.is_some()
            || query.directly_after.is_some()
            || !query.capture.is_empty();
        if selected.is_empty() && needs_events {
            let candidates = self.candidates(&select, events);
            self.push(
                format!("{path}.select"),
                format!("some event matching {}", show(Some(select.source()))),
                candidates,
            );
            return;
        }
        let at = |position: usize| &events[selected[position]];
        if let Some(first) = &query.first {
            self.value(&format!("{path}.first"), Some(first), Some(at(0)));
        }
        if let Some(last) = &query.last {
            self.value(
                &format!("{path}.last"),
                Some(last),
                Some(at(selected.len() - 1)),
            );
        }
        if let Some(nth) = &query.nth {
            match selected.get(nth.index) {
                Some(&index) => self.value(
                    &format!("{path}.nth"),
                    Some(&nth.event),
                    Some(&events[index]),
                ),
                None => self.push(
                    format!("{path}.nth.index"),
                    format!("an event at position {}", nth.index),
                    format!("{} selected", selected.len()),
                ),
            }
        }
        if let Some(each) = &query.each {
            for &index in &selected {
                let event = &events[index];
                if let Err(miss) = self.matcher.check(each, Some(event)) {
                    let seq = show(event.get("seq"));
                    self.miss(&format!("{path}.each (seq {seq})"), miss);
                    break;
                }
            }
        }
        self.order(path, query, &selected, events);
        for (name, field) in &query.capture {
            match value_at(at(0), field) {
                Some(value) => {
                    if let Err(miss) = self.matcher.bind(name, value.clone(), "") {
                        self.miss(&format!("{path}.capture.{name}"), miss);
                    }
                }
                None => self.push(
                    format!("{path}.capture.{name}"),
                    format!("a value at {field}"),
                    show(Some(at(0))),
                ),
            }
        }
        for (name, field) in &query.capture_each {
            let values: Option<Vec<Value>> = selected
                .iter()
                .map(|&i| value_at(&events[i], field).cloned())
                .collect();
            match values {
                Some(values) => {
                    if let Err(miss) = self.matcher.bind(name, Value::Array(values), "") {
                        self.miss(&format!("{path}.capture_each.{name}"), miss);
                    }
                }
                None => self.push(
                    format!("{path}.capture_each.{name}"),
                    format!("a value at {field} in every selected event"),
                    "(missing in some)".into(),
                ),
            }
        }
    }

    fn order(&mut self, path: &str, query: &EventQuery, selected: &[usize], events: &[Value]) {
        let relations: [(&str, &Option<Pattern>); 4] = [
            ("before", &query.before),
            ("after", &query.after),
            ("directly_before", &query.directly_before),
            ("directly_after", &query.directly_after),
        ];
        for (relation, other) in relations {
            let Some(other) = other else { continue };
            let other = selector(other);
            let others = self.select(&other, events);
            let seq_of = |i: usize| show(events[i].get("seq"));
            let key = format!("{path}.{relation}");
            let (Some(&first), Some(&last)) = (selected.first(), selected.last()) else {
                continue;
            };
            let failure =
                match relation {
                    "before" | "after" if others.is_empty() => {
                        Some(format!("no event matches {}", show(Some(other.source()))))
                    }
                    "before" => (last >= others[0]).then(|| {
                        format!(
                            "seq {} does not come before seq {}",
                            seq_of(last),
                            seq_of(others[0])
                        )
                    }),
                    "after" => {
                        let other_last = others[others.len() - 1];
                        (first <= other_last).then(|| {
                            format!(
                                "seq {} does not come after seq {}",
                                seq_of(first),
                                seq_of(other_last)
                            )
                        })
                    }
                    "directly_before" => selected
                        .iter()
                        .find(|&&i| !others.contains(&(i + 1)))
                        .map(|&i| match events.get(i + 1) {
                            Some(next) => format!(
                                "seq {} is followed by {}",
                                seq_of(i),
                                show(next.get("type"))
                            ),
                            None => format!("seq {} is the last event", seq_of(i)),
                        }),
                    _ => selected
                        .iter()
                        .find(|&&i| i == 0 || !others.contains(&(i - 1)))
                        .map(|&i| match i.checked_sub(1).map(|p| &events[p]) {
                            Some(previous) => {
                                format!("seq {} follows {}", seq_of(i), show(previous.get("type")))
                            }
                            None => format!("seq {} is the first event", seq_of(i)),
                        }),
                };
            if let Some(failure) = failure {
                self.push(
                    key,
                    format!("{relation} {}", show(Some(other.source()))),
                    failure,
                );
            }
        }
    }

    fn events_in_order(&mut self, path: &str, patterns: &[Pattern], events: &[Value]) {
        let mut cursor = 0;
        for (index, pattern) in patterns.iter().enumerate() {
            let found =
                (cursor..events.len()).find(|&i| self.matcher.test(pattern, Some(&events[i])));
            match found {
                Some(found) => cursor = found + 1,
                None => {
                    let candidates = self.candidates(pattern, events);
                    self.push(
                        format!("{path}[{index}]"),
                        format!(
                            "{} (after the events matched before it)",
                            show(Some(pattern.source()))
                        ),
                        candidates,
                    );
                    return;
                }
            }
        }
    }

    /// One `[[expect.request]]` entry. Its mismatches are named by the
    /// request they are about (`expect.request[index = 2]`), not by the
    /// entry's position among the entries.
    fn request(&mut self, expect: &RequestExpect, run: &LoopRun) {
        let path = format!("expect.request[index = {}]", expect.index);
        let Some(request) = run.requests.get(expect.index) else {
            self.push(
                format!("{path}.index"),
                format!("a request at position {}", expect.index),
                format!("{} requests", run.requests.len()),
            );
            return;
        };
        self.value(
            &format!("{path}.body"),
            expect.body.as_ref(),
            Some(&request.body),
        );
        let headers = headers_object(&request.headers);
        self.value(
            &format!("{path}.headers"),
            expect.headers.as_ref(),
            Some(&headers),
        );
        let hits = request.cache_hit_tokens.map(Value::from);
        self.value(
            &format!("{path}.cache_hit_tokens"),
            expect.cache_hit_tokens.as_ref(),
            hits.as_ref(),
        );
    }

    fn run(
        &mut self,
        expect: Option<&LoopExpect>,
        run: &LoopRun,
        violations: &[Violation],
        main_agent: &str,
    ) {
        self.run_failure(expect, run);
        for violation in violations {
            self.push("invariant".into(), "(holds)".into(), violation.to_string());
        }
        let Some(expect) = expect else { return };
        self.agents(expect, run, main_agent);
        self.requests(expect, run);
        self.scripted_calls(expect, run);
        self.request_facts(expect, run);
        for (index, query) in expect.live.iter().enumerate() {
            self.query(&format!("expect.live[{index}]"), query, &run.live_events);
        }
    }

    /// `expect.failure` against how the run ended.
    fn run_failure(&mut self, expect: Option<&LoopExpect>, run: &LoopRun) {
        let expected_failure = expect.and_then(|e| e.failure.as_ref());
        match (&run.failure, expected_failure) {
            (None, None) => {}
            (Some(failure), None) => {
                self.push("run".into(), "(the run finishes)".into(), failure.clone())
            }
            // Described as every other matcher is (`$contains "x"`, not its
            // JSON), against a run that did not fail.
            (None, Some(pattern)) => {
                if let Err(miss) = self.matcher.check(pattern, None) {
                    let actual = "(the run finished)".to_string();
                    self.miss("expect.failure", Miss { actual, ..miss });
                }
            }
            (Some(failure), Some(pattern)) => {
                let failure = Value::String(failure.clone());
                self.value("expect.failure", Some(pattern), Some(&failure));
            }
        }
    }

    /// The main agent's expectations (at the top of `expect`) and each
    /// further agent's (`expect.agents`).
    fn agents(&mut self, expect: &LoopExpect, run: &LoopRun, main_agent: &str) {
        let main = AgentExpect {
            event_types: expect.event_types.clone(),
            events: expect.events.clone(),
            query: expect.query.clone(),
            absent: expect.absent.clone(),
            log: expect.log.clone(),
            status: expect.status.clone(),
            status_transitions: expect.status_transitions.clone(),
            pending: expect.pending.clone(),
            agent_errors: expect.agent_errors.clone(),
        };
        let observed = main_agent_run(run, main_agent);
        self.agent_log("expect", &main, &observed, &run.live_events);
        for (id, agent_expect) in &expect.agents {
            let path = format!("expect.agents.{id}");
            match run.agents.iter().find(|agent| &agent.id == id) {
                Some(agent) => self.agent_log(&path, agent_expect, agent, &run.live_events),
                None => self.push(
                    path,
                    format!("a run of agent {id:?}"),
                    format!(
                        "agents run: {:?}",
                        run.agents.iter().map(|a| &a.id).collect::<Vec<_>>()
                    ),
                ),
            }
        }
    }

    /// The bodies the provider received, and each `request` entry.
    fn requests(&mut self, expect: &LoopExpect, run: &LoopRun) {
        let bodies = Value::Array(run.requests.iter().map(|r| r.body.clone()).collect());
        self.value("expect.requests", expect.requests.as_ref(), Some(&bodies));
        for request in &expect.request {
            self.request(request, run);
        }
    }

    /// Facts about the provider's traffic: headers, the count, cache hits
    /// and cache breaks.
    fn request_facts(&mut self, expect: &LoopExpect, run: &LoopRun) {
        let headers = json!(run.requests.iter().map(|r| &r.headers).collect::<Vec<_>>());
        self.value(
            "expect.request_headers",
            expect.request_headers.as_ref(),
            Some(&headers),
        );
        let count = Value::from(run.requests.len());
        self.value(
            "expect.request_count",
            expect.request_count.as_ref(),
            Some(&count),
        );
        let hits = json!(
            run.requests
                .iter()
                .map(|r| r.cache_hit_tokens.unwrap_or(0))
                .collect::<Vec<_>>()
        );
        self.value(
            "expect.cache_hit_tokens",
            expect.cache_hit_tokens.as_ref(),
            Some(&hits),
        );
        if expect.cache_breaks.is_some() {
            let breaks = crate::cache_report::report_run(run).breaks_json();
            self.value(
                "expect.cache_breaks",
                expect.cache_breaks.as_ref(),
                Some(&breaks),
            );
        }
    }

    /// What the scenario's own actors saw: the `record` journal and the
    /// scripted routes' calls.
    fn scripted_calls(&mut self, expect: &LoopExpect, run: &LoopRun) {
        let journal = Value::Array(run.journal.clone());
        self.value("expect.journal", expect.journal.as_ref(), Some(&journal));
        let llm_requests = Value::Array(run.llm_requests.clone());
        self.value(
            "expect.llm_requests",
            expect.llm_requests.as_ref(),
            Some(&llm_requests),
        );
        // Named by the call they are about, not by the entry's position.
        for call in &expect.llm_request {
            let path = format!("expect.llm_request[index = {}]", call.index);
            match run.llm_requests.get(call.index) {
                Some(options) => self.value(
                    &format!("{path}.options"),
                    Some(&call.options),
                    Some(options),
                ),
                None => self.push(
                    format!("{path}.index"),
                    format!("a scripted-route call at position {}", call.index),
                    format!("{} calls", run.llm_requests.len()),
                ),
            }
        }
    }

    /// One agent's log, status, inbox and live events against its expectations.
    fn agent_log(&mut self, path: &str, expect: &AgentExpect, agent: &AgentRun, live: &[Value]) {
        let log = &agent.log;
        let types = Value::Array(log.iter().map(|e| e["type"].clone()).collect());
        self.value(
            &format!("{path}.event_types"),
            expect.event_types.as_ref(),
            Some(&types),
        );
        if let Some(absent) = &expect.absent {
            let present: Vec<&String> = absent
                .iter()
                .filter(|kind| log.iter().any(|e| e["type"] == kind.as_str()))
                .collect();
            if !present.is_empty() {
                self.push(
                    format!("{path}.absent"),
                    show(Some(&json!(absent))),
                    format!("present: {}", show(Some(&json!(present)))),
                );
            }
        }
        for (index, query) in expect.query.iter().enumerate() {
            self.query(&format!("{path}.query[{index}]"), query, log);
        }
        if let Some(events) = &expect.events {
            self.events_in_order(&format!("{path}.events"), events, log);
        }
        if let Some(pattern) = &expect.log {
            let text: String = log.iter().map(|e| stringify(e) + "\n").collect();
            self.value(
                &format!("{path}.log"),
                Some(pattern),
                Some(&Value::String(text)),
            );
        }
        let facts = agent_facts(agent, live);
        for (key, pattern) in [
            ("status", &expect.status),
            ("status_transitions", &expect.status_transitions),
            ("pending", &expect.pending),
            ("agent_errors", &expect.agent_errors),
        ] {
            self.value(&format!("{path}.{key}"), pattern.as_ref(), facts.get(key));
        }
    }
}

/// What an agent's `status`, `status_transitions`, `pending` and
/// `agent_errors` expectations are compared with: its final status, the
/// statuses of its live `agent/status` events, its pending inbox
/// (`[next-turn, next-step]`) and the errors of its live `agent/error`
/// events. One function, so that `dshc show` prints exactly what is judged.
pub fn agent_facts(agent: &AgentRun, live: &[Value]) -> Value {
    let own = |kind: &'static str, field: &'static str| {
        let values = live
            .iter()
            .filter(|e| e["type"] == kind && e["agent"] == agent.id.as_str())
            .map(|e| e["data"][field].clone());
        Value::Array(values.collect())
    };
    json!({
        "status": agent.status,
        "status_transitions": own(event_kind::AGENT_STATUS, "status"),
        "pending": agent.pending,
        "agent_errors": own(event_kind::AGENT_ERROR, "error"),
    })
}

/// The main agent of a loop run as an [`AgentRun`], like the further ones.
pub fn main_agent_run(run: &LoopRun, main_agent: &str) -> AgentRun {
    AgentRun {
        id: main_agent.to_string(),
        log: run.log.clone(),
        status: run.status.clone(),
        pending: run.pending,
    }
}

/// Compare a scenario's expectations with a case result.
///
/// Captures do not depend on where in the file they are bound: a first
/// pass collects every capture, the second compares with them all known,
/// so `events` can refer to what a query captured and the other way round.
///
/// `violations` are the loop invariants the harness found broken in the
/// run ([`crate::invariants::judge_loop_run`]): each is a mismatch of the
/// case. They are the judge's, so they travel beside the observation, never
/// inside the protocol's types.
pub fn compare(
    scenario: &Scenario,
    result: &CaseResult,
    violations: &[Violation],
) -> Vec<Mismatch> {
    let mut first = Comparison {
        matcher: Matcher::new(),
        mismatches: Vec::new(),
    };
    first.all(scenario, result, violations);
    let mut second = Comparison {
        matcher: first.matcher,
        mismatches: Vec::new(),
    };
    second.all(scenario, result, violations);
    second.mismatches
}

impl Comparison {
    fn all(&mut self, scenario: &Scenario, result: &CaseResult, violations: &[Violation]) {
        self.error(
            "config_error",
            scenario.config_error.as_ref(),
            result.config_error.as_ref(),
        );
        if result.config_error.is_some() {
            return;
        }
        // A loop run that failed at setup ran no command: its failure
        // (expected or not) is the whole story, whatever steps the scenario has.
        let failed_at_setup = result
            .run
            .as_ref()
            .is_some_and(|run| run.failure.is_some() && result.observations.is_empty());
        if !failed_at_setup {
            compare_steps(self, scenario, result);
        }
        if let Some(run) = &result.run {
            let main_agent = scenario.agent.as_ref().map_or("agent", |agent| &agent.id);
            self.run(scenario.expect.as_deref(), run, violations, main_agent);
        }
    }
}

fn compare_steps(comparison: &mut Comparison, scenario: &Scenario, result: &CaseResult) {
    let offset = scenario.scopes.len();
    for (index, binding) in scenario.scopes.iter().enumerate() {
        if let Some(observation) = result.observations.get(index) {
            comparison.error(
                &format!("scopes[{index}] ({} -> {})", binding.name, binding.parent),
                None,
                observation.error.as_ref(),
            );
        }
    }
    if result.observations.len() != offset + scenario.steps.len() {
        comparison.push(
            "observations".into(),
            format!("{} observations", offset + scenario.steps.len()),
            format!("{} observations", result.observations.len()),
        );
        return;
    }
    let none = StepExpect::Command(Default::default());
    let assembles = StepExpect::Assemble(Box::default());
    for (index, step) in scenario.steps.iter().enumerate() {
        let observation = &result.observations[offset + index];
        let expect = step.expect.as_ref().unwrap_or(&none);
        let expect = match (&step.command, expect) {
            // An `assemble` without expectations still must not throw.
            (
                dshc_scenario::protocol::Command::Assembly(
                    dshc_scenario::protocol::AssemblyCommand::Assemble(_),
                ),
                StepExpect::Command(_),
            ) => &assembles,
            (_, expect) => expect,
        };
        comparison.command(&format!("steps[{index}].expect"), expect, observation);
    }
}

/// Whether two case results are identical, key order included.
pub fn same_result(a: &CaseResult, b: &CaseResult) -> bool {
    super::same_bytes(a, b)
}
