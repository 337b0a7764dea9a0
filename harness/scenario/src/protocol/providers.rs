//! Scripted providers and the registrations that carry them: the
//! registering commands ([`Registration`]: sections, contexts, suppressors,
//! tools, variables), the text, variable and tool providers they carry
//! ([`ProviderSpec`], [`TextSpec`]), what those return, and the registry
//! [`Effect`]s they perform while they are evaluated, which register in
//! turn. The types refer to each other, so they share this module.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::js_json::JsJson;
use super::order::Order;
use super::plain_json;

/// Section or context text, or a variable's value provider.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TextSpec {
    /// A string. For sections and contexts: static text, never "evaluated".
    /// For variables: a provider returning this string.
    Static(String),
    /// A scripted provider.
    Provider(ProviderSpec<String>),
}

/// A string is static text; a table is a provider, read as one so that an
/// error inside it names its own field.
impl<'de> Deserialize<'de> for TextSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::serde_defaults::string_or_table(
            deserializer,
            |f| {
                write!(
                    f,
                    "a string (the text) or a provider table with one of {PROVIDER_OUTCOME_KEYS}"
                )
            },
            TextSpec::Static,
            TextSpec::Provider,
        )
    }
}

/// A scripted provider: what each call gives, and the registry effects it
/// performs first. Returned objects are created once at registration and
/// returned by reference on every call, as a JavaScript closure over a
/// constant would.
///
/// In a file and on the protocol it is one flat table ([`ProviderTable`])
/// that sets exactly one outcome key; that rule is checked as the table is
/// read, so a `ProviderSpec` always holds exactly one [`Provided`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "ProviderTable<T>",
    into = "ProviderTable<T>",
    bound(
        serialize = "T: Serialize + Clone",
        deserialize = "T: serde::de::DeserializeOwned"
    )
)]
pub struct ProviderSpec<T> {
    /// What a call gives.
    pub provided: Provided<T>,
    /// Side effects run during the call, before it returns or throws.
    pub effects: Vec<Effect>,
}

impl<T> ProviderSpec<T> {
    /// A provider that returns `value` on every call and does nothing else.
    pub fn returning(value: T) -> Self {
        ProviderSpec {
            provided: Provided::Returns(value),
            effects: Vec::new(),
        }
    }

    /// The same provider with each value it returns converted by `f` (an
    /// implementation's own representation of the values).
    pub fn map<U>(&self, f: impl Fn(&T) -> U) -> ProviderSpec<U> {
        let provided = match &self.provided {
            Provided::Returns(value) => Provided::Returns(f(value)),
            Provided::Sequence(items) => Provided::Sequence(
                items
                    .iter()
                    .map(|item| match item {
                        SequenceItem::Undefined(marker) => SequenceItem::Undefined(marker.clone()),
                        SequenceItem::Value(value) => SequenceItem::Value(f(value)),
                    })
                    .collect(),
            ),
            Provided::ContextField(field) => Provided::ContextField(field.clone()),
            Provided::Computes(template) => Provided::Computes(template.clone()),
            Provided::Undefined => Provided::Undefined,
            Provided::Throws { message, cause } => Provided::Throws {
                message: message.clone(),
                cause: cause.clone(),
            },
        };
        ProviderSpec {
            provided,
            effects: self.effects.clone(),
        }
    }
}

/// The one outcome of a scripted provider's call.
#[derive(Clone, Debug, PartialEq)]
pub enum Provided<T> {
    /// Return this value on every call.
    Returns(T),
    /// Return the n-th value on the n-th call; after the last, repeat the
    /// last. Never empty.
    Sequence(Vec<SequenceItem<T>>),
    /// Return the assemble context's field of this name, `undefined` when
    /// it is not of the provider's type.
    ContextField(String),
    /// Return this template with `{call}` replaced by the call's number
    /// (from 1) and `{scope}` by the name of the assembly's scope
    /// (`undefined` when it has none): text computed from the call.
    Computes(String),
    /// Return `undefined`.
    Undefined,
    /// Throw `new Error(message)`, with `{cause: new Error(cause)}` when set.
    Throws {
        /// The error's message.
        message: String,
        /// The message of its cause.
        cause: Option<String>,
    },
}

/// A scripted provider, as a file or the protocol writes it: exactly one of
/// `returns`, `sequence`, `context_field`, `computes`, `returns_undefined`
/// and `throws` is set. Returned objects are created once at registration and returned
/// by reference on every call, as a JavaScript closure over a constant would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "T: serde::de::DeserializeOwned")
)]
#[schemars(rename = "ProviderSpec")]
pub struct ProviderTable<T> {
    /// Return this value on every call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returns: Option<T>,
    /// Return the n-th value on the n-th call; after the last, repeat the
    /// last. An item `{ "$js" = "undefined" }` returns `undefined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Vec<SequenceItem<T>>>,
    /// Return the assemble context's field of this name (what the caller
    /// passed to `assemble`), `undefined` when it is not a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_field: Option<String>,
    /// Return this text with `{call}` replaced by the call's number (from 1)
    /// and `{scope}` by the name of the assembly's scope (`undefined` when
    /// it has none), each token where it appears, left to right; text
    /// providers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computes: Option<String>,
    /// Return `undefined`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub returns_undefined: bool,
    /// Throw `new Error(throws)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throws: Option<String>,
    /// With `throws`: attach `{cause: new Error(cause)}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Side effects run during the call, before it returns or throws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
}

impl<T> TryFrom<ProviderTable<T>> for ProviderSpec<T> {
    type Error = String;

    fn try_from(table: ProviderTable<T>) -> Result<Self, String> {
        let ProviderTable {
            returns,
            sequence,
            context_field,
            computes,
            returns_undefined,
            throws,
            cause,
            effects,
        } = table;
        if cause.is_some() && throws.is_none() {
            return Err("a provider's `cause` only goes with `throws`".into());
        }
        let mut outcomes = Vec::new();
        if let Some(value) = returns {
            outcomes.push(Provided::Returns(value));
        }
        if let Some(items) = sequence {
            if items.is_empty() {
                return Err("a provider's `sequence` needs at least one value".into());
            }
            outcomes.push(Provided::Sequence(items));
        }
        if let Some(field) = context_field {
            outcomes.push(Provided::ContextField(field));
        }
        if let Some(template) = computes {
            outcomes.push(Provided::Computes(template));
        }
        if returns_undefined {
            outcomes.push(Provided::Undefined);
        }
        if let Some(message) = throws {
            outcomes.push(Provided::Throws { message, cause });
        }
        match (outcomes.pop(), outcomes.is_empty()) {
            (Some(provided), true) => Ok(ProviderSpec { provided, effects }),
            _ => Err(format!(
                "a provider sets exactly one of {PROVIDER_OUTCOME_KEYS}"
            )),
        }
    }
}

/// The keys of a provider table of which exactly one is set.
const PROVIDER_OUTCOME_KEYS: &str =
    "`returns`, `sequence`, `context_field`, `computes`, `returns_undefined` and `throws`";

impl<T> From<ProviderSpec<T>> for ProviderTable<T> {
    fn from(spec: ProviderSpec<T>) -> Self {
        let mut table = ProviderTable {
            returns: None,
            sequence: None,
            context_field: None,
            computes: None,
            returns_undefined: false,
            throws: None,
            cause: None,
            effects: spec.effects,
        };
        match spec.provided {
            Provided::Returns(value) => table.returns = Some(value),
            Provided::Sequence(items) => table.sequence = Some(items),
            Provided::ContextField(field) => table.context_field = Some(field),
            Provided::Computes(template) => table.computes = Some(template),
            Provided::Undefined => table.returns_undefined = true,
            Provided::Throws { message, cause } => {
                table.throws = Some(message);
                table.cause = cause;
            }
        }
        table
    }
}

impl<T: JsonSchema> JsonSchema for ProviderSpec<T> {
    fn schema_name() -> Cow<'static, str> {
        ProviderTable::<T>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        ProviderTable::<T>::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        ProviderTable::<T>::json_schema(generator)
    }
}

/// One value of a provider's `sequence`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SequenceItem<T> {
    /// `undefined` (`{ "$js" = "undefined" }`).
    Undefined(UndefinedMarker),
    /// A value.
    Value(T),
}

impl<T> SequenceItem<T> {
    /// The value, `None` for `undefined`.
    pub fn value(&self) -> Option<&T> {
        match self {
            SequenceItem::Undefined(_) => None,
            SequenceItem::Value(value) => Some(value),
        }
    }
}

/// `{ "$js" = "undefined" }` is `undefined`; anything else is read as a
/// value, and its error says what a value is, where an untagged choice
/// would only say that nothing matched.
impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for SequenceItem<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Ok(marker) = UndefinedMarker::deserialize(&value) {
            return Ok(SequenceItem::Undefined(marker));
        }
        T::deserialize(value).map(SequenceItem::Value).map_err(|error| {
            serde::de::Error::custom(format!(
                "a `sequence` value is what the provider returns, or `{{ \"$js\" = \"undefined\" }}`: {error}"
            ))
        })
    }
}

/// `{ "$js" = "undefined" }`, and nothing else.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct UndefinedMarker {
    /// Always `undefined`.
    #[serde(rename = "$js")]
    pub js: String,
}

impl<'de> Deserialize<'de> for UndefinedMarker {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = JsJson::deserialize(deserializer)?;
        if value.is_undefined() {
            Ok(UndefinedMarker {
                js: "undefined".into(),
            })
        } else {
            Err(serde::de::Error::custom(
                "not `{ \"$js\" = \"undefined\" }`",
            ))
        }
    }
}

/// A registry side effect performed from inside a provider or listener.
/// Exactly one of `register` and `dispose` is set. A failing registration
/// makes the provider throw that error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// Only on this call (1-based); absent = on every call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_call: Option<u32>,
    /// Register an entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register: Option<Box<Registration>>,
    /// Dispose the registration with this id.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_names: Option<Vec<String>>,
}

/// A tool schema as a provider returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaSpec {
    /// Tool name.
    pub name: String,
    /// Description; absent = `undefined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON parameters; absent = `undefined`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option"
    )]
    pub parameters: Option<Value>,
    /// Extra fields on the schema object (e.g. `strict = true`); assembly drops them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain_json::option_map"
    )]
    pub extra: Option<serde_json::Map<String, Value>>,
    /// Put `Symbol(<this>)` into `parameters` under the key `unclonable`, so
    /// `structuredClone` fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unclonable_symbol: Option<String>,
}

/// A registration a provider effect or a listener performs while it runs:
/// the registering commands, by the same `do` names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Registration {
    /// `systemPrompt.section(...)`.
    Section(SectionCommand),
    /// `systemPrompt.context(...)`.
    Context(ContextCommand),
    /// `systemPrompt.suppressRuntimeContext()`.
    Suppress(SuppressCommand),
    /// `systemPrompt.tools(provider)`.
    Tools(ToolsCommand),
    /// `systemPrompt.variable(name, provider)`.
    Variable(VariableCommand),
}

/// Registers a prompt section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionCommand {
    /// Handle for `dispose` and journal entries. Default: the name, plus
    /// `@<scope>` when scoped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(skip_serializing_if = "Option::is_none")]
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
}

/// Registers a runtime-context entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextCommand {
    /// Handle; default the name, plus `@<scope>` when scoped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Context name.
    pub name: String,
    /// Sort key.
    pub order: Order,
    /// A string is static text; a table is a text provider.
    pub text: TextSpec,
}

/// Registers a runtime-context suppressor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuppressCommand {
    /// Handle; default `suppress#<n>` (n counts suppressor registrations from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Registers a tool provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsCommand {
    /// Handle; default `tools#<n>` (n counts tool-provider registrations from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The scripted provider.
    pub provider: ProviderSpec<ToolsResultSpec>,
}

/// Registers a prompt variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariableCommand {
    /// Handle; default the name, plus `@<scope>` when scoped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Register through this scope's context; absent = global.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Variable name (validated by the registry).
    pub name: String,
    /// The provider. A plain string is short for `{ returns = "..." }`:
    /// variables are always functions, so every form is journaled.
    pub value: TextSpec,
}
