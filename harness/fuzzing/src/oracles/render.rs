//! Render oracle: the strict renderer checked against a second, deliberately
//! simple implementation and against properties (spec 03).
//!
//! The simple renderer works on a `Vec<char>`, classifies failures instead of
//! formatting messages, and shares no code with the model. [`check_render`]
//! panics on any disagreement, so the same function serves the fuzz target,
//! the corpus replay and the seeded stable test.

use arbitrary::{Arbitrary, Unstructured};

use dshc_model::Variables;
use dshc_model::render::{EntryKind, interpolate};

/// One rendering problem: a text and the variables it is rendered with.
#[derive(Clone, Debug)]
pub struct RenderInput {
    /// The entry's text.
    pub text: String,
    /// Variables in key order; `None` is `undefined`.
    pub variables: Vec<(String, Option<String>)>,
}

/// Pieces texts are built from, biased toward the interesting characters.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "{{",
    "}}",
    "{{{",
    "}}}",
    " ",
    "a",
    "b",
    "x",
    "m",
    "model",
    "cwd",
    "_",
    "1",
    "A",
    "Model",
    "constructor",
    "__proto__",
    "\n",
    "é",
    "日本",
    "\u{1F600}",
    "\u{FFFF}",
    "-",
    ".",
    "{{model}}",
    "{{cwd}}",
    "{{a}}",
    "{{b}}",
    "{{x}}",
    "{{a_1}}",
    "{{constructor}}",
    "{{ a }}",
];

/// Variable names, valid and not.
const NAMES: &[&str] = &[
    "model",
    "cwd",
    "a",
    "b",
    "x",
    "a_1",
    "constructor",
    "__proto__",
    "Model",
    "1",
];

impl<'a> Arbitrary<'a> for RenderInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut text = String::new();
        for _ in 0..u.int_in_range(0..=24)? {
            if u.ratio(1, 8)? {
                let c: char = u.arbitrary()?;
                text.push(c);
            } else {
                text.push_str(u.choose(FRAGMENTS)?);
            }
        }
        let mut variables: Vec<(String, Option<String>)> = Vec::new();
        for _ in 0..u.int_in_range(0..=5)? {
            let name = u.choose(NAMES)?.to_string();
            let value = if u.ratio(1, 4)? {
                None
            } else {
                let mut value = String::new();
                for _ in 0..u.int_in_range(0..=4)? {
                    value.push_str(u.choose(FRAGMENTS)?);
                }
                Some(value)
            };
            match variables.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => variables.push((name, value)),
            }
        }
        Ok(RenderInput { text, variables })
    }
}

/// Why a text cannot be rendered, as the simple renderer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A `{{` at this char index opens no group although `}}` follows.
    MalformedAt(usize),
    /// A group whose name is not a valid variable name.
    MalformedName(String),
    /// A valid name that is not a variable.
    Unknown(String),
    /// A variable without a value.
    NoValue(String),
}

fn valid_name(name: &[char]) -> bool {
    match name.split_first() {
        Some((first, rest)) => {
            first.is_ascii_lowercase()
                && rest
                    .iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        }
        None => false,
    }
}

fn starts_with(chars: &[char], at: usize, pattern: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    chars.len() >= at + pattern.len() && chars[at..at + pattern.len()] == pattern[..]
}

/// The deliberately simple renderer.
pub fn simple_render(
    text: &str,
    variables: &[(String, Option<String>)],
) -> Result<String, Refusal> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !starts_with(&chars, i, "{{") {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let name_start = i + 2;
        let mut end = name_start;
        while end < chars.len() && chars[end] != '{' && chars[end] != '}' {
            end += 1;
        }
        if !starts_with(&chars, end, "}}") {
            let later_close = (name_start..chars.len()).any(|k| starts_with(&chars, k, "}}"));
            if later_close {
                return Err(Refusal::MalformedAt(i));
            }
            out.push_str("{{");
            i = name_start;
            continue;
        }
        let name: String = chars[name_start..end].iter().collect();
        if !valid_name(&chars[name_start..end]) {
            return Err(Refusal::MalformedName(name));
        }
        match variables.iter().find(|(n, _)| *n == name) {
            None => return Err(Refusal::Unknown(name)),
            Some((_, None)) => return Err(Refusal::NoValue(name)),
            Some((_, Some(value))) => out.push_str(value),
        }
        i = end + 2;
    }
    Ok(out)
}

/// Check the model's renderer on one input; panics on a violation.
pub fn check_render(input: &RenderInput) {
    let mut variables = Variables::default();
    for (name, value) in &input.variables {
        variables.set(name, value.clone());
    }
    // Variables the model dropped (`__proto__`) do not exist for the oracle either.
    let effective: Vec<(String, Option<String>)> = variables
        .entries()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.map(str::to_string)))
        .collect();
    let model = interpolate("s", Some(&input.text), &variables, EntryKind::Section);
    let simple = simple_render(&input.text, &effective);
    match (&model, &simple) {
        (Ok(rendered), Ok(expected)) => {
            assert_eq!(rendered, expected, "rendered text differs for {input:?}");
            // No rescan: success cannot depend on what defined values contain.
            let mut plain = Variables::default();
            for (name, value) in &effective {
                plain.set(name, value.as_ref().map(|_| "v".to_string()));
            }
            assert!(
                interpolate("s", Some(&input.text), &plain, EntryKind::Section).is_ok(),
                "success depends on variable values: {input:?}"
            );
            // No rescan: every substituted value appears verbatim, so a
            // text without references renders to itself.
            if !input.text.contains("{{") {
                assert_eq!(
                    rendered, &input.text,
                    "text without '{{{{' changed: {input:?}"
                );
            }
        }
        (Err(error), Err(refusal)) => {
            let message = &error.message;
            let matches = match refusal {
                Refusal::MalformedAt(at) => {
                    let snippet: String = input.text.chars().skip(*at).collect();
                    let units: Vec<u16> = snippet.encode_utf16().take(16).collect();
                    let expected = String::from_utf16_lossy(&units);
                    message.starts_with(&format!(
                        "malformed prompt variable reference at \"{expected}\u{2026}\""
                    ))
                }
                Refusal::MalformedName(name) => message.starts_with(&format!(
                    "malformed prompt variable reference \"{{{{{name}}}}}\""
                )),
                Refusal::Unknown(name) => {
                    let known: Vec<&str> = effective.iter().map(|(n, _)| n.as_str()).collect();
                    let known = if known.is_empty() {
                        "(none)".to_string()
                    } else {
                        known.join(", ")
                    };
                    *message
                        == format!(
                            "unknown prompt variable \"{{{{{name}}}}}\" in section \"s\"; registered variables: {known}"
                        )
                }
                Refusal::NoValue(name) => {
                    *message
                        == format!(
                            "prompt variable \"{{{{{name}}}}}\" has no value for this assembly (section \"s\")"
                        )
                }
            };
            assert!(
                matches,
                "model error {message:?} does not match the oracle's {refusal:?} for {input:?}"
            );
        }
        _ => panic!("model {model:?} and oracle {simple:?} disagree on success for {input:?}"),
    }
}

/// Decode fuzzer bytes and check; the fuzz target's whole body.
pub fn check_render_bytes(data: &[u8]) {
    if let Ok(input) = RenderInput::arbitrary_take_rest(Unstructured::new(data)) {
        check_render(&input);
    }
}
