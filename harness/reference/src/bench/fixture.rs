//! Bench fixtures as data: registry descriptions in `benches/fixtures/`,
//! written as scenario steps, so the criterion bench, `dshc bench` and every
//! implementation behind an adapter build the very same registries from the
//! very same file.
//!
//! A fixture is a scenario body (`title`, `config`, `scopes`, `steps`) whose
//! last step is the measured `assemble`. Inside any list, an object with
//! `repeat = N` stands for N copies; in each copy the strings name the copy
//! number as `{i}` (or as the name given by `as = "name"`), `{i%K}` is that
//! number modulo K, and a string that is exactly `"{i}"` becomes the number.
//! Copies nest: an inner list's copies see the outer indices by their names.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{AssemblyCommand, Case, Command};

use dshc_scenario::data_file::{DataFileError, parse_toml, read_text};

/// Most bytes one fixture's steps may expand to, over all its `repeat`s
/// (each value counted as its text, strings, keys and numbers, plus the
/// size of a JSON value in memory): a typo (`repeat = 1e9`) or a large
/// template repeated gets an error before the memory is spent, whatever
/// the copy count.
pub const MAX_FIXTURE_BYTES: u64 = 16 << 20;

/// What one value made by a fixture costs beyond its text.
const VALUE_BYTES: u64 = std::mem::size_of::<Value>() as u64;

/// A loaded fixture: a case whose last command is the measured `assemble`.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The file stem, e.g. `standard`.
    pub id: String,
    /// What it describes.
    pub title: String,
    /// The registrations, then the measured `assemble`.
    pub case: Case,
}

/// Load a fixture file.
pub fn load_fixture(path: &Path) -> Result<Fixture, DataFileError> {
    let text = read_text(path)?;
    let document: Value = parse_toml(path, &text)?;
    fixture_from_value(path, document)
}

/// The fixtures of a folder (`*.toml`), by file name.
pub fn load_fixture_dir(dir: &Path) -> Result<Vec<Fixture>, DataFileError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| DataFileError::new(dir, format!("cannot read the folder: {error}")))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|path| load_fixture(path)).collect()
}

fn fixture_from_value(path: &Path, document: Value) -> Result<Fixture, DataFileError> {
    let bad = |message: String| DataFileError::new(path, message);
    let Value::Object(mut object) = document else {
        return Err(bad("a fixture is a table".into()));
    };
    let mut bytes = 0u64;
    let steps = expand(
        object.remove("steps").unwrap_or(Value::Array(Vec::new())),
        &mut Vec::new(),
        &mut bytes,
    )
    .map_err(bad)?;
    let title = object
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut scenario = Map::new();
    scenario.insert("format".into(), Value::from(2));
    scenario.insert("title".into(), Value::String(title.clone()));
    // A fixture asserts nothing; the clause list only satisfies the format.
    scenario.insert("covers".into(), serde_json::json!(["02:A1"]));
    for key in ["config", "scopes"] {
        if let Some(value) = object.remove(key) {
            scenario.insert(key.into(), value);
        }
    }
    object.remove("title");
    if let Some(key) = object.keys().next() {
        return Err(bad(format!(
            "unknown fixture key `{key}` (expected title, config, scopes, steps)"
        )));
    }
    scenario.insert("steps".into(), steps);
    let scenario: Scenario = serde_json::from_value(Value::Object(scenario))
        .map_err(|error| bad(format!("not valid scenario steps: {error}")))?;
    let id = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let case = dshc_scenario::compile::compile(&id, &scenario)
        .map_err(|error| bad(format!("{}: {}", error.path, error.message)))?;
    if !matches!(
        case.commands.last(),
        Some(Command::Assembly(AssemblyCommand::Assemble(_)))
    ) {
        return Err(bad(
            "the last step of a fixture must be the measured `assemble`".into(),
        ));
    }
    Ok(Fixture { id, title, case })
}

/// Expand `repeat` objects in every list, outermost first, substituting the
/// indices in scope into every string; `bytes` counts what is made, and the
/// expansion stops with an error once it passes [`MAX_FIXTURE_BYTES`].
fn expand(
    value: Value,
    indices: &mut Vec<(String, u64)>,
    bytes: &mut u64,
) -> Result<Value, String> {
    let made = match value {
        Value::Array(items) => {
            let mut expanded = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Object(mut object) if object.contains_key("repeat") => {
                        let count = object
                            .remove("repeat")
                            .and_then(|count| count.as_u64())
                            .ok_or("`repeat` must be a non-negative integer")?;
                        let name = match object.remove("as") {
                            None => "i".to_owned(),
                            Some(Value::String(name)) if !name.is_empty() => name,
                            Some(_) => return Err("`as` must be a non-empty string".into()),
                        };
                        for index in 0..count {
                            indices.push((name.clone(), index));
                            let copy = expand(Value::Object(object.clone()), indices, bytes);
                            indices.pop();
                            expanded.push(copy?);
                        }
                    }
                    other => expanded.push(expand(other, indices, bytes)?),
                }
            }
            Value::Array(expanded)
        }
        Value::Object(object) => object
            .into_iter()
            .map(|(key, value)| {
                *bytes = bytes.saturating_add(key.len() as u64);
                Ok((key, expand(value, indices, bytes)?))
            })
            .collect::<Result<Map<_, _>, String>>()
            .map(Value::Object)?,
        Value::String(text) => substitute(&text, indices),
        other => other,
    };
    let own = VALUE_BYTES
        + match &made {
            Value::String(text) => text.len() as u64,
            Value::Array(_) | Value::Object(_) => 0,
            other => other.to_string().len() as u64,
        };
    *bytes = bytes.saturating_add(own);
    if *bytes > MAX_FIXTURE_BYTES {
        return Err(format!(
            "the fixture expands to more than {MAX_FIXTURE_BYTES} bytes"
        ));
    }
    Ok(made)
}

/// `{name}` and `{name%K}` of the indices in scope (the innermost wins);
/// a string that is one placeholder and nothing else becomes a number.
fn substitute(text: &str, indices: &[(String, u64)]) -> Value {
    if indices.is_empty() || !text.contains('{') {
        return Value::String(text.to_owned());
    }
    let value_of = |placeholder: &str| -> Option<u64> {
        let (name, modulus) = match placeholder.split_once('%') {
            Some((name, modulus)) => (name, Some(modulus.parse::<u64>().ok()?)),
            None => (placeholder, None),
        };
        let (_, index) = indices.iter().rev().find(|(known, _)| known == name)?;
        match modulus {
            Some(0) => None,
            Some(modulus) => Some(index % modulus),
            None => Some(*index),
        }
    };
    if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
        && let Some(number) = value_of(inner)
    {
        return Value::from(number);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| value_of(&after[..close]).map(|number| (close, number)))
        {
            Some((close, number)) => {
                out.push_str(&number.to_string());
                rest = &after[close + 1..];
            }
            None => {
                // Not a placeholder (e.g. the `{{` of a template): kept as is.
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What [`expand`] counts for `value`, computed here on the result.
    fn weight(value: &Value) -> u64 {
        VALUE_BYTES
            + match value {
                Value::Array(items) => items.iter().map(weight).sum(),
                Value::Object(map) => map.iter().map(|(k, v)| k.len() as u64 + weight(v)).sum(),
                Value::String(text) => text.len() as u64,
                other => other.to_string().len() as u64,
            }
    }

    #[test]
    fn repeats_expand_with_their_indices_and_keep_templates() {
        let steps = json!([
            {"do": "section", "repeat": 3, "name": "s{i}", "order": "{i%2}",
             "text": "Text {i} uses {{var_{i%2}}}."},
            {"do": "tools", "repeat": 2, "provider": {"returns": {"schemas": [
                {"repeat": 2, "as": "t", "name": "tool_{i}_{t}"}
            ]}}}
        ]);
        let mut bytes = 0;
        let expanded = expand(steps, &mut Vec::new(), &mut bytes).unwrap();
        assert_eq!(bytes, weight(&expanded));
        assert_eq!(expanded[1]["name"], "s1");
        assert_eq!(expanded[1]["order"], 1);
        assert_eq!(expanded[2]["order"], 0);
        assert_eq!(expanded[2]["text"], "Text 2 uses {{var_0}}.");
        let names: Vec<&Value> = (3..5)
            .flat_map(|step| {
                expanded[step]["provider"]["returns"]["schemas"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|schema| &schema["name"])
            })
            .collect();
        assert_eq!(names, ["tool_0_0", "tool_0_1", "tool_1_0", "tool_1_1"]);
    }

    #[test]
    fn oversized_and_malformed_repeats_are_refused() {
        let huge = json!([{"repeat": 1_000_000_000_u64}]);
        assert!(
            expand(huge, &mut Vec::new(), &mut 0)
                .unwrap_err()
                .contains("more than")
        );
        // Few copies of a large template: the bytes, not the copies, count.
        let template = "x".repeat(1 << 20);
        let large = json!([{"repeat": 17, "text": template}]);
        let error = expand(large, &mut Vec::new(), &mut 0).unwrap_err();
        assert_eq!(
            error,
            format!("the fixture expands to more than {MAX_FIXTURE_BYTES} bytes")
        );
        let fits = json!([{"repeat": 15, "text": "x".repeat(1 << 20)}]);
        assert!(expand(fits, &mut Vec::new(), &mut 0).is_ok());
        let negative = json!([{"repeat": -1}]);
        assert!(expand(negative, &mut Vec::new(), &mut 0).is_err());
    }

    #[test]
    fn the_bundled_fixtures_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/fixtures");
        let fixtures = load_fixture_dir(&dir).unwrap();
        let ids: Vec<&str> = fixtures.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "listeners",
                "scaling-10",
                "scaling-100",
                "scaling-1000",
                "shadowing",
                "standard"
            ]
        );
    }
}
