//! Provider-wording classifiers (`isQuotaExceededError`,
//! `isContextWindowExceededError`), as a small matcher over UTF-16 units with
//! the semantics of a non-unicode, case-insensitive JavaScript regex.
//!
//! Hand-written because it must agree with V8 on every input: the patterns
//! run over UTF-16 units, `\b` looks at ASCII word characters only, and `i`
//! folds ASCII only, where a Rust regex engine works on code points. The
//! patterns are built once, each with the literals one of which every match
//! contains: a text with none of them is refused without running the
//! pattern (most details the simulator's failures carry match no pattern).

use std::sync::LazyLock;

use dshc_model::js::{is_js_space, is_line_terminator_unit};

/// A character class.
#[derive(Clone, Copy)]
pub enum Class {
    /// `\s`.
    Space,
    /// `[\s_-]`.
    SpaceUnderscoreDash,
    /// `[^a-z0-9]` under `i`.
    NotAlnum,
}

/// A pattern node; a pattern is a sequence of nodes.
pub enum Node {
    /// A literal, ASCII case-insensitive.
    Lit(&'static str),
    /// One character of a class.
    One(Class),
    /// One or more characters of a class.
    Plus(Class),
    /// `.{0,n}`.
    Dots(usize),
    /// `\b`.
    Boundary,
    /// `^`.
    Start,
    /// `$`.
    End,
    /// Alternatives, each a sequence.
    Alt(Vec<Vec<Node>>),
    /// An optional sequence.
    Opt(Vec<Node>),
}

/// Alternatives of literals.
pub fn words(options: &[&'static str]) -> Node {
    Node::Alt(options.iter().map(|w| vec![Node::Lit(w)]).collect())
}

/// `\s` on one UTF-16 unit: the set is all in the BMP, and a lone
/// surrogate is never a space.
fn is_space(unit: u16) -> bool {
    char::from_u32(u32::from(unit)).is_some_and(is_js_space)
}

fn is_alnum(unit: u16) -> bool {
    u8::try_from(unit).is_ok_and(|b| b.is_ascii_alphanumeric())
}

fn is_word(text: &[u16], at: Option<usize>) -> bool {
    at.and_then(|i| text.get(i))
        .is_some_and(|&u| is_alnum(u) || u == u16::from(b'_'))
}

fn in_class(class: Class, unit: u16) -> bool {
    match class {
        Class::Space => is_space(unit),
        Class::SpaceUnderscoreDash => {
            is_space(unit) || unit == u16::from(b'_') || unit == u16::from(b'-')
        }
        Class::NotAlnum => !is_alnum(unit),
    }
}

fn lit_at(text: &[u16], at: usize, literal: &str) -> bool {
    let bytes = literal.as_bytes();
    text.len() >= at + bytes.len()
        && bytes
            .iter()
            .zip(&text[at..])
            .all(|(&b, &unit)| u8::try_from(unit).is_ok_and(|u| u.eq_ignore_ascii_case(&b)))
}

/// The positions `node` can end at, matched from any position of `from`.
/// Every node maps each start on its own and the results are united, so a
/// nested sequence (`Alt`, `Opt`) runs once over the whole set, not once a
/// start.
fn step(node: &Node, text: &[u16], from: &[usize]) -> Vec<usize> {
    let mut out = Vec::new();
    match node {
        Node::Alt(options) => {
            for option in options {
                out.extend(sequence(option, text, from));
            }
        }
        Node::Opt(inner) => {
            out.extend_from_slice(from);
            out.extend(sequence(inner, text, from));
        }
        _ => {
            for &at in from {
                step_from(node, text, at, &mut out);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The ends of a node that is not a nested sequence, from one start.
fn step_from(node: &Node, text: &[u16], at: usize, out: &mut Vec<usize>) {
    match node {
        Node::Lit(literal) => {
            if lit_at(text, at, literal) {
                out.push(at + literal.len());
            }
        }
        Node::One(class) => {
            if text.get(at).is_some_and(|&u| in_class(*class, u)) {
                out.push(at + 1);
            }
        }
        Node::Plus(class) => {
            let mut end = at;
            while text.get(end).is_some_and(|&u| in_class(*class, u)) {
                end += 1;
                out.push(end);
            }
        }
        Node::Dots(max) => {
            out.push(at);
            let mut end = at;
            while end - at < *max && text.get(end).is_some_and(|&u| !is_line_terminator_unit(u)) {
                end += 1;
                out.push(end);
            }
        }
        Node::Boundary => {
            if is_word(text, at.checked_sub(1)) != is_word(text, Some(at)) {
                out.push(at);
            }
        }
        Node::Start => {
            if at == 0 {
                out.push(at);
            }
        }
        Node::End => {
            if at == text.len() {
                out.push(at);
            }
        }
        Node::Alt(_) | Node::Opt(_) => {
            unreachable!("step runs nested sequences over the whole set")
        }
    }
}

fn sequence(nodes: &[Node], text: &[u16], from: &[usize]) -> Vec<usize> {
    let mut positions = from.to_vec();
    for node in nodes {
        if positions.is_empty() {
            break;
        }
        positions = step(node, text, &positions);
    }
    positions
}

/// `RegExp.prototype.test`: a match starting anywhere. Every start runs at
/// once, as one set of positions: some start matches exactly when the set of
/// ends reached from all of them is not empty.
fn test(pattern: &[Node], units: &[u16]) -> bool {
    let starts: Vec<usize> = (0..=units.len()).collect();
    !sequence(pattern, units, &starts).is_empty()
}

/// Literals one of which every match of `nodes` contains, if the sequence
/// has such a node: a literal, or alternatives that each have such
/// literals. `None` when none does (only optional parts, classes, anchors).
fn required_literals(nodes: &[Node]) -> Option<Vec<&'static str>> {
    nodes.iter().find_map(|node| match node {
        Node::Lit(literal) => Some(vec![*literal]),
        Node::Alt(options) => options
            .iter()
            .map(|option| required_literals(option))
            .collect::<Option<Vec<_>>>()
            .map(|sets| sets.concat()),
        _ => None,
    })
}

/// Whether `text` contains `literal` (ASCII), ASCII case-insensitively. A
/// literal is ASCII, and every byte of a non-ASCII character's UTF-8 is
/// not, as every UTF-16 unit of it is not: a match in the UTF-8 is a match
/// in the units the pattern runs over, and the other way round.
fn contains_ascii_ignoring_case(text: &str, literal: &str) -> bool {
    text.as_bytes()
        .windows(literal.len())
        .any(|window| window.eq_ignore_ascii_case(literal.as_bytes()))
}

/// A pattern with its prefilter.
struct Compiled {
    nodes: Vec<Node>,
    required: Option<Vec<&'static str>>,
}

fn compile(patterns: Vec<Vec<Node>>) -> Vec<Compiled> {
    patterns
        .into_iter()
        .map(|nodes| Compiled {
            required: required_literals(&nodes),
            nodes,
        })
        .collect()
}

/// Whether any of `patterns` matches `text`. A pattern runs only if one of
/// its literals is in the text, and the text is turned into UTF-16 once,
/// for the first pattern that runs.
fn any_matches(patterns: &[Compiled], text: &str) -> bool {
    let mut units: Option<Vec<u16>> = None;
    patterns.iter().any(|pattern| {
        let possible = pattern.required.as_ref().is_none_or(|literals| {
            literals
                .iter()
                .any(|literal| contains_ascii_ignoring_case(text, literal))
        });
        possible
            && test(
                &pattern.nodes,
                units.get_or_insert_with(|| text.encode_utf16().collect()),
            )
    })
}

fn quota_patterns() -> Vec<Vec<Node>> {
    use Class::SpaceUnderscoreDash as Sud;
    use Node::*;
    use words;
    vec![
        // \binsufficient[\s_-]+(?:quota|balance|credits?)\b
        vec![
            Boundary,
            Lit("insufficient"),
            Plus(Sud),
            words(&["quota", "balance", "credits", "credit"]),
            Boundary,
        ],
        // \b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b
        vec![
            Boundary,
            Alt(vec![
                vec![Lit("quota")],
                vec![Lit("usage"), Plus(Sud), Lit("limit")],
            ]),
            Plus(Sud),
            words(&["exceeded", "exhausted", "reached"]),
            Boundary,
        ],
        // \bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b
        vec![
            Boundary,
            Lit("exceed"),
            Opt(vec![words(&["ed", "s"])]),
            Plus(Sud),
            Opt(vec![words(&["your", "the"]), Plus(Sud)]),
            Opt(vec![Lit("current"), Plus(Sud)]),
            Lit("quota"),
            Boundary,
        ],
        // \b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b
        vec![
            Boundary,
            words(&["balance", "credits", "credit"]),
            Plus(Sud),
            words(&["exhausted", "depleted"]),
            Boundary,
        ],
        // \bout[\s_-]+of[\s_-]+(?:credits?|budget)\b
        vec![
            Boundary,
            Lit("out"),
            Plus(Sud),
            Lit("of"),
            Plus(Sud),
            words(&["credits", "credit", "budget"]),
            Boundary,
        ],
    ]
}

fn context_patterns() -> Vec<Vec<Node>> {
    use Class::{NotAlnum, Space, SpaceUnderscoreDash as Sud};
    use Node::*;
    use words;
    let model_possessive = || Opt(vec![Lit("model"), Opt(vec![Lit("'s")]), Plus(Space)]);
    vec![
        // (?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-]
        // (?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])
        vec![
            Alt(vec![vec![Start], vec![One(NotAlnum)]]),
            Lit("context"),
            One(Sud),
            words(&["length", "window"]),
            One(Sud),
            Alt(vec![
                vec![Lit("exceed"), Opt(vec![words(&["ed", "s"])])],
                vec![Lit("overflow"), Opt(vec![Lit("ed")])],
                vec![Lit("limit"), One(Sud), Lit("exceeded")],
            ]),
            Alt(vec![vec![End], vec![One(NotAlnum)]]),
        ],
        // \b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b
        vec![
            Boundary,
            words(&["maximum", "max"]),
            Opt(vec![Plus(Space), words(&["allowed", "supported"])]),
            Plus(Space),
            Lit("context"),
            Plus(Space),
            words(&["length", "window"]),
            Boundary,
        ],
        // \b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+
        // (?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?\b
        vec![
            Boundary,
            words(&["request", "prompt", "input", "messages", "message"]),
            Plus(Space),
            Opt(vec![words(&["is", "are"]), Plus(Space)]),
            Lit("too"),
            Plus(Space),
            words(&["large", "long"]),
            Plus(Space),
            Lit("for"),
            Plus(Space),
            Opt(vec![words(&["this", "the"]), Plus(Space)]),
            model_possessive(),
            Lit("context"),
            Opt(vec![Plus(Space), Lit("window")]),
            Boundary,
        ],
        // \b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b
        vec![
            Boundary,
            words(&["input", "prompt", "request"]),
            Plus(Space),
            Opt(vec![Lit("is"), Plus(Space)]),
            Lit("too"),
            Plus(Space),
            words(&["long", "large"]),
            Plus(Space),
            Lit("for"),
            Plus(Space),
            words(&["this", "the"]),
            Plus(Space),
            Lit("model"),
            Boundary,
        ],
        // \b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|
        // is\s+larger\s+than)\b.{0,40}\b(?:the\s+)?(?:model(?:'s)?\s+)?context
        // (?:\s+(?:length|window))?\b
        vec![
            Boundary,
            words(&["input", "prompt", "request", "messages", "message"]),
            Boundary,
            Dots(40),
            Boundary,
            Alt(vec![
                vec![Lit("exceed"), Opt(vec![words(&["s", "ed"])])],
                vec![Lit("overflow"), Opt(vec![Lit("s")])],
                vec![
                    Lit("is"),
                    Plus(Space),
                    Lit("larger"),
                    Plus(Space),
                    Lit("than"),
                ],
            ]),
            Boundary,
            Dots(40),
            Boundary,
            Opt(vec![Lit("the"), Plus(Space)]),
            model_possessive(),
            Lit("context"),
            Opt(vec![Plus(Space), words(&["length", "window"])]),
            Boundary,
        ],
    ]
}

/// `isQuotaExceededError`: terminal quota, balance, credit, budget or
/// usage-limit wording (as opposed to a transient rate limit).
pub fn is_quota_exceeded_error(detail: &str) -> bool {
    static PATTERNS: LazyLock<Vec<Compiled>> = LazyLock::new(|| compile(quota_patterns()));
    any_matches(&PATTERNS, detail)
}

/// `isContextWindowExceededError`: wording that names the model's context
/// bound as exceeded.
pub fn is_context_window_exceeded_error(detail: &str) -> bool {
    static PATTERNS: LazyLock<Vec<Compiled>> = LazyLock::new(|| compile(context_patterns()));
    any_matches(&PATTERNS, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every pattern run over the whole text, with no prefilter.
    fn unfiltered(patterns: &[Vec<Node>], text: &str) -> bool {
        let units: Vec<u16> = text.encode_utf16().collect();
        patterns.iter().any(|pattern| test(pattern, &units))
    }

    /// Texts of the patterns' own words, in any case, between separators
    /// that are and are not spaces, word characters or ASCII.
    fn detail() -> impl Strategy<Value = String> {
        let word = prop::sample::select(vec![
            "insufficient",
            "quota",
            "balance",
            "credits",
            "credit",
            "usage",
            "limit",
            "exceeded",
            "exhausted",
            "reached",
            "exceed",
            "exceeds",
            "your",
            "the",
            "current",
            "depleted",
            "out",
            "of",
            "budget",
            "context",
            "length",
            "window",
            "overflow",
            "overflows",
            "maximum",
            "max",
            "allowed",
            "supported",
            "request",
            "prompt",
            "input",
            "messages",
            "message",
            "is",
            "are",
            "too",
            "large",
            "long",
            "for",
            "this",
            "model",
            "model's",
            "larger",
            "than",
            "ed",
            "s",
            // Whole phrases, so that many texts match.
            "insufficient quota",
            "usage_limit-reached",
            "exceeded your current quota",
            "out of credits",
            "context_length_exceeded",
            "maximum context window",
            "prompt is too long for the model's context",
            "input exceeds the context length",
        ]);
        let separator = prop::sample::select(vec![
            " ", "_", "-", "  ", "\t", "\n", "\u{a0}", "\u{2028}", "x", "é", "😀", "", ".",
        ]);
        let case = any::<bool>();
        prop::collection::vec((word, case, separator), 0..8).prop_map(|parts| {
            parts
                .into_iter()
                .map(|(word, upper, separator)| {
                    let word = if upper {
                        word.to_ascii_uppercase()
                    } else {
                        word.to_owned()
                    };
                    word + separator
                })
                .collect()
        })
    }

    proptest! {
        /// The prefilter never changes an answer: a text it refuses has no
        /// match.
        #[test]
        fn the_prefilter_refuses_only_texts_no_pattern_matches(text in detail()) {
            prop_assert_eq!(is_quota_exceeded_error(&text), unfiltered(&quota_patterns(), &text));
            prop_assert_eq!(
                is_context_window_exceeded_error(&text),
                unfiltered(&context_patterns(), &text)
            );
        }
    }

    #[test]
    fn every_pattern_has_a_prefilter() {
        for pattern in quota_patterns().iter().chain(&context_patterns()) {
            assert!(required_literals(pattern).is_some_and(|literals| !literals.is_empty()));
        }
    }

    #[test]
    fn wording_classifiers() {
        for detail in [
            "context_length_exceeded",
            "Context window exceeded",
            "error: context-length-overflow.",
            "context_window_limit_exceeded",
            "maximum context length is 8192 tokens",
            "max supported context window",
            "Request too large for the model's context window",
            "messages are too long for this context",
            "input is too long for this model",
            "Your prompt of 9000 tokens exceeds the model's context length",
            "the input overflows the context",
        ] {
            assert!(is_context_window_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "",
            "context length",
            "xcontext_length_exceeded",
            "context_length_exceededx",
            "the request exceeds the maximum allowed size",
            "input is too long",
            "maximumcontext length",
            "prompt\nexceeds the context",
        ] {
            assert!(!is_context_window_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "insufficient_quota",
            "Insufficient Balance",
            "insufficient credits",
            "quota exceeded",
            "usage limit reached",
            "You exceeded your current quota",
            "exceeds the quota",
            "credits depleted",
            "balance exhausted",
            "out of budget",
            "Out-of-credits",
        ] {
            assert!(is_quota_exceeded_error(detail), "{detail}");
        }
        for detail in [
            "rate limit reached",
            "insufficientquota",
            "quotas exceeded",
            "outof credits",
            "too many requests",
        ] {
            assert!(!is_quota_exceeded_error(detail), "{detail}");
        }
    }
}
