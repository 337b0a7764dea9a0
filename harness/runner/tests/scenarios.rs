//! Every scenario file is its own named test (libtest-mimic), twice:
//!
//! - `reference::<id>`: the case runs twice on the reference and must pass,
//!   with byte-identical observations (the same check as `dshc check
//!   --twice`, so a second run that crashes or differs fails);
//! - `upstream::<id>`: the upstream gate. The case runs on the published
//!   upstream packages through `adapters/node-dsh/` (which installs its
//!   pinned npm packages on first use) and must pass, or be listed with its
//!   evidence in `adapters/node-dsh/expected-failures.toml`; a listed case
//!   that passes fails, so the list never goes stale, and a skipped case
//!   fails too.
//!
//! `cargo test` and `cargo nextest run` list, filter and report them one by
//! one (`-- reference::` runs only the reference). Set `DSHC_BLESS=1` to
//! rewrite a failing reference case's expectations from the reference.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::adapter::{External, Implementation, Reference};
use dshc_runner::check::{
    CaseReport, ExpectedFailure, Outcome, SuiteOptions, Verdict, check_twice, describe,
    load_expected_failures, run_suite_pooled,
};
use dshc_scenario::load::{LoadedScenario, discover, load_scenario, scenario_id};
use libtest_mimic::{Arguments, Failed, Trial};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() {
    let arguments = Arguments::from_args();
    let found = discover(&[repository().join("scenarios")]);
    let mut trials: Vec<Trial> = found
        .errors
        .into_iter()
        .map(|error| {
            Trial::test(format!("discover::{}", error.path.display()), move || {
                Err(Failed::from(error.to_string()))
            })
        })
        .collect();
    let upstream = Arc::new(UpstreamRun::default());
    trials.extend(found.files.iter().cloned().map(reference_trial));
    trials.push(upstream_clock_trial(Arc::clone(&upstream)));
    trials.extend(
        found
            .files
            .iter()
            .map(|path| upstream_trial(path, Arc::clone(&upstream))),
    );
    libtest_mimic::run(&arguments, trials).exit();
}

fn reference_trial(path: PathBuf) -> Trial {
    Trial::test(format!("reference::{}", scenario_id(&path)), move || {
        let scenario = load_scenario(&path).map_err(|e| Failed::from(e.to_string()))?;
        match check_twice(&scenario, &mut Reference).0 {
            Outcome::Pass => Ok(()),
            outcome => bless_or_fail(&scenario, &outcome),
        }
    })
}

/// A failing reference case: rewritten from the reference when blessing is
/// asked for, otherwise failed with the way to bless it.
fn bless_or_fail(scenario: &LoadedScenario, outcome: &Outcome) -> Result<(), Failed> {
    let description = describe(scenario, outcome);
    match dshc_runner::bless::bless_requested() {
        Ok(true) => {
            dshc_runner::bless::bless_file(scenario)
                .map_err(|e| Failed::from(format!("{description}\ncannot bless: {e}")))?;
            eprintln!("blessed {} (review the diff)", scenario.path.display());
            Ok(())
        }
        Ok(false) => Err(Failed::from(format!(
            "{description}\nto rewrite the expectations from the reference: \
             DSHC_BLESS=1 cargo test -p dshc-runner --test scenarios -- reference::{}",
            scenario.id
        ))),
        Err(message) => Err(Failed::from(format!("{description}\n{message}"))),
    }
}

/// The whole suite on upstream, run once (over two adapter processes) by
/// whichever upstream trial comes first; the others read their case's
/// report. A run that cannot happen fails every upstream trial with why.
#[derive(Default)]
struct UpstreamRun {
    reports: OnceLock<Result<Upstream, String>>,
}

struct Upstream {
    reports: Vec<CaseReport>,
    real_time: bool,
}

impl UpstreamRun {
    fn get(&self) -> Result<&Upstream, Failed> {
        self.reports
            .get_or_init(run_upstream)
            .as_ref()
            .map_err(|e| Failed::from(e.clone()))
    }
}

fn run_upstream() -> Result<Upstream, String> {
    let root = repository();
    let expected: Vec<ExpectedFailure> =
        load_expected_failures(&root.join("adapters/node-dsh/expected-failures.toml"))
            .map_err(|e| e.to_string())?;
    let found = discover(&[root.join("scenarios")]);
    let scenarios = found
        .files
        .iter()
        .map(|path| load_scenario(path).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let adapter = root.join("adapters/node-dsh/run").display().to_string();
    let mut pool: Vec<External> = (0..2)
        .map(|_| External::new(AdapterProcess::new(&adapter, Limits::default())))
        .collect();
    let (reports, _) = run_suite_pooled(
        &scenarios,
        &mut pool,
        &expected,
        SuiteOptions::default(),
        |_, _| {},
    );
    let real_time = pool.iter().any(Implementation::real_time);
    pool.iter_mut().for_each(External::stop);
    Ok(Upstream { reports, real_time })
}

fn upstream_clock_trial(upstream: Arc<UpstreamRun>) -> Trial {
    Trial::test("upstream::runs_on_the_harness_clock", move || {
        if upstream.get()?.real_time {
            return Err(Failed::from(
                "node-dsh must offer virtual_time/1, so that its loop results are compared exactly",
            ));
        }
        Ok(())
    })
}

fn upstream_trial(path: &Path, upstream: Arc<UpstreamRun>) -> Trial {
    let id = scenario_id(path);
    Trial::test(format!("upstream::{id}"), move || {
        let upstream = upstream.get()?;
        let report = upstream
            .reports
            .iter()
            .find(|report| report.id == id)
            .ok_or_else(|| Failed::from(format!("{id}: not in the upstream run")))?;
        match report.verdict() {
            Verdict::Passed | Verdict::ExpectedFailure => Ok(()),
            Verdict::UnexpectedPass => Err(Failed::from(format!(
                "{id}: passes on upstream but is listed as an expected failure"
            ))),
            Verdict::Skipped | Verdict::Failed => Err(Failed::from(format!(
                "{id}: {}",
                dshc_runner::check::describe_outcome(&report.outcome)
            ))),
        }
    })
}
