//! Scenario files as dshc writes them (`dshc diff`'s regressions, `dshc
//! sim`'s violations): pretty TOML, with every `$exact` value inline.
//!
//! Why not `toml::to_string_pretty` alone: TOML puts a table's plain values
//! before its sub-tables and arrays of tables, so an object whose members mix
//! the two is written in another key order. `$exact` compares key order
//! (`docs/matching.md`), so a value pinned that way would no longer hold for
//! the very observation it was taken from. An inline table keeps its keys in
//! the order written, so each `$exact` value is written as one.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, TableLike};

use crate::format::Scenario;

/// The scenario as TOML text that loads back to the same scenario, key order
/// under `$exact` included.
pub fn scenario_text(scenario: &Scenario) -> Result<String, toml::ser::Error> {
    let pretty = toml::to_string_pretty(scenario)?;
    // Both cannot fail on what `toml` just wrote from the same value; if
    // either did, the pretty text is still the best there is.
    let (Ok(mut document), Ok(json)) = (
        pretty.parse::<DocumentMut>(),
        serde_json::to_value(scenario),
    ) else {
        return Ok(pretty);
    };
    inline_exact_in_table(document.as_table_mut(), &json);
    Ok(document.to_string())
}

/// Replace every `$exact` member under `table` (whose value is `json`) with
/// its value inline, in the order of `json`.
fn inline_exact_in_table(table: &mut dyn TableLike, json: &Value) {
    for (mut key, item) in table.iter_mut() {
        let Some(member) = json.get(key.get()) else {
            continue;
        };
        if key.get() == "$exact" {
            if let Some(value) = inline_value(member) {
                *item = Item::Value(value);
                // A key taken from a table header has no space before `=`.
                key.leaf_decor_mut().set_suffix(" ");
            }
        } else {
            inline_exact_in_item(item, member);
        }
    }
}

fn inline_exact_in_item(item: &mut Item, json: &Value) {
    match item {
        Item::Table(table) => inline_exact_in_table(table, json),
        Item::ArrayOfTables(tables) => {
            for (table, member) in tables.iter_mut().zip(json.as_array().into_iter().flatten()) {
                inline_exact_in_table(table, member);
            }
        }
        Item::Value(value) => inline_exact_in_value(value, json),
        Item::None => {}
    }
}

fn inline_exact_in_value(value: &mut toml_edit::Value, json: &Value) {
    match value {
        toml_edit::Value::InlineTable(table) => inline_exact_in_table(table, json),
        toml_edit::Value::Array(items) => {
            for (item, member) in items.iter_mut().zip(json.as_array().into_iter().flatten()) {
                inline_exact_in_value(item, member);
            }
        }
        _ => {}
    }
}

/// `json` as an inline TOML value in its own order; `None` if it holds a
/// `null`, which TOML cannot write (the pretty text would not have had it).
fn inline_value(json: &Value) -> Option<toml_edit::Value> {
    Some(match json {
        Value::Null => return None,
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => integer.into(),
            None => number.as_f64()?.into(),
        },
        Value::String(text) => text.as_str().into(),
        Value::Array(items) => {
            let mut array = Array::new();
            for item in items {
                array.push(inline_value(item)?);
            }
            array.into()
        }
        Value::Object(members) => {
            let mut table = InlineTable::new();
            for (key, member) in members {
                table.insert(key, inline_value(member)?);
            }
            table.into()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_object_keeps_its_key_order_through_the_text() {
        let source = r#"
format = 2
level = "loop"
title = "t"
covers = ["07:H4"]
[[steps]]
do = "followup"
text = "hi"
"#;
        let mut scenario: Scenario = toml::from_str(source).expect("a scenario");
        // Plain values after a nested table and an array of tables: what
        // TOML's pretty form would move ahead of them.
        let exact = serde_json::json!({"$exact": [{
            "model": "m",
            "messages": [{"role": "user", "content": ""}],
            "stream": true,
            "options": {"include": true},
            "max_tokens": 5,
        }]});
        let expect = scenario.expect.get_or_insert_with(Box::default);
        expect.requests = Some(crate::pattern::Pattern::new(exact.clone()));

        // The pattern read back from a text, as JSON text (key order kept).
        let requests_in = |text: &str| {
            let back: Scenario = toml::from_str(text).expect("loads");
            serde_json::to_string(&back.expect.and_then(|e| e.requests)).unwrap()
        };
        let wanted = serde_json::to_string(&exact).unwrap();

        let plain = toml::to_string_pretty(&scenario).expect("text");
        assert_ne!(
            requests_in(&plain),
            wanted,
            "the pretty form alone reorders keys (or this test no longer shows why the module exists)"
        );
        let text = scenario_text(&scenario).expect("text");
        assert_eq!(requests_in(&text), wanted, "{text}");
    }
}
