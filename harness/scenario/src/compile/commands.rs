//! Checking each command of a case and filling its default ids: scripted
//! providers and their effects, assembly and loop listeners, owners, tool
//! bodies, and the disposals, which may name a registration made later.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{CompileError, fail};
use crate::protocol::{
    ActOp, AssemblyCommand, Command, ContextCommand, Effect, FoldHeaderCommand, ListenCommand,
    ListenerOp, LlmStreamOp, LoopCommand, LoopListenerCommand, OwnerCommand, PreStepOp, Provided,
    ProviderSpec, RecordField, Registration, RequestErrorOp, RequestOp, SectionCommand, TextSpec,
    ToolOp, ToolResultSpec, ToolsCommand, VariableCommand,
};

/// What the checks of one case collect as they go: the default-id
/// counters, every id defined, and every disposal (checked at the end, as a
/// registration may come after the provider that disposes it).
#[derive(Default)]
pub(super) struct Compiler {
    tools_count: u32,
    suppress_count: u32,
    defined_ids: BTreeSet<String>,
    dispose_targets: Vec<(String, String)>,
}

impl Compiler {
    fn check_provider<T>(
        &mut self,
        path: &str,
        spec: &mut ProviderSpec<T>,
    ) -> Result<(), CompileError> {
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
        if matches!(s.provider.provided, Provided::Computes(_)) {
            return fail(
                &format!("{path}.provider.computes"),
                "`computes` gives text; a tool provider returns `{ schemas, known_names }`",
            );
        }
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
    pub(super) fn command(
        &mut self,
        path: &str,
        command: &mut Command,
    ) -> Result<(), CompileError> {
        match command {
            Command::Assembly(AssemblyCommand::Section(s)) => self.section(path, s),
            Command::Assembly(AssemblyCommand::Context(s)) => self.context(path, s),
            Command::Assembly(AssemblyCommand::Variable(s)) => self.variable(path, s),
            Command::Assembly(AssemblyCommand::Suppress(s)) => {
                self.define_suppressor(&mut s.id);
                Ok(())
            }
            Command::Assembly(AssemblyCommand::Tools(s)) => self.tools(path, s),
            Command::Assembly(AssemblyCommand::Listen(s)) => self.listen(path, s),
            Command::Assembly(AssemblyCommand::OnChange(s)) => {
                self.define(&s.id.clone());
                Ok(())
            }
            Command::Assembly(AssemblyCommand::Owner(s)) => self.owner(path, s),
            Command::Assembly(AssemblyCommand::Dispose(s)) => {
                self.dispose_targets
                    .push((path.to_string(), s.target.clone()));
                Ok(())
            }
            Command::Loop(LoopCommand::OnPreStep(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnRequest(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnRequestError(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnTurnStopping(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnStatus(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnSessionEvent(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnSessionAppend(LoopListenerCommand { id, .. }))
            | Command::Loop(LoopCommand::OnLlmStream(LoopListenerCommand { id, .. })) => {
                self.define(&id.clone());
                check_event_types_only_on_observers(path, command)?;
                check_served_parts(path, command)?;
                check_listener_acts(path, command)
            }
            Command::Assembly(AssemblyCommand::FoldHeader(s)) => fold_header_events(path, s),
            Command::Assembly(AssemblyCommand::Bind(_))
            | Command::Assembly(AssemblyCommand::DisposeScope(_))
            | Command::Assembly(AssemblyCommand::Assemble(_))
            | Command::Loop(LoopCommand::Followup(_))
            | Command::Loop(LoopCommand::Steer(_))
            | Command::Loop(LoopCommand::Inject(_))
            | Command::Loop(LoopCommand::Cancel(_))
            | Command::Loop(LoopCommand::Wait(_))
            | Command::Loop(LoopCommand::WaitIdle(_))
            | Command::Loop(LoopCommand::Compact(_))
            | Command::Loop(LoopCommand::Resume(_))
            | Command::Loop(LoopCommand::DisposeAgent(_))
            | Command::Loop(LoopCommand::Plugin(_))
            | Command::Loop(LoopCommand::RegisterRoute(_))
            | Command::Loop(LoopCommand::UnregisterRoute(_))
            | Command::Loop(LoopCommand::SettleModel(_))
            | Command::Loop(LoopCommand::Append(_))
            | Command::Loop(LoopCommand::ReadSession(_))
            | Command::Loop(LoopCommand::FirePreStep(_))
            | Command::Loop(LoopCommand::ClockJump(_))
            | Command::Assembly(AssemblyCommand::CanonicalHeader(_))
            | Command::Assembly(AssemblyCommand::ReadRegistry(_))
            | Command::Assembly(AssemblyCommand::HeaderEquals(_)) => Ok(()),
        }
    }

    /// A scripted assembly listener: its registrations and disposals, and no
    /// `set_field` over one of the assembly's own lists.
    fn listen(&mut self, path: &str, s: &mut ListenCommand) -> Result<(), CompileError> {
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

    /// A plugin owning a group of registrations, all of them global.
    fn owner(&mut self, path: &str, s: &mut OwnerCommand) -> Result<(), CompileError> {
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

    /// The ops of scripted tool bodies: their registrations and disposals,
    /// and what a tool call can record.
    pub(super) fn tool_results(
        &mut self,
        tool_results: &mut [ToolResultSpec],
    ) -> Result<(), CompileError> {
        for (tool_index, tool) in tool_results.iter_mut().enumerate() {
            for (index, op) in tool.ops.iter_mut().enumerate() {
                let path = format!("tool_results[{tool_index}].ops[{index}]");
                match op {
                    ToolOp::Register(registration) => {
                        self.nested_registration(&path, registration)?
                    }
                    ToolOp::Dispose(target) => self.dispose_targets.push((path, target.clone())),
                    ToolOp::Act(ActOp::Record(fields)) => check_tool_record(&path, fields)?,
                    ToolOp::WaitForAbort | ToolOp::Act(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Every disposal names a registration the case makes somewhere.
    pub(super) fn check_dispose_targets(&self) -> Result<(), CompileError> {
        for (path, target) in &self.dispose_targets {
            if !self.defined_ids.contains(target) {
                return fail(path, format!("no registration has id {target:?}"));
            }
        }
        Ok(())
    }
}

fn default_named_id(name: &str, scope: &Option<String>) -> String {
    match scope {
        Some(scope) => format!("{name}@{scope}"),
        None => name.to_string(),
    }
}

/// A tool body records only what a tool call receives.
fn check_tool_record(path: &str, fields: &[RecordField]) -> Result<(), CompileError> {
    use RecordField::{Aborted, Arguments, CallId, LastEvent};
    let allowed = [CallId, Arguments, Aborted, LastEvent];
    match fields.iter().find(|f| !allowed.contains(f)) {
        Some(field) => fail(
            &format!("{path}.record"),
            format!(
                "a tool call receives no `{}`; it can record `call_id`, `arguments`, `aborted`, `last_event`",
                field.key()
            ),
        ),
        None => Ok(()),
    }
}

/// Only a `session/event` observer filters by event type: the other
/// listeners each hear one event.
fn check_event_types_only_on_observers(path: &str, command: &Command) -> Result<(), CompileError> {
    let filtered = match command {
        Command::Loop(LoopCommand::OnPreStep(c)) => c.event_types.is_some(),
        Command::Loop(LoopCommand::OnRequest(c)) => c.event_types.is_some(),
        Command::Loop(LoopCommand::OnRequestError(c)) => c.event_types.is_some(),
        Command::Loop(LoopCommand::OnTurnStopping(c)) => c.event_types.is_some(),
        Command::Loop(LoopCommand::OnStatus(c)) => c.event_types.is_some(),
        _ => false,
    };
    match filtered {
        true => fail(
            &format!("{path}.event_types"),
            "`event_types` filters a `session/event` observer (`on_session_event`) or a session \
             append hook (`on_session_append`); this listener hears one event only",
        ),
        false => Ok(()),
    }
}

/// The event a loop listener hears, the fields it can record, and its act
/// ops in place (`None` where an op is its own kind's).
type ListenerActs = (&'static str, &'static [RecordField], Vec<Option<ActOp>>);

/// What [`check_listener_acts`] looks at, for a loop listener.
fn listener_acts(command: &Command) -> Option<ListenerActs> {
    use RecordField::{Aborted, Event, Failure, LastEvent, Messages, Provider, Status, Step, Turn};
    let acts = |op: Option<&ActOp>| op.cloned();
    Some(match command {
        Command::Loop(LoopCommand::OnPreStep(c)) => (
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
        Command::Loop(LoopCommand::OnRequest(c)) => (
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
        Command::Loop(LoopCommand::OnRequestError(c)) => (
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
        Command::Loop(LoopCommand::OnTurnStopping(c)) => (
            "agent/turn-stopping",
            &[Turn, Aborted, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::Loop(LoopCommand::OnStatus(c)) => (
            "agent/status",
            &[Status, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::Loop(LoopCommand::OnSessionEvent(c)) => (
            "session/event",
            &[Event, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::Loop(LoopCommand::OnSessionAppend(c)) => (
            "session/event",
            &[Event, LastEvent],
            c.ops.iter().map(|op| Some(op.clone())).collect(),
        ),
        Command::Loop(LoopCommand::OnLlmStream(c)) => (
            "llm/stream",
            &[Provider, LastEvent],
            c.ops
                .iter()
                .map(|op| match op {
                    LlmStreamOp::Act(a) => Some(a.clone()),
                    _ => None,
                })
                .collect(),
        ),
        _ => return None,
    })
}

/// A loop listener records only fields its event's payload has.
fn check_listener_acts(path: &str, command: &Command) -> Result<(), CompileError> {
    let Some((event, fields, ops)) = listener_acts(command) else {
        return Ok(());
    };
    for (index, op) in ops.iter().enumerate() {
        if event == "llm/stream" && matches!(op, Some(ActOp::SleepMs(_))) {
            return fail(
                &format!("{path}.ops[{index}].sleep_ms"),
                "an llm/stream listener is synchronous: it cannot sleep (a `serve`d stream can pause with a `{ sleep_ms = N }` part)",
            );
        }
        if matches!(command, Command::Loop(LoopCommand::OnSessionAppend(_)))
            && matches!(op, Some(ActOp::SleepMs(_)))
        {
            return fail(
                &format!("{path}.ops[{index}].sleep_ms"),
                "a session append hook runs synchronously inside `session.append`, before the \
                 event is logged: it cannot sleep",
            );
        }
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

/// An `llm/stream` listener's `serve` parts are stream parts, as a route's.
fn check_served_parts(path: &str, command: &Command) -> Result<(), CompileError> {
    let Command::Loop(LoopCommand::OnLlmStream(listener)) = command else {
        return Ok(());
    };
    for (index, op) in listener.ops.iter().enumerate() {
        if let LlmStreamOp::Serve(parts) = op {
            for (part_index, part) in parts.iter().enumerate() {
                super::world::check_stream_part(
                    &format!("{path}.ops[{index}].serve[{part_index}]"),
                    part,
                )?;
            }
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

/// `fold_header`'s events: an array of tables, and a `request/header`
/// event's `data.header` a table, the header `canonicalHeader` reads.
/// Anything else throws a TypeError whose wording is V8's own (an
/// expression it names), which no other implementation could match.
fn fold_header_events(path: &str, command: &FoldHeaderCommand) -> Result<(), CompileError> {
    let malformed = match command.events.0.as_array() {
        None => Some(format!("{path}.events")),
        Some(events) => events.iter().enumerate().find_map(|(index, event)| {
            let is_header = event.get("type").and_then(Value::as_str) == Some("request/header");
            let header_ok = event.pointer("/data/header").is_some_and(Value::is_object);
            (!event.is_object() || (is_header && !header_ok))
                .then(|| format!("{path}.events[{index}]"))
        }),
    };
    match malformed {
        Some(at) => fail(
            &at,
            "fold_header takes an array of events, each a table `{ type, data }`, a `request/header` \
             event's `data.header` a table",
        ),
        None => Ok(()),
    }
}
