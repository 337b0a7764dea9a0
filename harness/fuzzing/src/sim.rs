//! `dshc sim`: seeded loop sessions ([`crate::generate::session`]) run twice on
//! the reference and checked against every invariant; a violation is shrunk
//! ([`crate::generate::shrink`]) to a minimal scenario file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use dshc_model::runtime_context::{CLEARED, SOURCE};
use dshc_scenario::compile::compile;
use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{AssemblyCommand, CaseResult, Command, LoopCommand, LoopRun};

use crate::generate::session::SessionFacts;
use crate::generate::shrink::{self, RegressionError};
use dshc_model::session::event_kind;
use dshc_oracle::invariants;
use dshc_reference::run_case;

/// What `compact` says when there is nothing to compact.
const EMPTY_SURFACE: &str = "compact: the surface is empty";

/// One violated invariant: a short tag (for shrinking) and the details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// `determinism`, `unfinished`, `replay`, `tools`, `complete`, `suppression`, ...
    pub tag: String,
    /// What was seen.
    pub detail: String,
}

fn violation(tag: &str, detail: impl Into<String>) -> Violation {
    Violation {
        tag: tag.into(),
        detail: detail.into(),
    }
}

/// Run a session twice and check every invariant; also return the first run.
pub fn check_session(scenario: &Scenario) -> (Vec<Violation>, Option<LoopRun>) {
    let facts = SessionFacts::of(scenario);
    let case = match compile("sim", scenario) {
        Ok(case) => case,
        Err(error) => return (vec![violation("generator", error.to_string())], None),
    };
    let (first, second) = match (run_case(&case), run_case(&case)) {
        (Ok(first), Ok(second)) => (first, second),
        (Err(error), _) | (_, Err(error)) => {
            return (vec![violation("generator", error.to_string())], None);
        }
    };
    let mut found = Vec::new();
    if !dshc_oracle::same_bytes(&first, &second) {
        found.push(violation(
            "determinism",
            "two runs of the same session differ",
        ));
    }
    let CaseResult {
        run: Some(run),
        observations,
        ..
    } = first
    else {
        return (vec![violation("unfinished", "no run")], None);
    };
    for (command, observation) in case.commands.iter().zip(&observations) {
        let Some(error) = &observation.error else {
            continue;
        };
        // Compacting an empty surface (a turn cancelled before its prompt
        // was logged) is refused by design; it is not a bug.
        let expected = matches!(command, Command::Loop(LoopCommand::Compact(_)))
            && error.message == EMPTY_SURFACE;
        if !expected {
            found.push(violation(
                "step",
                format!("a step failed: {}", error.message),
            ));
        }
    }
    if let Some(failure) = &run.failure {
        found.push(violation("unfinished", failure.clone()));
    }
    if let Some(world) = &case.world {
        for broken in invariants::judge_loop_run(world, &run) {
            found.push(violation(broken.kind.tag(), broken.to_string()));
        }
    }
    for detail in invariants::tools_sorted(&run.requests) {
        found.push(violation("tools", detail));
    }
    found.extend(session_properties(scenario, &facts, &run));
    (found, Some(run))
}

/// The properties a generated session states about itself: a complete
/// section is the whole system prompt, and a suppressed runtime context
/// logs no snapshot (after its tombstone, once suppressed mid-session).
fn session_properties(scenario: &Scenario, facts: &SessionFacts, run: &LoopRun) -> Vec<Violation> {
    let mut found = Vec::new();
    if let Some(text) = &facts.complete_text {
        for event in run
            .log
            .iter()
            .filter(|e| e["type"] == event_kind::REQUEST_HEADER)
        {
            if event["data"]["header"]["system"] != Value::String(text.clone()) {
                found.push(violation(
                    "complete",
                    format!(
                        "seq {}: the system is not the complete section",
                        event["seq"]
                    ),
                ));
            }
        }
    }
    let owned: Vec<&Value> = run
        .log
        .iter()
        .filter(|e| {
            e["type"] == event_kind::USER_MESSAGE && e["data"]["source"]["plugin"] == SOURCE
        })
        .collect();
    if scenario.config.include_runtime_context == Some(false) && !owned.is_empty() {
        found.push(violation(
            "suppression",
            "a snapshot was logged although runtime context is disabled",
        ));
    }
    if facts.suppressed {
        let text = |e: &&Value| {
            e["data"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        if let Some(first_tombstone) = owned.iter().position(|e| text(e) == CLEARED)
            && owned[first_tombstone + 1..]
                .iter()
                .any(|e| text(e) != CLEARED)
        {
            found.push(violation(
                "suppression",
                "a snapshot followed the suppression tombstone",
            ));
        }
    }
    found
}

/// Shrink a session while a violation with the same tag remains.
pub fn shrink(scenario: &Scenario, tag: &str, max_attempts: usize) -> Scenario {
    shrink::shrink(scenario, max_attempts, |candidate| {
        check_session(candidate).0.iter().any(|v| v.tag == tag)
    })
}

/// Write a (shrunk) failing session as a scenario file; returns its path.
pub fn write_session(
    dir: &Path,
    seed: u64,
    session: u64,
    scenario: &Scenario,
    violations: &[Violation],
) -> Result<PathBuf, RegressionError> {
    let mut scenario = scenario.clone();
    scenario.title = format!("dshc sim violation: seed {seed}, session {session}");
    let listed: Vec<String> = violations
        .iter()
        .map(|v| format!("- [{}] {}", v.tag, v.detail))
        .collect();
    scenario.description = Some(format!(
        "Found by `dshc sim --seed {seed} --session {session}` and shrunk. Violations:\n{}\n\
         Replay, change-only logging and determinism are checked for every loop scenario, so this\n\
         file fails while the bug is present; pin the fixed behaviour with expectations before committing.\n",
        listed.join("\n")
    ));
    let text = toml::to_string_pretty(&scenario)?;
    shrink::write_file(dir, &format!("sim_seed{seed}_session{session}"), &text)
}

/// Count the provider requests and steps of a run (for throughput).
pub fn steps_of(run: &LoopRun) -> usize {
    run.log
        .iter()
        .filter(|e| e["type"] == event_kind::STEP_START)
        .count()
}

/// Whether any step of the scenario is a registration on the agent scope
/// (used by tests to make sure the generator exercises scoped layers).
pub fn has_scoped_registration(scenario: &Scenario) -> bool {
    scenario
        .steps
        .iter()
        .any(|step| matches!(&step.command, Command::Assembly(AssemblyCommand::Section(s)) if s.scope.is_some()))
}
