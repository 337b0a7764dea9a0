//! `dshc diff`: seeded random assembly-level cases on the reference and on
//! an adapter; the first disagreement is shrunk, written as a regression and
//! printed with its replay command.

use std::path::PathBuf;

use dshc_harness::adapter::External;
use dshc_harness::adapter::process::{AdapterProcess, Limits};
use dshc_harness::diff::{Comparison, compare_once, shrink, write_regression};

use dshc_harness::partition::Partition;

use crate::Exit;
use crate::progress::Progress;

/// `dshc diff --adapter CMD --seed S`.
#[derive(clap::Args)]
pub struct Args {
    /// The adapter command line, run with `sh -c`.
    #[arg(long)]
    adapter: String,
    /// The seed; case k of seed s is the same on every machine.
    #[arg(long)]
    seed: u64,
    /// How many cases (0..N).
    #[arg(long, default_value_t = 1_000, conflicts_with = "case")]
    cases: u64,
    /// Run only this case (the replay form).
    #[arg(long)]
    case: Option<u64>,
    /// Run only partition k of n (`k/n`): case i belongs to partition
    /// i mod n + 1.
    #[arg(long, default_value = "1/1", conflicts_with = "case")]
    partition: Partition,
    /// Where the shrunk disagreement is written.
    #[arg(long, default_value = "scenarios/regressions")]
    regressions_dir: PathBuf,
    /// Per-case timeout (restarts shake hands within it too).
    #[arg(long, default_value_t = dshc_harness::limits::CASE_TIMEOUT_MS)]
    timeout_ms: u64,
    /// How long the adapter's first `start` may take (it may install its
    /// dependencies first); an adapter that misses it is not started again.
    #[arg(long, default_value_t = dshc_harness::limits::HANDSHAKE_TIMEOUT_MS)]
    handshake_timeout_ms: u64,
    /// Most shrinking attempts.
    #[arg(long, default_value_t = 2_000)]
    shrink_attempts: usize,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let Args {
        adapter,
        seed,
        cases,
        case,
        partition,
        regressions_dir,
        timeout_ms,
        handshake_timeout_ms,
        shrink_attempts,
    } = args;
    let mut implementation = External::new(AdapterProcess::new(
        &adapter,
        Limits {
            timeout_ms,
            handshake_timeout_ms,
            ..Limits::default()
        },
    ));
    // Inclusive, so that the last case of the u64 range replays too.
    let range = match case {
        Some(case) => Some(case..=case),
        None => cases.checked_sub(1).map(|last| 0..=last),
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "throughput for the person watching; never part of a result"
    )]
    let started = std::time::Instant::now();
    let (mut agreed, mut not_run) = (0u64, 0u64);
    let progress = Progress::new(if case.is_some() { 1 } else { cases });
    for case in range
        .into_iter()
        .flatten()
        .filter(|&case| partition.contains(case))
    {
        progress.tick(case);
        let scenario = dshc_harness::generate::assembly::generate(seed, case);
        match compare_once(
            &scenario,
            &format!("diff/{seed}/{case}"),
            &mut implementation,
        ) {
            Comparison::Agree => agreed += 1,
            Comparison::NotRun(reason) => {
                not_run += 1;
                crate::out!("case {case}: not run: {reason}");
            }
            Comparison::Disagree { .. } => {
                progress.clear();
                crate::out!("case {case} of seed {seed}: the implementations disagree; shrinking");
                let minimal = shrink(&scenario, &mut implementation, shrink_attempts);
                let other = match compare_once(&minimal, "minimal", &mut implementation) {
                    Comparison::Disagree { other, .. } => *other,
                    _ => Default::default(),
                };
                match write_regression(&regressions_dir, seed, case, &adapter, &minimal, &other) {
                    Ok(path) => crate::out!("wrote {}", path.display()),
                    Err(error) => eprintln!("error: cannot write the regression: {error}"),
                }
                crate::out!("seed {seed}, case {case}; replay with:");
                crate::out!("  dshc diff --adapter '{adapter}' --seed {seed} --case {case}");
                implementation.stop();
                return Ok(Exit::Failed);
            }
        }
    }
    progress.clear();
    implementation.stop();
    let elapsed = started.elapsed().as_secs_f64();
    let total = agreed + not_run;
    crate::out!(
        "{total} cases: {agreed} agree, 0 disagree, {not_run} not run ({:.0} cases/s)",
        total as f64 / elapsed.max(1e-9)
    );
    Ok(Exit::failed_if(not_run > 0))
}
