//! Supervising an external adapter process: spawn, handshake, one request at
//! a time with a timeout, bounded reply size, kill and restart.
//!
//! Nothing an adapter does can hang or crash dshc: every read has a deadline
//! (this supervisor is the one place that reads the wall clock, to bound a
//! foreign process), every reply line is bounded, and every failure becomes an
//! outcome for the current case only.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use dshc_scenario::protocol::{
    Capabilities, ImplementationInfo, PROTOCOL_VERSION, Reply, ReplyBody, Request, RequestBody,
    parse_reply,
};

/// Limits for one adapter.
#[derive(Clone, Debug)]
pub struct Limits {
    /// How long a case may take.
    pub timeout_ms: u64,
    /// How long the `start` handshake may take: longer, because an adapter
    /// may install its dependencies on first use.
    pub handshake_timeout_ms: u64,
    /// The longest reply line accepted.
    pub max_reply_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 10_000,
            handshake_timeout_ms: 300_000,
            max_reply_bytes: 8 << 20,
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

enum ReaderEvent {
    Line(String),
    Oversized(usize),
    Closed,
    Failed(String),
}

const STDERR_TAIL_BYTES: usize = 4096;

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<ReaderEvent>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stderr_reader: thread::JoinHandle<()>,
    next_seq: u64,
}

/// One adapter command line, with its current process (if any).
pub struct AdapterProcess {
    command_line: String,
    limits: Limits,
    running: Option<Running>,
    /// What the last handshake said.
    pub implementation: Option<ImplementationInfo>,
    /// Capabilities from the last handshake.
    pub capabilities: Capabilities,
    /// How many times a process was started.
    pub starts: u32,
}

fn read_lines(stdout: impl Read, max_bytes: usize, events: mpsc::Sender<ReaderEvent>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    loop {
        let mut line: Vec<u8> = Vec::new();
        loop {
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
        if events
            .send(ReaderEvent::Line(
                String::from_utf8_lossy(&line).into_owned(),
            ))
            .is_err()
        {
            return;
        }
    }
}

fn keep_tail(stderr: impl Read, tail: Arc<Mutex<VecDeque<u8>>>) {
    let mut reader = BufReader::new(stderr);
    let mut buffer = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buffer) {
        if n == 0 {
            return;
        }
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
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (sender, lines) = mpsc::channel();
        let max_bytes = self.limits.max_reply_bytes;
        thread::spawn(move || read_lines(stdout, max_bytes, sender));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        let stderr_reader = thread::spawn(move || keep_tail(stderr, tail));
        self.running = Some(Running {
            child,
            stdin,
            lines,
            stderr_tail,
            stderr_reader,
            next_seq: 0,
        });
        let reply = self.exchange(RequestBody::Start {
            version: PROTOCOL_VERSION,
        });
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
                Err(AdapterFault::Protocol(format!(
                    "expected `started`, got {other:?}"
                )))
            }
            Err(fault) => Err(fault),
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

    /// Send one command and wait for its reply. Any fault kills the process;
    /// the next call starts a fresh one.
    pub fn exchange(&mut self, body: RequestBody) -> Result<ReplyBody, AdapterFault> {
        let result = self.exchange_inner(body);
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

    fn exchange_inner(&mut self, body: RequestBody) -> Result<ReplyBody, AdapterFault> {
        let timeout_ms = match body {
            RequestBody::Start { .. } => self.limits.handshake_timeout_ms,
            _ => self.limits.timeout_ms,
        };
        let running = self
            .running
            .as_mut()
            .ok_or_else(|| AdapterFault::Crashed("adapter is not running".into()))?;
        let seq = running.next_seq;
        running.next_seq += 1;
        let mut line = serde_json::to_string(&Request { seq, body })
            .map_err(|e| AdapterFault::Protocol(format!("cannot encode request: {e}")))?;
        line.push('\n');
        if let Err(error) = running
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| running.stdin.flush())
        {
            return Err(AdapterFault::Crashed(format!(
                "cannot write to the adapter: {error}"
            )));
        }
        let event = match running
            .lines
            .recv_timeout(Duration::from_millis(timeout_ms))
        {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => return Err(AdapterFault::TimedOut(timeout_ms)),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(AdapterFault::Crashed(
                    "the adapter's stdout reader stopped".into(),
                ));
            }
        };
        let line = match event {
            ReaderEvent::Line(line) => line,
            ReaderEvent::Oversized(bytes) => {
                return Err(AdapterFault::Protocol(format!(
                    "reply exceeds the {} byte limit (at least {bytes} bytes)",
                    self.limits.max_reply_bytes
                )));
            }
            ReaderEvent::Closed => {
                let status = running
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                return Err(AdapterFault::Crashed(format!(
                    "the adapter closed stdout ({status})"
                )));
            }
            ReaderEvent::Failed(error) => {
                return Err(AdapterFault::Crashed(format!("reading stdout: {error}")));
            }
        };
        let reply: Reply = parse_reply(&line).map_err(|error| {
            let shown: String = line.chars().take(200).collect();
            AdapterFault::Protocol(format!(
                "reply does not match the protocol ({error}): {shown}"
            ))
        })?;
        if reply.seq != seq {
            return Err(AdapterFault::Protocol(format!(
                "reply answers seq {} but request {seq} is pending",
                reply.seq
            )));
        }
        Ok(reply.body)
    }

    /// Kill the process group and forget the process. Returns the last few
    /// KiB it wrote to stderr.
    pub fn kill(&mut self) -> String {
        let Some(mut running) = self.running.take() else {
            return String::new();
        };
        {
            // The adapter runs in its own process group (see `ensure_started`);
            // kill the whole group so `sh -c` children die too.
            if let Some(group) = i32::try_from(running.child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
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
            let _ = self.exchange_inner(RequestBody::Stop);
        }
        let _ = self.kill();
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
