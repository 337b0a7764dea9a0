//! Which spec clauses the scenarios cover (`dshc coverage`).
//!
//! The clause catalog (`scenarios/clauses.toml`) lists every clause with the
//! level needed to exercise it; a scenario's `covers` must name catalog ids.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use dshc_scenario::data_file::{DataFileError, read_toml};

use dshc_scenario::load::LoadedScenario;
use dshc_scenario::protocol::Level;

/// One clause of the spec.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clause {
    /// `<chapter>:<clause>`.
    pub id: String,
    /// The rule in a line.
    pub text: String,
    /// The level a scenario needs to exercise it.
    #[serde(default)]
    pub level: Level,
    /// Why no scenario covers it, for a clause deliberately left out.
    #[serde(default)]
    pub excluded: Option<String>,
    /// What a run shows when it exercised the clause, for counting the
    /// clauses generated cases exercise (`dshc_fuzzing::signals`).
    #[serde(default)]
    pub signals: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalog {
    clause: Vec<Clause>,
}

/// Read the clause catalog.
pub fn load_catalog(path: &Path) -> Result<Vec<Clause>, DataFileError> {
    let catalog: Catalog = read_toml(path)?;
    let mut seen = std::collections::BTreeSet::new();
    for clause in &catalog.clause {
        if !seen.insert(clause.id.clone()) {
            return Err(DataFileError::new(
                path,
                format!("clause {} is listed twice", clause.id),
            ));
        }
    }
    Ok(catalog.clause)
}

/// Clauses against the scenarios covering them.
pub struct Coverage {
    /// Every catalog clause with the ids of scenarios covering it, in catalog order.
    pub rows: Vec<(Clause, Vec<String>)>,
    /// `(scenario id, clause id)` pairs naming a clause not in the catalog.
    pub unknown: Vec<(String, String)>,
}

impl Coverage {
    /// Compute coverage.
    pub fn compute(catalog: &[Clause], scenarios: &[LoadedScenario]) -> Coverage {
        let mut by_clause: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut unknown = Vec::new();
        for scenario in scenarios {
            for clause in &scenario.scenario.covers {
                if catalog.iter().any(|c| &c.id == clause) {
                    by_clause
                        .entry(clause.as_str())
                        .or_default()
                        .push(scenario.id.clone());
                } else {
                    unknown.push((scenario.id.clone(), clause.clone()));
                }
            }
        }
        let rows = catalog
            .iter()
            .map(|clause| {
                (
                    clause.clone(),
                    by_clause.remove(clause.id.as_str()).unwrap_or_default(),
                )
            })
            .collect();
        Coverage { rows, unknown }
    }

    /// Clauses of `level` (all levels if `None`) no scenario covers, excluded ones aside.
    pub fn uncovered(&self, level: Option<Level>) -> Vec<&Clause> {
        self.rows
            .iter()
            .filter(|(clause, ids)| {
                ids.is_empty()
                    && clause.excluded.is_none()
                    && level.is_none_or(|l| l == clause.level)
            })
            .map(|(clause, _)| clause)
            .collect()
    }
}
