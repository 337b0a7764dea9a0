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
//! This module owns the operator vocabulary and parses a pattern once, when
//! its scenario is read, into a typed tree ([`PatternNode`], [`Operator`])
//! with each `$regex` compiled. Parsing checks every operator on the way,
//! so a misspelt operator or a bad regex is a load error with a position,
//! never a silent mismatch. Matching walks that tree, in the oracle
//! (`dshc_oracle::matching`).

mod parse;
mod tree;

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

pub use tree::{Comparison, Contains, JsonType, NameUse, Operator, OperatorName, PatternNode};

/// An expectation about a value: a literal or a matcher (see the module doc).
///
/// It reads and writes as its JSON (`source`), exactly as written; the tree
/// is parsed from it when it is made. A pattern that does not parse keeps
/// its error: loading a scenario reports it ([`Pattern::validate`]), so a
/// loaded scenario's patterns all parsed.
#[derive(Clone)]
pub struct Pattern {
    source: Value,
    tree: Result<PatternNode, PatternError>,
}

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
    (
        "$eq",
        "a number (any other value is matched by writing it as it is, or with `$equal` or `$exact`)",
    ),
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
    /// The pattern `source` says, parsed.
    pub fn new(source: Value) -> Self {
        let tree = parse::node(&source, "");
        Pattern { source, tree }
    }

    /// The JSON the pattern was read from.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// The parsed pattern, or why it does not parse.
    pub fn tree(&self) -> Result<&PatternNode, &PatternError> {
        self.tree.as_ref()
    }

    /// Whether every matcher in the pattern is well formed (the error of
    /// the first that is not, as found when the pattern was parsed).
    pub fn validate(&self) -> Result<(), PatternError> {
        self.tree.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Whether the pattern is a matcher object (every key starts with `$`).
    pub fn is_matcher(&self) -> bool {
        is_matcher(&self.source)
    }

    /// Rewrite the pattern's JSON in place (a redaction, say); the tree is
    /// parsed again only when the JSON changed.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Value)) {
        let mut source = self.source.clone();
        edit(&mut source);
        if source != self.source {
            *self = Pattern::new(source);
        }
    }
}

/// Two patterns are equal when their JSON is.
impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// A pattern shows as its JSON.
impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.source.serialize(serializer)
    }
}

/// Reading a pattern parses it; one that does not parse still reads, so
/// that loading reports it with its place in the scenario.
impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Pattern::new)
    }
}

/// Whether a JSON value is a matcher object.
pub fn is_matcher(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| !map.is_empty() && map.keys().all(|k| k.starts_with('$')))
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
        Pattern::new(value).validate().expect_err("invalid")
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
            assert_eq!(Pattern::new(value.clone()).validate(), Ok(()), "{value}");
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
        // `$eq` compares numbers; for any other value the refusal says how.
        let eq = error(json!({"$eq": "idle"})).message;
        assert!(
            eq.contains("`$eq` takes a number") && eq.contains("`$equal`"),
            "{eq}"
        );
        assert!(Pattern::new(json!({"$eq": 1.5})).tree().is_ok());
    }

    #[test]
    fn the_operator_names_are_the_operators_listed() {
        assert_eq!(OperatorName::ALL.len(), OPERATORS.len());
        for (operator, (name, takes)) in OperatorName::ALL.into_iter().zip(OPERATORS) {
            assert_eq!((operator.as_str(), operator.takes()), (*name, *takes));
            assert_eq!(OperatorName::from_name(name), Some(operator));
        }
    }

    #[test]
    fn the_tree_gives_back_the_json_it_was_parsed_from() {
        for value in [
            json!("x"),
            json!(null),
            json!({}),
            json!([1, 2.5, {"a": {"$gt": 0, "$lt": 1.5}}]),
            json!({"b": {"$exact": {"z": 1, "a": [2]}}, "a": {"$equal": {"y": null}}}),
            json!({"$absent": true}),
            json!({"$any": true, "$type": "object", "$keys": ["b", "a"]}),
            json!({"$match": {"x": 1}, "$capture": "c", "$not": {"$ref": "c"}}),
            json!({"$contains": "part", "$starts_with": "p", "$ends_with": "t"}),
            json!({"$contains": [{"t": "a"}, "b"], "$in_order": [1], "$prefix": []}),
            json!({"$regex": "^msg-[0-9]+$", "$length": {"$between": [1, 9]}}),
            json!({"$some": {"n": 1}, "$each": {"$multiple_of": 64}, "$length": 3}),
            json!({"$eq": 18446744073709551615u64, "$ge": -1, "$le": 1e300}),
            json!({"$any_of": ["idle", {"$starts_with": "run"}]}),
            json!({"$gt": {"$ref": "first"}, "$prefix": {"$ref": "list"}}),
        ] {
            let pattern = Pattern::new(value.clone());
            let tree = pattern.tree().expect("parses");
            let back = serde_json::to_string(&tree.to_value()).expect("serializes");
            assert_eq!(back, value.to_string());
        }
    }

    #[test]
    fn a_captured_argument_is_parsed_when_checking() {
        let pattern = Pattern::new(json!({"$gt": {"$ref": "first"}, "$not": {"$ref": "x"}}));
        let Ok(PatternNode::Matcher(operators)) = pattern.tree() else {
            panic!("a matcher")
        };
        assert!(matches!(
            &operators[0],
            Operator::ArgumentRef { operator: OperatorName::Gt, name } if name == "first"
        ));
        // Under `$not` (a pattern argument), `{ "$ref" = "x" }` is the `$ref` matcher.
        assert!(
            matches!(&operators[1], Operator::Not(node) if matches!(&**node, PatternNode::Matcher(inner) if matches!(&inner[..], [Operator::Ref(name)] if name == "x")))
        );
        let resolved = Operator::parse(OperatorName::Gt, &json!(3), "").expect("a number");
        assert!(matches!(resolved, Operator::Compare(Comparison::Gt, _)));
        assert!(Operator::parse(OperatorName::Gt, &json!("3"), "").is_err());
    }

    #[test]
    fn an_unknown_operator_is_refused_whatever_its_argument() {
        let e = error(json!({"$contian": {"$ref": "x"}}));
        assert!(
            e.message.contains("unknown matcher `$contian`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn errors_name_the_place_inside_the_pattern() {
        let e = error(json!({"a": [{"$in_order": [1, {"$regex": "("}]}]}));
        assert_eq!(e.path, ".a[0][\"$in_order\"][1][\"$regex\"]");
        let e = error(json!({"$length": {"$ge": "1"}}));
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            ("[\"$length\"][\"$ge\"]", "`$ge` takes a number")
        );
        let e = error(json!({"$starts_with": 1}));
        assert_eq!(e.message, "`$starts_with` takes a string");
    }

    #[test]
    fn a_pattern_reads_and_writes_as_its_json() {
        let text = r#"{"b":{"$regex":"^a"},"a":[1,{"$ref":"x"}]}"#;
        let pattern: Pattern = serde_json::from_str(text).expect("reads");
        assert_eq!(serde_json::to_string(&pattern).expect("writes"), text);
        let invalid: Pattern = serde_json::from_str(r#"{"$regex":"("}"#).expect("reads");
        assert!(invalid.validate().is_err());
        assert_eq!(format!("{pattern:?}").split('(').next(), Some("Pattern"));
    }

    #[test]
    fn an_edit_parses_the_changed_json() {
        let mut pattern = Pattern::new(json!({"time": 1, "id": {"$regex": "^m"}}));
        pattern.edit(|value| {
            value.as_object_mut().map(|map| map.shift_remove("time"));
        });
        assert_eq!(pattern.source(), &json!({"id": {"$regex": "^m"}}));
        let Ok(PatternNode::Object(fields)) = pattern.tree() else {
            panic!("an object")
        };
        assert_eq!(fields.len(), 1);
    }
}
