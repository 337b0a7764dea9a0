//! Patterns: what an expectation says about a value, as language-neutral
//! data. A pattern is a JSON value read with a few rules (`docs/matching.md`):
//!
//! - a string, number, boolean or `null` equals that value;
//! - an array matches an array of the same length, element by element;
//! - an object whose keys do not start with `$` matches an object that has
//!   those keys with matching values; other keys are not compared;
//! - an object whose keys all start with `$` is a *matcher*: every
//!   operator in it must hold (`{ "$gt" = 0, "$multiple_of" = 64 }`).
//!
//! This module owns the operator vocabulary and checks patterns when a
//! scenario loads, so a misspelt operator or a bad regex is a load error
//! with a position, never a silent mismatch. Matching itself is the oracle's
//! (`dshc_oracle::matching`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An expectation about a value: a literal or a matcher (see the module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pattern(pub Value);

/// The matcher operators, with what each takes.
pub const OPERATORS: &[(&str, &str)] = &[
    (
        "$exact",
        "any value: equal, every object key and key order included",
    ),
    (
        "$equal",
        "any value: equal, every object key, key order ignored",
    ),
    ("$absent", "true: the key is absent (undefined)"),
    ("$any", "true: present, any value"),
    (
        "$type",
        "\"string\", \"number\", \"boolean\", \"null\", \"array\" or \"object\"",
    ),
    (
        "$keys",
        "a pattern on the object's own keys, as an array in key order",
    ),
    (
        "$match",
        "a pattern the value also matches (beside `$capture`, say: bind it and check its fields)",
    ),
    (
        "$contains",
        "a string (substring) or an array of patterns (each matched by a distinct element, any order)",
    ),
    ("$starts_with", "a string"),
    ("$ends_with", "a string"),
    (
        "$regex",
        "a regular expression (the `regex` crate's syntax), matched anywhere",
    ),
    (
        "$in_order",
        "an array of patterns matched by elements in that order, others between",
    ),
    (
        "$prefix",
        "an array of patterns matched by the first elements",
    ),
    (
        "$length",
        "a number or a number matcher: an array's length, a string's UTF-16 length",
    ),
    ("$some", "a pattern at least one element matches"),
    ("$each", "a pattern every element matches"),
    ("$eq", "a number"),
    ("$gt", "a number"),
    ("$ge", "a number"),
    ("$lt", "a number"),
    ("$le", "a number"),
    ("$between", "[low, high], both included"),
    ("$multiple_of", "a positive number"),
    ("$not", "a pattern that must not match"),
    ("$any_of", "an array of patterns, one of which matches"),
    (
        "$capture",
        "a name: binds the value (present) for later `$ref`",
    ),
    ("$ref", "a name bound by `$capture`: equal to that value"),
];

/// A pattern that cannot be used, and where in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    /// Path inside the pattern (`.a[2]["$regex"]`), empty at its root.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Pattern {
    /// The literal `value`.
    pub fn literal(value: Value) -> Self {
        Pattern(value)
    }

    /// Check every matcher in the pattern.
    pub fn validate(&self) -> Result<(), PatternError> {
        check(&self.0, "")
    }

    /// Whether the pattern is a matcher object (every key starts with `$`).
    pub fn is_matcher(&self) -> bool {
        is_matcher(&self.0)
    }
}

/// Whether a JSON value is a matcher object.
pub fn is_matcher(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| !map.is_empty() && map.keys().all(|k| k.starts_with('$')))
}

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, PatternError> {
    Err(PatternError {
        path: path.to_string(),
        message: message.into(),
    })
}

fn number_pattern(value: &Value, path: &str) -> Result<(), PatternError> {
    match value {
        Value::Number(_) => Ok(()),
        other if is_matcher(other) => check(other, path),
        _ => fail(path, "expected a number or a number matcher"),
    }
}

fn pattern_list(value: &Value, path: &str, operator: &str) -> Result<(), PatternError> {
    let Some(items) = value.as_array() else {
        return fail(path, format!("`{operator}` takes an array of patterns"));
    };
    for (index, item) in items.iter().enumerate() {
        check(item, &format!("{path}[{index}]"))?;
    }
    Ok(())
}

fn check(value: &Value, path: &str) -> Result<(), PatternError> {
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                check(item, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        Value::Object(map) => {
            let dollar = map.keys().filter(|k| k.starts_with('$')).count();
            if dollar == 0 {
                for (key, item) in map {
                    check(item, &format!("{path}.{key}"))?;
                }
                return Ok(());
            }
            if dollar != map.len() {
                return fail(
                    path,
                    "a matcher holds only `$` operators; to match an object with a `$` key, \
                     write it under `$exact` or `$equal`",
                );
            }
            for (operator, argument) in map {
                check_operator(operator, argument, &format!("{path}[\"{operator}\"]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether an operator's argument is `{ "$ref" = "<name>" }`: a captured
/// value stands in for the literal argument of any operator.
pub fn argument_ref(argument: &Value) -> Option<&str> {
    let object = argument.as_object()?;
    match (object.len(), object.get("$ref")) {
        (1, Some(Value::String(name))) if !name.is_empty() => Some(name),
        _ => None,
    }
}

fn check_operator(operator: &str, argument: &Value, path: &str) -> Result<(), PatternError> {
    if !matches!(
        operator,
        "$capture" | "$ref" | "$not" | "$some" | "$each" | "$keys" | "$match"
    ) && argument_ref(argument).is_some()
    {
        return Ok(());
    }
    let is_string = argument.is_string();
    let is_number = argument.is_number();
    match operator {
        "$exact" | "$equal" => Ok(()),
        "$absent" | "$any" => match argument {
            Value::Bool(true) => Ok(()),
            _ => fail(path, format!("`{operator}` takes `true`")),
        },
        "$type" => match argument.as_str() {
            Some("string" | "number" | "boolean" | "null" | "array" | "object") => Ok(()),
            _ => fail(
                path,
                "`$type` takes \"string\", \"number\", \"boolean\", \"null\", \"array\" or \"object\"",
            ),
        },
        "$contains" => match argument {
            Value::String(_) => Ok(()),
            Value::Array(_) => pattern_list(argument, path, operator),
            _ => fail(
                path,
                "`$contains` takes a string (a substring) or an array of patterns (elements)",
            ),
        },
        "$starts_with" | "$ends_with" if is_string => Ok(()),
        "$regex" => match argument.as_str() {
            Some(regex) => regex::Regex::new(regex)
                .map(|_| ())
                .map_err(|e| PatternError {
                    path: path.to_string(),
                    message: format!("invalid regex: {e}"),
                }),
            None => fail(path, "`$regex` takes a string"),
        },
        "$in_order" | "$prefix" | "$any_of" => pattern_list(argument, path, operator),
        "$keys" | "$match" => check(argument, path),
        "$length" => number_pattern(argument, path),
        "$some" | "$each" | "$not" => check(argument, path),
        "$eq" | "$gt" | "$ge" | "$lt" | "$le" if is_number => Ok(()),
        "$between" => match argument.as_array().map(Vec::as_slice) {
            Some([low, high]) if low.is_number() && high.is_number() => Ok(()),
            _ => fail(path, "`$between` takes [low, high]"),
        },
        "$multiple_of" if argument.as_f64().is_some_and(|n| n > 0.0) => Ok(()),
        "$multiple_of" => fail(path, "`$multiple_of` takes a positive number"),
        "$capture" | "$ref" if argument.as_str().is_some_and(|name| !name.is_empty()) => Ok(()),
        "$capture" | "$ref" => fail(path, format!("`{operator}` takes a name")),
        known if OPERATORS.iter().any(|(name, _)| *name == known) => {
            let takes = OPERATORS
                .iter()
                .find(|(name, _)| *name == known)
                .map_or("", |(_, takes)| takes);
            fail(path, format!("`{known}` takes {takes}"))
        }
        unknown => {
            let names: Vec<&str> = OPERATORS.iter().map(|(name, _)| *name).collect();
            fail(
                path,
                format!("unknown matcher `{unknown}` (known: {})", names.join(", ")),
            )
        }
    }
}

impl JsonSchema for Pattern {
    fn schema_name() -> Cow<'static, str> {
        "Pattern".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut operators = serde_json::Map::new();
        for (name, takes) in OPERATORS {
            operators.insert((*name).into(), serde_json::json!({ "description": takes }));
        }
        json_schema!({
            "description": "A value or a matcher (docs/matching.md). Literals equal; arrays match element by element; objects without `$` keys match partially; an object of `$` operators is a matcher whose every operator must hold.",
            "anyOf": [
                { "type": ["string", "number", "boolean", "null"] },
                { "type": "array", "items": { "$ref": "#/$defs/Pattern" } },
                {
                    "type": "object",
                    "description": "A matcher: `$` operators only.",
                    "minProperties": 1,
                    "propertyNames": { "pattern": "^\\$" },
                    "properties": operators,
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "A partial object: the keys named must match; others are not compared.",
                    "propertyNames": { "pattern": "^[^$]" },
                    "additionalProperties": { "$ref": "#/$defs/Pattern" }
                }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(value: Value) -> PatternError {
        Pattern(value).validate().expect_err("invalid")
    }

    #[test]
    fn literals_partial_objects_and_known_matchers_are_valid() {
        for value in [
            json!("x"),
            json!([1, {"a": {"$gt": 0}}]),
            json!({"a": {"$regex": "^a+$", "$length": {"$le": 3}}}),
            json!({"$contains": [{"type": "text"}]}),
            json!({"$between": [1, 2], "$multiple_of": 64}),
            json!({"$capture": "id", "$starts_with": "msg-"}),
        ] {
            assert_eq!(Pattern(value.clone()).validate(), Ok(()), "{value}");
        }
    }

    #[test]
    fn a_misspelt_operator_names_the_known_ones() {
        let e = error(json!({"data": {"$contian": "x"}}));
        assert_eq!(e.path, ".data[\"$contian\"]");
        assert!(
            e.message.contains("unknown matcher `$contian`"),
            "{}",
            e.message
        );
        assert!(e.message.contains("$contains"), "{}", e.message);
    }

    #[test]
    fn bad_arguments_say_what_the_operator_takes() {
        assert!(
            error(json!({"$regex": "("}))
                .message
                .contains("invalid regex")
        );
        assert!(
            error(json!({"$between": [1]}))
                .message
                .contains("[low, high]")
        );
        assert!(
            error(json!({"$gt": "1"}))
                .message
                .contains("`$gt` takes a number")
        );
        assert!(
            error(json!({"$absent": false}))
                .message
                .contains("takes `true`")
        );
        assert!(
            error(json!({"$multiple_of": 0}))
                .message
                .contains("positive")
        );
        assert!(error(json!({"$length": "2"})).message.contains("number"));
        assert!(
            error(json!({"$a": 1, "b": 2}))
                .message
                .contains("only `$` operators")
        );
        assert!(error(json!({"$capture": ""})).message.contains("a name"));
    }
}
