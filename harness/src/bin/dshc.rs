//! `dshc`: the command-line front end. Glue only: parsing arguments, printing
//! results and mapping them to exit codes; the work is in the library.
//!
//! Exit codes: 0 everything passed; 1 some case failed; 2 bad input or usage
//! (a malformed scenario, a missing path, an unknown flag).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use harness::adapter::process::{AdapterProcess, Limits};
use harness::adapter::{External, Implementation as _};
use harness::coverage::{Coverage, load_catalog};
use harness::report::{Report, ReportDigest, markdown_matrix};
use harness::runner::{
    CaseReport, Outcome, Summary, Verdict, check_with, describe, load_expected_failures,
};
use harness::scenario::bless::{bless_requested, blessed_source};
use harness::scenario::format::Level;
use harness::scenario::load::{LoadedScenario, discover, load_scenario};

const EXIT_FAILURES: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(
    name = "dshc",
    version,
    about = "Conformance and simulation harness for dsh prompt assembly"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenario files and folders on the reference model.
    Run {
        /// Scenario files or folders (default: ./scenarios).
        paths: Vec<PathBuf>,
    },
    /// Print spec clauses against the scenarios that cover them.
    Coverage {
        /// Scenario folders (default: ./scenarios).
        paths: Vec<PathBuf>,
        /// The clause catalog (default: <first path>/clauses.toml).
        #[arg(long)]
        catalog: Option<PathBuf>,
        /// Only report uncovered clauses of this level.
        #[arg(long, value_parser = parse_level)]
        level: Option<Level>,
        /// Exit 1 when a clause is uncovered.
        #[arg(long)]
        strict: bool,
    },
    /// Run scenarios on an implementation through an adapter and report compliance.
    Check {
        /// The adapter command line, run with `sh -c` (e.g. 'dshc adapter').
        #[arg(long)]
        adapter: String,
        /// Scenario files or folders (default: ./scenarios).
        paths: Vec<PathBuf>,
        /// Cases this implementation is known to fail (TOML: [[case]] id, reason).
        #[arg(long)]
        expected_failures: Option<PathBuf>,
        /// Write <name>.json, <name>.junit.xml and <name>.md here.
        #[arg(long)]
        report_dir: Option<PathBuf>,
        /// Per-case timeout.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Largest reply line accepted.
        #[arg(long, default_value_t = 8 << 20)]
        max_reply_bytes: usize,
        /// The clause catalog for the Markdown report (default: <first path>/clauses.toml).
        #[arg(long)]
        catalog: Option<PathBuf>,
    },
    /// Differential run: seeded random cases on the reference and on an adapter.
    Diff {
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
        /// Where the shrunk disagreement is written.
        #[arg(long, default_value = "scenarios/regressions")]
        regressions_dir: PathBuf,
        /// Per-case timeout.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Most shrinking attempts.
        #[arg(long, default_value_t = 2_000)]
        shrink_attempts: usize,
    },
    /// Serve the reference implementation over the adapter protocol on stdin/stdout.
    Adapter,
    /// Merge JSON reports of several implementations into one Markdown table.
    Report {
        /// JSON reports written by `dshc check --report-dir`.
        reports: Vec<PathBuf>,
        /// The clause catalog.
        #[arg(long, default_value = "scenarios/clauses.toml")]
        catalog: PathBuf,
    },
    /// Run one scenario on the reference and print what it observed (for
    /// scenario authors): the session log as JSON lines for loop scenarios,
    /// the observations as JSON otherwise.
    Show {
        /// The scenario file.
        path: PathBuf,
        /// Print the provider's received request bodies instead of the log.
        #[arg(long)]
        requests: bool,
    },
    /// Seeded random loop sessions in simulated time, each checked against
    /// the loop invariants and run twice for determinism.
    Sim {
        /// The seed; session k of seed s is the same on every machine.
        #[arg(long)]
        seed: u64,
        /// How many sessions (0..N).
        #[arg(long, default_value_t = 100, conflicts_with = "session")]
        sessions: u64,
        /// Run only this session (the replay form).
        #[arg(long)]
        session: Option<u64>,
        /// Where a shrunk failing session is written.
        #[arg(long, default_value = "scenarios/regressions")]
        regressions_dir: PathBuf,
    },
    /// Serve the scripted mock provider on a real loopback socket, for any
    /// OpenAI- or DeepSeek-compatible client. Runs until killed.
    Serve {
        /// The script: TOML or JSON with `responses = [...]`.
        #[arg(long)]
        script: PathBuf,
        /// Port on 127.0.0.1 (0 picks a free one; the address is printed).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Fold a session log (JSON lines) and print, one per line, the wire body
    /// of every request reconstructed from it.
    Replay {
        /// The session log.
        log: PathBuf,
    },
    /// Print the JSON Schema of scenario files.
    Schema {
        /// Print the adapter protocol schema instead.
        #[arg(long)]
        protocol: bool,
    },
}

fn parse_level(text: &str) -> Result<Level, String> {
    match text {
        "assembly" => Ok(Level::Assembly),
        "loop" => Ok(Level::Loop),
        other => Err(format!(
            "unknown level {other:?} (expected: assembly or loop)"
        )),
    }
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

/// Load every scenario under `paths`, printing each bad file.
fn load_all(paths: &[PathBuf]) -> (Vec<LoadedScenario>, usize) {
    let (files, discover_errors) = discover(paths);
    let mut bad = discover_errors.len();
    for error in &discover_errors {
        eprintln!("error: {error}");
    }
    let mut scenarios = Vec::with_capacity(files.len());
    for file in files {
        match load_scenario(&file) {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => {
                eprintln!("error: {error}");
                bad += 1;
            }
        }
    }
    (scenarios, bad)
}

fn run(paths: Vec<PathBuf>) -> u8 {
    let bless = match bless_requested() {
        Ok(bless) => bless,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let (scenarios, bad) = load_all(&default_paths(paths));
    let (mut passed, mut failed) = (0usize, 0usize);
    for scenario in &scenarios {
        match harness::runner::check(scenario) {
            Outcome::Pass => passed += 1,
            outcome => {
                failed += 1;
                println!("FAIL {}", describe(scenario, &outcome));
                if bless {
                    let result = harness::scripted::run_case(&scenario.case);
                    match blessed_source(scenario, &result).and_then(|text| {
                        std::fs::write(&scenario.path, text).map_err(|e| e.to_string())
                    }) {
                        Ok(()) => println!("blessed {}", scenario.path.display()),
                        Err(error) => {
                            eprintln!("error: cannot bless {}: {error}", scenario.path.display())
                        }
                    }
                }
            }
        }
    }
    let invalid = if bad > 0 {
        format!(", {bad} invalid")
    } else {
        String::new()
    };
    println!("{passed} passed, {failed} failed{invalid}");
    if bad > 0 {
        EXIT_BAD_INPUT
    } else if failed > 0 {
        EXIT_FAILURES
    } else {
        0
    }
}

fn coverage(
    paths: Vec<PathBuf>,
    catalog: Option<PathBuf>,
    level: Option<Level>,
    strict: bool,
) -> u8 {
    let paths = default_paths(paths);
    let catalog_path = catalog.unwrap_or_else(|| paths[0].join("clauses.toml"));
    let catalog = match load_catalog(&catalog_path) {
        Ok(catalog) => catalog,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let (scenarios, bad) = load_all(&paths);
    let coverage = Coverage::compute(&catalog, &scenarios);
    let width = catalog.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for (clause, ids) in &coverage.rows {
        let cell = match (&clause.excluded, ids.is_empty()) {
            (Some(reason), true) => format!("excluded: {reason}"),
            (_, true) => "UNCOVERED".to_string(),
            (_, false) => ids.join(", "),
        };
        println!("{:width$}  {:>3}  {cell}", clause.id, ids.len());
    }
    for (scenario, clause) in &coverage.unknown {
        eprintln!(
            "error: {scenario} covers {clause}, which is not in {}",
            catalog_path.display()
        );
    }
    let uncovered = coverage.uncovered(level);
    println!();
    if uncovered.is_empty() {
        println!(
            "every clause{} is covered",
            level.map(|_| " of this level").unwrap_or_default()
        );
    } else {
        println!("uncovered clauses:");
        for clause in &uncovered {
            println!("  {}  {}", clause.id, clause.text);
        }
    }
    if bad > 0 || !coverage.unknown.is_empty() {
        EXIT_BAD_INPUT
    } else if strict && !uncovered.is_empty() {
        EXIT_FAILURES
    } else {
        0
    }
}

#[allow(clippy::too_many_arguments)]
fn check(
    adapter: String,
    paths: Vec<PathBuf>,
    expected_failures: Option<PathBuf>,
    report_dir: Option<PathBuf>,
    timeout_ms: u64,
    max_reply_bytes: usize,
    catalog: Option<PathBuf>,
) -> u8 {
    let paths = default_paths(paths);
    let expected = match expected_failures
        .as_deref()
        .map(load_expected_failures)
        .transpose()
    {
        Ok(expected) => expected.unwrap_or_default(),
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let catalog_path = catalog.unwrap_or_else(|| paths[0].join("clauses.toml"));
    let (scenarios, bad) = load_all(&paths);
    for listed in &expected {
        if !scenarios.iter().any(|s| s.id == listed.id) {
            eprintln!(
                "warning: expected failure {} names no loaded scenario",
                listed.id
            );
        }
    }
    let mut implementation = External::new(AdapterProcess::new(
        &adapter,
        Limits {
            timeout_ms,
            max_reply_bytes,
            ..Limits::default()
        },
    ));
    let mut summary = Summary {
        invalid: bad,
        ..Summary::default()
    };
    let mut cases = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        let outcome = check_with(scenario, &mut implementation);
        let report = CaseReport {
            id: scenario.id.clone(),
            covers: scenario.scenario.covers.clone(),
            outcome,
            expected_failure: expected
                .iter()
                .find(|e| e.id == scenario.id)
                .map(|e| e.reason.clone()),
        };
        let verdict = report.verdict();
        summary.add(verdict);
        match verdict {
            Verdict::Passed => println!("pass     {}", scenario.id),
            Verdict::Skipped => println!("skipped  {}", describe(scenario, &report.outcome)),
            Verdict::ExpectedFailure => {
                println!("xfail    {} ({})", scenario.id, report.outcome.label())
            }
            Verdict::UnexpectedPass => println!(
                "XPASS    {}: passes but is listed as an expected failure; remove it from the list",
                scenario.id
            ),
            Verdict::Failed => println!("FAIL     {}", describe(scenario, &report.outcome)),
        }
        cases.push(report);
    }
    let info = implementation
        .info()
        .unwrap_or(harness::protocol::Implementation {
            name: "unknown".into(),
            version: "unknown".into(),
            language: "unknown".into(),
            homepage: None,
        });
    implementation.stop();
    let report = Report {
        implementation: info,
        command: adapter,
        summary,
        cases,
    };
    if let Some(dir) = report_dir
        && let Err(message) = write_reports(&dir, &report, &catalog_path)
    {
        eprintln!("error: {message}");
        return EXIT_BAD_INPUT;
    }
    println!("{}", summary.line());
    if bad > 0 {
        EXIT_BAD_INPUT
    } else if summary.failed > 0 {
        EXIT_FAILURES
    } else {
        0
    }
}

#[allow(clippy::too_many_arguments)]
fn diff(
    adapter: String,
    seed: u64,
    cases: u64,
    case: Option<u64>,
    regressions_dir: PathBuf,
    timeout_ms: u64,
    shrink_attempts: usize,
) -> u8 {
    use harness::diff::{Comparison, compare_once, shrink, write_regression};
    let mut implementation = External::new(AdapterProcess::new(
        &adapter,
        Limits {
            timeout_ms,
            ..Limits::default()
        },
    ));
    let range = match case {
        Some(case) => case..case + 1,
        None => 0..cases,
    };
    let started = std::time::Instant::now();
    let (mut agreed, mut not_run) = (0u64, 0u64);
    let progress = Progress::new(range.end - range.start);
    for case in range {
        progress.tick(case);
        let scenario = harness::generate::generate(seed, case);
        match compare_once(
            &scenario,
            &format!("diff/{seed}/{case}"),
            &mut implementation,
        ) {
            Comparison::Agree => agreed += 1,
            Comparison::NotRun(reason) => {
                not_run += 1;
                println!("case {case}: not run: {reason}");
            }
            Comparison::Disagree { .. } => {
                progress.clear();
                println!("case {case} of seed {seed}: the implementations disagree; shrinking");
                let minimal = shrink(&scenario, &mut implementation, shrink_attempts);
                let other = match compare_once(&minimal, "minimal", &mut implementation) {
                    Comparison::Disagree { other, .. } => *other,
                    _ => Default::default(),
                };
                match write_regression(&regressions_dir, seed, case, &adapter, &minimal, &other) {
                    Ok(path) => println!("wrote {}", path.display()),
                    Err(error) => eprintln!("error: cannot write the regression: {error}"),
                }
                println!("seed {seed}, case {case}; replay with:");
                println!("  dshc diff --adapter '{adapter}' --seed {seed} --case {case}");
                implementation.stop();
                return EXIT_FAILURES;
            }
        }
    }
    progress.clear();
    implementation.stop();
    let elapsed = started.elapsed().as_secs_f64();
    let total = agreed + not_run;
    println!(
        "{total} cases: {agreed} agree, 0 disagree, {not_run} not run ({:.0} cases/s)",
        total as f64 / elapsed.max(1e-9)
    );
    if not_run > 0 { EXIT_FAILURES } else { 0 }
}

/// A progress line on a terminal; silent when stderr is not one (CI, pipes).
struct Progress {
    total: u64,
    enabled: bool,
}

impl Progress {
    fn new(total: u64) -> Self {
        use std::io::IsTerminal;
        Progress {
            total,
            enabled: std::io::stderr().is_terminal() && std::env::var_os("CI").is_none(),
        }
    }

    fn tick(&self, done: u64) {
        const WIDTH: u64 = 30;
        if self.enabled && done.is_multiple_of(10) {
            let filled = (done * WIDTH).checked_div(self.total).unwrap_or(WIDTH) as usize;
            let bar = format!(
                "{}{}",
                "#".repeat(filled),
                ".".repeat(WIDTH as usize - filled.min(WIDTH as usize))
            );
            eprint!("\r[{bar}] {done}/{}", self.total);
        }
    }

    fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[K");
        }
    }
}

fn file_stem_for(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_reports(
    dir: &std::path::Path,
    report: &Report,
    catalog_path: &std::path::Path,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = file_stem_for(&report.implementation.name);
    let catalog = load_catalog(catalog_path)?;
    let files = [
        (format!("{stem}.json"), report.to_json()),
        (format!("{stem}.junit.xml"), report.to_junit()),
        (
            format!("{stem}.md"),
            markdown_matrix(&catalog, &[report.digest()]),
        ),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn merge_reports(reports: Vec<PathBuf>, catalog: PathBuf) -> u8 {
    let catalog = match load_catalog(&catalog) {
        Ok(catalog) => catalog,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut digests = Vec::new();
    for path in &reports {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<ReportDigest>(&text).map_err(|e| e.to_string()))
        {
            Ok(digest) => digests.push(digest),
            Err(message) => {
                eprintln!("error: {}: {message}", path.display());
                return EXIT_BAD_INPUT;
            }
        }
    }
    print!("{}", markdown_matrix(&catalog, &digests));
    0
}

fn sim(seed: u64, sessions: u64, session: Option<u64>, regressions_dir: &std::path::Path) -> u8 {
    use harness::sim::check::{check_session, shrink, steps_of, write_session};
    use harness::sim::generate::generate_session;
    let range = match session {
        Some(session) => session..session + 1,
        None => 0..sessions,
    };
    let started = std::time::Instant::now();
    let progress = Progress::new(range.end - range.start);
    let (mut checked, mut steps) = (0u64, 0usize);
    for index in range {
        progress.tick(index);
        let scenario = generate_session(seed, index);
        let (violations, run) = check_session(&scenario);
        checked += 1;
        steps += run.as_ref().map_or(0, steps_of);
        let Some(first) = violations.first() else {
            continue;
        };
        progress.clear();
        println!(
            "session {index} of seed {seed} violates {} invariant(s):",
            violations.len()
        );
        for violation in &violations {
            println!("  [{}] {}", violation.tag, violation.detail);
        }
        let minimal = shrink(&scenario, &first.tag, 400);
        let remaining = check_session(&minimal).0;

        match write_session(regressions_dir, seed, index, &minimal, &remaining) {
            Ok(path) => println!("wrote the shrunk session to {}", path.display()),
            Err(error) => eprintln!("error: cannot write the session: {error}"),
        }
        println!("replay with:\n  dshc sim --seed {seed} --session {index}");
        return EXIT_FAILURES;
    }
    progress.clear();
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "{checked} sessions, {steps} steps, 0 violations ({:.0} sessions/s, each run twice)",
        checked as f64 / elapsed
    );
    0
}

fn serve(path: &std::path::Path, port: u16) -> u8 {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {}: {error}", path.display());
            return EXIT_BAD_INPUT;
        }
    };
    let script: Result<mock_provider::Script, String> =
        if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            toml::from_str(&text).map_err(|e| e.to_string())
        };
    let provider = match script
        .map_err(|e| e.to_string())
        .and_then(|s| mock_provider::MockProvider::new(s).map_err(|e| e.to_string()))
    {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("error: {}: {error}", path.display());
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start a runtime: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("error: cannot listen on 127.0.0.1:{port}: {error}");
                return EXIT_BAD_INPUT;
            }
        };
        match listener.local_addr() {
            Ok(address) => println!("listening on http://{address}"),
            Err(error) => eprintln!("warning: {error}"),
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        match mock_provider::serve_tokio(listener, provider).await {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("error: {error}");
                EXIT_BAD_INPUT
            }
        }
    })
}

fn replay(path: &std::path::Path) -> u8 {
    use harness::sim::replay::{dispatch_points, read_log, wire_body_at};
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {}: {error}", path.display());
            return EXIT_BAD_INPUT;
        }
    };
    let events = match read_log(&text) {
        Ok(events) => events,
        Err(error) => {
            eprintln!("error: {}: {error}", path.display());
            return EXIT_BAD_INPUT;
        }
    };
    if let Err(error) = harness::model::session::fold_surface(&events) {
        eprintln!(
            "error: {}: the log's surface does not fold: {}",
            path.display(),
            error.message
        );
        return EXIT_BAD_INPUT;
    }
    // The session id travels in an HTTP header, not in the body.
    let defaults = harness::model::deepseek::DeepSeekDefaults::default();
    for point in dispatch_points(&events) {
        match wire_body_at(&events[..point], "replayed", &defaults) {
            Ok(body) => println!("{body}"),
            Err(error) => {
                eprintln!("error: the request before seq {point} cannot be rebuilt: {error}");
                return EXIT_FAILURES;
            }
        }
    }
    0
}

fn show(path: &std::path::Path, requests: bool) -> u8 {
    let scenario = match load_scenario(path) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let result = harness::scripted::run_case(&scenario.case);
    match &result.run {
        Some(run) if requests => {
            for request in &run.requests {
                println!(
                    "{}",
                    serde_json::to_string_pretty(request).unwrap_or_default()
                );
            }
        }
        Some(run) => {
            for event in &run.log {
                println!("{event}");
            }
            if let Some(failure) = &run.failure {
                eprintln!("run failed: {failure}");
            }
        }
        None => println!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        ),
    }
    0
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                0
            });
        }
    };
    let code = match cli.command {
        Command::Run { paths } => run(paths),
        Command::Coverage {
            paths,
            catalog,
            level,
            strict,
        } => coverage(paths, catalog, level, strict),
        Command::Check {
            adapter,
            paths,
            expected_failures,
            report_dir,
            timeout_ms,
            max_reply_bytes,
            catalog,
        } => check(
            adapter,
            paths,
            expected_failures,
            report_dir,
            timeout_ms,
            max_reply_bytes,
            catalog,
        ),
        Command::Diff {
            adapter,
            seed,
            cases,
            case,
            regressions_dir,
            timeout_ms,
            shrink_attempts,
        } => diff(
            adapter,
            seed,
            cases,
            case,
            regressions_dir,
            timeout_ms,
            shrink_attempts,
        ),
        Command::Adapter => {
            let stdin = std::io::stdin().lock();
            let stdout = std::io::stdout().lock();
            match harness::adapter::serve::serve(stdin, stdout) {
                Ok(()) => 0,
                Err(error) => {
                    eprintln!("error: {error}");
                    EXIT_BAD_INPUT
                }
            }
        }
        Command::Report { reports, catalog } => merge_reports(reports, catalog),
        Command::Show { path, requests } => show(&path, requests),
        Command::Replay { log } => replay(&log),
        Command::Serve { script, port } => serve(&script, port),
        Command::Sim {
            seed,
            sessions,
            session,
            regressions_dir,
        } => sim(seed, sessions, session, &regressions_dir),
        Command::Schema { protocol } => {
            if protocol {
                print!("{}", harness::schema::protocol_schema());
            } else {
                print!("{}", harness::schema::scenario_schema());
            }
            0
        }
    };
    ExitCode::from(code)
}
