//! Scripted `system-prompt/assemble` listeners: the ops that edit the
//! assembly they are handed ([`ListenerOp`]) or record what it holds
//! ([`AssemblyRecordField`]), and the shapes of an assembly's entries, tools
//! and variables, which results share ([`super::result`]).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plain_json;
use super::providers::Registration;
use super::providers::SchemaSpec;

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
    /// Register an entry.
    Register(Box<Registration>),
    /// Dispose the registration with this id.
    Dispose(String),
    /// Loop level: wait until the assembly's signal aborts, then throw its
    /// abort error (a cooperative blocked assembly).
    WaitForAbort,
    /// Loop level: wait this many virtual milliseconds, ignoring the signal.
    SleepMs(u64),
    /// Append one entry to the command's records: `{listener, call}` plus
    /// each named field of `current` as it is at this point (before `next`,
    /// the assembly the listener received; after it, what `next` returned),
    /// in the order given. The loop listeners' `record`, for an assembly.
    Record(Vec<AssemblyRecordField>),
}

/// A field of the assembly a listener holds, as a `record` op writes it:
/// in the shape the `assemble` step's expectation of the same name reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssemblyRecordField {
    /// `sections`, each `{name, text?}` (no `text` when it is `undefined`).
    Sections,
    /// `contexts`, each `{name, text?}`.
    Contexts,
    /// `tools`, each `{name, description?, parameters?}`.
    Tools,
    /// The tools' names, in order.
    ToolNames,
    /// `variables`, an object in its own-key order; an `undefined` value is
    /// `{undefined: true}`.
    Variables,
    /// The object's other own fields, an object (`{}` when there are none).
    Extra,
}

impl AssemblyRecordField {
    /// Every field, in declaration order.
    pub const ALL: [AssemblyRecordField; 6] = [
        AssemblyRecordField::Sections,
        AssemblyRecordField::Contexts,
        AssemblyRecordField::Tools,
        AssemblyRecordField::ToolNames,
        AssemblyRecordField::Variables,
        AssemblyRecordField::Extra,
    ];

    /// The JSON key the field is recorded under.
    pub fn key(self) -> &'static str {
        match self {
            AssemblyRecordField::Sections => "sections",
            AssemblyRecordField::Contexts => "contexts",
            AssemblyRecordField::Tools => "tools",
            AssemblyRecordField::ToolNames => "tool_names",
            AssemblyRecordField::Variables => "variables",
            AssemblyRecordField::Extra => "extra",
        }
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
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
    #[serde(deserialize_with = "plain_json::value")]
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
    #[serde(deserialize_with = "plain_json::value")]
    pub value: Value,
}

/// A section or context: name and text (absent text = `undefined`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryData {
    /// Name.
    pub name: String,
    /// Text; absent = `undefined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A tool schema in an assembly: exactly `{name, description, parameters}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolData {
    /// Name.
    pub name: String,
    /// Description; absent = `undefined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Parameters; absent = `undefined`. Key order is compared.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
    pub parameters: Option<Value>,
}

/// A variable's value: a string, or `{ undefined = true }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a string, or `{ undefined = true }` for a variable that is undefined"
)]
pub enum VariableValue {
    /// A string value.
    Value(String),
    /// `undefined` (the key exists with no value).
    Undefined {
        /// Must be true.
        undefined: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_reads_its_fields_by_the_expectation_keys() {
        let op: ListenerOp =
            serde_json::from_value(serde_json::json!({"record": ["tool_names", "extra"]})).unwrap();
        assert_eq!(
            op,
            ListenerOp::Record(vec![
                AssemblyRecordField::ToolNames,
                AssemblyRecordField::Extra
            ])
        );
        let keys = AssemblyRecordField::ALL
            .map(|field| (field.key(), serde_json::to_value(field).unwrap()));
        for (key, serialized) in keys {
            assert_eq!(
                serialized,
                Value::from(key),
                "{key} is written as it is read"
            );
        }
        let unknown = serde_json::from_value::<ListenerOp>(serde_json::json!({"record": ["turn"]}));
        assert!(unknown.is_err(), "a loop field is no assembly field");
    }
}
