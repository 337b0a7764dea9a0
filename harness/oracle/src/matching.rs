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
//! A failure is a [`Miss`]: where (a path from the value's root), what the
//! matcher wanted (named: `$contains "x"`) and what was there.

use std::collections::BTreeMap;

use dshc_model::js::{number_to_string, utf16_len};
use dshc_scenario::pattern::{Pattern, argument_ref, is_matcher};
use serde_json::Value;

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

fn operator_text(operator: &str, argument: &Value) -> String {
    format!("{operator} {}", show(Some(argument)))
}

/// JSON numbers compare by value (`1` equals `1.0`).
fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
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

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
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
    pub fn check(&mut self, pattern: &Pattern, actual: Option<&Value>) -> Result<(), Miss> {
        self.check_value(&pattern.0, actual, "")
    }

    /// [`Matcher::check`] on a raw pattern value, at `path`.
    pub fn check_value(
        &mut self,
        pattern: &Value,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let saved = self.bindings.clone();
        let result = self.matches(pattern, actual, path);
        if result.is_err() {
            self.bindings = saved;
        }
        result
    }

    /// Whether `pattern` matches, keeping captures only when it does.
    pub fn test(&mut self, pattern: &Value, actual: Option<&Value>) -> bool {
        self.check_value(pattern, actual, "").is_ok()
    }

    fn matches(&mut self, pattern: &Value, actual: Option<&Value>, path: &str) -> Result<(), Miss> {
        if is_matcher(pattern) {
            let operators = pattern.as_object().into_iter().flatten();
            for (operator, argument) in operators {
                self.operator(operator, argument, actual, path)?;
            }
            return Ok(());
        }
        match pattern {
            Value::Array(patterns) => {
                let Some(items) = actual.and_then(Value::as_array) else {
                    return Err(miss(path, show(Some(pattern)), actual));
                };
                if items.len() != patterns.len() {
                    return Err(miss(
                        path,
                        format!("{} elements: {}", patterns.len(), show(Some(pattern))),
                        actual,
                    ));
                }
                for (index, (pattern, item)) in patterns.iter().zip(items).enumerate() {
                    self.matches(pattern, Some(item), &format!("{path}[{index}]"))?;
                }
                Ok(())
            }
            Value::Object(fields) => {
                let Some(object) = actual.and_then(Value::as_object) else {
                    return Err(miss(path, show(Some(pattern)), actual));
                };
                for (key, pattern) in fields {
                    self.matches(pattern, object.get(key), &format!("{path}.{key}"))?;
                }
                Ok(())
            }
            literal => match (literal, actual) {
                (_, Some(value)) if deep_equal(literal, value, false) => Ok(()),
                // Two texts show as themselves, so a diff of them reads by line.
                (Value::String(wanted), Some(Value::String(got))) => Err(Miss {
                    path: path.to_string(),
                    expected: wanted.clone(),
                    actual: got.clone(),
                }),
                _ => Err(miss(path, show(Some(literal)), actual)),
            },
        }
    }

    fn operator(
        &mut self,
        operator: &str,
        argument: &Value,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        // `{ "$gt" = { "$ref" = "x" } }`: a captured value as the argument.
        let bound;
        let argument = match argument_ref(argument) {
            Some(name)
                if !matches!(
                    operator,
                    "$capture" | "$ref" | "$not" | "$some" | "$each" | "$keys" | "$match"
                ) =>
            {
                match self.bindings.get(name) {
                    Some(value) => {
                        bound = value.clone();
                        &bound
                    }
                    None => {
                        return Err(miss(
                            path,
                            format!(
                                "{operator} $ref {name:?} (nothing is captured under that name yet)"
                            ),
                            actual,
                        ));
                    }
                }
            }
            _ => argument,
        };
        let wanted = || operator_text(operator, argument);
        let fail = || Err(miss(path, operator_text(operator, argument), actual));
        match operator {
            "$absent" => match actual {
                None => Ok(()),
                Some(_) => Err(miss(path, "$absent", actual)),
            },
            "$any" => match actual {
                Some(_) => Ok(()),
                None => Err(miss(path, "$any (present)", actual)),
            },
            _ if actual.is_none() => Err(miss(path, wanted(), None)),
            "$exact" => match actual {
                Some(value) if deep_equal(argument, value, true) => Ok(()),
                _ => fail(),
            },
            "$equal" => match actual {
                Some(value) if deep_equal(argument, value, false) => Ok(()),
                _ => fail(),
            },
            "$type" => match actual {
                Some(value) if argument.as_str() == Some(type_name(value)) => Ok(()),
                _ => fail(),
            },
            "$match" => self.matches(argument, actual, path),
            "$keys" => {
                let Some(Value::Object(object)) = actual else {
                    return fail();
                };
                let keys = Value::Array(object.keys().map(|k| Value::String(k.clone())).collect());
                self.matches(argument, Some(&keys), &format!("{path}.$keys"))
                    .map_err(|inner| Miss {
                        expected: format!("$keys {}", inner.expected),
                        ..inner
                    })
            }
            "$contains" => match (argument, actual) {
                (Value::String(part), Some(Value::String(text)))
                    if text.contains(part.as_str()) =>
                {
                    Ok(())
                }
                (Value::Array(patterns), Some(Value::Array(items))) => {
                    let mut used = vec![false; items.len()];
                    if self.assign(patterns, items, &mut used) {
                        Ok(())
                    } else {
                        fail()
                    }
                }
                _ => fail(),
            },
            "$starts_with" | "$ends_with" | "$regex" => {
                let (Some(wanted_text), Some(Value::String(text))) = (argument.as_str(), actual)
                else {
                    return fail();
                };
                let holds = match operator {
                    "$starts_with" => text.starts_with(wanted_text),
                    "$ends_with" => text.ends_with(wanted_text),
                    _ => regex::Regex::new(wanted_text).is_ok_and(|re| re.is_match(text)),
                };
                if holds { Ok(()) } else { fail() }
            }
            "$in_order" => {
                let (Some(patterns), Some(Value::Array(items))) = (argument.as_array(), actual)
                else {
                    return fail();
                };
                let mut next = 0;
                for pattern in patterns {
                    let found = (next..items.len()).find(|&i| self.test(pattern, Some(&items[i])));
                    match found {
                        Some(index) => next = index + 1,
                        None => {
                            return Err(miss(
                                path,
                                format!("$in_order: {} after element {next}", show(Some(pattern))),
                                actual,
                            ));
                        }
                    }
                }
                Ok(())
            }
            "$prefix" => {
                let (Some(patterns), Some(Value::Array(items))) = (argument.as_array(), actual)
                else {
                    return fail();
                };
                if items.len() < patterns.len() {
                    return fail();
                }
                for (index, pattern) in patterns.iter().enumerate() {
                    self.matches(pattern, Some(&items[index]), &format!("{path}[{index}]"))?;
                }
                Ok(())
            }
            "$length" => {
                let length = match actual {
                    Some(Value::Array(items)) => items.len(),
                    Some(Value::String(text)) => utf16_len(text),
                    _ => return fail(),
                };
                let length = Value::from(length);
                self.matches(argument, Some(&length), &format!("{path}.length"))
                    .map_err(|inner| Miss {
                        expected: format!("$length {}", inner.expected),
                        ..inner
                    })
            }
            "$some" => {
                let Some(Value::Array(items)) = actual else {
                    return fail();
                };
                if items.iter().any(|item| self.test(argument, Some(item))) {
                    Ok(())
                } else {
                    fail()
                }
            }
            "$each" => {
                let Some(Value::Array(items)) = actual else {
                    return fail();
                };
                for (index, item) in items.iter().enumerate() {
                    self.matches(argument, Some(item), &format!("{path}[{index}]"))?;
                }
                Ok(())
            }
            "$eq" | "$gt" | "$ge" | "$lt" | "$le" | "$between" | "$multiple_of" => {
                let Some(x) = actual.and_then(Value::as_f64) else {
                    return fail();
                };
                let n = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
                let holds = match operator {
                    "$eq" => x == n(argument),
                    "$gt" => x > n(argument),
                    "$ge" => x >= n(argument),
                    "$lt" => x < n(argument),
                    "$le" => x <= n(argument),
                    "$between" => {
                        let bounds = argument.as_array().map(Vec::as_slice).unwrap_or_default();
                        matches!(bounds, [low, high] if n(low) <= x && x <= n(high))
                    }
                    _ => {
                        let step = n(argument);
                        step > 0.0 && (x / step).fract() == 0.0
                    }
                };
                if holds {
                    Ok(())
                } else {
                    Err(miss(
                        path,
                        wanted(),
                        Some(&Value::String(number_to_string(x))),
                    ))
                }
            }
            "$not" => {
                let mut probe = self.clone();
                if probe.test(argument, actual) {
                    fail()
                } else {
                    Ok(())
                }
            }
            "$any_of" => {
                let options = argument.as_array().map(Vec::as_slice).unwrap_or_default();
                if options.iter().any(|option| self.test(option, actual)) {
                    Ok(())
                } else {
                    fail()
                }
            }
            "$capture" => {
                let name = argument.as_str().unwrap_or_default();
                match actual {
                    Some(value) => self.bind(name, value.clone(), path),
                    None => fail(),
                }
            }
            "$ref" => {
                let name = argument.as_str().unwrap_or_default();
                match (self.bindings.get(name), actual) {
                    (Some(bound), Some(value)) if deep_equal(bound, value, false) => Ok(()),
                    (Some(bound), _) => Err(miss(
                        path,
                        format!("$ref {name:?} = {}", show(Some(bound))),
                        actual,
                    )),
                    (None, _) => Err(miss(
                        path,
                        format!("$ref {name:?} (nothing is captured under that name yet)"),
                        actual,
                    )),
                }
            }
            unknown => Err(miss(
                path,
                format!("{unknown}: not a matcher (the loader rejects it)"),
                actual,
            )),
        }
    }

    /// Match each pattern to a distinct item, any order (backtracking).
    fn assign(&mut self, patterns: &[Value], items: &[Value], used: &mut [bool]) -> bool {
        let Some((first, rest)) = patterns.split_first() else {
            return true;
        };
        for index in 0..items.len() {
            if used[index] {
                continue;
            }
            let saved = self.bindings.clone();
            if self.test(first, Some(&items[index])) {
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
        Matcher::new().check(&Pattern(pattern), Some(&actual))
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
                .check(&Pattern(json!({"$absent": true})), None)
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
    fn captures_bind_once_and_refs_compare_later() {
        let mut matcher = Matcher::new();
        let event = json!({"data": {"message": {"id": "msg-3"}}});
        let capture = Pattern(json!({"data": {"message": {"id": {"$capture": "id"}}}}));
        assert!(matcher.check(&capture, Some(&event)).is_ok());
        assert_eq!(matcher.captured("id"), Some(&json!("msg-3")));
        let reference = Pattern(json!({"callId": {"$ref": "id"}}));
        assert!(
            matcher
                .check(&reference, Some(&json!({"callId": "msg-3"})))
                .is_ok()
        );
        let miss = matcher
            .check(&reference, Some(&json!({"callId": "msg-4"})))
            .unwrap_err();
        assert!(miss.expected.contains("$ref \"id\""), "{miss:?}");
        let unbound = Pattern(json!({"$ref": "nope"}));
        let miss = matcher.check(&unbound, Some(&json!(1))).unwrap_err();
        assert!(miss.expected.contains("nothing is captured"), "{miss:?}");
    }

    #[test]
    fn a_captured_value_can_be_any_operator_s_argument() {
        let mut matcher = Matcher::new();
        let first = Pattern(json!({"seq": {"$capture": "first"}, "data": {"$match": {"turn": 1}}}));
        assert!(
            matcher
                .check(
                    &first,
                    Some(&json!({"seq": 4, "data": {"turn": 1, "x": 0}}))
                )
                .is_ok()
        );
        let later = Pattern(json!({"$gt": {"$ref": "first"}}));
        assert!(matcher.check(&later, Some(&json!(5))).is_ok());
        assert!(matcher.check(&later, Some(&json!(3))).is_err());
        let prefix = Pattern(json!({"$prefix": {"$ref": "list"}}));
        matcher.bind("list", json!([1, 2]), "").expect("bound");
        assert!(matcher.check(&prefix, Some(&json!([1, 2, 3]))).is_ok());
        assert!(matcher.check(&prefix, Some(&json!([2, 1, 3]))).is_err());
        let unbound = Pattern(json!({"$lt": {"$ref": "nope"}}));
        let miss = matcher.check(&unbound, Some(&json!(1))).unwrap_err();
        assert!(miss.expected.contains("nothing is captured"), "{miss:?}");
        let both = Pattern(json!({"$match": {"a": 1}}));
        assert!(matcher.check(&both, Some(&json!({"a": 2}))).is_err());
    }

    #[test]
    fn a_failed_check_keeps_no_capture() {
        let mut matcher = Matcher::new();
        let pattern = Pattern(json!({"a": {"$capture": "x"}, "b": 2}));
        assert!(
            matcher
                .check(&pattern, Some(&json!({"a": 1, "b": 3})))
                .is_err()
        );
        assert_eq!(matcher.captured("x"), None);
    }
}
