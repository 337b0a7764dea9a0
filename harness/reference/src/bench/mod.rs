//! Assembly cost per step, for any implementation: the fixtures every
//! implementation builds ([`fixture`]), the reference's own measurement (the
//! rig the criterion bench and `dshc adapter` share), and the statistics and
//! comparisons `dshc bench` reports.
//!
//! A measurement is one protocol request (`bench`, see
//! `docs/adapter-protocol.md`): the implementation builds the fixture's
//! registry once, then times `batches` batches of `iterations` steps with
//! its own clock, a step being the fixture's `assemble` plus rendering the
//! system text and the runtime-context snapshot. dshc turns the batch times
//! into per-step figures.

pub mod fixture;

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use dshc_model::render::{render_context_snapshot, render_prompt};
use dshc_model::{AssembleContext, Assembly, JsError, Registry, ScopeKey};
use dshc_scenario::protocol::{AssemblyCommand, BenchReply, Case, Command};

use crate::assembly_level::AssemblyCommands;
use crate::driver::run_commands;
use crate::scripted::{World, config_of};

/// A fixture's registry, built once, ready to run its measured step.
pub struct BenchRig {
    registry: Registry,
    context: AssembleContext,
    // Registrations hold weak references to the world; it lives as long as the rig.
    _world: Rc<World>,
}

/// Why a bench case cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum RigError {
    /// Its last command is not the `assemble` to measure.
    #[error("a bench case ends with the measured `assemble`")]
    NoMeasuredAssemble,
    /// The plugin config was refused.
    #[error("{0}")]
    Config(String),
    /// A registration before the measured step failed.
    #[error("command {index} failed: {message}")]
    Registration {
        /// Which command.
        index: usize,
        /// Its error.
        message: String,
    },
}

impl BenchRig {
    /// Run every command of `case` but the last, which must be the measured
    /// `assemble`; a registration that fails fails the rig.
    pub fn new(case: &Case) -> Result<BenchRig, RigError> {
        let Some((Command::Assembly(AssemblyCommand::Assemble(measured)), registrations)) =
            case.commands.split_last()
        else {
            return Err(RigError::NoMeasuredAssemble);
        };
        let registry =
            Registry::new(config_of(&case.config)).map_err(|e| RigError::Config(e.message))?;
        let world = Rc::new(World::default());
        let mut level = AssemblyCommands {
            registry: registry.clone(),
            world: world.clone(),
        };
        let observations =
            futures::executor::block_on(run_commands(registrations, &registry, &world, &mut level));
        if let Some((index, error)) = observations
            .iter()
            .enumerate()
            .find_map(|(index, observation)| observation.error.as_ref().map(|e| (index, e)))
        {
            return Err(RigError::Registration {
                index,
                message: error.message.clone(),
            });
        }
        // The journal is for scenario expectations; a benchmark reads none.
        world.set_journaling(false);
        let context = AssembleContext {
            scope: measured.scope.as_deref().map(ScopeKey::new),
            extra: measured.context.clone(),
            ..AssembleContext::default()
        };
        Ok(BenchRig {
            registry,
            context,
            _world: world,
        })
    }

    /// The measured `assemble` alone.
    pub fn assemble(&self) -> Result<Assembly, JsError> {
        futures::executor::block_on(self.registry.assemble(self.context.clone()))
    }

    /// One measured step: assemble, then render the system text and the
    /// runtime-context snapshot. Returns the rendered bytes.
    pub fn step(&self) -> Result<StepOutput, JsError> {
        let assembly = self.assemble()?;
        let prompt = render_prompt(&assembly)?;
        let snapshot = render_context_snapshot(&assembly)?;
        Ok(StepOutput {
            tools: assembly.tools.len(),
            prompt,
            snapshot,
        })
    }

    /// Time `batches` batches of `iterations` steps on the wall clock.
    pub fn time(&self, iterations: u32, batches: u32) -> Result<BenchReply, JsError> {
        let mut output_bytes = 0;
        let mut batch_ns = Vec::with_capacity(batches as usize);
        for _ in 0..batches {
            let started = wall_clock();
            for _ in 0..iterations {
                let output = std::hint::black_box(self.step()?);
                output_bytes = output.bytes();
            }
            batch_ns.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
        Ok(BenchReply {
            batch_ns,
            output_bytes,
        })
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time; nothing it returns feeds a verdict"
)]
fn wall_clock() -> std::time::Instant {
    std::time::Instant::now()
}

/// What one step produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepOutput {
    /// Tool schemas in the assembly.
    pub tools: usize,
    /// The system text.
    pub prompt: String,
    /// The runtime-context snapshot.
    pub snapshot: String,
}

impl StepOutput {
    /// Bytes rendered: the system text and the snapshot. Implementations that
    /// built the same registry render the same bytes.
    pub fn bytes(&self) -> u64 {
        (self.prompt.len() + self.snapshot.len()) as u64
    }
}

/// Per-step time of one fixture on one implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// Median over the batches, nanoseconds per step.
    pub median_ns: f64,
    /// 10th percentile.
    pub p10_ns: f64,
    /// 90th percentile.
    pub p90_ns: f64,
    /// Steps timed in all.
    pub steps: u64,
    /// Bytes one step rendered (a check that the registry is the fixture's).
    pub output_bytes: u64,
}

impl StepStats {
    /// The statistics of a reply: each batch's time per step, then the
    /// nearest-rank percentiles.
    pub fn of(reply: &BenchReply, iterations: u32) -> Option<StepStats> {
        if reply.batch_ns.is_empty() || iterations == 0 {
            return None;
        }
        let mut per_step: Vec<f64> = reply
            .batch_ns
            .iter()
            .map(|&ns| ns as f64 / f64::from(iterations))
            .collect();
        per_step.sort_by(f64::total_cmp);
        let rank = |fraction: f64| {
            let index = ((per_step.len() as f64 - 1.0) * fraction).round() as usize;
            per_step[index.min(per_step.len() - 1)]
        };
        Some(StepStats {
            median_ns: rank(0.5),
            p10_ns: rank(0.1),
            p90_ns: rank(0.9),
            steps: reply.batch_ns.len() as u64 * u64::from(iterations),
            output_bytes: reply.output_bytes,
        })
    }
}

/// The JSON report.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchReport {
    /// Steps per batch.
    pub iterations: u32,
    /// Batches per measurement.
    pub batches: u32,
    /// One entry per fixture, in the order measured.
    pub fixtures: Vec<FixtureResult>,
}

/// One fixture measured on every implementation.
#[derive(Debug, Serialize, Deserialize)]
pub struct FixtureResult {
    /// Fixture id (file stem).
    pub id: String,
    /// Per implementation, in `--adapter` order.
    pub results: Vec<ImplementationResult>,
}

/// One implementation's figures on one fixture.
#[derive(Debug, Serialize, Deserialize)]
pub struct ImplementationResult {
    /// `name version` of the implementation.
    pub implementation: String,
    /// The per-step statistics, or why there are none.
    #[serde(flatten)]
    pub stats: Option<StepStats>,
    /// Why it was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many times faster than the slowest implementation on this fixture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// Every (fixture, implementation) whose median is more than `limit_percent`
/// above the baseline's, and every row of either side the other lacks: a
/// fixture renamed or an implementation's version bumped would otherwise
/// compare nothing and pass in silence.
pub fn regressions(
    report: &BenchReport,
    baseline: &BenchReport,
    limit_percent: f64,
) -> Vec<String> {
    let row = |report: &BenchReport, fixture: &str, implementation: &str| {
        report
            .fixtures
            .iter()
            .find(|f| f.id == fixture)
            .and_then(|f| {
                f.results
                    .iter()
                    .find(|r| r.implementation == implementation)
            })
            .and_then(|r| r.stats.clone())
    };
    let mut found = Vec::new();
    for fixture in &report.fixtures {
        for result in &fixture.results {
            let Some(now) = &result.stats else { continue };
            let Some(earlier) = row(baseline, &fixture.id, &result.implementation) else {
                found.push(format!(
                    "{} on {}: the baseline has no row for it (a renamed fixture or a new \
                     version? write a new baseline with --json)",
                    fixture.id, result.implementation
                ));
                continue;
            };
            let slower_percent = (now.median_ns / earlier.median_ns - 1.0) * 100.0;
            if slower_percent > limit_percent {
                found.push(format!(
                    "{} on {}: {} per step is {slower_percent:.0}% slower than the baseline's {} (limit {limit_percent}%)",
                    fixture.id,
                    result.implementation,
                    format_ns(now.median_ns),
                    format_ns(earlier.median_ns)
                ));
            }
        }
    }
    for fixture in &baseline.fixtures {
        for result in fixture.results.iter().filter(|r| r.stats.is_some()) {
            if row(report, &fixture.id, &result.implementation).is_none() {
                found.push(format!(
                    "{} on {}: a baseline row this run did not measure",
                    fixture.id, result.implementation
                ));
            }
        }
    }
    found
}

/// A per-step time for people: `812 ns`, `41.3 µs`, `2.07 ms`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.1} µs", ns / 1_000.0)
    } else {
        format!("{:.2} ms", ns / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_of(rows: &[(&str, &str, f64)]) -> BenchReport {
        let mut report = BenchReport {
            iterations: 1,
            batches: 1,
            fixtures: Vec::new(),
        };
        for (fixture, implementation, median_ns) in rows {
            let result = ImplementationResult {
                implementation: (*implementation).into(),
                stats: Some(StepStats {
                    median_ns: *median_ns,
                    p10_ns: *median_ns,
                    p90_ns: *median_ns,
                    steps: 1,
                    output_bytes: 1,
                }),
                error: None,
                ratio: None,
            };
            match report.fixtures.iter_mut().find(|f| f.id == *fixture) {
                Some(found) => found.results.push(result),
                None => report.fixtures.push(FixtureResult {
                    id: (*fixture).into(),
                    results: vec![result],
                }),
            }
        }
        report
    }

    #[test]
    fn an_unmatched_baseline_row_is_a_regression_not_a_silent_pass() {
        let baseline = report_of(&[
            ("standard", "dshc 0.1.0", 100.0),
            ("old-name", "dshc 0.1.0", 50.0),
        ]);
        let same = report_of(&[
            ("standard", "dshc 0.1.0", 110.0),
            ("old-name", "dshc 0.1.0", 50.0),
        ]);
        assert_eq!(regressions(&same, &baseline, 25.0), Vec::<String>::new());
        let slower = report_of(&[
            ("standard", "dshc 0.1.0", 200.0),
            ("old-name", "dshc 0.1.0", 50.0),
        ]);
        assert_eq!(regressions(&slower, &baseline, 25.0).len(), 1);
        // A version bump and a renamed fixture: nothing compares, and each
        // row without its partner is named.
        let bumped = report_of(&[
            ("standard", "dshc 0.2.0", 100.0),
            ("new-name", "dshc 0.2.0", 50.0),
        ]);
        let found = regressions(&bumped, &baseline, 25.0);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].starts_with("standard on dshc 0.2.0: the baseline has no row"),
            "{found:#?}"
        );
        assert!(
            found[3].starts_with("old-name on dshc 0.1.0: a baseline row this run did not measure"),
            "{found:#?}"
        );
    }

    #[test]
    fn percentiles_are_nearest_rank_over_per_step_times() {
        let reply = BenchReply {
            batch_ns: vec![5_000, 1_000, 2_000, 4_000, 3_000],
            output_bytes: 7,
        };
        let stats = StepStats::of(&reply, 10).unwrap();
        assert_eq!(stats.median_ns, 300.0);
        assert_eq!(stats.p10_ns, 100.0);
        assert_eq!(stats.p90_ns, 500.0);
        assert_eq!(stats.steps, 50);
        assert!(StepStats::of(&BenchReply::default(), 10).is_none());
        assert_eq!(format_ns(812.4), "812 ns");
        assert_eq!(format_ns(41_300.0), "41.3 µs");
        assert_eq!(format_ns(2_070_000.0), "2.07 ms");
    }

    #[test]
    fn the_standard_fixture_builds_the_documented_registry() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../benches/fixtures/standard.toml");
        let fixture = fixture::load_fixture(&path).unwrap();
        let rig = BenchRig::new(&fixture.case).unwrap();
        let output = rig.step().unwrap();
        // identity + persona + 18 guides (one shadowed by the scope)
        assert_eq!(output.prompt.matches("\n\n").count() + 1, 20);
        assert_eq!(output.tools, 40);
        assert!(
            output
                .prompt
                .contains("Scoped guidance replaces the global first guide")
        );
        assert!(
            !output.prompt.contains("{{"),
            "every reference was interpolated"
        );
        assert!(
            output
                .prompt
                .contains("run the tests in value-3 before you finish")
        );
        assert!(output.snapshot.starts_with("Current runtime context."));
        assert_eq!(output.snapshot.matches("sandbox on").count(), 5);
        let timed = rig.time(3, 2).unwrap();
        assert_eq!(timed.batch_ns.len(), 2);
        assert_eq!(timed.output_bytes, output.bytes());
    }
}
