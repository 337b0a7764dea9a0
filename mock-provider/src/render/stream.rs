//! A stream's pacing and faults: the events of [`super::stream_events`] with the
//! entry's delays and keep-alive comments placed before them, and a transport fault
//! (`drop_connection`, `stall`, `malformed_json`, `missing_done`) struck at its event.

use bytes::Bytes;

use super::{
    BodyAction, KEEP_ALIVE_COMMENT, RenderContext, ResponsePlan, WireFormat, data_event,
    default_malformed_payload, push_request_id, stream_events,
};
use crate::script::{FaultKind, ScriptEntry};

/// The streamed answer: every event, paced, with the entry's fault where it strikes.
pub(super) fn render_stream(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let events = stream_events(entry, context);
    let event_count = events.len();
    let (end, fault_at) = match entry.fault {
        Some(FaultKind::MissingDone) => {
            let without_done = event_count - 1;
            (
                entry
                    .after_events
                    .map_or(without_done, |n| n.min(without_done)),
                None,
            )
        }
        Some(kind @ (FaultKind::DropConnection | FaultKind::Stall | FaultKind::MalformedJson)) => (
            event_count,
            Some((kind, entry.after_events.unwrap_or(0).min(event_count))),
        ),
        _ => (event_count, None),
    };
    let mut body = Vec::new();
    for (position, event) in events.into_iter().take(end).enumerate() {
        if let Some((kind, at)) = fault_at
            && at == position
            && apply_stream_fault(kind, entry, context, &mut body)
        {
            return stream_plan(entry, body);
        }
        if entry.delay_ms > 0 {
            body.push(BodyAction::Sleep {
                delay_ms: entry.delay_ms,
            });
        }
        for _ in entry.keep_alive_before.iter().filter(|&&k| k == position) {
            body.push(keep_alive());
        }
        body.push(BodyAction::Send(event));
    }
    for _ in entry.keep_alive_before.iter().filter(|&&k| k >= end) {
        body.push(keep_alive());
    }
    if let Some((kind, at)) = fault_at
        && at >= end
    {
        apply_stream_fault(kind, entry, context, &mut body);
    }
    stream_plan(entry, body)
}

/// Push the fault's actions; returns true if the body ends here.
fn apply_stream_fault(
    kind: FaultKind,
    entry: &ScriptEntry,
    context: &RenderContext,
    body: &mut Vec<BodyAction>,
) -> bool {
    match kind {
        FaultKind::DropConnection => {
            body.push(BodyAction::DropConnection);
            true
        }
        FaultKind::Stall => {
            body.push(BodyAction::Sleep {
                delay_ms: entry.stall_ms.unwrap_or(0),
            });
            false
        }
        FaultKind::MalformedJson => {
            let payload = entry
                .malformed_payload
                .clone()
                .unwrap_or_else(|| default_malformed_payload(context, context.chunk_object()));
            let event = match context.format {
                WireFormat::OpenAi => data_event(&payload),
                WireFormat::Anthropic => {
                    Bytes::from(format!("event: content_block_delta\ndata: {payload}\n\n"))
                }
            };
            body.push(BodyAction::Send(event));
            false
        }
        _ => false,
    }
}

/// The 200 SSE response carrying `body`.
fn stream_plan(entry: &ScriptEntry, body: Vec<BodyAction>) -> ResponsePlan {
    let mut headers = vec![
        (
            "content-type".to_owned(),
            "text/event-stream; charset=utf-8".to_owned(),
        ),
        ("cache-control".to_owned(), "no-cache".to_owned()),
    ];
    push_request_id(entry, &mut headers);
    ResponsePlan {
        head_delay_ms: 0,
        status: 200,
        headers,
        body,
        closes_before_head: false,
    }
}

/// One `: keep-alive` comment.
fn keep_alive() -> BodyAction {
    BodyAction::Send(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes()))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::Value;

    use crate::render::test_support::{context, payloads};
    use crate::render::{BodyAction, KEEP_ALIVE_COMMENT, render_response};
    use crate::script::{FaultKind, ScriptEntry};
    use crate::sse::{SseItem, parse_sse};

    #[test]
    fn delays_and_keep_alives_are_placed_before_their_event() {
        let entry = ScriptEntry {
            delay_ms: 10,
            keep_alive_before: vec![1, 1, 99],
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        let sleep = BodyAction::Sleep { delay_ms: 10 };
        let keep = BodyAction::Send(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes()));
        let kinds: Vec<&str> = plan
            .body
            .iter()
            .map(|action| match action {
                BodyAction::Sleep { .. } => "sleep",
                BodyAction::Send(bytes) if bytes.starts_with(b":") => "keep",
                BodyAction::Send(_) => "event",
                BodyAction::DropConnection => "drop",
            })
            .collect();
        // events: role, content, finish, usage, [DONE]
        assert_eq!(
            kinds,
            [
                "sleep", "event", "sleep", "keep", "keep", "event", "sleep", "event", "sleep",
                "event", "sleep", "event", "keep"
            ]
        );
        assert_eq!(plan.body[0], sleep);
        assert_eq!(plan.body[3], keep);
        assert_eq!(plan.total_delay_ms(), 50);
        let comments: Vec<SseItem> = parse_sse(&plan.body_bytes())
            .into_iter()
            .filter(|item| matches!(item, SseItem::Comment(_)))
            .collect();
        assert_eq!(comments, vec![SseItem::Comment(" keep-alive".into()); 3]);
    }

    #[test]
    fn drop_connection_cuts_after_n_events() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(2),
            ..ScriptEntry::content(["a", "b", "c"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body.len(), 3);
        assert_eq!(plan.body[2], BodyAction::DropConnection);
        assert!(plan.drops_connection());
        assert_eq!(payloads(&plan).len(), 2);
    }

    #[test]
    fn stall_pauses_after_n_events_then_continues() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::Stall),
            after_events: Some(2),
            stall_ms: Some(600_000),
            ..ScriptEntry::content(["a", "b"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body[2], BodyAction::Sleep { delay_ms: 600_000 });
        assert_eq!(plan.total_delay_ms(), 600_000);
        assert_eq!(payloads(&plan).last().map(String::as_str), Some("[DONE]"));
        assert_eq!(payloads(&plan).len(), 6);
    }

    #[test]
    fn malformed_json_inserts_a_non_json_payload() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::MalformedJson),
            after_events: Some(1),
            ..ScriptEntry::content(["a"])
        };
        let all = payloads(&render_response(&entry, &context()));
        assert_eq!(all.len(), 6);
        assert!(serde_json::from_str::<Value>(&all[1]).is_err());
        assert!(all[1].starts_with("{\"id\":\"chatcmpl-3\""));
        assert_eq!(all[5], "[DONE]");

        let custom = ScriptEntry {
            malformed_payload: Some("not json".into()),
            ..entry
        };
        assert_eq!(
            payloads(&render_response(&custom, &context()))[1],
            "not json"
        );
    }

    #[test]
    fn missing_done_ends_without_done() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::MissingDone),
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        let all = payloads(&plan);
        assert_eq!(all.len(), 4);
        assert!(all.iter().all(|payload| payload != "[DONE]"));
        assert!(!plan.drops_connection());

        let early = ScriptEntry {
            after_events: Some(1),
            ..entry
        };
        assert_eq!(payloads(&render_response(&early, &context())).len(), 1);
    }

    #[test]
    fn fault_after_the_last_event_happens_at_the_end() {
        let entry = ScriptEntry {
            fault: Some(FaultKind::DropConnection),
            after_events: Some(1000),
            ..ScriptEntry::content(["a"])
        };
        let plan = render_response(&entry, &context());
        assert_eq!(plan.body.last(), Some(&BodyAction::DropConnection));
        assert_eq!(payloads(&plan).last().map(String::as_str), Some("[DONE]"));
    }
}
