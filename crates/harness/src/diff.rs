//! Seeded differential runs (`dshc diff`): generated cases run on the
//! reference and on an adapter; the first disagreement is shrunk to a minimal
//! scenario and written as a regression file with a one-line replay command.

use std::path::{Path, PathBuf};

use dshc_scenario::compile::compile;
use dshc_scenario::format::Scenario;
use dshc_scenario::load::parse_scenario;
use dshc_scenario::protocol::CaseResult;

use crate::adapter::{Implementation, Ran};
use crate::generate::{self, shrink::RegressionError};
use crate::oracle::compare::same_result;
use crate::reference::run_case;

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
    },
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
        Ran::Observed(result) if same_result(&result, &reference) => Comparison::Agree,
        Ran::Observed(result) => Comparison::Disagree {
            reference: Box::new(reference),
            other: result,
        },
        Ran::NotRun(not_run) => Comparison::NotRun(not_run.to_string()),
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
/// from the reference and marked for review. Returns the file written.
pub fn write_regression(
    dir: &Path,
    seed: u64,
    case: u64,
    adapter: &str,
    scenario: &Scenario,
    other: &CaseResult,
) -> Result<PathBuf, RegressionError> {
    let stem = format!("diff_seed{seed}_case{case}");
    let mut scenario = scenario.clone();
    scenario.title = format!("dshc diff disagreement: seed {seed}, case {case}");
    let other_json = serde_json::to_string_pretty(other).unwrap_or_else(|e| format!("<{e}>"));
    scenario.description = Some(format!(
        "Found by `dshc diff --adapter '{adapter}' --seed {seed} --case {case}` and shrunk.\n\
         The expectations below are the reference's observations: decide from the spec and the\n\
         upstream source which side is right before committing this file.\n\
         The adapter observed:\n{other_json}\n"
    ));
    let source = toml::to_string_pretty(&scenario)?;
    let path = dir.join(format!("{stem}.toml"));
    let unusable = |e: &dyn std::fmt::Display| RegressionError::Unusable(e.to_string());
    let loaded = parse_scenario(&path, &source).map_err(|e| unusable(&e))?;
    let reference = run_case(&loaded.case).map_err(|e| unusable(&e))?;
    let blessed = crate::bless::blessed_source(&loaded, &reference).map_err(|e| unusable(&e))?;
    generate::shrink::write_file(dir, &stem, &blessed)
}
