//! The matchers' unit tests: each rule of `docs/matching.md`, and the cost
//! bounds (polynomial `$contains`, captures never copied, a regex compiled
//! once).

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

/// `miss` ends by naming its nearest candidate as `nearest`.
fn names_nearest(miss: &Miss, nearest: &str) {
    assert!(
        miss.actual.ends_with(&format!("(nearest: {nearest})")),
        "{}",
        miss.actual
    );
}

#[test]
fn an_element_operator_that_finds_nothing_names_its_nearest_candidate() {
    let list = json!([{"t": "a"}, {"t": "b", "d": {"x": 1}}, {"t": "b", "d": {"x": 2, "y": 3}}]);
    // The element that matched most before it failed is named, with its miss.
    let miss = fails(
        json!({"$some": {"t": "b", "d": {"x": 2, "y": 4}}}),
        list.clone(),
    );
    assert_eq!(miss.path, "");
    names_nearest(&miss, "[2], which misses at [2].d.y: expected 4, got 3");
    // Of equally near ones, the first.
    let miss = fails(json!({"$some": {"t": "z"}}), list.clone());
    names_nearest(&miss, "[0], which misses at [0].t: expected z, got a");
    // `$contains`: the entry that fits no element at all.
    let miss = fails(
        json!({"$contains": [{"t": "a"}, {"d": {"x": 5}}]}),
        list.clone(),
    );
    names_nearest(&miss, "[1], which misses at [1].d.x: expected 5, got 1");
    // Entries that each fit, but not all at once, have no single culprit.
    let miss = fails(json!({"$contains": [{"t": "a"}, {"t": "a"}]}), list.clone());
    assert!(!miss.actual.contains("nearest"), "{}", miss.actual);
    // `$in_order`: only the elements after the last match are candidates.
    let miss = fails(
        json!({"$in_order": [{"d": {"y": 3}}, {"t": "a"}]}),
        list.clone(),
    );
    assert_eq!(miss.actual, dshc_model::js::stringify(&list));
    let miss = fails(
        json!({"$in_order": [{"t": "b"}, {"d": {"x": 9}}]}),
        list.clone(),
    );
    names_nearest(&miss, "[2], which misses at [2].d.x: expected 9, got 2");
    // Under a combinator the miss is only a `false`: nothing is sought.
    holds(json!({"$not": {"$some": {"t": "z"}}}), list.clone());
    let miss = fails(json!({"$any_of": [{"$some": {"t": "z"}}]}), list);
    assert!(!miss.actual.contains("nearest"), "{}", miss.actual);
}

#[test]
fn a_mismatch_shows_long_values_in_full() {
    let long: Vec<u32> = (0..1_000).collect();
    let miss = fails(json!({"list": {"$exact": []}}), json!({"list": long}));
    assert_eq!(miss.path, ".list");
    assert_eq!(miss.actual, dshc_model::js::stringify(&json!(long)));
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

/// A `$contains` of `n` entries where each of the first `n - 1` fits
/// any of `n - 1` elements and the last fits them too, over `n`
/// elements one of which fits nothing: no assignment exists, and
/// trying every partial one is `(n-1)!` attempts.
fn hopeless_contains(n: usize) -> (Value, Value) {
    let entries: Vec<Value> = (0..n).map(|_| json!({"$type": "number"})).collect();
    let mut items: Vec<Value> = (0..n - 1).map(|i| json!(i)).collect();
    items.push(json!("not a number"));
    (json!({"$contains": entries}), Value::Array(items))
}

#[test]
fn contains_is_a_bipartite_matching_not_a_search_of_assignments() {
    let (pattern, items) = hopeless_contains(40);
    let mut matcher = Matcher::new();
    assert!(matcher.check(&Pattern::new(pattern), Some(&items)).is_err());
    // One attempt per (entry, element) pair, plus the node itself.
    assert!(matcher.steps() <= 40 * 40 + 1, "{} steps", matcher.steps());
    // A greedy first fit would give entry 0 the element 1; a matching
    // moves it to 2 so that the literal entry gets its element.
    holds(
        json!({"$contains": [{"$type": "number"}, 1]}),
        json!([1, 2]),
    );
    holds(
        json!({"$contains": [{"$gt": 0}, {"$gt": 1}, {"$gt": 2}]}),
        json!([3, 2, 1]),
    );
    fails(
        json!({"$contains": [{"$gt": 0}, {"$gt": 2}, {"$gt": 2}]}),
        json!([3, 2, 1]),
    );
}

#[test]
fn nested_contains_costs_one_attempt_per_pair_at_every_depth() {
    // 40 levels, each capturing: retrying the chosen entry to bind its
    // captures would double the cost at every level.
    let mut pattern = json!({"$capture": "leaf"});
    let mut value = json!(0);
    for depth in 0..40 {
        pattern = json!({"$contains": [pattern], "$capture": format!("level{depth}")});
        value = json!([value]);
    }
    let mut matcher = Matcher::new();
    assert!(matcher.check(&Pattern::new(pattern), Some(&value)).is_ok());
    assert_eq!(matcher.captured("leaf"), Some(&json!(0)));
    assert!(matcher.captured("level39").is_some());
    assert!(matcher.steps() <= 2 * 41, "{} steps", matcher.steps());
}

#[test]
fn contains_binds_the_captures_of_the_assignment_it_found() {
    let mut matcher = Matcher::new();
    let pattern = Pattern::new(json!({"$contains": [
        {"t": "b", "id": {"$capture": "b"}},
        {"t": "a", "id": {"$capture": "a"}},
    ]}));
    let list = json!([{"t": "a", "id": 1}, {"t": "b", "id": 2}, {"t": "c", "id": 3}]);
    assert!(matcher.check(&pattern, Some(&list)).is_ok());
    assert_eq!(
        (matcher.captured("a"), matcher.captured("b")),
        (Some(&json!(1)), Some(&json!(2)))
    );
    // Two entries binding one name must find equal values.
    let twice = json!({"$contains": [{"$capture": "x"}, {"$capture": "x"}]});
    fails(twice.clone(), json!([1, 2]));
    holds(twice, json!([1, 1]));
    // A failed `$contains` binds nothing.
    let mut matcher = Matcher::new();
    let pattern = Pattern::new(json!({"$contains": [{"$capture": "y"}, 5]}));
    assert!(matcher.check(&pattern, Some(&json!([1, 2]))).is_err());
    assert_eq!(matcher.captured("y"), None);
}

#[test]
fn checks_and_probes_do_not_copy_the_captures() {
    // A large captured value and many checks: undoing a check through
    // the trail costs the names it bound, never a copy of the bindings.
    let mut matcher = Matcher::new();
    let big = Value::Array((0..100_000).map(Value::from).collect());
    matcher.bind("big", big, "").expect("bound");
    let pattern = Pattern::new(json!({"a": {"b": {"c": {"$capture": "c"}}}, "d": 1}));
    #[expect(
        clippy::disallowed_methods,
        reason = "the bound under test is the cost of a check in real time"
    )]
    let started = std::time::Instant::now();
    for index in 0..20_000 {
        let event = json!({"a": {"b": {"c": index}}, "d": 2});
        assert!(matcher.probe(&pattern, Some(&event)).is_err());
        assert!(!matcher.test(&pattern, Some(&event)));
    }
    // Copying 100,000 values per node checked took minutes here.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(matcher.captured("c"), None);
    let matching = json!({"a": {"b": {"c": 7}}, "d": 1});
    assert!(matcher.probe(&pattern, Some(&matching)).is_ok());
    assert_eq!(matcher.captured("c"), None, "a probe keeps no capture");
}

#[test]
fn a_regex_is_compiled_once_not_at_every_check() {
    // Compiling this takes milliseconds; checking it 20,000 times
    // compiled each time took minutes, so the test bounds the time.
    let source = r"^(\w{1,12}\s){1,12}[[:alpha:]]{1,60}\d{1,30}$";
    let loaded = Pattern::new(json!({"$each": {"$regex": source}}));
    let captured = Pattern::new(json!({"$each": {"$regex": {"$ref": "re"}}}));
    let entries = (0..20_000).map(|i| json!(format!("entry abc{i}")));
    let entries = Value::Array(entries.collect());
    let mut matcher = Matcher::new();
    matcher.bind("re", json!(source), "").expect("bound");
    #[expect(
        clippy::disallowed_methods,
        reason = "the bound under test is the cost of a check in real time"
    )]
    let started = std::time::Instant::now();
    assert_eq!(matcher.check(&loaded, Some(&entries)), Ok(()));
    assert_eq!(matcher.check(&captured, Some(&entries)), Ok(()));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn not_does_not_invert_a_broken_expectation() {
    let mut matcher = Matcher::new();
    matcher.bind("bad", json!("("), "").expect("bound");
    matcher.bind("text", json!("x"), "").expect("bound");
    for pattern in [
        json!({"$not": {"$regex": {"$ref": "bad"}}}),
        json!({"$not": {"$gt": {"$ref": "text"}}}),
        json!({"$not": {"$any_of": [{"$regex": {"$ref": "bad"}}, "y"]}}),
        json!({"$not": {"$some": {"$regex": {"$ref": "bad"}}}}),
        json!({"$not": {"$contains": [{"$regex": {"$ref": "bad"}}]}}),
    ] {
        let miss = matcher
            .check(&Pattern::new(pattern.clone()), Some(&json!(["("])))
            .expect_err("a broken expectation is no pass");
        assert!(miss.broken, "{pattern}: {miss:?}");
    }
    let miss = matcher
        .check(
            &Pattern::new(json!({"$not": {"$regex": {"$ref": "bad"}}})),
            Some(&json!("(")),
        )
        .unwrap_err();
    assert_eq!(
        miss.expected,
        "$regex \"(\" (captured by `$ref` \"bad\": not a valid regex: unclosed group)"
    );
}
