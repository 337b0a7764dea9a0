//! An `AbortSignal` for the deterministic executor.
//!
//! The loop passes the turn's signal in `AssembleContext.signal`; a
//! cooperative listener or provider waits on it. Aborting records the first
//! cause only and wakes every waiter, with no clock or thread involved.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::Value;

#[derive(Default)]
struct SignalState {
    reason: Option<Value>,
    wakers: Vec<Waker>,
}

/// A shared abort flag with a cause; clones observe the same state.
#[derive(Clone, Default)]
pub struct AbortSignal(Rc<RefCell<SignalState>>);

impl AbortSignal {
    /// A fresh, not-aborted signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Abort with `reason`; the first cause wins. Returns whether this call aborted.
    pub fn abort(&self, reason: Value) -> bool {
        let wakers = {
            let mut state = self.0.borrow_mut();
            if state.reason.is_some() {
                return false;
            }
            state.reason = Some(reason);
            std::mem::take(&mut state.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
        true
    }

    /// Whether the signal was aborted.
    pub fn is_aborted(&self) -> bool {
        self.0.borrow().reason.is_some()
    }

    /// The abort cause, if aborted.
    pub fn reason(&self) -> Option<Value> {
        self.0.borrow().reason.clone()
    }

    /// A future that resolves with the cause once the signal is aborted.
    pub fn aborted(&self) -> Aborted {
        Aborted(self.clone())
    }
}

/// Future returned by [`AbortSignal::aborted`].
pub struct Aborted(AbortSignal);

impl Future for Aborted {
    type Output = Value;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Value> {
        let mut state = (self.0).0.borrow_mut();
        match &state.reason {
            Some(reason) => Poll::Ready(reason.clone()),
            None => {
                state.wakers.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Yield to the executor once, like a JavaScript `await` of a settled value:
/// the caller's synchronous prefix ends here.
pub fn yield_now() -> YieldNow {
    YieldNow(false)
}

/// Future returned by [`yield_now`].
pub struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
