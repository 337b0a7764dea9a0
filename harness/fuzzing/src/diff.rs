//! Seeded differential runs (`dshc diff`): generated cases (assembly cases,
//! or the simulator's loop sessions with `--level loop`) run on the
//! reference and on an adapter; the first disagreement is shrunk to a
//! minimal scenario and written as a regression file with a one-line replay
//! command.

use std::path::{Path, PathBuf};

use dshc_scenario::compile::compile;
use dshc_scenario::format::Scenario;
use dshc_scenario::load::parse_scenario;
use serde_json::Value;

use dshc_scenario::protocol::{CaseResult, LoopRun};

use crate::generate::{self, shrink::RegressionError};
use dshc_oracle::compare::same_result;
use dshc_reference::run_case;
use dshc_runner::adapter::{Implementation, Ran};

/// How one generated case compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Comparison {
    /// Both implementations observed the same.
    Agree,
    /// The adapter could not run the case (skipped, errored, crashed, timed out).
    NotRun(String),
    /// They disagree; the adapter's result is attached.
    Disagree {
        /// What the reference observed.
        reference: Box<CaseResult>,
        /// What the adapter observed.
        other: Box<CaseResult>,
        /// The first difference, in words.
        first: String,
    },
}

/// How to find a generated case again: `dshc diff` with these arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// The adapter command line.
    pub adapter: String,
    /// Loop sessions (`--level loop`) rather than assembly cases.
    pub loop_level: bool,
    /// The seed.
    pub seed: u64,
    /// The case number.
    pub case: u64,
}

impl Replay {
    /// The one-line replay command.
    pub fn command(&self) -> String {
        let level = if self.loop_level { " --level loop" } else { "" };
        format!(
            "dshc diff --adapter {}{level} --seed {} --case {}",
            shell_quoted(&self.adapter),
            self.seed,
            self.case
        )
    }

    /// The regression file's name, without extension.
    fn stem(&self) -> String {
        let level = if self.loop_level { "loop_" } else { "" };
        format!("diff_{level}seed{}_case{}", self.seed, self.case)
    }
}

/// `text` as one POSIX shell word: single-quoted, each `'` inside written
/// as `'\''`, so a pasted replay command passes the adapter command intact.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Run one scenario on both sides and compare.
pub fn compare_once(scenario: &Scenario, id: &str, other: &mut dyn Implementation) -> Comparison {
    let case = match compile(id, scenario) {
        Ok(case) => case,
        Err(error) => {
            return Comparison::NotRun(format!("generated case does not compile: {error}"));
        }
    };
    let reference = match run_case(&case) {
        Ok(result) => result,
        Err(error) => {
            return Comparison::NotRun(format!("the reference refused the case: {error}"));
        }
    };
    match other.run(&case) {
        Ran::Observed(result) => match first_difference(&reference, &result) {
            None => Comparison::Agree,
            Some(first) => Comparison::Disagree {
                reference: Box::new(reference),
                other: result,
                first,
            },
        },
        Ran::NotRun(not_run) => Comparison::NotRun(not_run.to_string()),
    }
}

/// The first difference between two results, or `None` when they agree.
/// An assembly result is compared whole, byte for byte. A loop result is
/// compared as the contract observes it, in order: each command's
/// observation, then each agent's session log event by event, then the
/// provider traffic (bodies and cache hits: transport headers are each
/// implementation's own), the live events, the final status and inbox.
pub fn first_difference(reference: &CaseResult, other: &CaseResult) -> Option<String> {
    let (Some(ours), Some(theirs)) = (&reference.run, &other.run) else {
        return (!same_result(reference, other)).then(|| {
            format!(
                "reference: {}\n  adapter:   {}",
                text(reference),
                text(other)
            )
        });
    };
    if reference.config_error != other.config_error {
        return Some(format!(
            "config error: reference {}, adapter {}",
            text(&reference.config_error),
            text(&other.config_error)
        ));
    }
    let observations = first_in("command", &reference.observations, &other.observations);
    let logs = || {
        let (ours, theirs) = (agent_logs(ours), agent_logs(theirs));
        ours.iter()
            .zip(&theirs)
            .find_map(|((name, a), (_, b))| first_in(&format!("{name}'s log, event"), a, b))
            .or_else(|| {
                (ours.len() != theirs.len())
                    .then(|| format!("agents: reference {}, adapter {}", ours.len(), theirs.len()))
            })
    };
    let traffic = || {
        let bodies = |run: &LoopRun| -> Vec<Value> {
            run.requests
                .iter()
                .map(|request| {
                    serde_json::json!({"body": request.body, "cache_hit_tokens": request.cache_hit_tokens})
                })
                .collect()
        };
        first_in("provider request", &bodies(ours), &bodies(theirs))
    };
    let rest = || {
        let fields = |run: &LoopRun| {
            serde_json::json!({
                "live_events": run.live_events,
                "status": run.status,
                "pending": run.pending,
                "failure": run.failure,
                "llm_requests": run.llm_requests,
                "journal": run.journal,
            })
        };
        let (a, b) = (fields(ours), fields(theirs));
        (a != b).then(|| format!("run: reference {a}\n  adapter:   {b}"))
    };
    observations.or_else(logs).or_else(traffic).or_else(rest)
}

/// Each agent's log of a run, named: the world's agent first.
fn agent_logs(run: &LoopRun) -> Vec<(String, &[Value])> {
    let mut logs = vec![("the agent".to_owned(), run.log.as_slice())];
    logs.extend(
        run.agents
            .iter()
            .map(|agent| (format!("agent {}", agent.id), agent.log.as_slice())),
    );
    logs
}

fn text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<{error}>"))
}

/// The first position where two lists differ (as JSON text), in words.
fn first_in<T: serde::Serialize>(what: &str, ours: &[T], theirs: &[T]) -> Option<String> {
    let differs = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| text(a) != text(b));
    match differs {
        Some(index) => Some(format!(
            "{what} {index}:\n  reference: {}\n  adapter:   {}",
            text(&ours[index]),
            text(&theirs[index])
        )),
        None if ours.len() != theirs.len() => Some(format!(
            "{what} count: reference {}, adapter {} (first extra: {})",
            ours.len(),
            theirs.len(),
            text(&ours.get(theirs.len()).or(theirs.get(ours.len())))
        )),
        None => None,
    }
}

/// Shrink a disagreement: the smallest scenario found, within
/// `max_attempts` runs, on which the two still disagree.
pub fn shrink(
    scenario: &Scenario,
    other: &mut dyn Implementation,
    max_attempts: usize,
) -> Scenario {
    generate::shrink::shrink(scenario, max_attempts, |candidate| {
        matches!(
            compare_once(candidate, "shrinking", other),
            Comparison::Disagree { .. }
        )
    })
}

/// Write a shrunk disagreement as a regression scenario, expectations taken
/// from the reference and marked for review. `replay` is the command that
/// finds it again, and names the file. Returns the file written.
pub fn write_regression(
    dir: &Path,
    replay: &Replay,
    scenario: &Scenario,
    other: &CaseResult,
) -> Result<PathBuf, RegressionError> {
    let stem = replay.stem();
    let mut scenario = scenario.clone();
    scenario.title = format!(
        "dshc diff disagreement: seed {}, case {}",
        replay.seed, replay.case
    );
    let other_json = serde_json::to_string_pretty(other).unwrap_or_else(|e| format!("<{e}>"));
    scenario.description = Some(format!(
        "Found by `{}` and shrunk.\n\
         The expectations below are the reference's observations: decide from the spec and the\n\
         upstream source which side is right before committing this file.\n\
         The adapter observed:\n{other_json}\n",
        replay.command()
    ));
    let source = toml::to_string_pretty(&scenario)?;
    let path = dir.join(format!("{stem}.toml"));
    let unusable = |e: &dyn std::fmt::Display| RegressionError::Unusable(e.to_string());
    let loaded = parse_scenario(&path, &source).map_err(|e| unusable(&e))?;
    let reference = run_case(&loaded.case).map_err(|e| unusable(&e))?;
    let blessed =
        dshc_runner::bless::blessed_source(&loaded, &reference).map_err(|e| unusable(&e))?;
    generate::shrink::write_file(dir, &stem, &blessed)
}
