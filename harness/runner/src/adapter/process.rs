//! Supervising an external adapter process: spawn, handshake, one request at
//! a time with a timeout, bounded reply size, kill and restart.
//!
//! Nothing an adapter does can hang or crash dshc: every read has a deadline
//! (this supervisor is the one place that reads the wall clock, to bound a
//! foreign process), every reply line is bounded, and every failure becomes an
//! outcome for the current case only.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use dshc_scenario::protocol::{
    BridgeAbort, BridgeRequest, BridgeResponse, Capabilities, ImplementationInfo, PROTOCOL_VERSION,
    Reply, ReplyBody, Request, RequestBody, parse_reply,
};

/// The provider of a `virtual_time` case, as the supervisor sees it: it
/// answers the adapter's provider requests and hears of their aborts.
pub trait ProviderBridge {
    /// Answer one request.
    fn request(&mut self, request: BridgeRequest) -> BridgeResponse;
    /// The adapter aborted request `abort.request` at `abort.at_ms`.
    fn abort(&mut self, abort: BridgeAbort);
}

/// Limits for one adapter (see [`crate::limits`] for the defaults).
#[derive(Clone, Debug)]
pub struct Limits {
    /// How long a case may take, request written and reply read.
    pub timeout_ms: u64,
    /// How long the first `start` handshake may take: longer, because an
    /// adapter may install its dependencies on first use. A restart after a
    /// fault shakes hands within `timeout_ms`.
    pub handshake_timeout_ms: u64,
    /// The longest reply line accepted.
    pub max_reply_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: crate::limits::CASE_TIMEOUT_MS,
            handshake_timeout_ms: crate::limits::HANDSHAKE_TIMEOUT_MS,
            max_reply_bytes: crate::limits::MAX_REPLY_BYTES,
        }
    }
}

/// How talking to the adapter went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterFault {
    /// It exited or closed stdout before replying.
    Crashed(String),
    /// No reply within the timeout.
    TimedOut(u64),
    /// The reply broke the protocol (not JSON, wrong seq, schema, too large).
    Protocol(String),
}

impl std::fmt::Display for AdapterFault {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Crashed(context) => write!(formatter, "the adapter crashed: {context}"),
            Self::TimedOut(timeout_ms) => {
                write!(
                    formatter,
                    "the adapter did not reply within {timeout_ms} ms"
                )
            }
            Self::Protocol(context) => write!(formatter, "protocol error: {context}"),
        }
    }
}

enum ReaderEvent {
    /// A line, and how many requests had been sent when it was read.
    Line(String, u64),
    Oversized(usize),
    Closed,
    Failed(String),
}

const STDERR_TAIL_BYTES: usize = 4096;

struct Running {
    child: Child,
    /// Request lines for the writer thread: a write that blocks (an adapter
    /// that stopped reading) blocks that thread, never the supervisor.
    requests: mpsc::Sender<String>,
    lines: Receiver<ReaderEvent>,
    /// Requests sent so far, counted before each is written, so a line read
    /// before a request went out is known not to answer it.
    sent: Arc<AtomicU64>,
    /// Bytes the adapter has written to stderr so far.
    stderr_bytes: Arc<AtomicU64>,
    /// Set while the first `start` is pending: its wait is on silence.
    starting: Option<Starting>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stderr_reader: thread::JoinHandle<()>,
    next_seq: u64,
}

/// The first handshake, which may install dependencies: it times out only
/// after `handshake_timeout_ms` with nothing on stdout or stderr, and says
/// every [`PROGRESS_EVERY_MS`] that it is still waiting.
struct Starting {
    command_line: String,
    stderr_bytes: u64,
    waited_ms: u64,
}

/// How often a pending first handshake prints that it is still waiting.
const PROGRESS_EVERY_MS: u64 = 10_000;

impl Running {
    /// The threads around a started child: the writer of requests, the
    /// reader of reply lines, and the keeper of stderr's tail.
    fn around(
        child: Child,
        (stdin, stdout, stderr): (ChildStdin, ChildStdout, ChildStderr),
        max_bytes: usize,
        starting: Option<Starting>,
    ) -> Running {
        let (requests, pending) = mpsc::channel();
        thread::spawn(move || write_requests(stdin, pending));
        let (sender, lines) = mpsc::channel();
        let sent = Arc::new(AtomicU64::new(0));
        let counted = sent.clone();
        thread::spawn(move || read_lines(stdout, max_bytes, counted, sender));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        let stderr_bytes = Arc::new(AtomicU64::new(0));
        let written = stderr_bytes.clone();
        let stderr_reader = thread::spawn(move || keep_tail(stderr, tail, written));
        Running {
            child,
            requests,
            lines,
            sent,
            stderr_bytes,
            starting,
            stderr_tail,
            stderr_reader,
            next_seq: 0,
        }
    }

    /// Write one request line.
    fn send(&mut self, request: &Request) -> Result<(), AdapterFault> {
        let mut line = serde_json::to_string(request)
            .map_err(|e| AdapterFault::Protocol(format!("cannot encode request: {e}")))?;
        line.push('\n');
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.requests
            .send(line)
            .map_err(|_| AdapterFault::Crashed("the adapter's stdin is closed".into()))
    }

    /// The next reply line, by `deadline`, with how many requests had been
    /// sent when it was read; the process's end, a line over
    /// `max_reply_bytes` and a failed read are faults.
    fn next_line(
        &mut self,
        deadline: std::time::Instant,
        timeout_ms: u64,
        max_reply_bytes: usize,
    ) -> Result<(String, u64), AdapterFault> {
        #[expect(
            clippy::disallowed_methods,
            reason = "the supervisor bounds a foreign process in real time"
        )]
        let now = std::time::Instant::now;
        let mut deadline = deadline;
        let event = loop {
            let left = deadline.saturating_duration_since(now());
            let wait = match &self.starting {
                Some(_) => left.min(Duration::from_millis(PROGRESS_EVERY_MS)),
                None => left,
            };
            match self.lines.recv_timeout(wait) {
                Ok(event) => break event,
                Err(RecvTimeoutError::Timeout) => {
                    let Some(starting) = &mut self.starting else {
                        return Err(AdapterFault::TimedOut(timeout_ms));
                    };
                    starting.waited_ms += u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                    let written = self.stderr_bytes.load(Ordering::SeqCst);
                    let busy = written != starting.stderr_bytes;
                    if busy {
                        // Still installing: the silence starts again.
                        starting.stderr_bytes = written;
                        deadline = now() + Duration::from_millis(timeout_ms);
                    } else if now() >= deadline {
                        return Err(AdapterFault::TimedOut(timeout_ms));
                    }
                    eprintln!(
                        "waiting for adapter `{}` to start: {} s so far{}",
                        starting.command_line,
                        starting.waited_ms / 1_000,
                        if busy {
                            ", it is writing to stderr"
                        } else {
                            ""
                        }
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(AdapterFault::Crashed(
                        "the adapter's stdout reader stopped".into(),
                    ));
                }
            }
        };
        match event {
            ReaderEvent::Line(line, sent) => Ok((line, sent)),
            ReaderEvent::Oversized(bytes) => Err(AdapterFault::Protocol(format!(
                "reply exceeds the {max_reply_bytes} byte limit (at least {bytes} bytes)"
            ))),
            ReaderEvent::Closed => {
                // The process may live on with stdout closed: kill its group
                // first, then the wait is immediate.
                kill_group(&self.child);
                let status = self
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| format!("status unknown: {e}"));
                Err(AdapterFault::Crashed(format!(
                    "the adapter closed stdout ({status})"
                )))
            }
            ReaderEvent::Failed(error) => {
                Err(AdapterFault::Crashed(format!("reading stdout: {error}")))
            }
        }
    }
}

/// What a line read while request `seq` is pending turned out to be.
enum LineRead {
    /// That request's reply.
    Reply(Reply),
    /// Not its reply: skipped with `warning`. `restart`: the adapter is
    /// restarted after the case; `unsent`: the protocol error the case gets
    /// if no reply of its own follows.
    Skip {
        warning: String,
        restart: bool,
        unsent: Option<String>,
    },
}

/// Read `line` as the reply to request `seq`; `before_request`: it was read
/// before that request went out.
fn classify(line: &str, before_request: bool, seq: u64) -> Result<LineRead, AdapterFault> {
    let shown: String = line.chars().take(200).collect();
    let parsed = parse_reply(line);
    // Read before this request went out, and no second answer to an
    // earlier one: the adapter wrote it between requests. It is not this
    // case's fault; the adapter is restarted after the case.
    if before_request && parsed.as_ref().ok().is_none_or(|reply| reply.seq >= seq) {
        return Ok(LineRead::Skip {
            warning: format!(
                "wrote {shown:?} while no request was pending; it is restarted after this case"
            ),
            restart: true,
            unsent: None,
        });
    }
    let reply = parsed.map_err(|error| {
        AdapterFault::Protocol(format!(
            "reply does not match the protocol ({error}): {shown}"
        ))
    })?;
    Ok(if reply.seq < seq {
        // A second answer to a request already answered: the earlier
        // case's doing, not this one's.
        LineRead::Skip {
            warning: format!("answered request {} again; ignored", reply.seq),
            restart: false,
            unsent: None,
        }
    } else if reply.seq != seq {
        LineRead::Skip {
            warning: format!(
                "answered request {}, which was never sent; it is restarted after this case",
                reply.seq
            ),
            restart: true,
            unsent: Some(format!(
                "reply answers seq {} but request {seq} is pending",
                reply.seq
            )),
        }
    } else {
        LineRead::Reply(reply)
    })
}

/// One adapter command line, with its current process (if any).
pub struct AdapterProcess {
    command_line: String,
    limits: Limits,
    running: Option<Running>,
    /// What the last handshake said (kept after the process is gone).
    pub implementation: Option<ImplementationInfo>,
    /// Capabilities from the last handshake.
    pub capabilities: Capabilities,
    /// How many times a process was started.
    pub starts: u32,
    /// A handshake failed: the adapter cannot start, so it is not started
    /// again and every later case gets this fault at once.
    handshake_failed: Option<AdapterFault>,
}

fn write_requests(mut stdin: ChildStdin, requests: Receiver<String>) {
    for line in requests {
        if stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

fn read_lines(
    stdout: impl Read,
    max_bytes: usize,
    sent: Arc<AtomicU64>,
    events: mpsc::Sender<ReaderEvent>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    // Requests sent when the bytes of the current line were read from the
    // pipe (taken after the read returns, so never before they arrived).
    let mut sent_when_read = 0;
    loop {
        let mut line: Vec<u8> = Vec::new();
        loop {
            let reads = reader.buffer().is_empty();
            let buffer = match reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) => {
                    let _ = events.send(ReaderEvent::Failed(error.to_string()));
                    return;
                }
            };
            if buffer.is_empty() {
                let _ = events.send(ReaderEvent::Closed);
                return;
            }
            if reads {
                sent_when_read = sent.load(Ordering::SeqCst);
            }
            let (chunk, found_newline) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..end], true),
                None => (buffer, false),
            };
            if line.len() + chunk.len() > max_bytes {
                // Stop reading: the supervisor reports the fault and kills
                // the process, so nothing more needs to be buffered.
                let _ = events.send(ReaderEvent::Oversized(line.len() + chunk.len()));
                return;
            }
            line.extend_from_slice(chunk);
            let consumed = chunk.len() + usize::from(found_newline);
            reader.consume(consumed);
            if found_newline {
                break;
            }
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        if events
            .send(ReaderEvent::Line(line, sent_when_read))
            .is_err()
        {
            return;
        }
    }
}

fn keep_tail(stderr: impl Read, tail: Arc<Mutex<VecDeque<u8>>>, written: Arc<AtomicU64>) {
    let mut reader = BufReader::new(stderr);
    let mut buffer = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buffer) {
        if n == 0 {
            return;
        }
        written.fetch_add(n as u64, Ordering::SeqCst);
        if let Ok(mut tail) = tail.lock() {
            tail.extend(&buffer[..n]);
            let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
            tail.drain(..excess);
        }
    }
}

impl AdapterProcess {
    /// An adapter run as `sh -c <command_line>`; not started yet.
    pub fn new(command_line: &str, limits: Limits) -> Self {
        AdapterProcess {
            command_line: command_line.to_string(),
            limits,
            running: None,
            implementation: None,
            capabilities: Capabilities::default(),
            starts: 0,
            handshake_failed: None,
        }
    }

    /// The command line.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// Start a process and shake hands, unless one is already running.
    pub fn ensure_started(&mut self) -> Result<(), AdapterFault> {
        if self.running.is_some() {
            return Ok(());
        }
        if let Some(fault) = &self.handshake_failed {
            return Err(fault.clone());
        }
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command_line)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|e| {
            AdapterFault::Crashed(format!("cannot start `{}`: {e}", self.command_line))
        })?;
        self.starts += 1;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(AdapterFault::Crashed(
                "the adapter's pipes are missing".into(),
            ));
        };
        let first_start = self.starts == 1;
        let starting = first_start.then(|| Starting {
            command_line: self.command_line.clone(),
            stderr_bytes: 0,
            waited_ms: 0,
        });
        self.running = Some(Running::around(
            child,
            (stdin, stdout, stderr),
            self.limits.max_reply_bytes,
            starting,
        ));
        let timeout_ms = if first_start {
            self.limits.handshake_timeout_ms
        } else {
            self.limits.timeout_ms
        };
        let reply = self.exchange_within(
            RequestBody::Start {
                version: PROTOCOL_VERSION,
            },
            timeout_ms,
        );
        if let Some(running) = self.running.as_mut() {
            running.starting = None;
        }
        match reply {
            Ok(ReplyBody::Started {
                version,
                implementation,
                capabilities,
            }) => {
                if version != PROTOCOL_VERSION {
                    let _ = self.kill();
                    return Err(AdapterFault::Protocol(format!(
                        "adapter speaks protocol {version}, dshc speaks {PROTOCOL_VERSION}"
                    )));
                }
                self.implementation = Some(implementation);
                self.capabilities = capabilities;
                Ok(())
            }
            Ok(other) => {
                let _ = self.kill();
                let fault = AdapterFault::Protocol(format!("expected `started`, got {other:?}"));
                self.handshake_failed = Some(fault.clone());
                Err(fault)
            }
            Err(fault) => {
                let fault = match fault {
                    AdapterFault::TimedOut(ms) => AdapterFault::Crashed(format!(
                        "the adapter did not answer `start` within {ms} ms; it is not started again"
                    )),
                    other => other,
                };
                self.handshake_failed = Some(fault.clone());
                Err(fault)
            }
        }
    }

    /// The last few KiB the adapter wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.running
            .as_ref()
            .and_then(|r| {
                r.stderr_tail.lock().ok().map(|t| {
                    String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>()).into_owned()
                })
            })
            .unwrap_or_default()
    }

    /// The per-case deadline.
    pub fn timeout_ms(&self) -> u64 {
        self.limits.timeout_ms
    }

    /// Send one command and wait for its reply. Any fault kills the process;
    /// the next call starts a fresh one.
    pub fn exchange(&mut self, body: RequestBody) -> Result<ReplyBody, AdapterFault> {
        self.exchange_within(body, self.limits.timeout_ms)
    }

    /// [`AdapterProcess::exchange`] with its own deadline (a benchmark
    /// request runs far longer than a case).
    pub fn exchange_within(
        &mut self,
        body: RequestBody,
        timeout_ms: u64,
    ) -> Result<ReplyBody, AdapterFault> {
        self.exchange_serving(body, timeout_ms, None)
    }

    /// [`AdapterProcess::exchange_within`] for a `virtual_time` case: each
    /// `provider_request` the adapter sends meanwhile is answered by
    /// `bridge`, and each `provider_abort` handed to it, all within the one
    /// deadline. Without a bridge either is a protocol error.
    pub fn exchange_serving(
        &mut self,
        body: RequestBody,
        timeout_ms: u64,
        bridge: Option<&mut dyn ProviderBridge>,
    ) -> Result<ReplyBody, AdapterFault> {
        let result = self.exchange_inner(body, timeout_ms, bridge);
        if result.is_err() {
            let tail = self.kill();
            return result.map_err(|fault| match fault {
                AdapterFault::Crashed(context) if !tail.trim().is_empty() => AdapterFault::Crashed(
                    format!("{context}; stderr ends with:\n{}", tail.trim_end()),
                ),
                other => other,
            });
        }
        result
    }

    fn exchange_inner(
        &mut self,
        body: RequestBody,
        timeout_ms: u64,
        mut bridge: Option<&mut dyn ProviderBridge>,
    ) -> Result<ReplyBody, AdapterFault> {
        let running = self
            .running
            .as_mut()
            .ok_or_else(|| AdapterFault::Crashed("adapter is not running".into()))?;
        let seq = running.next_seq;
        running.next_seq += 1;
        // The deadline covers the write too: the writer thread may block on a
        // full pipe, the reply wait does not.
        #[expect(
            clippy::disallowed_methods,
            reason = "the supervisor bounds a foreign process in real time"
        )]
        let deadline = std::time::Instant::now() + Duration::from_millis(timeout_ms);
        running.send(&Request { seq, body })?;
        let sent_with_it = running.sent.load(Ordering::SeqCst);
        let mut stray_seen = false;
        // A reply to a request never sent: the adapter's stray, which the
        // case's own reply may still follow; if none does, the stray is why.
        let mut unsent_seq: Option<String> = None;
        let body = loop {
            let next = running.next_line(deadline, timeout_ms, self.limits.max_reply_bytes);
            let (line, sent) = match (next, unsent_seq.take()) {
                (Ok(read), unsent) => {
                    unsent_seq = unsent;
                    read
                }
                (Err(AdapterFault::TimedOut(_)), Some(unsent)) => {
                    return Err(AdapterFault::Protocol(unsent));
                }
                (Err(fault), _) => return Err(fault),
            };
            let reply = match classify(&line, sent < sent_with_it, seq)? {
                LineRead::Reply(reply) => reply,
                LineRead::Skip {
                    warning,
                    restart,
                    unsent,
                } => {
                    eprintln!("warning: adapter `{}` {warning}", self.command_line);
                    stray_seen |= restart;
                    unsent_seq = unsent.or(unsent_seq);
                    continue;
                }
            };
            let response = match (reply.body, bridge.as_deref_mut()) {
                (ReplyBody::ProviderRequest(request), Some(bridge)) => bridge.request(request),
                (ReplyBody::ProviderAbort(abort), Some(bridge)) => {
                    bridge.abort(abort);
                    continue;
                }
                (ReplyBody::ProviderRequest(_) | ReplyBody::ProviderAbort(_), None) => {
                    return Err(AdapterFault::Protocol(
                        "a provider message outside a `virtual_time` case".into(),
                    ));
                }
                (body, _) => break body,
            };
            running.send(&Request {
                seq,
                body: RequestBody::ProviderResponse { response },
            })?;
        };
        if stray_seen {
            let _ = self.kill();
        }
        Ok(body)
    }

    /// Kill the process group and forget the process. Returns the last few
    /// KiB it wrote to stderr.
    pub fn kill(&mut self) -> String {
        let Some(mut running) = self.running.take() else {
            return String::new();
        };
        kill_group(&running.child);
        let _ = running.child.kill();
        let _ = running.child.wait();
        // The group is dead, so stderr reaches end of file soon; wait a
        // little for the reader, but never on a process that escaped the group.
        for _ in 0..50 {
            if running.stderr_reader.is_finished() {
                break;
            }
            #[expect(
                clippy::disallowed_methods,
                reason = "the supervisor bounds a foreign process in real time"
            )]
            thread::sleep(Duration::from_millis(2));
        }
        let tail = running
            .stderr_tail
            .lock()
            .map(|t| t.iter().copied().collect::<Vec<u8>>())
            .unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// Ask the adapter to stop, then make sure it is gone.
    pub fn stop(&mut self) {
        if self.running.is_some() {
            let _ = self.exchange_inner(RequestBody::Stop, self.limits.timeout_ms, None);
        }
        let _ = self.kill();
    }
}

/// Kill the adapter's process group (it runs in its own, see
/// `ensure_started`), so `sh -c` and its children die too.
fn kill_group(child: &Child) {
    if let Some(group) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
