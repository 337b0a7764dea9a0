//! `dshc run`: every scenario on the reference; failures printed with a
//! diff (with `-v`, every case), then the summary line. `DSHC_BLESS=1` rewrites failing scenarios'
//! expectations from the reference.

use dshc_runner::adapter::Reference;
use dshc_runner::bless::{bless_file, bless_requested};
use dshc_runner::check::{Outcome, SuiteOptions, Verdict, check, describe, run_suite};
use dshc_scenario::load::LoadedScenario;
use std::path::PathBuf;

use super::{default_paths, load_partition, suite_exit};
use crate::Exit;
use dshc_runner::partition::Partition;

/// `dshc run [PATHS..]`.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario files or folders (default: the suite embedded in this binary).
    paths: Vec<PathBuf>,
    /// Run only partition k of n (`k/n`, nextest's convention): scenario i,
    /// in discovery order, belongs to partition i mod n + 1.
    #[arg(long, default_value = "1/1")]
    partition: Partition,
    /// List every case (`pass     <id>`), as `dshc check` does, not only
    /// the failures.
    #[arg(short, long)]
    verbose: bool,
}

/// Rewrite a failing scenario's expectations; then check it again, since
/// some expectations (event lists, queries) are not rewritten.
fn bless(scenario: &LoadedScenario) -> anyhow::Result<Outcome> {
    bless_file(scenario)?;
    let blessed = dshc_scenario::load::load_scenario(&scenario.path)?;
    Ok(check(&blessed))
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let bless_failures = bless_requested()?;
    let (scenarios, _, bad, _) = load_partition(&default_paths(args.paths)?, args.partition);
    let (_, mut summary) = run_suite(
        &scenarios,
        &mut Reference,
        &[],
        SuiteOptions::default(),
        |scenario, report| {
            if report.verdict() == Verdict::Passed {
                if args.verbose {
                    crate::out!("pass     {}", scenario.id);
                }
                return;
            }
            crate::out!("FAIL {}", describe(scenario, &report.outcome));
            if bless_failures {
                match bless(scenario) {
                    Ok(Outcome::Pass) => crate::out!("blessed {}", scenario.path.display()),
                    Ok(still) => crate::out!(
                        "blessed {}, but it still fails (edit it by hand): {}",
                        scenario.path.display(),
                        describe(scenario, &still)
                    ),
                    Err(error) => {
                        eprintln!("error: cannot bless {}: {error:#}", scenario.path.display())
                    }
                }
            }
        },
    );
    summary.invalid = bad;
    crate::out!("{}", summary.line());
    Ok(suite_exit(bad, summary.failed))
}
