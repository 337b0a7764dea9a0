//! `assemble()`: the seven-step pipeline of spec 02, and the
//! `system-prompt/assemble` waterfall it ends with.
//!
//! The order of provider calls and the point where each error fires are
//! observable (a journal shows which providers ran before a failure), so the
//! code follows the spec's steps literally rather than computing the same
//! result in a more convenient order.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use super::js::{JsError, js_key_order, js_normalize};
use super::registry::{NamedText, Registry, Text};
use super::scope::ScopeKey;
use super::signal::AbortSignal;
use super::tool_order::{KnownNames, order_tools};
use super::waterfall::{self, Continuation, DefaultFn, ListenerFn};

/// Facts about the agent an assembly is for; the loop's `provider`, `model`
/// and `cwd` variables read them (01 R1.2).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentFacts {
    /// `agent.options.provider`.
    pub provider: Option<String>,
    /// `agent.options.model`.
    pub model: Option<String>,
    /// `agent.session.header.cwd`.
    pub cwd: Option<String>,
}

/// `AssembleContext` (01 R4.4): every field may be absent.
#[derive(Clone, Default)]
pub struct AssembleContext {
    /// The scope whose chain overlays the global layer.
    pub scope: Option<ScopeKey>,
    /// The agent, when assembling inside the loop.
    pub agent: Option<AgentFacts>,
    /// The turn's abort signal, when assembling inside the loop.
    pub signal: Option<AbortSignal>,
    /// Further fields the caller passed (plugin-defined assembly fields).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One section or context in an assembly. `text` is `None` when a text
/// provider returned `undefined`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptEntry {
    /// Entry name.
    pub name: Rc<str>,
    /// Uninterpolated text (shared with the registration when it is static).
    pub text: Option<Rc<str>>,
}

/// A tool schema as assembled: exactly `{name, description, parameters}`.
/// Assemblies share schemas ([`Rc`]) and copy one on write
/// ([`Rc::make_mut`]): a listener that edits a schema edits its own copy, so
/// the next assembly is untouched, as with upstream's per-assembly
/// `structuredClone`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// Description (`None` = `undefined`).
    pub description: Option<String>,
    /// Detached JSON parameters (`None` = `undefined`).
    pub parameters: Option<Value>,
}

/// A schema as a tool provider returns it, before it is rebuilt.
#[derive(Clone, Debug, Default)]
pub struct ProvidedSchema {
    /// Tool name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Parameters as provided.
    pub parameters: Option<Value>,
    /// Any other fields; dropped by the rebuild (02 A4.2).
    pub extra: serde_json::Map<String, Value>,
    /// When set, `parameters` also holds a value `structuredClone` rejects,
    /// printed as this text (e.g. `Symbol(x)`).
    pub unclonable: Option<String>,
    /// The rebuilt schema, once computed: a provider that hands out the same
    /// objects every call is rebuilt once.
    pub rebuilt: std::cell::OnceCell<Rc<ToolSchema>>,
}

impl ProvidedSchema {
    /// A schema with these fields and nothing detached yet.
    pub fn new(name: String, description: Option<String>, parameters: Option<Value>) -> Self {
        ProvidedSchema {
            name,
            description,
            parameters,
            ..ProvidedSchema::default()
        }
    }
}

impl PartialEq for ProvidedSchema {
    /// Equal when what the provider returned is equal (the rebuilt schema is
    /// derived from it).
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.parameters == other.parameters
            && self.extra == other.extra
            && self.unclonable == other.unclonable
    }
}

/// What a tool provider returns (01 R4.3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolProviderResult {
    /// Visible schemas, shared: a provider may hand out the same list every
    /// time (assembly clones what it keeps).
    pub schemas: Rc<[ProvidedSchema]>,

    /// Names known before scope restriction; replaces the implicit names.
    pub known_names: Option<Vec<String>>,
}

/// A plain object of variables: own keys in JavaScript order, values
/// `string | undefined`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variables {
    entries: Vec<(String, Option<String>)>,
}

impl Variables {
    /// `variables[name] = value`. Assigning `__proto__` on a plain object
    /// with a string does nothing, so neither does this.
    pub fn set(&mut self, name: &str, value: Option<String>) {
        if name == "__proto__" {
            return;
        }
        match self.entries.iter_mut().find(|(key, _)| key == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name.to_string(), value)),
        }
    }

    /// `delete variables[name]`.
    pub fn delete(&mut self, name: &str) {
        self.entries.retain(|(key, _)| key != name);
    }

    /// Own-property lookup: `None` when absent, `Some(None)` when `undefined`.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.entries
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_deref())
    }

    /// Own keys in JavaScript order.
    pub fn keys(&self) -> Vec<&str> {
        js_key_order(self.entries.iter().map(|(key, _)| key.as_str()))
    }

    /// Entries in JavaScript key order.
    pub fn entries(&self) -> Vec<(&str, Option<&str>)> {
        self.keys()
            .into_iter()
            .map(|key| (key, self.get(key).flatten()))
            .collect()
    }
}

/// `PromptAssembly`: what `assemble()` hands the waterfall and returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assembly {
    /// Sections in prompt order.
    pub sections: Vec<PromptEntry>,
    /// Runtime-context entries in order.
    pub contexts: Vec<PromptEntry>,
    /// Tool schemas in request order.
    pub tools: Vec<Rc<ToolSchema>>,
    /// Variables for rendering.
    pub variables: Variables,
    /// Extra top-level fields a listener added; they survive (02 A7.1).
    pub extra: Vec<(String, Value)>,
}

/// A shared, mutable assembly object: listeners mutate it in place.
pub type AssemblyRef = Rc<RefCell<Assembly>>;

/// What a `system-prompt/assemble` listener receives: the assembly object
/// (mutable in place) and the caller's context.
pub struct AssembleEvent {
    /// The assembly object `next()` hands on and the default resolves to.
    pub assembly: AssemblyRef,
    /// The `AssembleContext` the caller passed.
    pub context: Rc<AssembleContext>,
}

/// A `system-prompt/assemble` listener: `(event, next) => assembly`.
pub type AssembleListener = ListenerFn<AssembleEvent, AssemblyRef>;

/// The `next` of an assemble dispatch (01 R5.2).
pub type Next = Continuation<AssembleEvent, AssemblyRef>;

fn evaluate_text(
    entry: &NamedText,
    context: &AssembleContext,
    registry: &Registry,
) -> Result<PromptEntry, JsError> {
    let text = match &entry.text {
        Text::Static(text) => Some(text.clone()),
        Text::Provider(provider) => provider(context, registry)?.map(Rc::from),
    };
    Ok(PromptEntry {
        name: entry.name.clone(),
        text,
    })
}

fn rebuild_schema(schema: &ProvidedSchema) -> Result<Rc<ToolSchema>, JsError> {
    if let Some(text) = &schema.unclonable {
        return Err(JsError::data_clone(text));
    }
    let rebuilt = schema.rebuilt.get_or_init(|| {
        Rc::new(ToolSchema {
            name: schema.name.clone(),
            description: schema.description.clone(),
            parameters: schema.parameters.as_ref().map(js_normalize),
        })
    });
    Ok(rebuilt.clone())
}

/// Stable sort by numeric order (02 A5.1): ties keep map order. Orders are
/// finite, so `a.order - b.order` has the sign of this comparison, and `-0`
/// ties with `0` as it does there.
fn sort_by_order(entries: &mut [Rc<NamedText>]) {
    entries.sort_by(|a, b| {
        a.order
            .partial_cmp(&b.order)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

/// Materialize global named entries followed by chain shadows (01 R2.4): a
/// shadowing name keeps the position of its first occurrence. The entries
/// are shared with the registry, not copied.
fn merge(
    registry: &Registry,
    scope: Option<&ScopeKey>,
    pick: impl Fn(&super::registry::Layer) -> Vec<Rc<NamedText>>,
) -> Vec<Rc<NamedText>> {
    let global = pick(&registry.state.global.borrow());
    let layers = registry.chain_layers(scope);
    if layers.is_empty() {
        return global;
    }
    let scoped: Vec<Vec<Rc<NamedText>>> =
        layers.iter().map(|layer| pick(&layer.borrow())).collect();
    let mut merged = global.clone();
    let mut position: std::collections::BTreeMap<&str, usize> = global
        .iter()
        .enumerate()
        .map(|(i, entry)| (&*entry.name, i))
        .collect();
    for entry in scoped.iter().flatten() {
        match position.get(&*entry.name) {
            Some(&index) => merged[index] = entry.clone(),
            None => {
                position.insert(&entry.name, merged.len());
                merged.push(entry.clone());
            }
        }
    }
    merged
}

fn named_entries(table: &super::table::Table<Rc<NamedText>>) -> Vec<Rc<NamedText>> {
    table.entries().map(|(_, value)| value.clone()).collect()
}

impl Registry {
    /// `assemble(context)` (02 §1).
    pub async fn assemble(&self, context: AssembleContext) -> Result<Assembly, JsError> {
        self.compact();
        let scope = context.scope.clone();
        // Step 1: scope layers and suppression, computed once.
        let scope_layers = self.chain_layers(scope.as_ref());
        let suppressed = !self.state.global.borrow().suppressors.is_empty()
            || scope_layers
                .iter()
                .any(|layer| !layer.borrow().suppressors.is_empty());

        // Step 2: variables, global then farthest → nearest, live iteration.
        let mut variables = Variables::default();
        let variable_layers: Vec<_> = std::iter::once(self.state.global.clone())
            .chain(scope_layers.iter().cloned())
            .collect();
        for layer in &variable_layers {
            let mut cursor = layer.borrow().variables.cursor();
            loop {
                let next = layer.borrow().variables.next(&mut cursor);
                let Some((name, provider)) = next else { break };
                let value = provider(&context, self)?;
                variables.set(name.as_deref().unwrap_or_default(), value);
            }
        }

        // Step 3: effective named entries, before any text provider runs.
        let section_definitions =
            merge(self, scope.as_ref(), |layer| named_entries(&layer.sections));
        let context_definitions =
            merge(self, scope.as_ref(), |layer| named_entries(&layer.contexts));

        // Step 4: tool providers, membership snapshotted before any runs.
        let providers: Vec<_> = std::iter::once(&self.state.global)
            .chain(scope_layers.iter())
            .flat_map(|layer| {
                layer
                    .borrow()
                    .tool_providers
                    .entries()
                    .map(|(_, provider)| provider.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut collected = Vec::new();
        let mut known_names = KnownNames::default();
        for provider in providers {
            let result =
                provider(&context, self)?.ok_or_else(|| JsError::read_of_undefined("schemas"))?;
            let schemas = result
                .schemas
                .iter()
                .map(rebuild_schema)
                .collect::<Result<Vec<_>, _>>()?;
            // Known names only matter to a configured toolOrder (04 T9).
            if self.state.tool_order.is_some() {
                match &result.known_names {
                    Some(names) => names.iter().for_each(|name| known_names.insert(name)),
                    None => schemas
                        .iter()
                        .for_each(|schema| known_names.insert(&schema.name)),
                }
            }
            collected.extend(schemas);
        }

        // Step 5: order and evaluate.
        let mut section_definitions = section_definitions;
        sort_by_order(&mut section_definitions);
        let complete: Vec<&Rc<NamedText>> =
            section_definitions.iter().filter(|s| s.complete).collect();
        if complete.len() > 1 {
            let names: Vec<String> = complete.iter().map(|s| super::js::quote(&s.name)).collect();
            return Err(JsError::error(format!(
                "multiple complete prompt sections are active: {}",
                names.join(", ")
            )));
        }
        let mut complete_section = None;
        let mut sections = Vec::with_capacity(section_definitions.len());
        for definition in &section_definitions {
            let entry = evaluate_text(definition, &context, self)?;
            if definition.complete {
                complete_section = Some(entry.clone());
            }
            sections.push(entry);
        }
        let mut contexts = Vec::new();
        if !suppressed {
            let mut context_definitions = context_definitions;
            sort_by_order(&mut context_definitions);
            for definition in &context_definitions {
                contexts.push(evaluate_text(definition, &context, self)?);
            }
        }
        let tools = order_tools(collected, self.state.tool_order.as_deref(), &known_names)?;
        let assembly: AssemblyRef = Rc::new(RefCell::new(Assembly {
            sections,
            contexts,
            tools,
            variables,
            extra: Vec::new(),
        }));

        // Step 6: the waterfall; with no listener left, `next()` resolves to
        // the original object.
        let original = assembly.clone();
        let default: DefaultFn<AssemblyRef> = Rc::new(move || {
            let assembly = original.clone();
            Box::pin(async move { Ok(assembly) })
        });
        let event = Rc::new(AssembleEvent {
            assembly,
            context: Rc::new(context),
        });
        let transformed =
            waterfall::dispatch(self.listeners_for(scope.as_ref()), event, default).await?;
        // `await` in JavaScript always yields: the synchronous part of an
        // assembly ends at the waterfall, which the loop's wake relies on.
        super::signal::yield_now().await;
        // Listeners are done with the object; take it rather than copy it
        // unless one kept a reference.
        let mut result = Rc::try_unwrap(transformed)
            .map_or_else(|shared| shared.borrow().clone(), RefCell::into_inner);

        // Step 7: hard constraints.
        if let Some(complete_section) = complete_section {
            result.sections = vec![complete_section];
        }
        if suppressed {
            result.contexts = Vec::new();
        }
        Ok(result)
    }
}
