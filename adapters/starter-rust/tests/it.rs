//! The kit's protocol handling, and the starter gated by dshc's own check
//! (the one way a case runs) over the bundled suite: every case skipped,
//! each with the starter's reason.
#![allow(clippy::unwrap_used, reason = "tests unwrap")]

use std::path::PathBuf;

use dshc_adapter::{Case, ImplementationInfo, Level, Port, RunOutcome, serve};
use dshc_runner::adapter::External;
use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::check::{SuiteOptions, Verdict, gate_shortfall, run_suite_pooled};
use dshc_scenario::load::{discover, load_scenario};
use serde_json::{Value, json};

struct Panicking;

impl Port for Panicking {
    fn implementation(&self) -> ImplementationInfo {
        ImplementationInfo {
            name: "panicking".into(),
            version: "0".into(),
            language: "rust".into(),
            homepage: None,
        }
    }

    fn levels(&self) -> Vec<Level> {
        vec![Level::Assembly, Level::Loop]
    }

    fn run(&mut self, case: &Case, _: Option<&str>) -> RunOutcome {
        panic!("no support for {}", case.id)
    }
}

/// The replies `serve` writes for these request lines.
fn replies(lines: &[Value]) -> Vec<Value> {
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut output = Vec::new();
    serve(&mut Panicking, input.as_bytes(), &mut output).unwrap();
    String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn case_request(seq: u64) -> Value {
    json!({"seq": seq, "cmd": "run", "case": {"id": "a/b", "level": "assembly", "config": {}, "commands": []}})
}

#[test]
fn the_handshake_names_the_port_and_its_levels() {
    let replies = replies(&[json!({"seq": 0, "cmd": "start", "version": 1})]);
    assert_eq!(
        replies,
        [json!({"seq": 0, "started": {"version": 1,
            "implementation": {"name": "panicking", "version": "0", "language": "rust"},
            "capabilities": {"levels": ["assembly", "loop"]}}})]
    );
}

#[test]
fn another_protocol_version_is_refused_and_the_adapter_stops() {
    let replies = replies(&[
        json!({"seq": 0, "cmd": "start", "version": 2}),
        case_request(1),
    ]);
    assert_eq!(
        replies.len(),
        1,
        "nothing is read after a refused handshake"
    );
    let context = replies[0]["errored"]["context"].as_str().unwrap();
    assert!(
        context.contains("version 2") && context.contains("speaks 1"),
        "{context}"
    );
}

#[test]
fn a_panic_is_that_case_errored_and_the_next_case_still_runs() {
    let replies = replies(&[
        json!({"seq": 0, "cmd": "start", "version": 1}),
        case_request(1),
        json!({"seq": 2, "cmd": "stop"}),
    ]);
    assert_eq!(replies[1]["seq"], 1);
    assert_eq!(
        replies[1]["errored"]["context"],
        "the port panicked: no support for a/b"
    );
    assert_eq!(replies[2], json!({"seq": 2, "stopped": {}}));
}

#[test]
fn a_line_that_is_not_a_request_is_answered_errored_with_its_seq() {
    let replies = replies(&[json!({"seq": 4, "cmd": "dance"})]);
    assert_eq!(replies[0]["seq"], 4);
    assert!(
        replies[0]["errored"]["context"]
            .as_str()
            .unwrap()
            .starts_with("not a protocol request")
    );
}

#[test]
fn the_starter_is_gated_by_check_with_every_case_skipped_and_its_reason() {
    let suite = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let scenarios: Vec<_> = discover(&[suite])
        .files
        .iter()
        .map(|file| load_scenario(file).unwrap())
        .collect();
    let mut pool = [External::new(AdapterProcess::new(
        env!("CARGO_BIN_EXE_starter-rust"),
        Limits::default(),
    ))];
    let (cases, summary) = run_suite_pooled(
        &scenarios,
        &mut pool,
        &[],
        SuiteOptions::default(),
        |_, _| {},
    );
    assert_eq!(summary.skipped, scenarios.len());
    assert!(cases.iter().all(|case| case.verdict() == Verdict::Skipped));
    let assembly = scenarios
        .iter()
        .position(|s| s.scenario.level == Level::Assembly)
        .unwrap();
    let reason = dshc_runner::check::describe_outcome(&cases[assembly].outcome);
    assert!(
        reason.contains("starter-rust implements nothing yet"),
        "{reason}"
    );
    let shortfall = gate_shortfall(&scenarios, &cases, &[]).unwrap();
    assert!(shortfall.contains("ran nothing"), "{shortfall}");
}
