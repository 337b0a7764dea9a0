//! Canonical tool order: `toolOrder`, the `<unlisted-tools>` marker and the
//! default code-unit sort (spec 04).
//!
//! Tool order is part of the request header and of the provider's cache
//! prefix, so it must be identical on every machine and its errors must match
//! upstream's texts.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use super::assembled::ToolSchema;
use super::js::{JsError, cmp_utf16};

/// The reserved `toolOrder` entry where unlisted tools are inserted.
pub const TOOL_ORDER_REST: &str = "<unlisted-tools>";

/// Load-time validation of a configured `toolOrder` (04 T1–T3).
pub fn validate_tool_order(tool_order: Option<&[String]>) -> Result<(), JsError> {
    let Some(tool_order) = tool_order else {
        return Ok(());
    };
    let mut seen = BTreeSet::new();
    for name in tool_order {
        if !seen.insert(name.as_str()) {
            return Err(JsError::error(format!(
                "toolOrder lists \"{name}\" more than once"
            )));
        }
    }
    if !seen.contains(TOOL_ORDER_REST) {
        return Err(JsError::error(format!(
            "toolOrder must contain the \"{TOOL_ORDER_REST}\" rest entry (where unlisted tools are inserted)"
        )));
    }
    Ok(())
}

/// Names a tool provider declared as known (04 T9), in first-seen order.
#[derive(Clone, Debug, Default)]
pub struct KnownNames {
    names: Vec<String>,
    members: BTreeSet<String>,
}

impl KnownNames {
    /// Add a name (a set: repeats are ignored).
    pub fn insert(&mut self, name: &str) {
        if self.members.insert(name.to_string()) {
            self.names.push(name.to_string());
        }
    }

    /// Whether the name is known.
    pub fn contains(&self, name: &str) -> bool {
        self.members.contains(name)
    }

    /// All names sorted by UTF-16 code units (JavaScript's default sort).
    pub fn sorted(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        names.sort_by(|a, b| cmp_utf16(a, b));
        names
    }
}

/// A stable sort by name. Providers often list their tools in order
/// already, and a sorted list is left as it is: checking costs a pass of
/// comparisons, where the sort would also set up a scratch buffer.
fn sort_by_name<T: Borrow<ToolSchema>>(tools: &mut [T]) {
    let order = |a: &T, b: &T| cmp_utf16(&a.borrow().name, &b.borrow().name);
    if tools.is_sorted_by(|a, b| order(a, b).is_le()) {
        return;
    }
    tools.sort_by(order);
}

/// Order the collected schemas (04 T5–T8). Stable: equal names keep provider
/// order, and nothing is deduplicated.
pub fn order_tools<T: Borrow<ToolSchema>>(
    mut tools: Vec<T>,
    tool_order: Option<&[String]>,
    known_names: &KnownNames,
) -> Result<Vec<T>, JsError> {
    if tools
        .iter()
        .any(|tool| tool.borrow().name == TOOL_ORDER_REST)
    {
        return Err(JsError::error(format!(
            "tool provider returned reserved tool name \"{TOOL_ORDER_REST}\" (reserved for toolOrder's rest entry)"
        )));
    }
    let Some(tool_order) = tool_order else {
        sort_by_name(&mut tools);
        return Ok(tools);
    };
    let unknown: Vec<&String> = tool_order
        .iter()
        .filter(|name| *name != TOOL_ORDER_REST && !known_names.contains(name))
        .collect();
    if !unknown.is_empty() {
        let plural = if unknown.len() > 1 { "s" } else { "" };
        let listed: Vec<String> = unknown.iter().map(|name| format!("\"{name}\"")).collect();
        let known = known_names.sorted().join(", ");
        let known = if known.is_empty() {
            "(none)".to_string()
        } else {
            known
        };
        return Err(JsError::error(format!(
            "toolOrder lists unregistered tool{plural} {}; known tools: {known}",
            listed.join(", ")
        )));
    }
    // One bucket per toolOrder entry; the marker's bucket collects the rest.
    // Tools move into buckets in provider order, so nothing is copied.
    let slot: std::collections::BTreeMap<&str, usize> = tool_order
        .iter()
        .enumerate()
        .map(|(index, name)| (name.as_str(), index))
        .collect();
    let rest_slot = slot[TOOL_ORDER_REST];
    let mut buckets: Vec<Vec<T>> = (0..tool_order.len()).map(|_| Vec::new()).collect();
    let total = tools.len();
    for tool in tools {
        let index = slot
            .get(tool.borrow().name.as_str())
            .copied()
            .unwrap_or(rest_slot);
        buckets[index].push(tool);
    }
    sort_by_name(&mut buckets[rest_slot]);
    let mut ordered = Vec::with_capacity(total);
    for bucket in buckets {
        ordered.extend(bucket);
    }
    Ok(ordered)
}
