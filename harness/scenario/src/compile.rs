//! Turning a parsed scenario into a [`Case`]: semantic validation, default
//! ids, and each step's command without its expectation.
//!
//! Everything an implementation needs is resolved here, once, so adapters in
//! other languages never re-implement scenario defaults.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::format::{EventQuery, FORMAT_VERSION, Pattern, Scenario, StepExpect};
use crate::protocol::{
    ActOp, AgentSpec, BindCommand, Case, Command, ContextCommand, Effect, Level, ListenerOp,
    LoopListenerCommand, LoopWorld, ModelResolution, PreStepOp, ProviderSpec, RecordField,
    Registration, RequestErrorOp, RequestOp, RouteResponse, RouteSpec, ScriptedError,
    SectionCommand, TextSpec, ToolOp, ToolsCommand, VariableCommand,
};

/// The most virtual time a loop case may spend stepping the network
/// simulation (`simulation.budget_ms`; idle waits jump the clock and do
/// not count). A busy millisecond costs real CPU, so this bounds a case's
/// running time.
pub const MAX_VIRTUAL_TIME_MS: u64 = 86_400_000;
/// The latest epoch milliseconds a simulated clock may reach: the end of
/// JavaScript's `Date` range. A world whose start, budget and waits could
/// pass it is refused, so the clock never wraps.
pub const MAX_EPOCH_MS: u64 = 8_640_000_000_000_000;

/// A scenario that parses but does not make sense.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{path}: {message}")]
pub struct CompileError {
    /// Where in the scenario, e.g. `steps[3].provider`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

struct Compiler {
    tools_count: u32,
    suppress_count: u32,
    defined_ids: BTreeSet<String>,
    dispose_targets: Vec<(String, String)>,
}

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, CompileError> {
    Err(CompileError {
        path: path.to_string(),
        message: message.into(),
    })
}

fn default_named_id(name: &str, scope: &Option<String>) -> String {
    match scope {
        Some(scope) => format!("{name}@{scope}"),
        None => name.to_string(),
    }
}

impl Compiler {
    fn check_provider<T>(
        &mut self,
        path: &str,
        spec: &mut ProviderSpec<T>,
    ) -> Result<(), CompileError> {
        let outcomes = usize::from(spec.returns.is_some())
            + usize::from(spec.sequence.is_some())
            + usize::from(spec.returns_undefined)
            + usize::from(spec.throws.is_some())
            + usize::from(spec.context_field.is_some());
        if outcomes != 1 {
            return fail(
                path,
                "a provider sets exactly one of `returns`, `sequence`, `returns_undefined`, `throws`, `context_field`",
            );
        }
        if spec.sequence.as_ref().is_some_and(Vec::is_empty) {
            return fail(path, "`sequence` needs at least one value");
        }
        if spec.cause.is_some() && spec.throws.is_none() {
            return fail(path, "`cause` only goes with `throws`");
        }
        for (index, effect) in spec.effects.iter_mut().enumerate() {
            self.effect(&format!("{path}.effects[{index}]"), effect)?;
        }
        Ok(())
    }

    fn effect(&mut self, path: &str, effect: &mut Effect) -> Result<(), CompileError> {
        if effect.on_call == Some(0) {
            return fail(path, "`on_call` counts from 1");
        }
        match (&mut effect.register, &effect.dispose) {
            (Some(step), None) => self.nested_registration(&format!("{path}.register"), step),
            (None, Some(target)) => {
                self.dispose_targets
                    .push((path.to_string(), target.clone()));
                Ok(())
            }
            _ => fail(
                path,
                "an effect sets exactly one of `register` and `dispose`",
            ),
        }
    }

    fn nested_registration(
        &mut self,
        path: &str,
        registration: &mut Registration,
    ) -> Result<(), CompileError> {
        match registration {
            Registration::Section(s) => self.section(path, s),
            Registration::Context(s) => self.context(path, s),
            Registration::Variable(s) => self.variable(path, s),
            Registration::Suppress(s) => {
                self.define_suppressor(&mut s.id);
                Ok(())
            }
            Registration::Tools(s) => self.tools(path, s),
        }
    }

    fn section(&mut self, path: &str, s: &mut SectionCommand) -> Result<(), CompileError> {
        self.define_named(&mut s.id, &s.name, &s.scope);
        self.text(&format!("{path}.text"), &mut s.text)
    }

    fn context(&mut self, path: &str, s: &mut ContextCommand) -> Result<(), CompileError> {
        self.define_named(&mut s.id, &s.name, &s.scope);
        self.text(&format!("{path}.text"), &mut s.text)
    }

    fn variable(&mut self, path: &str, s: &mut VariableCommand) -> Result<(), CompileError> {
        self.define_named(&mut s.id, &s.name, &s.scope);
        self.text(&format!("{path}.value"), &mut s.value)
    }

    fn tools(&mut self, path: &str, s: &mut ToolsCommand) -> Result<(), CompileError> {
        self.define_tools(&mut s.id);
        self.check_provider(&format!("{path}.provider"), &mut s.provider)
    }

    fn define_suppressor(&mut self, id: &mut Option<String>) {
        self.suppress_count += 1;
        let n = self.suppress_count;
        let id = id.get_or_insert_with(|| format!("suppress#{n}")).clone();
        self.define(&id);
    }

    fn define_tools(&mut self, id: &mut Option<String>) {
        self.tools_count += 1;
        let n = self.tools_count;
        let id = id.get_or_insert_with(|| format!("tools#{n}")).clone();
        self.define(&id);
    }

    fn text(&mut self, path: &str, text: &mut TextSpec) -> Result<(), CompileError> {
        match text {
            TextSpec::Static(_) => Ok(()),
            TextSpec::Provider(spec) => self.check_provider(path, spec),
        }
    }

    /// Fill a named registration's default id (`name`, or `name@scope`) and record it.
    fn define_named(&mut self, id: &mut Option<String>, name: &str, scope: &Option<String>) {
        let id = id
            .get_or_insert_with(|| default_named_id(name, scope))
            .clone();
        self.define(&id);
    }

    fn define(&mut self, id: &str) {
        self.defined_ids.insert(id.to_string());
    }

    /// Validate a command and fill its default ids.
    fn command(&mut self, path: &str, command: &mut Command) -> Result<(), CompileError> {
        match command {
            Command::Section(s) => self.section(path, s),
            Command::Context(s) => self.context(path, s),
            Command::Variable(s) => self.variable(path, s),
            Command::Suppress(s) => {
                self.define_suppressor(&mut s.id);
                Ok(())
            }
            Command::Tools(s) => self.tools(path, s),
            Command::Listen(s) => {
                self.define(&s.id.clone());
                for (index, op) in s.ops.iter_mut().enumerate() {
                    let op_path = format!("{path}.ops[{index}]");
                    match op {
                        ListenerOp::Register(registration) => {
                            self.nested_registration(&op_path, registration)?
                        }
                        ListenerOp::Dispose(target) => {
                            self.dispose_targets.push((op_path, target.clone()));
                        }
                        ListenerOp::SetField(field)
                            if ["sections", "contexts", "tools", "variables"]
                                .contains(&field.name.as_str()) =>
                        {
                            return fail(
                                &op_path,
                                "`set_field` cannot set an assembly list; use the list ops",
                            );
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            Command::OnChange(s) => {
                self.define(&s.id.clone());
                Ok(())
            }
            Command::Owner(s) => {
                self.define(&s.id.clone());
                for (index, registration) in s.registrations.iter_mut().enumerate() {
                    let path = format!("{path}.registrations[{index}]");
                    if registration_scope(registration).is_some() {
                        return fail(
                            &format!("{path}.scope"),
                            "an owner's registrations are global",
                        );
                    }
                    self.nested_registration(&path, registration)?;
                }
                Ok(())
            }
            Command::Dispose(s) => {
                self.dispose_targets
                    .push((path.to_string(), s.target.clone()));
                Ok(())
            }
            Command::OnPreStep(LoopListenerCommand { id, .. })
            | Command::OnRequest(LoopListenerCommand { id, .. })
            | Command::OnRequestError(LoopListenerCommand { id, .. })
            | Command::OnTurnStopping(LoopListenerCommand { id, .. })
            | Command::OnStatus(LoopListenerCommand { id, .. })
            | Command::OnSessionEvent(LoopListenerCommand { id, .. }) => {
                self.define(&id.clone());
                check_listener_acts(path, command)
            }
            Command::Bind(_)
            | Command::DisposeScope(_)
            | Command::Assemble(_)
            | Command::Followup(_)
            | Command::Steer(_)
            | Command::Inject(_)
            | Command::Cancel(_)
            | Command::Wait(_)
            | Command::WaitIdle(_)
            | Command::Compact(_)
            | Command::Resume(_)
            | Command::DisposeAgent(_)
            | Command::Plugin(_)
            | Command::RegisterRoute(_)
            | Command::UnregisterRoute(_)
            | Command::Append(_)
            | Command::ReadSession(_)
            | Command::FirePreStep(_)
            | Command::ClockJump(_)
            | Command::CanonicalHeader(_)
            | Command::HeaderEquals(_) => Ok(()),
        }
    }
}

/// Commands and listener ops that only make sense around an agent.
pub fn needs_loop(command: &Command) -> bool {
    match command {
        Command::Listen(listen) => listen
            .ops
            .iter()
            .any(|op| matches!(op, ListenerOp::WaitForAbort | ListenerOp::SleepMs(_))),
        Command::Section(_)
        | Command::Context(_)
        | Command::Suppress(_)
        | Command::Tools(_)
        | Command::Variable(_)
        | Command::Dispose(_)
        | Command::OnChange(_)
        | Command::Owner(_)
        | Command::DisposeScope(_)
        | Command::Bind(_)
        | Command::Assemble(_) => false,
        Command::Followup(_)
        | Command::Steer(_)
        | Command::Inject(_)
        | Command::Cancel(_)
        | Command::Wait(_)
        | Command::WaitIdle(_)
        | Command::Compact(_)
        | Command::Resume(_)
        | Command::DisposeAgent(_)
        | Command::OnPreStep(_)
        | Command::OnRequest(_)
        | Command::OnRequestError(_)
        | Command::OnTurnStopping(_)
        | Command::OnStatus(_)
        | Command::OnSessionEvent(_)
        | Command::Plugin(_)
        | Command::RegisterRoute(_)
        | Command::UnregisterRoute(_)
        | Command::Append(_)
        | Command::ReadSession(_)
        | Command::FirePreStep(_)
        | Command::ClockJump(_) => true,
        Command::CanonicalHeader(_) | Command::HeaderEquals(_) => false,
    }
}

fn pattern(path: &str, pattern: &Option<Pattern>) -> Result<(), CompileError> {
    match pattern {
        Some(pattern) => pattern.validate().map_err(|error| CompileError {
            path: format!("{path}{}", error.path),
            message: error.message,
        }),
        None => Ok(()),
    }
}

/// Every pattern of the scenario is well formed; a few shapes are checked
/// where a literal of the wrong size could never match.
fn check_expectations(scenario: &Scenario) -> Result<(), CompileError> {
    pattern("config_error", &scenario.config_error)?;
    for (index, step) in scenario.steps.iter().enumerate() {
        let path = format!("steps[{index}].expect");
        match &step.expect {
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
    }
    let Some(expect) = &scenario.expect else {
        return Ok(());
    };
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
        if !scenario.agents.iter().any(|a| &a.id == id) {
            return fail(&path, format!("`agents` has no agent with id {id:?}"));
        }
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

/// Compile a scenario into the case an implementation runs.
pub fn compile(id: &str, scenario: &Scenario) -> Result<Case, CompileError> {
    if scenario.format == 1 {
        return fail(
            "format",
            format!(
                "scenario format 1 is no longer read; `dshc migrate <file>` rewrites it as \
                 format {FORMAT_VERSION}, keeping what it asserts"
            ),
        );
    }
    if scenario.format != FORMAT_VERSION {
        return fail(
            "format",
            format!(
                "unsupported scenario format {} (this dshc reads {FORMAT_VERSION})",
                scenario.format
            ),
        );
    }
    check_expectations(scenario)?;
    if scenario.covers.is_empty() {
        return fail("covers", "name at least one spec clause");
    }
    if scenario.config_error.is_some() && !scenario.steps.is_empty() {
        return fail(
            "config_error",
            "a scenario whose config fails to load has no steps",
        );
    }
    let binds = scenario.scopes.len();
    let commands: Vec<Command> = scenario
        .scopes
        .iter()
        .map(|binding| {
            Command::Bind(BindCommand {
                scope: binding.name.clone(),
                parent: binding.parent.clone(),
            })
        })
        .chain(scenario.steps.iter().map(|step| step.command.clone()))
        .collect();
    let loop_parts = scenario.agent.is_some()
        || !scenario.agents.is_empty()
        || scenario.provider.is_some()
        || scenario.adapter.is_some()
        || scenario.simulation.is_some()
        || !scenario.tool_results.is_empty()
        || scenario.plugins.is_some()
        || !scenario.routes.is_empty()
        || scenario.expect.is_some();
    let world = match scenario.level {
        Level::Assembly if loop_parts => {
            return fail(
                "level",
                "agent, provider, adapter, simulation, tool_results, routes and expect need `level = \"loop\"`",
            );
        }
        Level::Assembly => None,
        Level::Loop => Some(LoopWorld {
            agent: scenario.agent.clone().unwrap_or_default(),
            agents: scenario.agents.clone(),
            provider: scenario.provider.clone().unwrap_or_default(),
            adapter: scenario.adapter.clone().unwrap_or_default(),
            simulation: scenario.simulation.clone().unwrap_or_default(),
            tool_results: scenario.tool_results.clone(),
            plugins: scenario.plugins.clone().unwrap_or_default(),
            routes: scenario.routes.clone(),
        }),
    };
    let mut world = world;
    if let Some(world) = world.as_mut() {
        // Adapters see parts only: the shorthands are expanded here.
        for response in world.routes.iter_mut().flat_map(|r| r.responses.iter_mut()) {
            if response.uses_shorthand() && response.parts.is_empty() {
                *response = RouteResponse {
                    delay_ms: response.delay_ms,
                    parts: response.expanded_parts(),
                    error: response.error.take(),
                    hangs: response.hangs,
                    ..RouteResponse::default()
                };
            }
        }
    }
    let mut case = Case {
        id: id.to_string(),
        level: scenario.level,
        config: scenario.config.clone(),
        commands,
        world,
    };
    let step_path = |index: usize| match index.checked_sub(binds) {
        Some(step) => format!("steps[{step}]"),
        None => format!("scopes[{index}]"),
    };
    check_case(&mut case, &step_path)?;
    Ok(case)
}

/// A loop listener records only fields its event's payload has.
fn check_listener_acts(path: &str, command: &Command) -> Result<(), CompileError> {
    use RecordField::{Aborted, Event, Failure, LastEvent, Messages, Provider, Status, Step, Turn};
    let acts = |op: Option<&ActOp>| op.cloned();
    let (event, fields, ops): (&str, &[RecordField], Vec<Option<ActOp>>) = match command {
        Command::OnPreStep(c) => (
            "agent/pre-step",
            &[Turn, Step, Messages, Aborted, LastEvent],
            c.ops
                .iter()
                .map(|op| {
                    acts(match op {
                        PreStepOp::Act(a) => Some(a),
                        _ => None,
                    })
                })
                .collect(),
        ),
        Command::OnRequest(c) => (
            "agent/request",
            &[Turn, Step, Aborted, LastEvent],
            c.ops
                .iter()
                .map(|op| {
                    acts(match op {
                        RequestOp::Act(a) => Some(a),
                        _ => None,
                    })
                })
                .collect(),
        ),
        Command::OnRequestError(c) => (
            "agent/request-error",
            &[Turn, Step, Aborted, Provider, Failure, LastEvent],
            c.ops
                .iter()
                .map(|op| {
                    acts(match op {
                        RequestErrorOp::Act(a) => Some(a),
                        _ => None,
                    })
                })
                .collect(),
        ),
        Command::OnTurnStopping(c) => (
            "agent/turn-stopping",
            &[Turn, Aborted, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::OnStatus(c) => (
            "agent/status",
            &[Status, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::OnSessionEvent(c) => (
            "session/event",
            &[Event, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        _ => return Ok(()),
    };
    for (index, op) in ops.iter().enumerate() {
        if let Some(ActOp::Record(recorded)) = op
            && let Some(field) = recorded.iter().find(|field| !fields.contains(field))
        {
            return fail(
                &format!("{path}.ops[{index}].record"),
                format!(
                    "an {event} listener receives no `{}`; it can record {}",
                    field.key(),
                    fields
                        .iter()
                        .map(|f| format!("`{}`", f.key()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// The scope a registration names, if any.
fn registration_scope(registration: &Registration) -> Option<&String> {
    match registration {
        Registration::Section(c) => c.scope.as_ref(),
        Registration::Context(c) => c.scope.as_ref(),
        Registration::Suppress(c) => c.scope.as_ref(),
        Registration::Tools(c) => c.scope.as_ref(),
        Registration::Variable(c) => c.scope.as_ref(),
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

/// The agent a loop command names with `agent`, if any.
pub fn addressed_agent(command: &Command) -> Option<&str> {
    let agent = match command {
        Command::Followup(c) | Command::Steer(c) | Command::Inject(c) => &c.agent,
        Command::Cancel(c) => &c.agent,
        Command::WaitIdle(c) => &c.agent,
        Command::Compact(c) => &c.agent,
        Command::Resume(c) => &c.agent,
        Command::DisposeAgent(c) => &c.agent,
        Command::OnPreStep(c) => &c.agent,
        Command::OnRequest(c) => &c.agent,
        Command::OnRequestError(c) => &c.agent,
        Command::OnTurnStopping(c) => &c.agent,
        Command::OnStatus(c) => &c.agent,
        Command::OnSessionEvent(c) => &c.agent,
        Command::Append(c) => &c.agent,
        Command::ReadSession(c) => &c.agent,
        Command::FirePreStep(c) => &c.agent,
        _ => return None,
    };
    agent.as_deref()
}

/// Scripted routes: each response either gives `parts` or uses the
/// shorthands, each part is an object with a string `type` or a
/// `{sleep_ms}` pause, and an error is either plain or a valid `LlmError`.
fn check_routes(routes: &[RouteSpec]) -> Result<(), CompileError> {
    for (route_index, route) in routes.iter().enumerate() {
        let resolutions = std::iter::once((format!("routes[{route_index}].model"), &route.model))
            .chain(route.models.iter().map(|(id, resolution)| {
                (format!("routes[{route_index}].models.{id}"), resolution)
            }));
        for (path, resolution) in resolutions {
            if let ModelResolution::Rejects(error) = resolution {
                check_scripted_error(&path, error)?;
            }
        }
        for (index, response) in route.responses.iter().enumerate() {
            let path = format!("routes[{route_index}].responses[{index}]");
            if response.uses_shorthand() && !response.parts.is_empty() {
                return fail(
                    &format!("{path}.parts"),
                    "give either `parts` or the shorthands (reasoning, text, tool_calls, usage, finish)",
                );
            }
            if response.hangs && response.error.is_some() {
                return fail(
                    &format!("{path}.hangs"),
                    "a response that hangs raises no error",
                );
            }
            for (part_index, part) in response.parts.iter().enumerate() {
                let part_path = format!("{path}.parts[{part_index}]");
                let Some(object) = part.as_object() else {
                    return fail(&part_path, "a part is an object");
                };
                let pause = object.len() == 1 && object.get("sleep_ms").is_some_and(Value::is_u64);
                if !pause && !object.get("type").is_some_and(Value::is_string) {
                    return fail(
                        &part_path,
                        "a part has a string `type`, or is a pause `{ sleep_ms = N }`",
                    );
                }
            }
            if let Some(error) = &response.error {
                check_scripted_error(&format!("{path}.error"), error)?;
            }
        }
    }
    Ok(())
}

/// An `LlmError`'s own constructor checks, so every implementation can build it.
fn check_scripted_error(path: &str, error: &ScriptedError) -> Result<(), CompileError> {
    if error.code.is_none()
        && (error.status.is_some()
            || error.provider_retry_after_ms.is_some()
            || error.request_id.is_some())
    {
        return fail(
            path,
            "status, provider_retry_after_ms and request_id need a `code`",
        );
    }
    if error.code.is_some() && error.message.is_empty() {
        return fail(
            &format!("{path}.message"),
            "an LlmError message is non-empty",
        );
    }
    if error.code.as_deref() == Some("") {
        return fail(&format!("{path}.code"), "an LlmError code is non-empty");
    }
    if error
        .status
        .is_some_and(|status| !(100..=599).contains(&status))
    {
        return fail(
            &format!("{path}.status"),
            "a status is from 100 through 599",
        );
    }
    if error.provider_retry_after_ms == Some(0) {
        return fail(
            &format!("{path}.provider_retry_after_ms"),
            "a retry-after is positive",
        );
    }
    if error.request_id.as_deref() == Some("") {
        return fail(&format!("{path}.request_id"), "a request id is non-empty");
    }
    Ok(())
}

/// Check a case the way [`compile`] checks the cases it makes: for cases
/// that arrive from elsewhere (`dshc adapter` reads them from any client).
pub fn validate_case(case: &Case) -> Result<(), CompileError> {
    let mut copy = case.clone();
    check_case(&mut copy, &|index| format!("commands[{index}]"))
}

/// Fill default ids and check every command, the dispose targets and the
/// level. Filling is idempotent, so a compiled case passes unchanged.
fn check_case(case: &mut Case, path_of: &dyn Fn(usize) -> String) -> Result<(), CompileError> {
    let mut compiler = Compiler {
        tools_count: 0,
        suppress_count: 0,
        defined_ids: BTreeSet::new(),
        dispose_targets: Vec::new(),
    };
    for (index, command) in case.commands.iter_mut().enumerate() {
        compiler.command(&path_of(index), command)?;
    }
    if let Some(world) = case.world.as_mut() {
        for (tool_index, tool) in world.tool_results.iter_mut().enumerate() {
            for (index, op) in tool.ops.iter_mut().enumerate() {
                let path = format!("tool_results[{tool_index}].ops[{index}]");
                match op {
                    ToolOp::Register(registration) => {
                        compiler.nested_registration(&path, registration)?
                    }
                    ToolOp::Dispose(target) => {
                        compiler.dispose_targets.push((path, target.clone()))
                    }
                    ToolOp::Act(ActOp::Record(fields)) => {
                        use RecordField::{Aborted, Arguments, CallId, LastEvent};
                        let allowed = [CallId, Arguments, Aborted, LastEvent];
                        if let Some(field) = fields.iter().find(|f| !allowed.contains(f)) {
                            return fail(
                                &format!("{path}.record"),
                                format!(
                                    "a tool call receives no `{}`; it can record `call_id`, `arguments`, `aborted`, `last_event`",
                                    field.key()
                                ),
                            );
                        }
                    }
                    ToolOp::WaitForAbort | ToolOp::Act(_) => {}
                }
            }
        }
    }
    for (path, target) in &compiler.dispose_targets {
        if !compiler.defined_ids.contains(target) {
            return fail(path, format!("no registration has id {target:?}"));
        }
    }
    match (case.level, &case.world) {
        (Level::Assembly, _) => {
            if let Some(index) = case.commands.iter().position(needs_loop) {
                return fail(&path_of(index), "this step needs `level = \"loop\"`");
            }
        }
        (Level::Loop, None) => return fail("world", "a loop case needs its world"),
        (Level::Loop, Some(world)) => {
            if let Err(error) = world.provider.validate() {
                return fail("provider", error.to_string());
            }
            check_routes(&world.routes)?;
            let agents: Vec<(String, &AgentSpec)> =
                std::iter::once(("agent".to_string(), &world.agent))
                    .chain(
                        world
                            .agents
                            .iter()
                            .enumerate()
                            .map(|(i, a)| (format!("agents[{i}]"), a)),
                    )
                    .collect();
            for (path, agent) in &agents {
                for (key, value) in [("provider", &agent.provider), ("model", &agent.model)] {
                    if value.as_str().is_none() && !value.is_undefined() {
                        return fail(
                            &format!("{path}.{key}"),
                            "a string, or `{ \"$js\" = \"undefined\" }` for none",
                        );
                    }
                }
            }
            for (index, command) in case.commands.iter().enumerate() {
                if let Command::Followup(message)
                | Command::Steer(message)
                | Command::Inject(message) = command
                    && message.text.is_some() == message.content.is_some()
                {
                    return fail(&path_of(index), "a message has either `text` or `content`");
                }
                if let Some(id) = addressed_agent(command)
                    && !agents.iter().any(|(_, agent)| agent.id == id)
                {
                    return fail(
                        &format!("{}.agent", path_of(index)),
                        format!("no agent has id {id:?}"),
                    );
                }
            }
            for (index, command) in case.commands.iter().enumerate() {
                if let Command::RegisterRoute(route) | Command::UnregisterRoute(route) = command
                    && !world.routes.iter().any(|r| r.provider == route.provider)
                {
                    return fail(
                        &format!("{}.provider", path_of(index)),
                        format!("no route in `routes` has provider {:?}", route.provider),
                    );
                }
            }
            let simulation = &world.simulation;
            if simulation.budget_ms > MAX_VIRTUAL_TIME_MS {
                return fail(
                    "simulation.budget_ms",
                    format!("at most {MAX_VIRTUAL_TIME_MS} ms of virtual time per case"),
                );
            }
            let waits = case
                .commands
                .iter()
                .fold(0u64, |total, command| match command {
                    Command::Wait(wait) => total.saturating_add(wait.ms),
                    Command::ClockJump(jump) => total.saturating_add(jump.ms.max(0).unsigned_abs()),
                    _ => total,
                });
            let latest = simulation
                .start_ms
                .saturating_add(simulation.budget_ms)
                .saturating_add(waits);
            if latest > MAX_EPOCH_MS {
                return fail(
                    "simulation.start_ms",
                    format!(
                        "the clock could pass {MAX_EPOCH_MS} (the end of JavaScript's Date range): \
                         start_ms + budget_ms + every wait must stay below it"
                    ),
                );
            }
        }
    }
    Ok(())
}
