//! `dshc adapter`: the reference speaking the adapter protocol on stdin and
//! stdout, so the protocol itself is tested end to end: both levels, the
//! `bench/1` extension and `virtual_time/1` (loop cases on the harness's
//! clock, their provider requests over the protocol: `virtual_time`).
//!
//! The two streams are one shared `Channel`: between requests this loop
//! reads and writes it; while a loop case runs, the simulation's bridge
//! host does, to ask the harness for each provider response.

use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::rc::Rc;

use dshc_scenario::protocol::{
    Capabilities, Case, Level, PROTOCOL_VERSION, Reply, ReplyBody, RequestBody, parse_request,
};

use crate::channel::{Channel, SharedChannel};
use crate::{reference_info, reference_levels};

/// Why a loop case sent in real time (with `provider_url`) is declined.
pub const REAL_TIME_DECLINED: &str = "the reference runs loop cases only on the harness's clock \
     (virtual_time/1): it has no real-time mode to point at `provider_url`";

/// Serve requests until `stop` or end of input.
pub fn serve(input: impl BufRead + 'static, output: impl Write + 'static) -> std::io::Result<()> {
    let channel: SharedChannel = Rc::new(RefCell::new(Channel::new(input, output)));
    loop {
        let Some(line) = channel.borrow_mut().read_line()? else {
            return Ok(());
        };
        if line.trim().is_empty() {
            continue;
        }
        let Some((seq, body, stop)) = answer(&line, &channel)? else {
            continue;
        };
        channel.borrow_mut().write_reply(&Reply { seq, body })?;
        if stop {
            return Ok(());
        }
    }
}

/// The reply to one request line, and whether to stop after it; `None`
/// for a line without a `seq` to answer.
fn answer(line: &str, channel: &SharedChannel) -> std::io::Result<Option<(u64, ReplyBody, bool)>> {
    let request = match parse_request(line) {
        Ok(request) => request,
        Err(error) => {
            let seq = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("seq").and_then(|s| s.as_u64()));
            let Some(seq) = seq else {
                eprintln!("dshc adapter: ignoring a request without seq: {error}");
                return Ok(None);
            };
            let context = format!("bad request: {error}");
            return Ok(Some((seq, ReplyBody::Errored { context }, false)));
        }
    };
    let seq = request.seq;
    let body = match request.body {
        RequestBody::Start { .. } => ReplyBody::Started {
            version: PROTOCOL_VERSION,
            implementation: reference_info(),
            capabilities: Capabilities {
                levels: reference_levels(),
                bench: true,
                virtual_time: true,
                step_refs: true,
            },
        },
        RequestBody::Run {
            case, virtual_time, ..
        } => run(seq, &case, virtual_time, channel)?,
        RequestBody::Bench {
            case,
            iterations,
            batches,
        } => match crate::bench::BenchRig::new(&case)
            .map_err(|e| e.to_string())
            .and_then(|rig| rig.time(iterations, batches).map_err(|e| e.message))
        {
            Ok(reply) => ReplyBody::Benched(reply),
            Err(error) => ReplyBody::Errored {
                context: format!("bench: {error}"),
            },
        },
        RequestBody::ProviderResponse { .. } => ReplyBody::Errored {
            context: "a `provider_response` answers no request: no provider request of this \
                      adapter is waiting"
                .into(),
        },
        RequestBody::Stop => return Ok(Some((seq, ReplyBody::Stopped {}, true))),
    };
    Ok(Some((seq, body, false)))
}

/// Run one case: an assembly case in process, a loop case on the
/// harness's clock with its provider requests over `channel`. A loop case
/// in real time is declined ([`REAL_TIME_DECLINED`]). An error only when
/// talking to the harness failed.
fn run(
    seq: u64,
    case: &Case,
    virtual_time: bool,
    channel: &SharedChannel,
) -> std::io::Result<ReplyBody> {
    let ran = match case.level {
        Level::Assembly => crate::run_case(case),
        Level::Loop if !virtual_time => match dshc_scenario::compile::validate_case(case) {
            Err(error) => Err(error),
            Ok(()) => {
                return Ok(ReplyBody::Skipped {
                    reason: REAL_TIME_DECLINED.into(),
                });
            }
        },
        Level::Loop => {
            let link = crate::virtual_time::HarnessLink::new(seq, channel.clone());
            let ran = crate::run_case_on_harness_clock(case, &link);
            link.io_result()?;
            ran
        }
    };
    Ok(match ran {
        Ok(result) => ReplyBody::Result(Box::new(result)),
        Err(error) => ReplyBody::Errored {
            context: format!("invalid case: {error}"),
        },
    })
}
