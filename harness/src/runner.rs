//! One way to run a scenario: [`check`], shared by `cargo test`, the CLI and
//! the fuzzers.

use crate::oracle::compare::{Mismatch, compare};
use crate::scenario::load::LoadedScenario;
use crate::scripted::run_case;

/// The result of running one case against one implementation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Pass,
    /// Some expectations did not hold.
    Fail {
        /// What differed.
        mismatches: Vec<Mismatch>,
    },
}

/// Run a scenario on the reference model and compare.
pub fn check(scenario: &LoadedScenario) -> Outcome {
    let result = run_case(&scenario.case);
    let mismatches = compare(&scenario.scenario, &result);
    if mismatches.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail { mismatches }
    }
}

/// A readable account of an outcome: each mismatch with a line diff.
pub fn describe(scenario: &LoadedScenario, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => format!("{}: pass", scenario.id),
        Outcome::Fail { mismatches } => {
            let mut out = format!("{} ({}): {} mismatch(es)\n", scenario.id, scenario.path.display(), mismatches.len());
            for mismatch in mismatches {
                out.push_str(&format!("  {}:\n", mismatch.path));
                out.push_str(&diff_text(&mismatch.expected, &mismatch.actual));
            }
            out
        }
    }
}

/// A unified line diff, `-` expected and `+` actual, indented for nesting.
pub fn diff_text(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "-",
            similar::ChangeTag::Insert => "+",
            similar::ChangeTag::Equal => " ",
        };
        let line = change.value();
        out.push_str(&format!("    {sign} {}", line.escape_debug_lines()));
        if !line.ends_with('\n') {
            out.push_str("\n    \\ no newline at end\n");
        }
    }
    out
}

trait EscapeLines {
    fn escape_debug_lines(&self) -> String;
}

impl EscapeLines for str {
    /// Show control characters other than the line's own newline, so that
    /// whitespace differences are visible.
    fn escape_debug_lines(&self) -> String {
        let (body, newline) = match self.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (self, ""),
        };
        let escaped: String = body
            .chars()
            .map(|c| match c {
                '\t' => "\\t".to_string(),
                '\r' => "\\r".to_string(),
                c if c.is_control() => c.escape_unicode().to_string(),
                c => c.to_string(),
            })
            .collect();
        format!("{escaped}{newline}")
    }
}
