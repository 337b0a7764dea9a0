//! The scenario file format, version 1: serde types and their JSON Schema.
//!
//! A scenario is language-neutral data: a config, optional scope parents, and
//! an ordered list of steps. Registration steps declare scripted providers;
//! `listen` steps declare scripted waterfall listeners; `assemble` steps carry
//! the expectations. The same step types, with `expect` removed, are the
//! commands of the adapter protocol, so an implementation never parses these
//! files. Field docs here become the committed schema's descriptions.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::order::Order;

/// The only scenario format version this harness reads.
pub const FORMAT_VERSION: u32 = 1;

/// One scenario file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Scenario format version. Must be 1.
    pub format: u32,
    /// One line saying what the scenario shows.
    pub title: String,
    /// Longer explanation: the rule, where it comes from, why it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Spec clauses this scenario covers, as `<chapter>:<clause>` ids from
    /// `scenarios/clauses.toml`, e.g. `02:A3.1`.
    pub covers: Vec<String>,
    /// Which level of the contract the scenario exercises.
    #[serde(default)]
    pub level: Level,
    /// `SystemPrompt` plugin config.
    #[serde(default)]
    pub config: ConfigSpec,
    /// Expect loading the config to fail with this error; no steps run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<ExpectedError>,
    /// Scope parent bindings made before the first step, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeSpec>,
    /// Steps, run in order in one fresh registry.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// The contract level a scenario exercises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Registry, `assemble()`, rendering and tool order (spec 01–04).
    #[default]
    Assembly,
    /// The agent loop around the assembly: turns, steps, requests and the
    /// session log (spec 05–10).
    Loop,
}

/// `SystemPrompt` config (spec 01 §1). Absent keys take upstream defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    /// Register `harness:identity` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_harness_identity: Option<bool>,
    /// `false` registers a global runtime-context suppressor (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_runtime_context: Option<bool>,
    /// Text of `deployment:persona` (default empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// Explicit tool order, with the `<unlisted-tools>` rest entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_order: Option<Vec<String>>,
}

/// A scope parent binding (`createScope(ctx, key, {parent})`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeSpec {
    /// The child scope.
    pub name: String,
    /// Its parent scope.
    pub parent: String,
}

/// An expected error: its message, or its message and class name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExpectedError {
    /// The exact message.
    Message(String),
    /// The exact message and error class (`Error`, `TypeError`, ...).
    Detailed {
        /// Exact message.
        message: String,
        /// Error class name.
        name: String,
    },
}

impl ExpectedError {
    /// The expected message.
    pub fn message(&self) -> &str {
        match self {
            ExpectedError::Message(message) | ExpectedError::Detailed { message, .. } => message,
        }
    }

    /// The expected class name, if given.
    pub fn name(&self) -> Option<&str> {
        match self {
            ExpectedError::Message(_) => None,
            ExpectedError::Detailed { name, .. } => Some(name),
        }
    }
}

/// A scenario step. `do` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Step {
    /// `systemPrompt.section(...)`.
    Section(SectionStep),
    /// `systemPrompt.context(...)`.
    Context(ContextStep),
    /// `systemPrompt.suppressRuntimeContext()`.
    Suppress(SuppressStep),
    /// `systemPrompt.tools(provider)`.
    Tools(ToolsStep),
    /// `systemPrompt.variable(name, provider)`.
    Variable(VariableStep),
    /// `ctx.on('system-prompt/assemble', listener, options)`.
    Listen(ListenStep),
    /// Call a registration's disposer.
    Dispose(DisposeStep),
    /// Bind a scope's parent at this point.
    Bind(BindStep),
    /// `assemble({scope})`, then render the prompt and the context snapshot.
    Assemble(AssembleStep),
}

/// Registers a prompt section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionStep {
    /// Handle for `dispose` and journal entries. Default: the name, plus
    /// `@<scope>` when scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Section name.
    pub name: String,
    /// Sort key. TOML `nan` and `inf` are allowed, to test validation.
    pub order: Order,
    /// A string is static text; a table is a text provider.
    pub text: TextSpec,
    /// The section's `complete` flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
    /// Expected result of the registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Registers a runtime-context entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextStep {
    /// Handle; default the name, plus `@<scope>` when scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Context name.
    pub name: String,
    /// Sort key.
    pub order: Order,
    /// A string is static text; a table is a text provider.
    pub text: TextSpec,
    /// Expected result of the registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Registers a runtime-context suppressor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuppressStep {
    /// Handle; default `suppress#<n>` (n counts suppressor registrations from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Expected result of the registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Registers a tool provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsStep {
    /// Handle; default `tools#<n>` (n counts tool-provider registrations from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The scripted provider.
    pub provider: ProviderSpec<ToolsResultSpec>,
    /// Expected result of the registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Registers a prompt variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariableStep {
    /// Handle; default the name, plus `@<scope>` when scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Variable name (validated by the registry).
    pub name: String,
    /// The provider. A plain string is short for `{ returns = "..." }`:
    /// variables are always functions, so every form is journaled.
    pub value: TextSpec,
    /// Expected result of the registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Registers a waterfall listener on `system-prompt/assemble`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListenStep {
    /// Listener handle, used in the journal (`listener <id>`) and by `dispose`.
    pub id: String,
    /// Register from this scope's context (a tagged listener); absent = untagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `{global: true}`: receive every assembly regardless of scope.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global: bool,
    /// `{prepend: true}`: run outside the listeners registered before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepend: bool,
    /// What the listener does, in order. Without a `next` op it never calls
    /// `next()`, so inner listeners and the default do not run.
    pub ops: Vec<ListenerOp>,
}

/// Calls a registration's disposer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisposeStep {
    /// The `id` of an earlier registration or listener.
    pub target: String,
    /// Expected result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Binds a scope's parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BindStep {
    /// The child scope.
    pub scope: String,
    /// Its parent.
    pub parent: String,
    /// Expected result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RegisterExpect>,
}

/// Assembles for a scope and renders the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleStep {
    /// `assemble({scope})`; absent = `assemble({})`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// What to compare. Only the keys present are compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Box<AssembleExpect>>,
}

/// Section or context text, or a variable's value provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TextSpec {
    /// A string. For sections and contexts: static text, never "evaluated".
    /// For variables: a provider returning this string.
    Static(String),
    /// A scripted provider.
    Provider(ProviderSpec<String>),
}

/// A scripted provider. Exactly one of `returns`, `sequence`,
/// `returns_undefined` and `throws` is set. Returned objects are created once
/// at registration and returned by reference on every call, as a JavaScript
/// closure over a constant would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "T: Deserialize<'de>"))]
pub struct ProviderSpec<T> {
    /// Return this value on every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<T>,
    /// Return the n-th value on the n-th call; after the last, repeat the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Vec<T>>,
    /// Return `undefined`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub returns_undefined: bool,
    /// Throw `new Error(throws)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throws: Option<String>,
    /// With `throws`: attach `{cause: new Error(cause)}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Side effects run during the call, before it returns or throws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
}

/// A registry side effect performed from inside a provider or listener.
/// Exactly one of `register` and `dispose` is set. A failing registration
/// makes the provider throw that error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// Only on this call (1-based); absent = on every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<u32>,
    /// Register an entry (a registration step without `expect`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<Box<Step>>,
    /// Dispose the registration with this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispose: Option<String>,
}

/// What a tool provider returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsResultSpec {
    /// Visible schemas.
    #[serde(default)]
    pub schemas: Vec<SchemaSpec>,
    /// Pre-restriction known names; replaces the implicit schema names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_names: Option<Vec<String>>,
}

/// A tool schema as a provider returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaSpec {
    /// Tool name.
    pub name: String,
    /// Description; absent = `undefined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON parameters; absent = `undefined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Extra fields on the schema object (e.g. `strict = true`); assembly drops them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Map<String, Value>>,
    /// Put `Symbol(<this>)` into `parameters` under the key `unclonable`, so
    /// `structuredClone` fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unclonable_symbol: Option<String>,
}

/// One operation of a scripted listener. `current` starts as the argument
/// object; `next` replaces it with what `next()` resolved to; `replace` with a
/// brand-new object. Edits apply to `current`, which the listener returns.
/// Edits naming an absent entry do nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ListenerOp {
    /// `current = await next()`.
    Next,
    /// `throw new Error(message)`.
    Throw(String),
    /// `current = {sections, contexts, tools, variables}`, a new object.
    Replace(ReplaceSpec),
    /// Insert a section at `index` (default: append).
    AddSection(EntrySpec),
    /// Remove every section with this name.
    RemoveSection(String),
    /// Rename the first section with this name.
    RenameSection(RenameSpec),
    /// Set the text of the first section with this name, in place.
    SetSectionText(SetTextSpec),
    /// Reorder sections: listed names first, in list order; the rest after,
    /// in their current order.
    ReorderSections(Vec<String>),
    /// Insert a context at `index` (default: append).
    AddContext(EntrySpec),
    /// Remove every context with this name.
    RemoveContext(String),
    /// Set the text of the first context with this name, in place.
    SetContextText(SetTextSpec),
    /// Append a tool schema (as given; nothing is cloned or ordered).
    AddTool(SchemaSpec),
    /// Remove every tool with this name.
    RemoveTool(String),
    /// Reverse the tool list in place.
    ReverseTools,
    /// Set a value inside the first tool with this name's parameters, in place.
    SetToolParameter(SetToolParameterSpec),
    /// `variables[name] = value`.
    SetVariable(SetVariableSpec),
    /// `variables[name] = undefined`.
    UnsetVariable(String),
    /// `delete variables[name]`.
    DeleteVariable(String),
    /// Set an extra top-level field on the assembly object.
    SetField(SetFieldSpec),
    /// Register an entry (a registration step without `expect`).
    Register(Box<Step>),
    /// Dispose the registration with this id.
    Dispose(String),
}

/// A new assembly object built by a listener.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceSpec {
    /// Sections.
    #[serde(default)]
    pub sections: Vec<EntryData>,
    /// Contexts.
    #[serde(default)]
    pub contexts: Vec<EntryData>,
    /// Tools.
    #[serde(default)]
    pub tools: Vec<SchemaSpec>,
    /// Variables, in order.
    #[serde(default)]
    pub variables: IndexMap<String, VariableValue>,
}

/// A section or context a listener inserts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    /// Name.
    pub name: String,
    /// Text.
    pub text: String,
    /// Insert position; absent = append. Clamped to the list length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
}

/// Rename an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameSpec {
    /// Current name.
    pub from: String,
    /// New name.
    pub to: String,
}

/// Set an entry's text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTextSpec {
    /// Entry name.
    pub name: String,
    /// New text.
    pub text: String,
}

/// Set a value inside a tool's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetToolParameterSpec {
    /// Tool name.
    pub tool: String,
    /// Object keys from `parameters` down to the key to set; intermediate
    /// objects must exist.
    pub path: Vec<String>,
    /// The value.
    pub value: Value,
}

/// Set a variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetVariableSpec {
    /// Name (any string).
    pub name: String,
    /// Value.
    pub value: String,
}

/// Set an extra field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetFieldSpec {
    /// Field name (not `sections`, `contexts`, `tools` or `variables`).
    pub name: String,
    /// Value.
    pub value: Value,
}

/// Expected result of a registration, disposal or bind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterExpect {
    /// The call throws this error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ExpectedError>,
    /// Number of `system-prompt/change` events the step emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<u64>,
}

/// A section or context: name and text (absent text = `undefined`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryData {
    /// Name.
    pub name: String,
    /// Text; absent = `undefined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A tool schema in an assembly: exactly `{name, description, parameters}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolData {
    /// Name.
    pub name: String,
    /// Description; absent = `undefined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Parameters; absent = `undefined`. Key order is compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// A variable's value: a string, or `{ undefined = true }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VariableValue {
    /// A string value.
    Value(String),
    /// `undefined` (the key exists with no value).
    Undefined {
        /// Must be true.
        undefined: bool,
    },
}

/// What an `assemble` step compares. Keys left out are not compared; an
/// unexpected error always fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssembleExpect {
    /// `assemble()` rejects with this error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ExpectedError>,
    /// Final sections, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<EntryData>>,
    /// Final contexts, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<EntryData>>,
    /// Final tools, in order, compared in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolData>>,
    /// Final tool names, in order (shorthand when schemas don't matter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
    /// Final variables, in key order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<IndexMap<String, VariableValue>>,
    /// Extra top-level fields on the final assembly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Map<String, Value>>,
    /// `renderPrompt(assembly)`, byte-exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `renderPrompt(assembly)` throws this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_error: Option<ExpectedError>,
    /// `renderContextSnapshot(assembly)`, byte-exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// `renderContextSections(assembly)`: the non-empty rendered contexts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_sections: Option<Vec<EntryData>>,
    /// Rendering the context snapshot throws this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_error: Option<ExpectedError>,
    /// Provider and listener evaluations during the step, in order:
    /// `variable <id>`, `section <id>`, `context <id>`, `tools <id>`, `listener <id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<Vec<String>>,
    /// Number of `system-prompt/change` events during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<u64>,
}
