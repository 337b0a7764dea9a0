//! `dshc diff`: seeded random cases on the reference and on an adapter:
//! assembly cases, or with `--level loop` the simulator's loop sessions
//! compared event by event; the first disagreement is shrunk, written as a
//! regression and printed with its replay command.

use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use dshc_fuzzing::diff::{
    Comparison, Replay, compare_once_seeing, shrink, summary, write_regression,
};
use dshc_fuzzing::exercised::Exercised;
use dshc_fuzzing::regression::differences::structural_diff;
use dshc_fuzzing::signals::Shown;
use dshc_runner::adapter::External;
use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::check::KnownDisagreement;
use dshc_runner::parallel::{default_jobs, for_each_ordered_on};
use dshc_runner::partition::Partition;
use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{CaseResult, Level};

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
    /// Which cases: `assembly` (registries and assemblies) or `loop` (the
    /// seeded sessions of `dshc sim`, compared event by event).
    #[arg(long, value_enum, default_value = "assembly")]
    level: DiffLevel,
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
    #[arg(long, default_value_t = dshc_runner::limits::CASE_TIMEOUT_MS)]
    timeout_ms: u64,
    /// How long the adapter's first `start` may take (it may install its
    /// dependencies first); an adapter that misses it is not started again.
    #[arg(long, default_value_t = dshc_runner::limits::HANDSHAKE_TIMEOUT_MS)]
    handshake_timeout_ms: u64,
    /// Known disagreements (the `[[diff]]` tables of an expected-failures
    /// file): a disagreement that shows one is counted, not shrunk.
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Most shrinking attempts.
    #[arg(long, default_value_t = 2_000)]
    shrink_attempts: usize,
    /// Adapter processes run at once, one case each [default: the cores
    /// available]. The output, the disagreement found and its shrunk form
    /// are the same for every value.
    #[arg(long, short = 'j', value_parser = dshc_runner::parallel::parse_jobs)]
    jobs: Option<NonZeroUsize>,
}

/// The kind of generated case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffLevel {
    /// `dshc_fuzzing::generate::assembly`.
    Assembly,
    /// `dshc_fuzzing::generate::session`.
    Loop,
}

impl DiffLevel {
    /// The protocol's level.
    fn level(self) -> Level {
        match self {
            DiffLevel::Assembly => Level::Assembly,
            DiffLevel::Loop => Level::Loop,
        }
    }

    /// The seed's swarm: which features its cases draw, and how often.
    fn swarm(self, seed: u64) -> dshc_fuzzing::generate::swarm::Swarm {
        match self {
            DiffLevel::Assembly => dshc_fuzzing::generate::assembly::swarm(seed),
            DiffLevel::Loop => dshc_fuzzing::generate::session::swarm(seed),
        }
    }

    /// Case `case` of `seed`.
    fn generate(self, seed: u64, case: u64) -> Scenario {
        match self {
            DiffLevel::Assembly => dshc_fuzzing::generate::assembly::generate(seed, case),
            DiffLevel::Loop => dshc_fuzzing::generate::session::generate_session(seed, case),
        }
    }
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let Args {
        adapter,
        seed,
        level,
        cases,
        case,
        partition,
        regressions_dir,
        timeout_ms,
        handshake_timeout_ms,
        expected_failures,
        shrink_attempts,
        jobs,
    } = args;
    let known = match &expected_failures {
        Some(path) => dshc_runner::check::load_known_disagreements(path)?,
        None => Vec::new(),
    };
    let limits = Limits {
        timeout_ms,
        handshake_timeout_ms,
        ..Limits::default()
    };
    crate::out!("seed {seed} swarm odds: {}", level.swarm(seed).line());
    let mut pool = adapter_pool(&adapter, &limits, case.is_some(), jobs);
    // Inclusive, so that the last case of the u64 range replays too.
    let range = match case {
        Some(case) => Some(case..=case),
        None => cases.checked_sub(1).map(|last| 0..=last),
    };
    let indices = range.into_iter().flat_map(|range| partition.items(range));
    #[expect(
        clippy::disallowed_methods,
        reason = "throughput for the person watching; never part of a result"
    )]
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let progress = Progress::new(if case.is_some() { 1 } else { cases });
    let mut disagreement = None;
    let mut exercised = Exercised::new(level.level(), super::clause_signals(level.level())?);
    let clauses = exercised.clauses().clone();
    for_each_ordered_on(
        indices,
        &mut pool,
        |implementation, case| {
            let scenario = level.generate(seed, case);
            let mut hits = Vec::new();
            let comparison = compare_once_seeing(
                &scenario,
                &format!("diff/{seed}/{case}"),
                implementation,
                |result| {
                    hits = clauses.hits(&Shown::of_result(&scenario, result));
                },
            );
            (case, scenario, comparison, hits)
        },
        |(case, scenario, comparison, hits)| {
            progress.tick(case);
            exercised.add(&scenario, &hits);
            match tally.count(case, comparison, &known) {
                Some(first) => {
                    disagreement = Some((case, scenario, first));
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        },
    );
    if let Some((case, scenario, first)) = disagreement {
        progress.clear();
        crate::out!("case {case} of seed {seed}: the implementations disagree on {first}");
        let replay = Replay {
            adapter: adapter.clone(),
            loop_level: level == DiffLevel::Loop,
            seed,
            case,
        };
        let exit = shrink_and_write(
            &scenario,
            &mut pool[0],
            &replay,
            &regressions_dir,
            (shrink_attempts, &known),
        );
        stop(&mut pool);
        return Ok(exit);
    }
    progress.clear();
    stop(&mut pool);
    let elapsed = started.elapsed().as_secs_f64();
    Ok(Exit::failed_if(tally.print(elapsed, &exercised) > 0))
}

/// The adapter processes the cases run on: one when replaying a single
/// case, else `--jobs` (default: the cores available).
fn adapter_pool(
    adapter: &str,
    limits: &Limits,
    single_case: bool,
    jobs: Option<NonZeroUsize>,
) -> Vec<External> {
    let jobs = if single_case {
        NonZeroUsize::MIN
    } else {
        jobs.unwrap_or_else(default_jobs)
    };
    (0..jobs.get())
        .map(|_| External::new(AdapterProcess::new(adapter, limits.clone())))
        .collect()
}

/// How the seeded cases compared so far.
#[derive(Default)]
struct Tally {
    agreed: u64,
    not_run: u64,
    known_seen: u64,
}

impl Tally {
    /// The run's summary line and what it exercised; returns how many cases
    /// did not run.
    fn print(self, elapsed_s: f64, exercised: &Exercised) -> u64 {
        let Tally {
            agreed,
            not_run,
            known_seen,
        } = self;
        let total = agreed + not_run + known_seen;
        crate::out!(
            "{total} cases: {agreed} agree, 0 disagree, {known_seen} known disagreements, {not_run} not run ({:.0} cases/s)",
            total as f64 / elapsed_s.max(1e-9)
        );
        for line in exercised.lines() {
            crate::out!("{line}");
        }
        not_run
    }

    /// Count one case; a new disagreement is returned (where the two sides
    /// first differ) instead of counted.
    fn count(
        &mut self,
        case: u64,
        comparison: Comparison,
        known: &[KnownDisagreement],
    ) -> Option<String> {
        match comparison {
            Comparison::Agree => self.agreed += 1,
            Comparison::NotRun(reason) => {
                self.not_run += 1;
                crate::out!("case {case}: not run: {reason}");
            }
            Comparison::Disagree { other, .. } if known.iter().any(|k| k.shown_by(&other)) => {
                self.known_seen += 1;
            }
            Comparison::Disagree { differences, .. } => return Some(summary(&differences)),
        }
        None
    }
}

/// How many differing leaves the console shows (the JSON file has all).
const SHOWN_DIFFERENCES: usize = 30;

/// Shrink a disagreement on one adapter process, write the minimal case as a
/// regression scenario (checked to fail on the adapter and pass on the
/// reference first), print its structural diff and how to replay the
/// original. A file that would not reproduce is dshc's own bug.
fn shrink_and_write(
    scenario: &Scenario,
    implementation: &mut External,
    replay: &Replay,
    regressions_dir: &Path,
    (shrink_attempts, known): (usize, &[KnownDisagreement]),
) -> Exit {
    crate::out!("shrinking");
    let known = |result: &CaseResult| known.iter().any(|k| k.shown_by(result));
    let minimal = shrink(scenario, implementation, shrink_attempts, &known);
    let exit = match write_regression(regressions_dir, replay, &minimal, implementation) {
        Ok(Some((written, differences))) => {
            crate::out!(
                "the shrunk case ({} steps) differs here:",
                minimal.steps.len()
            );
            for line in structural_diff(&differences, SHOWN_DIFFERENCES) {
                crate::out!("  {line}");
            }
            crate::out!(
                "wrote {} (checked: it fails on the adapter and passes on the reference)",
                written.scenario.display()
            );
            crate::out!(
                "both sides' full observations: {}",
                written.evidence.display()
            );
            Exit::Failed
        }
        Ok(None) => {
            eprintln!(
                "error: the shrunk case no longer disagrees when run again: the adapter's answers change from run to run; nothing written"
            );
            Exit::Failed
        }
        Err(error) => {
            eprintln!("error: {error}");
            Exit::HarnessBug
        }
    };
    crate::out!("seed {}, case {}; replay with:", replay.seed, replay.case);
    crate::out!("  {}", replay.command());
    exit
}

fn stop(pool: &mut [External]) {
    for implementation in pool {
        implementation.stop();
    }
}
