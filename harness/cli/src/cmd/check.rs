//! `dshc check`: the scenarios on an implementation through its adapter,
//! one line per case, the summary, and optionally the JSON, JUnit and
//! Markdown reports.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::adapter::{External, Implementation as _};
use dshc_runner::check::{
    SuiteOptions, Verdict, describe, gate_shortfall, load_expected_failures, run_suite_pooled,
};
use dshc_runner::parallel::default_jobs;
use dshc_runner::report::{Report, write_reports};
use dshc_scenario::protocol::{ImplementationInfo, Level};

use super::{default_paths, load_partition, suite_exit};
use crate::Exit;
use dshc_runner::partition::Partition;

/// `dshc check --adapter CMD [PATHS..]`.
#[derive(clap::Args)]
pub struct Args {
    /// The adapter command line, run with `sh -c` (e.g. 'dshc adapter').
    #[arg(long)]
    adapter: String,
    /// Scenario files or folders (default: the suite embedded in this binary).
    paths: Vec<PathBuf>,
    /// Run only partition k of n (`k/n`, nextest's convention); `dshc report
    /// --merge` joins the partitions' JSON reports into the whole run's.
    #[arg(long, default_value = "1/1")]
    partition: Partition,
    /// Run every case twice and fail a case whose two runs differ, naming
    /// the first divergent byte (a determinism check; a real-time adapter's
    /// runs are compared with message ids and event times redacted).
    #[arg(long)]
    twice: bool,
    /// Stop at the first failing case; the cases not yet started are not
    /// run, and the summary counts them. For a caller that needs only the
    /// exit code, such as a mutation-testing run (mutation/README.md). A
    /// stopped run is not a whole report, so it writes none.
    #[arg(long, conflicts_with = "report_dir")]
    fail_fast: bool,
    /// Cases this implementation is known to fail (TOML: [[case]] id, reason;
    /// the format is in docs/adapter-protocol.md, "Expected failures").
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Write <name>.json, <name>.junit.xml and <name>.md here.
    #[arg(long)]
    report_dir: Option<PathBuf>,
    /// Per-case timeout (restarts shake hands within it too).
    #[arg(long, default_value_t = dshc_runner::limits::CASE_TIMEOUT_MS)]
    timeout_ms: u64,
    /// How long the adapter's first `start` may take (it may install its
    /// dependencies first); an adapter that misses it is not started again.
    #[arg(long, default_value_t = dshc_runner::limits::HANDSHAKE_TIMEOUT_MS)]
    handshake_timeout_ms: u64,
    /// Largest reply line accepted.
    #[arg(long, default_value_t = dshc_runner::limits::MAX_REPLY_BYTES)]
    max_reply_bytes: usize,
    /// The clause catalog for the Markdown report (default: the nearest
    /// clauses.toml at or above the first path).
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Adapter processes run at once, one case each [default: the cores
    /// available]. The output and the reports are the same for every value.
    #[arg(long, short = 'j', value_parser = dshc_runner::parallel::parse_jobs)]
    jobs: Option<NonZeroUsize>,
    /// Fail the run when a case of this level (assembly or loop) is
    /// skipped: the implementation must run the whole level. Repeatable.
    /// A run in which every case is skipped fails without it too.
    #[arg(long, value_parser = super::parse_level)]
    require_level: Vec<Level>,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let paths = default_paths(args.paths)?;
    let expected = match &args.expected_failures {
        Some(path) => load_expected_failures(path)?,
        None => Vec::new(),
    };
    let catalog_path = args
        .catalog
        .unwrap_or_else(|| super::catalog_for(&paths[0]));
    let (scenarios, positions, bad, total) = load_partition(&paths, args.partition);
    // Another partition may hold the listed case.
    for listed in expected
        .iter()
        .filter(|_| args.partition == Partition::WHOLE)
    {
        if !scenarios.iter().any(|s| s.id == listed.id) {
            eprintln!(
                "warning: expected failure {} names no loaded scenario",
                listed.id
            );
        }
    }
    let jobs = args.jobs.unwrap_or_else(default_jobs).get();
    let mut pool: Vec<External> = (0..jobs)
        .map(|_| {
            External::new(AdapterProcess::new(
                &args.adapter,
                Limits {
                    timeout_ms: args.timeout_ms,
                    handshake_timeout_ms: args.handshake_timeout_ms,
                    max_reply_bytes: args.max_reply_bytes,
                },
            ))
        })
        .collect();
    let (mut cases, mut summary) = run_suite_pooled(
        &scenarios,
        &mut pool,
        &expected,
        SuiteOptions {
            twice: args.twice,
            fail_fast: args.fail_fast,
        },
        |scenario, report| match report.verdict() {
            Verdict::Passed => crate::out!("pass     {}", scenario.id),
            Verdict::Skipped => crate::out!("skipped  {}", describe(scenario, &report.outcome)),
            Verdict::ExpectedFailure => {
                crate::out!("xfail    {} ({})", scenario.id, report.outcome.label())
            }
            Verdict::UnexpectedPass => crate::out!(
                "XPASS    {}: passes but is listed as an expected failure; remove it from the list",
                scenario.id
            ),
            Verdict::Failed => crate::out!("FAIL     {}", describe(scenario, &report.outcome)),
        },
    );
    summary.invalid = bad;
    for (case, &position) in cases.iter_mut().zip(&positions) {
        case.position = position;
    }
    let implementation_info = pool
        .iter_mut()
        .find_map(|implementation| implementation.info())
        .unwrap_or(ImplementationInfo {
            name: "unknown".into(),
            version: "unknown".into(),
            language: "unknown".into(),
            homepage: None,
        });
    for implementation in &mut pool {
        implementation.stop();
    }
    let report = Report {
        implementation: implementation_info,
        command: args.adapter,
        partition: args.partition,
        total,
        summary,
        cases,
    };
    // The closing line first: a report that cannot be written is an error
    // after it, never instead of it.
    crate::out!("{}", summary.line());
    if let Some(dir) = &args.report_dir {
        write_reports(dir, &report, &catalog_path)?;
    }
    let shortfall = gate_shortfall(&scenarios, &report.cases, &args.require_level);
    if let Some(shortfall) = &shortfall {
        crate::out!("error: {shortfall}");
    }
    Ok(suite_exit(
        bad,
        summary.failed + usize::from(shortfall.is_some()),
    ))
}
