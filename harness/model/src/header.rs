//! Request headers: canonical form, equality, and the config a step proposes
//! (spec 07 H2, H7, H8, H12).
//!
//! Headers are JSON values shaped as upstream logs them, so that what the
//! loop compares is exactly what a log reader folds.

use serde_json::{Map, Value};

/// `canonicalHeader`: keep `adapterDefaults` only if a marker is `true`,
/// `system` only if non-empty, `tools` only if non-empty.
pub fn canonical_header(header: &Value) -> Value {
    match header {
        Value::Object(header) => canonical_header_owned(header.clone()),
        _ => canonical_header_owned(Map::new()),
    }
}

/// [`canonical_header`] of a header the caller owns, moved instead of copied.
pub fn canonical_header_owned(mut header: Map<String, Value>) -> Value {
    let mut out = Map::with_capacity(4);
    out.insert(
        "config".into(),
        header.remove("config").unwrap_or(Value::Null),
    );
    if let Some(defaults) = header.remove("adapterDefaults")
        && (defaults.get("reasoningEffort") == Some(&Value::Bool(true))
            || defaults.get("maxTokens") == Some(&Value::Bool(true)))
    {
        out.insert("adapterDefaults".into(), defaults);
    }
    if let Some(Value::String(system)) = header.remove("system")
        && !system.is_empty()
    {
        out.insert("system".into(), Value::String(system));
    }
    if let Some(Value::Array(tools)) = header.remove("tools")
        && !tools.is_empty()
    {
        out.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(out)
}

/// `callConfigEquals`: provider, model, reasoningEffort, temperature,
/// maxTokens strictly equal; `stop` both absent or element-wise equal; other
/// keys ignored.
pub fn call_config_equals(a: &Value, b: &Value) -> bool {
    let same = |key: &str| a.get(key) == b.get(key);
    if ![
        "provider",
        "model",
        "reasoningEffort",
        "temperature",
        "maxTokens",
    ]
    .into_iter()
    .all(same)
    {
        return false;
    }
    match (a.get("stop"), b.get("stop")) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `headerEquals` over canonical headers: config, both markers, system, and
/// tools pairwise by their JSON text (key order counts).
pub fn header_equals(a: &Value, b: &Value) -> bool {
    fn marker<'a>(header: &'a Value, key: &str) -> Option<&'a Value> {
        header.get("adapterDefaults").and_then(|d| d.get(key))
    }
    fn tools(header: &Value) -> &[Value] {
        header
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    let (a_tools, b_tools) = (tools(a), tools(b));
    call_config_equals(&a["config"], &b["config"])
        && marker(a, "reasoningEffort") == marker(b, "reasoningEffort")
        && marker(a, "maxTokens") == marker(b, "maxTokens")
        && a.get("system") == b.get("system")
        && a_tools.len() == b_tools.len()
        && a_tools
            .iter()
            .zip(b_tools)
            .all(|(x, y)| crate::js::same_json_text(x, y))
}

/// `requestProposal`: the logged config minus every adapter-filled field.
pub fn request_proposal(header: &Value) -> Value {
    let mut config = header
        .get("config")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    if let (Some(defaults), Some(object)) = (header.get("adapterDefaults"), config.as_object_mut())
    {
        for key in ["reasoningEffort", "maxTokens"] {
            if defaults.get(key) == Some(&Value::Bool(true)) {
                object.remove(key);
            }
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_drops_empty_parts() {
        let header = json!({"config": {"provider": "p", "model": "m"}, "adapterDefaults": {}, "system": "", "tools": []});
        assert_eq!(
            canonical_header(&header),
            json!({"config": {"provider": "p", "model": "m"}})
        );
    }

    #[test]
    fn tool_key_order_is_a_header_change() {
        let a = json!({"config": {}, "tools": [{"name": "t", "parameters": {"a": 1, "b": 2}}]});
        let b = json!({"config": {}, "tools": [{"name": "t", "parameters": {"b": 2, "a": 1}}]});
        assert!(!header_equals(&a, &b));
        assert!(header_equals(&a, &a.clone()));
    }

    #[test]
    fn proposal_removes_adapter_filled_fields() {
        let header = json!({"config": {"provider": "p", "model": "m", "reasoningEffort": "high", "maxTokens": 9},
                            "adapterDefaults": {"reasoningEffort": true}});
        assert_eq!(
            request_proposal(&header),
            json!({"provider": "p", "model": "m", "maxTokens": 9})
        );
    }
}
