//! The values an assembly is made of: what `assemble()` hands the
//! `system-prompt/assemble` waterfall and returns (spec 02 A7), the tool
//! schemas and variables in it, and what providers give back.
//!
//! They live apart from the pipeline ([`crate::assembly`]) because the
//! registry stores listeners and tool providers of these types, and the
//! renderer and tool order read them: with the types here, each of those
//! depends on this module alone and none on the pipeline.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use crate::js::js_key_order;
use crate::scope::ScopeKey;
use crate::signal::AbortSignal;
use crate::waterfall::{Continuation, ListenerFn};

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
    /// Names and values are shared with the registry and the providers
    /// that gave them: assembling copies no text.
    entries: Vec<(Rc<str>, Option<Rc<str>>)>,
}

impl Variables {
    /// `variables[name] = value`. Assigning `__proto__` on a plain object
    /// with a string does nothing, so neither does this.
    pub fn set(&mut self, name: &str, value: Option<String>) {
        self.set_shared(Rc::from(name), value.map(Rc::from));
    }

    /// [`Variables::set`] of a shared name and value, as assembly sets
    /// what the variable providers return.
    pub fn set_shared(&mut self, name: Rc<str>, value: Option<Rc<str>>) {
        if &*name == "__proto__" {
            return;
        }
        match self.position(&name) {
            Some(index) => self.entries[index].1 = value,
            None => self.entries.push((name, value)),
        }
    }

    /// Where `name` is. Names often share a prefix and differ at the end
    /// (`var_0`, `var_1`), so the last bytes are compared first.
    fn position(&self, name: &str) -> Option<usize> {
        let last = name.as_bytes().last();
        self.entries.iter().position(|(key, _)| {
            key.len() == name.len() && key.as_bytes().last() == last && **key == *name
        })
    }

    /// `delete variables[name]`.
    pub fn delete(&mut self, name: &str) {
        self.entries.retain(|(key, _)| **key != *name);
    }

    /// Own-property lookup: `None` when absent, `Some(None)` when `undefined`.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.position(name)
            .map(|index| self.entries[index].1.as_deref())
    }

    /// Own keys in JavaScript order.
    pub fn keys(&self) -> Vec<&str> {
        js_key_order(self.entries.iter().map(|(key, _)| &**key))
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
