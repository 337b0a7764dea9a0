//! Replay: rebuild, from a session log alone, the request behind every
//! provider call (spec 07 H12–H13), and check logs against what the
//! provider actually received.
//!
//! A request is the header in force at its dispatch (the fold of the last
//! `request/header`) plus the messages derived from the surface of the same
//! log prefix, serialized for the DeepSeek wire.

use serde_json::{Map, Value, json};

use crate::model::deepseek::{DeepSeekDefaults, serialize_request};
use crate::model::session::{Event, derive_messages, fold_request_header, fold_surface};

/// The harness request dispatched after this log prefix.
pub fn request_at(prefix: &[Event], session_id: &str) -> Result<Value, String> {
    let header = fold_request_header(prefix).ok_or("no request/header before the dispatch")?;
    let nodes = fold_surface(prefix).map_err(|e| e.message)?;
    let mut request: Map<String, Value> = header["config"].as_object().cloned().unwrap_or_default();
    request.insert(
        "messages".into(),
        Value::Array(derive_messages(prefix, &nodes)),
    );
    if let Some(system) = header.get("system") {
        request.insert("system".into(), system.clone());
    }
    if let Some(tools) = header.get("tools") {
        request.insert("tools".into(), tools.clone());
    }
    request.insert("sessionId".into(), json!(session_id));
    Ok(Value::Object(request))
}

/// The wire body of the request dispatched after this prefix.
pub fn wire_body_at(
    prefix: &[Event],
    session_id: &str,
    defaults: &DeepSeekDefaults,
) -> Result<Value, String> {
    let request = request_at(prefix, session_id)?;
    serialize_request(&request, defaults).map_err(|e| e.message)
}

/// Dispatch points recoverable from a log alone: the position of the first
/// chunk of each attempt (an attempt ends with its `finish` chunk). An
/// attempt aborted before its first chunk leaves no trace and is not found.
pub fn dispatch_points(events: &[Event]) -> Vec<usize> {
    let mut points = Vec::new();
    let mut in_attempt = false;
    for (index, event) in events.iter().enumerate() {
        if event.kind != "assistant/chunk" {
            if event.kind == "step/end"
                || event.kind == "request/header"
                || event.kind == "request/context"
            {
                in_attempt = false;
            }
            continue;
        }
        if !in_attempt {
            points.push(index);
            in_attempt = true;
        }
        if event.data["chunk"]["type"] == "finish" {
            in_attempt = false;
        }
    }
    points
}

/// Read a JSON-lines session log.
pub fn read_log(text: &str) -> Result<Vec<Event>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            let value: Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", number + 1))?;
            Event::from_json(&value).map_err(|e| format!("line {}: {e}", number + 1))
        })
        .collect()
}

/// Compare each received body with its reconstruction from the log prefix at
/// its recorded dispatch; return one message per disagreement.
pub fn check_replay(
    events: &[Event],
    session_id: &str,
    dispatches: &[usize],
    received: &[Value],
    defaults: &DeepSeekDefaults,
) -> Vec<String> {
    let mut problems = Vec::new();
    if dispatches.len() != received.len() {
        problems.push(format!(
            "{} dispatches were logged but the provider received {} requests",
            dispatches.len(),
            received.len()
        ));
    }
    for (index, (dispatch, body)) in dispatches.iter().zip(received).enumerate() {
        match wire_body_at(&events[..(*dispatch).min(events.len())], session_id, defaults) {
            Err(error) => problems.push(format!("request {index}: cannot reconstruct: {error}")),
            Ok(rebuilt) if rebuilt.to_string() != body.to_string() => problems.push(format!(
                "request {index} differs from its reconstruction from the log prefix of {dispatch} events:\n  received:      {body}\n  reconstructed: {rebuilt}"
            )),
            Ok(_) => {}
        }
    }
    problems
}
