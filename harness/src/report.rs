//! Compliance reports for `dshc check`: JSON (the source of truth), JUnit XML
//! for CI systems, and a Markdown table of spec clauses × implementations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::coverage::Clause;
use crate::protocol::Implementation;
use crate::runner::{CaseReport, Summary, Verdict};

/// One implementation's results over a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Who was checked.
    pub implementation: Implementation,
    /// The adapter command line.
    pub command: String,
    /// Totals.
    pub summary: Summary,
    /// Every case, in scenario order.
    pub cases: Vec<CaseReport>,
}

/// The part of a JSON report the Markdown table needs (to merge reports).
#[derive(Clone, Debug, Deserialize)]
pub struct ReportDigest {
    /// Who was checked.
    pub implementation: Implementation,
    /// Per case: id, covers, outcome label, expected-failure reason.
    pub cases: Vec<CaseDigest>,
}

/// A case as read back from a JSON report.
#[derive(Clone, Debug, Deserialize)]
pub struct CaseDigest {
    /// Scenario id.
    pub id: String,
    /// Clauses.
    pub covers: Vec<String>,
    /// `{"outcome": "...", ...}`.
    pub outcome: serde_json::Value,
    /// Expected-failure reason.
    #[serde(default)]
    pub expected_failure: Option<String>,
}

impl CaseDigest {
    fn verdict(&self) -> Verdict {
        let outcome = self
            .outcome
            .get("outcome")
            .and_then(|o| o.as_str())
            .unwrap_or("");
        match (outcome, self.expected_failure.is_some()) {
            ("pass", false) => Verdict::Passed,
            ("pass", true) => Verdict::UnexpectedPass,
            ("skipped", _) => Verdict::Skipped,
            (_, true) => Verdict::ExpectedFailure,
            (_, false) => Verdict::Failed,
        }
    }
}

impl Report {
    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Read back what [`Report::to_json`] wrote.
    pub fn digest(&self) -> ReportDigest {
        serde_json::from_str(&self.to_json()).expect("a report reads back")
    }

    /// The JUnit XML form: one test case per scenario.
    pub fn to_junit(&self) -> String {
        let name = xml_escape(&self.implementation.name);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<testsuites name=\"dshc\">\n  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
            self.cases.len(),
            self.summary.failed,
            self.summary.skipped + self.summary.expected_failures
        ));
        for case in &self.cases {
            out.push_str(&format!(
                "    <testcase classname=\"{name}\" name=\"{}\"",
                xml_escape(&case.id)
            ));
            let body = match case.verdict() {
                Verdict::Passed => None,
                Verdict::Skipped => Some(format!("<skipped message=\"{}\"/>", xml_escape(&outcome_detail(case)))),
                Verdict::ExpectedFailure => Some(format!(
                    "<skipped message=\"expected failure: {}\"/>",
                    xml_escape(case.expected_failure.as_deref().unwrap_or_default())
                )),
                Verdict::UnexpectedPass => Some(
                    "<failure message=\"passed, but listed as an expected failure: remove it from the list\"/>".to_string(),
                ),
                Verdict::Failed => Some(format!(
                    "<failure message=\"{}\">{}</failure>",
                    case.outcome.label(),
                    xml_escape(&outcome_detail(case))
                )),
            };
            match body {
                None => out.push_str("/>\n"),
                Some(body) => out.push_str(&format!(">\n      {body}\n    </testcase>\n")),
            }
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

fn outcome_detail(case: &CaseReport) -> String {
    serde_json::to_string_pretty(&case.outcome).unwrap_or_default()
}

fn xml_escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {
                format!("&#{};", c as u32)
            }
            c => c.to_string(),
        })
        .collect()
}

/// A Markdown table: one row per clause, one column per implementation; each
/// cell counts the covering scenarios that passed.
pub fn markdown_matrix(catalog: &[Clause], reports: &[ReportDigest]) -> String {
    let mut out = String::from("| Clause |");
    for report in reports {
        out.push_str(&format!(
            " {} {} |",
            report.implementation.name, report.implementation.version
        ));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(reports.len()));
    out.push('\n');
    let tallies: Vec<BTreeMap<&str, [usize; 4]>> = reports
        .iter()
        .map(|report| {
            let mut by_clause: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
            for case in &report.cases {
                let slot = match case.verdict() {
                    Verdict::Passed => 0,
                    Verdict::ExpectedFailure => 1,
                    Verdict::Skipped => 2,
                    Verdict::Failed | Verdict::UnexpectedPass => 3,
                };
                for clause in &case.covers {
                    by_clause.entry(clause.as_str()).or_default()[slot] += 1;
                }
            }
            by_clause
        })
        .collect();
    for clause in catalog {
        out.push_str(&format!("| `{}` |", clause.id));
        for tally in &tallies {
            let cell = match tally.get(clause.id.as_str()) {
                None => "—".to_string(),
                Some([passed, xfail, skipped, failed]) => {
                    let total = passed + xfail + skipped + failed;
                    let mut cell = format!("{passed}/{total}");
                    if *failed == 0 && *xfail == 0 && *skipped == 0 {
                        cell.push_str(" ✓");
                    }
                    for (count, label) in
                        [(failed, "failed"), (xfail, "xfail"), (skipped, "skipped")]
                    {
                        if *count > 0 {
                            cell.push_str(&format!(", {count} {label}"));
                        }
                    }
                    cell
                }
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}
