//! The one matching module: does an observed value satisfy a [`Pattern`]?
//!
//! Every expectation kind at both levels goes through [`Matcher::check`], for
//! the reference and for every adapter alike. The rules are the ones
//! `docs/matching.md` lists: literals equal, arrays are exact element by
//! element, plain objects are partial, `$` objects are matchers. Captures
//! (`$capture` / `$ref`) live in the [`Matcher`], so a value bound by one
//! expectation can be referred to by a later one; a failed attempt (one
//! alternative of `$any_of`, one candidate of a query) binds nothing.
//!
//! Matching walks the tree each pattern was parsed into when its scenario
//! loaded ([`PatternNode`], [`Operator`]): no operator is looked up by name
//! and no `$regex` is compiled here. The one thing parsed while checking is
//! a captured value standing as an operator's argument
//! (`{ "$gt" = { "$ref" = "first" } }`), since only then is it known.
//!
//! A failure is a [`Miss`]: where (a path from the value's root), what the
//! matcher wanted (named: `$contains "x"`) and what was there.

use std::collections::BTreeMap;

use dshc_model::js::{number_to_string, utf16_len};
use dshc_scenario::pattern::{Contains, JsonType, Operator, OperatorName, Pattern, PatternNode};
use serde_json::{Map, Number, Value};

/// Why a value does not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    /// Where, from the matched value's root (`.data.reason.kind`).
    pub path: String,
    /// What was wanted, naming the matcher.
    pub expected: String,
    /// What was there.
    pub actual: String,
}

/// Matching with captures: one per compared case.
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    bindings: BTreeMap<String, Value>,
}

/// Why a `$ref` has no value: captures are all collected before any
/// expectation is checked, so the name was never bound, either because the
/// expectation holding its `$capture` did not match (its own mismatch says
/// why) or because no capture has that name.
const UNBOUND: &str = "nothing is captured under that name: the expectation holding its capture did not match, \
     or no capture has that name";

/// How a value shows in a mismatch: compact JSON, long values cut.
pub fn show(value: Option<&Value>) -> String {
    const MAX_CHARS: usize = 400;
    match value {
        None => "(absent)".into(),
        Some(value) => {
            let text = dshc_model::js::stringify(value);
            if text.chars().count() > MAX_CHARS {
                let cut: String = text.chars().take(MAX_CHARS).collect();
                format!("{cut}…")
            } else {
                text
            }
        }
    }
}

fn miss(path: &str, expected: impl Into<String>, actual: Option<&Value>) -> Miss {
    Miss {
        path: path.to_string(),
        expected: expected.into(),
        actual: show(actual),
    }
}

/// A pattern node as a miss names it: its JSON.
fn shown(node: &PatternNode) -> String {
    show(Some(&node.to_value()))
}

/// `$gt 0`: an operator and its argument, as a miss names them.
fn operator_text(operator: &Operator) -> String {
    format!(
        "{} {}",
        operator.name().as_str(),
        show(Some(&operator.argument()))
    )
}

/// The plain miss of an operator: it wanted its argument.
fn missed(operator: &Operator, path: &str, actual: Option<&Value>) -> Miss {
    miss(path, operator_text(operator), actual)
}

/// JSON numbers compare by value (`1` equals `1.0`).
fn same_number(a: &Number, b: &Number) -> bool {
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

/// What `$length` measures: an array's length, a string's in UTF-16 units.
fn length_of(value: &Value) -> Option<usize> {
    match value {
        Value::Array(items) => Some(items.len()),
        Value::String(text) => Some(utf16_len(text)),
        _ => None,
    }
}

/// A number operator's bound as a float.
fn float(number: &Number) -> f64 {
    number.as_f64().unwrap_or(f64::NAN)
}

/// Deep equality; with `ordered`, objects must also list their keys in the
/// same order.
pub fn deep_equal(a: &Value, b: &Value, ordered: bool) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| deep_equal(x, y, ordered))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && if ordered {
                    x.iter()
                        .zip(y)
                        .all(|((kx, vx), (ky, vy))| kx == ky && deep_equal(vx, vy, true))
                } else {
                    x.iter()
                        .all(|(key, vx)| y.get(key).is_some_and(|vy| deep_equal(vx, vy, false)))
                }
        }
        _ => a == b,
    }
}

/// A literal pattern (a string, number, boolean or `null`) against `actual`.
fn literal(literal: &Value, actual: Option<&Value>, path: &str) -> Result<(), Miss> {
    match (literal, actual) {
        (_, Some(value)) if deep_equal(literal, value, false) => Ok(()),
        // Two texts show as themselves, so a diff of them reads by line.
        (Value::String(wanted), Some(Value::String(got))) => Err(Miss {
            path: path.to_string(),
            expected: wanted.clone(),
            actual: got.clone(),
        }),
        _ => Err(miss(path, show(Some(literal)), actual)),
    }
}

/// `$eq`, `$gt`, `$ge`, `$lt`, `$le`, `$between`, `$multiple_of`: `value`
/// is a number that `holds`. A number that does not shows as JavaScript
/// prints it.
fn numeric(
    operator: &Operator,
    value: &Value,
    path: &str,
    holds: impl FnOnce(f64) -> bool,
) -> Result<(), Miss> {
    let Some(x) = value.as_f64() else {
        return Err(missed(operator, path, Some(value)));
    };
    if holds(x) {
        Ok(())
    } else {
        let shown = Value::String(number_to_string(x));
        Err(miss(path, operator_text(operator), Some(&shown)))
    }
}

/// The miss of an operator whose captured argument it cannot take (a
/// `$gt` given a string): it holds for nothing, and the miss reads as
/// for any argument, that value in place of the `$ref`.
fn malformed(operator: OperatorName, argument: &Value, actual: Option<&Value>, path: &str) -> Miss {
    use OperatorName as Name;
    let wanted = format!("{} {}", operator.as_str(), show(Some(argument)));
    let length = actual.and_then(length_of);
    match (operator, actual.and_then(Value::as_f64), length) {
        (
            Name::Eq | Name::Gt | Name::Ge | Name::Lt | Name::Le | Name::Between | Name::MultipleOf,
            Some(x),
            _,
        ) => miss(path, wanted, Some(&Value::String(number_to_string(x)))),
        // `$length` compares the length with the argument as a pattern.
        (Name::Length, _, Some(length)) => Miss {
            path: format!("{path}.length"),
            expected: format!("$length {}", show(Some(argument))),
            actual: show(Some(&Value::from(length))),
        },
        _ => miss(path, wanted, actual),
    }
}

impl Matcher {
    /// A matcher with nothing captured.
    pub fn new() -> Self {
        Matcher::default()
    }

    /// The value captured under `name`, if any.
    pub fn captured(&self, name: &str) -> Option<&Value> {
        self.bindings.get(name)
    }

    /// Bind `name` (a query's `capture`). Rebinding to another value is a miss.
    pub fn bind(&mut self, name: &str, value: Value, path: &str) -> Result<(), Miss> {
        match self.bindings.get(name) {
            Some(bound) if !deep_equal(bound, &value, false) => Err(miss(
                path,
                format!("$capture {name:?} (already bound to {})", show(Some(bound))),
                Some(&value),
            )),
            Some(_) => Ok(()),
            None => {
                self.bindings.insert(name.to_string(), value);
                Ok(())
            }
        }
    }

    /// Check `actual` (`None` = absent) against `pattern`. On a miss, no
    /// capture of this check is kept.
    ///
    /// A pattern that does not parse matches nothing. Loading refuses such
    /// a pattern, so only one made by hand (not loaded) can get here.
    pub fn check(&mut self, pattern: &Pattern, actual: Option<&Value>) -> Result<(), Miss> {
        match pattern.tree() {
            Ok(node) => self.check_node(node, actual, ""),
            Err(error) => Err(miss(
                "",
                format!("a valid pattern (at `{}`: {})", error.path, error.message),
                actual,
            )),
        }
    }

    /// Whether `pattern` matches, keeping captures only when it does.
    pub fn test(&mut self, pattern: &Pattern, actual: Option<&Value>) -> bool {
        self.check(pattern, actual).is_ok()
    }

    /// [`Matcher::test`] on one node of a parsed pattern.
    pub fn test_node(&mut self, node: &PatternNode, actual: Option<&Value>) -> bool {
        self.check_node(node, actual, "").is_ok()
    }

    /// Check a node at `path`, keeping captures only when it matches.
    fn check_node(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let saved = self.bindings.clone();
        let result = self.matches(node, actual, path);
        if result.is_err() {
            self.bindings = saved;
        }
        result
    }

    fn matches(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        match node {
            PatternNode::Literal(value) => literal(value, actual, path),
            PatternNode::Array(patterns) => {
                let Some(items) = actual.and_then(Value::as_array) else {
                    return Err(miss(path, shown(node), actual));
                };
                if items.len() != patterns.len() {
                    let wanted = format!("{} elements: {}", patterns.len(), shown(node));
                    return Err(miss(path, wanted, actual));
                }
                for (index, (pattern, item)) in patterns.iter().zip(items).enumerate() {
                    self.matches(pattern, Some(item), &format!("{path}[{index}]"))?;
                }
                Ok(())
            }
            PatternNode::Object(fields) => {
                let Some(object) = actual.and_then(Value::as_object) else {
                    return Err(miss(path, shown(node), actual));
                };
                for (key, pattern) in fields {
                    self.matches(pattern, object.get(key), &format!("{path}.{key}"))?;
                }
                Ok(())
            }
            PatternNode::Matcher(operators) => {
                for operator in operators {
                    self.operator(operator, actual, path)?;
                }
                Ok(())
            }
        }
    }

    /// One operator of a matcher. `$absent` and `$any` are about presence;
    /// the combinators `$not`, `$any_of` and `$match` hand the value to their
    /// patterns as found, absent included (so `{ "$not" = { "$contains" =
    /// "x" } }` holds of a missing key); every other operator misses an
    /// absent value, wanting its argument.
    fn operator(
        &mut self,
        operator: &Operator,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let fail = || missed(operator, path, actual);
        let holds = |holds: bool| if holds { Ok(()) } else { Err(fail()) };
        let present = || actual.ok_or_else(|| missed(operator, path, None));
        let items = || present()?.as_array().ok_or_else(fail);
        let text = || present().map(Value::as_str);
        match operator {
            Operator::ArgumentRef { operator, name } => {
                self.argument_ref(*operator, name, actual, path)
            }
            Operator::Absent => match actual {
                None => Ok(()),
                Some(_) => Err(miss(path, "$absent", actual)),
            },
            Operator::Any => match actual {
                Some(_) => Ok(()),
                None => Err(miss(path, "$any (present)", actual)),
            },
            Operator::Exact(expected) => holds(deep_equal(expected, present()?, true)),
            Operator::Equal(expected) => holds(deep_equal(expected, present()?, false)),
            Operator::Type(json_type) => holds(JsonType::of(present()?) == *json_type),
            Operator::Match(pattern) => self.matches(pattern, actual, path),
            Operator::Keys(pattern) => match present()? {
                Value::Object(object) => self.keys(pattern, object, path),
                _ => Err(fail()),
            },
            Operator::Length(pattern) => match length_of(present()?) {
                Some(length) => self.length(pattern, length, path),
                None => Err(fail()),
            },
            Operator::Not(pattern) => holds(!self.clone().test_node(pattern, actual)),
            Operator::AnyOf(options) => {
                holds(options.iter().any(|option| self.test_node(option, actual)))
            }
            Operator::Contains(Contains::Text(part)) => {
                holds(text()?.is_some_and(|text| text.contains(part.as_str())))
            }
            Operator::StartsWith(part) => {
                holds(text()?.is_some_and(|text| text.starts_with(part.as_str())))
            }
            Operator::EndsWith(part) => {
                holds(text()?.is_some_and(|text| text.ends_with(part.as_str())))
            }
            Operator::Regex(regex) => holds(text()?.is_some_and(|text| regex.is_match(text))),
            Operator::Contains(Contains::Elements(patterns)) => {
                let items = items()?;
                let mut used = vec![false; items.len()];
                holds(self.assign(patterns, items, &mut used))
            }
            Operator::InOrder(patterns) => self.in_order(patterns, items()?, path, actual),
            Operator::Prefix(patterns) => {
                let items = items()?;
                if items.len() < patterns.len() {
                    return Err(fail());
                }
                self.each_at(patterns.iter().zip(items), path)
            }
            Operator::SomeElement(pattern) => {
                let items = items()?;
                holds(items.iter().any(|item| self.test_node(pattern, Some(item))))
            }
            Operator::Each(pattern) => {
                self.each_at(std::iter::repeat(&**pattern).zip(items()?), path)
            }
            Operator::Compare(comparison, bound) => numeric(operator, present()?, path, |x| {
                comparison.holds(x, float(bound))
            }),
            Operator::Between(low, high) => numeric(operator, present()?, path, |x| {
                float(low) <= x && x <= float(high)
            }),
            Operator::MultipleOf(step) => numeric(operator, present()?, path, |x| {
                (x / float(step)).fract() == 0.0
            }),
            Operator::Capture(name) => self.bind(name, present()?.clone(), path),
            Operator::Ref(name) => self.reference(name, present()?, path),
        }
    }

    /// `{ "$op" = { "$ref" = name } }`: the operator with the value bound
    /// to `name` as its argument, parsed now that it is known.
    fn argument_ref(
        &mut self,
        operator: OperatorName,
        name: &str,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let Some(argument) = self.bindings.get(name) else {
            let wanted = format!("{} $ref {name:?} ({UNBOUND})", operator.as_str());
            return Err(miss(path, wanted, actual));
        };
        let resolved = match operator {
            // They do not read their argument.
            OperatorName::Absent => Operator::Absent,
            OperatorName::Any => Operator::Any,
            _ => match Operator::parse(operator, argument, "") {
                Ok(resolved) => resolved,
                Err(_) => return Err(malformed(operator, argument, actual, path)),
            },
        };
        self.operator(&resolved, actual, path)
    }

    /// `$keys`: the object's own keys, in order, against `pattern`.
    fn keys(
        &mut self,
        pattern: &PatternNode,
        object: &Map<String, Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let keys = Value::Array(object.keys().map(|k| Value::String(k.clone())).collect());
        let result = self.matches(pattern, Some(&keys), &format!("{path}.$keys"));
        result.map_err(|inner| Miss {
            expected: format!("$keys {}", inner.expected),
            ..inner
        })
    }

    /// `$length`: the length against `pattern`.
    fn length(&mut self, pattern: &PatternNode, length: usize, path: &str) -> Result<(), Miss> {
        let length = Value::from(length);
        let result = self.matches(pattern, Some(&length), &format!("{path}.length"));
        result.map_err(|inner| Miss {
            expected: format!("$length {}", inner.expected),
            ..inner
        })
    }

    /// Each pattern against its element (`$prefix`, `$each`), the miss at
    /// the element's index.
    fn each_at<'a>(
        &mut self,
        pairs: impl Iterator<Item = (&'a PatternNode, &'a Value)>,
        path: &str,
    ) -> Result<(), Miss> {
        for (index, (pattern, item)) in pairs.enumerate() {
            self.matches(pattern, Some(item), &format!("{path}[{index}]"))?;
        }
        Ok(())
    }

    /// `$in_order`: each pattern matched by an element after the one the
    /// pattern before it matched.
    fn in_order(
        &mut self,
        patterns: &[PatternNode],
        items: &[Value],
        path: &str,
        actual: Option<&Value>,
    ) -> Result<(), Miss> {
        let mut next = 0;
        for pattern in patterns {
            let found = (next..items.len()).find(|&i| self.test_node(pattern, Some(&items[i])));
            match found {
                Some(index) => next = index + 1,
                None => {
                    let wanted = format!("$in_order: {} after element {next}", shown(pattern));
                    return Err(miss(path, wanted, actual));
                }
            }
        }
        Ok(())
    }

    /// `$ref`: equal to the value bound to `name`.
    fn reference(&self, name: &str, value: &Value, path: &str) -> Result<(), Miss> {
        match self.bindings.get(name) {
            Some(bound) if deep_equal(bound, value, false) => Ok(()),
            Some(bound) => Err(miss(
                path,
                format!("$ref {name:?} = {}", show(Some(bound))),
                Some(value),
            )),
            None => Err(miss(
                path,
                format!("$ref {name:?} ({UNBOUND})"),
                Some(value),
            )),
        }
    }

    /// Match each pattern to a distinct item, any order (backtracking).
    fn assign(&mut self, patterns: &[PatternNode], items: &[Value], used: &mut [bool]) -> bool {
        let Some((first, rest)) = patterns.split_first() else {
            return true;
        };
        for index in 0..items.len() {
            if used[index] {
                continue;
            }
            let saved = self.bindings.clone();
            if self.test_node(first, Some(&items[index])) {
                used[index] = true;
                if self.assign(rest, items, used) {
                    return true;
                }
                used[index] = false;
            }
            self.bindings = saved;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(pattern: Value, actual: Value) -> Result<(), Miss> {
        Matcher::new().check(&Pattern::new(pattern), Some(&actual))
    }

    fn holds(pattern: Value, actual: Value) {
        if let Err(miss) = check(pattern.clone(), actual.clone()) {
            panic!("{pattern} should match {actual}: {miss:?}");
        }
    }

    fn fails(pattern: Value, actual: Value) -> Miss {
        match check(pattern.clone(), actual.clone()) {
            Ok(()) => panic!("{pattern} should not match {actual}"),
            Err(miss) => miss,
        }
    }

    #[test]
    fn literals_are_equal_and_numbers_compare_by_value() {
        holds(json!("a"), json!("a"));
        holds(json!(1), json!(1.0));
        holds(json!(null), json!(null));
        let miss = fails(json!("a"), json!("b"));
        assert_eq!((miss.expected.as_str(), miss.actual.as_str()), ("a", "b"));
        let miss = fails(json!("a"), json!(1));
        assert_eq!(
            (miss.expected.as_str(), miss.actual.as_str()),
            ("\"a\"", "1")
        );
        fails(json!(1), json!("1"));
        fails(json!(true), json!(null));
    }

    #[test]
    fn objects_are_partial_and_name_the_differing_key() {
        holds(json!({"a": 1}), json!({"a": 1, "b": 2}));
        holds(json!({}), json!({"a": 1}));
        let miss = fails(json!({"a": {"b": 1}}), json!({"a": {"b": 2, "c": 3}}));
        assert_eq!(miss.path, ".a.b");
        let miss = fails(json!({"x": 1}), json!({"a": 1}));
        assert_eq!(
            (miss.path.as_str(), miss.actual.as_str()),
            (".x", "(absent)")
        );
        fails(json!({"a": 1}), json!([1]));
    }

    #[test]
    fn arrays_are_exact_in_length_and_order() {
        holds(json!([1, {"a": 1}]), json!([1, {"a": 1, "b": 0}]));
        let miss = fails(json!([1, 2]), json!([1, 2, 3]));
        assert!(miss.expected.starts_with("2 elements"), "{miss:?}");
        let miss = fails(json!([1, 2]), json!([2, 1]));
        assert_eq!(miss.path, "[0]");
    }

    #[test]
    fn exact_compares_every_key_and_key_order_and_equal_ignores_order() {
        holds(json!({"$exact": {"a": 1, "b": 2}}), json!({"a": 1, "b": 2}));
        let miss = fails(json!({"$exact": {"a": 1, "b": 2}}), json!({"b": 2, "a": 1}));
        assert!(miss.expected.starts_with("$exact"), "{miss:?}");
        fails(json!({"$exact": {"a": 1}}), json!({"a": 1, "b": 2}));
        holds(json!({"$equal": {"a": 1, "b": 2}}), json!({"b": 2, "a": 1}));
        fails(json!({"$equal": {"a": 1}}), json!({"a": 1, "b": 2}));
    }

    #[test]
    fn absent_any_and_type() {
        assert!(
            Matcher::new()
                .check(&Pattern::new(json!({"$absent": true})), None)
                .is_ok()
        );
        holds(json!({"a": {"$absent": true}}), json!({"b": 1}));
        let miss = fails(json!({"a": {"$absent": true}}), json!({"a": null}));
        assert_eq!(miss.expected, "$absent");
        holds(json!({"a": {"$any": true}}), json!({"a": null}));
        fails(json!({"a": {"$any": true}}), json!({}));
        holds(json!({"$type": "array"}), json!([]));
        fails(json!({"$type": "string"}), json!(1));
    }

    #[test]
    fn keys_state_key_order_or_membership_without_values() {
        holds(json!({"$keys": ["b", "a"]}), json!({"b": 1, "a": 2}));
        let miss = fails(json!({"$keys": ["a", "b"]}), json!({"b": 1, "a": 2}));
        assert!(miss.expected.starts_with("$keys"), "{miss:?}");
        holds(
            json!({"$keys": {"$contains": ["a"]}}),
            json!({"b": 1, "a": 2}),
        );
        holds(
            json!({"$keys": {"$not": {"$contains": ["c"]}}}),
            json!({"b": 1, "a": 2}),
        );
        fails(json!({"$keys": ["a"]}), json!({"a": 1, "b": 2}));
    }

    #[test]
    fn string_matchers() {
        holds(json!({"$contains": "lo W"}), json!("Hello World"));
        holds(
            json!({"$starts_with": "He", "$ends_with": "ld"}),
            json!("Hello World"),
        );
        holds(json!({"$regex": "^msg-[0-9]+$"}), json!("msg-12"));
        let miss = fails(json!({"$contains": "xyz"}), json!("Hello"));
        assert_eq!(miss.expected, "$contains \"xyz\"");
        fails(json!({"$starts_with": "lo"}), json!("Hello"));
        fails(json!({"$ends_with": "He"}), json!("Hello"));
        fails(json!({"$regex": "^x"}), json!("Hello"));
        fails(json!({"$contains": "1"}), json!(1));
        holds(json!({"$length": 2}), json!("😀"));
    }

    #[test]
    fn array_matchers() {
        let list = json!([{"t": "a", "n": 1}, {"t": "b"}, {"t": "c"}]);
        holds(json!({"$contains": [{"t": "c"}, {"t": "a"}]}), list.clone());
        fails(json!({"$contains": [{"t": "a"}, {"t": "a"}]}), list.clone());
        holds(json!({"$in_order": [{"t": "a"}, {"t": "c"}]}), list.clone());
        let miss = fails(json!({"$in_order": [{"t": "c"}, {"t": "a"}]}), list.clone());
        assert!(miss.expected.starts_with("$in_order"), "{miss:?}");
        holds(json!({"$prefix": [{"t": "a"}]}), list.clone());
        fails(json!({"$prefix": [{"t": "b"}]}), list.clone());
        holds(json!({"$length": 3}), list.clone());
        holds(json!({"$length": {"$ge": 2}}), list.clone());
        let miss = fails(json!({"$length": 2}), list.clone());
        assert!(miss.expected.starts_with("$length"), "{miss:?}");
        holds(json!({"$some": {"n": 1}}), list.clone());
        fails(json!({"$some": {"n": 2}}), list.clone());
        holds(json!({"$each": {"t": {"$type": "string"}}}), list.clone());
        let miss = fails(json!({"$each": {"n": 1}}), list);
        assert_eq!(miss.path, "[1].n");
    }

    #[test]
    fn number_matchers() {
        holds(json!({"$gt": 1, "$lt": 3}), json!(2));
        holds(json!({"$ge": 2, "$le": 2, "$eq": 2}), json!(2));
        holds(json!({"$between": [1, 2]}), json!(2));
        holds(json!({"$multiple_of": 64}), json!(128));
        fails(json!({"$gt": 2}), json!(2));
        fails(json!({"$lt": 2}), json!(2));
        fails(json!({"$ge": 3}), json!(2));
        fails(json!({"$le": 1}), json!(2));
        fails(json!({"$eq": 1}), json!(2));
        fails(json!({"$between": [3, 4]}), json!(2));
        let miss = fails(json!({"$multiple_of": 64}), json!(100));
        assert_eq!(miss.expected, "$multiple_of 64");
        fails(json!({"$gt": 0}), json!("1"));
    }

    #[test]
    fn not_and_any_of() {
        holds(json!({"$not": {"$contains": "x"}}), json!("abc"));
        fails(json!({"$not": {"$contains": "a"}}), json!("abc"));
        holds(json!({"$any_of": ["a", "b"]}), json!("b"));
        fails(json!({"$any_of": ["a", "b"]}), json!("c"));
    }

    #[test]
    fn combinators_see_a_missing_key_as_missing() {
        // Over a missing key, each combinator asks its patterns about the
        // missing value: a pattern that wants a value misses it.
        holds(json!({"a": {"$not": {"$contains": "x"}}}), json!({}));
        fails(json!({"a": {"$not": {"$absent": true}}}), json!({}));
        holds(json!({"a": {"$not": {"$absent": true}}}), json!({"a": 1}));
        holds(
            json!({"a": {"$any_of": [{"$absent": true}, "x"]}}),
            json!({}),
        );
        holds(
            json!({"a": {"$any_of": [{"$absent": true}, "x"]}}),
            json!({"a": "x"}),
        );
        fails(
            json!({"a": {"$any_of": [{"$absent": true}, "x"]}}),
            json!({"a": "y"}),
        );
        fails(json!({"a": {"$any_of": ["x", "y"]}}), json!({}));
        holds(json!({"a": {"$match": {"$absent": true}}}), json!({}));
        fails(json!({"a": {"$match": {"b": 1}}}), json!({}));
        // Every other operator still wants the key.
        fails(json!({"a": {"$contains": "x"}}), json!({}));
        fails(json!({"a": {"$gt": 0}}), json!({}));
    }

    #[test]
    fn captures_bind_once_and_refs_compare_later() {
        let mut matcher = Matcher::new();
        let event = json!({"data": {"message": {"id": "msg-3"}}});
        let capture = Pattern::new(json!({"data": {"message": {"id": {"$capture": "id"}}}}));
        assert!(matcher.check(&capture, Some(&event)).is_ok());
        assert_eq!(matcher.captured("id"), Some(&json!("msg-3")));
        let reference = Pattern::new(json!({"callId": {"$ref": "id"}}));
        assert!(
            matcher
                .check(&reference, Some(&json!({"callId": "msg-3"})))
                .is_ok()
        );
        let miss = matcher
            .check(&reference, Some(&json!({"callId": "msg-4"})))
            .unwrap_err();
        assert!(miss.expected.contains("$ref \"id\""), "{miss:?}");
        let unbound = Pattern::new(json!({"$ref": "nope"}));
        let miss = matcher.check(&unbound, Some(&json!(1))).unwrap_err();
        assert!(miss.expected.contains("nothing is captured"), "{miss:?}");
    }

    #[test]
    fn a_captured_value_can_be_any_operator_s_argument() {
        let mut matcher = Matcher::new();
        let first =
            Pattern::new(json!({"seq": {"$capture": "first"}, "data": {"$match": {"turn": 1}}}));
        assert!(
            matcher
                .check(
                    &first,
                    Some(&json!({"seq": 4, "data": {"turn": 1, "x": 0}}))
                )
                .is_ok()
        );
        let later = Pattern::new(json!({"$gt": {"$ref": "first"}}));
        assert!(matcher.check(&later, Some(&json!(5))).is_ok());
        assert!(matcher.check(&later, Some(&json!(3))).is_err());
        let prefix = Pattern::new(json!({"$prefix": {"$ref": "list"}}));
        matcher.bind("list", json!([1, 2]), "").expect("bound");
        assert!(matcher.check(&prefix, Some(&json!([1, 2, 3]))).is_ok());
        assert!(matcher.check(&prefix, Some(&json!([2, 1, 3]))).is_err());
        let unbound = Pattern::new(json!({"$lt": {"$ref": "nope"}}));
        let miss = matcher.check(&unbound, Some(&json!(1))).unwrap_err();
        assert!(miss.expected.contains("nothing is captured"), "{miss:?}");
        let both = Pattern::new(json!({"$match": {"a": 1}}));
        assert!(matcher.check(&both, Some(&json!({"a": 2}))).is_err());
    }

    #[test]
    fn a_failed_check_keeps_no_capture() {
        let mut matcher = Matcher::new();
        let pattern = Pattern::new(json!({"a": {"$capture": "x"}, "b": 2}));
        assert!(
            matcher
                .check(&pattern, Some(&json!({"a": 1, "b": 3})))
                .is_err()
        );
        assert_eq!(matcher.captured("x"), None);
    }

    #[test]
    fn a_captured_argument_its_operator_cannot_take_fails_it() {
        let mut matcher = Matcher::new();
        matcher.bind("text", json!("x"), "").expect("bound");
        let gt = Pattern::new(json!({"$gt": {"$ref": "text"}}));
        let miss = matcher.check(&gt, Some(&json!(2))).unwrap_err();
        assert_eq!(
            (miss.expected.as_str(), miss.actual.as_str()),
            ("$gt \"x\"", "\"2\"")
        );
        let length = Pattern::new(json!({"$length": {"$ref": "text"}}));
        let miss = matcher.check(&length, Some(&json!([1]))).unwrap_err();
        assert_eq!(
            (miss.path.as_str(), miss.expected.as_str()),
            (".length", "$length \"x\"")
        );
        matcher
            .bind("list", json!([{"$foo": 1}]), "")
            .expect("bound");
        let contains = Pattern::new(json!({"$contains": {"$ref": "list"}}));
        let miss = matcher.check(&contains, Some(&json!([1]))).unwrap_err();
        assert_eq!(miss.expected, "$contains [{\"$foo\":1}]");
        // `$absent` and `$any` do not read their argument, bound or not.
        let absent = Pattern::new(json!({"$absent": {"$ref": "text"}}));
        assert!(matcher.check(&absent, None).is_ok());
    }

    #[test]
    fn a_pattern_that_does_not_parse_matches_nothing() {
        let pattern = Pattern::new(json!({"a": {"$regex": "("}}));
        let miss = Matcher::new()
            .check(&pattern, Some(&json!({"a": "("})))
            .unwrap_err();
        assert!(miss.expected.starts_with("a valid pattern"), "{miss:?}");
        assert!(miss.expected.contains("invalid regex"), "{miss:?}");
    }
}
