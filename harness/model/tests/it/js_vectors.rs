//! Checks `dshc_model::js` against answers Node 20 computed
//! (`js_vectors.json`, written by `js_vectors.mjs`). Each JavaScript rule the
//! contract leaks has its vectors here, so a port of a rule that drifts from
//! JavaScript fails with the input that shows it.

use std::cmp::Ordering;

use dshc_model::js;
use serde_json::Value;

fn vectors() -> Value {
    serde_json::from_str(include_str!("js_vectors.json")).expect("the committed vectors are JSON")
}

fn rows<'a>(vectors: &'a Value, name: &str) -> &'a [Value] {
    vectors[name]
        .as_array()
        .unwrap_or_else(|| panic!("vectors have `{name}`"))
}

fn number(text: &Value) -> f64 {
    text.as_str()
        .expect("numbers are given as text")
        .parse()
        .expect("Rust parses every number spelling used")
}

#[test]
fn numbers_print_and_serialize_as_in_javascript() {
    let vectors = vectors();
    for row in rows(&vectors, "number_to_string") {
        let x = number(&row[0]);
        assert_eq!(js::number_to_string(x), row[1], "String({})", row[0]);
    }
    for row in rows(&vectors, "number_json") {
        let x = number(&row[0]);
        assert_eq!(
            js::stringify(&js::number_json(x)),
            row[1].as_str().unwrap(),
            "JSON.stringify({})",
            row[0]
        );
    }
    for row in rows(&vectors, "is_safe_integer") {
        let x = number(&row[0]);
        assert_eq!(
            Value::Bool(js::is_safe_integer(x)),
            row[1],
            "isSafeInteger({})",
            row[0]
        );
    }
}

#[test]
fn strings_convert_to_numbers_as_in_javascript() {
    let vectors = vectors();
    for row in rows(&vectors, "string_to_number") {
        let text = row[0].as_str().unwrap();
        assert_eq!(
            js::number_to_string(js::string_to_number(text)),
            row[1],
            "Number({text:?})"
        );
    }
}

#[test]
fn values_stringify_and_test_truthy_as_in_javascript() {
    let vectors = vectors();
    for row in rows(&vectors, "to_js_string") {
        assert_eq!(js::to_js_string(&row[0]), row[1], "String({})", row[0]);
    }
    for row in rows(&vectors, "truthy") {
        assert_eq!(
            Value::Bool(js::truthy(&row[0])),
            row[1],
            "Boolean({})",
            row[0]
        );
    }
}

#[test]
fn strings_quote_as_json_stringify_does() {
    let vectors = vectors();
    for row in rows(&vectors, "quote") {
        let text = row[0].as_str().unwrap();
        assert_eq!(js::quote(text), row[1], "JSON.stringify({text:?})");
    }
}

#[test]
fn values_stringify_as_json_stringify_does() {
    let vectors = vectors();
    for row in rows(&vectors, "stringify") {
        assert_eq!(js::stringify(&row[0]), row[1], "JSON.stringify({})", row[0]);
    }
}

#[test]
fn own_keys_order_as_object_keys_does() {
    let vectors = vectors();
    for row in rows(&vectors, "key_order") {
        let keys: Vec<&str> = row[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        let expected: Vec<&str> = row[1]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(js::js_key_order(keys.iter().copied()), expected, "{keys:?}");
    }
}

#[test]
fn strings_compare_and_slice_by_utf16_units() {
    let vectors = vectors();
    for row in rows(&vectors, "cmp_utf16") {
        let (a, b) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
        let expected = match row[2].as_i64().unwrap() {
            -1 => Ordering::Less,
            0 => Ordering::Equal,
            _ => Ordering::Greater,
        };
        assert_eq!(js::cmp_utf16(a, b), expected, "{a:?} < {b:?}");
    }
    for row in rows(&vectors, "slice_utf16") {
        let text = row[0].as_str().unwrap();
        let (start, end) = (row[1].as_u64().unwrap(), row[2].as_u64().unwrap());
        assert_eq!(
            js::slice_utf16(text, start as usize, end as usize),
            row[3],
            "{text:?}.slice({start}, {end})"
        );
    }
}

/// A vector that lists code points, as numbers.
fn code_points(vectors: &Value, name: &str) -> Vec<u32> {
    rows(vectors, name)
        .iter()
        .map(|cp| cp.as_u64().unwrap() as u32)
        .collect()
}

/// The code points of the Basic Multilingual Plane (surrogates aside, as
/// the Node side skips them) for which `holds` is true.
fn bmp_code_points(holds: impl Fn(char) -> bool) -> Vec<u32> {
    (0..=0xFFFF)
        .filter_map(char::from_u32)
        .filter(|c| holds(*c))
        .map(u32::from)
        .collect()
}

#[test]
fn the_whitespace_set_is_javascripts_backslash_s() {
    let vectors = vectors();
    assert_eq!(
        bmp_code_points(js::is_js_space),
        code_points(&vectors, "js_space_code_points")
    );
}

#[test]
fn line_terminators_are_what_a_javascript_dot_refuses() {
    let vectors = vectors();
    let expected = code_points(&vectors, "line_terminator_code_points");
    assert_eq!(bmp_code_points(js::is_line_terminator), expected);
    let units: Vec<u32> = (0..=0xFFFF_u16)
        .filter(|u| js::is_line_terminator_unit(*u))
        .map(u32::from)
        .collect();
    assert_eq!(units, expected);
}

#[test]
fn iterating_a_non_iterable_throws_v8s_text() {
    let vectors = vectors();
    for row in rows(&vectors, "iterate_errors") {
        let error = js::iterate(Some(&row[0])).expect_err("not iterable");
        assert_eq!(error.name, "TypeError");
        assert_eq!(
            error.message,
            row[1].as_str().unwrap(),
            "for (x of {})",
            row[0]
        );
    }
}

#[test]
fn dates_parse_as_in_javascript() {
    let vectors = vectors();
    for row in rows(&vectors, "date_parse") {
        let text = row[0].as_str().unwrap();
        let expected = number(&row[1]);
        let parsed = js::date_parse(text);
        assert!(
            parsed == expected || (parsed.is_nan() && expected.is_nan()),
            "Date.parse({text:?}): {parsed}, not {expected}"
        );
    }
}
