//! `dshc sim`: seeded loop sessions, each run twice and checked against the
//! loop invariants; a violation is shrunk to a scenario file with a replay
//! command. `--minutes N` soaks: seed after seed until the time is up,
//! writing each seed's shrunk violation and going on.

use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use dshc_fuzzing::exercised::{ClauseSignals, Exercised};
use dshc_fuzzing::generate::session::{generate_session, swarm};
use dshc_fuzzing::signals::Shown;
use dshc_fuzzing::sim::{
    Violation, check_session_against, second_run_showing, shrink, steps_of, write_session,
};
use dshc_reference::Ticks;
use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::Level;

use dshc_runner::parallel::{default_jobs, for_each_ordered};
use dshc_runner::partition::Partition;

use crate::Exit;
use crate::progress::Progress;

/// `dshc sim --seed S`.
#[derive(clap::Args)]
pub struct Args {
    /// The seed; session k of seed s is the same on every machine. With
    /// `--minutes`, the first seed of the soak.
    #[arg(long)]
    seed: u64,
    /// How many sessions (0..N); with `--minutes`, per seed.
    #[arg(long, default_value_t = 100, conflicts_with = "session")]
    sessions: u64,
    /// Run only this session (the replay form).
    #[arg(long)]
    session: Option<u64>,
    /// Soak: run `--sessions` sessions of seed S, then of S+1, S+2, ...
    /// until N minutes have passed (checked between sessions; the only use
    /// of the wall clock), writing each seed's shrunk violation and going on.
    #[arg(long, conflicts_with = "session")]
    minutes: Option<f64>,
    /// Run only partition k of n (`k/n`): session i belongs to partition
    /// i mod n + 1.
    #[arg(long, default_value = "1/1", conflicts_with = "session")]
    partition: Partition,
    /// Where a shrunk failing session is written.
    #[arg(long, default_value = "scenarios/regressions")]
    regressions_dir: PathBuf,
    /// Sessions run at once, each on its own thread [default: the cores
    /// available]. The output is the same for every value.
    #[arg(long, short = 'j', value_parser = dshc_runner::parallel::parse_jobs)]
    jobs: Option<NonZeroUsize>,
    /// Run each session's second run one millisecond a step instead of on
    /// its grid, so that the two runs also check that the grid (the
    /// coarsest tick every duration of a session divides) changes no byte:
    /// a difference is a `grid` violation.
    #[arg(long)]
    check_grid: bool,
}

impl Args {
    /// How each session's second run steps time.
    fn second_run(&self) -> Ticks {
        if self.check_grid {
            Ticks::EveryMs
        } else {
            Ticks::CaseGrid
        }
    }
}

/// What one seed's sessions gave.
struct SeedRun {
    checked: u64,
    steps: usize,
    failing: Option<(u64, Scenario, Vec<Violation>)>,
    exercised: Exercised,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if let Some(minutes) = args.minutes {
        return Ok(soak(&args, minutes));
    }
    let seed = args.seed;
    crate::out!("seed {seed} swarm odds: {}", swarm(seed).line());
    // Inclusive, so that the last session of the u64 range replays too.
    let range = match args.session {
        Some(session) => Some(session..=session),
        None => args.sessions.checked_sub(1).map(|last| 0..=last),
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "throughput for the person watching; never part of a result"
    )]
    let started = std::time::Instant::now();
    let total = if args.session.is_some() {
        1
    } else {
        args.sessions
    };
    let indices = range
        .into_iter()
        .flat_map(|range| args.partition.items(range));
    let clauses = super::clause_signals(Level::Loop)?;
    let run = run_seed(&args, seed, indices, total, &|| false, &clauses);
    if let Some((index, scenario, violations)) = run.failing {
        return Ok(report_violation(
            seed,
            index,
            &scenario,
            &violations,
            &args.regressions_dir,
        ));
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    crate::out!(
        "{} sessions, {} steps, 0 violations ({:.0} sessions/s, {:.0} executed steps/s: each run twice)",
        run.checked,
        run.steps,
        run.checked as f64 / elapsed,
        2.0 * run.steps as f64 / elapsed
    );
    for line in run.exercised.lines() {
        crate::out!("{line}");
    }
    Ok(Exit::Passed)
}

/// The sessions `indices` of `seed` (this partition's), until the first
/// violation or until `stop` says so.
fn run_seed(
    args: &Args,
    seed: u64,
    indices: impl Iterator<Item = u64> + Send,
    total: u64,
    stop: &(dyn Fn() -> bool + Sync),
    clauses: &ClauseSignals,
) -> SeedRun {
    let progress = Progress::new(total);
    let mut run = SeedRun {
        checked: 0,
        steps: 0,
        failing: None,
        exercised: Exercised::new(Level::Loop, clauses.clone()),
    };
    for_each_ordered(
        indices,
        args.jobs.unwrap_or_else(default_jobs),
        |index| {
            let scenario = generate_session(seed, index);
            let (violations, outcome) = check_session_against(&scenario, args.second_run());
            let steps = outcome
                .as_ref()
                .and_then(|result| result.run.as_ref())
                .map_or(0, steps_of);
            let hits = outcome
                .as_ref()
                .map(|result| clauses.hits(&Shown::of_result(&scenario, result)))
                .unwrap_or_default();
            (index, scenario, violations, steps, hits)
        },
        |(index, scenario, violations, session_steps, hits)| {
            progress.tick(index);
            run.exercised.add(&scenario, &hits);
            run.checked += 1;
            run.steps += session_steps;
            if !violations.is_empty() {
                run.failing = Some((index, scenario, violations));
                return ControlFlow::Break(());
            }
            if stop() {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        },
    );
    progress.clear();
    run
}

/// Print a violation, shrink it and write it; the exit code it earns.
fn report_violation(
    seed: u64,
    index: u64,
    scenario: &Scenario,
    violations: &[Violation],
    dir: &Path,
) -> Exit {
    crate::out!(
        "session {index} of seed {seed} violates {} invariant(s):",
        violations.len()
    );
    for violation in violations {
        crate::out!("  [{}] {}", violation.tag, violation.detail);
    }
    let minimal = shrink(scenario, &violations[0].tag, 400);
    let second = second_run_showing(&violations[0].tag);
    let remaining = check_session_against(&minimal, second).0;
    crate::out!(
        "the shrunk session ({} steps) violates:",
        minimal.steps.len()
    );
    for violation in &remaining {
        crate::out!("  [{}] {}", violation.tag, violation.detail);
    }
    let exit = match write_session(dir, seed, index, &minimal, &remaining) {
        Ok(path) => {
            crate::out!("wrote the shrunk session to {}", path.display());
            Exit::Failed
        }
        Err(error) => {
            eprintln!("error: {error}");
            Exit::HarnessBug
        }
    };
    let flag = if second == Ticks::EveryMs {
        " --check-grid"
    } else {
        ""
    };
    crate::out!("replay with:\n  dshc sim --seed {seed} --session {index}{flag}");
    exit
}

/// `--minutes N`: seed after seed from `--seed`, each's sessions until its
/// first violation (shrunk and written), until the time is up.
fn soak(args: &Args, minutes: f64) -> Exit {
    #[expect(
        clippy::disallowed_methods,
        reason = "the soak's stop condition only: which sessions run never depends on it beyond where the soak stops, and each session is a pure function of its seed"
    )]
    let started = std::time::Instant::now();
    let budget = std::time::Duration::from_secs_f64((minutes * 60.0).max(0.0));
    let out_of_time = || started.elapsed() >= budget;
    let (mut seeds, mut sessions, mut steps, mut found) = (0u64, 0u64, 0usize, 0u64);
    let mut exit = Exit::Passed;
    let mut seed = args.seed;
    while !out_of_time() {
        crate::out!("seed {seed} swarm odds: {}", swarm(seed).line());
        let indices = args
            .sessions
            .checked_sub(1)
            .into_iter()
            .flat_map(|last| args.partition.items(0..=last));
        let run = run_seed(
            args,
            seed,
            indices,
            args.sessions,
            &out_of_time,
            &ClauseSignals::default(),
        );
        seeds += 1;
        sessions += run.checked;
        steps += run.steps;
        if let Some((index, scenario, violations)) = run.failing {
            found += 1;
            let written =
                report_violation(seed, index, &scenario, &violations, &args.regressions_dir);
            if written == Exit::HarnessBug || exit == Exit::Passed {
                exit = written;
            }
        }
        seed = seed.wrapping_add(1);
    }
    crate::out!(
        "soak: {seeds} seeds from {} ({sessions} sessions, {steps} steps, each run twice), {found} violation(s) in {:.1} min",
        args.seed,
        started.elapsed().as_secs_f64() / 60.0
    );
    exit
}
