//! Compliance reports for `dshc check`: JSON (the source of truth), JUnit XML
//! for CI systems, a Markdown table of spec clauses × implementations, and
//! the HTML page people read ([`html`], written from the JSON).

pub mod bench_charts;
pub mod html;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use dshc_scenario::protocol::ImplementationInfo;
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use crate::check::{CaseReport, OutcomeKind, Summary, Verdict};
use crate::coverage::Clause;
use crate::limits::MAX_FILE_STEM_CHARS;
use crate::partition::Partition;

/// One implementation's results over a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Who was checked.
    pub implementation: ImplementationInfo,
    /// The adapter command line.
    pub command: String,
    /// Which partition of the run this report is (`1/1`: the whole run).
    pub partition: Partition,
    /// Scenario files in the whole run, every partition's included.
    pub total: usize,
    /// Totals.
    pub summary: Summary,
    /// Every case, in scenario order.
    pub cases: Vec<CaseReport>,
}

/// The part of a JSON report the Markdown table needs (to merge reports).
#[derive(Clone, Debug, Deserialize)]
pub struct ReportDigest {
    /// Who was checked.
    pub implementation: ImplementationInfo,
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
    /// The outcome's kind.
    pub outcome: OutcomeTag,
    /// Expected-failure reason.
    #[serde(default)]
    pub expected_failure: Option<String>,
    /// The prompt-cache breaks of its run, in words.
    #[serde(default)]
    pub cache_breaks: Vec<String>,
}

/// `{"outcome": "<kind>", ...}` with the details left out.
#[derive(Clone, Debug, Deserialize)]
pub struct OutcomeTag {
    /// `pass`, `fail`, `skipped`, `errored`, `crashed` or `timed_out`.
    pub outcome: OutcomeKind,
}

impl CaseDigest {
    fn verdict(&self) -> Verdict {
        Verdict::of(self.outcome.outcome, self.expected_failure.is_some())
    }
}

impl Report {
    /// The JSON form.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// The digest [`markdown_matrix`] reads, as a JSON report reads back.
    pub fn digest(&self) -> ReportDigest {
        ReportDigest {
            implementation: self.implementation.clone(),
            cases: self
                .cases
                .iter()
                .map(|case| CaseDigest {
                    id: case.id.clone(),
                    covers: case.covers.clone(),
                    outcome: OutcomeTag {
                        outcome: case.outcome.kind(),
                    },
                    expected_failure: case.expected_failure.clone(),
                    cache_breaks: case.cache_breaks.clone(),
                })
                .collect(),
        }
    }

    /// The JUnit XML form: one test case per scenario, written by
    /// `quick-junit` (which also makes adapter text safe for XML).
    pub fn to_junit(&self) -> Result<String, quick_junit::SerializeError> {
        let name = self.implementation.name.as_str();
        let mut suite = TestSuite::new(name);
        for case in &self.cases {
            let status = match case.verdict() {
                Verdict::Passed => TestCaseStatus::success(),
                Verdict::Skipped => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(outcome_detail(case));
                    status
                }
                Verdict::ExpectedFailure => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(format!(
                        "expected failure: {}",
                        case.expected_failure.as_deref().unwrap_or_default()
                    ));
                    status
                }
                Verdict::UnexpectedPass => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(
                        "passed, but listed as an expected failure: remove it from the list",
                    );
                    status
                }
                Verdict::Failed => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(case.outcome.label());
                    status.set_description(outcome_detail(case));
                    status
                }
            };
            let mut test_case = TestCase::new(case.id.as_str(), status);
            test_case.set_classname(name);
            suite.add_test_case(test_case);
        }
        let mut report = quick_junit::Report::new("dshc");
        report.add_test_suite(suite);
        report.to_string()
    }
}

/// The same account of an outcome a person reads on the terminal.
fn outcome_detail(case: &CaseReport) -> String {
    crate::check::describe_outcome(&case.outcome)
}

/// Writing reports failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The clause catalog for the Markdown table.
    #[error(transparent)]
    Catalog(#[from] dshc_scenario::data_file::DataFileError),
    /// A report could not be serialized.
    #[error("cannot serialize the report: {0}")]
    Serialize(String),
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A file name for an implementation name: ASCII letters, digits, `-` and
/// `.` kept, everything else `_`. A name longer than
/// [`MAX_FILE_STEM_CHARS`] keeps its first 63 characters and gains a
/// 16-digit hash of the whole name, so long names stay distinct.
pub fn file_stem_for(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.len() <= MAX_FILE_STEM_CHARS {
        return stem;
    }
    // FNV-1a: stable across runs and platforms.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{}-{hash:016x}", &stem[..63])
}

/// Write `<stem>.json`, `<stem>.junit.xml`, `<stem>.md` and `index.html`
/// (the page, rendered from the JSON just written) into `dir`; returns the
/// files written. The JSON and JUnit reports do not need the clause catalog
/// and are written first: without a catalog, they are there and the error
/// names the catalog the table and the page needed.
pub fn write_reports(
    dir: &std::path::Path,
    report: &Report,
    catalog_path: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, ReportError> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let stem = file_stem_for(&report.implementation.name);
    let json = report
        .to_json()
        .map_err(|e| ReportError::Serialize(e.to_string()))?;
    let junit = report
        .to_junit()
        .map_err(|e| ReportError::Serialize(e.to_string()))?;
    let page_report: html::PageReport =
        serde_json::from_str(&json).map_err(|e| ReportError::Serialize(e.to_string()))?;
    let mut written = Vec::new();
    let mut write = |name: String, text: String| {
        let path = dir.join(name);
        dshc_scenario::data_file::replace_file(&path, &text).map_err(io(&path))?;
        written.push(path);
        Ok::<(), ReportError>(())
    };
    write(format!("{stem}.json"), json)?;
    write(format!("{stem}.junit.xml"), junit)?;
    let catalog = crate::coverage::load_catalog(catalog_path)?;
    write(
        format!("{stem}.md"),
        markdown_matrix(&catalog, &[report.digest()]),
    )?;
    write(
        "index.html".to_owned(),
        html::html_page(&catalog, &[page_report], &html::read_scenario_source),
    )?;
    Ok(written)
}

/// Why partition reports cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing was given.
    #[error("no report to merge")]
    Empty,
    /// A report of another implementation or command.
    #[error(
        "report {index} is of another run: its `{key}` is {theirs}, the first report's {first}"
    )]
    OtherRun {
        /// 1-based position of the report among those given.
        index: usize,
        /// The field that differs.
        key: &'static str,
        /// Its value there, as JSON.
        theirs: String,
        /// Its value in the first report, as JSON.
        first: String,
    },
    /// A report without a field every report has.
    #[error("report {index} has no `{field}`")]
    Missing {
        /// 1-based position of the report.
        index: usize,
        /// The field.
        field: &'static str,
    },
    /// A case without its position in the whole run.
    #[error("a case has no `position` (a report from before partitions?)")]
    NoPosition,
    /// Two reports hold one case.
    #[error("two reports hold the case at position {0}: merge each partition once")]
    Duplicate(u64),
    /// A report without its partition (written before reports carried it).
    #[error("report {0} does not say which partition it is (`partition`, `total`)")]
    NoPartition(usize),
    /// Two reports of one partition.
    #[error("two reports are partition {0}: merge each partition once")]
    PartitionTwice(String),
    /// Partitions left out.
    #[error("partitions {missing} of {count} are missing: the merge needs every partition")]
    Incomplete {
        /// The missing partitions' indices, comma-separated.
        missing: String,
        /// How many partitions the run has.
        count: u64,
    },
    /// A case that does not read as a case.
    #[error("a case does not read as a report's case: {0}")]
    BadCase(serde_json::Error),
    /// The merged report could not be written.
    #[error("cannot write the merged report: {0}")]
    Write(#[from] serde_json::Error),
}

/// Join the JSON reports of one implementation's partitions (`dshc check
/// --partition k/n`) into the whole run's report: the cases in their
/// unpartitioned order (`position`), the summary counted again from them.
/// The reports must be one run's (same implementation, command, partition
/// count and total) and every one of its partitions, each once. The result
/// is byte for byte the report an unpartitioned run writes.
pub fn merge_partition_reports(reports: &[serde_json::Value]) -> Result<String, MergeError> {
    let first = reports.first().ok_or(MergeError::Empty)?;
    let partition_of = |index: usize, report: &serde_json::Value| {
        serde_json::from_value::<Partition>(report["partition"].clone())
            .ok()
            .filter(|_| report["total"].is_u64())
            .ok_or(MergeError::NoPartition(index))
    };
    let count = partition_of(1, first)?.count;
    let mut seen = std::collections::BTreeSet::new();
    let mut cases: Vec<serde_json::Value> = Vec::new();
    let mut invalid = 0;
    for (index, report) in reports.iter().enumerate() {
        let index = index + 1;
        let partition = partition_of(index, report)?;
        for key in ["implementation", "command", "total"] {
            if report[key] != first[key] {
                return Err(MergeError::OtherRun {
                    index,
                    key,
                    theirs: report[key].to_string(),
                    first: first[key].to_string(),
                });
            }
        }
        if partition.count != count {
            return Err(MergeError::OtherRun {
                index,
                key: "partition",
                theirs: partition.to_string(),
                first: format!("of {count}"),
            });
        }
        if !seen.insert(partition.index) {
            return Err(MergeError::PartitionTwice(partition.to_string()));
        }
        let listed = report["cases"].as_array().ok_or(MergeError::Missing {
            index,
            field: "cases",
        })?;
        cases.extend(listed.iter().cloned());
        let counts = report["summary"].as_object().ok_or(MergeError::Missing {
            index,
            field: "summary",
        })?;
        invalid += counts
            .get("invalid")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| !seen.contains(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Incomplete {
            missing: missing.join(", "),
            count,
        });
    }
    let position = |case: &serde_json::Value| case["position"].as_u64();
    if cases.iter().any(|case| position(case).is_none()) {
        return Err(MergeError::NoPosition);
    }
    cases.sort_by_key(|case| position(case));
    if let Some(pair) = cases
        .windows(2)
        .find(|pair| position(&pair[0]) == position(&pair[1]))
    {
        return Err(MergeError::Duplicate(position(&pair[0]).unwrap_or(0)));
    }
    // Counted again from the cases: a summary as written is not trusted.
    let mut summary = Summary::default();
    for case in &cases {
        let digest: CaseDigest =
            serde_json::from_value(case.clone()).map_err(MergeError::BadCase)?;
        summary.add(digest.verdict());
    }
    summary.invalid = usize::try_from(invalid).unwrap_or(usize::MAX);
    let mut merged = first.clone();
    merged["partition"] = serde_json::to_value(Partition::WHOLE)?;
    merged["summary"] = serde_json::to_value(summary)?;
    merged["cases"] = serde_json::Value::Array(cases);
    Ok(serde_json::to_string_pretty(&merged)? + "\n")
}

/// Text safe inside a Markdown table cell: `|` escaped, line breaks and
/// other control characters as spaces.
fn markdown_cell(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '|' => "\\|".to_string(),
            c if c.is_control() => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// A Markdown table: one row per clause, one column per implementation; each
/// cell counts the covering scenarios that passed.
pub fn markdown_matrix(catalog: &[Clause], reports: &[ReportDigest]) -> String {
    let mut out = String::from("| Clause |");
    for report in reports {
        let heading = format!(
            "{} {}",
            report.implementation.name, report.implementation.version
        );
        out.push_str(&format!(" {} |", markdown_cell(&heading)));
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
        out.push_str(&format!("| `{}` |", markdown_cell(&clause.id)));
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
    out.push_str(&markdown_cache_breaks(reports));
    out
}

/// The prompt-cache breaks of every run, per implementation (nothing when
/// no run breaks the cache).
fn markdown_cache_breaks(reports: &[ReportDigest]) -> String {
    let mut out = String::new();
    for report in reports {
        let broken: Vec<&CaseDigest> = report
            .cases
            .iter()
            .filter(|case| !case.cache_breaks.is_empty())
            .collect();
        if broken.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n## Prompt-cache breaks: {} {}\n\n| Scenario | Break |\n|---|---|\n",
            markdown_cell(&report.implementation.name),
            markdown_cell(&report.implementation.version)
        ));
        for case in broken {
            for described in &case.cache_breaks {
                out.push_str(&format!(
                    "| `{}` | {} |\n",
                    markdown_cell(&case.id),
                    markdown_cell(described)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CaseReport, Outcome, Summary};
    use dshc_oracle::outcome::NotRun;

    fn report(name: &str, outcome: Outcome) -> Report {
        Report {
            implementation: ImplementationInfo {
                name: name.into(),
                version: "1".into(),
                language: "x".into(),
                homepage: None,
            },
            command: "x".into(),
            partition: Partition::WHOLE,
            total: 1,
            summary: Summary::default(),
            cases: vec![CaseReport {
                position: 0,
                id: "a".into(),
                covers: vec!["03:R4".into()],
                scenario: "scenarios/a.toml".into(),
                outcome,
                expected_failure: None,
                cache_breaks: Vec::new(),
            }],
        }
    }

    #[test]
    fn reports_are_written_without_a_catalog_and_for_a_long_name() {
        let dir = std::env::temp_dir().join(format!("dshc-reports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let missing = dir.join("no-such-clauses.toml");
        let error = write_reports(&dir, &report("impl", Outcome::Pass), &missing).unwrap_err();
        assert!(
            error.to_string().contains("no-such-clauses.toml"),
            "{error}"
        );
        assert!(dir.join("impl.json").is_file() && dir.join("impl.junit.xml").is_file());
        let catalog = dir.join("clauses.toml");
        std::fs::write(&catalog, "[[clause]]\nid = \"03:R4\"\ntext = \"t\"\n").unwrap();
        let long = "x".repeat(300);
        let written = write_reports(&dir, &report(&long, Outcome::Pass), &catalog).unwrap();
        assert_eq!(written.len(), 4, "json, junit, markdown and the page");
        let stem = file_stem_for(&long);
        assert_eq!(stem.len(), MAX_FILE_STEM_CHARS);
        assert_ne!(stem, file_stem_for(&"x".repeat(301)));
        assert!(written.iter().all(|path| path.is_file()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn adapter_text_with_control_characters_makes_well_formed_junit() {
        let context = "bad \u{1}\u{1b}[0m bytes <&>\u{0}".to_string();
        let junit = report("impl\u{7}", Outcome::NotRun(NotRun::Errored { context }))
            .to_junit()
            .expect("serializes");
        assert!(
            !junit.contains("&#1;") && !junit.contains("&#x1;"),
            "{junit}"
        );
        assert!(
            !junit
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')),
            "{junit}"
        );
        assert!(junit.contains("&lt;&amp;&gt;"), "{junit}");
    }

    #[test]
    fn a_pipe_in_an_implementation_name_keeps_the_markdown_table_whole() {
        let catalog = vec![Clause {
            id: "03:R4".into(),
            text: "t".into(),
            level: Default::default(),
            excluded: None,
            signals: Vec::new(),
        }];
        let digest = report("a|b", Outcome::Pass).digest();
        let table = markdown_matrix(&catalog, &[digest]);
        let header = table.lines().next().expect("a header");
        assert_eq!(header, "| Clause | a\\|b 1 |");
        assert_eq!(header.matches(" |").count(), 2, "{table}");
    }
}
