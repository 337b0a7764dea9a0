//! The same server inside turmoil's simulated network: faults and pacing happen in
//! virtual time, so idle timeouts fire at exact, repeatable instants and a seed fully
//! determines what a client observes.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]
#![cfg(feature = "turmoil")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use mock_provider::sse::data_payloads;
use mock_provider::{MockProvider, Script, ScriptEntry, serve_turmoil};
use serde_json::json;

const SERVER: &str = "provider";
const PORT: u16 = 443;

/// One thing the client saw, stamped with the simulation clock.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Head { at: Duration, status: u16 },
    Frame { at: Duration, bytes: Bytes },
    BodyEnd { at: Duration },
    BodyError { at: Duration },
    IdleTimeout { at: Duration },
}

fn request_body() -> String {
    json!({
        "model": "deepseek-v4-flash",
        "messages": [
            {"role": "system", "content": "You are dsh."},
            {"role": "user", "content": "hi"}
        ],
        "stream": true,
        "stream_options": {"include_usage": true}
    })
    .to_string()
}

fn add_server(sim: &mut turmoil::Sim<'_>, provider: &MockProvider) {
    let provider = provider.clone();
    // Host closures are `Fn` (turmoil may restart a host), so clone inside.
    sim.host(SERVER, move || {
        let provider = provider.clone();
        async move {
            mock_provider::sim_time::enlist();
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
            serve_turmoil(listener, provider).await?;
            Ok(())
        }
    });
}

/// Send `requests` POSTs on one keep-alive connection, reading each body frame with an
/// idle timeout, and record everything seen.
async fn run_client(
    requests: usize,
    idle_timeout: Duration,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> turmoil::Result {
    mock_provider::sim_time::enlist();
    let stream = turmoil::net::TcpStream::connect((SERVER, PORT)).await?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let record = |event: Seen| seen.lock().unwrap().push(event);
    for _ in 0..requests {
        let request = Request::post("/chat/completions")
            .header("host", SERVER)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(request_body())))?;
        sender.ready().await?;
        let response = sender.send_request(request).await?;
        record(Seen::Head {
            at: mock_provider::sim_time::elapsed(),
            status: response.status().as_u16(),
        });
        let mut body = response.into_body();
        loop {
            match mock_provider::sim_time::timeout(idle_timeout, body.frame()).await {
                Err(_) => {
                    record(Seen::IdleTimeout {
                        at: mock_provider::sim_time::elapsed(),
                    });
                    return Ok(());
                }
                Ok(None) => {
                    record(Seen::BodyEnd {
                        at: mock_provider::sim_time::elapsed(),
                    });
                    break;
                }
                Ok(Some(Err(_))) => {
                    record(Seen::BodyError {
                        at: mock_provider::sim_time::elapsed(),
                    });
                    return Ok(());
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(bytes) = frame.into_data() {
                        record(Seen::Frame {
                            at: mock_provider::sim_time::elapsed(),
                            bytes,
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn stall_makes_the_client_idle_timeout_fire_at_the_exact_virtual_time() {
    const LATENCY: Duration = Duration::from_millis(7);
    const DELAY_MS: u64 = 100;
    const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
    let entry: ScriptEntry = serde_json::from_value(json!({
        "content": ["a", "b", "c"],
        "delay_ms": DELAY_MS,
        "fault": "stall",
        "after_events": 2,
        "stall_ms": 300_000
    }))
    .unwrap();
    let provider = MockProvider::new(Script::new(vec![entry])).unwrap();
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .min_message_latency(LATENCY)
        .max_message_latency(LATENCY)
        .simulation_duration(Duration::from_secs(120))
        .build();
    add_server(&mut sim, &provider);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client_seen = seen.clone();
    sim.client("client", run_client(1, IDLE_TIMEOUT, client_seen));
    sim.run().expect("simulation completes");

    let seen = seen.lock().unwrap().clone();
    let frames: Vec<(Duration, Bytes)> = seen
        .iter()
        .filter_map(|event| match event {
            Seen::Frame { at, bytes } => Some((*at, bytes.clone())),
            _ => None,
        })
        .collect();
    // Exactly the two events before the stall arrived: the role chunk and "a".
    assert_eq!(frames.len(), 2, "{seen:?}");
    let payloads = data_payloads(
        &frames
            .iter()
            .flat_map(|(_, bytes)| bytes.to_vec())
            .collect::<Vec<_>>(),
    );
    assert!(payloads[0].contains("\"role\":\"assistant\""));
    assert!(payloads[1].contains("\"content\":\"a\""));
    // Events are paced by delay_ms in virtual time.
    assert_eq!(frames[1].0 - frames[0].0, Duration::from_millis(DELAY_MS));
    let Some(Seen::IdleTimeout { at: fired_at }) = seen.last().cloned() else {
        panic!("the idle timeout must be the last thing seen: {seen:?}");
    };
    // The timer started when the last frame arrived and fired exactly IDLE_TIMEOUT later,
    // long before the stall (300 s) would have ended.
    assert_eq!(fired_at, frames[1].0 + IDLE_TIMEOUT);
    // And in absolute virtual time: three one-way latencies (connect, request, first
    // response bytes), two paced events, then the idle timeout: 30.221 s, every run.
    assert_eq!(
        fired_at,
        3 * LATENCY + 2 * Duration::from_millis(DELAY_MS) + IDLE_TIMEOUT
    );
    assert!(fired_at < Duration::from_secs(300));
    // The server saw and logged the request once, and its plan stalls 300 s.
    assert_eq!(provider.request_count(), 1);
}

/// Run one whole simulation with random latency and return what the client saw.
fn observe_with_seed(seed: u64) -> Vec<Seen> {
    let responses = vec![
        serde_json::from_value(json!({
            "reasoning": ["Let me ", "think."],
            "content": ["Hel", "lo", "!"],
            "delay_ms": 3,
            "keep_alive_before": [2]
        }))
        .unwrap(),
        serde_json::from_value(json!({
            "tool_calls": [{"name": "read", "arguments": ["{\"path\":", "\"a\"}"]}],
            "finish_reason": "tool_calls",
            "delay_ms": 11
        }))
        .unwrap(),
        serde_json::from_value(
            json!({"content": ["x", "y"], "fault": "drop_connection", "after_events": 2}),
        )
        .unwrap(),
    ];
    let provider = MockProvider::new(Script::new(responses)).unwrap();
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(40))
        .simulation_duration(Duration::from_secs(60))
        .build();
    add_server(&mut sim, &provider);
    let seen = Arc::new(Mutex::new(Vec::new()));
    sim.client(
        "client",
        run_client(3, Duration::from_secs(10), seen.clone()),
    );
    sim.run().expect("simulation completes");
    assert_eq!(provider.request_count(), 3);
    seen.lock().unwrap().clone()
}

fn bytes_only(seen: &[Seen]) -> Vec<u8> {
    seen.iter()
        .flat_map(|event| match event {
            Seen::Frame { bytes, .. } => bytes.to_vec(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn same_seed_gives_identical_client_observations() {
    let first = observe_with_seed(42);
    let second = observe_with_seed(42);
    assert_eq!(first, second, "same seed, same timed byte stream");
    // Sanity: the run exercised all three responses, ending with the scripted drop.
    assert_eq!(
        first
            .iter()
            .filter(|event| matches!(event, Seen::Head { status: 200, .. }))
            .count(),
        3
    );
    assert!(
        matches!(first.last(), Some(Seen::BodyError { .. })),
        "{first:?}"
    );
    let payloads = data_payloads(&bytes_only(&first));
    assert_eq!(
        payloads
            .iter()
            .filter(|payload| *payload == "[DONE]")
            .count(),
        2
    );

    // Another seed changes the timing but never the bytes.
    let other = observe_with_seed(43);
    assert_eq!(bytes_only(&other), bytes_only(&first));
    assert_ne!(
        other, first,
        "different latency draws should change arrival times"
    );
}

/// The one-way latency of [`timeout_sim`]'s network.
const TIMEOUT_LATENCY: Duration = Duration::from_millis(5);

/// A provider with these limits served on a simulated network whose every
/// message takes exactly [`TIMEOUT_LATENCY`], so a timeout's virtual time is exact.
fn timeout_sim(limits: mock_provider::ServerLimits) -> (MockProvider, turmoil::Sim<'static>) {
    let provider =
        MockProvider::with_limits(Script::new(vec![ScriptEntry::content(["x"])]), limits).unwrap();
    let mut sim = turmoil::Builder::new()
        .rng_seed(3)
        .min_message_latency(TIMEOUT_LATENCY)
        .max_message_latency(TIMEOUT_LATENCY)
        .simulation_duration(Duration::from_secs(60))
        .build();
    add_server(&mut sim, &provider);
    (provider, sim)
}

#[test]
fn header_read_timeout_closes_a_silent_connection_in_virtual_time() {
    use mock_provider::ServerLimits;
    use tokio::io::AsyncReadExt;

    let (provider, mut sim) = timeout_sim(ServerLimits {
        header_read_timeout_ms: Some(5_000),
        ..ServerLimits::default()
    });
    let closed_at = Arc::new(Mutex::new(None));
    let client_closed_at = closed_at.clone();
    sim.client("client", async move {
        let mut stream = turmoil::net::TcpStream::connect((SERVER, PORT)).await?;
        let connected_at = turmoil::elapsed();
        // Send nothing: the server's head timer (TokioTimer, virtual) must close us.
        let mut buffer = [0u8; 64];
        let read = stream.read(&mut buffer).await.unwrap_or(0);
        assert_eq!(read, 0, "no bytes, just a close");
        *client_closed_at.lock().unwrap() = Some((connected_at, turmoil::elapsed()));
        Ok(())
    });
    sim.run().expect("simulation completes");
    let (connected_at, closed_at) = closed_at.lock().unwrap().expect("client finished");
    let waited = closed_at - connected_at;
    // The server's timer starts when it accepts (the moment the client's connect
    // completes) and its close reaches the client one latency later.
    assert_eq!(waited, Duration::from_secs(5) + TIMEOUT_LATENCY);
    assert_eq!(provider.request_count(), 0);
}

#[test]
fn body_read_timeout_answers_408_to_a_trickled_body_in_virtual_time() {
    use mock_provider::ServerLimits;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (provider, mut sim) = timeout_sim(ServerLimits {
        body_read_timeout_ms: Some(5_000),
        ..ServerLimits::default()
    });
    let answered = Arc::new(Mutex::new(None));
    let client_answered = answered.clone();
    sim.client("client", async move {
        let mut stream = turmoil::net::TcpStream::connect((SERVER, PORT)).await?;
        let head = "POST /chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{";
        stream.write_all(head.as_bytes()).await?;
        let sent_at = turmoil::elapsed();
        let (mut reader, mut writer) = stream.into_split();
        // One more byte a second: each read is short of the deadline, the body never whole.
        let trickle = tokio::task::spawn_local(async move {
            loop {
                mock_provider::sim_time::sleep(Duration::from_secs(1)).await;
                if writer.write_all(b" ").await.is_err() {
                    break;
                }
            }
        });
        let mut answer = Vec::new();
        let mut buffer = [0u8; 1024];
        let mut first_at = None;
        loop {
            let read = reader.read(&mut buffer).await.unwrap_or(0);
            if read == 0 {
                break;
            }
            first_at.get_or_insert_with(turmoil::elapsed);
            answer.extend_from_slice(&buffer[..read]);
        }
        trickle.abort();
        let first_at = first_at.expect("an answer");
        *client_answered.lock().unwrap() = Some((first_at - sent_at, answer));
        Ok(())
    });
    sim.run().expect("simulation completes");
    let (waited, answer) = answered.lock().unwrap().take().expect("client finished");
    // The head reaches the server one latency after it was sent; the deadline
    // runs from there, and the answer takes one latency back.
    assert_eq!(waited, Duration::from_secs(5) + 2 * TIMEOUT_LATENCY);
    let answer = String::from_utf8(answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(answer.contains("connection: close\r\n"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    let logged = provider.requests();
    assert_eq!(logged.len(), 1);
    assert!(
        matches!(
            logged[0].outcome,
            mock_provider::RequestOutcome::Rejected { status: 408, .. }
        ),
        "{:?}",
        logged[0].outcome
    );
}

/// One stalled exchange, stepped through (`Sim::run`) or with idle time
/// skipped (`sim_time::run`): what the client saw, the run's end, and the
/// steps turmoil took (its own `elapsed`, one millisecond a step).
fn stalled_exchange(
    stall_ms: u64,
    budget: Duration,
    skipping: bool,
) -> (Vec<Seen>, Result<(), String>, Duration) {
    let entry: ScriptEntry = serde_json::from_value(json!({
        "content": ["a", "b"],
        "delay_ms": 10,
        "fault": "stall",
        "after_events": 1,
        "stall_ms": stall_ms
    }))
    .unwrap();
    let provider = MockProvider::new(Script::new(vec![entry])).unwrap();
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .min_message_latency(Duration::from_millis(3))
        .max_message_latency(Duration::from_millis(3))
        .simulation_duration(budget)
        .tick_duration(Duration::from_millis(1))
        .build();
    add_server(&mut sim, &provider);
    let seen = Arc::new(Mutex::new(Vec::new()));
    sim.client(
        "client",
        run_client(1, Duration::from_secs(3_600), seen.clone()),
    );
    let ended = if skipping {
        mock_provider::sim_time::run(&mut sim, budget, Duration::from_millis(3), 2)
    } else {
        sim.run()
    };
    let seen = seen.lock().unwrap().clone();
    (
        seen,
        ended.map_err(|error| error.to_string()),
        sim.elapsed(),
    )
}

#[test]
fn skipping_idle_time_changes_nothing_but_the_steps_taken() {
    let stall_ms = 20_000;
    let budget = Duration::from_secs(60);
    let (stepped, stepped_end, stepped_steps) = stalled_exchange(stall_ms, budget, false);
    let (skipped, skipped_end, skipped_steps) = stalled_exchange(stall_ms, budget, true);
    assert_eq!(skipped, stepped);
    assert_eq!(skipped_end, Ok(()));
    assert_eq!(stepped_end, Ok(()));
    let Some(Seen::BodyEnd { at: ended_at }) = skipped.last().cloned() else {
        panic!("the stream ends after its stall: {skipped:?}");
    };
    assert!(ended_at > Duration::from_millis(stall_ms), "{skipped:?}");
    assert!(stepped_steps >= ended_at, "{stepped_steps:?}");
    // The skipping run stepped only around its events.
    assert!(
        skipped_steps < Duration::from_millis(200),
        "{skipped_steps:?}"
    );
}

#[test]
fn a_stall_past_the_budget_ends_as_a_stepped_run_does_in_a_few_steps() {
    let budget = Duration::from_secs(10);
    let (stepped, stepped_end, _) = stalled_exchange(1_000_000_000_000_000_000, budget, false);
    let (skipped, skipped_end, skipped_steps) =
        stalled_exchange(1_000_000_000_000_000_000, budget, true);
    assert_eq!(skipped, stepped);
    assert_eq!(
        stepped_end,
        Err("Ran for duration: 10s steps: 10002 without completing".to_owned())
    );
    assert_eq!(skipped_end, stepped_end);
    assert!(
        skipped_steps < Duration::from_millis(200),
        "{skipped_steps:?}"
    );
}
