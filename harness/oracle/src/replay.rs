//! Replay: rebuild, from a session log alone, the request behind every
//! provider call (spec 07 H12–H13), and check logs against what the
//! provider actually received.
//!
//! A request is the header in force at its dispatch (the fold of the last
//! `request/header`) plus the messages derived from the surface of the same
//! log prefix, serialized for the DeepSeek wire.

use std::cell::RefCell;

use serde_json::{Map, Value, json};

use dshc_model::JsError;

use dshc_deepseek::{WireOptions, wire_body, wire_request};
use dshc_model::session::event_kind;
use dshc_model::session::{DerivedMessages, Event, SurfaceFold, derive_messages_reusing};

/// Why a request cannot be rebuilt from a log.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line is not JSON, or not an event.
    #[error("line {line}: {message}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// No header is in force at the dispatch.
    #[error("no request/header before the dispatch")]
    NoHeader,
    /// The surface does not fold (a bad compaction range, say).
    #[error("the surface does not fold: {}", .0.message)]
    Surface(JsError),
    /// The rebuilt request does not serialize for the wire.
    #[error("the request does not serialize: {}", .0.message)]
    Serialize(JsError),
}

/// The request of a folded header, its `messages` left `null` for a
/// history to fill: the header's config, then `messages`, the system text,
/// the tools and the session id.
fn request_from(header: &Value, session_id: &str) -> Value {
    let mut request: Map<String, Value> = header["config"].as_object().cloned().unwrap_or_default();
    request.insert("messages".into(), Value::Null);
    if let Some(system) = header.get("system") {
        request.insert("system".into(), system.clone());
    }
    if let Some(tools) = header.get("tools") {
        request.insert("tools".into(), tools.clone());
    }
    request.insert("sessionId".into(), json!(session_id));
    Value::Object(request)
}

/// Requests rebuilt at increasing prefix lengths of one log. Each event is
/// folded once (asking for a shorter prefix than the last starts over), and
/// a prefix whose header and surface equal the previous one's is known to
/// rebuild the same request, so replaying a session costs the size of its
/// requests, not its length times its requests. A request's history
/// extends the last one's, and the rest of a request is built once per
/// header.
struct Rebuilder<'a> {
    events: &'a [Event],
    session_id: &'a str,
    fold: SurfaceFold,
    fold_error: Option<JsError>,
    /// The last `request/header` among the first `scanned` events.
    last_header: Option<usize>,
    scanned: usize,
    /// The request of a `request/header` (its index), `messages` empty.
    request: RefCell<Option<(usize, Value)>>,
    /// The history of the last request rebuilt, for the next to extend.
    history: RefCell<Option<DerivedMessages>>,
}

/// What a prefix rebuilds: its header event and surface nodes. Two prefixes
/// with the same key rebuild the same request.
type RebuildKey = (Option<usize>, Vec<u64>);

impl<'a> Rebuilder<'a> {
    fn new(events: &'a [Event], session_id: &'a str) -> Self {
        Rebuilder {
            events,
            session_id,
            fold: SurfaceFold::default(),
            fold_error: None,
            last_header: None,
            scanned: 0,
            request: RefCell::new(None),
            history: RefCell::new(None),
        }
    }

    /// Move to the prefix of `length` events and say what it rebuilds.
    fn seek(&mut self, length: usize) -> RebuildKey {
        let length = length.min(self.events.len());
        if length < self.scanned {
            // Starting over keeps what was derived from the same log.
            let (request, history) = (self.request.take(), self.history.take());
            *self = Rebuilder::new(self.events, self.session_id);
            (self.request, self.history) = (RefCell::new(request), RefCell::new(history));
        }
        for index in self.scanned..length {
            if self.events[index].kind == event_kind::REQUEST_HEADER {
                self.last_header = Some(index);
            }
        }
        self.scanned = length;
        if self.fold_error.is_none()
            && let Err(error) = self.fold.advance(self.events, length)
        {
            self.fold_error = Some(error);
        }
        (self.last_header, self.fold.nodes().to_vec())
    }

    /// The request of the prefix [`Rebuilder::seek`] moved to, handed to
    /// `finish` (which writes what is compared).
    fn finish<T>(
        &self,
        finish: impl FnOnce(&Value) -> Result<T, ReplayError>,
    ) -> Result<T, ReplayError> {
        let index = self.last_header.ok_or(ReplayError::NoHeader)?;
        let mut cached = self.request.borrow_mut();
        let request = match &mut *cached {
            Some((at, request)) if *at == index => request,
            slot => {
                let header = self.events[index]
                    .data
                    .get("header")
                    .ok_or(ReplayError::NoHeader)?;
                let header = dshc_model::header::canonical_header(header);
                &mut slot
                    .insert((index, request_from(&header, self.session_id)))
                    .1
            }
        };
        // A fold error stopped the fold inside the prefix: `seek` only
        // moves forward (a shorter prefix starts over), so an error is
        // always about the prefix it moved to.
        if let Some(error) = &self.fold_error {
            return Err(ReplayError::Surface(error.clone()));
        }
        let prefix = &self.events[..self.scanned];
        let DerivedMessages { nodes, messages } =
            derive_messages_reusing(prefix, self.fold.nodes(), self.history.take());
        // The history fills the request's `messages` for `finish`, and is
        // taken back out after.
        request["messages"] = Value::Array(messages);
        let finished = finish(request);
        if let Value::Array(messages) = std::mem::take(&mut request["messages"]) {
            self.history
                .replace(Some(DerivedMessages { nodes, messages }));
        }
        finished
    }

    /// The request serialized for the DeepSeek wire.
    fn wire_body(&self, wire: &WireOptions) -> Result<Value, ReplayError> {
        self.finish(|request| wire_body(request, wire).map_err(ReplayError::Serialize))
    }
}

/// The wire body of the request dispatched after this prefix.
pub fn wire_body_at(
    prefix: &[Event],
    session_id: &str,
    wire: &WireOptions,
) -> Result<Value, ReplayError> {
    let mut rebuilder = Rebuilder::new(prefix, session_id);
    rebuilder.seek(prefix.len());
    rebuilder.wire_body(wire)
}

/// The wire body of every request a log alone rebuilds, in dispatch order,
/// each with its dispatch point (the seq it was sent before): what `dshc
/// replay` prints and `dshc cache-report` compares. The session id travels
/// in an HTTP header, not in the body, so one id serves the whole log.
pub fn rebuilt_wire_bodies<'a>(
    events: &'a [Event],
    session_id: &'a str,
    wire: &'a WireOptions,
) -> impl Iterator<Item = (usize, Result<Value, ReplayError>)> + 'a {
    // Dispatch points increase, so one rebuilder folds each event once.
    let mut rebuilder = Rebuilder::new(events, session_id);
    dispatch_points(events).into_iter().map(move |point| {
        rebuilder.seek(point);
        (point, rebuilder.wire_body(wire))
    })
}

/// Dispatch points recoverable from a log alone: the position of the first
/// chunk of each attempt (an attempt ends with its `finish` chunk). An
/// attempt aborted before its first chunk leaves no trace and is not found.
pub fn dispatch_points(events: &[Event]) -> Vec<usize> {
    let mut points = Vec::new();
    let mut in_attempt = false;
    for (index, event) in events.iter().enumerate() {
        if event.kind != event_kind::ASSISTANT_CHUNK {
            if event.kind == event_kind::STEP_END
                || event.kind == event_kind::REQUEST_HEADER
                || event.kind == event_kind::REQUEST_CONTEXT
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
pub fn read_log(text: &str) -> Result<Vec<Event>, ReplayError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            let bad = |message: String| ReplayError::BadLine {
                line: number + 1,
                message,
            };
            let value: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
            Event::from_json(&value).map_err(|e| bad(e.to_string()))
        })
        .collect()
}

/// Whether the attempt dispatched at log position `at` was the last one of
/// a turn that ended aborted: the provider may never have received it.
fn aborted_in_flight(events: &[Event], at: usize, next_dispatch: Option<usize>) -> bool {
    let end = events[at.min(events.len())..]
        .iter()
        .position(|e| e.kind == event_kind::TURN_END)
        .map(|offset| at + offset);
    match end {
        Some(end) => {
            events[end].data["reason"]["kind"] == "aborted"
                && next_dispatch.is_none_or(|next| next > end)
        }
        None => false,
    }
}

/// Attempts that may have sent a request the log does not mark, in a turn
/// that ended aborted or failed: a cancel landed while the request was in
/// flight, before its first chunk, or the session refused to log the first
/// chunk (a hook's veto), so the attempt logged nothing. That is a step's
/// first attempt when the step has no chunk, or the retry a failed attempt's
/// `finish` chunk led to (the `agent/request-error` waterfall said `retry`)
/// when no chunk follows it in the step (08 C5: an abort before any chunk
/// leaves no `assistant/message`). Each is the range of log prefix lengths
/// from the step's start, or the failed attempt's `finish`, to the step's
/// end; the provider may or may not have received a request built from one
/// of them.
fn untraced_attempts(events: &[Event]) -> Vec<(usize, usize)> {
    // A turn that completed had its chunks; one that ended aborted, or
    // failed (a chunk the session refused to log, say), may have sent a
    // request no chunk traces.
    let unfinished = |end: &Event| {
        matches!(
            end.data["reason"]["kind"].as_str(),
            Some("aborted" | "error")
        )
    };
    let mut attempts = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    for (index, event) in events.iter().enumerate() {
        match event.kind.as_str() {
            event_kind::STEP_START => open = Some((index + 1, false)),
            event_kind::ASSISTANT_CHUNK => {
                let chunk = &event.data["chunk"];
                let failed = chunk["type"] == "finish"
                    && matches!(chunk["reason"]["kind"].as_str(), Some("error" | "aborted"));
                if failed && open.is_some() {
                    // A retry may follow; until one of its chunks arrives it
                    // is untraced.
                    open = Some((index + 1, false));
                } else if let Some((_, chunked)) = open.as_mut() {
                    *chunked = true;
                }
            }
            // The step ends at its `step/end`, or, when the session refused
            // to log that, at its turn's end.
            event_kind::STEP_END | event_kind::TURN_END => {
                if let Some((from, false)) = open.take() {
                    // The step's turn ends at its `turn/end`, if the
                    // session logged one before the next turn starts.
                    let turn_end = events[index..].iter().find(|e| {
                        e.kind == event_kind::TURN_END || e.kind == event_kind::TURN_START
                    });
                    if turn_end
                        .is_none_or(|end| end.kind == event_kind::TURN_START || unfinished(end))
                    {
                        attempts.push((from, index));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some((from, false)) = open {
        attempts.push((from, events.len()));
    }
    attempts
}

/// Whether the attempt whose first chunk is at `at` is that chunk alone, a
/// failure with no HTTP status: it may have failed before anything was sent
/// (no adapter for the provider, a request that did not build).
fn failed_without_response(events: &[Event], at: usize) -> bool {
    let Some(first) = events.get(at) else {
        return false;
    };
    let chunk = &first.data["chunk"];
    let alone = events
        .get(at + 1)
        .is_none_or(|next| next.kind != event_kind::ASSISTANT_CHUNK);
    alone
        && chunk["type"] == "finish"
        && chunk["reason"]["failure"].get("status").is_none()
        && chunk["reason"]["kind"] != "stop"
}

/// Whether the attempt whose first chunk is at `at` failed, with nothing
/// sent, with the error its body's serialization throws. A finish is an
/// attempt's last chunk, so one that is its first is all of it (a retry's
/// attempt may follow at once).
fn failed_before_sending(events: &[Event], at: usize, error: &dshc_model::JsError) -> bool {
    let chunk = &events[at].data["chunk"];
    let failure = &chunk["reason"]["failure"];
    chunk["type"] == "finish"
        && failure.get("status").is_none()
        && failure["message"] == error.message.as_str()
        && failure["code"].as_str() == error.code.as_deref()
}

/// Compare each received body with its reconstruction from the log prefix at
/// its recorded dispatch; return one message per disagreement. A dispatch
/// whose turn was aborted while the request was in flight may have no
/// received counterpart.
pub fn check_replay(
    events: &[Event],
    session_id: &str,
    dispatches: &[usize],
    received: &[&Value],
    wire: &WireOptions,
) -> Vec<String> {
    check_replay_with(events, session_id, dispatches, received, &|request| {
        wire_request(request, wire)
            .map(|body| body.to_bytes())
            .map_err(ReplayError::Serialize)
    })
}

/// [`check_replay`] for a scripted route below the wire: each request its
/// `stream()` received equals the harness request rebuilt from the log
/// prefix at its dispatch, as that route's adapter receives it
/// ([`for_called_route`]).
pub fn check_scripted_replay(
    events: &[Event],
    session_id: &str,
    dispatches: &[usize],
    received: &[&Value],
) -> Vec<String> {
    check_replay_with(events, session_id, dispatches, received, &|request| {
        Ok(for_called_route(request.clone()).to_string().into_bytes())
    })
}

/// The rebuilt request as the adapter of its route receives it (dsh-llm
/// `forAdapter`): a model message keeps its `replayState` only when its
/// route is served by the called adapter. Each scripted route of a scenario
/// is its own adapter, kept across re-registration, so that is exactly a
/// message of the request's own route; any other gets the source `{kind,
/// provider, model}`.
fn for_called_route(mut request: Value) -> Value {
    let provider = request["provider"].clone();
    for message in request["messages"].as_array_mut().into_iter().flatten() {
        let source = &message["source"];
        let foreign = message["role"] == "assistant"
            && source["kind"] == "model"
            && source.get("replayState").is_some()
            && source["provider"] != provider;
        if foreign {
            message["source"] = json!({
                "kind": "model",
                "provider": source["provider"],
                "model": source["model"],
            });
        }
    }
    request
}

fn check_replay_with(
    events: &[Event],
    session_id: &str,
    dispatches: &[usize],
    received: &[&Value],
    finish: &dyn Fn(&Value) -> Result<Vec<u8>, ReplayError>,
) -> Vec<String> {
    // Compared as JSON text: key order is part of the wire body.
    let text = |value: &Value| serde_json::to_string(value).unwrap_or_default();
    let received: Vec<(&Value, String)> = received.iter().map(|body| (*body, text(body))).collect();
    let mut at_dispatch = Rebuilder::new(events, session_id);
    let mut search = Rebuilder::new(events, session_id);
    // A request is accounted for when some log prefix between the previous
    // dispatch point and this one rebuilds it.
    let mut explained = |body: &str, from: usize, to: usize| {
        let mut previous_key = None;
        (from..=to.min(events.len())).any(|length| {
            let key = search.seek(length);
            if previous_key.as_ref() == Some(&key) {
                return false;
            }
            previous_key = Some(key);
            search
                .finish(finish)
                .is_ok_and(|rebuilt| rebuilt == body.as_bytes())
        })
    };
    let mut problems = Vec::new();
    let mut pending = received.iter().enumerate().peekable();
    let mut previous = 0;
    let mut untraced = untraced_attempts(events).into_iter().peekable();
    for (position, dispatch) in dispatches.iter().enumerate() {
        // Requests of untraced attempts before this dispatch, in order.
        while let Some((from, to)) = untraced.next_if(|(from, _)| from <= dispatch) {
            if pending
                .next_if(|(_, (_, body))| explained(body, from, to))
                .is_some()
            {
                previous = to;
            }
        }
        at_dispatch.seek(*dispatch);
        let rebuilt = match at_dispatch.finish(finish) {
            Ok(rebuilt) => rebuilt,
            // The body did not build (an image whose read fails): the
            // attempt failed with that error, and nothing was sent.
            Err(ReplayError::Serialize(error))
                if failed_before_sending(events, *dispatch, &error) =>
            {
                continue;
            }
            Err(error) => {
                problems.push(format!(
                    "the request dispatched at log length {dispatch} cannot be reconstructed: {error}"
                ));
                continue;
            }
        };
        let skippable = aborted_in_flight(events, *dispatch, dispatches.get(position + 1).copied())
            || failed_without_response(events, *dispatch);
        match pending.peek() {
            Some((_, (_, body))) if rebuilt == body.as_bytes() => {
                pending.next();
            }
            // Events logged between the dispatch and the attempt's first
            // chunk (a compaction, a cancel) moved the chunk later; or an
            // earlier attempt logged nothing. Either way the body is the one
            // some prefix since the previous dispatch rebuilds.
            Some((_, (_, body))) if explained(body, previous, *dispatch) => {
                pending.next();
            }
            _ if skippable => {}
            Some((index, (body, _))) => {
                problems.push(format!(
                    "request {index} differs from its reconstruction from the log prefix of {dispatch} events:\n  received:      {body}\n  reconstructed: {}", String::from_utf8_lossy(&rebuilt)
                ));
                pending.next();
            }
            None => problems.push(format!(
                "the request dispatched at log length {dispatch} never reached the provider"
            )),
        }
        previous = *dispatch;
    }
    for (from, to) in untraced {
        pending.next_if(|(_, (_, body))| explained(body, from, to));
    }
    for (index, (_, body)) in pending {
        if !explained(body, previous, events.len()) {
            problems.push(format!(
                "request {index} was received but no prefix of the log rebuilds it"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_model::session::SurfaceOp;
    use std::rc::Rc;

    fn log() -> Vec<Event> {
        let header = json!({"header": {"config": {"provider": "p", "model": "m"}, "system": "S"}, "reason": "initial"});
        let prompt = json!({"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "msg-1"});
        vec![
            Event {
                kind: event_kind::USER_MESSAGE.into(),
                seq: 0,
                time: 0,
                data: Rc::new(prompt),
                source_event_seqs: None,
                surface_op: Some(SurfaceOp::Append),
                ignorable: false,
                seeded: None,
            },
            Event {
                kind: event_kind::REQUEST_HEADER.into(),
                seq: 1,
                time: 0,
                data: Rc::new(header),
                source_event_seqs: None,
                surface_op: None,
                ignorable: false,
                seeded: None,
            },
        ]
    }

    #[test]
    fn a_request_is_the_folded_header_plus_the_surface_messages() {
        let body = wire_body_at(&log(), "s", &WireOptions::default()).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}])
        );
        assert!(check_replay(&log(), "s", &[2], &[&body], &WireOptions::default()).is_empty());
    }

    #[test]
    fn a_request_that_differs_from_its_reconstruction_is_flagged() {
        let mut body = wire_body_at(&log(), "s", &WireOptions::default()).unwrap();
        body["messages"][0]["content"] = json!("another system");
        let problems = check_replay(&log(), "s", &[2], &[&body], &WireOptions::default());
        assert_eq!(problems.len(), 1, "{problems:?}");
        let unaccounted = check_replay(&log(), "s", &[], &[&json!({})], &WireOptions::default());
        assert_eq!(unaccounted.len(), 1);
    }

    #[test]
    fn replay_state_reaches_only_the_route_that_produced_it() {
        let answer = |provider: &str| json!({"role": "assistant", "content": [], "source": {"kind": "model", "provider": provider, "model": "m", "replayState": {"r": 1}}});
        let request = json!({"provider": "a", "messages": [answer("a"), answer("b")]});
        let received = for_called_route(request);
        assert_eq!(
            received["messages"][0],
            answer("a"),
            "its own route keeps it"
        );
        assert_eq!(
            received["messages"][1]["source"],
            json!({"kind": "model", "provider": "b", "model": "m"})
        );
    }

    fn boundary(kind: &str, data: Value) -> Event {
        Event {
            kind: kind.into(),
            seq: 0,
            time: 0,
            data: Rc::new(data),
            source_event_seqs: None,
            surface_op: None,
            ignorable: false,
            seeded: None,
        }
    }

    #[test]
    fn an_attempt_without_chunks_is_untraced_only_in_a_turn_that_did_not_complete() {
        let turn = |reason: &str, step_end: bool| {
            let mut events = vec![
                boundary(event_kind::TURN_START, json!({})),
                boundary(event_kind::STEP_START, json!({})),
            ];
            if step_end {
                events.push(boundary(event_kind::STEP_END, json!({})));
            }
            events.push(boundary(
                event_kind::TURN_END,
                json!({"reason": {"kind": reason}}),
            ));
            events
        };
        assert_eq!(untraced_attempts(&turn("aborted", true)), vec![(2, 2)]);
        assert_eq!(untraced_attempts(&turn("error", true)), vec![(2, 2)]);
        assert_eq!(untraced_attempts(&turn("completed", true)), vec![]);
        // A step whose step/end the session refused ends with its turn.
        assert_eq!(untraced_attempts(&turn("error", false)), vec![(2, 2)]);
        // A turn whose turn/end the session refused ends where the next starts.
        let mut unended = turn("completed", true);
        unended.pop();
        unended.extend(turn("completed", true));
        assert_eq!(untraced_attempts(&unended), vec![(2, 2)]);
    }
}
