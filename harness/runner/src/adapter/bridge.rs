//! The mock provider for an implementation on the harness's clock
//! (extension `virtual_time/1`).
//!
//! An adapter that offers the extension runs its loop cases on a fake clock
//! and hands each provider request to the harness instead of opening a
//! socket. The harness answers it with what the reference's own client
//! would have seen: the request goes through the same server code, over
//! turmoil's simulated network with the case's latency, to the case's one
//! [`MockProvider`] (so its script, prompt cache and request log carry over
//! from request to request), and the head, every body frame and the end are
//! stamped with their virtual arrival time after the request was sent. The
//! adapter replays that timeline on its fake clock, so chunk boundaries,
//! delays, stalls and drops are the reference's, to the millisecond.
//!
//! The one thing the timeline cannot know in advance is whether the request
//! arrives at all: the reference's agent may abort it while it is still on
//! the network. The adapter reports every abort with its virtual time; one
//! before the provider received the request undoes it (a checkpoint taken
//! before the request was answered is restored), so the script, cache and
//! request log are as if it was never sent, as in the reference.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mock_provider::{Checkpoint, MockProvider, RequestObserver};

use dshc_scenario::protocol::{
    BridgeAbort, BridgeEnd, BridgeEndKind, BridgeFrame, BridgeRequest, BridgeResponse, LoopWorld,
    SimulationSpec,
};

use super::process::ProviderBridge;
use dshc_reference::{PROVIDER_HOST, PROVIDER_PORT, provider_simulation};

/// One loop case's provider, answering an adapter's bridged requests.
pub struct Bridge {
    provider: MockProvider,
    simulation: SimulationSpec,
    idle_cutoff_ms: u64,
    /// When (simulated ms) the provider last logged a request.
    logged_at_ms: Arc<Mutex<Option<u64>>>,
    /// When each answered request reached the provider (`None`: never).
    received_at_ms: Vec<Option<u64>>,
    /// The provider's state before the last answered request.
    before_last: Option<Checkpoint>,
    /// A withdrawal that could not be honoured.
    failure: Option<String>,
}

impl Bridge {
    /// The provider of `world`; an error when its script is invalid.
    pub fn new(world: &LoopWorld) -> Result<Self, mock_provider::ScriptError> {
        let logged_at_ms = Arc::new(Mutex::new(None));
        let sink = logged_at_ms.clone();
        let provider = MockProvider::builder(world.provider.clone())
            .observer(RequestObserver::new(move |_| {
                // Only ever called inside a bridge simulation.
                if let Ok(mut at) = sink.lock() {
                    *at = Some(now_ms());
                }
            }))
            .build()?;
        Ok(Bridge {
            provider,
            simulation: world.simulation.clone(),
            idle_cutoff_ms: world
                .adapter
                .stream_idle_timeout_ms
                .unwrap_or(dshc_deepseek::DEFAULT_STREAM_IDLE_TIMEOUT_MS)
                .saturating_add(1),
            logged_at_ms,
            received_at_ms: Vec::new(),
            before_last: None,
            failure: None,
        })
    }

    /// The provider (its request log is the run's traffic).
    pub fn provider(&self) -> &MockProvider {
        &self.provider
    }

    /// A withdrawal that could not be honoured, as a run failure.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

impl ProviderBridge for Bridge {
    fn request(&mut self, request: BridgeRequest) -> BridgeResponse {
        let before = self.provider.checkpoint();
        if let Ok(mut at) = self.logged_at_ms.lock() {
            *at = None;
        }
        let mut response = answer(
            &self.provider,
            &request,
            &self.simulation,
            self.idle_cutoff_ms,
        );
        response.received_at_ms = self.logged_at_ms.lock().ok().and_then(|at| *at);
        self.received_at_ms.push(response.received_at_ms);
        self.before_last = Some(before);
        response
    }

    fn abort(&mut self, abort: BridgeAbort) {
        let Some(received) = usize::try_from(abort.request)
            .ok()
            .and_then(|index| self.received_at_ms.get(index))
        else {
            return;
        };
        if received.is_some_and(|at| at <= abort.at_ms) {
            return; // delivered: the provider saw it, as in the reference
        }
        let last = self.received_at_ms.len() as u64 - 1;
        match self.before_last.take() {
            Some(before) if abort.request == last => self.provider.restore(before),
            before => {
                self.before_last = before;
                // An earlier request, aborted on the network after a later
                // one was answered: its answer cannot be taken back alone.
                self.failure.get_or_insert_with(|| {
                    format!(
                        "provider request {} was aborted before it reached the provider, after request {last} was answered; the bridge cannot undo it",
                        abort.request
                    )
                });
            }
        }
    }
}

/// Answer `request` from `provider` as a client on the simulated network
/// sees it. A response that goes quiet for longer than `idle_cutoff_ms`
/// (the implementation's stream idle timeout: it stops listening by then)
/// ends `open` there, so a scripted hang costs no more than that.
pub fn answer(
    provider: &MockProvider,
    request: &BridgeRequest,
    simulation: &SimulationSpec,
    idle_cutoff_ms: u64,
) -> BridgeResponse {
    let mut sim = provider_simulation(provider, simulation);
    let seen = Rc::new(RefCell::new(BridgeResponse {
        end: BridgeEnd {
            at_ms: simulation.budget_ms,
            kind: BridgeEndKind::Open,
            error: None,
        },
        ..BridgeResponse::default()
    }));
    let sink = seen.clone();
    let request = request.clone();
    sim.client("implementation", async move {
        mock_provider::sim_time::enlist();
        let end = exchange(&request, &sink, Duration::from_millis(idle_cutoff_ms)).await;
        sink.borrow_mut().end = end;
        Ok(())
    });
    // A budget reached mid-response leaves the end `open` at the budget.
    // The provider's host and this client: idle time is skipped.
    let budget = Duration::from_millis(simulation.budget_ms);
    let latency = Duration::from_millis(simulation.latency_ms);
    let _ = mock_provider::sim_time::run(&mut sim, budget, latency, 2);
    seen.take()
}

fn now_ms() -> u64 {
    u64::try_from(mock_provider::sim_time::elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn ended(kind: BridgeEndKind, error: Option<String>) -> BridgeEnd {
    BridgeEnd {
        at_ms: now_ms(),
        kind,
        error,
    }
}

async fn exchange(
    request: &BridgeRequest,
    seen: &RefCell<BridgeResponse>,
    idle_cutoff: Duration,
) -> BridgeEnd {
    let dropped = |error: String| ended(BridgeEndKind::Dropped, Some(error));
    let mut builder = hyper::Request::builder()
        .method(request.method.as_str())
        .uri(request.path.as_str());
    for [name, value] in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let http_request = match builder.body(Full::new(Bytes::from(request.body.clone()))) {
        Ok(http_request) => http_request,
        Err(error) => return dropped(format!("the request is not valid HTTP: {error}")),
    };
    let stream = match turmoil::net::TcpStream::connect((PROVIDER_HOST, PROVIDER_PORT)).await {
        Ok(stream) => stream,
        Err(error) => return dropped(format!("connect: {error}")),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(error) => return dropped(format!("handshake: {error}")),
        };
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    let response = match mock_provider::sim_time::timeout(
        idle_cutoff,
        sender.send_request(http_request),
    )
    .await
    {
        Err(_) => return ended(BridgeEndKind::Open, None),
        Ok(Err(error)) => return dropped(error.to_string()),
        Ok(Ok(response)) => response,
    };
    {
        let mut seen = seen.borrow_mut();
        seen.head_at_ms = Some(now_ms());
        seen.status = response.status().as_u16();
        seen.headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                [
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                ]
            })
            .collect();
    }
    let mut body = response.into_body();
    loop {
        match mock_provider::sim_time::timeout(idle_cutoff, body.frame()).await {
            Err(_) => return ended(BridgeEndKind::Open, None),
            Ok(None) => return ended(BridgeEndKind::Complete, None),
            Ok(Some(Err(error))) => return dropped(error.to_string()),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    seen.borrow_mut().frames.push(BridgeFrame {
                        at_ms: now_ms(),
                        data: String::from_utf8_lossy(&data).into_owned(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mock_provider::{Script, ScriptEntry};

    fn provider(entries: Vec<ScriptEntry>) -> MockProvider {
        MockProvider::new(Script {
            responses: entries,
            ..Script::default()
        })
        .unwrap()
    }

    fn chat() -> BridgeRequest {
        BridgeRequest {
            method: "POST".into(),
            path: "/chat/completions".into(),
            headers: vec![["content-type".into(), "application/json".into()]],
            body: r#"{"model":"deepseek-v4-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}"#.into(),
        }
    }

    #[test]
    fn a_streamed_answer_arrives_frame_by_frame_each_after_its_delay() {
        let provider = provider(vec![ScriptEntry {
            content: serde_json::from_value(serde_json::json!(["Hel", "lo"])).unwrap(),
            delay_ms: 20,
            ..ScriptEntry::default()
        }]);
        let simulation = SimulationSpec::default();
        let response = answer(&provider, &chat(), &simulation, 60_000);
        assert_eq!(response.status, 200);
        assert_eq!(response.end.kind, BridgeEndKind::Complete);
        // The head crosses the simulated network (three hops: the connect,
        // the request, the answer); each event waits its `delay_ms` on the
        // server first.
        let head = response.head_at_ms.unwrap();
        assert_eq!(head, 3 * simulation.latency_ms, "{response:?}");
        let times: Vec<u64> = response.frames.iter().map(|f| f.at_ms).collect();
        assert_eq!(times[0], head + 20, "{response:?}");
        assert!(times.windows(2).all(|w| w[1] - w[0] == 20), "{times:?}");
        let text: String = response.frames.iter().map(|f| f.data.as_str()).collect();
        assert!(
            text.contains("\"Hel\"") && text.contains("\"lo\""),
            "{text}"
        );
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        assert_eq!(response.end.at_ms, *times.last().unwrap());
        // The provider logged the request, as over a socket.
        assert_eq!(provider.requests().len(), 1);
        // The script goes on: the next request finds it exhausted.
        let second = answer(&provider, &chat(), &simulation, 60_000);
        assert_eq!(second.status, 400);
    }

    #[test]
    fn a_hang_ends_open_at_the_idle_cutoff() {
        let provider = provider(vec![ScriptEntry {
            content: serde_json::from_value(serde_json::json!(["x"])).unwrap(),
            fault: Some(mock_provider::FaultKind::Stall),
            after_events: Some(1),
            stall_ms: Some(50_000),
            ..ScriptEntry::default()
        }]);
        let response = answer(&provider, &chat(), &SimulationSpec::default(), 1_000);
        assert_eq!(response.end.kind, BridgeEndKind::Open, "{response:?}");
        // One event came, then nothing for longer than the cutoff.
        assert_eq!(response.frames.len(), 1, "{response:?}");
        assert_eq!(response.end.at_ms, response.frames[0].at_ms + 1_000);
    }

    #[test]
    fn an_abort_before_the_request_arrives_undoes_it_and_one_after_does_not() {
        let source = r#"
            format = 2
            title = "bridge"
            covers = ["08:C2"]
            level = "loop"
            simulation = { latency_ms = 5 }
            provider = { responses = [{ content = ["one"] }, { content = ["two"] }] }
            [[steps]]
            do = "wait_idle"
        "#;
        let loaded =
            dshc_scenario::load::parse_scenario(std::path::Path::new("bridge.toml"), source)
                .unwrap();
        let world = loaded.case.world.unwrap();
        let mut bridge = Bridge::new(&world).unwrap();
        let first = bridge.request(chat());
        let received = first.received_at_ms.unwrap();
        assert!(
            received > 0 && received < first.head_at_ms.unwrap(),
            "{first:?}"
        );
        // Aborted on the network: the provider forgets it, and the next
        // request gets the same first entry.
        bridge.abort(BridgeAbort {
            request: 0,
            at_ms: received - 1,
        });
        assert_eq!(bridge.provider().requests().len(), 0);
        let again = bridge.request(chat());
        let text: String = again.frames.iter().map(|f| f.data.as_str()).collect();
        assert!(text.contains("\"one\""), "{text}");
        // Aborted after arrival: it stays received.
        bridge.abort(BridgeAbort {
            request: 1,
            at_ms: received,
        });
        assert_eq!(bridge.provider().requests().len(), 1);
        assert_eq!(bridge.failure(), None);
        // An earlier request cannot be taken back once a later one was answered.
        let _third = bridge.request(chat());
        bridge.abort(BridgeAbort {
            request: 1,
            at_ms: 0,
        });
        assert!(bridge.failure().is_some());
    }
}
