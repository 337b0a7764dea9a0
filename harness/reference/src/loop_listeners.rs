//! Scripted loop listeners: `agent/pre-step`, `agent/request`,
//! `agent/request-error` and `agent/turn-stopping`, the contained
//! `agent/status` listener and `session/event` observer, built from
//! scenario ops.
//!
//! Each listener counts its invocations; `calls` limits the invocations on
//! which it acts (on others it just calls `next`). Every kind runs the same
//! [`ActOp`]s (sleep, clock jump, cancel, dispose, send, throw, record) through one
//! executor, [`Acting`]; a contained listener runs them synchronously up to
//! its first sleep, as a JavaScript function that awaits there would.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::scripted::World;
use dshc_agent::listeners::{
    Continuation, Decision, LocalFuture, PreStepPayload, RequestErrorAction, TurnStoppingPayload,
    Waterfall,
};
use dshc_agent::{Agent, WeakAgent, user_message};
use dshc_model::runtime_context::is_owned;
use dshc_model::session::Event;
use dshc_model::{AbortSignal, JsError};
use dshc_scenario::protocol::{
    ActOp, LlmStreamOp, LoopListenerCommand, MessageArg, PreStepOp, RecordField, RequestErrorOp,
    RequestOp, ThrowArg,
};

/// The run's journal of what acting listeners recorded, in order.
pub type Journal = Rc<RefCell<Vec<Value>>>;

/// Starts disposing an agent without waiting for it.
pub type DisposeFn = Rc<dyn Fn()>;

/// What scripted listeners share: the journal and how to dispose their agent.
#[derive(Clone)]
pub struct ListenerWorld {
    /// Where `record` appends.
    pub journal: Journal,
    /// The scripted registrations, whose scope an act's `dispose_agent`
    /// drops with the agent.
    pub scripted: Rc<World>,
    /// The run's count of scripted sleeps now waiting on a timer.
    pub armed_timers: ArmedTimers,
    /// How far `clock_jump` (command or act) has moved the wall clock.
    pub wall_clock_jumped_ms: Rc<Cell<i64>>,
}

/// How many scripted sleeps are waiting on a timer right now. A contained
/// notification's sleep outlives the turn that started it, so "every agent
/// is idle" does not mean "no timer is armed" (`wait` jumps the clock only
/// when both hold).
pub type ArmedTimers = Rc<Cell<u32>>;

/// Counts one armed timer for as long as it lives (a dropped sleep is
/// disarmed too).
struct Armed(ArmedTimers);

impl Armed {
    fn new(timers: &ArmedTimers) -> Armed {
        timers.set(timers.get() + 1);
        Armed(timers.clone())
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

fn acts(calls: &Option<Vec<u32>>, counter: &Cell<u32>) -> bool {
    counter.set(counter.get() + 1);
    calls
        .as_ref()
        .is_none_or(|calls| calls.contains(&counter.get()))
}

/// The numeric id a scripted loop listener is registered under.
pub fn listener_id(id: &str) -> u64 {
    // Listener ids only need to be unique per agent; a stable hash of the
    // scenario id keeps them deterministic.
    id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The facts one invocation can record, read when `record` runs.
pub type Facts = Rc<dyn Fn(RecordField) -> Value>;

/// Dispose `agent` the way `dispose_agent` does (cancel `disposed`, wait
/// for idle, drop the registrations on its scope), without waiting for it.
pub fn dispose_later(agent: WeakAgent, world: Rc<World>) -> DisposeFn {
    Rc::new(move || {
        let Some(agent) = agent.upgrade() else {
            return;
        };
        let _ = agent.cancel(json!({"kind": "disposed"}), false);
        let world = world.clone();
        tokio::task::spawn_local(async move {
            agent.when_idle().await;
            for disposer in world.disposers_in(&agent.session().id()) {
                disposer.dispose();
            }
        });
    })
}

/// One invocation of a scripted listener or tool body: runs its [`ActOp`]s.
#[derive(Clone)]
pub struct Acting {
    agent: WeakAgent,
    world: ListenerWorld,
    listener: String,
    call: u32,
    facts: Facts,
}

impl Acting {
    /// An invocation of `listener` (its `call`-th) on `agent`.
    pub fn new(
        agent: WeakAgent,
        world: ListenerWorld,
        listener: String,
        call: u32,
        facts: Facts,
    ) -> Acting {
        Acting {
            agent,
            world,
            listener,
            call,
            facts,
        }
    }

    /// Run one op that does not wait.
    pub fn act(&self, op: &ActOp) -> Result<(), JsError> {
        let agent = self.agent.upgrade();
        let message = |arg: &MessageArg, agent: &Agent| {
            user_message(&agent.context().ids, arg.blocks(), arg.source())
        };
        match (op, agent) {
            (ActOp::SleepMs(_), _) => Ok(()),
            (ActOp::ClockJump(jump), _) => {
                let wall_clock = &self.world.wall_clock_jumped_ms;
                wall_clock.set(wall_clock.get().saturating_add(jump.0));
                Ok(())
            }
            (ActOp::Throw(ThrowArg::Message(text)), _) => Err(JsError::error(text.clone())),
            (ActOp::Throw(ThrowArg::Coded { message, code }), _) => {
                Err(JsError::llm(json!({"message": message, "code": code})))
            }
            (ActOp::Record(fields), agent) => {
                let mut entry = Map::new();
                entry.insert("listener".into(), json!(self.listener));
                entry.insert("call".into(), json!(self.call));
                for field in fields {
                    let value = match (field, &agent) {
                        (RecordField::LastEvent, Some(agent)) => {
                            agent.session().with_events(|events| {
                                events.last().map_or(Value::Null, |event| json!(event.kind))
                            })
                        }
                        (RecordField::LastEvent, None) => Value::Null,
                        (field, _) => (self.facts)(*field),
                    };
                    entry.insert(field.key().into(), value);
                }
                self.world.journal.borrow_mut().push(Value::Object(entry));
                Ok(())
            }
            (_, None) => Ok(()),
            (ActOp::Cancel(args), Some(agent)) => agent.cancel(
                args.reason
                    .clone()
                    .unwrap_or_else(|| json!({"kind": "user"})),
                args.keep_inbox,
            ),
            (ActOp::DisposeAgent, Some(_)) => {
                dispose_later(self.agent.clone(), self.world.scripted.clone())();
                Ok(())
            }
            (ActOp::Followup(arg), Some(agent)) => agent.followup(message(arg, &agent)),
            (ActOp::Steer(arg), Some(agent)) => agent.steer(message(arg, &agent)),
            (ActOp::Inject(arg), Some(agent)) => agent.inject(message(arg, &agent)),
        }
    }

    /// Run ops in order, awaiting each sleep.
    pub async fn run(&self, ops: &[ActOp]) -> Result<(), JsError> {
        for op in ops {
            if let ActOp::SleepMs(ms) = op {
                // `setTimeout(resolve, ms)`: never due at the same instant.
                let delay_ms = dshc_model::js::timer_delay_ms(*ms);
                let _armed = Armed::new(&self.world.armed_timers);
                mock_provider::sim_time::sleep(Duration::from_millis(delay_ms)).await;
            }
            self.act(op)?;
        }
        Ok(())
    }

    /// Run ops synchronously up to the first sleep; the rest, if any, is
    /// the returned future.
    fn run_contained(
        &self,
        ops: Rc<[ActOp]>,
    ) -> Result<Option<LocalFuture<Result<(), JsError>>>, JsError> {
        for (index, op) in ops.iter().enumerate() {
            if let ActOp::SleepMs(_) = op {
                let this = self.clone();
                return Ok(Some(Box::pin(async move { this.run(&ops[index..]).await })));
            }
            self.act(op)?;
        }
        Ok(None)
    }
}

/// The shared part of registering a scripted listener.
struct Scripted<Op> {
    agent: WeakAgent,
    world: ListenerWorld,
    listener: String,
    ops: Rc<[Op]>,
    calls: Option<Vec<u32>>,
    counter: Rc<Cell<u32>>,
}

impl<Op> Clone for Scripted<Op> {
    fn clone(&self) -> Self {
        Scripted {
            agent: self.agent.clone(),
            world: self.world.clone(),
            listener: self.listener.clone(),
            ops: self.ops.clone(),
            calls: self.calls.clone(),
            counter: self.counter.clone(),
        }
    }
}

impl<Op: Clone> Scripted<Op> {
    fn new(agent: &Agent, world: &ListenerWorld, command: &LoopListenerCommand<Op>) -> Self {
        Scripted {
            agent: agent.downgrade(),
            world: world.clone(),
            listener: command.id.clone(),
            ops: command.ops.clone().into(),
            calls: command.calls.clone(),
            counter: Rc::new(Cell::new(0)),
        }
    }

    /// An invocation by a session event, unless `event_types` leaves the
    /// event out (then it is no invocation: `calls` counts only the events
    /// the listener looks at); its facts are the event's `{type, seq}`.
    fn invoked_by(&self, event_types: Option<&[String]>, event: &Event) -> Option<Acting> {
        if event_types.is_some_and(|types| !types.contains(&event.kind)) {
            return None;
        }
        let facts = json!({"type": event.kind, "seq": event.seq});
        self.invoked(Rc::new(move |_| facts.clone()))
    }

    /// Count the invocation; an [`Acting`] when it acts on it.
    fn invoked(&self, facts: Facts) -> Option<Acting> {
        acts(&self.calls, &self.counter).then(|| Acting {
            agent: self.agent.clone(),
            world: self.world.clone(),
            listener: self.listener.clone(),
            call: self.counter.get(),
            facts,
        })
    }
}

/// Register a scripted listener on one of the loop's waterfalls: on the
/// invocations `calls` selects it runs `ops` through `run`; on the others
/// it just calls `next`.
fn on_waterfall<P: 'static, R: 'static, Op: Clone + 'static>(
    waterfall: &Waterfall<P, R>,
    command: &LoopListenerCommand<Op>,
    scripted: Scripted<Op>,
    facts: impl Fn(&Rc<P>) -> Facts + 'static,
    run: impl Fn(Rc<[Op]>, Rc<P>, Continuation<P, R>, Acting) -> LocalFuture<Result<R, JsError>>
    + 'static,
) {
    waterfall.on(
        listener_id(&command.id),
        command.prepend,
        Rc::new(move |payload: Rc<P>, next: Continuation<P, R>| {
            match scripted.invoked(facts(&payload)) {
                Some(acting) => run(scripted.ops.clone(), payload, next, acting),
                None => next.call(),
            }
        }),
    );
}

/// `{text, source}` of each message (text blocks joined).
fn message_facts(messages: &[Value]) -> Value {
    let facts: Vec<Value> = messages
        .iter()
        .map(|message| {
            let text: String = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect();
            json!({"text": text, "source": message["source"]})
        })
        .collect();
    Value::Array(facts)
}

fn signal_fact(signal: &AbortSignal) -> Value {
    json!(signal.is_aborted())
}

/// Register an `agent/pre-step` listener.
pub fn on_pre_step(agent: &Agent, world: &ListenerWorld, command: &LoopListenerCommand<PreStepOp>) {
    let ids = agent.context().ids.clone();
    on_waterfall(
        &agent.listeners().pre_step,
        command,
        Scripted::new(agent, world, command),
        |payload: &Rc<PreStepPayload>| {
            let payload = payload.clone();
            Rc::new(move |field| match field {
                RecordField::Turn => json!(payload.turn),
                RecordField::Step => json!(payload.step),
                RecordField::Messages => message_facts(&payload.messages),
                _ => signal_fact(&payload.signal),
            })
        },
        move |ops, payload, next, acting| {
            let ids = ids.clone();
            Box::pin(async move { run_pre_step(&ops, &payload, next, &acting, &ids).await })
        },
    );
}

fn messages_of(decision: &mut Decision) -> Option<&mut Vec<Value>> {
    match decision {
        Decision::Enter(messages) => Some(messages),
        Decision::Reject => None,
    }
}

async fn run_pre_step(
    ops: &[PreStepOp],
    payload: &PreStepPayload,
    next: Continuation<PreStepPayload, Decision>,
    acting: &Acting,
    ids: &dshc_agent::Ids,
) -> Result<Decision, JsError> {
    let mut current = Decision::Enter(payload.messages.clone());
    for op in ops {
        match op {
            PreStepOp::Next => current = next.call().await?,
            PreStepOp::Reject => current = Decision::Reject,
            PreStepOp::EnterEmpty => current = Decision::Enter(Vec::new()),
            PreStepOp::DropRuntimeContext => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.retain(|m| !is_owned(m));
                }
            }
            PreStepOp::RewriteRuntimeContext(text) => {
                if let Some(messages) = messages_of(&mut current) {
                    for message in messages.iter_mut().filter(|m| is_owned(m)) {
                        message["content"] = json!([{"type": "text", "text": text}]);
                    }
                }
            }
            PreStepOp::Reverse => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.reverse();
                }
            }
            PreStepOp::AppendMessage(message) => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.push(user_message(ids, message.blocks(), message.source()));
                }
            }
            PreStepOp::PrependMessage(message) => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.insert(0, user_message(ids, message.blocks(), message.source()));
                }
            }
            PreStepOp::WaitForAbort => {
                let reason = payload.signal.aborted().await;
                return Err(JsError::error(format!("aborted: {reason}")));
            }
            PreStepOp::Act(op) => acting.run(std::slice::from_ref(op)).await?,
        }
    }
    Ok(current)
}

/// Register an `agent/request` listener.
pub fn on_request(agent: &Agent, world: &ListenerWorld, command: &LoopListenerCommand<RequestOp>) {
    on_waterfall(
        &agent.listeners().request,
        command,
        Scripted::new(agent, world, command),
        |payload| {
            let payload = payload.clone();
            Rc::new(move |field| match field {
                RecordField::Turn => json!(payload.turn),
                RecordField::Step => json!(payload.step),
                _ => signal_fact(&payload.signal),
            })
        },
        |ops, _payload, next, acting| {
            Box::pin(async move {
                let mut current = json!({});
                for op in ops.iter() {
                    match op {
                        RequestOp::Next => current = next.call().await?,
                        RequestOp::Set(fields) => {
                            let mut object = current.as_object().cloned().unwrap_or_default();
                            for (key, value) in fields {
                                object.insert(key.clone(), value.clone());
                            }
                            current = Value::Object(object);
                        }
                        RequestOp::Remove(key) => {
                            let mut object = current.as_object().cloned().unwrap_or_default();
                            object.remove(key);
                            current = Value::Object(object);
                        }
                        RequestOp::Act(op) => acting.run(std::slice::from_ref(op)).await?,
                    }
                }
                Ok(current)
            })
        },
    );
}

/// Register an `agent/request-error` listener.
pub fn on_request_error(
    agent: &Agent,
    world: &ListenerWorld,
    command: &LoopListenerCommand<RequestErrorOp>,
) {
    on_waterfall(
        &agent.listeners().request_error,
        command,
        Scripted::new(agent, world, command),
        |payload| {
            let payload = payload.clone();
            Rc::new(move |field| match field {
                RecordField::Turn => json!(payload.turn),
                RecordField::Step => json!(payload.step),
                RecordField::Provider => json!(payload.provider),
                RecordField::Failure => payload.failure.clone(),
                _ => signal_fact(&payload.signal),
            })
        },
        |ops, _payload, next, acting| {
            Box::pin(async move {
                let mut current = RequestErrorAction::GiveUp;
                for op in ops.iter() {
                    match op {
                        RequestErrorOp::Next => current = next.call().await?,
                        RequestErrorOp::Retry => current = RequestErrorAction::Retry,
                        RequestErrorOp::GiveUp => current = RequestErrorAction::GiveUp,
                        RequestErrorOp::Act(op) => acting.run(std::slice::from_ref(op)).await?,
                    }
                }
                Ok(current)
            })
        },
    );
}

/// Register an `agent/turn-stopping` listener.
pub fn on_turn_stopping(
    agent: &Agent,
    world: &ListenerWorld,
    command: &LoopListenerCommand<ActOp>,
) {
    let scripted = Scripted::new(agent, world, command);
    agent.listeners().turn_stopping.on(
        listener_id(&command.id),
        command.prepend,
        Rc::new(
            move |payload: Rc<TurnStoppingPayload>| -> LocalFuture<Result<(), JsError>> {
                let facts: Facts = {
                    let payload = payload.clone();
                    Rc::new(move |field| match field {
                        RecordField::Turn => json!(payload.turn),
                        _ => signal_fact(&payload.signal),
                    })
                };
                let Some(acting) = scripted.invoked(facts) else {
                    return Box::pin(async { Ok(()) });
                };
                let ops = scripted.ops.clone();
                Box::pin(async move { acting.run(&ops).await })
            },
        ),
    );
}

/// Register an `agent/status` listener (contained).
pub fn on_status(agent: &Agent, world: &ListenerWorld, command: &LoopListenerCommand<ActOp>) {
    let scripted = Scripted::new(agent, world, command);
    agent.listeners().status.on(
        listener_id(&command.id),
        command.prepend,
        Rc::new(move |status: &String| {
            let status = json!(status);
            match scripted.invoked(Rc::new(move |_| status.clone())) {
                Some(acting) => acting.run_contained(scripted.ops.clone()),
                None => Ok(None),
            }
        }),
    );
}

/// Register an `llm/stream` middleware on the LLM runtime (it sees every
/// agent's calls). Its ops run at the call, in order; it returns the
/// stream of the last `next` or `serve`, `next()`'s when neither ran.
pub fn on_llm_stream(
    agent: &Agent,
    world: &ListenerWorld,
    command: &LoopListenerCommand<LlmStreamOp>,
) {
    let scripted = Scripted::new(agent, world, command);
    let middleware: dshc_agent::LlmStreamFn = Rc::new(
        move |caller: &Agent,
              request: &Value,
              next: &dyn Fn() -> Result<dshc_agent::LlmStreamAnswer, JsError>| {
            if !acts(&scripted.calls, &scripted.counter) {
                return next();
            }
            // The runtime's middleware acts on the agent making the call.
            let provider = request["provider"].clone();
            let acting = Acting::new(
                caller.downgrade(),
                scripted.world.clone(),
                scripted.listener.clone(),
                scripted.counter.get(),
                Rc::new(move |_| provider.clone()),
            );
            let mut answer = None;
            for op in scripted.ops.iter() {
                match op {
                    LlmStreamOp::Next => answer = Some(next()?),
                    LlmStreamOp::Serve(parts) => answer = Some(Some(parts.clone())),
                    LlmStreamOp::Act(op) => acting.act(op)?,
                }
            }
            match answer {
                Some(answer) => Ok(answer),
                None => next(),
            }
        },
    );
    agent
        .context()
        .llm_stream
        .on(listener_id(&command.id), command.prepend, middleware);
}

/// Register a `session/event` observer on the agent's session (contained:
/// the session warns about a throw, the agent about a later rejection).
pub fn on_session_event(
    agent: &Agent,
    world: &ListenerWorld,
    command: &LoopListenerCommand<ActOp>,
) {
    let scripted = Scripted::new(agent, world, command);
    let owner = agent.downgrade();
    let event_types = command.event_types.clone();
    let key = listener_id(&command.id);
    agent.session().subscribe_keyed(
        key,
        Rc::new(move |event: &Event| {
            let Some(acting) = scripted.invoked_by(event_types.as_deref(), event) else {
                return Ok(());
            };
            if let Some(rest) = acting.run_contained(scripted.ops.clone())? {
                let owner = owner.clone();
                tokio::task::spawn_local(async move {
                    if let (Err(error), Some(agent)) = (rest.await, owner.upgrade()) {
                        let id = agent.session().id();
                        agent.session().warn(format!(
                            "session \"{id}\": session/event listener rejected: {}",
                            error.to_js_string()
                        ));
                    }
                });
            }
            Ok(())
        }),
    );
}

/// A hook inside `session.append` on the agent's session (upstream: an
/// `internal/dispatch` listener for `session/event`): it runs its ops
/// synchronously before the event enters the log, and a throw vetoes the
/// append, which throws it (the loader refuses a sleep).
pub fn on_session_append(
    agent: &Agent,
    world: &ListenerWorld,
    command: &LoopListenerCommand<ActOp>,
) {
    let scripted = Scripted::new(agent, world, command);
    let event_types = command.event_types.clone();
    let key = listener_id(&command.id);
    agent.session().add_append_hook(
        key,
        Rc::new(move |event: &Event| {
            let Some(acting) = scripted.invoked_by(event_types.as_deref(), event) else {
                return Ok(());
            };
            scripted.ops.iter().try_for_each(|op| acting.act(op))
        }),
    );
}
