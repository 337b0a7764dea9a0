//! `dshc sim`: run seeded sessions, check every invariant, and on a
//! violation shrink the session to a minimal scenario file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::generate::SessionFacts;
use super::invariants;
use crate::model::runtime_context::CLEARED;
use crate::protocol::{CaseResult, LoopRun};
use crate::scenario::compile::compile;
use crate::scenario::format::{Scenario, Step};
use crate::scripted::run_case;

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
    let first = run_case(&case);
    let second = run_case(&case);
    let mut found = Vec::new();
    if serde_json::to_string(&first).ok() != serde_json::to_string(&second).ok() {
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
    for observation in observations.iter().filter(|o| o.error.is_some()) {
        if let Some(error) = &observation.error {
            found.push(violation(
                "step",
                format!("a step failed: {}", error.message),
            ));
        }
    }
    if let Some(failure) = &run.failure {
        found.push(violation("unfinished", failure.clone()));
    }
    for detail in &run.violations {
        let tag = if detail.contains("request") {
            "replay"
        } else {
            "logging"
        };

        found.push(violation(tag, detail.clone()));
    }
    for detail in invariants::tools_sorted(&run.requests) {
        found.push(violation("tools", detail));
    }
    if let Some(text) = &facts.complete_text {
        for event in run.log.iter().filter(|e| e["type"] == "request/header") {
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
            e["type"] == "user/message"
                && e["data"]["source"]["plugin"] == crate::model::runtime_context::SOURCE
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
    (found, Some(run))
}

/// Greedily drop steps and provider responses while a violation with the
/// same tag remains.
pub fn shrink(scenario: &Scenario, tag: &str, max_attempts: usize) -> Scenario {
    let still_fails =
        |candidate: &Scenario| check_session(candidate).0.iter().any(|v| v.tag == tag);

    let mut current = scenario.clone();
    let mut attempts = 0;
    'progress: loop {
        let mut candidates: Vec<Scenario> = Vec::new();
        for index in (0..current.steps.len()).rev() {
            let mut candidate = current.clone();
            candidate.steps.remove(index);
            candidates.push(candidate);
        }
        let responses = current.provider.as_ref().map_or(0, |p| p.responses.len());
        for index in (0..responses).rev() {
            let mut candidate = current.clone();
            if let Some(provider) = &mut candidate.provider {
                provider.responses.remove(index);
            }
            candidates.push(candidate);
        }
        for candidate in candidates {
            if attempts >= max_attempts {
                break 'progress;
            }
            attempts += 1;
            if compile("sim", &candidate).is_ok() && still_fails(&candidate) {
                current = candidate;
                continue 'progress;
            }
        }
        break;
    }
    current
}

/// Write a (shrunk) failing session as a scenario file; returns its path.
pub fn write_session(
    dir: &Path,
    seed: u64,
    session: u64,
    scenario: &Scenario,
    violations: &[Violation],
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("sim_seed{seed}_session{session}.toml"));
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
    let text = toml::to_string_pretty(&scenario).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Count the provider requests and steps of a run (for throughput).
pub fn steps_of(run: &LoopRun) -> usize {
    run.log.iter().filter(|e| e["type"] == "step/start").count()
}

/// Whether any step of the scenario is a registration on the agent scope
/// (used by tests to make sure the generator exercises scoped layers).
pub fn has_scoped_registration(scenario: &Scenario) -> bool {
    scenario
        .steps
        .iter()
        .any(|step| matches!(step, Step::Section(s) if s.scope.is_some()))
}
