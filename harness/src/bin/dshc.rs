//! `dshc`: the command-line front end. Glue only: parsing arguments, printing
//! results and mapping them to exit codes; the work is in the library.
//!
//! Exit codes: 0 everything passed; 1 some case failed; 2 bad input or usage
//! (a malformed scenario, a missing path, an unknown flag).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use harness::coverage::{Coverage, load_catalog};
use harness::runner::{Outcome, describe};
use harness::scenario::bless::{bless_requested, blessed_source};
use harness::scenario::format::Level;
use harness::scenario::load::{LoadedScenario, discover, load_scenario};

const EXIT_FAILURES: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(name = "dshc", version, about = "Conformance and simulation harness for dsh prompt assembly")]
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
        other => Err(format!("unknown level {other:?} (expected: assembly)")),
    }
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() { vec![PathBuf::from("scenarios")] } else { paths }
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
                        Err(error) => eprintln!("error: cannot bless {}: {error}", scenario.path.display()),
                    }
                }
            }
        }
    }
    let invalid = if bad > 0 { format!(", {bad} invalid") } else { String::new() };
    println!("{passed} passed, {failed} failed{invalid}");
    if bad > 0 {
        EXIT_BAD_INPUT
    } else if failed > 0 {
        EXIT_FAILURES
    } else {
        0
    }
}

fn coverage(paths: Vec<PathBuf>, catalog: Option<PathBuf>, level: Option<Level>, strict: bool) -> u8 {
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
        eprintln!("error: {scenario} covers {clause}, which is not in {}", catalog_path.display());
    }
    let uncovered = coverage.uncovered(level);
    println!();
    if uncovered.is_empty() {
        println!("every clause{} is covered", level.map(|_| " of this level").unwrap_or_default());
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { EXIT_BAD_INPUT } else { 0 });
        }
    };
    let code = match cli.command {
        Command::Run { paths } => run(paths),
        Command::Coverage { paths, catalog, level, strict } => coverage(paths, catalog, level, strict),
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
