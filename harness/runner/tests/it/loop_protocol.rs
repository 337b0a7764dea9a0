//! The loop level of the adapter protocol: the harness starts a provider per
//! loop case, hands its URL to the adapter and fills `requests` itself; and
//! a real-time implementation's loop results are compared with message ids
//! and event times redacted, while the reference's stay exact.

use std::path::Path;

use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::adapter::{External, Implementation, Ran};
use dshc_runner::check::{Outcome, check_with};
use dshc_scenario::load::{LoadedScenario, parse_scenario};
use dshc_scenario::protocol::{Case, ImplementationInfo};
use serde_json::Value;

#[test]
fn a_loop_case_gets_a_provider_url_and_the_harness_reports_what_the_provider_received() {
    let source = r#"
format = 2
title = "the double posts one request"
covers = ["09:W6"]
level = "loop"

[provider]
responses = [{ content = ["Hel", "lo"] }]

[expect]
request_count = 1
requests = [{ model = "m", messages = [{ role = "user", content = "hi" }], stream = true }]
cache_hit_tokens = [0]
events = [{ type = "user/message", seq = 0, data = { content = [{ type = "text", text = "hi" }], source = { kind = "user" }, role = "user", id = "msg-1" } }]
log = """
{"type":"user/message","seq":0,"time":1767225600000,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"msg-1"},"surfaceOp":"append"}
"""
"#;
    let scenario = parse_scenario(Path::new("scenarios/loop/double.toml"), source)
        .unwrap_or_else(|e| panic!("{e}"));
    let double = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles/loop_adapter.sh");
    let mut adapter = External::new(AdapterProcess::new(
        &double.display().to_string(),
        Limits {
            timeout_ms: 5_000,
            handshake_timeout_ms: 5_000,
            max_reply_bytes: 1 << 20,
        },
    ));
    let outcome = check_with(&scenario, &mut adapter);
    adapter.stop();
    // Every expectation on what the provider received holds; the double's
    // one-line log has no request header, so no prefix of it rebuilds the
    // request it posted, and the judged invariants say so.
    let Outcome::Fail { mismatches } = outcome else {
        panic!("the double's log cannot explain its request: {outcome:?}");
    };
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert_eq!(mismatches[0].path, "invariant");
    assert!(
        mismatches[0].actual.contains(
            "[replay] agent agent: request 0 was received but no prefix of the log rebuilds it"
        ),
        "{mismatches:?}"
    );
}

/// The reference's loop result in disguise: every message id and event time
/// rewritten as a real-time implementation would produce them.
struct Disguised {
    real_time: bool,
    /// Also change one logged text, a real difference.
    alter_text: bool,
}

fn disguise_ids(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("role")
                && let Some(Value::String(id)) = map.get_mut("id")
            {
                *id = format!("{}-4f1c-8e2a-uuid", id.replace("msg-", "0000000"));
            }
            map.values_mut().for_each(disguise_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(disguise_ids),
        _ => {}
    }
}

impl Implementation for Disguised {
    fn info(&mut self) -> Option<ImplementationInfo> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        let mut result = dshc_reference::run_case(case).expect("a compiled case is valid");
        let run = result.run.as_mut().expect("a loop run");
        for event in &mut run.log {
            event["time"] = Value::from(event["time"].as_u64().unwrap_or(0) + 29_102_400_123);
            disguise_ids(event);
        }
        if self.alter_text {
            let text = run
                .log
                .iter_mut()
                .find_map(|e| e["data"]["inserted"][0]["content"][0].get_mut("text"))
                .expect("an inserted prompt");
            *text = Value::from("changed");
        }
        Ran::Observed(Box::new(result))
    }

    fn real_time(&self) -> bool {
        self.real_time
    }
}

/// A loop scenario that states message ids (in an event pattern and in a
/// whole log given as text) the way the reference mints them.
fn with_ids_and_log() -> LoadedScenario {
    let case = parse_scenario(
        Path::new("scenarios/loop/ids.toml"),
        "format = 2\ntitle = \"ids\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[provider]\nresponses = [{ content = [\"ok\"] }]\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let result = dshc_reference::run_case(&case.case).expect("a compiled case is valid");
    let log: String = result
        .run
        .as_ref()
        .expect("a loop run")
        .log
        .iter()
        .map(|e| dshc_model::js::stringify(e) + "\n")
        .collect();
    let source = format!(
        "format = 2\ntitle = \"ids\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[provider]\nresponses = [{{ content = [\"ok\"] }}]\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[expect]\nevents = [{{ type = \"user/message\", data = {{ id = \"msg-1\" }} }}]\nlog = {}\n",
        serde_json::to_string(&log).expect("a string")
    );
    parse_scenario(Path::new("scenarios/loop/ids.toml"), &source).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn real_time_results_are_compared_with_ids_and_times_redacted() {
    let scenario = with_ids_and_log();
    let mut real_time = Disguised {
        real_time: true,
        alter_text: false,
    };
    assert_eq!(check_with(&scenario, &mut real_time), Outcome::Pass);
    let mut exact = Disguised {
        real_time: false,
        alter_text: false,
    };
    assert!(
        matches!(check_with(&scenario, &mut exact), Outcome::Fail { .. }),
        "the reference is compared exactly"
    );
}

#[test]
fn redaction_keeps_every_other_difference() {
    let scenario = with_ids_and_log();
    let mut altered = Disguised {
        real_time: true,
        alter_text: true,
    };
    match check_with(&scenario, &mut altered) {
        Outcome::Fail { mismatches } => {
            assert!(
                mismatches.iter().any(|m| m.path == "expect.log"),
                "{mismatches:?}"
            )
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The reference's run, but the provider "received" something its log
/// cannot explain: the invariants are judged on every implementation's run.
struct Unexplained;

impl Implementation for Unexplained {
    fn info(&mut self) -> Option<ImplementationInfo> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        let mut result = dshc_reference::run_case(case).expect("a compiled case is valid");
        let run = result.run.as_mut().expect("a loop run");
        run.requests[0].body["messages"][0]["content"] = Value::from("not in the log");
        Ran::Observed(Box::new(result))
    }
}

#[test]
fn the_invariants_judge_every_implementations_run() {
    let scenario = with_ids_and_log();
    let outcome = check_with(&scenario, &mut Unexplained);
    let Outcome::Fail { mismatches } = outcome else {
        panic!("a request the log cannot rebuild must fail: {outcome:?}");
    };
    let text = format!("{mismatches:?}");
    assert!(
        text.contains("[replay] agent agent: request 0 differs from its reconstruction"),
        "{text}"
    );
}

/// The reference, but every other run logs a different text.
struct Flaky {
    runs: u32,
}

impl Implementation for Flaky {
    fn info(&mut self) -> Option<ImplementationInfo> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        self.runs += 1;
        let mut result = dshc_reference::run_case(case).expect("a compiled case is valid");
        if self.runs.is_multiple_of(2) {
            let run = result.run.as_mut().expect("a loop run");
            let text = run
                .log
                .iter_mut()
                .find_map(|e| {
                    e.get_mut("data")?
                        .get_mut("content")?
                        .get_mut(0)?
                        .get_mut("text")
                })
                .expect("a logged text");
            *text = Value::from("hj");
        }
        Ran::Observed(Box::new(result))
    }
}

#[test]
fn twice_names_the_first_divergent_byte_of_two_runs() {
    let scenario = with_ids_and_log();
    let (outcome, _) = dshc_runner::check::check_twice(&scenario, &mut Flaky { runs: 0 });
    let Outcome::Fail { mismatches } = outcome else {
        panic!("two different runs must fail: {outcome:?}");
    };
    assert!(
        mismatches[0]
            .path
            .starts_with("twice (first divergent byte "),
        "{mismatches:?}"
    );
    assert!(mismatches[0].expected.contains("\"hi\""), "{mismatches:?}");
    assert!(mismatches[0].actual.contains("\"hj\""), "{mismatches:?}");
    // A deterministic implementation passes.
    assert_eq!(
        dshc_runner::check::check_twice(&scenario, &mut dshc_runner::adapter::Reference).0,
        Outcome::Pass
    );
}
