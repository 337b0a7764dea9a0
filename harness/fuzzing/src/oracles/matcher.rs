//! Matcher oracle: the judge's matching (`dshc_oracle::matching`) over an
//! arbitrary expectation and an arbitrary observation.
//!
//! The matcher is where a hostile scenario costs the most: an expectation
//! is data, and an operator such as `$contains` over an array can be made
//! to search. This oracle makes the next exponential case a fuzzer finding
//! instead of a hang a person reports. From the bytes it builds a pattern
//! drawn from the whole operator vocabulary, an observed value, and a few
//! values captured beforehand (so `$ref` and captured arguments are
//! reached), then checks that:
//!
//! - matching never panics, and costs at most a polynomial bound of pattern
//!   nodes checked against values ([`Matcher::steps`]);
//! - it is deterministic, and a check that fails binds nothing;
//! - `$not` inverts a check exactly, unless the expectation is broken;
//! - a value matches itself under `$exact` and `$equal`;
//! - `$contains` over an array agrees with an independent search of every
//!   assignment of its entries to distinct elements, on inputs small
//!   enough for that search.
//!
//! The fuzz target `matcher`, the corpus replay under `cargo test` and the
//! seeded test all call [`check_matcher_bytes`].

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Map, Value, json};

use dshc_oracle::matching::Matcher;
use dshc_scenario::pattern::{OperatorName, Pattern};

/// The names values are captured under before the check, and the names
/// patterns draw from (one of them is never bound).
const NAMES: [&str; 3] = ["x", "y", "unbound"];

/// Object keys values and patterns draw from.
const KEYS: [&str; 3] = ["a", "b", "c"];

/// Strings values draw from: a regex that compiles, one that does not.
const STRINGS: [&str; 6] = ["", "a", "ab", "b", "^a", "("];

/// How deep a generated value or pattern nests.
const MAX_DEPTH: u32 = 4;

/// One matching problem.
#[derive(Clone, Debug)]
pub struct MatcherInput {
    /// The expectation.
    pub pattern: Value,
    /// The observed value (`None`: absent).
    pub actual: Option<Value>,
    /// Values bound before the check, by name.
    pub captured: Vec<(String, Value)>,
}

fn value(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    let leaf = depth >= MAX_DEPTH;
    Ok(match u.int_in_range(0..=if leaf { 3 } else { 5 })? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.int_in_range(-1..=3)?),
        3 => Value::String(u.choose(&STRINGS)?.to_string()),
        4 => {
            let len = u.int_in_range(0..=4)?;
            Value::Array(
                (0..len)
                    .map(|_| value(u, depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                map.insert(u.choose(&KEYS)?.to_string(), value(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

fn patterns(u: &mut Unstructured<'_>, depth: u32, max: u32) -> arbitrary::Result<Value> {
    let len = u.int_in_range(0..=max)?;
    let items = (0..len).map(|_| pattern(u, depth + 1));
    Ok(Value::Array(items.collect::<Result<_, _>>()?))
}

/// An operator's argument: mostly what it takes, sometimes a captured
/// value (`{ "$ref" = name }`), sometimes anything.
fn argument(
    u: &mut Unstructured<'_>,
    operator: OperatorName,
    depth: u32,
) -> arbitrary::Result<Value> {
    use OperatorName as Name;
    if u.ratio(1, 8)? {
        return Ok(json!({ "$ref": *u.choose(&NAMES)? }));
    }
    if u.ratio(1, 16)? {
        return value(u, depth + 1);
    }
    Ok(match operator {
        Name::Exact | Name::Equal => value(u, depth + 1)?,
        Name::Absent | Name::Any => Value::Bool(true),
        Name::Type => {
            json!(*u.choose(&["string", "number", "boolean", "null", "array", "object"])?)
        }
        Name::Keys | Name::Match | Name::Some | Name::Each | Name::Not => pattern(u, depth + 1)?,
        Name::Length => match u.arbitrary()? {
            true => json!(u.int_in_range(0..=4)?),
            false => json!({ "$ge": u.int_in_range(0..=4)? }),
        },
        Name::Contains => match u.ratio(1, 3)? {
            true => Value::String(u.choose(&STRINGS)?.to_string()),
            false => patterns(u, depth, 5)?,
        },
        Name::InOrder | Name::Prefix | Name::AnyOf => patterns(u, depth, 3)?,
        Name::StartsWith | Name::EndsWith | Name::Regex => {
            Value::String(u.choose(&STRINGS)?.to_string())
        }
        Name::Eq | Name::Gt | Name::Ge | Name::Lt | Name::Le | Name::MultipleOf => {
            json!(u.int_in_range(1..=3)?)
        }
        Name::Between => json!([u.int_in_range(-1..=1)?, u.int_in_range(0..=3)?]),
        Name::Capture | Name::Ref => json!(*u.choose(&NAMES)?),
    })
}

fn pattern(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    if depth >= MAX_DEPTH {
        return value(u, depth);
    }
    Ok(match u.int_in_range(0..=5)? {
        0 | 1 => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(1..=2)? {
                let operator = *u.choose(&OperatorName::ALL)?;
                let argument = argument(u, operator, depth)?;
                map.insert(operator.as_str().to_string(), argument);
            }
            Value::Object(map)
        }
        2 => patterns(u, depth, 3)?,
        3 => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=2)? {
                map.insert(u.choose(&KEYS)?.to_string(), pattern(u, depth + 1)?);
            }
            Value::Object(map)
        }
        _ => value(u, depth)?,
    })
}

/// A `$contains` problem: an array, and entries that are mostly its own
/// elements (which match them) or type matchers (which match many), so
/// that assignments are many and the matching has work to do.
fn contains_problem(u: &mut Unstructured<'_>) -> arbitrary::Result<(Value, Value)> {
    // Up to 10 entries: searching every assignment of 10 costs 9! steps,
    // far over the bound, so a search that creeps back in is found.
    let len = u.int_in_range(0..=10)?;
    let items: Vec<Value> = (0..len).map(|_| value(u, 2)).collect::<Result<_, _>>()?;
    let mut entries = Vec::new();
    for _ in 0..u.int_in_range(0..=10)? {
        let entry = match u.int_in_range(0..=3)? {
            0 if !items.is_empty() => items[u.choose_index(items.len())?].clone(),
            1 => json!({ "$type": *u.choose(&["number", "string", "object", "array"])? }),
            2 => json!({ "$any": true }),
            _ => pattern(u, 2)?,
        };
        entries.push(entry);
    }
    Ok((json!({ "$contains": entries }), Value::Array(items)))
}

impl<'a> Arbitrary<'a> for MatcherInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut captured = Vec::new();
        for name in &NAMES[..2] {
            if u.arbitrary()? {
                captured.push((name.to_string(), value(u, 1)?));
            }
        }
        let (pattern, actual) = match u.int_in_range(0..=7)? {
            0 | 1 => {
                let (pattern, actual) = contains_problem(u)?;
                (pattern, Some(actual))
            }
            // A value as its own pattern, which it matches unless it holds
            // a `$` key or something the pattern reads as an operator.
            2 => {
                let actual = value(u, 0)?;
                (actual.clone(), Some(actual))
            }
            3 => (pattern(u, 0)?, None),
            _ => (pattern(u, 0)?, Some(value(u, 0)?)),
        };
        Ok(MatcherInput {
            pattern,
            actual,
            captured,
        })
    }
}

/// The nodes of a JSON value, object keys counted: the size the cost of
/// matching is bounded by.
fn size(value: &Value) -> u64 {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<u64>(),
        Value::Object(map) => 1 + map.values().map(|v| 1 + size(v)).sum::<u64>(),
        _ => 1,
    }
}

fn matcher_with(captured: &[(String, Value)]) -> Matcher {
    let mut matcher = Matcher::new();
    for (name, value) in captured {
        matcher
            .bind(name, value.clone(), "")
            .expect("a fresh matcher binds each name once");
    }
    matcher
}

/// Whether `entries` can each take a distinct element of `items`, every
/// assignment tried (the search the matcher must not do, fine for a few).
fn assignable(fits: &[Vec<bool>], used: &mut Vec<bool>) -> bool {
    let Some((first, rest)) = fits.split_first() else {
        return true;
    };
    for (index, fits_here) in first.iter().enumerate() {
        if *fits_here && !used[index] {
            used[index] = true;
            if assignable(rest, used) {
                return true;
            }
            used[index] = false;
        }
    }
    false
}

/// `$contains` alone over an array, against the independent search: only
/// for entries that capture nothing (a capture makes entries depend on
/// each other, which the search does not model).
fn check_contains_by_search(input: &MatcherInput, matched: bool) {
    let Some(Value::Array(items)) = &input.actual else {
        return;
    };
    let Some(entries) = input
        .pattern
        .as_object()
        .filter(|map| map.len() == 1)
        .and_then(|map| map.get("$contains"))
        .and_then(Value::as_array)
    else {
        return;
    };
    if entries.len() > 6 || entries.iter().any(|e| e.to_string().contains("$capture")) {
        return;
    }
    let mut fits = Vec::new();
    for entry in entries {
        let entry = Pattern::new(entry.clone());
        if entry.validate().is_err() {
            return;
        }
        let mut row = Vec::new();
        for item in items {
            let mut matcher = matcher_with(&input.captured);
            match matcher.check(&entry, Some(item)) {
                Ok(()) => row.push(true),
                Err(miss) if miss.broken => return,
                Err(_) => row.push(false),
            }
        }
        fits.push(row);
    }
    let expected = assignable(&fits, &mut vec![false; items.len()]);
    assert_eq!(
        matched, expected,
        "$contains disagrees with the search of every assignment: {input:?}"
    );
}

/// Check one problem; panics on a bug.
pub fn check_matcher(input: &MatcherInput) {
    let pattern = Pattern::new(input.pattern.clone());
    let actual = input.actual.as_ref();
    let mut matcher = matcher_with(&input.captured);
    let result = matcher.check(&pattern, actual);

    let pattern_size = size(&input.pattern);
    let value_size =
        actual.map_or(0, size) + input.captured.iter().map(|(_, v)| size(v)).sum::<u64>();
    let bound = 4 * (pattern_size + 2 * value_size + 1).pow(2);
    assert!(
        matcher.steps() <= bound,
        "matching took {} steps, over the bound {bound} for {pattern_size} pattern and \
         {value_size} value nodes: {input:?}",
        matcher.steps()
    );

    let again = matcher_with(&input.captured).check(&pattern, actual);
    assert_eq!(result, again, "matching is deterministic: {input:?}");
    if result.is_err() {
        for name in NAMES {
            let before = input
                .captured
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v);
            assert_eq!(
                matcher.captured(name),
                before,
                "a failed check binds nothing: {input:?}"
            );
        }
    }
    if pattern.validate().is_err() {
        assert!(
            result.is_err(),
            "a pattern that does not parse matches nothing"
        );
        return;
    }
    if let Some(actual) = actual {
        let inverted = Pattern::new(json!({ "$not": input.pattern }));
        let not = matcher_with(&input.captured).check(&inverted, Some(actual));
        match &result {
            Err(miss) if miss.broken => {
                assert!(
                    not.is_err_and(|m| m.broken),
                    "$not passes a broken miss on: {input:?}"
                )
            }
            _ => assert_eq!(not.is_ok(), result.is_err(), "$not inverts: {input:?}"),
        }
        for operator in ["$exact", "$equal"] {
            let itself = Pattern::new(json!({ operator: actual }));
            assert_eq!(
                Matcher::new().check(&itself, Some(actual)),
                Ok(()),
                "a value matches itself under {operator}: {actual}"
            );
        }
    }
    check_contains_by_search(input, result.is_ok());
}

/// Build a problem from `data` and check it.
pub fn check_matcher_bytes(data: &[u8]) {
    if let Ok(input) = MatcherInput::arbitrary_take_rest(Unstructured::new(data)) {
        check_matcher(&input);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_admits_the_hardest_contains_the_matcher_meets() {
        let entries: Vec<Value> = (0..12).map(|_| json!({"$type": "number"})).collect();
        let mut items: Vec<Value> = (0..11).map(|i| json!(i)).collect();
        items.push(json!("x"));
        let input = MatcherInput {
            pattern: json!({ "$contains": entries }),
            actual: Some(Value::Array(items)),
            captured: Vec::new(),
        };
        check_matcher(&input);
    }

    #[test]
    #[should_panic(expected = "disagrees with the search")]
    fn the_search_catches_a_wrong_contains() {
        // A `$contains` answer the search contradicts: entries [1, 1] over
        // [1, 2] have no assignment, so claiming a match must panic.
        let input = MatcherInput {
            pattern: json!({ "$contains": [1, 1] }),
            actual: Some(json!([1, 2])),
            captured: Vec::new(),
        };
        check_contains_by_search(&input, true);
    }
}
