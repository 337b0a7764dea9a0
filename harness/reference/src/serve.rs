//! `dshc adapter`: the reference speaking the adapter protocol on stdin and
//! stdout, so the protocol itself is tested end to end.

use std::io::{BufRead, Write};

use dshc_scenario::protocol::{
    Capabilities, PROTOCOL_VERSION, Reply, ReplyBody, RequestBody, parse_request,
};

use crate::{reference_info, reference_levels};

/// Serve requests until `stop` or end of input.
pub fn serve(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (seq, body, stop) = match parse_request(&line) {
            Err(error) => {
                let seq = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v.get("seq").and_then(|s| s.as_u64()));
                match seq {
                    Some(seq) => (
                        seq,
                        ReplyBody::Errored {
                            context: format!("bad request: {error}"),
                        },
                        false,
                    ),
                    None => {
                        eprintln!("dshc adapter: ignoring a request without seq: {error}");
                        continue;
                    }
                }
            }
            Ok(request) => match request.body {
                RequestBody::Start { .. } => (
                    request.seq,
                    ReplyBody::Started {
                        version: PROTOCOL_VERSION,
                        implementation: reference_info(),
                        capabilities: Capabilities {
                            levels: reference_levels(),
                            bench: true,
                            virtual_time: false,
                        },
                    },
                    false,
                ),
                RequestBody::Run { case, .. } => (
                    request.seq,
                    match crate::run_case(&case) {
                        Ok(result) => ReplyBody::Result(Box::new(result)),
                        Err(error) => ReplyBody::Errored {
                            context: format!("invalid case: {error}"),
                        },
                    },
                    false,
                ),
                RequestBody::Bench {
                    case,
                    iterations,
                    batches,
                } => (
                    request.seq,
                    match crate::bench::BenchRig::new(&case)
                        .and_then(|rig| rig.time(iterations, batches).map_err(|e| e.message))
                    {
                        Ok(reply) => ReplyBody::Benched(reply),
                        Err(error) => ReplyBody::Errored {
                            context: format!("bench: {error}"),
                        },
                    },
                    false,
                ),
                RequestBody::ProviderResponse { .. } => (
                    request.seq,
                    ReplyBody::Errored {
                        context: "a `provider_response` answers no request: this adapter does not \
                                  offer virtual_time/1"
                            .into(),
                    },
                    false,
                ),
                RequestBody::Stop => (request.seq, ReplyBody::Stopped {}, true),
            },
        };
        let reply = serde_json::to_string(&Reply { seq, body }).map_err(std::io::Error::other)?;
        writeln!(output, "{reply}")?;
        output.flush()?;
        if stop {
            break;
        }
    }
    Ok(())
}
