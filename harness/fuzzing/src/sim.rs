//! `dshc sim`: seeded loop sessions ([`crate::generate::session`]) run twice on
//! the reference and checked against every invariant; a violation is shrunk
//! ([`crate::generate::shrink`]), keeping its tag at every step, to a minimal
//! scenario file that is checked to fail where the judge can see it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use dshc_model::runtime_context::{CLEARED, SOURCE};
use dshc_scenario::compile::compile;
use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{AssemblyCommand, CaseResult, Command, LoopCommand, LoopRun};

use crate::generate::session::SessionFacts;
use crate::generate::shrink;
use crate::regression::{self, RegressionError};
use dshc_model::session::event_kind;
use dshc_oracle::invariants;
use dshc_reference::{LOOP_LIMITS, Ticks, run_case, run_compiled_case};
use dshc_runner::adapter::Reference;
use dshc_runner::check::{Outcome, check_twice, describe_outcome};
use dshc_scenario::format::{CommandExpect, Pattern, StepExpect};

/// What `compact` says when there is nothing to compact.
const EMPTY_SURFACE: &str = "compact: the surface is empty";

/// One violated invariant: a short tag (for shrinking) and the details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// `determinism`, `unfinished`, `refusal`, `replay`, `tools`, `complete`, `suppression`, ...
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
    let (violations, result) = check_session_against(scenario, Ticks::CaseGrid);
    (violations, result.and_then(|result| result.run))
}

/// [`check_session`], its second run stepping as `second` says: with
/// [`Ticks::EveryMs`], a difference between the two runs is the grid's
/// (tag `grid`) unless a third run on the grid differs from the first too.
pub fn check_session_against(
    scenario: &Scenario,
    second: Ticks,
) -> (Vec<Violation>, Option<CaseResult>) {
    let facts = SessionFacts::of(scenario);
    let case = match compile("sim", scenario) {
        Ok(case) => case,
        Err(error) => return (vec![violation("generator", error.to_string())], None),
    };
    // The grid is taken once for the two or three runs.
    let grid = Ticks::of_case(&case);
    let second = if second == Ticks::CaseGrid {
        grid
    } else {
        second
    };
    let run = |ticks| run_compiled_case(&case, LOOP_LIMITS, ticks);
    let (first, second_run) = (run(grid), run(second));
    let mut found = Vec::new();
    let same = dshc_oracle::same_bytes(&first, &second_run);
    if !same {
        let grid_is_deterministic =
            second == Ticks::EveryMs && dshc_oracle::same_bytes(&first, &run(grid));
        found.push(if grid_is_deterministic {
            violation(
                "grid",
                "the run on the case's grid differs from the run every millisecond",
            )
        } else {
            violation("determinism", "two runs of the same session differ")
        });
    }
    let Some(run) = &first.run else {
        return (vec![violation("unfinished", "no run")], None);
    };
    for (command, observation) in case.commands.iter().zip(&first.observations) {
        let Some(error) = &observation.error else {
            continue;
        };
        // Compacting an empty surface (a turn cancelled before its prompt
        // was logged) is refused by design; it is not a bug.
        let expected = (matches!(command, Command::Loop(LoopCommand::Compact(_)))
            && error.message == EMPTY_SURFACE)
            || (facts.hooked && crate::generate::session::is_hook_veto(&error.message))
            || crate::generate::session::is_empty_surface_input(&error.message);
        if !expected {
            found.push(violation(
                "step",
                format!("a step failed: {}", error.message),
            ));
        }
    }
    match &run.failure {
        Some(failure) if facts.refused_at_setup && failure.starts_with("setup failed: ") => {}
        Some(failure) => found.push(violation("unfinished", failure.clone())),
        None if facts.refused_at_setup => found.push(violation(
            "refusal",
            "the deployment or the first agent has a setting setup refuses, yet the run set up",
        )),
        None => {}
    }
    if let Some(world) = &case.world {
        // The second run is judged when it is the same bytes as the first:
        // the judge can then take its log instead of copying the first's.
        let broken = match second_run.run {
            Some(second) if same => invariants::judge_spent_loop_run(world, second),
            _ => invariants::judge_loop_run(world, run),
        };
        for broken in broken {
            found.push(violation(
                broken.kind.tag(),
                format!("agent {}: {}", broken.agent, broken.detail),
            ));
        }
    }
    for detail in invariants::tools_sorted(&run.requests) {
        found.push(violation("tools", detail));
    }
    found.extend(session_properties(scenario, &facts, run));
    (found, Some(first))
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

/// How a session's second run steps time to show a violation tagged `tag`:
/// every millisecond for the grid's, on the grid for every other.
pub fn second_run_showing(tag: &str) -> Ticks {
    if tag == "grid" {
        Ticks::EveryMs
    } else {
        Ticks::CaseGrid
    }
}

/// Shrink a session while a violation with the same tag remains.
pub fn shrink(scenario: &Scenario, tag: &str, max_attempts: usize) -> Scenario {
    shrink::shrink(scenario, max_attempts, |candidate| {
        check_session_against(candidate, second_run_showing(tag))
            .0
            .iter()
            .any(|v| v.tag == tag)
    })
}

/// The violation tags the judge finds in any scenario file by itself (the
/// loop invariants, a run that does not finish, a step that throws, and with
/// `check_twice` two runs that differ); the others are properties `dshc sim`
/// states of the sessions it generates.
const JUDGED_TAGS: &[&str] = &[
    "replay",
    "header-logging",
    "snapshot-logging",
    "cache-hits",
    "log-seq",
    "unfinished",
    "step",
    "determinism",
];

/// Write a (shrunk) failing session as a scenario file; returns its path.
/// A `compact` the simulator allows to be refused (an empty surface) is
/// expected to be, so the file fails only for what it was found for. When
/// the judge checks a violation by itself (`JUDGED_TAGS`), the file is run
/// twice on the reference first and must fail; one that passes is dshc's
/// own bug ([`RegressionError::DoesNotReproduce`]) and is not written. The
/// description says which case it is.
pub fn write_session(
    dir: &Path,
    seed: u64,
    session: u64,
    scenario: &Scenario,
    violations: &[Violation],
) -> Result<PathBuf, RegressionError> {
    let mut scenario = scenario.clone();
    let stem = format!("sim_seed{seed}_session{session}");
    scenario.title = format!("dshc sim violation: seed {seed}, session {session}");
    expect_allowed_refusals(&mut scenario);
    let listed: Vec<String> = violations
        .iter()
        .map(|v| format!("- [{}] {}", v.tag, v.detail))
        .collect();
    let judged = violations
        .iter()
        .any(|v| JUDGED_TAGS.contains(&v.tag.as_str()));
    let asserts = if judged {
        "The judge checks these for every loop scenario (replay, change-only logging, run failures,\n\
         failing steps, byte-identical reruns), so this file fails while the bug is present: dshc\n\
         ran it twice on the reference before writing it. Its only expectations are the refusals\n\
         the simulator allows (`compact` of an empty surface).\n"
    } else {
        "These are properties `dshc sim` checks of the sessions it generates; the judge does not\n\
         check them of a scenario file, so this file passes as written: pin the fixed behaviour\n\
         with expectations before committing it.\n"
    };
    scenario.description = Some(format!(
        "Found by `dshc sim --seed {seed} --session {session}` and shrunk. Violations:\n{}\n{asserts}",
        listed.join("\n")
    ));
    let text = dshc_scenario::write::scenario_text(&scenario)?;
    if judged {
        let loaded = regression::load_back(&dir.join(format!("{stem}.toml")), &text)?;
        let (outcome, _) = check_twice(&loaded, &mut Reference);
        if !matches!(outcome, Outcome::Fail { .. }) {
            let evidence = regression::write_file(dir, &stem, "rejected.txt", &text)?;
            return Err(RegressionError::DoesNotReproduce {
                adapter: "(dshc sim runs the reference only)".into(),
                reference: format!("{} (it should fail)", describe_outcome(&outcome)),
                evidence,
            });
        }
    }
    regression::write_file(dir, &stem, "toml", &text)
}

/// Each `compact` step the reference refuses for an empty surface gets that
/// refusal as its expected error.
fn expect_allowed_refusals(scenario: &mut Scenario) {
    let Ok(case) = compile("sim", scenario) else {
        return;
    };
    let Ok(result) = run_case(&case) else {
        return;
    };
    let offset = scenario.scopes.len();
    for (index, step) in scenario.steps.iter_mut().enumerate() {
        let refused = result
            .observations
            .get(offset + index)
            .and_then(|o| o.error.as_ref())
            .is_some_and(|e| e.message == EMPTY_SURFACE);
        if refused && matches!(step.command, Command::Loop(LoopCommand::Compact(_))) {
            step.expect = Some(StepExpect::Command(Box::new(CommandExpect {
                error: Some(Pattern::new(Value::String(EMPTY_SURFACE.into()))),
                ..CommandExpect::default()
            })));
        }
    }
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
