//! The session log: append-only events with contiguous `seq`, the surface
//! (which message events the model sees, in order), and the folds the loop
//! reads back (latest request header and context, derived messages).
//!
//! Events keep upstream's JSON shapes and key orders (spec 00), so a log
//! written here reads like one written by dsh. Time comes from an injected
//! clock; the session never reads one itself.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::js::{JsError, JsValue};

/// Where an event enters the surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Appended at the surface tail.
    Append,
    /// Replaces the surface nodes from `start` to `end` (seqs, inclusive).
    Replace {
        /// First replaced node.
        start: u64,
        /// Last replaced node.
        end: u64,
    },
}

impl SurfaceOp {
    fn to_json(&self) -> Value {
        match self {
            SurfaceOp::Append => json!("append"),
            SurfaceOp::Replace { start, end } => {
                json!({"op": "replace", "start": start, "end": end})
            }
        }
    }

    fn from_json(value: &Value) -> Option<SurfaceOp> {
        if value == "append" {
            return Some(SurfaceOp::Append);
        }
        let object = value.as_object()?;
        if object.len() != 3 || object.get("op")? != "replace" {
            return None;
        }
        Some(SurfaceOp::Replace {
            start: object.get("start")?.as_u64()?,
            end: object.get("end")?.as_u64()?,
        })
    }
}

/// One logged event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Event type, e.g. `turn/start`.
    pub kind: String,
    /// Position in the log, from 0.
    pub seq: u64,
    /// Epoch milliseconds from the session's clock.
    pub time: u64,
    /// Payload.
    pub data: Value,
    /// Earlier events this one derives from.
    pub source_event_seqs: Option<Vec<u64>>,
    /// How it joins the surface (message events only).
    pub surface_op: Option<SurfaceOp>,
}

impl Event {
    /// The event as upstream serializes it: `{type, seq, time, data, sourceEventSeqs?, surfaceOp?}`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("type".into(), json!(self.kind));
        object.insert("seq".into(), json!(self.seq));
        object.insert("time".into(), json!(self.time));
        object.insert("data".into(), self.data.clone());
        if let Some(seqs) = &self.source_event_seqs {
            object.insert("sourceEventSeqs".into(), json!(seqs));
        }
        if let Some(op) = &self.surface_op {
            object.insert("surfaceOp".into(), op.to_json());
        }
        Value::Object(object)
    }

    /// Read an event back from its JSON form.
    pub fn from_json(value: &Value) -> Result<Event, EventFormatError> {
        let object = value
            .as_object()
            .ok_or(EventFormatError("an event is a JSON object"))?;
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .ok_or(EventFormatError("event without a string `type`"))?;
        let seq = object
            .get("seq")
            .and_then(Value::as_u64)
            .ok_or(EventFormatError("event without a `seq`"))?;
        let time = object
            .get("time")
            .and_then(Value::as_u64)
            .ok_or(EventFormatError("event without a `time`"))?;
        let data = object
            .get("data")
            .cloned()
            .ok_or(EventFormatError("event without `data`"))?;
        let source_event_seqs = match object.get("sourceEventSeqs") {
            None => None,
            Some(seqs) => Some(
                seqs.as_array()
                    .ok_or(EventFormatError("`sourceEventSeqs` is not an array"))?
                    .iter()
                    .map(|s| {
                        s.as_u64()
                            .ok_or(EventFormatError("`sourceEventSeqs` holds a non-integer"))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let surface_op = match object.get("surfaceOp") {
            None => None,
            Some(op) => {
                Some(SurfaceOp::from_json(op).ok_or(EventFormatError("invalid `surfaceOp`"))?)
            }
        };
        Ok(Event {
            kind: kind.to_string(),
            seq,
            time,
            data,
            source_event_seqs,
            surface_op,
        })
    }

    /// The message this event contributes to the model's history, if any
    /// (`deriveEventMessage`).
    pub fn derived_message(&self) -> Option<&Value> {
        match self.kind.as_str() {
            "user/message" => Some(&self.data),
            "assistant/message" => {
                let message = self.data.get("message")?;
                let empty = message
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty);
                (!empty).then_some(message)
            }
            "tool/result" => self.data.get("message"),
            _ => None,
        }
    }
}

const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Surface metadata for an append.
#[derive(Clone, Debug, Default)]
pub struct SurfaceMeta {
    /// How the event joins the surface.
    pub surface_op: Option<SurfaceOp>,
    /// Earlier events it derives from.
    pub source_event_seqs: Option<Vec<u64>>,
}

impl SurfaceMeta {
    /// `{surfaceOp: 'append'}`.
    pub fn append() -> Self {
        SurfaceMeta {
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: None,
        }
    }

    /// `{surfaceOp: 'append', sourceEventSeqs}`.
    pub fn append_citing(seqs: Vec<u64>) -> Self {
        SurfaceMeta {
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: Some(seqs),
        }
    }
}

/// A clock in epoch milliseconds, supplied by whoever runs the session.
pub type Clock = Rc<dyn Fn() -> u64>;

/// A synchronous observer of appended events (`session/event`).
/// A `session/event` observer. A throw (`Err`) is contained: the session
/// warns and the append stands.
pub type Observer = Rc<dyn Fn(&Event) -> Result<(), JsError>>;

/// Where a session's contained observer failures go (`ctx.logger.warn`).
pub type WarningSink = Rc<dyn Fn(String)>;

#[derive(Default)]
struct Surface {
    nodes: Vec<u64>,
    replace_generation: u64,
}

impl Surface {
    /// Validate and apply one event's surface transition.
    fn apply(&mut self, event: &Event) -> Result<(), JsError> {
        let eligible = SURFACE_TYPES.contains(&event.kind.as_str());
        let Some(op) = &event.surface_op else {
            if eligible {
                return Err(JsError::error(format!(
                    "session event \"{}\" is surface-eligible and requires a surfaceOp marker",
                    event.kind
                )));
            }
            if event.source_event_seqs.is_some() {
                return Err(JsError::error(format!(
                    "session event \"{}\" is not surface-eligible and cannot carry sourceEventSeqs",
                    event.kind
                )));
            }
            return Ok(());
        };
        if !eligible {
            return Err(JsError::error(format!(
                "session event \"{}\" is not surface-eligible and cannot carry surfaceOp",
                event.kind
            )));
        }
        let sources = event.source_event_seqs.clone().unwrap_or_default();
        if event.source_event_seqs.as_ref().is_some_and(Vec::is_empty)
            && event.kind != "assistant/message"
        {
            return Err(JsError::error(
                "sourceEventSeqs must not be empty except on assistant/message",
            ));
        }
        if let Some(bad) = sources.iter().find(|s| **s >= event.seq) {
            return Err(JsError::error(format!(
                "sourceEventSeqs must reference earlier events: {bad} >= current seq {}",
                event.seq
            )));
        }
        match op {
            SurfaceOp::Append => self.nodes.push(event.seq),
            SurfaceOp::Replace { start, end } => {
                let start_index = self.nodes.iter().position(|n| n == start).ok_or_else(|| {
                    JsError::error(format!(
                        "surface replace: start seq {start} not found in surface"
                    ))
                })?;
                let end_index = self.nodes.iter().position(|n| n == end).ok_or_else(|| {
                    JsError::error(format!(
                        "surface replace: end seq {end} not found in surface"
                    ))
                })?;
                if start_index > end_index {
                    return Err(JsError::error(format!(
                        "surface replace: start seq {start} (index {start_index}) is after end seq {end} (index {end_index})"
                    )));
                }
                let missing: Vec<String> = self.nodes[start_index..=end_index]
                    .iter()
                    .filter(|n| !sources.contains(n))
                    .map(u64::to_string)
                    .collect();
                if !missing.is_empty() {
                    return Err(JsError::error(format!(
                        "surface replace: sourceEventSeqs must include every shadowed surface node; missing {}",
                        missing.join(", ")
                    )));
                }
                self.nodes.splice(start_index..=end_index, [event.seq]);
                self.replace_generation += 1;
            }
        }
        Ok(())
    }
}

struct SessionState {
    id: String,
    cwd: Option<String>,
    seed_length: u64,
    log: Vec<Event>,
    surface: Surface,
    observers: Vec<Observer>,
    /// Observers are being notified of an append; another append now is refused.
    publishing: bool,
    warnings: Option<WarningSink>,
}

/// The `meta` a session is created with (`sessions.prepare(id, {meta})`):
/// the header fields a caller may set, each any JavaScript value.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionMeta {
    /// `cwd`.
    pub cwd: JsValue,
    /// `parentSession`.
    pub parent_session: JsValue,
    /// `seedLength`.
    pub seed_length: JsValue,
    /// `origin`.
    pub origin: JsValue,
    /// `delegationDepth`.
    pub delegation_depth: JsValue,
    /// `agentPreset`.
    pub agent_preset: JsValue,
}

impl Default for SessionMeta {
    fn default() -> Self {
        SessionMeta {
            cwd: JsValue::Undefined,
            parent_session: JsValue::Undefined,
            seed_length: JsValue::Undefined,
            origin: JsValue::Undefined,
            delegation_depth: JsValue::Undefined,
            agent_preset: JsValue::Undefined,
        }
    }
}

impl SessionMeta {
    /// `snapshotSessionHeader` then `validateSessionHeader` (dsh-session):
    /// the header of only the defined fields must be lossless JSON, then
    /// each field is checked in upstream's order. Returns the `cwd`.
    pub fn validate(&self) -> Result<Option<String>, JsError> {
        let fields = [
            &self.cwd,
            &self.parent_session,
            &self.seed_length,
            &self.origin,
            &self.delegation_depth,
            &self.agent_preset,
        ];
        if fields
            .iter()
            .any(|field| !field.is_undefined() && field.to_lossless_json().is_none())
        {
            return Err(JsError::error(
                "session header is not losslessly JSON-serializable",
            ));
        }
        let non_negative_integer = |value: &JsValue| {
            value.is_safe_integer() && value.as_number().is_some_and(|x| x >= 0.0)
        };
        let cwd = match &self.cwd {
            JsValue::Undefined => None,
            JsValue::String(cwd) if cwd.starts_with('/') => Some(cwd.clone()),
            JsValue::String(cwd) => {
                return Err(JsError::error(format!(
                    "session header cwd must be an absolute path, got \"{cwd}\""
                )));
            }
            _ => return Err(JsError::error("session header cwd must be a string")),
        };
        let checks: [(&JsValue, bool, &str); 5] = [
            (
                &self.parent_session,
                self.parent_session.as_str().is_some(),
                "session header parentSession must be a string",
            ),
            (
                &self.seed_length,
                non_negative_integer(&self.seed_length),
                "session header seedLength must be a non-negative safe integer",
            ),
            (
                &self.origin,
                self.origin.as_str() == Some("subagent"),
                "session header origin must be \"subagent\"",
            ),
            (
                &self.delegation_depth,
                non_negative_integer(&self.delegation_depth),
                "session header delegationDepth must be a non-negative safe integer",
            ),
            (
                &self.agent_preset,
                self.agent_preset.as_str().is_some(),
                "session header agentPreset must be a string",
            ),
        ];
        for (value, valid, message) in checks {
            if !value.is_undefined() && !valid {
                return Err(JsError::error(message));
            }
        }
        Ok(cwd)
    }
}

/// A session: its log, surface and observers. Cloning shares it.
#[derive(Clone)]
pub struct Session {
    state: Rc<RefCell<SessionState>>,
    clock: Clock,
}

impl Session {
    /// A new, empty session.
    pub fn new(id: &str, cwd: Option<String>, clock: Clock) -> Session {
        Session {
            state: Rc::new(RefCell::new(SessionState {
                id: id.to_string(),
                cwd,
                seed_length: 0,
                log: Vec::new(),
                surface: Surface::default(),
                observers: Vec::new(),
                publishing: false,
                warnings: None,
            })),
            clock,
        }
    }

    /// A session rebuilt from a seed log (resume): the seed is validated and
    /// `session/end-seed {}` appended unless the seed already ends with it.
    pub fn from_seed(
        id: &str,
        cwd: Option<String>,
        seed: Vec<Event>,
        clock: Clock,
    ) -> Result<Session, JsError> {
        let session = Session::new(id, cwd, clock);
        {
            let mut state = session.state.borrow_mut();
            for (index, event) in seed.into_iter().enumerate() {
                if event.seq != index as u64 {
                    return Err(JsError::error(format!(
                        "seed event at index {index} has seq {} (expected {index}); seed must be contiguous from 0",
                        event.seq
                    )));
                }
                state.surface.apply(&event).map_err(|error| {
                    JsError::error(format!(
                        "invalid seed event at index {index}: {}",
                        error.message
                    ))
                })?;
                state.log.push(event);
            }
            state.seed_length = state.log.len() as u64;
        }
        if session.last_kind().as_deref() != Some("session/end-seed") {
            session.append("session/end-seed", json!({}), SurfaceMeta::default())?;
        }
        Ok(session)
    }

    fn last_kind(&self) -> Option<String> {
        self.state.borrow().log.last().map(|e| e.kind.clone())
    }

    /// The session id.
    pub fn id(&self) -> String {
        self.state.borrow().id.clone()
    }

    /// `session.header.cwd`.
    pub fn cwd(&self) -> Option<String> {
        self.state.borrow().cwd.clone()
    }

    /// How many events came from the constructor seed.
    pub fn seed_length(&self) -> u64 {
        self.state.borrow().seed_length
    }

    /// Register a `session/event` observer.
    pub fn subscribe(&self, observer: Observer) {
        self.state.borrow_mut().observers.push(observer);
    }

    /// Where contained observer failures are reported.
    pub fn set_warning_sink(&self, sink: WarningSink) {
        self.state.borrow_mut().warnings = Some(sink);
    }

    /// Report a warning about this session (an observer's late rejection).
    pub fn warn(&self, message: String) {
        let sink = self.state.borrow().warnings.clone();
        if let Some(sink) = sink {
            sink(message);
        }
    }

    /// Append one event, validating its surface metadata; notify observers.
    pub fn append(&self, kind: &str, data: Value, meta: SurfaceMeta) -> Result<Event, JsError> {
        let time = (self.clock)();
        let (event, observers) = {
            let mut state = self.state.borrow_mut();
            if state.publishing {
                return Err(JsError::error(
                    "session append cannot reenter while another append is being published",
                ));
            }
            let event = Event {
                kind: kind.to_string(),
                seq: state.log.len() as u64,
                time,
                data,
                source_event_seqs: meta.source_event_seqs,
                surface_op: meta.surface_op,
            };
            state.surface.apply(&event)?;
            state.log.push(event.clone());
            debug_assert_eq!(
                state.log.last().map(|e| e.seq),
                Some(state.log.len() as u64 - 1),
                "seqs are contiguous from 0"
            );
            state.publishing = true;
            (event, state.observers.clone())
        };
        // dsh-session's `invokeContainedSessionObservers`: every observer
        // runs; a throw is logged, never propagated.
        for observer in observers {
            if let Err(error) = observer(&event) {
                let id = self.id();
                self.warn(format!(
                    "session \"{id}\": session/event listener threw: {}",
                    error.to_js_string()
                ));
            }
        }
        self.state.borrow_mut().publishing = false;
        Ok(event)
    }

    /// A snapshot of the log.
    pub fn events(&self) -> Vec<Event> {
        self.state.borrow().log.clone()
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.state.borrow().log.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Current surface nodes (seqs), in model-visible order.
    pub fn surface_nodes(&self) -> Vec<u64> {
        self.state.borrow().surface.nodes.clone()
    }

    /// The latest canonical request header, if any (`requestHeader()`).
    pub fn request_header(&self) -> Option<Value> {
        fold_request_header(&self.state.borrow().log)
    }

    /// The latest `request/context` data, if any.
    pub fn request_context(&self) -> Option<Value> {
        self.state
            .borrow()
            .log
            .iter()
            .rev()
            .find(|e| e.kind == "request/context")
            .map(|e| e.data.clone())
    }

    /// The model-visible history (`deriveMessages()`).
    pub fn derive_messages(&self) -> Vec<Value> {
        let state = self.state.borrow();
        derive_messages(&state.log, &state.surface.nodes)
    }

    /// The log as JSON lines.
    pub fn to_jsonl(&self) -> String {
        events_to_jsonl(&self.state.borrow().log)
    }
}

/// JSON lines, one event per line.
pub fn events_to_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for event in events {
        out.push_str(&event.to_json().to_string());
        out.push('\n');
    }
    out
}

/// The canonical header of the last `request/header` event (`foldRequestHeader`).
pub fn fold_request_header(events: &[Event]) -> Option<Value> {
    events
        .iter()
        .rev()
        .find(|e| e.kind == "request/header")
        .and_then(|e| e.data.get("header"))
        .map(super::header::canonical_header)
}

/// Messages derived from the surface nodes of a log prefix.
pub fn derive_messages(events: &[Event], nodes: &[u64]) -> Vec<Value> {
    nodes
        .iter()
        .filter_map(|seq| events.get(*seq as usize))
        .filter_map(|event| event.derived_message().cloned())
        .collect()
}

/// Fold a log prefix's surface (validating it) into its node list.
pub fn fold_surface(events: &[Event]) -> Result<Vec<u64>, JsError> {
    let mut surface = Surface::default();
    for (index, event) in events.iter().enumerate() {
        if event.seq != index as u64 {
            return Err(JsError::error(format!(
                "session event seq {} is not contiguous; expected {index}",
                event.seq
            )));
        }
        surface.apply(event)?;
    }
    Ok(surface.nodes)
}
/// A JSON value that is not a session event; says which part is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventFormatError(pub &'static str);

impl std::fmt::Display for EventFormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for EventFormatError {}
