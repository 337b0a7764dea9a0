//! Scripted loop listeners: `agent/pre-step`, `agent/request`,
//! `agent/request-error` and `agent/turn-stopping` built from scenario ops.
//!
//! Each listener counts its invocations; `calls` limits the invocations on
//! which it acts (on others it just calls `next`).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};

use dshc_agent::listeners::{
    Continuation, Decision, LocalFuture, PreStepPayload, RequestErrorAction, TurnStoppingPayload,
    Waterfall,
};
use dshc_agent::{Agent, Ids, WeakAgent, user_prompt};
use dshc_model::JsError;
use dshc_model::runtime_context::is_owned;
use dshc_scenario::protocol::{
    LoopListenerCommand, PreStepOp, RequestErrorOp, RequestOp, TurnStoppingOp,
};

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

/// Register a scripted listener on one of the loop's waterfalls: it counts
/// its invocations and, on those `calls` selects, runs `ops` through `run`;
/// on the others it just calls `next`.
fn on_waterfall<P: 'static, R: 'static, Op: Clone + 'static>(
    waterfall: &Waterfall<P, R>,
    command: &LoopListenerCommand<Op>,
    run: impl Fn(Rc<[Op]>, Rc<P>, Continuation<P, R>) -> LocalFuture<Result<R, JsError>> + 'static,
) {
    let counter = Rc::new(Cell::new(0));
    let (ops, calls): (Rc<[Op]>, _) = (command.ops.clone().into(), command.calls.clone());
    waterfall.on(
        listener_id(&command.id),
        command.prepend,
        Rc::new(move |payload: Rc<P>, next: Continuation<P, R>| {
            if acts(&calls, &counter) {
                run(ops.clone(), payload, next)
            } else {
                next.call()
            }
        }),
    );
}

/// Register an `agent/pre-step` listener.
pub fn on_pre_step(agent: &Agent, command: &LoopListenerCommand<PreStepOp>) {
    let agent_ref = agent.downgrade();
    let ids = agent.context().ids.clone();
    on_waterfall(
        &agent.listeners().pre_step,
        command,
        move |ops, payload, next| {
            let (agent, ids) = (agent_ref.clone(), ids.clone());
            Box::pin(async move { run_pre_step(&ops, &payload, next, &agent, &ids).await })
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
    agent: &WeakAgent,
    ids: &Ids,
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
            PreStepOp::AppendMessage(text) => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.push(user_prompt(ids, text));
                }
            }
            PreStepOp::PrependMessage(text) => {
                if let Some(messages) = messages_of(&mut current) {
                    messages.insert(0, user_prompt(ids, text));
                }
            }
            PreStepOp::Throw(message) => return Err(JsError::error(message.clone())),
            PreStepOp::WaitForAbort => {
                let reason = payload.signal.aborted().await;
                return Err(JsError::error(format!("aborted: {reason}")));
            }
            PreStepOp::SleepMs(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            PreStepOp::Steer(text) => {
                if let Some(agent) = agent.upgrade() {
                    agent.steer(user_prompt(ids, text))?;
                }
            }
        }
    }
    Ok(current)
}

/// Register an `agent/request` listener.
pub fn on_request(agent: &Agent, command: &LoopListenerCommand<RequestOp>) {
    on_waterfall(
        &agent.listeners().request,
        command,
        |ops, _payload, next| {
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
                        RequestOp::Throw(message) => return Err(JsError::error(message.clone())),
                    }
                }
                Ok(current)
            })
        },
    );
}

/// Register an `agent/request-error` listener.
pub fn on_request_error(agent: &Agent, command: &LoopListenerCommand<RequestErrorOp>) {
    on_waterfall(
        &agent.listeners().request_error,
        command,
        |ops, _payload, next| {
            Box::pin(async move {
                let mut current = RequestErrorAction::GiveUp;
                for op in ops.iter() {
                    match op {
                        RequestErrorOp::Next => current = next.call().await?,
                        RequestErrorOp::Retry => current = RequestErrorAction::Retry,
                        RequestErrorOp::GiveUp => current = RequestErrorAction::GiveUp,
                        RequestErrorOp::Throw(message) => {
                            return Err(JsError::error(message.clone()));
                        }
                    }
                }
                Ok(current)
            })
        },
    );
}

/// Register an `agent/turn-stopping` listener.
pub fn on_turn_stopping(agent: &Agent, step: &LoopListenerCommand<TurnStoppingOp>) {
    let counter = Rc::new(Cell::new(0));
    let (ops, calls) = (Rc::new(step.ops.clone()), step.calls.clone());
    let agent_ref = agent.downgrade();
    agent.listeners().turn_stopping.on(
        listener_id(&step.id),
        step.prepend,
        Rc::new(
            move |_payload: Rc<TurnStoppingPayload>| -> LocalFuture<Result<(), JsError>> {
                if !acts(&calls, &counter) {
                    return Box::pin(async { Ok(()) });
                }
                let (ops, agent) = (ops.clone(), agent_ref.clone());
                Box::pin(async move {
                    let Some(agent) = agent.upgrade() else {
                        return Ok(());
                    };
                    let ids = agent.context().ids.clone();
                    for op in ops.iter() {
                        match op {
                            TurnStoppingOp::Steer(text) => agent.steer(user_prompt(&ids, text))?,
                            TurnStoppingOp::Throw(message) => {
                                return Err(JsError::error(message.clone()));
                            }
                        }
                    }
                    Ok(())
                })
            },
        ),
    );
}
