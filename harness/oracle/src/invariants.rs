//! Invariants every loop run must satisfy, whatever the scenario: checked
//! after each loop scenario and each seeded session.
//!
//! They are properties of the log and the provider traffic alone, so they
//! hold for any correct implementation.

use serde_json::Value;

use dshc_model::header::header_equals;
use dshc_model::js::cmp_utf16;
use dshc_model::runtime_context::{CLEARED, is_owned, renders_own_source};
use dshc_model::session::event_kind;
use dshc_model::session::{Event, EventFormatError, SurfaceOp};
use dshc_scenario::protocol::ProviderRequest;

/// A `change` header is logged only when it differs from the header in force.
pub fn headers_change_only_when_different(events: &[Event]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut current: Option<Value> = None;
    for event in events
        .iter()
        .filter(|e| e.kind == event_kind::REQUEST_HEADER)
    {
        let header = dshc_model::header::canonical_header(&event.data["header"]);
        if event.data["reason"] == "change"
            && let Some(previous) = &current
            && header_equals(previous, &header)
        {
            problems.push(format!(
                "seq {}: request/header{{change}} repeats the header in force",
                event.seq
            ));
        }
        current = Some(header);
    }
    problems
}

/// A runtime-context snapshot is logged only when it differs from the one
/// retained on the surface (a compaction that shadows it clears it).
pub fn snapshots_change_only_when_different(events: &[Event]) -> Vec<String> {
    let mut problems = Vec::new();
    // The retained snapshot's text: `None` when its content is not exactly
    // one text block (06 §2), which no candidate can repeat.
    let mut retained: Option<(u64, Option<String>)> = None;
    let mut ever = false;
    for event in events {
        if matches!(event.surface_op, Some(SurfaceOp::Replace { .. }))
            && let Some((seq, _)) = &retained
            && event
                .source_event_seqs
                .as_ref()
                .is_some_and(|s| s.contains(seq))
        {
            retained = None;
        }
        if event.kind != event_kind::USER_MESSAGE || !is_owned(&event.data) {
            continue;
        }
        let text = single_text_block(&event.data["content"]);
        match (&retained, &text) {
            (Some((_, Some(previous))), Some(text))
                if previous == text && renders_own_source(&event.data, text) =>
            {
                problems.push(format!(
                    "seq {}: runtime-context snapshot repeats the retained one",
                    event.seq
                ))
            }
            (None, Some(text)) if !ever && text == CLEARED => problems.push(format!(
                "seq {}: tombstone logged although no snapshot ever existed",
                event.seq
            )),
            _ => {}
        }
        ever = true;
        retained = Some((event.seq, text));
    }
    problems
}

/// The text of a message's content when it is exactly one text block with
/// a string text (06 §2's retained text), else `None`.
fn single_text_block(content: &Value) -> Option<String> {
    match content.as_array().map(Vec::as_slice) {
        Some([block]) if block["type"] == "text" => block["text"].as_str().map(str::to_string),
        _ => None,
    }
}

/// Without a configured `toolOrder` or listener edits, the tools of every
/// request are sorted by UTF-16 code units.
pub fn tools_sorted(requests: &[ProviderRequest]) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        let names: Vec<&str> = request.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        if names
            .windows(2)
            .any(|pair| cmp_utf16(pair[0], pair[1]).is_gt())
        {
            problems.push(format!(
                "request {index}: tools are not in canonical order: {names:?}"
            ));
        }
    }
    problems
}

fn messages_of(request: &ProviderRequest) -> &[Value] {
    request.body["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
}

/// While a request only extends the previous one (same model, tools and
/// leading messages), its cache hits do not shrink.
pub fn cache_hits_monotonic(requests: &[ProviderRequest]) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, pair) in requests.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let (Some(hits_before), Some(hits_after)) =
            (before.cache_hit_tokens, after.cache_hit_tokens)
        else {
            continue;
        };
        let same = |key: &str| before.body[key] == after.body[key];
        let (old, new) = (messages_of(before), messages_of(after));
        let extends = new.len() >= old.len() && new[..old.len()] == old[..];
        if same("model") && same("tools") && extends && hits_after < hits_before {
            problems.push(format!(
                "request {}: cache hits fell from {hits_before} to {hits_after} although the prompt only grew",
                index + 1
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use dshc_model::render::SNAPSHOT_PREAMBLE;
    use dshc_model::session::SurfaceOp;
    use std::rc::Rc;

    fn event(seq: u64, kind: &str, data: Value) -> Event {
        let surface = (kind == event_kind::USER_MESSAGE).then_some(SurfaceOp::Append);
        Event {
            kind: kind.into(),
            seq,
            time: 0,
            data: Rc::new(data),
            source_event_seqs: None,
            surface_op: surface,
            ignorable: false,
            seeded: None,
        }
    }

    fn header(system: &str, reason: &str) -> Value {
        json!({"header": {"config": {"provider": "p", "model": "m"}, "system": system}, "reason": reason})
    }

    #[test]
    fn a_log_whose_seqs_skip_or_repeat_is_flagged() {
        let counted = [
            event(0, event_kind::TURN_START, json!({})),
            event(1, event_kind::TURN_END, json!({})),
        ];
        assert!(seqs_contiguous(&counted).is_empty());
        let skipped = [
            event(0, event_kind::TURN_START, json!({})),
            event(2, event_kind::TURN_END, json!({})),
        ];
        assert_eq!(
            seqs_contiguous(&skipped),
            ["event 1 of the log has seq 2 (a log counts its seqs from 0, one per event)"]
        );
        let repeated = [
            event(0, event_kind::TURN_START, json!({})),
            event(0, event_kind::TURN_END, json!({})),
        ];
        assert_eq!(seqs_contiguous(&repeated).len(), 1);
    }

    #[test]
    fn a_repeated_change_header_is_flagged() {
        let ok = [
            event(0, event_kind::REQUEST_HEADER, header("a", "initial")),
            event(1, event_kind::REQUEST_HEADER, header("b", "change")),
        ];
        assert!(headers_change_only_when_different(&ok).is_empty());
        let repeated = [
            event(0, event_kind::REQUEST_HEADER, header("a", "initial")),
            event(1, event_kind::REQUEST_HEADER, header("a", "change")),
        ];
        assert_eq!(headers_change_only_when_different(&repeated).len(), 1);
    }

    /// An owned message as the projection builds it: the tombstone, or a
    /// snapshot of one context `ctx` rendering `text`.
    fn snapshot(seq: u64, text: &str) -> Event {
        let plugin = dshc_model::runtime_context::SOURCE;
        let (content, source) = if text == CLEARED {
            (
                text.to_string(),
                json!({"kind": "plugin", "plugin": plugin}),
            )
        } else {
            (
                format!("{SNAPSHOT_PREAMBLE}{text}"),
                json!({"kind": "plugin", "plugin": plugin, "form": "snapshot", "sections": [{"name": "ctx", "text": text}]}),
            )
        };
        event(
            seq,
            event_kind::USER_MESSAGE,
            json!({"content": [{"type": "text", "text": content}], "source": source, "role": "user", "id": format!("m{seq}")}),
        )
    }

    /// A snapshot of `text` whose message text a listener rewrote to `logged`.
    fn rewritten_snapshot(seq: u64, text: &str, logged: &str) -> Event {
        let mut event = snapshot(seq, text);
        Rc::make_mut(&mut event.data)["content"][0]["text"] = json!(logged);
        event
    }

    #[test]
    fn a_repeated_rewritten_snapshot_is_not_flagged() {
        assert!(
            snapshots_change_only_when_different(&[
                rewritten_snapshot(0, "a", "A"),
                rewritten_snapshot(1, "a", "A"),
            ])
            .is_empty()
        );
    }

    #[test]
    fn a_repeated_snapshot_and_a_first_tombstone_are_flagged() {
        assert!(
            snapshots_change_only_when_different(&[
                snapshot(0, "a"),
                snapshot(1, "b"),
                snapshot(2, CLEARED)
            ])
            .is_empty()
        );
        assert_eq!(
            snapshots_change_only_when_different(&[snapshot(0, "a"), snapshot(1, "a")]).len(),
            1
        );
        assert_eq!(
            snapshots_change_only_when_different(&[snapshot(0, CLEARED)]).len(),
            1
        );
    }

    fn request(tools: &[&str], messages: usize, hits: u64) -> ProviderRequest {
        let tools: Vec<Value> = tools
            .iter()
            .map(|n| json!({"type": "function", "function": {"name": n}}))
            .collect();
        let messages: Vec<Value> = (0..messages)
            .map(|i| json!({"role": "user", "content": i.to_string()}))
            .collect();
        ProviderRequest {
            headers: Vec::new(),
            body: json!({"model": "m", "messages": messages, "tools": tools}),

            cache_hit_tokens: Some(hits),
        }
    }

    #[test]
    fn unsorted_tools_and_shrinking_cache_hits_are_flagged() {
        assert!(tools_sorted(&[request(&["B", "a", "ab"], 1, 0)]).is_empty());
        assert_eq!(tools_sorted(&[request(&["a", "B"], 1, 0)]).len(), 1);
        assert!(
            cache_hits_monotonic(&[request(&["a"], 1, 64), request(&["a"], 2, 128)]).is_empty()
        );
        assert_eq!(
            cache_hits_monotonic(&[request(&["a"], 1, 128), request(&["a"], 2, 64)]).len(),
            1
        );
        // A changed tool list is not an extension: hits may fall.
        assert!(cache_hits_monotonic(&[request(&["a"], 1, 128), request(&["b"], 2, 0)]).is_empty());
    }
}

/// Which invariant a run broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A request differs from its reconstruction from the session log (07 H13).
    Replay,
    /// A `request/header{change}` repeats the header in force (07 H9).
    HeaderLogging,
    /// A runtime-context snapshot repeats the one retained (06 RC9).
    SnapshotLogging,
    /// A request's cache hits shrank while it only extended the previous one.
    CacheHits,
    /// The log is not append-only: its `seq`s do not count 0, 1, 2, ...
    LogSeq,
}

impl ViolationKind {
    /// The tag shown in reports and used to shrink.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Replay => "replay",
            Self::HeaderLogging => "header-logging",
            Self::SnapshotLogging => "snapshot-logging",
            Self::CacheHits => "cache-hits",
            Self::LogSeq => "log-seq",
        }
    }
}

/// One broken invariant, with the agent whose session broke it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// What broke.
    pub kind: ViolationKind,
    /// The agent (session id) whose log or traffic broke it.
    pub agent: String,
    /// Where and how.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "[{}] agent {}: {}",
            self.kind.tag(),
            self.agent,
            self.detail
        )
    }
}

/// Judge an observed loop run, whoever produced it (the reference or an
/// adapter): every invariant over every agent's log and the traffic the
/// harness's provider saw. Dispatch points come from the log itself (each
/// attempt logs at least its finish chunk), so nothing but what the
/// implementation did is needed.
pub fn judge_loop_run(
    world: &dshc_scenario::protocol::LoopWorld,
    run: &dshc_scenario::protocol::LoopRun,
) -> Vec<Violation> {
    let logs = std::iter::once(&run.log)
        .chain(run.agents.iter().map(|agent| &agent.log))
        .map(|log| log.iter().map(Event::from_json).collect())
        .collect();
    judge_read_logs(world, run, logs)
}

/// [`judge_loop_run`] on a run that is no longer needed: each log's events
/// are read by moving their payloads out of the JSON instead of copying
/// them.
pub fn judge_spent_loop_run(
    world: &dshc_scenario::protocol::LoopWorld,
    mut run: dshc_scenario::protocol::LoopRun,
) -> Vec<Violation> {
    let logs = std::iter::once(&mut run.log)
        .chain(run.agents.iter_mut().map(|agent| &mut agent.log))
        .map(|log| {
            std::mem::take(log)
                .into_iter()
                .map(Event::from_owned_json)
                .collect()
        })
        .collect();
    judge_read_logs(world, &run, logs)
}

/// Each agent's log as read back into events (the run's first agent
/// first), or why it is not a session log.
type ReadLogs = Vec<Result<Vec<Event>, EventFormatError>>;

fn judge_read_logs(
    world: &dshc_scenario::protocol::LoopWorld,
    run: &dshc_scenario::protocol::LoopRun,
    logs: ReadLogs,
) -> Vec<Violation> {
    let wire = world.adapter.wire_options();
    let mut found = Vec::new();
    let agents = std::iter::once(world.agent.id.as_str())
        .chain(run.agents.iter().map(|agent| agent.id.as_str()));
    let single = run.agents.is_empty();
    for (agent, events) in agents.zip(logs) {
        for (kind, detail) in judge_agent_log(agent, events, run, single, &wire) {
            found.push(Violation {
                kind,
                agent: agent.to_owned(),
                detail,
            });
        }
    }
    for detail in cache_hits_monotonic(&run.requests) {
        found.push(Violation {
            kind: ViolationKind::CacheHits,
            agent: world.agent.id.clone(),
            detail,
        });
    }
    found
}

/// The invariants of one agent's log and of the traffic its session sent
/// (`single`: the run's only agent, whose requests need not name it).
fn judge_agent_log(
    agent: &str,
    events: Result<Vec<Event>, EventFormatError>,
    run: &dshc_scenario::protocol::LoopRun,
    single: bool,
    wire: &dshc_deepseek::WireOptions,
) -> Vec<(ViolationKind, String)> {
    let events = match events {
        Ok(events) => events,
        Err(error) => {
            let detail = format!("the log is not a session log: {error}");
            return vec![(ViolationKind::Replay, detail)];
        }
    };
    let mut found: Vec<(ViolationKind, String)> = seqs_contiguous(&events)
        .into_iter()
        .map(|detail| (ViolationKind::LogSeq, detail))
        .collect();
    let dispatches = crate::replay::dispatch_points(&events);
    let received: Vec<&Value> = run
        .requests
        .iter()
        .filter(|request| {
            let session = request
                .headers
                .iter()
                .find(|[name, _]| name == "x-deepseek-harness-session-id");
            session.map_or(single, |[_, value]| value == agent)
        })
        .map(|request| &request.body)
        .collect();
    let scripted: Vec<&Value> = run
        .llm_requests
        .iter()
        .filter(|request| {
            request["sessionId"]
                .as_str()
                .map_or(single, |id| id == agent)
        })
        .collect();
    // Each attempt went to the wire or to a scripted route. The log does not
    // say which, so a session whose traffic went both ways (or nowhere) is
    // not replay-checked.
    let problems = match (received.is_empty(), scripted.is_empty()) {
        (false, true) => crate::replay::check_replay(&events, agent, &dispatches, &received, wire),
        (true, false) => {
            crate::replay::check_scripted_replay(&events, agent, &dispatches, &scripted)
        }
        _ => Vec::new(),
    };
    found.extend(problems.into_iter().map(|p| (ViolationKind::Replay, p)));
    found.extend(
        headers_change_only_when_different(&events)
            .into_iter()
            .map(|p| (ViolationKind::HeaderLogging, p)),
    );
    found.extend(
        snapshots_change_only_when_different(&events)
            .into_iter()
            .map(|p| (ViolationKind::SnapshotLogging, p)),
    );
    found
}

/// The read side of the session's append-only rule (the write side is
/// `Session::append_raw`'s assertion): event `k` of a log has `seq` `k`.
pub fn seqs_contiguous(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .enumerate()
        .filter(|(index, event)| event.seq != *index as u64)
        .take(1)
        .map(|(index, event)| {
            format!(
                "event {index} of the log has seq {} (a log counts its seqs from 0, one per event)",
                event.seq
            )
        })
        .collect()
}
