//! `dshc serve`'s output, off the request path. A request's stderr line and
//! its `--log` line go into queues bounded in bytes, and a thread per output
//! writes them, so an output nobody drains (a pipe or FIFO no one reads, a
//! stalled disk) never blocks the server: requests go on being answered. A
//! line that does not fit in its queue is dropped and counted, and the count
//! is reported once the writer gets going again.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// A queue of lines bounded by their bytes, drained by one writer thread.
pub(super) struct Queue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    capacity_bytes: usize,
}

struct State<T> {
    items: VecDeque<(T, usize)>,
    queued_bytes: usize,
    /// Items refused since the writer last took one.
    dropped: u64,
}

impl<T> Queue<T> {
    /// An empty queue holding at most `capacity_bytes`.
    pub(super) fn new(capacity_bytes: usize) -> Self {
        Queue {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: VecDeque::new(),
                    queued_bytes: 0,
                    dropped: 0,
                }),
                ready: Condvar::new(),
                capacity_bytes,
            }),
        }
    }

    /// Queue `item` of `bytes` bytes, never waiting: `false` (and the item
    /// counted as dropped) when it does not fit.
    pub(super) fn push(&self, item: T, bytes: usize) -> bool {
        let mut state = self.lock();
        if state.queued_bytes.saturating_add(bytes) > self.shared.capacity_bytes {
            state.dropped += 1;
            return false;
        }
        state.queued_bytes += bytes;
        state.items.push_back((item, bytes));
        drop(state);
        self.shared.ready.notify_one();
        true
    }

    /// The next item, waiting for one, and how many were dropped since the
    /// last call.
    pub(super) fn pop(&self) -> (T, u64) {
        let mut state = self.lock();
        loop {
            if let Some((item, bytes)) = state.items.pop_front() {
                state.queued_bytes -= bytes;
                let dropped = std::mem::take(&mut state.dropped);
                return (item, dropped);
            }
            state = self
                .shared
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Start a thread that writes `queue`'s lines to `output`, each flushed,
/// with a note after the lines that were dropped while it was stuck. A
/// failed write is ignored (a closed stderr must not take the server down).
pub(super) fn spawn_stderr_writer(
    queue: Queue<String>,
    mut output: impl Write + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("serve-stderr".into())
        .spawn(move || {
            loop {
                let (line, dropped) = queue.pop();
                if dropped > 0 {
                    let _ = writeln!(
                        output,
                        "dshc serve: {dropped} lines were not printed (stderr was not read)"
                    );
                }
                let _ = writeln!(output, "{line}").and_then(|()| output.flush());
            }
        })
        .map(drop)
}

/// One request for the log writer: its JSON line, and its stderr line to
/// pass on once the JSON line is written (`None` with `--quiet`).
pub(super) struct LogLine {
    pub(super) json: String,
    pub(super) summary: Option<String>,
}

impl LogLine {
    /// Its size in a queue.
    pub(super) fn bytes(&self) -> usize {
        self.json.len() + self.summary.as_ref().map_or(0, String::len)
    }
}

/// Start a thread that writes `queue`'s JSON lines to `log` (named `name` in
/// messages), each flushed whole so a killed server leaves a valid log, then
/// passes each request's stderr line on to `stderr`. Dropped lines and a
/// failed write are reported on `stderr`; after a failed write nothing more
/// is logged (`failed` is set) and stderr lines still pass.
pub(super) fn spawn_log_writer(
    queue: Queue<LogLine>,
    mut log: impl Write + Send + 'static,
    name: String,
    stderr: Queue<String>,
    failed: Arc<std::sync::atomic::AtomicBool>,
) -> std::io::Result<()> {
    let to_stderr = move |line: String| {
        let bytes = line.len();
        stderr.push(line, bytes);
    };
    std::thread::Builder::new()
        .name("serve-log".into())
        .spawn(move || {
            loop {
                let (line, dropped) = queue.pop();
                if dropped > 0 {
                    to_stderr(format!(
                        "warning: {dropped} requests were not written to {name} (it fell behind)"
                    ));
                }
                if !failed.load(std::sync::atomic::Ordering::Relaxed)
                    && let Err(error) = writeln!(log, "{}", line.json).and_then(|()| log.flush())
                {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    to_stderr(format!(
                        "error: cannot write {name} ({error}); no more requests are logged"
                    ));
                }
                if let Some(summary) = line.summary {
                    to_stderr(summary);
                }
            }
        })
        .map(drop)
}
