//! `dshc sim`: seeded loop sessions, each run twice and checked against the
//! loop invariants; a violation is shrunk to a scenario file with a replay
//! command.

use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::PathBuf;

use dshc_fuzzing::exercised::Exercised;
use dshc_fuzzing::generate::session::generate_session;
use dshc_fuzzing::sim::{check_session, shrink, steps_of, write_session};
use dshc_scenario::protocol::Level;

use dshc_runner::parallel::{default_jobs, for_each_ordered};
use dshc_runner::partition::Partition;

use crate::Exit;
use crate::progress::Progress;

/// `dshc sim --seed S`.
#[derive(clap::Args)]
pub struct Args {
    /// The seed; session k of seed s is the same on every machine.
    #[arg(long)]
    seed: u64,
    /// How many sessions (0..N).
    #[arg(long, default_value_t = 100, conflicts_with = "session")]
    sessions: u64,
    /// Run only this session (the replay form).
    #[arg(long)]
    session: Option<u64>,
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
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let seed = args.seed;
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
    let progress = Progress::new(if args.session.is_some() {
        1
    } else {
        args.sessions
    });
    let (mut checked, mut steps) = (0u64, 0usize);
    let indices = range
        .into_iter()
        .flatten()
        .filter(|&index| args.partition.contains(index));
    let mut failing = None;
    let mut exercised = Exercised::new(Level::Loop);
    for_each_ordered(
        indices,
        args.jobs.unwrap_or_else(default_jobs),
        |index| {
            let scenario = generate_session(seed, index);
            let (violations, run) = check_session(&scenario);
            (
                index,
                scenario,
                violations,
                run.as_ref().map_or(0, steps_of),
            )
        },
        |(index, scenario, violations, session_steps)| {
            progress.tick(index);
            exercised.add(&scenario);
            checked += 1;
            steps += session_steps;
            if violations.is_empty() {
                return ControlFlow::Continue(());
            }
            failing = Some((index, scenario, violations));
            ControlFlow::Break(())
        },
    );
    if let Some((index, scenario, violations)) = failing {
        progress.clear();
        crate::out!(
            "session {index} of seed {seed} violates {} invariant(s):",
            violations.len()
        );
        for violation in &violations {
            crate::out!("  [{}] {}", violation.tag, violation.detail);
        }
        let minimal = shrink(&scenario, &violations[0].tag, 400);
        let remaining = check_session(&minimal).0;
        crate::out!(
            "the shrunk session ({} steps) violates:",
            minimal.steps.len()
        );
        for violation in &remaining {
            crate::out!("  [{}] {}", violation.tag, violation.detail);
        }
        let exit = match write_session(&args.regressions_dir, seed, index, &minimal, &remaining) {
            Ok(path) => {
                crate::out!("wrote the shrunk session to {}", path.display());
                Exit::Failed
            }
            Err(error) => {
                eprintln!("error: {error}");
                Exit::HarnessBug
            }
        };
        crate::out!("replay with:\n  dshc sim --seed {seed} --session {index}");
        return Ok(exit);
    }
    progress.clear();
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    crate::out!(
        "{checked} sessions, {steps} steps, 0 violations ({:.0} sessions/s, {:.0} executed steps/s: each run twice)",
        checked as f64 / elapsed,
        2.0 * steps as f64 / elapsed
    );
    for line in exercised.lines() {
        crate::out!("{line}");
    }
    Ok(Exit::Passed)
}
