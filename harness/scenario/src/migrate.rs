//! `dshc migrate`: rewrite a format 1 scenario as format 2, keeping what it
//! asserts.
//!
//! Format 2 reads every expectation as a pattern (`docs/matching.md`), where
//! a plain object matches partially. Format 1 compared some values whole;
//! this rewrite wraps exactly those in `{ "$exact" = ... }`, renames the
//! event fields to the names events are logged with, and sets
//! `format = 2`. Comments and layout are kept (`toml_edit`). After it, a file
//! asserts what it did before; stating less is a separate, reviewed edit.

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

/// Wrap `table[key]` in `$exact`, whether it is an inline value or a table.
fn wrap(table: &mut dyn toml_edit::TableLike, key: &str) {
    let Some(item) = table.get_mut(key) else {
        return;
    };
    let value = match std::mem::take(item) {
        Item::Value(value) => value,
        Item::Table(t) => Value::InlineTable(t.into_inline_table()),
        other => {
            *item = other;
            return;
        }
    };
    *item = Item::Value(exact(&value));
}

fn rename(table: &mut dyn toml_edit::TableLike, from: &str, to: &str) {
    if let Some(item) = table.remove(from) {
        table.insert(to, item);
    }
}

/// Rewrite format 1 text as format 2.
pub fn migrate(source: &str) -> Result<String, MigrateError> {
    let mut document: DocumentMut =
        source
            .parse()
            .map_err(|error: toml_edit::TomlError| MigrateError::Toml {
                position: error
                    .span()
                    .map(|span| crate::load::line_column(source, span.start)),
                message: error.message().trim_end().to_string(),
            })?;
    match document.get("format").and_then(Item::as_integer) {
        Some(1) => {}
        other => {
            return Err(MigrateError::NotFormatOne(
                other.map_or("missing".into(), |n| n.to_string()),
            ));
        }
    }
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
}
