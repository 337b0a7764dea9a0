//! `dshc migrate`: rewrite a format 1 scenario as format 2, keeping what it
//! asserts.
//!
//! Format 2 reads every expectation as a pattern (`docs/matching.md`), where
//! a plain object matches partially. Format 1 compared some values whole;
//! this rewrite wraps exactly those in `{ "$exact" = ... }`, renames the
//! event fields to the names events are logged with, and sets
//! `format = 2`. Comments and layout are kept (`toml_edit`). After it, a file
//! asserts what it did before; stating less is a separate, reviewed edit.
//!
//! A rewrite that could not keep that promise is refused, naming the place:
//! format 1 read every value literally, so an object key that starts with
//! `$` outside a value now wrapped in `$exact` would become an operator
//! ([`MigrateError::NotEquivalent`]). And a rewritten text is only kept once
//! it loads ([`migrate_checked`]): migrate never writes a file dshc cannot read.

use toml_edit::{DocumentMut, InlineTable, Item, Value};

/// Why a file cannot be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Not TOML: where (1-based line and column, when known) and why.
    #[error("not valid TOML: {message}")]
    Toml {
        /// Line and column of the error.
        position: Option<(usize, usize)>,
        /// The parser's message, one line.
        message: String,
    },
    /// Not a format 1 scenario.
    #[error("not a format 1 scenario (format = {0})")]
    NotFormatOne(String),
    /// Format 2 would read a value differently from format 1.
    #[error(
        "cannot be kept equivalent: `{at}` has the key {key:?}, a literal in format 1 but an operator in format 2; edit it by hand (for example wrap the value in `$exact`)"
    )]
    NotEquivalent {
        /// Where, as a dotted path.
        at: String,
        /// The `$` key.
        key: String,
    },
    /// The rewritten text does not load as format 2.
    #[error("the rewritten file would not load ({0})")]
    DoesNotLoad(String),
}

/// Assemble-step keys format 1 compared whole.
const WHOLE_ASSEMBLE_KEYS: &[&str] = &[
    "sections",
    "contexts",
    "tools",
    "variables",
    "extra",
    "snapshot_sections",
];

/// `{ "$exact" = <value> }`, in the place and layout of `value`.
fn exact(value: &Value) -> Value {
    let mut inner = value.clone();
    inner.decor_mut().set_prefix(" ");
    inner.decor_mut().set_suffix(" ");
    let mut table = InlineTable::new();
    table.insert("$exact", inner);
    let mut wrapped = Value::InlineTable(table);
    *wrapped.decor_mut() = value.decor().clone();
    wrapped
}

/// Wrap `table[key]` in `$exact`, whether it is an inline value, a table or
/// an array of tables.
fn wrap(table: &mut dyn toml_edit::TableLike, key: &str) {
    let Some(item) = table.get_mut(key) else {
        return;
    };
    let value = match std::mem::take(item) {
        Item::Value(value) => value,
        Item::Table(t) => Value::InlineTable(t.into_inline_table()),
        Item::ArrayOfTables(tables) => {
            let mut array = Value::Array(tables.into_array());
            array.decor_mut().set_prefix(" ");
            *item = Item::Value(exact(&array));
            // The key was a header (`[[...]]`); now it is `key = value`.
            if let Some(mut key) = table.key_mut(key) {
                key.leaf_decor_mut().set_suffix(" ");
            }
            return;
        }
        Item::None => return,
    };
    *item = Item::Value(exact(&value));
}

/// The first object key starting with `$` in an expectation, outside the
/// values the rewrite wraps in `$exact` (`wrapped`, by path: format 2 reads
/// those literally, as format 1 read everything), as `(path, key)`.
fn first_operator_key(item: &Item, path: &str, wrapped: &[String]) -> Option<(String, String)> {
    if wrapped.iter().any(|w| w == path) {
        return None;
    }
    match item {
        Item::Value(value) => first_operator_key_in(value, path, wrapped),
        Item::Table(table) => first_key_of(table.iter(), path, wrapped),
        Item::ArrayOfTables(tables) => tables.iter().enumerate().find_map(|(index, table)| {
            first_key_of(table.iter(), &format!("{path}[{index}]"), wrapped)
        }),
        Item::None => None,
    }
}

fn first_key_of<'a>(
    entries: impl Iterator<Item = (&'a str, &'a Item)>,
    path: &str,
    wrapped: &[String],
) -> Option<(String, String)> {
    for (key, item) in entries {
        let inner = format!("{path}.{key}");
        if key.starts_with('$') && !wrapped.contains(&inner) {
            return Some((path.to_string(), key.to_string()));
        }
        if let Some(found) = first_operator_key(item, &inner, wrapped) {
            return Some(found);
        }
    }
    None
}

fn first_operator_key_in(
    value: &Value,
    path: &str,
    wrapped: &[String],
) -> Option<(String, String)> {
    if wrapped.iter().any(|w| w == path) {
        return None;
    }
    match value {
        Value::InlineTable(table) => {
            let entries: Vec<(&str, Item)> = table
                .iter()
                .map(|(key, value)| (key, Item::Value(value.clone())))
                .collect();
            first_key_of(
                entries.iter().map(|(key, item)| (*key, item)),
                path,
                wrapped,
            )
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
            first_operator_key_in(item, &format!("{path}[{index}]"), wrapped)
        }),
        _ => None,
    }
}

/// The number of event entries under `expect.events`, in either layout.
fn event_count(expect: &Item) -> usize {
    match expect.get("events") {
        Some(Item::ArrayOfTables(events)) => events.len(),
        Some(Item::Value(Value::Array(events))) => events.len(),
        _ => 0,
    }
}

/// Refuse a format 1 document in which format 2 would read a `$` key of an
/// expectation as an operator (checked before the rewrite, which wraps the
/// values format 1 compared whole, by the same rules as [`migrate`]).
fn check_equivalent(document: &DocumentMut) -> Result<(), MigrateError> {
    let mut expectations: Vec<(String, &Item)> = Vec::new();
    let mut wrapped: Vec<String> = Vec::new();
    if let Some(steps) = document.get("steps").and_then(Item::as_array_of_tables) {
        for (index, step) in steps.iter().enumerate() {
            let Some(expect) = step.get("expect") else {
                continue;
            };
            let path = format!("steps[{index}].expect");
            if step.get("do").and_then(Item::as_str) == Some("assemble") {
                wrapped.extend(
                    WHOLE_ASSEMBLE_KEYS
                        .iter()
                        .map(|key| format!("{path}.{key}")),
                );
            }
            expectations.push((path, expect));
        }
    }
    if let Some(expect) = document.get("expect") {
        wrapped.push("expect.requests".into());
        for index in 0..event_count(expect) {
            wrapped.push(format!("expect.events[{index}].data"));
            wrapped.push(format!("expect.events[{index}].surface_op"));
        }
    }
    for key in ["expect", "config_error"] {
        if let Some(item) = document.get(key) {
            expectations.push((key.to_string(), item));
        }
    }
    for (path, item) in expectations {
        if let Some((at, key)) = first_operator_key(item, &path, &wrapped) {
            return Err(MigrateError::NotEquivalent { at, key });
        }
    }
    Ok(())
}

/// [`migrate`], then load the result as a scenario at `path`: a text that
/// would not load is refused with the loader's error, so it is never
/// written.
pub fn migrate_checked(path: &std::path::Path, source: &str) -> Result<String, MigrateError> {
    let migrated = migrate(source)?;
    crate::load::parse_scenario(path, &migrated)
        .map_err(|error| MigrateError::DoesNotLoad(error.to_string()))?;
    Ok(migrated)
}

fn rename(table: &mut dyn toml_edit::TableLike, from: &str, to: &str) {
    if let Some(item) = table.remove(from) {
        table.insert(to, item);
    }
}

/// Rewrite format 1 text as format 2.
pub fn migrate(source: &str) -> Result<String, MigrateError> {
    let mut document: DocumentMut = source.parse().map_err(|error: toml_edit::TomlError| {
        let message = error.message().trim_end();
        match error.span() {
            Some(span) => MigrateError::Toml {
                position: Some(crate::load::line_column(source, span.start)),
                message: message.to_string(),
            },
            // The nesting limit comes without a place, as in `load`.
            None if message.contains("recursion limit") => MigrateError::Toml {
                position: Some(crate::load::deepest_line(source)),
                message: crate::load::nesting_limit_message(message),
            },
            None => MigrateError::Toml {
                position: None,
                message: message.to_string(),
            },
        }
    })?;
    match document.get("format").and_then(Item::as_integer) {
        Some(1) => {}
        other => {
            return Err(MigrateError::NotFormatOne(
                other.map_or("missing".into(), |n| n.to_string()),
            ));
        }
    }
    check_equivalent(&document)?;
    if let Some(format) = document.get_mut("format").and_then(Item::as_value_mut) {
        let decor = format.decor().clone();
        *format = Value::from(2);
        *format.decor_mut() = decor;
    }
    if let Some(steps) = document
        .get_mut("steps")
        .and_then(Item::as_array_of_tables_mut)
    {
        for step in steps.iter_mut() {
            if step.get("do").and_then(Item::as_str) != Some("assemble") {
                continue;
            }
            if let Some(expect) = step.get_mut("expect").and_then(Item::as_table_like_mut) {
                for key in WHOLE_ASSEMBLE_KEYS {
                    wrap(expect, key);
                }
            }
        }
    }
    if let Some(expect) = document.get_mut("expect").and_then(Item::as_table_like_mut) {
        wrap(expect, "requests");
        match expect.get_mut("events") {
            Some(Item::ArrayOfTables(events)) => {
                for event in events.iter_mut() {
                    migrate_event(event);
                }
            }
            Some(Item::Value(Value::Array(events))) => {
                for event in events.iter_mut() {
                    if let Value::InlineTable(event) = event {
                        migrate_event(event);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(document.to_string())
}

fn migrate_event(event: &mut dyn toml_edit::TableLike) {
    wrap(event, "data");
    wrap(event, "surface_op");
    rename(event, "surface_op", "surfaceOp");
    rename(event, "source_event_seqs", "sourceEventSeqs");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_values_become_exact_and_event_fields_take_their_logged_names() {
        let v1 = "format = 1 # old\ntitle = \"t\"\ncovers = [\"x\"]\nlevel = \"loop\"\n\n[[steps]]\ndo = \"assemble\"\nexpect.sections = [{ name = \"a\" }]\nexpect.prompt = \"p\"\n\n[expect]\nrequests = [{ model = \"m\" }]\nevents = [{ type = \"turn/end\", data = { turn = 1 }, source_event_seqs = [1] }]\n";
        let v2 = migrate(v1).expect("migrates");
        assert!(v2.starts_with("format = 2 # old\n"), "{v2}");
        assert!(
            v2.contains("sections = { \"$exact\" = [{ name = \"a\" }] }"),
            "{v2}"
        );
        assert!(v2.contains("prompt = \"p\""), "{v2}");
        assert!(
            v2.contains("requests = { \"$exact\" = [{ model = \"m\" }] }"),
            "{v2}"
        );
        assert!(v2.contains("data = { \"$exact\" = { turn = 1 } }"), "{v2}");
        assert!(v2.contains("sourceEventSeqs = [1]"), "{v2}");
        assert!(migrate(&v2).is_err(), "format 2 is left alone");
    }

    #[test]
    fn an_array_of_tables_compared_whole_is_wrapped_too() {
        let v1 = "format = 1\ntitle = \"t\"\ncovers = [\"x\"]\n\n[[steps]]\ndo = \"assemble\"\n\n[[steps.expect.sections]]\nname = \"a\"\n";
        let v2 = migrate(v1).expect("migrates");
        assert!(
            v2.contains("sections = { \"$exact\" = [{ name = \"a\" }] }"),
            "{v2}"
        );
    }

    #[test]
    fn a_dollar_key_format_2_would_read_as_an_operator_is_named() {
        let literal = "format = 1\ntitle = \"t\"\ncovers = [\"x\"]\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = \"p\"\n\n[[steps]]\ndo = \"assemble\"\nexpect.extra = { \"$ref\" = \"x\" }\nexpect.error = { \"$contains\" = \"x\" }\n";
        match migrate(literal) {
            Err(MigrateError::NotEquivalent { at, key }) => {
                assert_eq!(
                    (at.as_str(), key.as_str()),
                    ("steps[1].expect.error", "$contains")
                );
            }
            other => panic!("a `$` key outside `$exact` must be refused, not {other:?}"),
        }
        // Inside a value compared whole, the key stays literal: no refusal.
        let wrapped = literal.replace("expect.error = { \"$contains\" = \"x\" }\n", "");
        assert!(migrate(&wrapped).is_ok());
    }

    #[test]
    fn a_key_nested_past_the_parsers_limit_is_placed_as_load_places_it() {
        let deep = format!("{}b = 1", "a.".repeat(20_000));
        let source = format!("format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n{deep}\n");
        match migrate(&source) {
            Err(MigrateError::Toml { position, message }) => {
                assert_eq!(position, Some((4, 1)), "{message}");
                assert!(message.starts_with("nested deeper than the TOML reader allows"));
            }
            other => panic!("expected a positioned TOML error, got {other:?}"),
        }
    }

    #[test]
    fn a_rewrite_that_would_not_load_is_refused() {
        let typo = "format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"assemble\"\nexpect.promt = \"p\"\n";
        let path = std::path::Path::new("old.toml");
        match migrate_checked(path, typo) {
            Err(MigrateError::DoesNotLoad(error)) => {
                assert!(error.starts_with("old.toml:"), "{error}");
                assert!(error.contains("promt"), "{error}");
            }
            other => panic!("a rewrite that does not load must be refused, not {other:?}"),
        }
        let fine = typo.replace("promt", "prompt");
        assert!(migrate_checked(path, &fine).is_ok());
    }
}
