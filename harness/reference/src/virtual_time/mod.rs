//! The adapter side of `virtual_time/1`, so `dshc adapter` runs loop cases
//! on the harness's clock and the extension is tested end to end by the
//! reference itself.
//!
//! The case runs in the reference's usual simulation, the same agent on the
//! same simulated network, except that the mock provider's host is a
//! *bridge host* at the same [`PROVIDER_HOST`]:[`PROVIDER_PORT`]. It serves
//! HTTP/1.1 with the mock provider's server settings and, for each request
//! it receives, writes `{"seq":n,"provider_request":...}` to the harness and
//! reads the `provider_response` before anything else in the simulation
//! runs (the simulation is single-threaded and the read is synchronous).
//! The answer is a timeline of virtual times after the request was sent,
//! as the harness's own client received the head, each frame and the end;
//! the bridge host writes each part one network latency before its time,
//! so the agent receives it exactly when it would have from the mock
//! provider in process ([`replay`]). The run's observations are then the
//! in-process reference's, byte for byte.
//!
//! The request's sending time is its arrival minus the harness's
//! `received_at_ms`: both simulations route the request through the same
//! server code on the same network, so it arrives that long after it was
//! sent in both. A request the agent withdraws before it reaches the
//! bridge host is never seen, so never forwarded (the protocol's rule that
//! the harness forgets such a request holds trivially). When the agent
//! closes a connection before its exchange ended, the bridge host reports
//! `provider_abort` with the instant the close reached it: never before the
//! request arrived, so the harness keeps a request the provider received,
//! as the in-process provider does.

mod replay;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use mock_provider::MockProvider;

use dshc_agent::LoopLimits;
use dshc_scenario::protocol::{
    BridgeAbort, BridgeRequest, BridgeResponse, Case, CaseResult, LoopRun, Reply, ReplyBody,
    Request, RequestBody, parse_request,
};

use crate::channel::SharedChannel;
use crate::loop_level::{self, PROVIDER_HOST, PROVIDER_PORT, failed_run};

/// The running case's line to the harness: its `seq`, the shared channel,
/// and what went wrong talking over it.
#[derive(Clone)]
pub(crate) struct HarnessLink {
    seq: u64,
    channel: SharedChannel,
    state: Rc<LinkState>,
}

#[derive(Default)]
struct LinkState {
    /// Provider requests forwarded so far in this case: the next one's number.
    forwarded: Cell<u64>,
    /// The first failed read or write: the harness is gone.
    io_error: RefCell<Option<std::io::Error>>,
    /// The first answer that was not the awaited `provider_response`.
    trouble: RefCell<Option<String>>,
}

impl HarnessLink {
    /// The link of the case `run` request `seq` asked for.
    pub(crate) fn new(seq: u64, channel: SharedChannel) -> HarnessLink {
        HarnessLink {
            seq,
            channel,
            state: Rc::default(),
        }
    }

    /// The first I/O error the case met, if any: `serve` ends with it.
    pub(crate) fn io_result(&self) -> std::io::Result<()> {
        match self.state.io_error.borrow_mut().take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Forward `request` and read its answer: the request's number in the
    /// case and the harness's timeline, or `None` when none came (the
    /// reason is kept for the run's failure).
    fn ask(&self, request: BridgeRequest) -> Option<(u64, BridgeResponse)> {
        let number = self.state.forwarded.get();
        self.state.forwarded.set(number + 1);
        let asked = Reply {
            seq: self.seq,
            body: ReplyBody::ProviderRequest(request),
        };
        let answered = {
            let mut channel = self.channel.borrow_mut();
            channel.write_reply(&asked).and_then(|()| {
                loop {
                    match channel.read_line()? {
                        Some(line) if line.trim().is_empty() => continue,
                        line => break Ok(line),
                    }
                }
            })
        };
        let line = match answered {
            Ok(Some(line)) => line,
            Ok(None) => {
                self.trouble(format!(
                    "the harness closed its channel before answering provider request {number}"
                ));
                return None;
            }
            Err(error) => {
                self.state.io_error.borrow_mut().get_or_insert(error);
                return None;
            }
        };
        match parse_request(&line) {
            Ok(Request {
                seq,
                body: RequestBody::ProviderResponse { response },
            }) if seq == self.seq => Some((number, response)),
            _ => {
                let shown: String = line.chars().take(200).collect();
                self.trouble(format!(
                    "provider request {number} was answered by {shown}, not its provider_response"
                ));
                None
            }
        }
    }

    /// Report that the agent withdrew request `request`, `at_ms` after it
    /// was sent.
    fn abort(&self, request: u64, at_ms: u64) {
        let reply = Reply {
            seq: self.seq,
            body: ReplyBody::ProviderAbort(BridgeAbort { request, at_ms }),
        };
        if let Err(error) = self.channel.borrow_mut().write_reply(&reply) {
            self.state.io_error.borrow_mut().get_or_insert(error);
        }
    }

    fn trouble(&self, message: String) {
        self.state.trouble.borrow_mut().get_or_insert(message);
    }
}

/// What every connection of the bridge host shares.
#[derive(Clone)]
struct BridgeHost {
    link: HarnessLink,
    /// The simulation's one-way latency: how long before its arrival time
    /// a part of the response is written.
    latency: Duration,
}

/// Run a loop case on the harness's clock: the in-process reference's
/// simulation with the bridge host for a provider. `run.requests` stays
/// empty: the harness that answered the requests reports them.
pub(crate) fn run_loop_case(case: &Case, limits: LoopLimits, link: &HarnessLink) -> CaseResult {
    let Some(world) = &case.world else {
        return failed_run("a loop case needs its world");
    };
    // The harness serves the script; one it could not serve fails here, as
    // in process.
    if let Err(error) = MockProvider::new(world.provider.clone()) {
        return failed_run(&error.to_string());
    }
    let mut sim = loop_level::simulation(&world.simulation, mock_provider::sim_time::TICK);
    let host = BridgeHost {
        link: link.clone(),
        latency: Duration::from_millis(world.simulation.latency_ms),
    };
    sim.host(PROVIDER_HOST, move || serve_bridge(host.clone()));
    let mut result = loop_level::run_agent_in(sim, case, None, limits);
    // A broken exchange with the harness comes first: whatever failed
    // after it followed from it.
    if let Some(trouble) = link.state.trouble.borrow_mut().take() {
        let run = result.run.get_or_insert_with(LoopRun::default);
        run.failure = Some(match run.failure.take() {
            Some(failure) => format!("{trouble}; {failure}"),
            None => trouble,
        });
    }
    result
}

/// The bridge host's accept loop: each connection served on its own task.
async fn serve_bridge(host: BridgeHost) -> turmoil::Result {
    mock_provider::sim_time::enlist();
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PROVIDER_PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::task::spawn_local(replay::connection(stream, host.clone()));
    }
}
