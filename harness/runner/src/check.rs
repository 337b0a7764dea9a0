//! One way to run a scenario: [`check_with`] (and [`check`] for the
//! reference), shared by `cargo test`, the CLI and the fuzzers; plus the run
//! loop over many scenarios with expected failures.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::adapter::{Implementation, Ran, Reference};
use dshc_oracle::compare::{Mismatch, compare};
use dshc_oracle::invariants::judge_loop_run;
use dshc_oracle::{cache_report, normalize};
use dshc_scenario::data_file::{DataFileError, read_toml};
use dshc_scenario::load::LoadedScenario;
use dshc_scenario::protocol::{CaseResult, Level, LoopRun};

pub use dshc_oracle::outcome::{NotRun, Outcome, OutcomeKind};

/// Run a scenario on the reference model and compare.
pub fn check(scenario: &LoadedScenario) -> Outcome {
    check_with(scenario, &mut Reference)
}

/// Run a scenario on an implementation and compare. A loop result of a
/// real-time implementation is compared after redacting message ids and
/// event times on both sides ([`dshc_oracle::normalize`]); everything else
/// is compared exactly.
pub fn check_with(scenario: &LoadedScenario, implementation: &mut dyn Implementation) -> Outcome {
    check_reporting_cache(scenario, implementation).0
}

/// [`check_with`], also returning the prompt-cache breaks of a loop run,
/// each in words (see [`dshc_oracle::cache_report`]).
pub fn check_reporting_cache(
    scenario: &LoadedScenario,
    implementation: &mut dyn Implementation,
) -> (Outcome, Vec<String>) {
    let ran = implementation.run(&scenario.case);
    judge(scenario, implementation.real_time(), ran)
}

/// [`check_reporting_cache`], running the case twice: a determinism check
/// across languages, since the same case must give the same bytes. The case
/// fails when the two runs end differently (one observed and one crashed,
/// errored, timed out or was skipped, or two different such ends), or when
/// both observed and their observations differ (after redaction, for a
/// real-time implementation), with the first divergent byte. Otherwise the
/// first run is judged.
pub fn check_twice(
    scenario: &LoadedScenario,
    implementation: &mut dyn Implementation,
) -> (Outcome, Vec<String>) {
    let first = implementation.run(&scenario.case);
    let second = implementation.run(&scenario.case);
    let real_time = implementation.real_time();
    if let Some(mismatch) = runs_differ(&first, &second, real_time) {
        let outcome = Outcome::Fail {
            mismatches: vec![mismatch],
        };
        return (outcome, Vec::new());
    }
    judge(scenario, real_time, first)
}

/// How two runs of one case differ, if they do.
fn runs_differ(first: &Ran, second: &Ran, real_time: bool) -> Option<Mismatch> {
    let fingerprint = |result: &CaseResult| {
        if real_time {
            normalize::real_time_fingerprint(result)
        } else {
            serde_json::to_string(result).ok()
        }
    };
    match (first, second) {
        (Ran::Observed(one), Ran::Observed(two)) => match (fingerprint(one), fingerprint(two)) {
            (Some(one), Some(two)) if one == two => None,
            (Some(one), Some(two)) => Some(first_divergence(&one, &two)),
            _ => Some(Mismatch {
                path: "twice (an observation that cannot be written as JSON)".into(),
                expected: "two observations written as JSON".into(),
                actual: "a run whose observation cannot be written".into(),
            }),
        },
        (Ran::NotRun(one), Ran::NotRun(two)) if one.kind() == two.kind() => None,
        _ => Some(Mismatch {
            path: "twice (the two runs ended differently)".into(),
            expected: format!("first run: {}", ran_end(first)),
            actual: format!("second run: {}", ran_end(second)),
        }),
    }
}

/// How a run ended, in words.
fn ran_end(ran: &Ran) -> String {
    match ran {
        Ran::Observed(_) => "observed".into(),
        Ran::NotRun(not_run) => not_run.to_string(),
    }
}

/// The first byte at which two runs' observations differ, with 60 bytes of
/// context on each side.
fn first_divergence(one: &str, two: &str) -> Mismatch {
    let byte = one
        .bytes()
        .zip(two.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(one.len().min(two.len()));
    let around = |text: &str| {
        let mut start = byte.saturating_sub(60).min(text.len());
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (byte + 60).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        text[start..end].to_owned()
    };
    Mismatch {
        path: format!("twice (first divergent byte {byte} of the observations)"),
        expected: around(one),
        actual: around(two),
    }
}

/// The outcome of what a run produced.
fn judge(scenario: &LoadedScenario, real_time: bool, ran: Ran) -> (Outcome, Vec<String>) {
    let mut result = match ran {
        Ran::Observed(result) => result,
        Ran::NotRun(not_run) => return (Outcome::NotRun(not_run), Vec::new()),
    };
    // dshc judges every implementation's run by the same invariants, before
    // anything is redacted.
    let violations = match (&result.run, &scenario.case.world) {
        (Some(run), Some(world)) => judge_loop_run(world, run),
        _ => Vec::new(),
    };
    let cache_breaks = result.run.as_ref().map(cache_breaks).unwrap_or_default();
    let mismatches = match result.run.as_mut() {
        Some(run) if real_time => {
            normalize::redact_run(run);
            let mut redacted = scenario.scenario.clone();
            if let Some(expect) = redacted.expect.as_deref_mut() {
                normalize::redact_expectations(expect);
            }
            compare(&redacted, &result, &violations)
        }
        _ => compare(&scenario.scenario, &result, &violations),
    };
    let outcome = if mismatches.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail { mismatches }
    };
    (outcome, cache_breaks)
}

/// A loop run's prompt-cache breaks, each in words.
fn cache_breaks(run: &LoopRun) -> Vec<String> {
    cache_report::report_run(run)
        .breaks()
        .filter_map(|row| {
            let cache_break = row.cache_break.as_ref()?;
            Some(format!(
                "request {} after request {}: {}",
                row.request,
                row.after_request.unwrap_or(0),
                cache_report::describe_element(&cache_break.element)
            ))
        })
        .collect()
}

/// A case an implementation is known to fail, and why.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFailure {
    /// Scenario id.
    pub id: String,
    /// Why it fails, with the evidence.
    pub reason: String,
}

/// A known way an implementation disagrees with the reference on generated
/// cases (`dshc diff`): a disagreement whose adapter result shows
/// `adapter_shows` is this one, counted but not shrunk again.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KnownDisagreement {
    /// The bundled scenario that pins it (an expected failure).
    pub id: String,
    /// Text that appears in the adapter's result (its JSON) exactly when
    /// this is the cause: an error message, say.
    pub adapter_shows: String,
    /// Why, with the evidence.
    pub reason: String,
}

impl KnownDisagreement {
    /// Whether an adapter's result shows this cause.
    pub fn shown_by(&self, result: &CaseResult) -> bool {
        serde_json::to_string(result).is_ok_and(|text| text.contains(&self.adapter_shows))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedFailures {
    #[serde(default)]
    case: Vec<ExpectedFailure>,
    #[serde(default)]
    diff: Vec<KnownDisagreement>,
}

/// Read an expected-failures file: the scenarios, then the known
/// disagreements on generated cases.
pub fn load_expected_failures(path: &Path) -> Result<Vec<ExpectedFailure>, DataFileError> {
    let parsed: ExpectedFailures = read_toml(path)?;
    Ok(parsed.case)
}

/// The known disagreements (`[[diff]]` tables) of an expected-failures file.
pub fn load_known_disagreements(path: &Path) -> Result<Vec<KnownDisagreement>, DataFileError> {
    let parsed: ExpectedFailures = read_toml(path)?;
    Ok(parsed.diff)
}

/// How one case ended up, once expected failures are taken into account.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// 0-based position in the whole (unpartitioned) run's scenario order.
    pub position: usize,
    /// Scenario id.
    pub id: String,
    /// Spec clauses it covers.
    pub covers: Vec<String>,
    /// The scenario file, as the run named it (the HTML report shows it).
    pub scenario: String,
    /// What happened.
    pub outcome: Outcome,
    /// The reason, when the case is listed as an expected failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_failure: Option<String>,
    /// The prompt-cache breaks of its run, in words (loop cases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_breaks: Vec<String>,
}

/// How a case counts in the closing line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Passed.
    Passed,
    /// Failed (including errors, crashes, timeouts and unexpected passes).
    Failed,
    /// Skipped by the implementation.
    Skipped,
    /// Failed as the expected-failures file says.
    ExpectedFailure,
    /// Listed as an expected failure but passed: fails the run.
    UnexpectedPass,
}

impl Verdict {
    /// How a case with this outcome counts, listed as an expected failure
    /// or not.
    pub fn of(outcome: OutcomeKind, listed_as_failing: bool) -> Verdict {
        match (outcome, listed_as_failing) {
            (OutcomeKind::Pass, false) => Verdict::Passed,
            (OutcomeKind::Pass, true) => Verdict::UnexpectedPass,
            (OutcomeKind::Skipped, _) => Verdict::Skipped,
            (_, true) => Verdict::ExpectedFailure,
            (_, false) => Verdict::Failed,
        }
    }
}

impl CaseReport {
    /// How this case counts.
    pub fn verdict(&self) -> Verdict {
        Verdict::of(self.outcome.kind(), self.expected_failure.is_some())
    }
}

/// Totals for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Passed.
    pub passed: usize,
    /// Failed, errored, crashed, timed out, or passed while listed as expected to fail.
    pub failed: usize,
    /// Skipped by the implementation.
    pub skipped: usize,
    /// Failed as expected.
    pub expected_failures: usize,
    /// Scenario files that could not be loaded.
    pub invalid: usize,
    /// Cases left unrun because the run stopped at its first failure
    /// ([`SuiteOptions::fail_fast`]). Not in reports: a stopped run writes none.
    #[serde(skip)]
    pub not_run: usize,
}

/// How a suite is run.
#[derive(Debug, Clone, Copy, Default)]
pub struct SuiteOptions {
    /// Run every case twice and fail a case whose two runs differ.
    pub twice: bool,
    /// Stop at the first failing case: the cases not yet started are not
    /// run (counted in [`Summary::not_run`]). For callers that need only
    /// whether the suite passes, such as a mutation-testing run.
    pub fail_fast: bool,
}

impl Summary {
    /// Count one case.
    pub fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Passed => self.passed += 1,
            Verdict::Failed | Verdict::UnexpectedPass => self.failed += 1,
            Verdict::Skipped => self.skipped += 1,
            Verdict::ExpectedFailure => self.expected_failures += 1,
        }
    }

    /// The closing line: `N passed, N failed`, then any other counts.
    pub fn line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        for (count, label) in [
            (self.skipped, "skipped"),
            (self.expected_failures, "expected failures"),
            (self.invalid, "invalid"),
            (self.not_run, "not run (stopped at the first failure)"),
        ] {
            if count > 0 {
                line.push_str(&format!(", {count} {label}"));
            }
        }
        line
    }
}

/// Why a gate that ran must still fail: it required a level whose cases
/// were skipped, or nothing ran at all. `None` when neither.
pub fn gate_shortfall(
    scenarios: &[LoadedScenario],
    cases: &[CaseReport],
    required: &[Level],
) -> Option<String> {
    for &level in required {
        let skipped: Vec<(&LoadedScenario, &CaseReport)> = scenarios
            .iter()
            .zip(cases)
            .filter(|(scenario, case)| {
                scenario.scenario.level == level && case.verdict() == Verdict::Skipped
            })
            .collect();
        if let Some((scenario, case)) = skipped.first() {
            return Some(format!(
                "--require-level {level}: {} {level}-level case(s) were skipped, the first: {}",
                skipped.len(),
                describe(scenario, &case.outcome)
            ));
        }
    }
    let ran = cases.iter().any(|case| case.verdict() != Verdict::Skipped);
    (!ran && !cases.is_empty()).then(|| {
        format!(
            "every one of the {} cases was skipped: the implementation ran nothing, so nothing was gated",
            cases.len()
        )
    })
}

/// Run every scenario on `implementation`, in order, each with its
/// expected-failure listing taken into account; `each` sees every case as it
/// finishes. One failing case never stops the others, unless
/// [`SuiteOptions::fail_fast`] asks for it.
pub fn run_suite(
    scenarios: &[LoadedScenario],
    implementation: &mut dyn Implementation,
    expected: &[ExpectedFailure],
    options: SuiteOptions,
    mut each: impl FnMut(&LoadedScenario, &CaseReport),
) -> (Vec<CaseReport>, Summary) {
    let mut summary = Summary::default();
    let mut cases = Vec::with_capacity(scenarios.len());
    for (position, scenario) in scenarios.iter().enumerate() {
        let report = check_case(position, scenario, implementation, expected, options.twice);
        let flow = tally(&mut summary, options, &report);
        each(scenario, &report);
        cases.push(report);
        if flow.is_break() {
            break;
        }
    }
    summary.not_run = scenarios.len() - cases.len();
    (cases, summary)
}

/// Count one case; break when the run stops at its first failure.
fn tally(
    summary: &mut Summary,
    options: SuiteOptions,
    report: &CaseReport,
) -> std::ops::ControlFlow<()> {
    let verdict = report.verdict();
    summary.add(verdict);
    let failed = matches!(verdict, Verdict::Failed | Verdict::UnexpectedPass);
    if options.fail_fast && failed {
        std::ops::ControlFlow::Break(())
    } else {
        std::ops::ControlFlow::Continue(())
    }
}

/// [`run_suite`] over a pool of implementations (one adapter process
/// each, say), one thread per member: each case runs on the member of the
/// thread that draws it, and `each`, the reports and the summary see the cases in order, so
/// the output is the same for any pool size. Cases must not depend on each
/// other, which a fresh registry per case already guarantees.
pub fn run_suite_pooled<I: Implementation + Send>(
    scenarios: &[LoadedScenario],
    pool: &mut [I],
    expected: &[ExpectedFailure],
    options: SuiteOptions,
    mut each: impl FnMut(&LoadedScenario, &CaseReport),
) -> (Vec<CaseReport>, Summary) {
    if let [only] = pool {
        return run_suite(scenarios, only, expected, options, each);
    }
    let mut summary = Summary::default();
    let mut cases = Vec::with_capacity(scenarios.len());
    crate::parallel::for_each_ordered_on(
        scenarios.iter().enumerate(),
        pool,
        |implementation, (position, scenario)| {
            let report = check_case(position, scenario, implementation, expected, options.twice);
            (scenario, report)
        },
        |(scenario, report)| {
            let flow = tally(&mut summary, options, &report);
            each(scenario, &report);
            cases.push(report);
            flow
        },
    );
    summary.not_run = scenarios.len() - cases.len();
    (cases, summary)
}

fn check_case(
    position: usize,
    scenario: &LoadedScenario,
    implementation: &mut dyn Implementation,
    expected: &[ExpectedFailure],
    twice: bool,
) -> CaseReport {
    let checked = crate::contain::contained(|| {
        if twice {
            check_twice(scenario, implementation)
        } else {
            check_reporting_cache(scenario, implementation)
        }
    });
    let (outcome, cache_breaks) = checked.unwrap_or_else(|panic| {
        implementation.recover_from_panic();
        let context = format!("panicked while the case ran or was judged: {panic}");
        (Outcome::NotRun(NotRun::Crashed { context }), Vec::new())
    });
    CaseReport {
        position,
        id: scenario.id.clone(),
        covers: scenario.scenario.covers.clone(),
        scenario: scenario.path.display().to_string(),
        outcome,
        cache_breaks,
        expected_failure: expected
            .iter()
            .find(|e| e.id == scenario.id)
            .map(|e| e.reason.clone()),
    }
}

/// A readable account of an outcome: each mismatch with a line diff.
pub fn describe(scenario: &LoadedScenario, outcome: &Outcome) -> String {
    let header = format!("{} ({})", scenario.id, scenario.path.display());
    match outcome {
        Outcome::Fail { .. } => format!("{header}: {}", describe_outcome(outcome)),
        other => format!("{header}: {}", describe_outcome(other)),
    }
}

/// The account of an outcome without the scenario's name: what the
/// terminal shows after it, and what the JUnit report carries.
pub fn describe_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "pass".into(),
        Outcome::Fail { mismatches } => {
            let mut out = format!("{} mismatch(es)\n", mismatches.len());
            for mismatch in mismatches {
                out.push_str(&format!("  {}:\n", mismatch.path));
                out.push_str(&diff_text(&mismatch.expected, &mismatch.actual));
            }
            out
        }
        Outcome::NotRun(not_run) => not_run.to_string(),
    }
}

/// A unified line diff, `-` expected and `+` actual, with three lines of
/// context around each change (equal stretches are elided), indented for
/// nesting.
pub fn diff_text(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let mut out = String::new();
    for (index, group) in diff.grouped_ops(3).iter().enumerate() {
        if index > 0 {
            out.push_str("    ...\n");
        }
        // The end-of-line marker only means something when the two sides
        // differ in it.
        let newline_differs = expected.ends_with('\n') != actual.ends_with('\n');
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => "-",
                    similar::ChangeTag::Insert => "+",
                    similar::ChangeTag::Equal => " ",
                };
                let line = change.value();
                out.push_str(&format!("    {sign} {}", escape_controls(line)));
                if !line.ends_with('\n') {
                    out.push('\n');
                    if newline_differs {
                        out.push_str("    \\ no newline at end\n");
                    }
                }
            }
        }
    }
    out
}

/// Show control characters other than the line's own newline, so that
/// whitespace differences are visible.
fn escape_controls(line: &str) -> String {
    let (body, newline) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
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

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_scenario::load::parse_scenario;
    use dshc_scenario::protocol::ImplementationInfo;

    /// An implementation that plays back a fixed sequence of runs.
    struct Scripted(Vec<Ran>);

    impl Implementation for Scripted {
        fn info(&mut self) -> Option<ImplementationInfo> {
            None
        }

        fn run(&mut self, _case: &dshc_scenario::protocol::Case) -> Ran {
            self.0.remove(0)
        }
    }

    fn scenario() -> LoadedScenario {
        let source = r#"
format = 2
title = "one assembly"
covers = ["02:A1.1"]

[[steps]]
do = "section"
name = "a"
order = 1
text = "A"

[[steps]]
do = "assemble"
"#;
        parse_scenario(Path::new("twice.toml"), source).expect("a valid scenario")
    }

    fn observed(scenario: &LoadedScenario) -> Ran {
        Ran::Observed(Box::new(
            dshc_reference::run_case(&scenario.case).expect("a valid case"),
        ))
    }

    fn crashed() -> Ran {
        Ran::NotRun(NotRun::Crashed {
            context: "gone".into(),
        })
    }

    #[test]
    fn twice_passes_two_equal_observations() {
        let scenario = scenario();
        let runs = vec![observed(&scenario), observed(&scenario)];
        assert_eq!(check_twice(&scenario, &mut Scripted(runs)).0, Outcome::Pass);
    }

    #[test]
    fn twice_fails_when_the_second_run_crashes() {
        let scenario = scenario();
        let runs = vec![observed(&scenario), crashed()];
        let Outcome::Fail { mismatches } = check_twice(&scenario, &mut Scripted(runs)).0 else {
            panic!("a crashed second run must fail the case");
        };
        assert_eq!(mismatches[0].path, "twice (the two runs ended differently)");
        assert_eq!(mismatches[0].actual, "second run: crashed: gone");
    }

    #[test]
    fn twice_fails_when_the_first_run_crashes_and_the_second_observes() {
        let scenario = scenario();
        let runs = vec![crashed(), observed(&scenario)];
        assert!(matches!(
            check_twice(&scenario, &mut Scripted(runs)).0,
            Outcome::Fail { .. }
        ));
    }

    #[test]
    fn twice_fails_on_observations_that_differ() {
        let scenario = scenario();
        let mut other = dshc_reference::run_case(&scenario.case).expect("a valid case");
        other.observations[1].prompt =
            Some(dshc_scenario::protocol::Rendered::Text("changed".into()));
        let runs = vec![observed(&scenario), Ran::Observed(Box::new(other))];
        let Outcome::Fail { mismatches } = check_twice(&scenario, &mut Scripted(runs)).0 else {
            panic!("differing observations must fail the case");
        };
        assert!(
            mismatches[0]
                .path
                .starts_with("twice (first divergent byte")
        );
    }

    #[test]
    fn twice_reports_two_equal_ends_as_that_end() {
        let scenario = scenario();
        let runs = vec![crashed(), crashed()];
        assert!(matches!(
            check_twice(&scenario, &mut Scripted(runs)).0,
            Outcome::NotRun(NotRun::Crashed { .. })
        ));
    }

    /// An implementation whose first case panics mid-run; later cases observe.
    struct PanicsOnce {
        runs: u32,
        recoveries: u32,
    }

    impl Implementation for PanicsOnce {
        fn info(&mut self) -> Option<ImplementationInfo> {
            None
        }

        fn run(&mut self, case: &dshc_scenario::protocol::Case) -> Ran {
            self.runs += 1;
            if self.runs == 1 {
                panic!("the first case breaks");
            }
            Ran::Observed(Box::new(
                dshc_reference::run_case(case).expect("a valid case"),
            ))
        }

        fn recover_from_panic(&mut self) {
            self.recoveries += 1;
        }
    }

    #[test]
    fn fail_fast_stops_at_the_first_failure_and_counts_what_did_not_run() {
        let scenarios = [scenario(), scenario(), scenario()];
        let options = SuiteOptions {
            fail_fast: true,
            ..SuiteOptions::default()
        };
        let fresh = || PanicsOnce {
            runs: 0,
            recoveries: 0,
        };
        let mut implementation = fresh();
        let (cases, summary) = run_suite(&scenarios, &mut implementation, &[], options, |_, _| {});
        assert_eq!(cases.len(), 1);
        assert_eq!((summary.failed, summary.not_run), (1, 2));
        assert_eq!(implementation.runs, 1, "nothing runs after the failure");
        assert!(
            summary
                .line()
                .ends_with(", 2 not run (stopped at the first failure)"),
            "{}",
            summary.line()
        );
        // A pool stops too; the cases it reports are still a prefix, in order.
        let mut pool = [fresh(), fresh()];
        let (cases, summary) = run_suite_pooled(&scenarios, &mut pool, &[], options, |_, _| {});
        assert!(
            summary.failed >= 1 && cases.len() < scenarios.len(),
            "{summary:?}"
        );
        assert_eq!(summary.not_run, scenarios.len() - cases.len());
        let positions: Vec<usize> = cases.iter().map(|case| case.position).collect();
        assert_eq!(positions, (0..cases.len()).collect::<Vec<_>>());
        // Without it, the run goes on past the failure.
        let (cases, summary) = run_suite(
            &scenarios,
            &mut fresh(),
            &[],
            SuiteOptions::default(),
            |_, _| {},
        );
        assert_eq!((cases.len(), summary.not_run), (3, 0));
    }

    #[test]
    fn a_panic_in_one_case_is_its_crash_and_the_run_goes_on() {
        let scenarios = [scenario(), scenario()];
        let mut implementation = PanicsOnce {
            runs: 0,
            recoveries: 0,
        };
        let (cases, summary) = run_suite(
            &scenarios,
            &mut implementation,
            &[],
            SuiteOptions::default(),
            |_, _| {},
        );
        let Outcome::NotRun(NotRun::Crashed { context }) = &cases[0].outcome else {
            panic!(
                "the panicking case must be crashed, not {:?}",
                cases[0].outcome
            );
        };
        assert!(context.ends_with("the first case breaks"), "{context}");
        assert_eq!(cases[1].outcome, Outcome::Pass);
        assert_eq!((summary.passed, summary.failed), (1, 1));
        assert_eq!(
            implementation.recoveries, 1,
            "the panicked case's state is dropped"
        );
    }
}
