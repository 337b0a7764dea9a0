//! Scripted providers and `system-prompt/assemble` listeners built from
//! case data, on the reference model: the building blocks both levels'
//! command runners use.
//!
//! Every provider and listener evaluation is recorded in the [`World`]'s
//! journal, and what listeners' `record` ops saw in its records.
//! Registration is total over [`Registration`]: each kind has its
//! own function, so a new kind is a compile error here, not a panic.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use indexmap::IndexMap;
use serde_json::Value;

use dshc_model::js::{js_key_order, js_normalize};
use dshc_model::render::{join_context_sections, render_context_sections, render_prompt};
use dshc_model::{
    AssembleContext, AssembleEvent, AssembleListener, Assembly, Config, Disposer, JsError,
    ListenerOptions, NamedText, Next, PromptEntry, ProvidedSchema, Registry, ScopeKey, Text,
    ToolProviderResult, ToolSchema,
};
use dshc_scenario::protocol::{
    AssemblyData, AssemblyRecordField, ChangeListenerCommand, ConfigSpec, ContextCommand, Effect,
    EntryData, ListenCommand, ListenerOp, Observation, ObservedError, OwnerCommand, Provided,
    ProviderSpec, Registration, Rendered, RenderedSections, ReplaceSpec, SchemaSpec,
    SectionCommand, SequenceItem, SuppressCommand, TextSpec, ToolData, ToolsCommand,
    ToolsResultSpec, VariableCommand, VariableValue,
};

/// State shared by every scripted closure of one case. Closures hold it
/// weakly, so a registry never keeps its own world alive.
#[derive(Default)]
pub struct World {
    disposers: RefCell<BTreeMap<String, Disposer>>,
    scopes: RefCell<BTreeMap<String, Option<String>>>,
    journal: RefCell<Vec<String>>,
    /// What listeners' `record` ops wrote, `{listener, call, <field>...}`.
    records: RefCell<Vec<Value>>,
    /// Set while nothing reads the journal (a benchmark).
    quiet: Cell<bool>,
    /// Owners (plugins) by id: the ids of the registrations each made, in order.
    owners: RefCell<BTreeMap<String, Vec<String>>>,
}

/// A weak handle to a [`World`], as closures hold it.
pub type WorldRef = Weak<World>;

impl World {
    fn record(world: &WorldRef, entry: impl FnOnce() -> String) {
        if let Some(world) = world.upgrade()
            && !world.quiet.get()
        {
            world.journal.borrow_mut().push(entry());
        }
    }

    /// Stop (or resume) recording the journal: a benchmark runs millions of
    /// provider calls and reads no journal.
    pub fn set_journaling(&self, on: bool) {
        self.quiet.set(!on);
    }

    /// Disposers of registrations made on this scope.
    pub fn disposers_in(&self, scope: &str) -> Vec<Disposer> {
        let scopes = self.scopes.borrow();
        self.disposers
            .borrow()
            .iter()
            .filter(|(id, _)| scopes.get(*id).is_some_and(|s| s.as_deref() == Some(scope)))
            .map(|(_, disposer)| disposer.clone())
            .collect()
    }

    /// Take the journal recorded since the last call.
    pub fn take_journal(&self) -> Vec<String> {
        std::mem::take(&mut self.journal.borrow_mut())
    }

    /// Take the records written since the last call.
    pub fn take_records(&self) -> Vec<Value> {
        std::mem::take(&mut self.records.borrow_mut())
    }
}

/// Resolve a scenario config to the model's config.
pub fn config_of(spec: &ConfigSpec) -> Config {
    let defaults = Config::default();
    Config {
        include_harness_identity: spec
            .include_harness_identity
            .unwrap_or(defaults.include_harness_identity),
        include_runtime_context: spec
            .include_runtime_context
            .unwrap_or(defaults.include_runtime_context),
        persona: spec.persona.clone().unwrap_or(defaults.persona),
        tool_order: spec.tool_order.clone(),
    }
}

/// Convert a model error for observation.
pub fn observed(error: &JsError) -> ObservedError {
    ObservedError {
        name: error.name.clone(),
        message: error.message.clone(),
        code: error.code.clone(),
    }
}

fn scope_key(scope: &Option<String>) -> Option<ScopeKey> {
    scope.as_deref().map(ScopeKey::new)
}

/// Build the provided schema a scripted tool provider returns.
pub fn provided_schema(spec: &SchemaSpec) -> ProvidedSchema {
    ProvidedSchema {
        extra: spec.extra.clone().unwrap_or_default(),
        unclonable: spec
            .unclonable_symbol
            .as_ref()
            .map(|s| format!("Symbol({s})")),
        ..ProvidedSchema::new(
            spec.name.clone(),
            spec.description.clone(),
            spec.parameters.clone(),
        )
    }
}

fn tools_result(spec: &ToolsResultSpec) -> ToolProviderResult {
    ToolProviderResult {
        schemas: spec
            .schemas
            .iter()
            .map(provided_schema)
            .collect::<Vec<_>>()
            .into(),

        known_names: spec.known_names.clone(),
    }
}

/// The value of a provider that does nothing but return it.
fn returns_only<T>(spec: &ProviderSpec<T>) -> Option<&T> {
    match &spec.provided {
        Provided::Returns(value) if spec.effects.is_empty() => Some(value),
        _ => None,
    }
}

/// Run a provider's effects for this call, then produce its outcome.
fn call_provider<T: Clone>(
    spec: &ProviderSpec<T>,
    call: u32,
    context: &AssembleContext,
    world: &WorldRef,
    registry: &Registry,
    from_context: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, JsError> {
    for effect in &spec.effects {
        if effect.on_call.is_none_or(|n| n == call) {
            apply_effect(effect, world, registry)?;
        }
    }
    match &spec.provided {
        Provided::Throws { message, cause } => {
            let error = JsError::error(message.clone());
            Err(match cause {
                Some(cause) => error.with_cause(JsError::error(cause.clone())),
                None => error,
            })
        }
        Provided::Undefined => Ok(None),
        Provided::Returns(value) => Ok(Some(value.clone())),
        Provided::ContextField(field) => Ok(context.extra.get(field).and_then(from_context)),
        Provided::Computes(template) => {
            let scope = context.scope.as_ref().map_or("undefined", ScopeKey::as_str);
            Ok(from_context(&Value::String(computed_text(
                template, call, scope,
            ))))
        }
        Provided::Sequence(sequence) => {
            let index = (call as usize - 1).min(sequence.len().saturating_sub(1));
            Ok(sequence.get(index).and_then(SequenceItem::value).cloned())
        }
    }
}

/// A `computes` template: each `{call}` and `{scope}`, left to right, is
/// replaced by the call's number and the scope's name; nothing else is.
fn computed_text(template: &str, call: u32, scope: &str) -> String {
    let mut text = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        text.push_str(&rest[..open]);
        let tail = &rest[open..];
        if let Some(after) = tail.strip_prefix("{call}") {
            text.push_str(&call.to_string());
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{scope}") {
            text.push_str(scope);
            rest = after;
        } else {
            text.push('{');
            rest = &tail[1..];
        }
    }
    text.push_str(rest);
    text
}

fn apply_effect(effect: &Effect, world: &WorldRef, registry: &Registry) -> Result<(), JsError> {
    if let Some(registration) = &effect.register {
        register(registration, world, registry)?;
    }
    if let Some(target) = &effect.dispose {
        // A change listener's throw escapes the disposer, and so the provider.
        try_dispose(target, world)?;
    }
    Ok(())
}

/// Call the disposer remembered under `target`; false if none or already
/// disposed. A change listener's throw during the disposal is dropped.
pub fn dispose(target: &str, world: &WorldRef) -> bool {
    try_dispose(target, world).unwrap_or(true)
}

/// [`dispose`], with a change listener's throw (the `dispose` command's
/// error). Disposing an owner disposes its registrations, last first, as a
/// plugin's effects are torn down ([`dispose_group`]).
pub fn try_dispose(target: &str, world: &WorldRef) -> Result<bool, JsError> {
    let owned = world
        .upgrade()
        .and_then(|world| world.owners.borrow_mut().remove(target));
    if let Some(members) = owned {
        dispose_group(members.iter().rev().map(String::as_str), world);
        return Ok(true);
    }
    let disposer = world
        .upgrade()
        .and_then(|world| world.disposers.borrow().get(target).cloned());
    disposer.map_or(Ok(false), |disposer| disposer.try_dispose())
}

/// Tear a group down (a plugin's fiber, a disposed scope): every member is
/// disposed, whatever its change listeners throw. cordis contains a throw in
/// one effect's teardown and goes on with the next, and the group's disposal
/// itself does not throw.
pub fn dispose_group<'a>(members: impl Iterator<Item = &'a str>, world: &WorldRef) {
    for member in members {
        let _ = try_dispose(member, world);
    }
}

/// A plugin owning `command.registrations`: each is made in order and
/// remembered, and the owner's id stands for the group. A registration that
/// throws fails the plugin's `apply`: cordis then disposes the plugin, so the
/// registrations made before it are undone (a change each) and the owner is
/// not remembered (a later `dispose` of its id does nothing).
pub fn register_owner(
    command: &OwnerCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let mut members: Vec<String> = Vec::new();
    for registration in &command.registrations {
        if let Err(error) = register(registration, world, registry) {
            dispose_group(members.iter().rev().map(String::as_str), world);
            return Err(error);
        }
        members.push(registration_id(registration));
    }
    if let Some(world) = world.upgrade() {
        world
            .owners
            .borrow_mut()
            .insert(command.id.clone(), members);
    }
    Ok(())
}

/// The id a (compiled) registration is remembered under.
fn registration_id(registration: &Registration) -> String {
    let id = match registration {
        Registration::Section(c) => &c.id,
        Registration::Context(c) => &c.id,
        Registration::Suppress(c) => &c.id,
        Registration::Tools(c) => &c.id,
        Registration::Variable(c) => &c.id,
    };
    id.clone().unwrap_or_default()
}

/// `ctx.on('system-prompt/change', listener)`: journals `change <id>` on
/// every event and throws on the invocations `throw_on` names.
pub fn register_change_listener(
    command: &ChangeListenerCommand,
    world: &WorldRef,
    registry: &Registry,
) {
    let (id, world_ref) = (command.id.clone(), world.clone());
    let (throw_on, message) = (
        command.throw_on.clone().unwrap_or_default(),
        command.throws.clone(),
    );
    let calls = std::cell::Cell::new(0u32);
    let disposer = registry.on_change(Rc::new(move || {
        calls.set(calls.get() + 1);
        World::record(&world_ref, || format!("change {id}"));
        if throw_on.contains(&calls.get()) {
            return Err(JsError::error(message.clone()));
        }
        Ok(())
    }));
    remember(world, &Some(command.id.clone()), &None, disposer);
}

/// A journaled text provider for a section, context or variable.
fn journaled_provider(
    kind: &'static str,
    id: &str,
    spec: &ProviderSpec<String>,
    world: &WorldRef,
) -> dshc_model::registry::TextFn {
    let calls = Rc::new(Cell::new(0u32));
    // Shared texts: a call hands out the same string, as a JavaScript
    // closure over a constant does.
    let spec = spec.map(|text| Rc::<str>::from(text.as_str()));
    let (id, world) = (id.to_string(), world.clone());
    Rc::new(move |context: &AssembleContext, registry: &Registry| {
        calls.set(calls.get() + 1);
        World::record(&world, || format!("{kind} {id}"));
        call_provider(&spec, calls.get(), context, &world, registry, |value| {
            value.as_str().map(Rc::from)
        })
    })
}

fn text_of(kind: &'static str, id: &str, text: &TextSpec, world: &WorldRef) -> Text {
    match text {
        TextSpec::Static(text) => Text::Static(text.as_str().into()),
        TextSpec::Provider(spec) => Text::Provider(journaled_provider(kind, id, spec, world)),
    }
}

/// Perform a registration; remember its disposer under its id.
pub fn register(
    registration: &Registration,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    match registration {
        Registration::Section(command) => register_section(command, world, registry),
        Registration::Context(command) => register_context(command, world, registry),
        Registration::Suppress(command) => register_suppressor(command, world, registry),
        Registration::Tools(command) => register_tools(command, world, registry),
        Registration::Variable(command) => register_variable(command, world, registry),
    }
}

/// Remember a registration's disposer under its id, and the scope it was
/// made on.
fn remember(world: &WorldRef, id: &Option<String>, scope: &Option<String>, disposer: Disposer) {
    if let Some(world) = world.upgrade() {
        let id = id.clone().unwrap_or_default();
        world.scopes.borrow_mut().insert(id.clone(), scope.clone());
        world.disposers.borrow_mut().insert(id, disposer);
    }
}

/// `systemPrompt.section(...)`.
pub fn register_section(
    command: &SectionCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let id = command.id.clone().unwrap_or_default();
    let text = text_of("section", &id, &command.text, world);
    let disposer = registry.section(
        scope_key(&command.scope).as_ref(),
        NamedText {
            name: command.name.as_str().into(),
            order: command.order.0,
            text,
            complete: command.complete,
        },
    )?;
    remember(world, &command.id, &command.scope, disposer);
    Ok(())
}

/// `systemPrompt.context(...)`.
pub fn register_context(
    command: &ContextCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let id = command.id.clone().unwrap_or_default();
    let text = text_of("context", &id, &command.text, world);
    let disposer = registry.context(
        scope_key(&command.scope).as_ref(),
        NamedText {
            name: command.name.as_str().into(),
            order: command.order.0,
            text,
            complete: false,
        },
    )?;
    remember(world, &command.id, &command.scope, disposer);
    Ok(())
}

/// `systemPrompt.variable(name, provider)`: a plain string is a provider
/// returning it, so every variable evaluation is journaled.
pub fn register_variable(
    command: &VariableCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let id = command.id.clone().unwrap_or_default();
    let spec = match &command.value {
        TextSpec::Static(value) => ProviderSpec::returning(value.clone()),
        TextSpec::Provider(spec) => spec.clone(),
    };
    let provider = journaled_provider("variable", &id, &spec, world);
    let disposer =
        registry.variable(scope_key(&command.scope).as_ref(), &command.name, provider)?;
    remember(world, &command.id, &command.scope, disposer);
    Ok(())
}

/// `systemPrompt.suppressRuntimeContext()`.
pub fn register_suppressor(
    command: &SuppressCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let disposer = registry.suppress_runtime_context(scope_key(&command.scope).as_ref())?;
    remember(world, &command.id, &command.scope, disposer);
    Ok(())
}

/// `systemPrompt.tools(provider)`.
pub fn register_tools(
    command: &ToolsCommand,
    world: &WorldRef,
    registry: &Registry,
) -> Result<(), JsError> {
    let calls = Rc::new(Cell::new(0u32));
    let journal_id = command.id.clone().unwrap_or_default();
    let (spec, world_ref) = (command.provider.clone(), world.clone());
    // A provider that only returns one value hands out the same schema
    // objects every call, as a real provider does (and assembly detaches
    // them once).
    let fixed = returns_only(&spec).map(tools_result);
    let disposer = registry.tools(
        scope_key(&command.scope).as_ref(),
        Rc::new(move |context: &AssembleContext, registry: &Registry| {
            calls.set(calls.get() + 1);
            World::record(&world_ref, || format!("tools {journal_id}"));
            if let Some(fixed) = &fixed {
                return Ok(Some(fixed.clone()));
            }
            let result =
                call_provider(&spec, calls.get(), context, &world_ref, registry, |_| None)?;
            Ok(result.map(|r| tools_result(&r)))
        }),
    )?;
    remember(world, &command.id, &command.scope, disposer);
    Ok(())
}

/// `ctx.on('system-prompt/assemble', listener, options)`.
pub fn register_listener(command: &ListenCommand, world: &WorldRef, registry: &Registry) {
    let disposer = listen(command, world, registry);
    remember(world, &Some(command.id.clone()), &command.scope, disposer);
}

fn entry(data: &EntryData) -> PromptEntry {
    PromptEntry {
        name: data.name.as_str().into(),
        text: data.text.as_deref().map(Rc::from),
    }
}

/// A schema a listener adds goes in as given: no clone, no rebuild.
fn listener_tool(spec: &SchemaSpec) -> ToolSchema {
    ToolSchema {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.clone(),
    }
}

fn replacement(spec: &ReplaceSpec) -> Assembly {
    let mut assembly = Assembly {
        sections: spec.sections.iter().map(entry).collect(),
        contexts: spec.contexts.iter().map(entry).collect(),
        tools: spec
            .tools
            .iter()
            .map(|tool| Rc::new(listener_tool(tool)))
            .collect(),
        ..Assembly::default()
    };
    for (name, value) in &spec.variables {
        assembly.variables.set(name, variable_value(value));
    }
    assembly
}

fn variable_value(value: &VariableValue) -> Option<String> {
    match value {
        VariableValue::Value(value) => Some(value.clone()),
        VariableValue::Undefined { .. } => None,
    }
}

fn insert_at(list: &mut Vec<PromptEntry>, index: Option<usize>, item: PromptEntry) {
    let index = index.unwrap_or(list.len()).min(list.len());
    list.insert(index, item);
}

fn set_path(target: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cursor = target;
    for key in parents {
        match cursor.get_mut(key) {
            Some(next) => cursor = next,
            None => return,
        }
    }
    if let Some(object) = cursor.as_object_mut() {
        object.insert(last.clone(), value);
    }
}

/// Apply one editing op to the current assembly object.
fn edit(assembly: &mut Assembly, op: &ListenerOp) {
    match op {
        ListenerOp::AddSection(spec) => insert_at(
            &mut assembly.sections,
            spec.index,
            PromptEntry {
                name: spec.name.as_str().into(),
                text: Some(spec.text.as_str().into()),
            },
        ),
        ListenerOp::RemoveSection(name) => assembly.sections.retain(|s| *s.name != **name),
        ListenerOp::RenameSection(spec) => {
            if let Some(section) = assembly.sections.iter_mut().find(|s| *s.name == *spec.from) {
                section.name = spec.to.as_str().into();
            }
        }
        ListenerOp::SetSectionText(spec) => {
            if let Some(section) = assembly.sections.iter_mut().find(|s| *s.name == *spec.name) {
                section.text = Some(spec.text.as_str().into());
            }
        }
        ListenerOp::ReorderSections(names) => {
            let rank = |entry: &PromptEntry| {
                names
                    .iter()
                    .position(|n| **n == *entry.name)
                    .unwrap_or(names.len())
            };
            assembly.sections.sort_by_key(rank);
        }
        ListenerOp::AddContext(spec) => insert_at(
            &mut assembly.contexts,
            spec.index,
            PromptEntry {
                name: spec.name.as_str().into(),
                text: Some(spec.text.as_str().into()),
            },
        ),
        ListenerOp::RemoveContext(name) => assembly.contexts.retain(|c| *c.name != **name),
        ListenerOp::SetContextText(spec) => {
            if let Some(context) = assembly.contexts.iter_mut().find(|c| *c.name == *spec.name) {
                context.text = Some(spec.text.as_str().into());
            }
        }
        ListenerOp::AddTool(spec) => assembly.tools.push(Rc::new(listener_tool(spec))),
        ListenerOp::RemoveTool(name) => assembly.tools.retain(|t| &t.name != name),
        ListenerOp::ReverseTools => assembly.tools.reverse(),
        ListenerOp::SetToolParameter(spec) => {
            if let Some(parameters) = assembly
                .tools
                .iter_mut()
                .find(|t| t.name == spec.tool)
                // Copy on write: the provider's schema and later assemblies keep theirs.
                .and_then(|t| Rc::make_mut(t).parameters.as_mut())
            {
                set_path(parameters, &spec.path, spec.value.clone());
            }
        }
        ListenerOp::SetVariable(spec) => {
            assembly.variables.set(&spec.name, Some(spec.value.clone()))
        }
        ListenerOp::UnsetVariable(name) => assembly.variables.set(name, None),
        ListenerOp::DeleteVariable(name) => assembly.variables.delete(name),
        ListenerOp::SetField(spec) => {
            match assembly.extra.iter_mut().find(|(key, _)| key == &spec.name) {
                Some(field) => field.1 = spec.value.clone(),
                None => assembly.extra.push((spec.name.clone(), spec.value.clone())),
            }
        }
        // Control ops change the flow, not the object: the listener runs them.
        ListenerOp::Next
        | ListenerOp::Throw(_)
        | ListenerOp::Replace(_)
        | ListenerOp::Register(_)
        | ListenerOp::Dispose(_)
        | ListenerOp::WaitForAbort
        | ListenerOp::SleepMs(_)
        | ListenerOp::Record(_) => {}
    }
}

/// The entry a `record` op writes: `{listener, call}`, then each field of
/// `assembly` in the order asked, in the shape an observation gives it.
fn record_entry(id: &str, call: u32, fields: &[AssemblyRecordField], assembly: &Assembly) -> Value {
    let data = assembly_data(assembly);
    let mut entry = serde_json::Map::new();
    entry.insert("listener".into(), Value::from(id));
    entry.insert("call".into(), Value::from(call));
    for field in fields {
        let value = match field {
            AssemblyRecordField::Sections => serde_json::json!(data.sections),
            AssemblyRecordField::Contexts => serde_json::json!(data.contexts),
            AssemblyRecordField::Tools => serde_json::json!(data.tools),
            AssemblyRecordField::ToolNames => Value::Array(
                data.tools
                    .iter()
                    .map(|t| Value::from(t.name.as_str()))
                    .collect(),
            ),
            AssemblyRecordField::Variables => serde_json::json!(data.variables),
            AssemblyRecordField::Extra => Value::Object(data.extra.clone()),
        };
        entry.insert(field.key().into(), value);
    }
    Value::Object(entry)
}

/// Register a scripted `system-prompt/assemble` listener. Its ops run in
/// order on `current` (the argument object until `next` or `replace`
/// changes it), which it returns.
fn listen(command: &ListenCommand, world: &WorldRef, registry: &Registry) -> Disposer {
    let ops = Rc::new(command.ops.clone());
    let id = command.id.clone();
    let world = world.clone();
    let weak_registry = registry.downgrade();
    let calls = Rc::new(Cell::new(0u32));
    let callback: AssembleListener = Rc::new(move |event: Rc<AssembleEvent>, next: Next| {
        calls.set(calls.get() + 1);
        World::record(&world, || format!("listener {id}"));
        let (ops, world, weak_registry) = (ops.clone(), world.clone(), weak_registry.clone());
        let (id, call) = (id.clone(), calls.get());
        Box::pin(async move {
            let mut current = event.assembly.clone();
            for op in ops.iter() {
                match op {
                    ListenerOp::Next => current = next.call().await?,
                    ListenerOp::Throw(message) => return Err(JsError::error(message.clone())),
                    ListenerOp::Replace(spec) => current = Rc::new(RefCell::new(replacement(spec))),
                    ListenerOp::Register(registration) => {
                        if let Some(registry) = weak_registry.upgrade() {
                            register(registration, &world, &registry)?;
                        }
                    }
                    ListenerOp::Dispose(target) => {
                        // A change listener's throw escapes the disposer,
                        // and so the listener.
                        try_dispose(target, &world)?;
                    }
                    ListenerOp::WaitForAbort => {
                        let Some(signal) = event.context.signal.clone() else {
                            return Err(JsError::error(
                                "wait_for_abort: this assembly has no signal",
                            ));
                        };
                        let reason = signal.aborted().await;
                        return Err(JsError::error(format!("aborted: {reason}")));
                    }
                    ListenerOp::SleepMs(ms) => {
                        // `setTimeout(resolve, ms)`: never due at the same instant.
                        let delay_ms = dshc_model::js::timer_delay_ms(*ms);
                        mock_provider::sim_time::sleep(std::time::Duration::from_millis(delay_ms))
                            .await
                    }
                    ListenerOp::Record(fields) => {
                        if let Some(world) = world.upgrade() {
                            let entry = record_entry(&id, call, fields, &current.borrow());
                            world.records.borrow_mut().push(entry);
                        }
                    }
                    ListenerOp::AddSection(_)
                    | ListenerOp::RemoveSection(_)
                    | ListenerOp::RenameSection(_)
                    | ListenerOp::SetSectionText(_)
                    | ListenerOp::ReorderSections(_)
                    | ListenerOp::AddContext(_)
                    | ListenerOp::RemoveContext(_)
                    | ListenerOp::SetContextText(_)
                    | ListenerOp::AddTool(_)
                    | ListenerOp::RemoveTool(_)
                    | ListenerOp::ReverseTools
                    | ListenerOp::SetToolParameter(_)
                    | ListenerOp::SetVariable(_)
                    | ListenerOp::UnsetVariable(_)
                    | ListenerOp::DeleteVariable(_)
                    | ListenerOp::SetField(_) => edit(&mut current.borrow_mut(), op),
                }
            }
            Ok(current)
        })
    });
    registry.on_assemble(
        ListenerOptions {
            tag: scope_key(&command.scope),
            global: command.global,
            prepend: command.prepend,
        },
        callback,
    )
}

fn entry_data(entry: &PromptEntry) -> EntryData {
    EntryData {
        name: entry.name.to_string(),
        text: entry.text.as_deref().map(str::to_owned),
    }
}

/// The observable form of an assembly. Every object is listed in
/// JavaScript own-key order (array-index keys first), as upstream's objects
/// enumerate, whoever created them.
pub fn assembly_data(assembly: &Assembly) -> AssemblyData {
    let mut variables = IndexMap::new();
    for (name, value) in assembly.variables.entries() {
        let value = match value {
            Some(value) => VariableValue::Value(value.to_string()),
            None => VariableValue::Undefined { undefined: true },
        };
        variables.insert(name.to_string(), value);
    }
    AssemblyData {
        sections: assembly.sections.iter().map(entry_data).collect(),
        contexts: assembly.contexts.iter().map(entry_data).collect(),
        tools: assembly
            .tools
            .iter()
            .map(|tool| ToolData {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.as_ref().map(js_normalize),
            })
            .collect(),
        variables,
        extra: js_key_order(assembly.extra.iter().map(|(key, _)| key.as_str()))
            .into_iter()
            .filter_map(|key| {
                let value = assembly
                    .extra
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| js_normalize(v))?;
                Some((key.to_string(), value))
            })
            .collect(),
    }
}

/// Fill the render observations of a successful assembly.
pub fn observe_renders(assembly: &Assembly, observation: &mut Observation) {
    observation.prompt = Some(match render_prompt(assembly) {
        Ok(text) => Rendered::Text(text),
        Err(error) => Rendered::Error(observed(&error)),
    });
    match render_context_sections(assembly) {
        Ok(sections) => {
            observation.snapshot = Some(Rendered::Text(join_context_sections(&sections)));
            observation.snapshot_sections = Some(RenderedSections::Sections(
                sections.iter().map(entry_data).collect(),
            ));
        }
        Err(error) => {
            observation.snapshot = Some(Rendered::Error(observed(&error)));
            observation.snapshot_sections = Some(RenderedSections::Error(observed(&error)));
        }
    }
}
