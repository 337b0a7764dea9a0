//! One attempt's stream (05 §4, 08): open the route's chunk source (the
//! DeepSeek transport or a scripted route), log every chunk as it arrives
//! and fold it into the attempt's blocks, and log the `assistant/message`
//! that cites them, including the interrupted one an abort leaves.
//!
//! It exists so that every way an attempt's chunks reach the log goes
//! through one place, with the abort checks between chunks that decide
//! what a cancelled attempt has committed.

use std::rc::Rc;

use serde_json::{Map, Value, json};

use dshc_model::AbortSignal;
use dshc_model::JsError;
use dshc_model::js::object;
use dshc_model::llm::BlockAssembler;
use dshc_model::session::SurfaceMeta;

use crate::agent::{Agent, LlmStreamAnswer, LlmStreamFn};
use crate::context::{AdapterRoute, LlmCall, throw_if_aborted};
use crate::scripted_route::ScriptedStream;
use crate::transport::ChunkStream;
use dshc_model::session::event_kind;

/// The chunk source of one attempt.
enum Chunks {
    Wire(ChunkStream),
    Scripted(ScriptedStream),
}

impl Chunks {
    async fn next(&mut self) -> Option<Value> {
        match self {
            Chunks::Wire(stream) => stream.next().await,
            Chunks::Scripted(stream) => stream.next().await,
        }
    }
}

/// What one attempt has logged so far: its turn and step, the blocks its
/// chunks fold into, and the chunks' sequence numbers (which the
/// `assistant/message` cites).
pub(crate) struct AttemptLog {
    turn: u64,
    step: u64,
    /// The chunks folded so far.
    pub(crate) assembler: BlockAssembler,
    chunk_seqs: Vec<u64>,
}

impl AttemptLog {
    /// Nothing logged yet for this attempt of `step`.
    pub(crate) fn new(turn: u64, step: u64) -> AttemptLog {
        AttemptLog {
            turn,
            step,
            assembler: BlockAssembler::default(),
            chunk_seqs: Vec::new(),
        }
    }
}

/// The one chunk a route with no adapter (and no `llm/stream` middleware)
/// streams: terminal dispatch fails with `NO_ADAPTER` (07 H6).
fn no_adapter_chunk(provider: &str) -> Value {
    let failure = json!({"message": format!("no adapter registered for provider \"{provider}\""), "code": "NO_ADAPTER"});
    json!({"type": "finish", "reason": {"kind": "error", "failure": failure}})
}

impl Agent {
    /// The `llm/stream` middleware's answer for `request`, outermost first,
    /// each calling the next (synchronously); `None`: the adapter's stream.
    fn llm_stream_middleware(&self, request: &Value) -> Result<LlmStreamAnswer, JsError> {
        fn call(
            agent: &Agent,
            request: &Value,
            middleware: &[LlmStreamFn],
        ) -> Result<LlmStreamAnswer, JsError> {
            match middleware.split_first() {
                None => Ok(None),
                Some((outer, inner)) => outer(agent, request, &|| call(agent, request, inner)),
            }
        }
        call(self, request, &self.0.context.llm_stream.snapshot())
    }

    /// What a scripted stream's `{act}` parts do: the harness's act, on
    /// this agent.
    fn part_act(&self) -> Option<crate::scripted_route::PartAct> {
        let actor = self.0.context.route_actor.clone()?;
        let agent = self.downgrade();
        Some(Box::new(move |op: &Value| match agent.upgrade() {
            Some(agent) => actor(&agent, op),
            None => Ok(()),
        }))
    }

    /// Log one `assistant/chunk` and feed it to the assembler.
    fn log_chunk(&self, log: &mut AttemptLog, chunk: Value) -> Result<(), JsError> {
        let event = self.append(
            event_kind::ASSISTANT_CHUNK,
            object([
                ("turn", json!(log.turn)),
                ("step", json!(log.step)),
                ("chunk", chunk),
            ]),
            SurfaceMeta::default(),
        )?;
        log.chunk_seqs.push(event.seq);
        log.assembler.push(&event.data["chunk"])
    }

    /// `assistant/message {turn, step, message, interrupted?, usage?}`, citing
    /// the attempt's chunks.
    pub(crate) fn log_assistant_message(
        &self,
        message: Value,
        interrupted: bool,
        log: AttemptLog,
    ) -> Result<(), JsError> {
        let mut data = Map::with_capacity(5);
        data.insert("turn".into(), json!(log.turn));
        data.insert("step".into(), json!(log.step));
        data.insert("message".into(), message);
        if interrupted {
            data.insert("interrupted".into(), json!(true));
        }
        if let Some(usage) = log.assembler.usage() {
            data.insert("usage".into(), usage.clone());
        }
        self.append(
            event_kind::ASSISTANT_MESSAGE,
            Value::Object(data),
            SurfaceMeta::append_citing(log.chunk_seqs),
        )?;
        Ok(())
    }

    /// After an abort mid-stream: the blocks that had started, if any, as an
    /// `interrupted` `assistant/message`.
    pub(crate) fn log_interrupted_message(
        &self,
        request: &Value,
        log: AttemptLog,
    ) -> Result<(), JsError> {
        let content = log.assembler.interrupted_blocks();
        if content.is_empty() {
            return Ok(());
        }
        let message = self.assistant_message(content, request, None);
        self.log_assistant_message(message, true, log)
    }

    /// The assistant message of `content`, sourced to the request's route,
    /// with the finish's replay state when there is one (an interrupted
    /// message has none).
    pub(crate) fn assistant_message(
        &self,
        content: Vec<Value>,
        request: &Value,
        replay_state: Option<Value>,
    ) -> Value {
        let mut source = object([
            ("kind", json!("model")),
            ("provider", request["provider"].clone()),
            ("model", request["model"].clone()),
        ]);
        if let (Some(replay_state), Value::Object(source)) = (replay_state, &mut source) {
            source.insert("replayState".into(), replay_state);
        }
        object([
            ("role", json!("assistant")),
            ("content", Value::Array(content)),
            ("source", source),
            ("id", json!(self.0.context.ids.next("msg"))),
        ])
    }

    /// The request as `route`'s adapter receives it (dsh-llm `forAdapter`):
    /// a model message keeps its `replayState` only when its own route is
    /// served by that same adapter; any other gets the source `{kind,
    /// provider, model}`. Shared, not copied, when nothing changes.
    fn for_adapter(&self, request: &Rc<Value>, route: &AdapterRoute) -> Rc<Value> {
        let adapters = self.0.context.adapters.borrow();
        let foreign = |message: &Value| {
            let source = &message["source"];
            message["role"] == "assistant"
                && source["kind"] == "model"
                && source.get("replayState").is_some()
                && !source["provider"]
                    .as_str()
                    .and_then(|provider| adapters.get(provider))
                    .is_some_and(|owner| owner.is_same_adapter(route))
        };
        let Some(messages) = request["messages"].as_array() else {
            return Rc::clone(request);
        };
        if !messages.iter().any(foreign) {
            return Rc::clone(request);
        }
        let mut filtered = Value::clone(request);
        for message in filtered["messages"].as_array_mut().into_iter().flatten() {
            if foreign(message) {
                let source = &message["source"];
                message["source"] = object([
                    ("kind", json!("model")),
                    ("provider", source["provider"].clone()),
                    ("model", source["model"].clone()),
                ]);
            }
        }
        Rc::new(filtered)
    }

    /// Stream `request` over `route`, logging each chunk; an abort between
    /// chunks stops it with an `AbortError`.
    pub(crate) async fn stream(
        &self,
        request: &Rc<Value>,
        route: Option<AdapterRoute>,
        signal: &AbortSignal,
        log: &mut AttemptLog,
    ) -> Result<(), JsError> {
        let request = &match &route {
            Some(route) => self.for_adapter(request, route),
            None => Rc::clone(request),
        };
        let served = self.llm_stream_middleware(request)?;
        let mut chunks = match (served, route) {
            (Some(parts), _) => {
                let act = self.part_act();
                Chunks::Scripted(ScriptedStream::served(parts, signal.clone(), act))
            }
            (None, None) => {
                let provider = request["provider"].as_str().unwrap_or_default();
                throw_if_aborted(signal)?;
                self.log_chunk(log, no_adapter_chunk(provider))?;
                return throw_if_aborted(signal);
            }
            (None, Some(AdapterRoute::Wire(wire))) => {
                let probe = signal.clone();
                Chunks::Wire(ChunkStream::new(
                    wire.connection,
                    Rc::clone(request),
                    Box::new(move || probe.is_aborted()),
                    self.session().clock(),
                ))
            }
            (None, Some(AdapterRoute::Scripted(scripted))) => {
                self.0.context.llm_calls.borrow_mut().push(LlmCall {
                    session: self.0.session.id(),
                    at: self.0.session.len(),
                    request: Value::clone(request),
                });
                Chunks::Scripted(scripted.stream(signal.clone(), self.part_act()))
            }
        };
        throw_if_aborted(signal)?;
        loop {
            let next = tokio::select! {
                biased;
                _ = signal.aborted() => return Err(JsError::abort()),
                next = chunks.next() => next,
            };
            let Some(chunk) = next else { break };
            throw_if_aborted(signal)?;
            self.log_chunk(log, chunk)?;
        }
        throw_if_aborted(signal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_without_adapter_streams_one_no_adapter_finish() {
        let chunk = no_adapter_chunk("acme");
        assert_eq!(
            chunk,
            json!({"type": "finish", "reason": {"kind": "error", "failure": {
                "message": "no adapter registered for provider \"acme\"",
                "code": "NO_ADAPTER",
            }}})
        );
        // The assembler reads it as the attempt's error finish, which is
        // what sends the step to the request-error decision.
        let mut assembler = BlockAssembler::default();
        assembler.push(&chunk).expect("a finish chunk");
        assert_eq!(assembler.finish()["kind"], "error");
        assert_eq!(assembler.finish()["failure"]["code"], "NO_ADAPTER");
    }
}
