//! Regression files that always reproduce. A finding of `dshc diff` is
//! written as a scenario whose expectations are every observed field in
//! which the two sides differ, at the reference's full value ([`pin`]), with
//! a description that lists exactly those; before the file is written it is
//! run, through the one way a case runs (`dshc_runner::check`), on the
//! adapter, where it must fail, and on the reference, where it must pass.
//! A file that does not is dshc's own bug, reported as
//! [`RegressionError::DoesNotReproduce`] and never written as a scenario.
//! The full observations of both sides go to a JSON file beside it, so the
//! console can show only the structural diff ([`differences`]).

pub mod differences;
pub mod pin;

use std::path::{Path, PathBuf};

use serde_json::json;

use dshc_runner::adapter::{Implementation, Reference};
use dshc_runner::check::{Outcome, check_with, describe_outcome};
use dshc_scenario::format::Scenario;
use dshc_scenario::load::{LoadedScenario, parse_scenario};
use dshc_scenario::protocol::CaseResult;

use differences::{FieldDifference, Leaf, structural_diff};

/// Writing a regression file failed.
#[derive(Debug, thiserror::Error)]
pub enum RegressionError {
    /// The scenario does not serialize to TOML.
    #[error("cannot write the scenario as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The written scenario does not load back.
    #[error("dshc bug: the regression scenario does not load back: {0}")]
    Unusable(String),
    /// The file does not reproduce the finding: dshc's own bug.
    #[error(
        "dshc bug (or an adapter whose answers change from run to run): the regression file \
         does not reproduce the finding, so it was not written.\n\
         On the adapter it should fail; it gave: {adapter}\n\
         On the reference it should pass; it gave: {reference}\n\
         The scenario's text and both sides' observations are in {evidence}"
    )]
    DoesNotReproduce {
        /// The adapter's outcome, in words.
        adapter: String,
        /// The reference's outcome, in words.
        reference: String,
        /// The JSON file holding the evidence.
        evidence: PathBuf,
    },
}

/// Write `text` as `<dir>/<stem>.<extension>`; returns the path.
pub fn write_file(
    dir: &Path,
    stem: &str,
    extension: &str,
    text: &str,
) -> Result<PathBuf, RegressionError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RegressionError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(format!("{stem}.{extension}"));
    // A rerun of the same seed writes the same name: never leave a
    // truncated earlier file behind.
    dshc_scenario::data_file::replace_file(&path, text).map_err(io(&path))?;
    Ok(path)
}

/// A shrunk disagreement, ready to be written.
pub struct Disagreement<'a> {
    /// The file name, without extension.
    pub stem: String,
    /// The scenario's title.
    pub title: String,
    /// The command that finds it again.
    pub replay: String,
    /// The shrunk scenario.
    pub scenario: &'a Scenario,
    /// What the reference observed on it.
    pub reference: &'a CaseResult,
    /// What the adapter observed on it.
    pub other: &'a CaseResult,
    /// Where the two differ.
    pub differences: &'a [FieldDifference],
}

/// What was written.
#[derive(Clone, Debug)]
pub struct Written {
    /// The regression scenario.
    pub scenario: PathBuf,
    /// Both sides' full observations and the differences.
    pub evidence: PathBuf,
}

/// How many differing leaves a description lists (the JSON file has all).
const DESCRIBED_LEAVES: usize = 20;

/// Pin the disagreement, check the file on `adapter` (must fail) and on the
/// reference (must pass), and only then write it; the evidence JSON is
/// written in every case.
pub fn write_verified(
    dir: &Path,
    found: &Disagreement,
    adapter: &mut dyn Implementation,
) -> Result<Written, RegressionError> {
    let pinned = pin::pin(found.scenario, found.reference, found.differences);
    let mut scenario = pinned.scenario;
    scenario.title = found.title.clone();
    scenario.description = Some(description(found, &pinned.asserted, &pinned.unpinned));
    let source = dshc_scenario::write::scenario_text(&scenario)?;
    let path = dir.join(format!("{}.toml", found.stem));
    let leaves: Vec<Leaf> = found
        .differences
        .iter()
        .flat_map(FieldDifference::leaves)
        .collect();
    let evidence = json!({
        "replay": found.replay,
        "differences": leaves,
        "scenario": source,
        "reference": found.reference,
        "adapter": found.other,
    });
    let evidence_text = serde_json::to_string_pretty(&evidence)
        .map_err(|error| RegressionError::Unusable(error.to_string()))?;
    let evidence = write_file(dir, &found.stem, "json", &evidence_text)?;
    let loaded =
        parse_scenario(&path, &source).map_err(|e| RegressionError::Unusable(e.to_string()))?;
    let on_adapter = check_with(&loaded, adapter);
    let on_reference = check_with(&loaded, &mut Reference);
    if !matches!(on_adapter, Outcome::Fail { .. }) || on_reference != Outcome::Pass {
        return Err(RegressionError::DoesNotReproduce {
            adapter: describe_outcome(&on_adapter),
            reference: describe_outcome(&on_reference),
            evidence,
        });
    }
    let scenario = write_file(dir, &found.stem, "toml", &source)?;
    Ok(Written { scenario, evidence })
}

/// What the file is and what it asserts, truthfully: the pinned fields and
/// nothing else, and the differences seen.
fn description(found: &Disagreement, asserted: &[String], unpinned: &[String]) -> String {
    let mut text = format!(
        "Found by `{}` and shrunk: the reference and the adapter disagree on this case.\n\
         The expectations are the reference's observations, at full value, of every field in\n\
         which the two sides differ, and nothing else:\n",
        found.replay
    );
    for line in asserted {
        text.push_str(&format!("- {line}\n"));
    }
    if !unpinned.is_empty() {
        text.push_str(
            "Fields that differ but have no expectation key (the judge reports them by itself):\n",
        );
        for path in unpinned {
            text.push_str(&format!("- {path}\n"));
        }
    }
    text.push_str(&format!(
        "Before writing it, dshc checked that the file fails on that adapter and passes on the\n\
         reference. Decide from the spec and the upstream source which side is right before\n\
         committing it. The differences (both sides' full observations are in {}.json):\n",
        found.stem
    ));
    for line in structural_diff(found.differences, DESCRIBED_LEAVES) {
        text.push_str(&format!("  {line}\n"));
    }
    text
}

/// A regression file's text read back as `dshc run` reads it.
pub fn load_back(path: &Path, source: &str) -> Result<LoadedScenario, RegressionError> {
    parse_scenario(path, source).map_err(|e| RegressionError::Unusable(e.to_string()))
}
