//! The session log: append-only events with contiguous `seq`, the surface
//! (which message events the model sees, in order), and the folds the loop
//! reads back (latest request header and context, derived messages).
//!
//! Events keep upstream's JSON shapes and key orders (spec 00), so a log
//! written here reads like one written by dsh. Time comes from an injected
//! clock; the session never reads one itself.

pub mod event_kind;
mod input;
mod surface;

use surface::Surface;
pub use surface::{RawSurfaceMeta, SurfaceFold};

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

/// dsh-session's refusal of an append made while observers are being told
/// of another one.
pub const REENTRANT_APPEND: &str =
    "session append cannot reenter while another append is being published";

/// One logged event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Event type, e.g. `turn/start`.
    pub kind: String,
    /// Position in the log, from 0.
    pub seq: u64,
    /// Epoch milliseconds from the session's clock.
    pub time: u64,
    /// Payload, shared by every copy of the event: the log, its snapshots
    /// and what observers are handed (a copy of an event costs no copy of
    /// its payload).
    pub data: Rc<Value>,
    /// Earlier events this one derives from.
    pub source_event_seqs: Option<Vec<u64>>,
    /// How it joins the surface (message events only).
    pub surface_op: Option<SurfaceOp>,
    /// `ignorable: true`, which only seeded events carry.
    pub ignorable: bool,
    /// A seeded event's JSON exactly as it came in (its key order is kept,
    /// as upstream keeps the seed's objects).
    pub seeded: Option<Value>,
}

/// The keys of an event's JSON form that [`Event::from_json`] reads, in
/// the order it reads them.
const EVENT_FIELDS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "sourceEventSeqs",
    "surfaceOp",
    "ignorable",
];

impl Event {
    /// The event as upstream serializes it: `{type, seq, time, data, sourceEventSeqs?, surfaceOp?}`.
    pub fn to_json(&self) -> Value {
        match &self.seeded {
            Some(seeded) => seeded.clone(),
            None => self.json_with(Value::clone(&self.data)),
        }
    }

    /// [`Event::to_json`], moving the payload instead of copying it.
    pub fn into_json(mut self) -> Value {
        match self.seeded.take() {
            Some(seeded) => seeded,
            None => {
                let data = std::mem::take(&mut self.data);
                self.json_with(Rc::unwrap_or_clone(data))
            }
        }
    }

    fn json_with(&self, data: Value) -> Value {
        let mut object = Map::with_capacity(7); // at most seven keys: never grown
        object.insert("type".into(), json!(self.kind));
        object.insert("seq".into(), json!(self.seq));
        object.insert("time".into(), json!(self.time));
        object.insert("data".into(), data);
        if let Some(seqs) = &self.source_event_seqs {
            object.insert("sourceEventSeqs".into(), json!(seqs));
        }
        if let Some(op) = &self.surface_op {
            object.insert("surfaceOp".into(), op.to_json());
        }
        if self.ignorable {
            object.insert("ignorable".into(), Value::Bool(true));
        }
        Value::Object(object)
    }

    /// [`Event::from_json`], moving the payload out of the JSON instead of
    /// copying it.
    pub fn from_owned_json(mut value: Value) -> Result<Event, EventFormatError> {
        let data = value.get_mut("data").map(std::mem::take);
        let mut event = Event::from_json(&value)?;
        if let Some(data) = data {
            event.data = Rc::new(data);
        }
        Ok(event)
    }

    /// Read an event back from its JSON form.
    pub fn from_json(value: &Value) -> Result<Event, EventFormatError> {
        let object = value
            .as_object()
            .ok_or(EventFormatError("an event is a JSON object"))?;
        // One pass over the event's few keys finds its fields without
        // hashing a key (every judged log is read back event by event).
        let mut fields: [Option<&Value>; EVENT_FIELDS.len()] = [None; EVENT_FIELDS.len()];
        for (key, value) in object {
            if let Some(at) = EVENT_FIELDS.iter().position(|field| field == key) {
                fields[at] = Some(value);
            }
        }
        let [
            kind,
            seq,
            time,
            data,
            source_event_seqs,
            surface_op,
            ignorable,
        ] = fields;
        let kind = kind
            .and_then(Value::as_str)
            .ok_or(EventFormatError("event without a string `type`"))?;
        let seq = seq
            .and_then(Value::as_u64)
            .ok_or(EventFormatError("event without a `seq`"))?;
        let time = time
            .and_then(Value::as_u64)
            .ok_or(EventFormatError("event without a `time`"))?;
        let data = data
            .cloned()
            .map(Rc::new)
            .ok_or(EventFormatError("event without `data`"))?;
        let source_event_seqs = match source_event_seqs {
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
        let surface_op = match surface_op {
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
            ignorable: ignorable == Some(&Value::Bool(true)),
            seeded: None,
        })
    }

    /// The message this event contributes to the model's history, if any
    /// (`deriveEventMessage`).
    pub fn derived_message(&self) -> Option<&Value> {
        match self.kind.as_str() {
            event_kind::USER_MESSAGE => Some(&self.data),
            event_kind::ASSISTANT_MESSAGE => {
                let message = self.data.get("message")?;
                let empty = message
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty);
                (!empty).then_some(message)
            }
            event_kind::TOOL_RESULT => self.data.get("message"),
            _ => None,
        }
    }
}

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

/// A hook inside `append`, run after the event is validated and before it
/// enters the log (upstream: an `internal/dispatch` listener that sees the
/// `session/event` dispatch). A throw (`Err`) vetoes the append: nothing is
/// logged and `append` throws it. While hooks run, another append is
/// refused, as while observers are told.
pub type AppendHook = Rc<dyn Fn(&Event) -> Result<(), JsError>>;

/// Where a session's contained observer failures go (`ctx.logger.warn`).
pub type WarningSink = Rc<dyn Fn(String)>;

struct SessionState {
    id: String,
    cwd: Option<String>,
    log: Vec<Event>,
    surface: Surface,
    /// Observers, each with the key it can be removed by, if any.
    observers: Vec<(Option<u64>, Observer)>,
    /// Append hooks, each with the key it is removed by.
    append_hooks: Vec<(u64, AppendHook)>,
    /// Observers are being notified of an append; another append now is refused.
    publishing: bool,
    warnings: Option<WarningSink>,
    /// The canonical form of the latest `request/header` event, with that
    /// event's seq: the header in force is read several times an attempt and
    /// changes only when a header is logged. A cell of its own, so that it is
    /// filled while the log is borrowed.
    header_memo: RefCell<Option<(u64, Rc<Value>)>>,
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
                log: Vec::new(),
                surface: Surface::default(),
                observers: Vec::new(),
                append_hooks: Vec::new(),
                publishing: false,
                warnings: None,
                header_memo: RefCell::new(None),
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
        let meta = SessionMeta {
            cwd: cwd.map_or(JsValue::Undefined, JsValue::String),
            ..SessionMeta::default()
        };
        let seed = seed.into_iter().enumerate().map(|(index, event)| {
            input::check_seed_model_event(index, &event)?;
            Ok(SeedEvent::Model(event))
        });
        Session::create_checked(id, &meta, Some(seed), clock)
    }

    /// `Session.create(id, seed, header)` (dsh-session): each seed event is
    /// checked (`session_input`) and folded into the surface, then the
    /// header is validated, then `session/end-seed` is appended unless the
    /// seed ends with it. No seed: a fresh session.
    pub fn create(
        id: &str,
        meta: &SessionMeta,
        seed: Option<&[JsValue]>,
        clock: Clock,
    ) -> Result<Session, JsError> {
        let seed = seed.map(|seed| {
            seed.iter()
                .enumerate()
                .map(|(index, value)| input::check_seed_event(index, value).map(SeedEvent::Json))
        });
        Session::create_checked(id, meta, seed, clock)
    }

    /// [`Session::create`] over seed events checked one at a time, in order,
    /// each just before it is folded (so the first bad event is the error).
    fn create_checked(
        id: &str,
        meta: &SessionMeta,
        seed: Option<impl Iterator<Item = Result<SeedEvent, JsError>>>,
        clock: Clock,
    ) -> Result<Session, JsError> {
        let seeded = seed.is_some();
        let mut log: Vec<Event> = Vec::new();
        let mut surface = Surface::default();
        for (index, seed_event) in seed.into_iter().flatten().enumerate() {
            let refused = |error: JsError| {
                JsError::error(format!(
                    "invalid seed event at index {index}: {}",
                    error.message
                ))
            };
            let event = match seed_event? {
                // Folded as it is: the surface check reads the metadata it
                // carries, and one seeded itself keeps its JSON as it came.
                SeedEvent::Model(event) => {
                    surface.apply(&event, &log).map_err(refused)?;
                    event
                }
                SeedEvent::Json(object) => {
                    seed_from_json(object, &mut surface, &log).map_err(refused)?
                }
            };
            log.push(event);
        }
        let cwd = meta.validate()?;
        let session = Session::new(id, cwd, clock);
        {
            let mut state = session.state.borrow_mut();
            state.log = log;
            state.surface = surface;
        }
        if seeded && session.last_kind().as_deref() != Some(event_kind::SESSION_END_SEED) {
            session.append(
                event_kind::SESSION_END_SEED,
                json!({}),
                SurfaceMeta::default(),
            )?;
        }
        Ok(session)
    }

    fn last_kind(&self) -> Option<String> {
        self.state.borrow().log.last().map(|e| e.kind.clone())
    }

    /// The clock the session stamps events with (`Date.now()`).
    pub fn clock(&self) -> Clock {
        Rc::clone(&self.clock)
    }

    /// The session id.
    pub fn id(&self) -> String {
        self.state.borrow().id.clone()
    }

    /// `session.header.cwd`.
    pub fn cwd(&self) -> Option<String> {
        self.state.borrow().cwd.clone()
    }

    /// Register a `session/event` observer.
    pub fn subscribe(&self, observer: Observer) {
        self.state.borrow_mut().observers.push((None, observer));
    }

    /// Register a `session/event` observer that [`Session::remove_listener`]
    /// removes by `key`.
    pub fn subscribe_keyed(&self, key: u64, observer: Observer) {
        self.state
            .borrow_mut()
            .observers
            .push((Some(key), observer));
    }

    /// Register an [`AppendHook`], last, removed by `key`.
    pub fn add_append_hook(&self, key: u64, hook: AppendHook) {
        self.state.borrow_mut().append_hooks.push((key, hook));
    }

    /// Remove the observers and append hooks registered under `key`.
    pub fn remove_listener(&self, key: u64) {
        let mut state = self.state.borrow_mut();
        state.observers.retain(|(k, _)| *k != Some(key));
        state.append_hooks.retain(|(k, _)| *k != key);
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
        let raw = RawSurfaceMeta {
            surface_op: meta.surface_op.as_ref().map(SurfaceOp::to_json),
            source_event_seqs: meta.source_event_seqs.as_ref().map(|seqs| json!(seqs)),
        };
        self.append_raw(kind, data, raw)
    }

    /// `session.append(type, data, {surfaceOp, sourceEventSeqs})` with any
    /// JavaScript values, as a caller outside the loop makes it: the data and
    /// the surface metadata must be lossless JSON, the legacy header
    /// vocabulary is refused, then the surface checks apply.
    pub fn append_value(
        &self,
        kind: &str,
        data: &JsValue,
        surface_op: &JsValue,
        source_event_seqs: &JsValue,
    ) -> Result<Event, JsError> {
        let Some(data) = data.to_lossless_json() else {
            return Err(JsError::error(format!(
                "session event \"{kind}\" carries non-JSON-serializable data"
            )));
        };
        input::check_supported_request_header(
            kind,
            &data,
            &format_args!("session event \"{kind}\""),
        )?;
        let metadata = |value: &JsValue| match value {
            JsValue::Undefined => Ok(None),
            value => value.to_lossless_json().map(Some).ok_or_else(|| {
                JsError::error(format!(
                    "session event \"{kind}\" carries non-JSON-serializable surface metadata"
                ))
            }),
        };
        let raw = RawSurfaceMeta {
            source_event_seqs: metadata(source_event_seqs)?,
            surface_op: metadata(surface_op)?,
        };
        self.append_raw(kind, data, raw)
    }

    fn append_raw(&self, kind: &str, data: Value, raw: RawSurfaceMeta) -> Result<Event, JsError> {
        let time = (self.clock)();
        let (event, hooks) = {
            let state = self.state.borrow();
            if state.publishing {
                return Err(JsError::error(REENTRANT_APPEND));
            }
            let seq = state.log.len() as u64;
            let (surface_op, source_event_seqs) = state
                .surface
                .check_raw(kind, seq, &data, &raw, &state.log)?;
            let event = Event {
                kind: kind.to_string(),
                seq,
                time,
                data: Rc::new(data),
                source_event_seqs,
                surface_op,
                ignorable: false,
                seeded: None,
            };
            (event, state.append_hooks.clone())
        };
        // The `internal/dispatch` of dsh-session's observer collection: hooks
        // run in order before the log changes, and the first throw vetoes.
        if !hooks.is_empty() {
            self.state.borrow_mut().publishing = true;
            let vetoed = hooks.iter().try_for_each(|(_, hook)| hook(&event));
            self.state.borrow_mut().publishing = false;
            vetoed?;
        }
        let observers = {
            let mut state = self.state.borrow_mut();
            state.surface.commit(&event);
            state.log.push(event.clone());
            // The write side of the append-only rule; the judge checks the
            // read side on every implementation's log (`[log-seq]`).
            assert_eq!(
                state.log.last().map(|e| e.seq),
                Some(state.log.len() as u64 - 1),
                "seqs are contiguous from 0"
            );
            state.publishing = true;
            state.observers.clone()
        };
        // dsh-session's `invokeContainedSessionObservers`: every observer
        // runs; a throw is logged, never propagated.
        for (_, observer) in observers {
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

    /// The log, moved out as upstream serializes it (see [`Event::into_json`]),
    /// leaving the session empty: for the end of a run, when nothing will
    /// read or append to it again.
    pub fn take_log_json(&self) -> Vec<Value> {
        let mut state = self.state.borrow_mut();
        state.header_memo.take();
        let log = std::mem::take(&mut state.log);
        drop(state);
        log.into_iter().map(Event::into_json).collect()
    }

    /// Look at the log without copying it. `look` must not append to or
    /// otherwise change this session (the log is borrowed meanwhile).
    pub fn with_events<R>(&self, look: impl FnOnce(&[Event]) -> R) -> R {
        look(&self.state.borrow().log)
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

    /// The canonical header of the last `request/header` event, if any
    /// (`requestHeader()`, upstream's `foldRequestHeader`), canonicalized
    /// once per logged header.
    pub fn request_header(&self) -> Option<Rc<Value>> {
        let state = self.state.borrow();
        let event = (state.log.iter().rev()).find(|e| e.kind == event_kind::REQUEST_HEADER)?;
        let mut memo = state.header_memo.borrow_mut();
        match &*memo {
            Some((seq, header)) if *seq == event.seq => Some(Rc::clone(header)),
            _ => {
                let header = Rc::new(super::header::canonical_header(event.data.get("header")?));
                *memo = Some((event.seq, Rc::clone(&header)));
                Some(header)
            }
        }
    }

    /// The latest `request/context` data, if any.
    pub fn request_context(&self) -> Option<Rc<Value>> {
        self.state
            .borrow()
            .log
            .iter()
            .rev()
            .find(|e| e.kind == event_kind::REQUEST_CONTEXT)
            .map(|e| e.data.clone())
    }

    /// The model-visible history (`deriveMessages()`).
    pub fn derive_messages(&self) -> Vec<Value> {
        let state = self.state.borrow();
        derive_messages(&state.log, &state.surface.nodes)
    }

    /// [`Session::derive_messages`], reusing `earlier` (what an earlier call
    /// derived) when the surface has only grown since: the messages of the
    /// nodes it was derived for are the same, as a logged event never
    /// changes, so only the nodes added since are read and copied.
    pub fn derive_messages_from(&self, earlier: Option<DerivedMessages>) -> DerivedMessages {
        let state = self.state.borrow();
        derive_messages_reusing(&state.log, &state.surface.nodes, earlier)
    }

    /// The log as JSON lines.
    pub fn to_jsonl(&self) -> String {
        events_to_jsonl(&self.state.borrow().log)
    }
}

/// One event of a seed, as the caller holds it.
enum SeedEvent {
    /// JSON from outside the loop, checked as JSON (`Session::create`).
    Json(Map<String, Value>),
    /// An event of another session's log, checked as the model holds it
    /// (`Session::from_seed`).
    Model(Event),
}

/// A seed event that came as JSON, folded into `surface` and kept as it
/// came (its key order).
fn seed_from_json(
    object: Map<String, Value>,
    surface: &mut Surface,
    log: &[Event],
) -> Result<Event, JsError> {
    let (mut event, raw) = input::seed_event(&object);
    let (op, sources) = surface.apply_raw(&event.kind, event.seq, &event.data, &raw, log)?;
    event.surface_op = op;
    event.source_event_seqs = sources;
    event.ignorable = object.get("ignorable") == Some(&Value::Bool(true));
    event.seeded = Some(Value::Object(object));
    Ok(event)
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

/// Messages derived from the surface nodes of a log prefix.
pub fn derive_messages(events: &[Event], nodes: &[u64]) -> Vec<Value> {
    derived_messages(events, nodes).cloned().collect()
}

/// [`derive_messages`], reusing `earlier` (derived from the same log, at
/// any prefix) when `nodes` extends the nodes it was derived for: their
/// messages are the same, as a logged event never changes, so only the
/// nodes added since are read and copied.
pub fn derive_messages_reusing(
    events: &[Event],
    nodes: &[u64],
    earlier: Option<DerivedMessages>,
) -> DerivedMessages {
    let (derived, mut messages) = match earlier {
        Some(earlier) if nodes.starts_with(&earlier.nodes) => {
            (earlier.nodes.len(), earlier.messages)
        }
        _ => (0, Vec::new()),
    };
    messages.extend(derived_messages(events, &nodes[derived..]).cloned());
    DerivedMessages {
        nodes: nodes.to_vec(),
        messages,
    }
}

fn derived_messages<'a>(events: &'a [Event], nodes: &'a [u64]) -> impl Iterator<Item = &'a Value> {
    nodes
        .iter()
        .filter_map(|seq| events.get(*seq as usize))
        .filter_map(Event::derived_message)
}

/// The history [`derive_messages_reusing`] derived, with the surface it was
/// derived for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DerivedMessages {
    /// The surface's nodes (event seqs), in order.
    pub nodes: Vec<u64>,
    /// The messages derived from them.
    pub messages: Vec<Value>,
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
