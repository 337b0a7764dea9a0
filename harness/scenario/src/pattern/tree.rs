//! A pattern as a typed tree: what [`super::Pattern`] parses its JSON into
//! once, when the scenario loads, so the judge walks nodes and operators
//! instead of re-reading JSON and re-compiling each `$regex` at every check.
//!
//! The tree keeps everything its JSON said: [`PatternNode::to_value`] gives
//! that JSON back, byte for byte, so a mismatch can name the pattern as it
//! was written without every node holding a copy of its source.

use std::borrow::Cow;

use regex::Regex;
use serde_json::{Map, Number, Value};

/// One node of a parsed pattern.
#[derive(Clone, Debug)]
pub enum PatternNode {
    /// A string, number, boolean or `null`: that value (numbers by value).
    Literal(Value),
    /// An array of exactly this length, element `i` matching pattern `i`.
    Array(Vec<PatternNode>),
    /// An object with these keys (no key starts with `$`) matching these
    /// patterns; other keys are not compared.
    Object(Vec<(String, PatternNode)>),
    /// A matcher: every operator holds, checked in the order written.
    Matcher(Vec<Operator>),
}

/// What `$type` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    /// `"string"`.
    String,
    /// `"number"`.
    Number,
    /// `"boolean"`.
    Boolean,
    /// `"null"`.
    Null,
    /// `"array"`.
    Array,
    /// `"object"`.
    Object,
}

/// `$eq`, `$gt`, `$ge`, `$lt` and `$le`: a number against a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `$eq`: equal.
    Eq,
    /// `$gt`: greater.
    Gt,
    /// `$ge`: greater or equal.
    Ge,
    /// `$lt`: less.
    Lt,
    /// `$le`: less or equal.
    Le,
}

/// What `$contains` looks for.
#[derive(Clone, Debug)]
pub enum Contains {
    /// A substring of a string.
    Text(String),
    /// Patterns each matched by a distinct element of an array, any order.
    Elements(Vec<PatternNode>),
}

/// One operator of a matcher, its argument parsed.
#[derive(Clone, Debug)]
pub enum Operator {
    /// `$exact`: equal, every object key and key order included.
    Exact(Value),
    /// `$equal`: equal, every object key, key order ignored.
    Equal(Value),
    /// `$absent`: the value is absent.
    Absent,
    /// `$any`: the value is present.
    Any,
    /// `$type`: the value's JSON type.
    Type(JsonType),
    /// `$keys`: a pattern on the object's own keys, in key order.
    Keys(Box<PatternNode>),
    /// `$match`: a pattern the value also matches.
    Match(Box<PatternNode>),
    /// `$contains`: a substring, or elements in any order.
    Contains(Contains),
    /// `$starts_with`: a prefix of a string.
    StartsWith(String),
    /// `$ends_with`: a suffix of a string.
    EndsWith(String),
    /// `$regex`: the expression, compiled once, matches somewhere.
    Regex(Regex),
    /// `$in_order`: patterns matched by elements in this order, others between.
    InOrder(Vec<PatternNode>),
    /// `$prefix`: patterns matched by the first elements.
    Prefix(Vec<PatternNode>),
    /// `$length`: a pattern (a number or a number matcher) on the length.
    Length(Box<PatternNode>),
    /// `$some`: at least one element matches.
    SomeElement(Box<PatternNode>),
    /// `$each`: every element matches.
    Each(Box<PatternNode>),
    /// `$eq`, `$gt`, `$ge`, `$lt`, `$le`.
    Compare(Comparison, Number),
    /// `$between`: `low <= x <= high`.
    Between(Number, Number),
    /// `$multiple_of`: an exact multiple of a positive number.
    MultipleOf(Number),
    /// `$not`: the pattern does not match.
    Not(Box<PatternNode>),
    /// `$any_of`: one of the patterns matches.
    AnyOf(Vec<PatternNode>),
    /// `$capture`: bind the value to a name.
    Capture(String),
    /// `$ref`: equal to the value bound to a name.
    Ref(String),
    /// `{ "$gt" = { "$ref" = "first" } }`: an operator whose argument is a
    /// captured value, known only when checking (see
    /// [`Operator::parse`]).
    ArgumentRef {
        /// The operator.
        operator: OperatorName,
        /// The capture standing as its argument.
        name: String,
    },
}

/// The name of a matcher operator, as written (`$gt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorName {
    /// `$exact`.
    Exact,
    /// `$equal`.
    Equal,
    /// `$absent`.
    Absent,
    /// `$any`.
    Any,
    /// `$type`.
    Type,
    /// `$keys`.
    Keys,
    /// `$match`.
    Match,
    /// `$contains`.
    Contains,
    /// `$starts_with`.
    StartsWith,
    /// `$ends_with`.
    EndsWith,
    /// `$regex`.
    Regex,
    /// `$in_order`.
    InOrder,
    /// `$prefix`.
    Prefix,
    /// `$length`.
    Length,
    /// `$some`.
    Some,
    /// `$each`.
    Each,
    /// `$eq`.
    Eq,
    /// `$gt`.
    Gt,
    /// `$ge`.
    Ge,
    /// `$lt`.
    Lt,
    /// `$le`.
    Le,
    /// `$between`.
    Between,
    /// `$multiple_of`.
    MultipleOf,
    /// `$not`.
    Not,
    /// `$any_of`.
    AnyOf,
    /// `$capture`.
    Capture,
    /// `$ref`.
    Ref,
}

impl OperatorName {
    /// Every operator, in the order of [`super::OPERATORS`].
    pub const ALL: [OperatorName; 27] = [
        Self::Exact,
        Self::Equal,
        Self::Absent,
        Self::Any,
        Self::Type,
        Self::Keys,
        Self::Match,
        Self::Contains,
        Self::StartsWith,
        Self::EndsWith,
        Self::Regex,
        Self::InOrder,
        Self::Prefix,
        Self::Length,
        Self::Some,
        Self::Each,
        Self::Eq,
        Self::Gt,
        Self::Ge,
        Self::Lt,
        Self::Le,
        Self::Between,
        Self::MultipleOf,
        Self::Not,
        Self::AnyOf,
        Self::Capture,
        Self::Ref,
    ];

    /// The name as written, `$` included.
    pub fn as_str(self) -> &'static str {
        super::OPERATORS[self as usize].0
    }

    /// What the operator takes, in words (the JSON Schema's description).
    pub fn takes(self) -> &'static str {
        super::OPERATORS[self as usize].1
    }

    /// The operator a key names, if any.
    pub fn from_name(name: &str) -> Option<OperatorName> {
        Self::ALL
            .into_iter()
            .find(|operator| operator.as_str() == name)
    }

    /// Whether `{ "$ref" = "<name>" }` as this operator's argument stands
    /// for a captured value (every operator but those whose argument is a
    /// pattern or a name, where it is the `$ref` matcher).
    pub fn takes_captured_argument(self) -> bool {
        !matches!(
            self,
            Self::Capture
                | Self::Ref
                | Self::Not
                | Self::Some
                | Self::Each
                | Self::Keys
                | Self::Match
        )
    }
}

impl JsonType {
    /// Every type, as `$type` names them.
    pub const ALL: [JsonType; 6] = [
        Self::String,
        Self::Number,
        Self::Boolean,
        Self::Null,
        Self::Array,
        Self::Object,
    ];

    /// The name `$type` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Null => "null",
            Self::Array => "array",
            Self::Object => "object",
        }
    }

    /// The type a name names, if any.
    pub fn from_name(name: &str) -> Option<JsonType> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The type of a JSON value.
    pub fn of(value: &Value) -> JsonType {
        match value {
            Value::Null => Self::Null,
            Value::Bool(_) => Self::Boolean,
            Value::Number(_) => Self::Number,
            Value::String(_) => Self::String,
            Value::Array(_) => Self::Array,
            Value::Object(_) => Self::Object,
        }
    }
}

impl Comparison {
    /// The operator's name.
    pub fn operator(self) -> OperatorName {
        match self {
            Self::Eq => OperatorName::Eq,
            Self::Gt => OperatorName::Gt,
            Self::Ge => OperatorName::Ge,
            Self::Lt => OperatorName::Lt,
            Self::Le => OperatorName::Le,
        }
    }

    /// Whether `x` stands in this relation to `bound`.
    pub fn holds(self, x: f64, bound: f64) -> bool {
        match self {
            Self::Eq => x == bound,
            Self::Gt => x > bound,
            Self::Ge => x >= bound,
            Self::Lt => x < bound,
            Self::Le => x <= bound,
        }
    }
}

fn nodes_value(nodes: &[PatternNode]) -> Value {
    Value::Array(nodes.iter().map(PatternNode::to_value).collect())
}

/// How a pattern uses a capture name ([`PatternNode::visit_names`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameUse {
    /// `$capture`: binds it.
    Capture,
    /// `$ref`, or a captured value standing as an operator's argument:
    /// reads it.
    Ref,
}

impl PatternNode {
    /// Every capture name the pattern binds or reads, in the order written.
    pub fn visit_names(&self, visit: &mut impl FnMut(NameUse, &str)) {
        match self {
            PatternNode::Literal(_) => {}
            PatternNode::Array(items) => items.iter().for_each(|n| n.visit_names(visit)),
            PatternNode::Object(fields) => fields.iter().for_each(|(_, n)| n.visit_names(visit)),
            PatternNode::Matcher(operators) => {
                for operator in operators {
                    operator.visit_names(visit);
                }
            }
        }
    }
}

impl PatternNode {
    /// The captures made at a fixed place of the value this pattern
    /// matches, each with its path from `base` (object keys and array
    /// indexes; a `$match` is the same place). A capture under any other
    /// operator is made wherever that operator finds a match, so it has no
    /// fixed place and is left out.
    pub fn fixed_captures(&self, base: &[Value]) -> Vec<(String, Vec<Value>)> {
        let mut found = Vec::new();
        self.collect_fixed(&mut base.to_vec(), &mut found);
        found
    }

    fn collect_fixed(&self, path: &mut Vec<Value>, found: &mut Vec<(String, Vec<Value>)>) {
        let parts: Vec<(Value, &PatternNode)> = match self {
            PatternNode::Literal(_) => Vec::new(),
            PatternNode::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| (Value::from(index), item))
                .collect(),
            PatternNode::Object(fields) => fields
                .iter()
                .map(|(key, node)| (Value::from(key.as_str()), node))
                .collect(),
            PatternNode::Matcher(operators) => {
                for operator in operators {
                    match operator {
                        Operator::Capture(name) => found.push((name.clone(), path.clone())),
                        Operator::Match(node) => node.collect_fixed(path, found),
                        _ => {}
                    }
                }
                Vec::new()
            }
        };
        for (part, node) in parts {
            path.push(part);
            node.collect_fixed(path, found);
            path.pop();
        }
    }
}

impl Operator {
    fn visit_names(&self, visit: &mut impl FnMut(NameUse, &str)) {
        match self {
            Operator::Capture(name) => visit(NameUse::Capture, name),
            Operator::Ref(name) | Operator::ArgumentRef { name, .. } => visit(NameUse::Ref, name),
            Operator::Keys(node)
            | Operator::Match(node)
            | Operator::Length(node)
            | Operator::SomeElement(node)
            | Operator::Each(node)
            | Operator::Not(node) => node.visit_names(visit),
            Operator::Contains(Contains::Elements(nodes))
            | Operator::InOrder(nodes)
            | Operator::Prefix(nodes)
            | Operator::AnyOf(nodes) => nodes.iter().for_each(|n| n.visit_names(visit)),
            Operator::Exact(_)
            | Operator::Equal(_)
            | Operator::Absent
            | Operator::Any
            | Operator::Type(_)
            | Operator::Contains(Contains::Text(_))
            | Operator::StartsWith(_)
            | Operator::EndsWith(_)
            | Operator::Regex(_)
            | Operator::Compare(..)
            | Operator::Between(..)
            | Operator::MultipleOf(_) => {}
        }
    }
}

impl PatternNode {
    /// The JSON this node was parsed from.
    pub fn to_value(&self) -> Value {
        match self {
            PatternNode::Literal(value) => value.clone(),
            PatternNode::Array(items) => nodes_value(items),
            PatternNode::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, node)| (key.clone(), node.to_value()))
                    .collect(),
            ),
            PatternNode::Matcher(operators) => {
                let mut map = Map::new();
                for operator in operators {
                    map.insert(
                        operator.name().as_str().into(),
                        operator.argument().into_owned(),
                    );
                }
                Value::Object(map)
            }
        }
    }
}

impl Operator {
    /// The operator's name.
    pub fn name(&self) -> OperatorName {
        match self {
            Operator::Exact(_) => OperatorName::Exact,
            Operator::Equal(_) => OperatorName::Equal,
            Operator::Absent => OperatorName::Absent,
            Operator::Any => OperatorName::Any,
            Operator::Type(_) => OperatorName::Type,
            Operator::Keys(_) => OperatorName::Keys,
            Operator::Match(_) => OperatorName::Match,
            Operator::Contains(_) => OperatorName::Contains,
            Operator::StartsWith(_) => OperatorName::StartsWith,
            Operator::EndsWith(_) => OperatorName::EndsWith,
            Operator::Regex(_) => OperatorName::Regex,
            Operator::InOrder(_) => OperatorName::InOrder,
            Operator::Prefix(_) => OperatorName::Prefix,
            Operator::Length(_) => OperatorName::Length,
            Operator::SomeElement(_) => OperatorName::Some,
            Operator::Each(_) => OperatorName::Each,
            Operator::Compare(comparison, _) => comparison.operator(),
            Operator::Between(..) => OperatorName::Between,
            Operator::MultipleOf(_) => OperatorName::MultipleOf,
            Operator::Not(_) => OperatorName::Not,
            Operator::AnyOf(_) => OperatorName::AnyOf,
            Operator::Capture(_) => OperatorName::Capture,
            Operator::Ref(_) => OperatorName::Ref,
            Operator::ArgumentRef { operator, .. } => *operator,
        }
    }

    /// The argument as written.
    pub fn argument(&self) -> Cow<'_, Value> {
        let text = |text: &str| Cow::Owned(Value::String(text.to_owned()));
        let number = |n: &Number| Cow::Owned(Value::Number(n.clone()));
        match self {
            Operator::Exact(value) | Operator::Equal(value) => Cow::Borrowed(value),
            Operator::Absent | Operator::Any => Cow::Owned(Value::Bool(true)),
            Operator::Type(json_type) => text(json_type.as_str()),
            Operator::Keys(node)
            | Operator::Match(node)
            | Operator::Length(node)
            | Operator::SomeElement(node)
            | Operator::Each(node)
            | Operator::Not(node) => Cow::Owned(node.to_value()),
            Operator::Contains(Contains::Text(part)) => text(part),
            Operator::Contains(Contains::Elements(nodes))
            | Operator::InOrder(nodes)
            | Operator::Prefix(nodes)
            | Operator::AnyOf(nodes) => Cow::Owned(nodes_value(nodes)),
            Operator::StartsWith(part) | Operator::EndsWith(part) => text(part),
            Operator::Regex(regex) => text(regex.as_str()),
            Operator::Compare(_, bound) | Operator::MultipleOf(bound) => number(bound),
            Operator::Between(low, high) => Cow::Owned(Value::Array(vec![
                Value::Number(low.clone()),
                Value::Number(high.clone()),
            ])),
            Operator::Capture(name) | Operator::Ref(name) => text(name),
            Operator::ArgumentRef { name, .. } => {
                let mut map = Map::new();
                map.insert("$ref".into(), Value::String(name.clone()));
                Cow::Owned(Value::Object(map))
            }
        }
    }
}
