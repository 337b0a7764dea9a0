//! The gate's report as one self-contained HTML page (`index.html` in every
//! `dshc check --report-dir`, and `dshc report --html` over several runs):
//! the summary, the clause × implementation matrix whose cells link to their
//! cases, every case, each failure with its scenario source, a structural
//! diff of each mismatch and the command that replays it, the expected
//! failures with their evidence, and the prompt-cache breaks.
//!
//! The page is written from JSON reports alone ([`PageReport`] reads any of
//! them back, older ones without the optional fields included), so the JSON
//! stays the source of truth and an old report renders as a new one does.
//! Everything an adapter wrote is hostile text: it passes [`escape`] on its
//! way into the page. No network, no script: inline CSS only, so the page
//! reads the same from a CI artifact or from disk. The same reports give the
//! same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

use dshc_oracle::outcome::OutcomeKind;
use dshc_scenario::protocol::ImplementationInfo;

use crate::check::{Summary, Verdict};
use crate::coverage::Clause;

/// A JSON report as the page reads it: every field a report has had, the
/// later ones optional.
#[derive(Clone, Debug, Deserialize)]
pub struct PageReport {
    /// Who was checked.
    pub implementation: ImplementationInfo,
    /// The adapter command line.
    #[serde(default)]
    pub command: String,
    /// Totals, as the run counted them (recounted from the cases when absent).
    #[serde(default)]
    pub summary: Option<PageSummary>,
    /// Every case.
    pub cases: Vec<PageCase>,
}

/// A report's totals.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct PageSummary {
    /// Passed.
    pub passed: usize,
    /// Failed (including unexpected passes).
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
    /// Failed as expected.
    pub expected_failures: usize,
    /// Files that did not load.
    pub invalid: usize,
}

impl From<Summary> for PageSummary {
    fn from(summary: Summary) -> PageSummary {
        PageSummary {
            passed: summary.passed,
            failed: summary.failed,
            skipped: summary.skipped,
            expected_failures: summary.expected_failures,
            invalid: summary.invalid,
        }
    }
}

/// One case of a report.
#[derive(Clone, Debug, Deserialize)]
pub struct PageCase {
    /// Scenario id.
    pub id: String,
    /// Clauses it covers.
    #[serde(default)]
    pub covers: Vec<String>,
    /// What happened.
    pub outcome: PageOutcome,
    /// Why it is listed as an expected failure.
    #[serde(default)]
    pub expected_failure: Option<String>,
    /// Its run's prompt-cache breaks, in words.
    #[serde(default)]
    pub cache_breaks: Vec<String>,
    /// The scenario file, as the run named it (reports since the HTML page).
    #[serde(default)]
    pub scenario: Option<String>,
}

/// An outcome with whichever details its kind has.
#[derive(Clone, Debug, Deserialize)]
pub struct PageOutcome {
    /// Its kind.
    pub outcome: OutcomeKind,
    /// A failure's mismatches.
    #[serde(default)]
    pub mismatches: Vec<PageMismatch>,
    /// A skip's reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// What an error or crash said.
    #[serde(default)]
    pub context: Option<String>,
    /// A timeout's limit.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// One expectation that did not hold.
#[derive(Clone, Debug, Deserialize)]
pub struct PageMismatch {
    /// Where.
    pub path: String,
    /// The expected side.
    pub expected: String,
    /// The observed side.
    pub actual: String,
}

impl PageCase {
    fn verdict(&self) -> Verdict {
        Verdict::of(self.outcome.outcome, self.expected_failure.is_some())
    }

    /// What the outcome said beyond its kind, in a line or a few.
    fn detail(&self) -> String {
        let outcome = &self.outcome;
        match outcome.outcome {
            OutcomeKind::TimedOut => format!(
                "no reply within {} ms",
                outcome.timeout_ms.unwrap_or_default()
            ),
            OutcomeKind::Fail => format!("{} mismatch(es)", outcome.mismatches.len()),
            _ => outcome
                .reason
                .clone()
                .or_else(|| outcome.context.clone())
                .unwrap_or_default(),
        }
    }
}

impl PageReport {
    fn summary(&self) -> PageSummary {
        self.summary.unwrap_or_else(|| {
            let mut summary = Summary::default();
            for case in &self.cases {
                summary.add(case.verdict());
            }
            summary.into()
        })
    }

    fn heading(&self) -> String {
        format!(
            "{} {}",
            self.implementation.name, self.implementation.version
        )
    }
}

/// Text safe in HTML content and in a quoted attribute; control characters
/// other than newline and tab are shown as `\u{..}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A scenario file's text, read as every data file is (regular files only,
/// bounded); `None` when it cannot be read.
pub fn read_scenario_source(path: &str) -> Option<String> {
    dshc_scenario::data_file::read_text(std::path::Path::new(path)).ok()
}

/// A word for a shell: as it is when plainly safe, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@=+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// How a verdict is shown: its CSS class and its word.
fn verdict_style(verdict: Verdict) -> (&'static str, &'static str) {
    match verdict {
        Verdict::Passed => ("pass", "pass"),
        Verdict::Failed => ("fail", "FAIL"),
        Verdict::UnexpectedPass => ("fail", "XPASS"),
        Verdict::Skipped => ("skip", "skipped"),
        Verdict::ExpectedFailure => ("xfail", "xfail"),
    }
}

/// A case's anchor: run index and case index, so no id can collide.
fn case_anchor(run: usize, case: usize) -> String {
    format!("r{run}-c{case}")
}

/// The anchor of a run's list of the cases covering one clause.
fn clause_anchor(run: usize, clause: usize) -> String {
    format!("r{run}-k{clause}")
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1200px;padding:0 1.5em 4em;color:#1b1f24;background:#fff}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{margin:1.4em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #d0d7de;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f6f8fa}code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:.5em .7em;overflow:auto;white-space:pre-wrap;word-break:break-word;margin:.3em 0}
a{color:#0550ae;text-decoration:none}a:hover{text-decoration:underline}
.pass{background:#dafbe1}.fail{background:#ffd8d3}.xfail{background:#fff1c2}.skip{background:#eaeef2}.none{color:#8c959f}
td.pass,td.fail,td.xfail,td.skip{text-align:center}
.matrix td:first-child,.matrix th{white-space:nowrap}.clause-text{color:#57606a;font-size:.9em}
nav{margin:.6em 0}nav a{margin-right:1.2em}
.case{border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:4px;padding:.3em 1em .8em;margin:1em 0}
.case.xfail{border-left-color:#bf8700;background:#fff}
.diff .del{background:#ffebe9;display:block}.diff .ins{background:#dafbe1;display:block}.diff .eq{display:block;color:#57606a}
.mismatch th{width:7em}.muted{color:#57606a}
.totals span{display:inline-block;margin-right:1em;padding:.1em .5em;border-radius:3px}
";

/// The whole page over several reports (implementations, releases or
/// partitions), clauses in the catalog's order and any clause a case
/// covers that the catalog lacks after them. `read_source` reads a
/// scenario file named by a case (`None` when it cannot be read).
pub fn html_page(
    catalog: &[Clause],
    reports: &[PageReport],
    read_source: &dyn Fn(&str) -> Option<String>,
) -> String {
    let clauses = clause_rows(catalog, reports);
    let title = reports
        .iter()
        .map(PageReport::heading)
        .collect::<Vec<_>>()
        .join(", ");
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>dshc report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>dshc conformance report</h1>\n",
        escape(&title)
    );
    page.push_str(&summary_section(reports));
    page.push_str(&navigation(reports));
    page.push_str(&matrix_section(&clauses, reports));
    for (run, report) in reports.iter().enumerate() {
        page.push_str(&run_sections(run, report, &clauses, read_source));
    }
    page.push_str("</body>\n</html>\n");
    page
}

/// A matrix row: the clause id and its text, when the catalog has it.
struct ClauseRow {
    id: String,
    text: Option<String>,
}

fn clause_rows(catalog: &[Clause], reports: &[PageReport]) -> Vec<ClauseRow> {
    let mut rows: Vec<ClauseRow> = catalog
        .iter()
        .map(|clause| ClauseRow {
            id: clause.id.clone(),
            text: Some(clause.text.clone()),
        })
        .collect();
    let known: std::collections::BTreeSet<&str> =
        catalog.iter().map(|clause| clause.id.as_str()).collect();
    let mut extra: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for case in reports.iter().flat_map(|report| &report.cases) {
        for clause in &case.covers {
            if !known.contains(clause.as_str()) {
                extra.insert(clause.as_str());
            }
        }
    }
    rows.extend(extra.into_iter().map(|id| ClauseRow {
        id: id.to_owned(),
        text: None,
    }));
    rows
}

fn summary_section(reports: &[PageReport]) -> String {
    let mut out = String::from(
        "<h2 id=\"summary\">Summary</h2>\n<table class=\"summary\">\n<tr><th>Implementation</th>\
         <th>Language</th><th>Adapter</th><th>Passed</th><th>Failed</th><th>Expected failures</th>\
         <th>Skipped</th><th>Invalid</th></tr>\n",
    );
    for (run, report) in reports.iter().enumerate() {
        let summary = report.summary();
        let info = &report.implementation;
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#r{run}\">{}</a></td><td>{}</td><td><code>{}</code></td>\
             <td class=\"pass\">{}</td><td class=\"{}\"><a href=\"#r{run}-failures\">{}</a></td>\
             <td class=\"xfail\">{}</td><td class=\"skip\">{}</td><td>{}</td></tr>",
            escape(&report.heading()),
            escape(&info.language),
            escape(&report.command),
            summary.passed,
            if summary.failed > 0 { "fail" } else { "pass" },
            summary.failed,
            summary.expected_failures,
            summary.skipped,
            summary.invalid,
        );
    }
    out.push_str("</table>\n");
    out
}

/// Links to each part of the page, per run.
fn navigation(reports: &[PageReport]) -> String {
    let mut out = String::from("<nav><a href=\"#matrix\">Clause matrix</a></nav>\n");
    for (run, report) in reports.iter().enumerate() {
        let summary = report.summary();
        let _ = writeln!(
            out,
            "<nav><b>{}</b>: <a href=\"#r{run}-failures\">failures ({})</a>\
             <a href=\"#r{run}-xfail\">expected failures ({})</a>\
             <a href=\"#r{run}-cache\">prompt-cache breaks</a>\
             <a href=\"#r{run}-cases\">every case ({})</a></nav>",
            escape(&report.heading()),
            summary.failed,
            summary.expected_failures,
            report.cases.len()
        );
    }
    out
}

/// Per run, per clause: `[passed, expected failures, skipped, failed]`.
fn tallies(report: &PageReport) -> BTreeMap<&str, [usize; 4]> {
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
}

fn matrix_section(clauses: &[ClauseRow], reports: &[PageReport]) -> String {
    let mut out = String::from(
        "<h2 id=\"matrix\">Spec clauses × implementations</h2>\n<p class=\"muted\">Each cell: \
         covering scenarios passed / run; a cell links to its cases.</p>\n\
         <table class=\"matrix\">\n<tr><th>Clause</th>",
    );
    for report in reports {
        let _ = write!(out, "<th>{}</th>", escape(&report.heading()));
    }
    out.push_str("<th>Rule</th></tr>\n");
    let tallies: Vec<_> = reports.iter().map(tallies).collect();
    for (index, clause) in clauses.iter().enumerate() {
        let _ = write!(out, "<tr><td><code>{}</code></td>", escape(&clause.id));
        for (run, tally) in tallies.iter().enumerate() {
            let Some(&[passed, xfail, skipped, failed]) = tally.get(clause.id.as_str()) else {
                out.push_str("<td class=\"none\">—</td>");
                continue;
            };
            let total = passed + xfail + skipped + failed;
            let class = if failed > 0 {
                "fail"
            } else if xfail > 0 {
                "xfail"
            } else if skipped > 0 {
                "skip"
            } else {
                "pass"
            };
            let mut cell = format!("{passed}/{total}");
            for (count, label) in [(failed, "failed"), (xfail, "xfail"), (skipped, "skipped")] {
                if count > 0 {
                    let _ = write!(cell, ", {count} {label}");
                }
            }
            let _ = write!(
                out,
                "<td class=\"{class}\"><a href=\"#{}\">{cell}</a></td>",
                clause_anchor(run, index)
            );
        }
        let _ = writeln!(
            out,
            "<td class=\"clause-text\">{}</td></tr>",
            escape(clause.text.as_deref().unwrap_or_default())
        );
    }
    out.push_str("</table>\n");
    out
}

/// One run's sections: its failures, expected failures, cache breaks, the
/// cases by clause and every case.
fn run_sections(
    run: usize,
    report: &PageReport,
    clauses: &[ClauseRow],
    read_source: &dyn Fn(&str) -> Option<String>,
) -> String {
    let mut out = format!(
        "<h2 id=\"r{run}\">{}</h2>\n",
        escape(&format!("Run: {}", report.heading()))
    );
    let failing: Vec<(usize, &PageCase)> = report
        .cases
        .iter()
        .enumerate()
        .filter(|(_, case)| matches!(case.verdict(), Verdict::Failed | Verdict::UnexpectedPass))
        .collect();
    let _ = writeln!(
        out,
        "<h3 id=\"r{run}-failures\">Failures ({})</h3>",
        failing.len()
    );
    if failing.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>\n");
    }
    for (index, case) in failing {
        out.push_str(&failure_block(run, index, case, report, read_source));
    }
    out.push_str(&expected_failures(run, report));
    out.push_str(&cache_breaks(run, report));
    out.push_str(&cases_by_clause(run, report, clauses));
    out.push_str(&every_case(run, report));
    out
}

/// The command that runs this one case again on the same implementation.
fn replay_command(report: &PageReport, case: &PageCase) -> String {
    let path = case
        .scenario
        .clone()
        .unwrap_or_else(|| format!("scenarios/{}.toml", case.id));
    let adapter = if report.command.is_empty() {
        "ADAPTER"
    } else {
        report.command.as_str()
    };
    format!(
        "dshc check --adapter {} {}",
        shell_word(adapter),
        shell_word(&path)
    )
}

fn failure_block(
    run: usize,
    index: usize,
    case: &PageCase,
    report: &PageReport,
    read_source: &dyn Fn(&str) -> Option<String>,
) -> String {
    let (_, word) = verdict_style(case.verdict());
    let mut out = format!(
        "<div class=\"case\" id=\"{}\">\n<h4>{word} <code>{}</code></h4>\n",
        case_anchor(run, index),
        escape(&case.id)
    );
    let _ = writeln!(
        out,
        "<p>Outcome: <b>{}</b>{}. Covers: {}.</p>",
        case.outcome.outcome.tag(),
        match case.outcome.outcome {
            OutcomeKind::Fail | OutcomeKind::Pass => String::new(),
            _ => format!(" — {}", escape(&case.detail())),
        },
        escape(&case.covers.join(", "))
    );
    if case.verdict() == Verdict::UnexpectedPass {
        let _ = writeln!(
            out,
            "<p>Passes, but is listed as an expected failure (remove it from the list): {}</p>",
            escape(case.expected_failure.as_deref().unwrap_or_default())
        );
    }
    out.push_str(&mismatch_tables(&case.outcome.mismatches));
    let _ = writeln!(
        out,
        "<p>Replay:</p>\n<pre class=\"replay\"><code>{}</code></pre>",
        escape(&replay_command(report, case))
    );
    out.push_str(&scenario_source(case, read_source));
    out.push_str("</div>\n");
    out
}

fn scenario_source(case: &PageCase, read_source: &dyn Fn(&str) -> Option<String>) -> String {
    let Some(path) = &case.scenario else {
        return "<p class=\"muted\">The report names no scenario file (an older report).</p>\n"
            .into();
    };
    match read_source(path) {
        Some(source) => format!(
            "<details open><summary>Scenario source: <code>{}</code></summary>\n\
             <pre class=\"source\">{}</pre></details>\n",
            escape(path),
            escape(&source)
        ),
        None => format!(
            "<p class=\"muted\">Scenario <code>{}</code> (not readable where this page was written).</p>\n",
            escape(path)
        ),
    }
}

/// Each mismatch: where, both sides, and a line diff of the two.
fn mismatch_tables(mismatches: &[PageMismatch]) -> String {
    let mut out = String::new();
    for mismatch in mismatches {
        let _ = writeln!(
            out,
            "<table class=\"mismatch\">\n<tr><th>Path</th><td><code>{}</code></td></tr>\n\
             <tr><th>Expected</th><td><pre class=\"expected\">{}</pre></td></tr>\n\
             <tr><th>Observed</th><td><pre class=\"observed\">{}</pre></td></tr>\n\
             <tr><th>Diff</th><td><pre class=\"diff\">{}</pre></td></tr>\n</table>",
            escape(&mismatch.path),
            escape(&mismatch.expected),
            escape(&mismatch.actual),
            line_diff(&mismatch.expected, &mismatch.actual)
        );
    }
    out
}

/// A line diff as HTML: `-` expected lines, `+` observed ones, ` ` shared.
fn line_diff(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let (class, sign) = match change.tag() {
            similar::ChangeTag::Delete => ("del", '-'),
            similar::ChangeTag::Insert => ("ins", '+'),
            similar::ChangeTag::Equal => ("eq", ' '),
        };
        let line = change.value();
        let line = line.strip_suffix('\n').unwrap_or(line);
        let _ = write!(
            out,
            "<span class=\"{class}\">{sign} {}</span>",
            escape(line)
        );
    }
    out
}

fn expected_failures(run: usize, report: &PageReport) -> String {
    let listed: Vec<(usize, &PageCase)> = report
        .cases
        .iter()
        .enumerate()
        .filter(|(_, case)| case.verdict() == Verdict::ExpectedFailure)
        .collect();
    let mut out = format!(
        "<h3 id=\"r{run}-xfail\">Expected failures ({})</h3>\n",
        listed.len()
    );
    if listed.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>\n");
        return out;
    }
    out.push_str(
        "<table class=\"xfails\">\n<tr><th>Case</th><th>Outcome</th><th>Evidence</th></tr>\n",
    );
    for (index, case) in listed {
        let paths: Vec<&str> = case
            .outcome
            .mismatches
            .iter()
            .map(|mismatch| mismatch.path.as_str())
            .collect();
        let _ = writeln!(
            out,
            "<tr id=\"{}\"><td><code>{}</code></td><td>{} <span class=\"muted\">{}</span></td><td>{}</td></tr>",
            case_anchor(run, index),
            escape(&case.id),
            case.outcome.outcome.tag(),
            escape(&if paths.is_empty() {
                case.detail()
            } else {
                paths.join(", ")
            }),
            escape(case.expected_failure.as_deref().unwrap_or_default())
        );
    }
    out.push_str("</table>\n");
    out
}

fn cache_breaks(run: usize, report: &PageReport) -> String {
    let broken: Vec<(usize, &PageCase)> = report
        .cases
        .iter()
        .enumerate()
        .filter(|(_, case)| !case.cache_breaks.is_empty())
        .collect();
    let mut out = format!(
        "<h3 id=\"r{run}-cache\">Prompt-cache breaks ({})</h3>\n",
        broken.len()
    );
    if broken.is_empty() {
        out.push_str("<p class=\"muted\">No run broke the prompt cache.</p>\n");
        return out;
    }
    out.push_str("<table class=\"cache-breaks\">\n<tr><th>Case</th><th>Break</th></tr>\n");
    for (index, case) in broken {
        for described in &case.cache_breaks {
            let _ = writeln!(
                out,
                "<tr><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td></tr>",
                case_anchor(run, index),
                escape(&case.id),
                escape(described)
            );
        }
    }
    out.push_str("</table>\n");
    out
}

fn cases_by_clause(run: usize, report: &PageReport, clauses: &[ClauseRow]) -> String {
    let mut covering: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, case) in report.cases.iter().enumerate() {
        for clause in &case.covers {
            covering.entry(clause.as_str()).or_default().push(index);
        }
    }
    let mut out = String::from(
        "<h3>Cases by clause</h3>\n<table class=\"by-clause\">\n<tr><th>Clause</th><th>Cases</th></tr>\n",
    );
    for (clause_index, clause) in clauses.iter().enumerate() {
        let Some(cases) = covering.get(clause.id.as_str()) else {
            continue;
        };
        let _ = write!(
            out,
            "<tr id=\"{}\"><td><code>{}</code></td><td>",
            clause_anchor(run, clause_index),
            escape(&clause.id)
        );
        for &index in cases {
            let case = &report.cases[index];
            let (class, _) = verdict_style(case.verdict());
            let _ = write!(
                out,
                "<a class=\"{class}\" href=\"#{}\">{}</a> ",
                case_anchor(run, index),
                escape(&case.id)
            );
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn every_case(run: usize, report: &PageReport) -> String {
    let mut out = format!(
        "<h3 id=\"r{run}-cases\">Every case ({})</h3>\n<table class=\"cases\">\n<tr><th>Case</th><th>Verdict</th><th>Detail</th><th>Clauses</th></tr>\n",
        report.cases.len()
    );
    for (index, case) in report.cases.iter().enumerate() {
        let verdict = case.verdict();
        let (class, word) = verdict_style(verdict);
        // Failures and expected failures have their own block with the anchor.
        let anchored = matches!(verdict, Verdict::Passed | Verdict::Skipped);
        let _ = writeln!(
            out,
            "<tr{}><td>{}</td><td class=\"{class}\">{word}</td><td>{}</td><td>{}</td></tr>",
            if anchored {
                format!(" id=\"{}\"", case_anchor(run, index))
            } else {
                String::new()
            },
            if anchored {
                format!("<code>{}</code>", escape(&case.id))
            } else {
                format!(
                    "<a href=\"#{}\"><code>{}</code></a>",
                    case_anchor(run, index),
                    escape(&case.id)
                )
            },
            escape(&case.detail()),
            escape(&case.covers.join(", "))
        );
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests;
