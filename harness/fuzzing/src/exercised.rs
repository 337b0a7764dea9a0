//! What a seeded run exercised: how many generated cases used each command
//! kind of the level, printed by `dshc diff` and `dshc sim` the way `dshc
//! coverage` prints clauses for files, with the kinds no case used named at
//! the end, so a generator's blind spots show on every run.
//!
//! The kinds come from the command vocabulary's per-level lists
//! (`AssemblyCommand::KINDS`, `Command::KINDS`), so a new command kind shows
//! up here, unexercised, until a generator makes it; a loop case may use
//! every kind. The spec clauses come from the catalog's `signals`
//! ([`crate::signals`]): each case counts for every clause it showed a
//! signal of, and the clauses of the level with signals that no case showed
//! are named too.

use std::collections::BTreeMap;

use dshc_runner::coverage::Clause;
use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{AssemblyCommand, Command, Level};

use crate::signals::{Shown, Signal};

/// Every command kind a case of `level` may use, in the format's order: the
/// assembly level's, and at the loop level every kind.
pub fn kinds_of_level(level: Level) -> Vec<String> {
    let kinds = match level {
        Level::Assembly => AssemblyCommand::KINDS,
        Level::Loop => Command::KINDS,
    };
    kinds.iter().map(|kind| kind.to_string()).collect()
}

/// The clauses a case of a level can exercise, with their signals.
#[derive(Clone, Debug, Default)]
pub struct ClauseSignals {
    clauses: Vec<(String, Vec<Signal>)>,
    /// Clauses of the level the catalog gives no signal.
    without: usize,
}

impl ClauseSignals {
    /// The clauses of `catalog` at `level`, each with its signals (a loop
    /// case registers and assembles too, but the assembly level's clauses
    /// are `dshc diff`'s assembly cases' to exercise). A malformed signal
    /// is an error.
    pub fn of(catalog: &[Clause], level: Level) -> Result<ClauseSignals, String> {
        let mut signals = ClauseSignals::default();
        for clause in catalog {
            if clause.excluded.is_some() || clause.level != level {
                continue;
            }
            if clause.signals.is_empty() {
                signals.without += 1;
                continue;
            }
            let parsed = clause
                .signals
                .iter()
                .map(|text| Signal::parse(text).map_err(|e| format!("clause {}: {e}", clause.id)))
                .collect::<Result<Vec<_>, _>>()?;
            signals.clauses.push((clause.id.clone(), parsed));
        }
        Ok(signals)
    }

    /// The positions of the clauses `shown` exercised.
    pub fn hits(&self, shown: &Shown<'_>) -> Vec<usize> {
        self.clauses
            .iter()
            .enumerate()
            .filter(|(_, (_, signals))| signals.iter().any(|signal| shown.shows(signal)))
            .map(|(index, _)| index)
            .collect()
    }
}

/// The command kinds a run's cases used, and the clauses they exercised.
#[derive(Clone, Debug)]
pub struct Exercised {
    kinds: Vec<String>,
    /// Kind → (cases that used it, commands of it).
    counts: BTreeMap<String, (u64, u64)>,
    cases: u64,
    clauses: ClauseSignals,
    /// Per clause of `clauses`, the cases that exercised it.
    clause_cases: Vec<u64>,
}

impl Exercised {
    /// Nothing exercised yet, at `level`, counting the clauses of `clauses`.
    pub fn new(level: Level, clauses: ClauseSignals) -> Exercised {
        Exercised {
            kinds: kinds_of_level(level),
            counts: BTreeMap::new(),
            cases: 0,
            clause_cases: vec![0; clauses.clauses.len()],
            clauses,
        }
    }

    /// The clause signals counted.
    pub fn clauses(&self) -> &ClauseSignals {
        &self.clauses
    }

    /// Count one generated case, which exercised the clauses `hits`
    /// ([`ClauseSignals::hits`]).
    pub fn add(&mut self, scenario: &Scenario, hits: &[usize]) {
        for hit in hits {
            if let Some(count) = self.clause_cases.get_mut(*hit) {
                *count += 1;
            }
        }
        self.cases += 1;
        let mut seen = std::collections::BTreeSet::new();
        for step in &scenario.steps {
            let kind = step.command.kind();
            let entry = self.counts.entry(kind.to_owned()).or_default();
            entry.1 += 1;
            if seen.insert(kind) {
                entry.0 += 1;
            }
        }
    }

    /// The kinds of the level no case used.
    pub fn unexercised(&self) -> Vec<&str> {
        self.kinds
            .iter()
            .filter(|kind| !self.counts.contains_key(*kind))
            .map(String::as_str)
            .collect()
    }

    /// The report: one line per kind of the level (and any other kind a
    /// case used), `kind  cases  commands`, then the kinds never used.
    pub fn lines(&self) -> Vec<String> {
        let mut kinds: Vec<&String> = self.kinds.iter().collect();
        kinds.extend(self.counts.keys().filter(|k| !self.kinds.contains(k)));
        let width = kinds.iter().map(|k| k.len()).max().unwrap_or(0);
        let mut lines = vec![format!(
            "{:width$}  {:>7}  {:>8}   (the steps' command kinds, over {} cases)",
            "kind", "cases", "commands", self.cases
        )];
        for kind in kinds {
            let line = match self.counts.get(kind) {
                Some((cases, commands)) => format!("{kind:width$}  {cases:>7}  {commands:>8}"),
                None => format!("{kind:width$}  {:>7}  {:>8}   NOT EXERCISED", 0, 0),
            };
            lines.push(line);
        }
        let unexercised = self.unexercised();
        lines.push(if unexercised.is_empty() {
            "every command kind of the level is exercised".to_string()
        } else {
            format!(
                "{} of {} command kinds exercised; never: {}",
                self.kinds.len() - unexercised.len(),
                self.kinds.len(),
                unexercised.join(", ")
            )
        });
        lines.extend(self.clause_lines());
        lines
    }

    /// The clauses with signals, `clause  cases`, then the ones no case
    /// exercised and how many clauses have no signal.
    fn clause_lines(&self) -> Vec<String> {
        let rows = &self.clauses.clauses;
        if rows.is_empty() {
            return Vec::new();
        }
        let width = rows.iter().map(|(id, _)| id.len()).max().unwrap_or(0);
        let mut lines = vec![format!(
            "{:width$}  {:>7}   (the spec clauses whose signals the cases showed)",
            "clause", "cases"
        )];
        let mut never = Vec::new();
        for ((id, _), cases) in rows.iter().zip(&self.clause_cases) {
            lines.push(if *cases == 0 {
                never.push(id.as_str());
                format!("{id:width$}  {:>7}   NOT EXERCISED", 0)
            } else {
                format!("{id:width$}  {cases:>7}")
            });
        }
        let without = self.clauses.without;
        lines.push(if never.is_empty() {
            format!(
                "every clause with signals ({}) is exercised; {without} clauses of the level have none",
                rows.len()
            )
        } else {
            format!(
                "{} of {} clauses with signals exercised ({without} have none); never: {}",
                rows.len() - never.len(),
                rows.len(),
                never.join(", ")
            )
        });
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_levels_split_as_the_compiler_does() {
        let assembly = kinds_of_level(Level::Assembly);
        let all = kinds_of_level(Level::Loop);
        for kind in [
            "section",
            "assemble",
            "owner",
            "on_change",
            "dispose_scope",
            "canonical_header",
        ] {
            assert!(assembly.iter().any(|k| k == kind), "{kind}: {assembly:?}");
        }
        for kind in [
            "followup",
            "cancel",
            "clock_jump",
            "on_status",
            "register_route",
        ] {
            assert!(!assembly.iter().any(|k| k == kind), "{kind}");
            assert!(all.iter().any(|k| k == kind), "{kind}");
        }
        assert!(all.len() > assembly.len() && assembly.len() >= 12);
    }

    #[test]
    fn cases_and_commands_are_counted_per_kind_and_the_rest_named() {
        let scenario: Scenario = toml::from_str(
            "format = 2\ntitle = \"t\"\ncovers = []\n\
             [[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \"A\"\n\
             [[steps]]\ndo = \"section\"\nname = \"b\"\norder = 2\ntext = \"B\"\n\
             [[steps]]\ndo = \"assemble\"\n",
        )
        .unwrap();
        let mut exercised = Exercised::new(Level::Assembly, ClauseSignals::default());
        exercised.add(&scenario, &[]);
        exercised.add(&scenario, &[]);
        let lines = exercised.lines();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("section ") && l.ends_with("  2         4")),
            "{lines:?}"
        );
        assert!(exercised.unexercised().contains(&"owner"));
        assert!(!exercised.unexercised().contains(&"assemble"));
        assert!(lines.last().unwrap().contains("never: "), "{lines:?}");
    }
}
