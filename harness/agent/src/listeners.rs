//! The loop's extension points as typed dispatchers: `agent/pre-step`,
//! `agent/request` and `agent/request-error` waterfalls, the serial
//! `agent/turn-stopping` event (spec 05, 10 P1) and the contained
//! `agent/status` notification.
//!
//! The waterfalls are `dshc_model::waterfall`'s, the same dispatch the
//! `system-prompt/assemble` event uses: a `prepend` listener goes outermost,
//! others are appended innermost, and the list is snapshotted per dispatch.

use std::rc::Rc;

pub use dshc_model::waterfall::{
    Continuation, DefaultFn, ListenerFn, Listeners, LocalFuture, Waterfall,
};
use dshc_model::{AbortSignal, JsError};
use serde_json::Value;

/// The pre-step decision (05 §3.6).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Enter the step with these messages.
    Enter(Vec<Value>),
    /// Refuse the step; the turn ends `blocked`.
    Reject,
}

/// What pre-step listeners receive.
#[derive(Clone)]
pub struct PreStepPayload {
    /// The claimed batch (without the runtime-context candidate).
    pub messages: Vec<Value>,
    /// Turn number.
    pub turn: u64,
    /// Proposed step number.
    pub step: u64,
    /// The turn's signal.
    pub signal: AbortSignal,
}

/// The request-error action.
#[derive(Clone, Debug, PartialEq)]
pub enum RequestErrorAction {
    /// Retry the attempt.
    Retry,
    /// Give up (`undefined`).
    GiveUp,
}

/// `agent/request-error` payload.
pub struct RequestErrorPayload {
    /// Turn.
    pub turn: u64,
    /// Step.
    pub step: u64,
    /// Provider route.
    pub provider: String,
    /// The finish failure.
    pub failure: Value,
    /// The signal.
    pub signal: AbortSignal,
}

/// `agent/request` payload.
pub struct RequestPayload {
    /// Turn.
    pub turn: u64,
    /// Step.
    pub step: u64,
    /// The signal.
    pub signal: AbortSignal,
}

/// `agent/turn-stopping` payload.
pub struct TurnStoppingPayload {
    /// Turn.
    pub turn: u64,
    /// The signal.
    pub signal: AbortSignal,
}

/// One serial listener.
pub type SerialFn<P> = Rc<dyn Fn(Rc<P>) -> LocalFuture<Result<(), JsError>>>;

/// A serial event: listeners run in order, each awaited.
pub type Serial<P> = Listeners<SerialFn<P>>;

/// Run every listener of a serial event (snapshotted) in order; the first
/// that throws stops the rest.
pub async fn run_serial<P: 'static>(listeners: &Serial<P>, payload: P) -> Result<(), JsError> {
    let payload = Rc::new(payload);
    for listener in listeners.snapshot() {
        listener(payload.clone()).await?;
    }
    Ok(())
}

/// A contained event listener (`agent/status`): it runs synchronously; a
/// throw (`Err`) is logged as a warning, and a returned future (its work
/// after an `await`) runs on, its rejection logged too.
pub type ContainedFn<P> =
    Rc<dyn Fn(&P) -> Result<Option<LocalFuture<Result<(), JsError>>>, JsError>>;

/// The loop's dispatchers for one agent.
#[derive(Default)]
pub struct LoopListeners {
    /// `agent/pre-step`.
    pub pre_step: Waterfall<PreStepPayload, Decision>,
    /// `agent/request`.
    pub request: Waterfall<RequestPayload, Value>,
    /// `agent/request-error`.
    pub request_error: Waterfall<RequestErrorPayload, RequestErrorAction>,
    /// `agent/turn-stopping` (serial).
    pub turn_stopping: Serial<TurnStoppingPayload>,
    /// `agent/status` (contained): the new status.
    pub status: Listeners<ContainedFn<String>>,
}
