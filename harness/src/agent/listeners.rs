//! The loop's extension points as typed dispatchers: `agent/pre-step`,
//! `agent/request` and `agent/request-error` waterfalls and the serial
//! `agent/turn-stopping` event (spec 05, 10 P1).
//!
//! Ordering follows cordis: a `prepend` listener goes outermost, others are
//! appended innermost, and the listener list is snapshotted per dispatch.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use serde_json::Value;

use crate::model::{AbortSignal, JsError};

/// A boxed local future.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

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

/// A generic waterfall over payload `P` producing `R`.
pub struct Waterfall<P, R> {
    listeners: RefCell<Vec<Listener<P, R>>>,
}

/// One listener: `(payload, next) -> result`.
pub type ListenerFn<P, R> =
    Rc<dyn Fn(Rc<P>, Continuation<P, R>) -> LocalFuture<Result<R, JsError>>>;

struct Listener<P, R> {
    id: u64,
    callback: ListenerFn<P, R>,
}

/// `next()` of a waterfall dispatch: the shared queue, as cordis has it.
pub struct Continuation<P, R> {
    queue: Rc<RefCell<VecDeque<ListenerFn<P, R>>>>,
    payload: Rc<P>,
    default: Rc<dyn Fn() -> LocalFuture<Result<R, JsError>>>,
}

impl<P, R> Clone for Continuation<P, R> {
    fn clone(&self) -> Self {
        Continuation {
            queue: self.queue.clone(),
            payload: self.payload.clone(),
            default: self.default.clone(),
        }
    }
}

impl<P: 'static, R: 'static> Continuation<P, R> {
    /// Run the next listener, or the default when none is left.
    pub fn call(&self) -> LocalFuture<Result<R, JsError>> {
        let next = self.queue.borrow_mut().pop_front();
        match next {
            Some(listener) => listener(self.payload.clone(), self.clone()),
            None => (self.default)(),
        }
    }
}

impl<P: 'static, R: 'static> Default for Waterfall<P, R> {
    fn default() -> Self {
        Waterfall {
            listeners: RefCell::new(Vec::new()),
        }
    }
}

impl<P: 'static, R: 'static> Waterfall<P, R> {
    /// Register; returns an id for [`Waterfall::remove`].
    pub fn on(&self, id: u64, prepend: bool, callback: ListenerFn<P, R>) {
        let listener = Listener { id, callback };
        let mut listeners = self.listeners.borrow_mut();
        if prepend {
            listeners.insert(0, listener);
        } else {
            listeners.push(listener);
        }
    }

    /// Remove a listener.
    pub fn remove(&self, id: u64) {
        self.listeners.borrow_mut().retain(|l| l.id != id);
    }

    /// Dispatch: outermost listener first; `default` is the innermost `next`.
    pub fn dispatch(
        &self,
        payload: P,
        default: Rc<dyn Fn() -> LocalFuture<Result<R, JsError>>>,
    ) -> LocalFuture<Result<R, JsError>> {
        let queue: VecDeque<_> = self
            .listeners
            .borrow()
            .iter()
            .map(|l| l.callback.clone())
            .collect();
        Continuation {
            queue: Rc::new(RefCell::new(queue)),
            payload: Rc::new(payload),
            default,
        }
        .call()
    }

    /// Every listener in order (for serial events).
    pub fn snapshot(&self) -> Vec<ListenerFn<P, R>> {
        self.listeners
            .borrow()
            .iter()
            .map(|l| l.callback.clone())
            .collect()
    }
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
