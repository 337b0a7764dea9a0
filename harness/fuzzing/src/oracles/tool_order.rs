//! Tool-order oracle: the model's `toolOrder` validation and ordering checked
//! against an independent sort-key formulation of spec 04.
//!
//! The oracle gives every collected tool a key (the rank of its toolOrder
//! entry, then its UTF-16 name for the rest group, then its provider
//! position) and sorts once; the model expands entries one by one. They must
//! agree on the result, and both must fail exactly when the spec says.

use std::cmp::Ordering;

use arbitrary::{Arbitrary, Unstructured};

use dshc_model::ToolSchema;
use dshc_model::tool_order::{KnownNames, TOOL_ORDER_REST, order_tools, validate_tool_order};

/// Names tools are drawn from, including the marker and the code-unit traps.
const NAMES: &[&str] = &[
    "read",
    "Bash",
    "bash",
    "edit",
    "a",
    "a_b",
    "ab",
    "B",
    "grep",
    "<unlisted-tools>",
    "\u{1F600}",
    "\u{FFFF}",
    "\u{E000}x",
    "é",
];

/// One ordering problem.
#[derive(Clone, Debug)]
pub struct ToolOrderInput {
    /// Per provider: visible tool names and optional explicit known names.
    pub providers: Vec<(Vec<String>, Option<Vec<String>>)>,
    /// The configured order, if any.
    pub tool_order: Option<Vec<String>>,
}

fn names(u: &mut Unstructured<'_>, max: u32) -> arbitrary::Result<Vec<String>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=max)? {
        out.push(u.choose(NAMES)?.to_string());
    }
    Ok(out)
}

impl<'a> Arbitrary<'a> for ToolOrderInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut providers = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let visible = names(u, 4)?;
            let known = if u.ratio(1, 4)? {
                Some(names(u, 4)?)
            } else {
                None
            };
            providers.push((visible, known));
        }
        let tool_order = if u.ratio(2, 3)? {
            let mut order = names(u, 5)?;
            // Usually valid: one marker somewhere.
            if u.ratio(3, 4)? && !order.iter().any(|n| n == TOOL_ORDER_REST) {
                let at = u.int_in_range(0..=order.len())?;
                order.insert(at, TOOL_ORDER_REST.to_string());
            }
            Some(order)
        } else {
            None
        };
        Ok(ToolOrderInput {
            providers,
            tool_order,
        })
    }
}

fn utf16(name: &str) -> Vec<u16> {
    name.encode_utf16().collect()
}

/// Which rule decided an input; lets tests prove the generator reaches them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decided {
    /// Load failed: a name listed twice.
    Repeated,
    /// Load failed: no marker.
    MissingMarker,
    /// Assembly failed: a reserved name.
    Reserved,
    /// Assembly failed: unregistered listed names.
    Unregistered,
    /// Ordered successfully.
    Ordered,
}

/// Check the model on one input; panics on a violation.
pub fn check_tool_order(input: &ToolOrderInput) -> Decided {
    let tool_order = input.tool_order.as_deref();
    if let Some(decided) = check_validation(input) {
        return decided;
    }
    // Collect as assembly does; the description records the provider position.
    let mut collected = Vec::new();
    let mut known = KnownNames::default();
    let mut known_list: Vec<String> = Vec::new();
    for (visible, explicit) in &input.providers {
        for name in visible {
            collected.push(ToolSchema {
                name: name.clone(),
                description: Some(collected.len().to_string()),
                parameters: None,
            });
        }
        for name in explicit.as_ref().unwrap_or(visible) {
            known.insert(name);
            if !known_list.contains(name) {
                known_list.push(name.clone());
            }
        }
    }
    let result = order_tools(collected.clone(), tool_order, &known);
    if let Some(decided) = check_order_errors(tool_order, &collected, &known_list, &result) {
        return decided;
    }
    let ordered = result.unwrap_or_else(|e| panic!("unexpected error {e} for {input:?}"));
    let expected = oracle_order(tool_order, &collected);
    assert_eq!(ordered, expected, "order differs for {input:?}");
    Decided::Ordered
}

/// Load-time validation of the tool order: a repeated name, else a missing
/// marker, each refused with its message; `None` when the order is valid.
fn check_validation(input: &ToolOrderInput) -> Option<Decided> {
    let tool_order = input.tool_order.as_deref();
    // Load-time validation: a repeated name, else a missing marker.
    let repeated = tool_order.and_then(|order| {
        order
            .iter()
            .enumerate()
            .find(|(i, name)| order[..*i].contains(name))
            .map(|(_, n)| n.clone())
    });
    let missing_marker =
        tool_order.is_some_and(|order| !order.iter().any(|n| n == TOOL_ORDER_REST));
    let validation = validate_tool_order(tool_order);
    match (&repeated, missing_marker) {
        (Some(name), _) => {
            let error = validation.expect_err("a repeated name must fail at load");
            assert_eq!(
                error.message,
                format!("toolOrder lists \"{name}\" more than once")
            );
            return Some(Decided::Repeated);
        }
        (None, true) => {
            let error = validation.expect_err("a missing marker must fail at load");
            assert!(
                error
                    .message
                    .starts_with("toolOrder must contain the \"<unlisted-tools>\" rest entry")
            );
            return Some(Decided::MissingMarker);
        }
        (None, false) => assert!(validation.is_ok(), "valid toolOrder rejected: {input:?}"),
    }
    None
}

/// The errors ordering must raise: a reserved name from a provider, and
/// names the order lists that no provider registered.
fn check_order_errors(
    tool_order: Option<&[String]>,
    collected: &[ToolSchema],
    known_list: &[String],
    result: &Result<Vec<ToolSchema>, dshc_model::JsError>,
) -> Option<Decided> {
    if collected.iter().any(|t| t.name == TOOL_ORDER_REST) {
        let error = result.as_ref().expect_err("a reserved name must fail");
        assert!(
            error
                .message
                .starts_with("tool provider returned reserved tool name"),
            "{error}"
        );
        return Some(Decided::Reserved);
    }
    if let Some(order) = tool_order {
        let unknown: Vec<&String> = order
            .iter()
            .filter(|n| *n != TOOL_ORDER_REST && !known_list.contains(n))
            .collect();
        if !unknown.is_empty() {
            let error = result.as_ref().expect_err("unregistered names must fail");
            let mut sorted = known_list.to_vec();
            sorted.sort_by_key(|a| utf16(a));
            let quoted: Vec<String> = unknown.iter().map(|n| format!("\"{n}\"")).collect();
            let expected = format!(
                "toolOrder lists unregistered tool{} {}; known tools: {}",
                if unknown.len() > 1 { "s" } else { "" },
                quoted.join(", "),
                if sorted.is_empty() {
                    "(none)".to_string()
                } else {
                    sorted.join(", ")
                }
            );
            assert_eq!(error.message, expected);
            return Some(Decided::Unregistered);
        }
    }
    None
}

/// The oracle's order: one sort by (entry rank, rest name, provider
/// position).
fn oracle_order(tool_order: Option<&[String]>, collected: &[ToolSchema]) -> Vec<ToolSchema> {
    let rank = |name: &str| -> usize {
        match tool_order {
            None => 0,
            Some(order) => order
                .iter()
                .position(|n| n == name)
                .or_else(|| order.iter().position(|n| n == TOOL_ORDER_REST))
                .unwrap_or(usize::MAX),
        }
    };
    let in_rest = |name: &str| tool_order.is_none_or(|order| !order.iter().any(|n| n == name));
    let mut expected = collected.to_vec();
    // Descriptions are decimal positions; compare them numerically for ties.
    let position = |t: &ToolSchema| {
        t.description
            .as_deref()
            .and_then(|d| d.parse::<usize>().ok())
    };
    expected.sort_by(|a, b| {
        rank(&a.name).cmp(&rank(&b.name)).then_with(|| {
            if in_rest(&a.name) && in_rest(&b.name) {
                utf16(&a.name).cmp(&utf16(&b.name))
            } else {
                Ordering::Equal
            }
            .then_with(|| position(a).cmp(&position(b)))
        })
    });
    expected
}

/// Decode fuzzer bytes and check; the fuzz target's whole body.
pub fn check_tool_order_bytes(data: &[u8]) {
    if let Ok(input) = ToolOrderInput::arbitrary_take_rest(Unstructured::new(data)) {
        check_tool_order(&input);
    }
}
