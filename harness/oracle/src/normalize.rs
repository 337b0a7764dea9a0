//! Redaction for comparing a real-time implementation's loop run with the
//! reference's expectations.
//!
//! The reference's message ids are counters (`msg-1`, `msg-2`, ...) and its
//! event times are virtual milliseconds, so a scenario states them exactly.
//! An external implementation mints its own ids (upstream: random UUIDs) and
//! stamps wall-clock times, which no scenario can predict. Neither is part of
//! what the loop contract decides, so for such an implementation
//! (an adapter without `virtual_time/1`) both sides are redacted
//! before [`super::compare`] runs, by one rule:
//!
//! - every **message id** becomes [`MESSAGE_ID`]: the string `id` of any
//!   JSON object that also has a `role` key (a message, wherever it sits:
//!   event data, inbox splices, tool results, nested content);
//! - every **event `time`** is dropped: the top-level `time` key of each
//!   logged event.
//!
//! Everything else stays exact: `seq` (a deterministic position in the log),
//! tool-call ids (they come from the provider script), text, key order.
//! Applied to the observed log, to the expected event patterns (`events`,
//! queries) and to the expected whole `log` (parsed line by line, redacted,
//! re-serialized).
//! Request bodies carry no message ids or times and are not touched.

use serde_json::Value;

use dshc_scenario::format::{EventQuery, LoopExpect, Pattern};
use dshc_scenario::protocol::LoopRun;

/// What every message id is replaced with.
pub const MESSAGE_ID: &str = "<message-id>";

/// Replace every message id inside `value` with [`MESSAGE_ID`].
pub fn redact_message_ids(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("role")
                && let Some(id) = map.get_mut("id")
                && id.is_string()
            {
                *id = Value::String(MESSAGE_ID.into());
            }
            for item in map.values_mut() {
                redact_message_ids(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_message_ids),
        _ => {}
    }
}

/// A real-time implementation's whole result as text, with everything a
/// rerun may change for reasons of its own redacted: event times and message
/// ids (in the log, requests and observations), and the loopback port the
/// harness picked for the case's provider (in `host` headers and in any
/// quoted `http://127.0.0.1:<port>`). Two runs of a deterministic
/// implementation give the same text.
pub fn real_time_fingerprint(result: &dshc_scenario::protocol::CaseResult) -> Option<String> {
    let mut result = result.clone();
    if let Some(run) = result.run.as_mut() {
        redact_run(run);
        for [name, value] in run.requests.iter_mut().flat_map(|r| r.headers.iter_mut()) {
            if name == "host" {
                *value = "<loopback>".into();
            }
        }
    }
    let mut value = serde_json::to_value(&result).ok()?;
    redact_message_ids(&mut value);
    Some(without_loopback_ports(&serde_json::to_string(&value).ok()?))
}

/// `text` with the port of every `http://127.0.0.1:<port>` replaced by
/// `<port>`.
fn without_loopback_ports(text: &str) -> String {
    const LOOPBACK: &str = "http://127.0.0.1:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find(LOOPBACK) {
        let after = &rest[found + LOOPBACK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..found + LOOPBACK.len()]);
        out.push_str(if digits > 0 { "<port>" } else { "" });
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Redact one logged event: drop its `time`, replace its message ids.
pub fn redact_event(event: &mut Value) {
    if let Some(map) = event.as_object_mut() {
        map.shift_remove("time");
    }
    redact_message_ids(event);
}

/// Redact an observed run's log in place.
pub fn redact_run(run: &mut LoopRun) {
    run.log.iter_mut().for_each(redact_event);
    for agent in &mut run.agents {
        agent.log.iter_mut().for_each(redact_event);
    }
}

/// Redact a whole-log expectation (JSON lines). A line that is not JSON is
/// kept as is, so it still shows up in the diff.
pub fn redact_log_text(log: &str) -> String {
    log.lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(mut event) => {
                redact_event(&mut event);
                format!("{}\n", dshc_model::js::stringify(&event))
            }
            Err(_) => format!("{line}\n"),
        })
        .collect()
}

/// Whether `text` is an id the reference mints (`msg-<n>`).
fn is_reference_id(text: &str) -> bool {
    text.strip_prefix("msg-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Replace every literal reference message id (`id = "msg-<n>"`) in a
/// pattern: a partial pattern need not name the message's `role`.
fn redact_pattern_ids(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(id) = map.get_mut("id")
                && id.as_str().is_some_and(is_reference_id)
            {
                *id = Value::String(MESSAGE_ID.into());
            }
            map.values_mut().for_each(redact_pattern_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(redact_pattern_ids),
        _ => {}
    }
}

/// Redact a pattern on events in place: drop a stated `time`, replace
/// literal message ids.
fn redact_event_pattern(pattern: &mut Pattern) {
    pattern.edit(|source| {
        redact_event(source);
        redact_pattern_ids(source);
    });
}

/// Redact a scenario's loop expectations in place: the event patterns (of
/// `events`, query selections and assertions) and the expected whole log
/// when it is given as text.
pub fn redact_expectations(expect: &mut LoopExpect) {
    redact_log_expectations(&mut expect.events, &mut expect.query, &mut expect.log);
    for agent in expect.agents.values_mut() {
        redact_log_expectations(&mut agent.events, &mut agent.query, &mut agent.log);
    }
}

fn redact_log_expectations(
    events: &mut Option<Vec<Pattern>>,
    queries: &mut [EventQuery],
    log: &mut Option<Pattern>,
) {
    for event in events.iter_mut().flatten() {
        redact_event_pattern(event);
    }
    for query in queries {
        let patterns = [
            Some(&mut query.select),
            query.first.as_mut(),
            query.last.as_mut(),
            query.each.as_mut(),
            query.before.as_mut(),
            query.after.as_mut(),
            query.directly_before.as_mut(),
            query.directly_after.as_mut(),
            query.nth.as_mut().map(|nth| &mut nth.event),
        ];
        for pattern in patterns.into_iter().flatten() {
            redact_event_pattern(pattern);
        }
    }
    if let Some(log) = log.as_mut() {
        log.edit(|source| {
            if let Value::String(text) = source {
                *text = redact_log_text(text);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_model::session::event_kind;
    use serde_json::json;

    #[test]
    fn message_ids_are_redacted_and_tool_call_ids_kept() {
        let mut event = json!({
            "type": event_kind::ASSISTANT_MESSAGE, "seq": 12, "time": 1767225600003u64,
            "data": {"turn": 1, "message": {"role": "assistant",
                "content": [{"type": "tool-call", "id": "call_1", "name": "read"}],
                "id": "msg-2"}},
            "surfaceOp": "append"
        });
        redact_event(&mut event);
        assert_eq!(
            event.to_string(),
            r#"{"type":"assistant/message","seq":12,"data":{"turn":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"call_1","name":"read"}],"id":"<message-id>"}},"surfaceOp":"append"}"#
        );
    }

    #[test]
    fn inserted_messages_are_redacted_and_non_messages_kept() {
        let mut event = json!({"type": dshc_model::session::event_kind::AGENT_INBOX_SPLICED, "seq": 0, "time": 5,
            "data": {"inserted": [{"content": [], "role": "user", "id": "0b0c-uuid"}],
                     "other": {"id": "kept"}}});
        redact_event(&mut event);
        assert_eq!(event["data"]["inserted"][0]["id"], MESSAGE_ID);
        assert_eq!(event["data"]["other"]["id"], "kept");
        assert!(event.get("time").is_none());
    }

    #[test]
    fn whole_log_expectations_are_redacted_line_by_line() {
        let log =
            "{\"type\":\"turn/start\",\"seq\":1,\"time\":7,\"data\":{\"turn\":1}}\nnot json\n";
        assert_eq!(
            redact_log_text(log),
            "{\"type\":\"turn/start\",\"seq\":1,\"data\":{\"turn\":1}}\nnot json\n"
        );
    }
}
