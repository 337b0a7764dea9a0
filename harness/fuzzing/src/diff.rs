//! Seeded differential runs (`dshc diff`): generated cases (assembly cases,
//! or the simulator's loop sessions with `--level loop`) run on the
//! reference and on an adapter; the first disagreement is shrunk, keeping
//! it at every step, to a minimal scenario, and written as a regression file
//! that is checked to reproduce ([`crate::regression`]), with a one-line
//! replay command.

use std::path::Path;

use dshc_scenario::compile::compile;
use dshc_scenario::format::Scenario;

use dshc_scenario::protocol::CaseResult;

use crate::generate;
use crate::regression::differences::{FieldDifference, differences, short};
use crate::regression::{Disagreement, RegressionError, Written, write_verified};
use dshc_oracle::normalize::redact_run;
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
        /// Every observed field in which they differ, in case order.
        differences: Vec<FieldDifference>,
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
    pub fn stem(&self) -> String {
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
    compare_once_seeing(scenario, id, other, |_| {})
}

/// [`compare_once`], handing what the reference observed to `seen` first.
pub fn compare_once_seeing(
    scenario: &Scenario,
    id: &str,
    other: &mut dyn Implementation,
    seen: impl FnOnce(&CaseResult),
) -> Comparison {
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
    seen(&reference);
    match other.run(&case) {
        Ran::Observed(result) => {
            let found = if other.real_time() {
                // As the judge compares a real-time run: message ids and
                // event times redacted on both sides.
                let (mut ours, mut theirs) = (reference.clone(), (*result).clone());
                ours.run.iter_mut().for_each(redact_run);
                theirs.run.iter_mut().for_each(redact_run);
                differences(scenario, &ours, &theirs)
            } else {
                differences(scenario, &reference, &result)
            };
            if found.is_empty() {
                Comparison::Agree
            } else {
                Comparison::Disagree {
                    reference: Box::new(reference),
                    other: result,
                    differences: found,
                }
            }
        }
        Ran::NotRun(not_run) => Comparison::NotRun(not_run.to_string()),
    }
}

/// The fields of a disagreement in one line: how many, and the first few
/// paths (`steps[2].expect.sections, expect.log`).
pub fn summary(differences: &[FieldDifference]) -> String {
    const SHOWN: usize = 4;
    let mut paths: Vec<&str> = differences
        .iter()
        .take(SHOWN)
        .map(|d| d.path.as_str())
        .collect();
    if differences.len() > SHOWN {
        paths.push("…");
    }
    format!(
        "{} field(s): {} (first: reference {}, adapter {})",
        differences.len(),
        paths.join(", "),
        short(differences.first().and_then(|d| d.reference.as_ref()), 60),
        short(differences.first().and_then(|d| d.adapter.as_ref()), 60),
    )
}

/// Shrink a disagreement: the smallest scenario found, within
/// `max_attempts` runs, on which the two sides still disagree in the same
/// place: a step is taken only when the candidate still differs in the
/// class (command kind and field) of the original's first difference, and
/// the adapter's result shows none of the `known` causes (a disagreement
/// already pinned elsewhere), so the shrunk case keeps the disagreement
/// found, not merely some other one.
pub fn shrink(
    scenario: &Scenario,
    other: &mut dyn Implementation,
    max_attempts: usize,
    known: &dyn Fn(&CaseResult) -> bool,
) -> Scenario {
    let kept = match compare_once(scenario, "shrinking", other) {
        Comparison::Disagree { differences, .. } => differences[0].class.clone(),
        _ => return scenario.clone(),
    };
    generate::shrink::shrink(scenario, max_attempts, |candidate| {
        match compare_once(candidate, "shrinking", other) {
            Comparison::Disagree {
                differences, other, ..
            } => !known(&other) && differences.iter().any(|d| d.class == kept),
            _ => false,
        }
    })
}

/// A shrunk disagreement, run once more and written as a regression file
/// that fails on `other` and passes on the reference (checked before it is
/// written). `Ok(None)`: the shrunk case no longer disagrees (an adapter
/// whose answers change from run to run), which is reported, not written.
pub fn write_regression(
    dir: &Path,
    replay: &Replay,
    scenario: &Scenario,
    other: &mut dyn Implementation,
) -> Result<Option<(Written, Vec<FieldDifference>)>, RegressionError> {
    let Comparison::Disagree {
        reference,
        other: observed,
        differences,
    } = compare_once(scenario, "minimal", other)
    else {
        return Ok(None);
    };
    let found = Disagreement {
        stem: replay.stem(),
        title: format!(
            "dshc diff disagreement: seed {}, case {}",
            replay.seed, replay.case
        ),
        replay: replay.command(),
        scenario,
        reference: &reference,
        other: &observed,
        differences: &differences,
    };
    let written = write_verified(dir, &found, other)?;
    Ok(Some((written, differences)))
}
