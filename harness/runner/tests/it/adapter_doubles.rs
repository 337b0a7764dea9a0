//! Misbehaving adapters each get the right outcome within their timeout, the
//! harness restarts them and goes on with the next case, and nothing hangs or
//! panics. The double is `tests/doubles/adapter.sh`.

use std::path::Path;
use std::time::{Duration, Instant};

use dshc_runner::adapter::External;
use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::check::{NotRun, Outcome, check_with};
use dshc_scenario::load::{LoadedScenario, parse_scenario};

const TIMEOUT_MS: u64 = 1_500;

fn empty_scenario(id: &str) -> LoadedScenario {
    let source = "format = 2\ntitle = \"empty\"\ncovers = [\"01:R4.4\"]\n";
    parse_scenario(Path::new(&format!("scenarios/{id}.toml")), source).expect("valid scenario")
}

/// A case whose JSON is well over a pipe buffer (64 KiB).
fn big_scenario(id: &str) -> LoadedScenario {
    let text = "x".repeat(200_000);
    let source = format!(
        "format = 2\ntitle = \"big\"\ncovers = [\"01:R4.4\"]\n[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \"{text}\"\n"
    );
    parse_scenario(Path::new(&format!("scenarios/{id}.toml")), &source).expect("valid scenario")
}

/// Run ok-1, boom, ok-2 on the double in `mode`; return the three outcomes,
/// how many processes were started, and how long the bad case took.
fn run(mode: &str) -> (Vec<Outcome>, u32, Duration) {
    run_cases(
        mode,
        &[
            empty_scenario("ok-1"),
            empty_scenario("boom"),
            empty_scenario("ok-2"),
        ],
    )
}

/// Run `cases` on the double in `mode`; the second is the one timed.
fn run_cases(mode: &str, cases: &[LoadedScenario]) -> (Vec<Outcome>, u32, Duration) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles/adapter.sh");
    let limits = Limits {
        timeout_ms: TIMEOUT_MS,
        handshake_timeout_ms: TIMEOUT_MS,
        max_reply_bytes: 1 << 20,
    };
    let mut adapter = External::new(AdapterProcess::new(
        &format!("exec {} {mode}", script.display()),
        limits,
    ));
    let mut outcomes = Vec::new();
    let mut bad_case_took = Duration::ZERO;
    for (index, case) in cases.iter().enumerate() {
        #[expect(
            clippy::disallowed_methods,
            reason = "the bound under test is the supervisor's real-time timeout"
        )]
        let started = Instant::now();
        outcomes.push(check_with(case, &mut adapter));
        if index == 1 {
            bad_case_took = started.elapsed();
        }
    }
    let starts = adapter.starts();
    adapter.stop();
    (outcomes, starts, bad_case_took)
}

fn assert_recovered(outcomes: &[Outcome], starts: u32) {
    assert_eq!(outcomes[0], Outcome::Pass);
    assert_eq!(
        outcomes[2],
        Outcome::Pass,
        "the case after the fault runs on a restarted adapter"
    );
    assert_eq!(starts, 2, "one restart after the fault");
}

#[test]
fn a_crashing_adapter_is_reported_crashed_with_its_stderr_and_restarted() {
    let (outcomes, starts, took) = run("crash");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Crashed { context }) => {
            assert!(context.contains("crashing on purpose"), "{context}")
        }
        other => panic!("expected crashed, got {other:?}"),
    }
    assert!(
        took < Duration::from_millis(TIMEOUT_MS),
        "a crash is noticed before the timeout ({took:?})"
    );
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_hanging_adapter_times_out_and_is_restarted() {
    let (outcomes, starts, took) = run("hang");
    assert_eq!(
        outcomes[1],
        Outcome::NotRun(NotRun::TimedOut {
            timeout_ms: TIMEOUT_MS
        })
    );
    assert!(
        took >= Duration::from_millis(TIMEOUT_MS) && took < Duration::from_millis(TIMEOUT_MS * 3),
        "{took:?}"
    );
    assert_recovered(&outcomes, starts);
}

#[test]
fn garbage_output_is_a_protocol_error() {
    let (outcomes, starts, _) = run("garbage");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Errored { context }) => {
            assert!(
                context.contains("protocol error") && context.contains("this is not json"),
                "{context}"
            )
        }
        other => panic!("expected errored, got {other:?}"),
    }
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_flooding_adapter_is_cut_off_at_the_reply_limit() {
    let (outcomes, starts, took) = run("flood");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Errored { context }) => assert!(
            context.contains("exceeds the 1048576 byte limit"),
            "{context}"
        ),
        other => panic!("expected errored, got {other:?}"),
    }
    assert!(
        took < Duration::from_millis(TIMEOUT_MS),
        "the limit trips before the timeout ({took:?})"
    );
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_reply_with_the_wrong_seq_is_a_protocol_error() {
    let (outcomes, starts, _) = run("wrong_seq");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Errored { context }) => {
            assert!(context.contains("answers seq"), "{context}")
        }
        other => panic!("expected errored, got {other:?}"),
    }
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_provider_request_outside_virtual_time_is_a_protocol_error() {
    let (outcomes, starts, _) = run("provider");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Errored { context }) => {
            assert!(
                context.contains("outside a `virtual_time` case"),
                "{context}"
            )
        }
        other => panic!("expected errored, got {other:?}"),
    }
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_reply_that_breaks_the_schema_is_a_protocol_error() {
    let (outcomes, starts, _) = run("schema");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Errored { context }) => {
            assert!(context.contains("does not match the protocol"), "{context}")
        }
        other => panic!("expected errored, got {other:?}"),
    }
    assert_recovered(&outcomes, starts);
}

#[test]
fn a_command_that_does_not_exist_is_crashed_not_a_panic() {
    let mut adapter = External::new(AdapterProcess::new(
        "/nonexistent/adapter",
        Limits::default(),
    ));
    match check_with(&empty_scenario("ok"), &mut adapter) {
        Outcome::NotRun(NotRun::Crashed { .. }) => {}
        other => panic!("expected crashed, got {other:?}"),
    }
}

#[test]
fn an_adapter_that_closes_stdout_and_lives_on_is_crashed_within_the_timeout() {
    let (outcomes, starts, took) = run("close_stdout");
    match &outcomes[1] {
        Outcome::NotRun(NotRun::Crashed { context }) => {
            assert!(context.contains("closed stdout"), "{context}")
        }
        other => panic!("expected crashed, got {other:?}"),
    }
    assert!(took < Duration::from_millis(TIMEOUT_MS), "{took:?}");
    assert_recovered(&outcomes, starts);
}

#[test]
fn an_adapter_that_stops_reading_times_out_a_large_case_instead_of_blocking_dshc() {
    let cases = [
        empty_scenario("ok-1"),
        big_scenario("big"),
        empty_scenario("ok-2"),
    ];
    let (outcomes, starts, took) = run_cases("stop_reading", &cases);
    assert_eq!(outcomes[0], Outcome::Pass);
    assert_eq!(
        outcomes[1],
        Outcome::NotRun(NotRun::TimedOut {
            timeout_ms: TIMEOUT_MS
        })
    );
    assert!(took < Duration::from_millis(TIMEOUT_MS * 3), "{took:?}");
    assert_eq!(starts, 2, "one restart after the fault");
}

#[test]
fn a_second_answer_is_not_blamed_on_the_next_case() {
    let (outcomes, starts, _) = run("twice");
    assert_eq!(outcomes, vec![Outcome::Pass, Outcome::Pass, Outcome::Pass]);
    assert_eq!(starts, 1, "nothing to restart");
}

#[test]
fn a_stray_line_between_cases_restarts_the_adapter_not_fails_the_next_case() {
    let cases = ["ok-1", "boom", "ok-2", "ok-3"].map(empty_scenario);
    let (outcomes, starts, _) = run_cases("stray", &cases);
    assert_eq!(outcomes, vec![Outcome::Pass; 4]);
    assert_eq!(
        starts, 2,
        "the adapter that wrote it is restarted after the case"
    );
}

#[test]
fn a_first_start_times_out_on_silence_not_while_the_adapter_installs() {
    // Three seconds of install output against a 1.5 s handshake timeout:
    // the adapter is never silent that long, so it starts.
    let (outcomes, starts, _) = run("slow_start");
    assert_eq!(outcomes, vec![Outcome::Pass; 3]);
    assert_eq!(starts, 1);
}

#[test]
fn an_adapter_that_never_shakes_hands_costs_one_handshake_timeout_in_all() {
    #[expect(
        clippy::disallowed_methods,
        reason = "the bound under test is the supervisor's real-time timeout"
    )]
    let started = Instant::now();
    let (outcomes, starts, _) = run("no_start");
    let took = started.elapsed();
    for outcome in &outcomes {
        match outcome {
            Outcome::NotRun(NotRun::Crashed { context }) => {
                assert!(context.contains("did not answer `start`"), "{context}")
            }
            other => panic!("expected crashed, got {other:?}"),
        }
    }
    assert_eq!(starts, 1, "a failed handshake is not retried");
    assert!(took < Duration::from_millis(TIMEOUT_MS * 2), "{took:?}");
}
