//! The assembly level (spec 01–04): registrations, disposal, scope binding
//! and `assemble()` on a fresh registry, with nothing around it.

use std::rc::Rc;

use dshc_model::{AssembleContext, JsError, Registry, ScopeKey};
use dshc_scenario::protocol::{AssemblyCommand, Case, CaseResult, Command, Observation};

use super::driver::{Commands, run_commands};
use super::scripted::{
    World, assembly_data, config_of, observe_renders, observed, register_change_listener,
    register_context, register_listener, register_owner, register_section, register_suppressor,
    register_tools, register_variable, try_dispose,
};
use dshc_model::header::{canonical_header, header_equals};
use dshc_model::js::{JsValue, number_json};
use dshc_model::registry::{EntryContents, LayerContents};
use serde_json::Value;

/// The registry commands, shared with the loop level.
pub(crate) struct AssemblyCommands {
    pub registry: Registry,
    pub world: Rc<World>,
}

impl AssemblyCommands {
    /// A command of the assembly level, at either level.
    pub async fn run(
        &self,
        command: &AssemblyCommand,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        let world = Rc::downgrade(&self.world);
        let registry = &self.registry;
        match command {
            AssemblyCommand::Section(c) => register_section(c, &world, registry),
            AssemblyCommand::Context(c) => register_context(c, &world, registry),
            AssemblyCommand::Suppress(c) => register_suppressor(c, &world, registry),
            AssemblyCommand::Tools(c) => register_tools(c, &world, registry),
            AssemblyCommand::Variable(c) => register_variable(c, &world, registry),
            AssemblyCommand::Listen(c) => {
                register_listener(c, &world, registry);
                Ok(())
            }
            AssemblyCommand::Dispose(c) => try_dispose(&c.target, &world).map(|_| ()),
            AssemblyCommand::OnChange(c) => {
                register_change_listener(c, &world, registry);
                Ok(())
            }
            AssemblyCommand::Owner(c) => register_owner(c, &world, registry),
            AssemblyCommand::CanonicalHeader(c) => {
                let header = JsValue::from_encoded(&c.header.0).to_json_lossy();
                observation.value = Some(canonical_header(&header));
                Ok(())
            }
            AssemblyCommand::FoldHeader(c) => {
                observation.value = fold_header(c);
                Ok(())
            }
            AssemblyCommand::ReadRegistry(_) => {
                observation.value = Some(registry_contents(registry));
                Ok(())
            }
            AssemblyCommand::HeaderEquals(c) => {
                let a = JsValue::from_encoded(&c.a.0).to_json_lossy();
                let b = JsValue::from_encoded(&c.b.0).to_json_lossy();
                observation.value = Some(Value::Bool(header_equals(&a, &b)));
                Ok(())
            }
            // A scope's disposal tears its whole group down: a throwing
            // change listener neither stops it nor fails the command.
            AssemblyCommand::DisposeScope(c) => {
                // A scope is a cordis fiber: its unload logs a change
                // listener's throw and goes on, so the disposal never fails.
                if let Some(world) = world.upgrade() {
                    for disposer in world.disposers_in(&c.scope) {
                        let _ = disposer.try_dispose();
                    }
                }
                Ok(())
            }
            AssemblyCommand::Bind(c) => {
                registry.bind_scope_parent(&ScopeKey::new(&c.scope), &ScopeKey::new(&c.parent))
            }
            AssemblyCommand::Assemble(c) => {
                let context = AssembleContext {
                    scope: c.scope.as_deref().map(ScopeKey::new),
                    extra: c.context.clone(),
                    ..AssembleContext::default()
                };
                let assembly = registry.assemble(context).await?;
                observation.assembly = Some(assembly_data(&assembly));
                observe_renders(&assembly, observation);
                Ok(())
            }
        }
    }
}

impl Commands for AssemblyCommands {
    async fn run(
        &mut self,
        command: &Command,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        match command {
            Command::Assembly(command) => AssemblyCommands::run(self, command, observation).await,
            Command::Loop(_) => Err(JsError::error(
                "this command needs a loop-level case (an agent to act on)",
            )),
        }
    }
}

/// Run an assembly-level case.
pub(crate) fn run_assembly_case(case: &Case) -> CaseResult {
    let registry = match Registry::new(config_of(&case.config)) {
        Ok(registry) => registry,
        Err(error) => {
            return CaseResult {
                config_error: Some(observed(&error)),
                ..CaseResult::default()
            };
        }
    };
    let mut level = AssemblyCommands {
        registry: registry.clone(),
        world: Rc::new(World::default()),
    };
    let world = level.world.clone();
    // Nothing at this level waits on time or I/O, so a plain executor runs it.
    let observations =
        futures::executor::block_on(run_commands(&case.commands, &registry, &world, &mut level));
    CaseResult {
        config_error: None,
        observations,
        run: None,
    }
}

/// `foldRequestHeader(events, baseline)`: the canonical header of the last
/// `request/header` event, or the baseline as given (not canonicalized)
/// when there is none; `None` for `undefined`. The compiler checked the
/// events' shape.
fn fold_header(command: &dshc_scenario::protocol::FoldHeaderCommand) -> Option<Value> {
    let baseline = command
        .baseline
        .as_ref()
        .map(|baseline| JsValue::from_encoded(&baseline.0))
        .filter(|baseline| !baseline.is_undefined())
        .map(|baseline| baseline.to_json_lossy());
    let events = JsValue::from_encoded(&command.events.0).to_json_lossy();
    events
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|event| event["type"] == dshc_model::session::event_kind::REQUEST_HEADER)
        .map(|event| canonical_header(&event["data"]["header"]))
        .or(baseline)
}

/// `read_registry`: the global layer and every existing scoped layer, in
/// scope-name order, each as `{sections, contexts, variables,
/// tool_providers, suppressors}`.
fn registry_contents(registry: &Registry) -> Value {
    let (global, scoped) = registry.contents();
    let scopes: Vec<Value> = scoped
        .iter()
        .map(|(key, layer)| {
            let mut entry = serde_json::Map::new();
            entry.insert("scope".into(), Value::from(key.as_str()));
            if let Value::Object(fields) = layer_json(layer) {
                entry.extend(fields);
            }
            Value::Object(entry)
        })
        .collect();
    serde_json::json!({"global": layer_json(&global), "scopes": scopes})
}

fn layer_json(layer: &LayerContents) -> Value {
    let entries = |entries: &[EntryContents]| -> Vec<Value> {
        entries
            .iter()
            .map(|entry| {
                let mut fields = serde_json::Map::new();
                fields.insert("name".into(), Value::from(&*entry.name));
                fields.insert("order".into(), number_json(entry.order));
                if entry.complete {
                    fields.insert("complete".into(), Value::Bool(true));
                }
                if let Some(text) = &entry.static_text {
                    fields.insert("text".into(), Value::from(&**text));
                }
                Value::Object(fields)
            })
            .collect()
    };
    serde_json::json!({
        "sections": entries(&layer.sections),
        "contexts": entries(&layer.contexts),
        "variables": layer.variables,
        "tool_providers": layer.tool_providers,
        "suppressors": layer.suppressors,
    })
}
