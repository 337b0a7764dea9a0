//! `virtual_time/1` from the adapter's side: the reference's serve loop
//! (`dshc adapter`) on a thread behind two pipes, and this test as the
//! harness, answering its provider requests with the harness's own bridge
//! (`dshc_runner::adapter::bridge`). What the adapter writes is checked
//! message by message, and its result against the in-process reference's.

use std::io::{BufRead, BufReader, Write};
use std::thread::JoinHandle;

use dshc_runner::adapter::bridge::Bridge;
use dshc_runner::adapter::process::ProviderBridge;
use dshc_scenario::load::parse_scenario;
use dshc_scenario::protocol::{
    BridgeAbort, BridgeResponse, Case, CaseResult, Level, Reply, ReplyBody, Request, RequestBody,
    parse_reply,
};

/// The harness's ends of the pipes to a serve loop on its own thread.
struct Served {
    requests: std::io::PipeWriter,
    replies: BufReader<std::io::PipeReader>,
    thread: JoinHandle<std::io::Result<()>>,
}

impl Served {
    fn start() -> Served {
        let (adapter_reads, requests) = std::io::pipe().expect("a pipe");
        let (replies, adapter_writes) = std::io::pipe().expect("a pipe");
        let thread = std::thread::spawn(move || {
            dshc_reference::serve::serve(BufReader::new(adapter_reads), adapter_writes)
        });
        Served {
            requests,
            replies: BufReader::new(replies),
            thread,
        }
    }

    fn send(&mut self, seq: u64, body: RequestBody) {
        let line = serde_json::to_string(&Request { seq, body }).expect("encodes");
        writeln!(self.requests, "{line}").expect("the adapter reads");
    }

    fn reply(&mut self) -> Reply {
        let mut line = String::new();
        let read = self
            .replies
            .read_line(&mut line)
            .expect("the adapter writes");
        assert!(read > 0, "the adapter closed its output");
        parse_reply(line.trim_end()).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// `stop`, answered, and the serve loop ends cleanly.
    fn stop(mut self, seq: u64) {
        self.send(seq, RequestBody::Stop);
        assert_eq!(self.reply().body, ReplyBody::Stopped {});
        drop(self.requests);
        self.thread.join().expect("no panic").expect("no I/O error");
    }
}

fn run(case: &Case, virtual_time: bool) -> RequestBody {
    RequestBody::Run {
        case: Box::new(case.clone()),
        provider_url: None,
        virtual_time,
    }
}

/// A paced stream (an event every 10 ms) cancelled between its second and
/// third event, then a second turn.
fn cancelled_mid_stream() -> Case {
    let source = r#"
        format = 2
        title = "a cancel mid-stream, over the protocol"
        covers = ["08:C5"]
        level = "loop"
        simulation = { latency_ms = 5 }
        provider = { responses = [
            { content = ["Hel", "lo", ", world"], delay_ms = 10 },
            { content = ["again"] },
        ] }
        [[steps]]
        do = "followup"
        text = "Hi"
        [[steps]]
        do = "wait"
        ms = 40
        [[steps]]
        do = "cancel"
        [[steps]]
        do = "followup"
        text = "More"
        [[steps]]
        do = "wait_idle"
    "#;
    parse_scenario(std::path::Path::new("cancelled.toml"), source)
        .expect("a scenario")
        .case
}

/// What the harness saw of one `run` on the harness's clock: the answers
/// it gave, the aborts it heard and the adapter's result, `requests`
/// filled in from its provider as the harness does.
struct Exchanged {
    answers: Vec<BridgeResponse>,
    aborts: Vec<BridgeAbort>,
    result: CaseResult,
}

fn run_on_the_harness_clock(served: &mut Served, seq: u64, case: &Case) -> Exchanged {
    let world = case.world.as_ref().expect("a loop case");
    let mut bridge = Bridge::new(world).expect("a valid script");
    served.send(seq, run(case, true));
    let (mut answers, mut aborts) = (Vec::new(), Vec::new());
    loop {
        let reply = served.reply();
        assert_eq!(reply.seq, seq, "every message carries the run's seq");
        match reply.body {
            ReplyBody::ProviderRequest(request) => {
                assert_eq!(
                    (request.method.as_str(), request.path.as_str()),
                    ("POST", "/chat/completions")
                );
                let response = bridge.request(request);
                answers.push(response.clone());
                served.send(seq, RequestBody::ProviderResponse { response });
            }
            ReplyBody::ProviderAbort(abort) => {
                bridge.abort(abort.clone());
                aborts.push(abort);
            }
            ReplyBody::Result(mut result) => {
                let run = result.run.as_mut().expect("a loop run");
                assert!(run.requests.is_empty(), "the adapter reports no traffic");
                run.requests = dshc_reference::provider_requests(bridge.provider());
                assert_eq!(bridge.failure(), None);
                return Exchanged {
                    answers,
                    aborts,
                    result: *result,
                };
            }
            other => panic!("not a message of a running case: {other:?}"),
        }
    }
}

#[test]
fn the_reference_adapter_runs_a_loop_case_on_the_harness_clock_as_it_does_in_process() {
    let mut served = Served::start();
    served.send(0, RequestBody::Start { version: 1 });
    match served.reply().body {
        ReplyBody::Started { capabilities, .. } => {
            assert_eq!(capabilities.levels, [Level::Assembly, Level::Loop]);
            assert!(capabilities.virtual_time && capabilities.bench);
        }
        other => panic!("{other:?}"),
    }
    let case = cancelled_mid_stream();
    let exchanged = run_on_the_harness_clock(&mut served, 1, &case);
    // Both turns' requests went over the protocol; only the first was
    // withdrawn, once the close reached the provider: after it received
    // the request and before its stream would have ended.
    assert_eq!(exchanged.answers.len(), 2);
    let [abort] = exchanged.aborts.as_slice() else {
        panic!("one abort: {:?}", exchanged.aborts);
    };
    let first = &exchanged.answers[0];
    assert_eq!(abort.request, 0);
    assert!(
        first.received_at_ms.is_some_and(|at| at <= abort.at_ms) && abort.at_ms < first.end.at_ms,
        "{abort:?} during {first:?}"
    );
    // Byte for byte what the reference observes in process, traffic included.
    let in_process = dshc_reference::run_case(&case).expect("a valid case");
    assert_eq!(exchanged.result, in_process);
    let log = &exchanged.result.run.as_ref().expect("a run").log;
    assert!(
        log.iter().any(|event| event["data"]["interrupted"] == true),
        "the cancel interrupted the first stream: {log:?}"
    );

    // The same case in real time is declined, with the reason.
    served.send(2, run(&case, false));
    assert_eq!(
        served.reply().body,
        ReplyBody::Skipped {
            reason: dshc_reference::serve::REAL_TIME_DECLINED.into()
        }
    );
    served.stop(3);
}

#[test]
fn a_provider_request_answered_by_anything_else_fails_the_run_and_names_it() {
    let mut served = Served::start();
    served.send(0, RequestBody::Start { version: 1 });
    served.reply();
    let case = cancelled_mid_stream();
    served.send(1, run(&case, true));
    let reply = served.reply();
    assert!(
        matches!(reply.body, ReplyBody::ProviderRequest(_)),
        "{reply:?}"
    );
    // The wrong answer: a `start`, not the provider_response.
    served.send(1, RequestBody::Start { version: 1 });
    let result = loop {
        match served.reply().body {
            ReplyBody::Result(result) => break result,
            // The second turn asks again; this harness is gone by then.
            ReplyBody::ProviderRequest(_) => served.send(1, RequestBody::Stop),
            ReplyBody::ProviderAbort(_) => {}
            other => panic!("{other:?}"),
        }
    };
    let failure = result
        .run
        .and_then(|run| run.failure)
        .expect("a failed run");
    assert!(
        failure.starts_with("provider request 0 was answered by {\"seq\":1,\"cmd\":\"start\""),
        "{failure}"
    );
    served.stop(2);
}
