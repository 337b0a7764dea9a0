//! `dshc bench`: assembly cost per step of any implementation, on the shared
//! fixtures, measured side by side in one run, with a JSON report a CI job
//! compares against a committed baseline, and charts of it (`--report-dir`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use dshc_reference::bench::fixture::{Fixture, load_fixture, load_fixture_dir};
use dshc_reference::bench::{
    BenchReport, BenchRig, FixtureResult, ImplementationResult, StepStats, format_ns, regressions,
};
use dshc_runner::adapter::External;
use dshc_runner::adapter::process::{AdapterProcess, Limits};
use dshc_runner::report::bench_charts::{bench_charts, bench_page};
use dshc_scenario::data_file::{parse_json, read_text};
use dshc_scenario::protocol::{BenchReply, ImplementationInfo};
use serde::{Deserialize, Serialize};

use crate::Exit;

/// `dshc bench`.
#[derive(clap::Args)]
pub struct Args {
    /// An implementation to measure, as an adapter command (`sh -c`); repeat
    /// for a side-by-side table. `reference` is dshc's reference in-process.
    /// Default: `reference`.
    #[arg(long)]
    adapter: Vec<String>,
    /// A fixture file; repeat for several. Default: every `*.toml` in
    /// `benches/fixtures`.
    #[arg(long)]
    fixture: Vec<PathBuf>,
    /// Steps per batch.
    #[arg(long, default_value_t = 200)]
    iterations: u32,
    /// Batches per fixture and implementation (the percentiles are over them).
    #[arg(long, default_value_t = 25)]
    batches: u32,
    /// Write the report as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write bench.json, an SVG chart per fixture and of the scaling curve
    /// (with the baseline beside the run, when given), and an index.html
    /// that holds them all, into DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "instructions")]
    report_dir: Option<PathBuf>,
    /// A report from an earlier run to compare with: a median slower than
    /// the baseline's by more than `--max-regression-percent` fails.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// How much slower than the baseline a median may be, in percent.
    #[arg(long, default_value_t = 25.0)]
    max_regression_percent: f64,
    /// Longest wait for one fixture's measurement from an adapter.
    #[arg(long, default_value_t = dshc_runner::limits::BENCH_TIMEOUT_MS)]
    timeout_ms: u64,
    /// Count the reference's instructions per step under valgrind's
    /// callgrind instead of timing: a figure the machine's load does not
    /// move. Each fixture runs in two child processes, with `--iterations`
    /// steps and with twice as many; their difference is the steps' count.
    #[arg(long, conflicts_with = "adapter")]
    instructions: bool,
    /// With `--instructions`: committed counts (a JSON report of an earlier
    /// `--instructions --json` run); a count more than
    /// `--max-instruction-regression-percent` above its baseline fails.
    #[arg(long, value_name = "FILE", requires = "instructions")]
    instruction_baseline: Option<PathBuf>,
    /// With `--instructions`: also count the simulator's instructions per
    /// executed step, the row `sim`: `dshc sim --seed 1 -j 1` over N
    /// sessions and over 2N, their difference divided by the executed steps
    /// of the sessions added (each session runs twice).
    #[arg(long, value_name = "N", requires = "instructions")]
    sim_sessions: Option<u64>,
    /// How much above its baseline an instruction count may be, in percent.
    #[arg(long, default_value_t = 10.0)]
    max_instruction_regression_percent: f64,
}

enum Subject {
    Reference,
    Adapter(Box<External>),
}

impl Subject {
    fn measure(&mut self, fixture: &Fixture, args: &Args) -> Result<BenchReply, String> {
        match self {
            Subject::Reference => BenchRig::new(&fixture.case)
                .map_err(|e| e.to_string())
                .and_then(|rig| {
                    rig.time(args.iterations, args.batches)
                        .map_err(|e| e.message)
                }),
            Subject::Adapter(adapter) => adapter
                .bench(
                    &fixture.case,
                    args.iterations,
                    args.batches,
                    args.timeout_ms,
                )
                .map_err(|e| e.to_string()),
        }
    }

    fn name(&mut self) -> String {
        let info = match self {
            Subject::Reference => Some(dshc_reference::reference_info()),
            Subject::Adapter(adapter) => {
                use dshc_runner::adapter::Implementation;
                adapter.info()
            }
        };
        info.map_or_else(
            || "unknown".to_owned(),
            |ImplementationInfo { name, version, .. }| format!("{name} {version}"),
        )
    }
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let fixtures = if args.fixture.is_empty() {
        load_fixture_dir(std::path::Path::new("benches/fixtures"))?
    } else {
        args.fixture
            .iter()
            .map(|path| load_fixture(path))
            .collect::<Result<_, _>>()?
    };
    anyhow::ensure!(!fixtures.is_empty(), "no fixture to measure");
    anyhow::ensure!(
        args.iterations > 0 && args.batches > 0,
        "--iterations and --batches must be at least 1"
    );
    if args.instructions {
        return count_instructions(&args, &fixtures);
    }
    // Read before anything is written: `--json F --baseline F` compares
    // with F as it was.
    let baseline: Option<BenchReport> = match &args.baseline {
        Some(path) => Some(parse_json(path, &read_text(path)?)?),
        None => None,
    };
    let commands = if args.adapter.is_empty() {
        vec!["reference".to_owned()]
    } else {
        args.adapter.clone()
    };
    let mut subjects: Vec<Subject> = commands
        .iter()
        .map(|command| match command.as_str() {
            "reference" => Subject::Reference,
            command => Subject::Adapter(Box::new(External::new(AdapterProcess::new(
                command,
                Limits::default(),
            )))),
        })
        .collect();
    let mut report = BenchReport {
        iterations: args.iterations,
        batches: args.batches,
        fixtures: Vec::new(),
    };
    let mut broken = false;
    // Fixture by fixture, every implementation in turn: side by side in one run.
    for fixture in &fixtures {
        let (result, fixture_broken) = measure_fixture(fixture, &mut subjects, &args);
        broken |= fixture_broken;
        report.fixtures.push(result);
    }
    for subject in &mut subjects {
        if let Subject::Adapter(adapter) = subject {
            adapter.stop();
        }
    }
    print_table(&report);
    if let Some(path) = &args.json {
        dshc_scenario::data_file::replace_file(
            path,
            &(serde_json::to_string_pretty(&report)? + "\n"),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &args.report_dir {
        write_bench_report_dir(dir, &report, baseline.as_ref())?;
    }
    if let Some(baseline) = &baseline {
        let regressions = regressions(&report, baseline, args.max_regression_percent);
        for regression in &regressions {
            eprintln!("regression: {regression}");
        }
        broken |= !regressions.is_empty();
    }
    Ok(if broken { Exit::Failed } else { Exit::Passed })
}

/// `bench.json`, the charts as `.svg` files, and `index.html` with them
/// inline, all drawn from the JSON written first (read back).
fn write_bench_report_dir(
    dir: &std::path::Path,
    report: &BenchReport,
    baseline: Option<&BenchReport>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(report)? + "\n";
    let written: BenchReport = serde_json::from_str(&json)?;
    let charts = bench_charts(&written, baseline)?;
    let mut files = vec![("bench.json".to_owned(), json)];
    files.extend(
        charts
            .iter()
            .map(|chart| (chart.file_name.clone(), chart.svg.clone())),
    );
    files.push((
        "index.html".to_owned(),
        bench_page(&written, &charts, baseline.is_some()),
    ));
    for (name, text) in files {
        let path = dir.join(name);
        dshc_scenario::data_file::replace_file(&path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// One fixture on every implementation in turn, each one's ratio to the
/// slowest; broken when one fails or the rendered sizes differ.
fn measure_fixture(
    fixture: &Fixture,
    subjects: &mut [Subject],
    args: &Args,
) -> (FixtureResult, bool) {
    let mut broken = false;
    let mut results = Vec::new();
    for subject in subjects.iter_mut() {
        let measured = subject.measure(fixture, args);
        let implementation = subject.name();
        results.push(match measured {
            Ok(reply) => ImplementationResult {
                implementation,
                stats: StepStats::of(&reply, args.iterations),
                error: None,
                ratio: None,
            },
            Err(error) => {
                broken = true;
                ImplementationResult {
                    implementation,
                    stats: None,
                    error: Some(error),
                    ratio: None,
                }
            }
        });
    }
    let slowest = results
        .iter()
        .filter_map(|result| result.stats.as_ref().map(|stats| stats.median_ns))
        .fold(0.0_f64, f64::max);
    for result in &mut results {
        result.ratio = result.stats.as_ref().map(|stats| slowest / stats.median_ns);
    }
    let sizes: Vec<u64> = results
        .iter()
        .filter_map(|result| result.stats.as_ref().map(|stats| stats.output_bytes))
        .collect();
    if sizes.windows(2).any(|pair| pair[0] != pair[1]) {
        eprintln!(
            "error: {}: the implementations rendered different sizes {sizes:?}: they did not build the same registry",
            fixture.id
        );
        broken = true;
    }
    let result = FixtureResult {
        id: fixture.id.clone(),
        results,
    };
    (result, broken)
}

fn print_table(report: &BenchReport) {
    let Some(first) = report.fixtures.first() else {
        return;
    };
    let mut header = format!("{:<14}", "fixture");
    for result in &first.results {
        header.push_str(&format!(" | {:<36}", result.implementation));
    }
    crate::out!("{header}");
    crate::out!("{}", "-".repeat(header.chars().count()));
    for fixture in &report.fixtures {
        let mut line = format!("{:<14}", fixture.id);
        for result in &fixture.results {
            let cell = match (&result.stats, &result.error) {
                (Some(stats), _) => format!(
                    "{} (p10 {}, p90 {}) {:.1}x",
                    format_ns(stats.median_ns),
                    format_ns(stats.p10_ns),
                    format_ns(stats.p90_ns),
                    result.ratio.unwrap_or(1.0)
                ),
                (None, Some(error)) => format!("error: {error}"),
                (None, None) => "no measurement".to_owned(),
            };
            line.push_str(&format!(" | {cell:<36}"));
        }
        crate::out!("{line}");
    }
    crate::out!(
        "median per step ({} batches of {} steps); ratio = the slowest median / this median",
        report.batches,
        report.iterations
    );
}

/// Instructions per step of each fixture on the reference.
#[derive(Debug, Serialize, Deserialize)]
struct InstructionReport {
    /// Steps in the shorter of the two runs (the longer has twice as many).
    iterations: u32,
    /// Per fixture id, instructions per step.
    per_step: std::collections::BTreeMap<String, u64>,
}

fn count_instructions(args: &Args, fixtures: &[Fixture]) -> anyhow::Result<Exit> {
    let exe = std::env::current_exe().context("cannot find this dshc")?;
    let scratch = std::env::temp_dir().join(format!("dshc-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut report = InstructionReport {
        iterations: args.iterations,
        per_step: std::collections::BTreeMap::new(),
    };
    for fixture in fixtures {
        let path = fixture_path(args, fixture);
        let count = |iterations: u32| -> anyhow::Result<u64> {
            let mut command = vec!["bench".into(), "--batches".into(), "1".into()];
            command.extend(["--iterations".into(), iterations.to_string().into()]);
            command.extend(["--fixture".into(), path.clone().into_os_string()]);
            let out = scratch.join(format!("{}-{iterations}.out", fixture.id));
            Ok(callgrind(&exe, &command, &out)?.0)
        };
        let once = count(args.iterations)?;
        let twice = count(args.iterations * 2)?;
        let per_step = twice.saturating_sub(once) / u64::from(args.iterations);
        report.per_step.insert(fixture.id.clone(), per_step);
    }
    if let Some(sessions) = args.sim_sessions {
        report
            .per_step
            .insert("sim".into(), sim_instructions(&exe, &scratch, sessions)?);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let baseline: Option<InstructionReport> = match &args.instruction_baseline {
        Some(path) => Some(parse_json(path, &read_text(path)?)?),
        None => None,
    };
    let mut broken = false;
    crate::out!(
        "{:<14} | {:>14} | {:>14} | change",
        "fixture",
        "instr/step",
        "baseline"
    );
    for (id, count) in &report.per_step {
        let before = baseline.as_ref().and_then(|b| b.per_step.get(id)).copied();
        let change = before.map(|before| (*count as f64 / before as f64 - 1.0) * 100.0);
        let over = change.is_some_and(|change| change > args.max_instruction_regression_percent);
        broken |= over;
        crate::out!(
            "{id:<14} | {count:>14} | {:>14} | {}{}",
            before.map_or("-".to_owned(), |b| b.to_string()),
            change.map_or("-".to_owned(), |c| format!("{c:+.1}%")),
            if over { "  REGRESSION" } else { "" }
        );
    }
    if broken {
        eprintln!(
            "regression: an instruction count is more than {}% above its baseline",
            args.max_instruction_regression_percent
        );
    }
    if let Some(path) = &args.json {
        dshc_scenario::data_file::replace_file(
            path,
            &(serde_json::to_string_pretty(&report)? + "\n"),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(if broken { Exit::Failed } else { Exit::Passed })
}

/// Instructions per executed step of `dshc sim --seed 1 -j 1`: the
/// sessions `sessions..2 * sessions` alone, as the difference of two runs.
fn sim_instructions(exe: &Path, scratch: &Path, sessions: u64) -> anyhow::Result<u64> {
    let count = |sessions: u64| -> anyhow::Result<(u64, u64)> {
        let command: Vec<std::ffi::OsString> = ["sim", "--seed", "1", "-j", "1", "--sessions"]
            .into_iter()
            .map(Into::into)
            .chain([sessions.to_string().into()])
            .collect();
        let out = scratch.join(format!("sim-{sessions}.out"));
        let (instructions, stdout) = callgrind(exe, &command, &out)?;
        // `N sessions, S steps, ...`: every session runs twice.
        let steps: u64 = stdout
            .lines()
            .find_map(|line| {
                line.split_once(" sessions, ")?
                    .1
                    .split_once(" steps")?
                    .0
                    .parse()
                    .ok()
            })
            .with_context(|| format!("no step count in the output of dshc sim:\n{stdout}"))?;
        Ok((instructions, 2 * steps))
    };
    anyhow::ensure!(sessions > 0, "--sim-sessions must be at least 1");
    let (once, once_steps) = count(sessions)?;
    let (twice, twice_steps) = count(sessions * 2)?;
    let added_steps = twice_steps.saturating_sub(once_steps);
    anyhow::ensure!(
        added_steps > 0,
        "sessions {sessions}..{} executed no step",
        sessions * 2
    );
    Ok(twice.saturating_sub(once) / added_steps)
}

/// Run this dshc with `command` under callgrind: the instruction total and
/// what it printed.
fn callgrind(
    exe: &Path,
    command: &[std::ffi::OsString],
    out: &Path,
) -> anyhow::Result<(u64, String)> {
    let output = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .context("cannot run valgrind (is it installed?)")?;
    anyhow::ensure!(
        output.status.success(),
        "valgrind failed on dshc {}",
        command
            .iter()
            .map(|part| part.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let text = std::fs::read_to_string(out)?;
    let total = text
        .lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|total| total.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no instruction total in {}", out.display()))?;
    Ok((total, String::from_utf8_lossy(&output.stdout).into_owned()))
}

/// The file a fixture was loaded from.
fn fixture_path(args: &Args, fixture: &Fixture) -> PathBuf {
    args.fixture
        .iter()
        .find(|path| {
            path.file_stem()
                .is_some_and(|stem| stem == fixture.id.as_str())
        })
        .cloned()
        .unwrap_or_else(|| PathBuf::from("benches/fixtures").join(format!("{}.toml", fixture.id)))
}
