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
//! matcher wanted (named: `$contains "x"`) and what was there. A miss that
//! is *broken* (an operator given a captured argument it cannot take, such
//! as a regex that does not compile) is an error of the expectation, not an
//! answer about the value: `$not` and the other operators that try
//! alternatives pass it on instead of inverting or skipping it.
//!
//! Matching costs polynomial time in the pattern and the value: captures
//! are undone through a trail of the names bound (never by copying the
//! bindings), and `$contains` over an array assigns its entries to distinct
//! elements as a bipartite matching, each entry tried once against each
//! element, instead of searching every partial assignment.

use std::collections::BTreeMap;

use dshc_model::js::{number_to_string, utf16_len};
use dshc_scenario::pattern::{Contains, JsonType, Operator, OperatorName, Pattern, PatternNode};
use regex::Regex;
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
    /// Whether the expectation itself is at fault (a captured argument its
    /// operator cannot take): no `$not` turns it into a pass.
    pub broken: bool,
}

/// Matching with captures: one per compared case.
///
/// Bindings are only ever added; `trail` lists the names in the order they
/// were bound, so undoing a failed attempt removes the names bound after a
/// mark instead of restoring a copy of every captured value.
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    bindings: BTreeMap<String, Value>,
    trail: Vec<String>,
    /// Captured values compiled as `$regex` arguments, by source.
    regexes: BTreeMap<String, Regex>,
    /// Pattern nodes checked so far ([`Matcher::steps`]).
    steps: u64,
    /// How many tries are under way whose miss is only a `false` to the
    /// caller (an operator's alternative, a selection's probe): their
    /// misses are never shown, so no nearest candidate is sought for them.
    trying: u32,
}

/// Why a `$ref` has no value: captures are all collected before any
/// expectation is checked, so the name was never bound, either because the
/// expectation holding its `$capture` did not match (its own mismatch says
/// why) or because no capture has that name.
const UNBOUND: &str = "nothing is captured under that name: the expectation holding its capture did not match, \
     or no capture has that name";

/// How a value shows in a mismatch: compact JSON, in full, so an author
/// reads the differing part whole instead of drilling down to it.
pub fn show(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(value) => dshc_model::js::stringify(value),
    }
}

fn miss(path: &str, expected: impl Into<String>, actual: Option<&Value>) -> Miss {
    Miss {
        path: path.to_string(),
        expected: expected.into(),
        actual: show(actual),
        broken: false,
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
            broken: false,
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
/// `$gt` given a string, a `$regex` given one that does not compile): it
/// holds for nothing, and the miss reads as for any argument, that value
/// in place of the `$ref`. It is broken: the expectation is wrong, so no
/// `$not` may invert it.
fn malformed(operator: OperatorName, argument: &Value, actual: Option<&Value>, path: &str) -> Miss {
    Miss {
        broken: true,
        ..malformed_text(operator, argument, actual, path)
    }
}

fn malformed_text(
    operator: OperatorName,
    argument: &Value,
    actual: Option<&Value>,
    path: &str,
) -> Miss {
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
            broken: false,
        },
        _ => miss(path, wanted, actual),
    }
}

impl Matcher {
    /// A matcher with nothing captured.
    pub fn new() -> Self {
        Matcher::default()
    }

    /// How many pattern nodes this matcher has checked against a value:
    /// the cost of matching. Each node of a pattern meets each value at its
    /// place at most once per check (`$contains` included), so this stays
    /// polynomial in the sizes of the patterns and the values; the matcher
    /// fuzz oracle bounds it.
    pub fn steps(&self) -> u64 {
        self.steps
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
                self.trail.push(name.to_string());
                Ok(())
            }
        }
    }

    /// A point to undo bindings back to ([`Matcher::rollback`]).
    fn mark(&self) -> usize {
        self.trail.len()
    }

    /// Undo every binding made since `mark`.
    fn rollback(&mut self, mark: usize) {
        for name in self.trail.drain(mark..) {
            self.bindings.remove(&name);
        }
    }

    /// Check `pattern` against `actual` and keep no capture either way: a
    /// query's selection tries one pattern on every event this way.
    pub fn probe(&mut self, pattern: &Pattern, actual: Option<&Value>) -> Result<(), Miss> {
        let mark = self.mark();
        let result = self.trying(|matcher| matcher.check(pattern, actual));
        self.rollback(mark);
        result
    }

    /// Run `attempt` as a try: a miss inside it is only a `false` to the
    /// caller, so no nearest candidate is sought for it.
    fn trying<R>(&mut self, attempt: impl FnOnce(&mut Self) -> R) -> R {
        self.trying += 1;
        let result = attempt(self);
        self.trying -= 1;
        result
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
        self.trying(|matcher| matcher.check(pattern, actual).is_ok())
    }

    /// [`Matcher::test`] on one node of a parsed pattern.
    pub fn test_node(&mut self, node: &PatternNode, actual: Option<&Value>) -> bool {
        self.trying(|matcher| matcher.check_node(node, actual, "").is_ok())
    }

    /// Check a node at `path`, keeping captures only when it matches.
    fn check_node(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        let mark = self.mark();
        let result = self.matches(node, actual, path);
        if result.is_err() {
            self.rollback(mark);
        }
        result
    }

    /// One alternative tried inside an operator: whether it matched
    /// (keeping its captures only then), or the broken miss that stops the
    /// operator whatever it would have made of a plain one.
    fn attempt(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<bool, Miss> {
        match self.trying(|matcher| matcher.check_node(node, actual, path)) {
            Ok(()) => Ok(true),
            Err(miss) if miss.broken => Err(miss),
            Err(_) => Ok(false),
        }
    }

    /// The miss of an element operator (`$some`, `$contains`, `$in_order`)
    /// whose `pattern` no element of `items` from `from` on matched, with the
    /// nearest candidate: the element that got furthest, checking the most
    /// pattern nodes before it missed (the first of equals), with where and
    /// why it misses. None is sought while the miss is only a try's `false`.
    fn missed_element(
        &mut self,
        miss: Miss,
        pattern: &PatternNode,
        items: &[Value],
        from: usize,
        path: &str,
    ) -> Miss {
        if self.trying > 0 {
            return miss;
        }
        let mut nearest: Option<(u64, String, Miss)> = None;
        for (index, item) in items.iter().enumerate().skip(from) {
            let at = format!("{path}[{index}]");
            let (mark, before) = (self.mark(), self.steps);
            let result = self.trying(|matcher| matcher.matches(pattern, Some(item), &at));
            self.rollback(mark);
            let checked = self.steps - before;
            if let Err(candidate) = result
                && nearest.as_ref().is_none_or(|(most, ..)| checked > *most)
            {
                nearest = Some((checked, at, candidate));
            }
        }
        match nearest {
            Some((_, at, nearest)) => Miss {
                actual: format!(
                    "{} (nearest: {at}, which misses at {}: expected {}, got {})",
                    miss.actual, nearest.path, nearest.expected, nearest.actual
                ),
                ..miss
            },
            None => miss,
        }
    }

    /// [`Matcher::attempt`] that keeps no capture even when it matches.
    fn attempt_unbound(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<bool, Miss> {
        let mark = self.mark();
        let result = self.attempt(node, actual, path);
        self.rollback(mark);
        result
    }

    fn matches(
        &mut self,
        node: &PatternNode,
        actual: Option<&Value>,
        path: &str,
    ) -> Result<(), Miss> {
        self.steps += 1;
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
            Operator::Not(pattern) => {
                let matched = self.attempt_unbound(pattern, actual, path)?;
                holds(!matched)
            }
            Operator::AnyOf(options) => {
                for option in options {
                    if self.attempt(option, actual, path)? {
                        return Ok(());
                    }
                }
                Err(fail())
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
                match self.contains(patterns, items, path)? {
                    Containment::Found => Ok(()),
                    Containment::Unfit(entry) => {
                        Err(self.missed_element(fail(), &patterns[entry], items, 0, path))
                    }
                    Containment::Unassigned => Err(fail()),
                }
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
                for item in items {
                    if self.attempt(pattern, Some(item), path)? {
                        return Ok(());
                    }
                }
                Err(self.missed_element(fail(), pattern, items, 0, path))
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
        let resolved = match (operator, argument) {
            // They do not read their argument.
            (OperatorName::Absent, _) => Operator::Absent,
            (OperatorName::Any, _) => Operator::Any,
            // A captured regex is compiled once per matcher, not per check.
            (OperatorName::Regex, Value::String(source)) => match self.regexes.get(source) {
                Some(regex) => Operator::Regex(regex.clone()),
                None => match Regex::new(source) {
                    Ok(regex) => {
                        self.regexes.insert(source.clone(), regex.clone());
                        Operator::Regex(regex)
                    }
                    Err(error) => {
                        // The regex crate words a syntax error over several
                        // lines, the cause last.
                        let text = error.to_string();
                        let cause = text.lines().last().unwrap_or_default();
                        let cause = cause.strip_prefix("error: ").unwrap_or(cause);
                        let wanted = format!(
                            "$regex {} (captured by `$ref` {name:?}: not a valid regex: {cause})",
                            show(Some(argument))
                        );
                        return Err(Miss {
                            broken: true,
                            ..miss(path, wanted, actual)
                        });
                    }
                },
            },
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
            let mut found = None;
            for (index, item) in items.iter().enumerate().skip(next) {
                if self.attempt(pattern, Some(item), path)? {
                    found = Some(index);
                    break;
                }
            }
            match found {
                Some(index) => next = index + 1,
                None => {
                    let wanted = format!("$in_order: {} after element {next}", shown(pattern));
                    let unmatched = miss(path, wanted, actual);
                    return Err(self.missed_element(unmatched, pattern, items, next, path));
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

    /// `$contains` over an array: each pattern matched by a distinct
    /// item, any order. Each pattern is tried once against each item, with
    /// the captures bound before the `$contains` (an entry does not see
    /// what its siblings capture); the entries are then assigned to items
    /// as a bipartite matching, and the assignment found binds the captures
    /// its entries made when they were tried (a capture two entries bind to
    /// different values fails the `$contains`). Polynomial: `patterns ×
    /// items` attempts, then augmenting paths over the pairs that fit.
    fn contains(
        &mut self,
        patterns: &[PatternNode],
        items: &[Value],
        path: &str,
    ) -> Result<Containment, Miss> {
        if patterns.len() > items.len() {
            return Ok(Containment::Unassigned);
        }
        // `fits[p]`: the items pattern `p` matches, each with what that
        // match would bind (taken back out of the bindings, not copied).
        let mut fits = Vec::with_capacity(patterns.len());
        for (entry, pattern) in patterns.iter().enumerate() {
            let mut row = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let mark = self.mark();
                if self.attempt(pattern, Some(item), path)? {
                    row.push((index, self.take_since(mark)));
                }
            }
            if row.is_empty() {
                return Ok(Containment::Unfit(entry));
            }
            fits.push(row);
        }
        let edges: Vec<Vec<usize>> = fits
            .iter()
            .map(|row| row.iter().map(|(index, _)| *index).collect())
            .collect();
        let Some(assignment) = perfect_matching(&edges, items.len()) else {
            return Ok(Containment::Unassigned);
        };
        for (row, index) in fits.iter_mut().zip(assignment) {
            let Some((_, bound)) = row.iter_mut().find(|(item, _)| *item == index) else {
                return Ok(Containment::Unassigned);
            };
            for (name, value) in std::mem::take(bound) {
                if self.bind(&name, value, path).is_err() {
                    return Ok(Containment::Unassigned);
                }
            }
        }
        Ok(Containment::Found)
    }

    /// The bindings made since `mark`, removed and handed back in the
    /// order they were made.
    fn take_since(&mut self, mark: usize) -> Vec<(String, Value)> {
        let names: Vec<String> = self.trail.drain(mark..).collect();
        names
            .into_iter()
            .filter_map(|name| {
                let value = self.bindings.remove(&name)?;
                Some((name, value))
            })
            .collect()
    }
}

/// How a `$contains` over an array came out.
enum Containment {
    /// Every entry has its own element.
    Found,
    /// This entry fits no element at all.
    Unfit(usize),
    /// Each entry fits some element, but no assignment gives each its own
    /// (or there are more entries than elements, or their captures clash).
    Unassigned,
}

/// A distinct item for every pattern, where `fits[p]` lists the items
/// pattern `p` may take: the item of each pattern, or `None` when no such
/// assignment exists. Kuhn's augmenting paths, each found breadth first
/// (no recursion, so no depth limit): `O(patterns × edges)`.
fn perfect_matching(fits: &[Vec<usize>], items: usize) -> Option<Vec<usize>> {
    let mut owner: Vec<Option<usize>> = vec![None; items];
    let mut taken: Vec<Option<usize>> = vec![None; fits.len()];
    for start in 0..fits.len() {
        // `came_from[item]`: the pattern whose edge reached it on this search.
        let mut came_from: Vec<Option<usize>> = vec![None; items];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut free = None;
        'search: while let Some(pattern) = queue.pop_front() {
            for &item in &fits[pattern] {
                if came_from[item].is_some() {
                    continue;
                }
                came_from[item] = Some(pattern);
                match owner[item] {
                    None => {
                        free = Some(item);
                        break 'search;
                    }
                    Some(next) => queue.push_back(next),
                }
            }
        }
        // Flip the path back from the free item to `start`.
        let mut item = free?;
        loop {
            let pattern = came_from[item].expect("every item on the path was reached");
            let previous = taken[pattern];
            owner[item] = Some(pattern);
            taken[pattern] = Some(item);
            match previous {
                Some(previous) if pattern != start => item = previous,
                _ => break,
            }
        }
    }
    taken.into_iter().collect()
}

#[cfg(test)]
mod tests;
