//! Reading a pattern's JSON into its tree ([`super::tree`]), checking every
//! operator's argument on the way. This is the one place that knows what
//! each operator takes: a misspelt operator or a bad regex is an error with
//! a path here, at load, and never a silent mismatch later.

use regex::Regex;
use serde_json::Value;

use super::PatternError;
use super::tree::{Comparison, Contains, JsonType, Operator, OperatorName, PatternNode};

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, PatternError> {
    Err(PatternError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// The tree of the pattern `value`, whose place in its pattern is `path`.
pub(super) fn node(value: &Value, path: &str) -> Result<PatternNode, PatternError> {
    match value {
        Value::Array(items) => Ok(PatternNode::Array(list(items, path)?)),
        Value::Object(map) => {
            let dollar = map.keys().filter(|k| k.starts_with('$')).count();
            if dollar == 0 {
                let fields = map.iter().map(|(key, item)| {
                    node(item, &format!("{path}.{key}")).map(|node| (key.clone(), node))
                });
                return Ok(PatternNode::Object(fields.collect::<Result<_, _>>()?));
            }
            if dollar != map.len() {
                return fail(
                    path,
                    "a matcher holds only `$` operators; to match an object with a `$` key, \
                     write it under `$exact` or `$equal`",
                );
            }
            let operators = map.iter().map(|(operator, argument)| {
                entry(operator, argument, &format!("{path}[\"{operator}\"]"))
            });
            Ok(PatternNode::Matcher(operators.collect::<Result<_, _>>()?))
        }
        literal => Ok(PatternNode::Literal(literal.clone())),
    }
}

fn list(items: &[Value], path: &str) -> Result<Vec<PatternNode>, PatternError> {
    let nodes = items
        .iter()
        .enumerate()
        .map(|(index, item)| node(item, &format!("{path}[{index}]")));
    nodes.collect()
}

/// Whether an operator's argument is `{ "$ref" = "<name>" }`: a captured
/// value stands in for the literal argument of most operators.
fn argument_ref(argument: &Value) -> Option<&str> {
    let object = argument.as_object()?;
    match (object.len(), object.get("$ref")) {
        (1, Some(Value::String(name))) if !name.is_empty() => Some(name),
        _ => None,
    }
}

/// One `"$name" = argument` entry of a matcher.
fn entry(name: &str, argument: &Value, path: &str) -> Result<Operator, PatternError> {
    let Some(operator) = OperatorName::from_name(name) else {
        let names: Vec<&str> = OperatorName::ALL.iter().map(|o| o.as_str()).collect();
        return fail(
            path,
            format!("unknown matcher `{name}` (known: {})", names.join(", ")),
        );
    };
    if operator.takes_captured_argument()
        && let Some(name) = argument_ref(argument)
    {
        return Ok(Operator::ArgumentRef {
            operator,
            name: name.to_string(),
        });
    }
    Operator::parse(operator, argument, path)
}

impl Operator {
    /// `operator` with `argument` (at `path`, for the error), checked.
    ///
    /// A scenario's operators are parsed when it loads. An argument that is
    /// a captured value ([`Operator::ArgumentRef`]) is known only when
    /// checking: the judge parses the captured value here then, as written
    /// data (a `{ "$ref" = ... }` inside it is not resolved again).
    pub fn parse(
        operator: OperatorName,
        argument: &Value,
        path: &str,
    ) -> Result<Operator, PatternError> {
        use OperatorName as Name;
        let pattern = || node(argument, path).map(Box::new);
        Ok(match operator {
            Name::Exact => Operator::Exact(argument.clone()),
            Name::Equal => Operator::Equal(argument.clone()),
            Name::Absent | Name::Any => {
                if *argument != Value::Bool(true) {
                    return fail(path, format!("`{}` takes `true`", operator.as_str()));
                }
                match operator {
                    Name::Absent => Operator::Absent,
                    _ => Operator::Any,
                }
            }
            Name::Type => match argument.as_str().and_then(JsonType::from_name) {
                Some(json_type) => Operator::Type(json_type),
                None => {
                    return fail(
                        path,
                        "`$type` takes \"string\", \"number\", \"boolean\", \"null\", \"array\" or \"object\"",
                    );
                }
            },
            Name::Keys => Operator::Keys(pattern()?),
            Name::Match => Operator::Match(pattern()?),
            Name::Some => Operator::SomeElement(pattern()?),
            Name::Each => Operator::Each(pattern()?),
            Name::Not => Operator::Not(pattern()?),
            Name::Length => Operator::Length(Box::new(number_pattern(argument, path)?)),
            Name::Contains => Operator::Contains(contains(argument, path)?),
            Name::InOrder => Operator::InOrder(pattern_list(operator, argument, path)?),
            Name::Prefix => Operator::Prefix(pattern_list(operator, argument, path)?),
            Name::AnyOf => Operator::AnyOf(pattern_list(operator, argument, path)?),
            Name::StartsWith => Operator::StartsWith(string(operator, argument, path)?),
            Name::EndsWith => Operator::EndsWith(string(operator, argument, path)?),
            Name::Regex => Operator::Regex(regex(argument, path)?),
            Name::Eq => comparison(Comparison::Eq, argument, path)?,
            Name::Gt => comparison(Comparison::Gt, argument, path)?,
            Name::Ge => comparison(Comparison::Ge, argument, path)?,
            Name::Lt => comparison(Comparison::Lt, argument, path)?,
            Name::Le => comparison(Comparison::Le, argument, path)?,
            Name::Between => match argument.as_array().map(Vec::as_slice) {
                Some([Value::Number(low), Value::Number(high)]) => {
                    Operator::Between(low.clone(), high.clone())
                }
                _ => return fail(path, "`$between` takes [low, high]"),
            },
            Name::MultipleOf => match argument {
                Value::Number(step) if step.as_f64().is_some_and(|n| n > 0.0) => {
                    Operator::MultipleOf(step.clone())
                }
                _ => return fail(path, "`$multiple_of` takes a positive number"),
            },
            Name::Capture | Name::Ref => match argument.as_str() {
                Some(name) if !name.is_empty() => match operator {
                    Name::Capture => Operator::Capture(name.to_string()),
                    _ => Operator::Ref(name.to_string()),
                },
                _ => return fail(path, format!("`{}` takes a name", operator.as_str())),
            },
        })
    }
}

/// What an operator with an argument of the wrong kind is told it takes.
fn takes<T>(operator: OperatorName, path: &str) -> Result<T, PatternError> {
    fail(
        path,
        format!("`{}` takes {}", operator.as_str(), operator.takes()),
    )
}

fn number_pattern(argument: &Value, path: &str) -> Result<PatternNode, PatternError> {
    match argument {
        Value::Number(_) => node(argument, path),
        other if super::is_matcher(other) => node(other, path),
        _ => fail(path, "expected a number or a number matcher"),
    }
}

fn pattern_list(
    operator: OperatorName,
    argument: &Value,
    path: &str,
) -> Result<Vec<PatternNode>, PatternError> {
    match argument {
        Value::Array(items) => list(items, path),
        _ => fail(
            path,
            format!("`{}` takes an array of patterns", operator.as_str()),
        ),
    }
}

fn contains(argument: &Value, path: &str) -> Result<Contains, PatternError> {
    match argument {
        Value::String(part) => Ok(Contains::Text(part.clone())),
        Value::Array(items) => Ok(Contains::Elements(list(items, path)?)),
        _ => fail(
            path,
            "`$contains` takes a string (a substring) or an array of patterns (elements)",
        ),
    }
}

/// The string argument of `$starts_with` or `$ends_with`.
fn string(operator: OperatorName, argument: &Value, path: &str) -> Result<String, PatternError> {
    match argument {
        Value::String(part) => Ok(part.clone()),
        _ => takes(operator, path),
    }
}

/// `$regex`'s argument, compiled: the one place a pattern's regex is compiled.
fn regex(argument: &Value, path: &str) -> Result<Regex, PatternError> {
    let Some(regex) = argument.as_str() else {
        return fail(path, "`$regex` takes a string");
    };
    Regex::new(regex).map_err(|e| PatternError {
        path: path.to_string(),
        message: format!("invalid regex: {e}"),
    })
}

/// `$eq`, `$gt`, `$ge`, `$lt` or `$le`, whose argument is a number.
fn comparison(
    comparison: Comparison,
    argument: &Value,
    path: &str,
) -> Result<Operator, PatternError> {
    match argument {
        Value::Number(bound) => Ok(Operator::Compare(comparison, bound.clone())),
        _ => takes(comparison.operator(), path),
    }
}
