//! The dshc adapter protocol (docs/adapter-protocol.md, version 1) for a port
//! written in Rust, so that its adapter is a few lines: implement [`Port`]
//! over the port's registry and loop, and call [`serve_stdio`] from `main`.
//!
//! The kit owns the transport: one JSON object per line on stdin and stdout,
//! the `start` handshake and its version check, `seq` echoing, `stop`, and
//! answers for the extensions a port does not offer (`bench/1`,
//! `virtual_time/1`). A panic while a case runs becomes that case's
//! `errored` reply, so one broken case never ends the run. The message types
//! are the protocol's own ([`dshc_scenario::protocol`]), the ones the
//! committed schema is generated from.
//!
//! ```text
//! struct MyPort;
//! impl dshc_adapter::Port for MyPort {
//!     fn implementation(&self) -> ImplementationInfo { ... }
//!     fn levels(&self) -> Vec<Level> { vec![Level::Assembly] }
//!     fn run(&mut self, case: &Case, provider_url: Option<&str>) -> RunOutcome { ... }
//! }
//! fn main() -> std::io::Result<()> { dshc_adapter::serve_stdio(&mut MyPort) }
//! ```

use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use dshc_scenario::protocol::{
    Capabilities, Case, CaseResult, ImplementationInfo, Level, Observation, PROTOCOL_VERSION,
    Reply, ReplyBody, Request, RequestBody,
};

/// How one case went, as the port reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum RunOutcome {
    /// The case ran: one observation per command (and a loop case's run).
    Ran(Box<CaseResult>),
    /// The port cannot express this case; the reason is shown to the user.
    Skipped(String),
    /// The adapter itself failed (not the implementation under test: an
    /// implementation's error is an observation).
    Errored(String),
}

/// An implementation of the contract, as dshc drives it.
pub trait Port {
    /// Who this is, for the report.
    fn implementation(&self) -> ImplementationInfo;
    /// The contract levels it runs; dshc skips cases of the others without
    /// sending them.
    fn levels(&self) -> Vec<Level>;
    /// Run one case in a fresh registry (nothing survives between cases).
    /// A loop case in real time names the mock provider's address.
    fn run(&mut self, case: &Case, provider_url: Option<&str>) -> RunOutcome;
}

/// Serve `port` on this process's stdin and stdout until `stop` or the end
/// of stdin.
pub fn serve_stdio(port: &mut impl Port) -> std::io::Result<()> {
    serve(port, std::io::stdin().lock(), std::io::stdout().lock())
}

/// Serve `port`: read requests from `input`, write one reply line each to
/// `output`, until `stop`, a refused handshake or the end of `input`.
pub fn serve(
    port: &mut impl Port,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (seq, body, last) = match serde_json::from_str::<Request>(&line) {
            Ok(request) => {
                let last = matches!(request.body, RequestBody::Stop);
                let body = reply_to(port, request.body);
                let refused = matches!(body, ReplyBody::Errored { .. }) && is_start(&line);
                (request.seq, body, last || refused)
            }
            Err(error) => (
                seq_of(&line),
                ReplyBody::Errored {
                    context: format!("not a protocol request: {error}"),
                },
                false,
            ),
        };
        let reply = serde_json::to_string(&Reply { seq, body }).map_err(std::io::Error::other)?;
        writeln!(output, "{reply}")?;
        output.flush()?;
        if last {
            break;
        }
    }
    Ok(())
}

/// The reply to one request.
fn reply_to(port: &mut impl Port, request: RequestBody) -> ReplyBody {
    match request {
        RequestBody::Start { version } if version == PROTOCOL_VERSION => ReplyBody::Started {
            version,
            implementation: port.implementation(),
            capabilities: Capabilities {
                levels: port.levels(),
                bench: false,
                virtual_time: false,
                step_refs: false,
            },
        },
        RequestBody::Start { version } => ReplyBody::Errored {
            context: format!(
                "dshc speaks protocol version {version}; this adapter speaks {PROTOCOL_VERSION}"
            ),
        },
        RequestBody::Run {
            case, provider_url, ..
        } => {
            let ran = catch_unwind(AssertUnwindSafe(|| {
                port.run(&case, provider_url.as_deref())
            }));
            match ran {
                Ok(RunOutcome::Ran(result)) => ReplyBody::Result(result),
                Ok(RunOutcome::Skipped(reason)) => ReplyBody::Skipped { reason },
                Ok(RunOutcome::Errored(context)) => ReplyBody::Errored { context },
                Err(panic) => ReplyBody::Errored {
                    context: format!("the port panicked: {}", panic_message(panic.as_ref())),
                },
            }
        }
        RequestBody::Bench { .. } => ReplyBody::Errored {
            context: "this adapter does not offer bench/1".into(),
        },
        RequestBody::ProviderResponse { .. } => ReplyBody::Errored {
            context: "this adapter does not offer virtual_time/1".into(),
        },
        RequestBody::Stop => ReplyBody::Stopped {},
    }
}

fn is_start(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v["cmd"] == "start")
}

/// The `seq` of a line that is not a valid request, when it has one.
fn seq_of(line: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|value| value["seq"].as_u64())
        .unwrap_or(0)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
