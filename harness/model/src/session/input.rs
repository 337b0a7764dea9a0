//! Events that reach a session from outside the loop, as any JavaScript
//! value: a seed (replay, fork, resume, or a test's crafted history) and a
//! direct `session.append`. dsh-session checks them at that boundary before
//! anything is logged; this module restates those checks, in its order and
//! words, over [`JsValue`]s, so a malformed seed or append fails here exactly
//! as it fails upstream.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::event_kind;
use super::{Event, RawSurfaceMeta};
use crate::js::{JsError, JsValue, is_safe_integer};

/// The envelope keys a seed event may have.
const ENVELOPE_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "surfaceOp",
    "sourceEventSeqs",
    "ignorable",
];

/// One seed event checked up to its surface transition (`Session`'s
/// constructor: lossless snapshot, envelope, current LLM shape, legacy
/// header vocabulary, contiguity). Returns the event's JSON object.
pub fn check_seed_event(index: usize, event: &JsValue) -> Result<Map<String, Value>, JsError> {
    let Some(snapshot) = event.to_lossless_json() else {
        return Err(JsError::error(format!(
            "seed event at index {index} is not losslessly JSON-serializable"
        )));
    };
    check_seed_json(index, snapshot)
}

/// [`check_seed_event`] for an event that is JSON already (read back from a
/// store), so there is nothing to snapshot.
pub fn check_seed_json(index: usize, snapshot: Value) -> Result<Map<String, Value>, JsError> {
    let invalid = || {
        JsError::error(format!(
            "seed event at index {index} has an invalid event envelope"
        ))
    };
    let object = match snapshot {
        Value::Object(object) => object,
        Value::Null => return Err(JsError::read_of_null("type")),
        _ => return Err(invalid()),
    };
    if object.get("type").and_then(Value::as_str) == Some(event_kind::REQUEST_HEADER_DELTA) {
        return Err(JsError::error(format!(
            "seed event at index {index} uses unsupported legacy request/header-delta format"
        )));
    }
    if object
        .keys()
        .any(|key| !ENVELOPE_KEYS.contains(&key.as_str()))
    {
        return Err(invalid());
    }
    let safe_integer = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_f64)
            .filter(|x| is_safe_integer(*x))
    };
    let envelope_ok = object.get("type").is_some_and(Value::is_string)
        && safe_integer("seq").is_some_and(|seq| seq >= 0.0)
        && safe_integer("time").is_some()
        && object.contains_key("data")
        && object
            .get("ignorable")
            .is_none_or(|flag| *flag == Value::Bool(true));
    if !envelope_ok {
        return Err(invalid());
    }
    let kind = object["type"].as_str().unwrap_or_default();
    let seq = safe_integer("seq").unwrap_or_default() as u64;
    check_seed_content(index, kind, &object["data"], seq)?;
    Ok(object)
}

/// [`check_seed_json`] for an event the model holds already, before its
/// JSON is written: the checks such an event can fail. Its envelope has
/// only envelope keys, a string type and the payload by construction (or
/// was checked when it was seeded itself); its seq and time are integers
/// that may still be unsafe.
pub fn check_seed_model_event(index: usize, event: &Event) -> Result<(), JsError> {
    if event.kind == event_kind::REQUEST_HEADER_DELTA {
        return Err(JsError::error(format!(
            "seed event at index {index} uses unsupported legacy request/header-delta format"
        )));
    }
    if !is_safe_integer(event.seq as f64) || !is_safe_integer(event.time as f64) {
        return Err(JsError::error(format!(
            "seed event at index {index} has an invalid event envelope"
        )));
    }
    check_seed_content(index, &event.kind, &event.data, event.seq)
}

/// The checks of a seed event past its envelope: current LLM shape, legacy
/// header vocabulary, contiguity.
fn check_seed_content(index: usize, kind: &str, data: &Value, seq: u64) -> Result<(), JsError> {
    check_current_llm_shape(kind, data, index)?;
    check_supported_request_header(kind, data, &format_args!("seed event at index {index}"))?;
    if seq != index as u64 {
        return Err(JsError::error(format!(
            "seed event at index {index} has seq {seq} (expected {index}); seed must be contiguous from 0"
        )));
    }
    Ok(())
}

/// `assertSupportedRequestHeader`: the legacy delta codec's vocabulary is refused.
pub fn check_supported_request_header(
    kind: &str,
    data: &Value,
    location: &dyn std::fmt::Display,
) -> Result<(), JsError> {
    if kind == event_kind::REQUEST_HEADER_DELTA {
        return Err(JsError::error(format!(
            "{location} uses unsupported legacy request/header-delta format"
        )));
    }
    if kind == event_kind::REQUEST_HEADER
        && data.get("reason").and_then(Value::as_str) == Some("fallback")
    {
        return Err(JsError::error(format!(
            "{location} uses unsupported legacy request/header reason \"fallback\""
        )));
    }
    Ok(())
}

fn has_provider_model(value: Option<&Value>) -> bool {
    let filled = |key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    value.is_some_and(Value::is_object) && filled("provider") && filled("model")
}

/// `assertCurrentLlmShape`: a seeded request header has a provider/model
/// config and valid adapter-default markers; message events are replayable.
fn check_current_llm_shape(kind: &str, data: &Value, index: usize) -> Result<(), JsError> {
    if kind == event_kind::REQUEST_HEADER {
        let header = data.get("header").filter(|h| h.is_object());
        let config = header.and_then(|h| h.get("config"));
        if !has_provider_model(config) {
            return Err(JsError::error(format!(
                "seed request/header at index {index} lacks provider/model"
            )));
        }
        let config = config.unwrap_or(&Value::Null);
        if let Some(effort) = config.get("reasoningEffort")
            && effort.as_str().is_none_or(str::is_empty)
        {
            return Err(JsError::error(format!(
                "seed request/header at index {index} has an invalid reasoningEffort"
            )));
        }
        if let Some(defaults) = header.and_then(|h| h.get("adapterDefaults")) {
            let invalid = || {
                JsError::error(format!(
                    "seed request/header at index {index} has invalid adapterDefaults"
                ))
            };
            let Some(markers) = defaults.as_object() else {
                return Err(invalid());
            };
            let bad = markers
                .keys()
                .any(|key| key != "reasoningEffort" && key != "maxTokens")
                || markers.values().any(|marker| *marker != Value::Bool(true))
                || (markers.contains_key("reasoningEffort")
                    && config.get("reasoningEffort").is_none())
                || (markers.contains_key("maxTokens") && config.get("maxTokens").is_none());
            if bad {
                return Err(invalid());
            }
        }
    }
    check_message_event(kind, data, &format_args!("seed {kind} at index {index}"))
}

/// `assertMessageEventShape`: a message event carries an identified message
/// with the right role, a source, content, and for assistant messages a
/// model source, for tool results one matching tool-result block.
pub fn check_message_event(
    kind: &str,
    data: &Value,
    subject: &dyn std::fmt::Display,
) -> Result<(), JsError> {
    if !matches!(
        kind,
        event_kind::USER_MESSAGE | event_kind::ASSISTANT_MESSAGE | event_kind::TOOL_RESULT
    ) {
        return Ok(());
    }
    let error = |what: &str| Err(JsError::error(format!("{subject} {what}")));
    let message = if kind == event_kind::USER_MESSAGE {
        Some(data)
    } else {
        data.get("message")
    };
    let Some(message) = message.filter(|m| m.is_object()) else {
        return error("lacks an identified message");
    };
    if message
        .get("id")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return error("lacks an identified message");
    }
    let role = if kind == event_kind::ASSISTANT_MESSAGE {
        "assistant"
    } else {
        "user"
    };
    if message.get("role").and_then(Value::as_str) != Some(role) {
        return error(&format!("message must have role \"{role}\""));
    }
    let source = message.get("source").filter(|s| s.is_object());
    if source
        .and_then(|s| s.get("kind"))
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return error("message has invalid source");
    }
    let Some(content) = message.get("content").and_then(Value::as_array) else {
        return error("message has invalid content");
    };
    let source_kind = source.and_then(|s| s["kind"].as_str()).unwrap_or_default();
    if kind == event_kind::ASSISTANT_MESSAGE {
        if source_kind != "model" || !has_provider_model(source) {
            return error("message must have model source");
        }
        return Ok(());
    }
    if kind != event_kind::TOOL_RESULT {
        return Ok(());
    }
    let call_id = source.and_then(|s| s.get("callId")).and_then(Value::as_str);
    if source_kind != "tool" || call_id.is_none_or(str::is_empty) {
        return error("message must have tool source");
    }
    let block = content.first();
    let one_block = content.len() == 1
        && block.is_some_and(|b| b.get("type") == Some(&Value::from("tool-result")))
        && block.is_some_and(|b| b.get("content").is_some_and(Value::is_array));
    if !one_block {
        return error("message must contain one tool-result block");
    }
    if block
        .and_then(|b| b.get("toolCallId"))
        .and_then(Value::as_str)
        != call_id
    {
        return error("message has mismatched tool call ids");
    }
    Ok(())
}

/// A checked seed event as the session's typed [`Event`], and its raw
/// surface metadata for the surface fold.
pub fn seed_event(object: &Map<String, Value>) -> (Event, RawSurfaceMeta) {
    let event = Event {
        kind: object["type"].as_str().unwrap_or_default().to_string(),
        seq: object["seq"].as_f64().unwrap_or_default() as u64,
        time: object["time"].as_f64().unwrap_or_default().max(0.0) as u64,
        data: Rc::new(object["data"].clone()),
        source_event_seqs: None,
        surface_op: None,
        ignorable: false,
        seeded: None,
    };
    let raw = RawSurfaceMeta {
        surface_op: object.get("surfaceOp").cloned(),
        source_event_seqs: object.get("sourceEventSeqs").cloned(),
    };
    (event, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, seq: u64, time: u64, data: Value) -> Event {
        Event {
            kind: kind.into(),
            seq,
            time,
            data: Rc::new(data),
            source_event_seqs: None,
            surface_op: None,
            ignorable: false,
            seeded: None,
        }
    }

    /// A model event passes or fails the seed checks as its JSON does,
    /// with the same error.
    #[test]
    fn a_model_event_is_checked_as_its_json() {
        let header =
            |config: Value, reason: &str| json!({"header": {"config": config}, "reason": reason});
        let routed = json!({"provider": "p", "model": "m"});
        let message = json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "id": "msg-1", "source": {"kind": "user"}});
        let cases = [
            (0, event(event_kind::USER_MESSAGE, 0, 5, message.clone())),
            (0, event("custom/note", 0, 5, json!({}))),
            (1, event("custom/note", 0, 5, json!({}))),
            (2, event("custom/note", 2, 1 << 53, json!({}))),
            (3, event("custom/note", (1 << 53) + 2, 5, json!({}))),
            (
                0,
                event(event_kind::USER_MESSAGE, 0, 5, json!({"role": "user"})),
            ),
            (0, event(event_kind::REQUEST_HEADER_DELTA, 0, 5, json!({}))),
            (
                0,
                event(
                    event_kind::REQUEST_HEADER,
                    0,
                    5,
                    header(routed.clone(), "initial"),
                ),
            ),
            (
                0,
                event(event_kind::REQUEST_HEADER, 0, 5, header(routed, "fallback")),
            ),
            (
                0,
                event(
                    event_kind::REQUEST_HEADER,
                    0,
                    5,
                    header(json!({"model": "m"}), "initial"),
                ),
            ),
        ];
        let mut failures = 0;
        for (index, event) in cases {
            let typed = check_seed_model_event(index, &event);
            let as_json = check_seed_json(index, event.to_json()).map(|_| ());
            assert_eq!(typed, as_json, "{index}: {:?}", event.to_json());
            failures += usize::from(typed.is_err());
        }
        assert_eq!(
            failures, 7,
            "all but the two first cases and the routed header fail"
        );
    }
}
