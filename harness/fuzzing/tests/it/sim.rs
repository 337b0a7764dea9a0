//! `dshc sim`'s generator and checker: sessions are a pure function of the
//! seed, and they reach the situations the invariants are about (the
//! invariants themselves are unit-tested on planted violations).

use std::collections::BTreeMap;

use dshc_fuzzing::generate::session::generate_session;
use dshc_fuzzing::sim::check_session;
use dshc_model::session::event_kind;

#[test]
fn the_same_seed_generates_the_same_sessions() {
    for session in 0..50 {
        let first = toml::to_string(&generate_session(3, session)).unwrap();
        let second = toml::to_string(&generate_session(3, session)).unwrap();
        assert_eq!(first, second, "session {session}");
    }
    assert_ne!(
        toml::to_string(&generate_session(3, 0)).unwrap(),
        toml::to_string(&generate_session(4, 0)).unwrap()
    );
}

#[test]
fn sessions_reach_faults_retries_tools_cancels_compaction_and_resume() {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for session in 0..150 {
        let scenario = generate_session(11, session);
        let (violations, run) = check_session(&scenario);
        assert!(violations.is_empty(), "session {session}: {violations:?}");
        let run = run.expect("a run");
        for event in &run.log {
            let kind = event["type"].as_str().unwrap_or_default();
            let detail = match kind {
                event_kind::TURN_END => format!(
                    "turn/end {}",
                    event["data"]["reason"]["kind"].as_str().unwrap_or_default()
                ),
                event_kind::REQUEST_HEADER => format!(
                    "header {}",
                    event["data"]["reason"].as_str().unwrap_or_default()
                ),
                event_kind::ASSISTANT_CHUNK if event["data"]["chunk"]["type"] == "finish" => {
                    format!(
                        "finish {}",
                        event["data"]["chunk"]["reason"]["kind"]
                            .as_str()
                            .unwrap_or_default()
                    )
                }
                event_kind::USER_MESSAGE if event["data"]["source"]["kind"] == "compaction" => {
                    "compaction".into()
                }
                event_kind::ASSISTANT_MESSAGE if event["data"]["interrupted"] == true => {
                    "interrupted".into()
                }
                other => other.to_string(),
            };
            *seen.entry(detail).or_default() += 1;
        }
    }
    for wanted in [
        "turn/end completed",
        "turn/end error",
        "turn/end aborted",
        "header initial",
        "header change",
        "header resume",
        "finish error",
        "finish tool-calls",
        event_kind::TOOL_RESULT,
        "compaction",
        event_kind::SESSION_END_SEED,
    ] {
        assert!(
            seen.get(wanted).copied().unwrap_or(0) > 0,
            "never reached {wanted}: {seen:?}"
        );
    }
}

#[test]
fn compacting_an_empty_surface_is_refused_not_a_violation() {
    // Session 104 of seed 1 cancels a turn before its prompt is logged and
    // then compacts: refused by design, which once stopped `dshc sim`.
    let scenario = dshc_fuzzing::generate::session::generate_session(1, 104);
    let (violations, _) = dshc_fuzzing::sim::check_session(&scenario);
    assert!(violations.is_empty(), "{violations:?}");
}

/// A written violation the judge checks must fail on the reference; a file
/// that would pass is dshc's own bug, refused and not written. A violation
/// only `dshc sim` states is written, saying that the file passes as is.
#[test]
fn a_written_violation_is_checked_to_fail_where_the_judge_can_see_it() {
    use dshc_fuzzing::regression::RegressionError;
    use dshc_fuzzing::sim::{Violation, write_session};
    let dir = std::env::temp_dir().join(format!("dshc-sim-written-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let healthy = generate_session(11, 0);
    assert!(check_session(&healthy).0.is_empty());
    let claimed = |tag: &str| Violation {
        tag: tag.into(),
        detail: "planted in the test".into(),
    };
    let refused = write_session(&dir, 11, 0, &healthy, &[claimed("replay")]);
    assert!(
        matches!(refused, Err(RegressionError::DoesNotReproduce { .. })),
        "{refused:?}"
    );
    assert!(!dir.join("sim_seed11_session0.toml").exists());
    let written = write_session(&dir, 11, 0, &healthy, &[claimed("complete")]).unwrap();
    let text = std::fs::read_to_string(written).unwrap();
    assert!(text.contains("this file passes as written"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_thousand_sessions_of_the_ci_seed_use_every_command_kind() {
    use dshc_fuzzing::exercised::Exercised;
    use dshc_scenario::protocol::Level;
    let mut exercised = Exercised::new(Level::Loop, Default::default());
    for session in 0..2000 {
        exercised.add(&generate_session(20261129, session), &[]);
    }
    assert!(
        exercised.unexercised().is_empty(),
        "{}",
        exercised.lines().join("\n")
    );
}
