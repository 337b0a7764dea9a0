//! The cordis waterfall, once: `(payload, next) => result` listeners run
//! outermost first, each `next()` runs the next listener in line, and the
//! innermost `next()` runs a default.
//!
//! All `next` handles of one dispatch share one queue, as cordis's do: a
//! listener that calls `next()` twice advances the queue twice. The
//! `system-prompt/assemble` event (01 R5.2) and the loop's `agent/pre-step`,
//! `agent/request` and `agent/request-error` events (05, 10 P1) all dispatch
//! through [`dispatch`]. [`Listeners`] keeps a listener list in cordis
//! order (a `prepend` listener goes outermost, others innermost); the
//! registry keeps its own, scope-filtered list and dispatches a snapshot.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::js::JsError;

/// A boxed local future.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// One listener: `(payload, next) -> result`.
pub type ListenerFn<P, R> =
    Rc<dyn Fn(Rc<P>, Continuation<P, R>) -> LocalFuture<Result<R, JsError>>>;

/// What the innermost `next()` runs.
pub type DefaultFn<R> = Rc<dyn Fn() -> LocalFuture<Result<R, JsError>>>;

/// `next()` of one dispatch.
pub struct Continuation<P, R> {
    queue: Rc<RefCell<VecDeque<ListenerFn<P, R>>>>,
    payload: Rc<P>,
    default: DefaultFn<R>,
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
    /// Run the next listener with the same payload, or the default when none
    /// is left.
    pub fn call(&self) -> LocalFuture<Result<R, JsError>> {
        let next = self.queue.borrow_mut().pop_front();
        match next {
            Some(listener) => listener(self.payload.clone(), self.clone()),
            None => (self.default)(),
        }
    }
}

/// Dispatch `payload` through `listeners` (outermost first).
pub fn dispatch<P: 'static, R: 'static>(
    listeners: Vec<ListenerFn<P, R>>,
    payload: Rc<P>,
    default: DefaultFn<R>,
) -> LocalFuture<Result<R, JsError>> {
    Continuation {
        queue: Rc::new(RefCell::new(listeners.into())),
        payload,
        default,
    }
    .call()
}

/// A listener list in cordis order: a `prepend` listener goes outermost
/// (first), others innermost (last). Shared by waterfalls and serial events.
pub struct Listeners<F> {
    entries: RefCell<Vec<(u64, F)>>,
}

impl<F> Default for Listeners<F> {
    fn default() -> Self {
        Listeners {
            entries: RefCell::new(Vec::new()),
        }
    }
}

impl<F: Clone> Listeners<F> {
    /// Register under `id` (for [`Listeners::remove`]).
    pub fn on(&self, id: u64, prepend: bool, callback: F) {
        let mut entries = self.entries.borrow_mut();
        if prepend {
            entries.insert(0, (id, callback));
        } else {
            entries.push((id, callback));
        }
    }

    /// Remove the listeners registered under `id`.
    pub fn remove(&self, id: u64) {
        self.entries.borrow_mut().retain(|(l, _)| *l != id);
    }

    /// The listeners now registered, first first. A dispatch works on this
    /// snapshot, so registering during a dispatch affects the next one.
    pub fn snapshot(&self) -> Vec<F> {
        self.entries
            .borrow()
            .iter()
            .map(|(_, callback)| callback.clone())
            .collect()
    }
}

/// A waterfall event's listeners, for events whose listeners are not
/// filtered per dispatch.
pub type Waterfall<P, R> = Listeners<ListenerFn<P, R>>;

impl<P: 'static, R: 'static> Listeners<ListenerFn<P, R>> {
    /// Dispatch over a snapshot; `default` is the innermost `next`.
    pub fn dispatch(&self, payload: P, default: DefaultFn<R>) -> LocalFuture<Result<R, JsError>> {
        dispatch(self.snapshot(), Rc::new(payload), default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(
        log: &Rc<RefCell<Vec<String>>>,
        name: &'static str,
        calls_next: u32,
    ) -> ListenerFn<u32, u32> {
        let log = log.clone();
        Rc::new(move |payload: Rc<u32>, next: Continuation<u32, u32>| {
            log.borrow_mut().push(format!("{name}({payload})"));
            Box::pin(async move {
                let mut result = 0;
                for _ in 0..calls_next {
                    result += next.call().await?;
                }
                Ok(result + 1)
            })
        })
    }

    #[test]
    fn prepend_goes_outermost_and_each_next_advances_the_shared_queue() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let waterfall: Waterfall<u32, u32> = Waterfall::default();
        waterfall.on(1, false, recorder(&log, "a", 2));
        waterfall.on(2, false, recorder(&log, "b", 0));
        waterfall.on(3, true, recorder(&log, "outer", 1));
        waterfall.on(4, false, recorder(&log, "c", 1));
        let default: DefaultFn<u32> = Rc::new(|| Box::pin(async { Ok(100) }));
        let result = futures_lite_block_on(waterfall.dispatch(7, default));
        // outer → a; a's first next runs b (which stops), its second runs c,
        // whose next finds the queue empty and runs the default.
        assert_eq!(*log.borrow(), ["outer(7)", "a(7)", "b(7)", "c(7)"]);
        assert_eq!(result, Ok(1 + (1 + (101) + 1)));
        waterfall.remove(1);
        assert_eq!(waterfall.snapshot().len(), 3);
    }

    /// A minimal executor for futures that never wait on anything.
    fn futures_lite_block_on<T>(future: LocalFuture<T>) -> T {
        use std::task::{Context, Poll, Waker};
        let mut future = future;
        let mut context = Context::from_waker(Waker::noop());
        match future.as_mut().poll(&mut context) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("a listener without I/O never waits"),
        }
    }
}
