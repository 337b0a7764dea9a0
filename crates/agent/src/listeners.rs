//! The loop's extension points as typed dispatchers: `agent/pre-step`,
//! `agent/request` and `agent/request-error` waterfalls and the serial
//! `agent/turn-stopping` event (spec 05, 10 P1).
//!
//! The waterfalls are `dshc_model::waterfall`'s, the same dispatch the
//! `system-prompt/assemble` event uses: a `prepend` listener goes outermost,
//! others are appended innermost, and the list is snapshotted per dispatch.

use std::cell::RefCell;
use std::rc::Rc;

pub use dshc_model::waterfall::{Continuation, DefaultFn, ListenerFn, LocalFuture, Waterfall};
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

/// A serial event: listeners run in order, each awaited.
pub struct Serial<P> {
    listeners: RefCell<Vec<(u64, SerialFn<P>)>>,
}

/// One serial listener.
pub type SerialFn<P> = Rc<dyn Fn(Rc<P>) -> LocalFuture<Result<(), JsError>>>;

impl<P> Default for Serial<P> {
    fn default() -> Self {
        Serial {
            listeners: RefCell::new(Vec::new()),
        }
    }
}

impl<P: 'static> Serial<P> {
    /// Register.
    pub fn on(&self, id: u64, prepend: bool, callback: SerialFn<P>) {
        let mut listeners = self.listeners.borrow_mut();
        if prepend {
            listeners.insert(0, (id, callback));
        } else {
            listeners.push((id, callback));
        }
    }

    /// Remove a listener.
    pub fn remove(&self, id: u64) {
        self.listeners.borrow_mut().retain(|(l, _)| *l != id);
    }

    /// Run every listener (snapshotted) in order.
    pub async fn run(&self, payload: P) -> Result<(), JsError> {
        let payload = Rc::new(payload);
        let listeners: Vec<SerialFn<P>> = self
            .listeners
            .borrow()
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(payload.clone()).await?;
        }
        Ok(())
    }
}

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
}
