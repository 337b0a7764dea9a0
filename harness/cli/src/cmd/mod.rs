//! One module per subcommand, each with its `Args` and a `run` that returns
//! the [`Exit`] code; helpers shared by several live here.

pub mod bench;
pub mod cache_report;
pub mod check;
pub mod coverage;
pub mod diff;
pub mod migrate;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod schema;
pub mod serve;
pub mod show;
pub mod sim;

use std::path::PathBuf;

use dshc_runner::partition::Partition;
use dshc_scenario::load::{LoadedScenario, discover, load_scenario};
use dshc_scenario::protocol::Level;

use crate::Exit;

/// `dshc adapter`: the reference over the protocol on stdin and stdout.
pub fn adapter() -> anyhow::Result<Exit> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    dshc_reference::serve::serve(stdin, stdout)?;
    Ok(Exit::Passed)
}

/// `--level assembly|loop`.
pub fn parse_level(text: &str) -> Result<Level, String> {
    match text {
        "assembly" => Ok(Level::Assembly),
        "loop" => Ok(Level::Loop),
        other => Err(format!(
            "unknown level {other:?} (expected: assembly or loop)"
        )),
    }
}

/// The paths given, or when none, the suite embedded in this binary (its
/// copy in the cache, named on stderr).
pub fn default_paths(paths: Vec<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    if !paths.is_empty() {
        return Ok(paths);
    }
    let suite = crate::suite::materialized()?;
    eprintln!(
        "note: no paths given: running the suite embedded in dshc {} ({} scenarios, at {})",
        env!("CARGO_PKG_VERSION"),
        crate::suite::scenario_count(),
        suite.display()
    );
    Ok(vec![suite])
}

/// Load every scenario under `paths`; each bad file is reported on stdout,
/// in file order before any result, as part of the run's output (`error:
/// file:line:column: message`). Returns the good ones and how many were bad.
pub fn load_all(paths: &[PathBuf]) -> (Vec<LoadedScenario>, usize) {
    let (scenarios, _, bad, _) = load_partition(paths, Partition::WHOLE);
    (scenarios, bad)
}

/// [`load_all`] for one partition: the files at the positions it holds (in
/// discovery order), each scenario's position, the bad inputs among them
/// (discovery errors count in partition 1), and the files of the whole run.
pub fn load_partition(
    paths: &[PathBuf],
    partition: Partition,
) -> (Vec<LoadedScenario>, Vec<usize>, usize, usize) {
    let mut found = discover(paths);
    if partition.index != 1 {
        found.errors.clear();
        found.notes.clear();
    }
    for note in &found.notes {
        crate::out!("note: {note}");
    }
    let mut bad = found.errors.len();
    for error in &found.errors {
        crate::out!("error: {error}");
    }
    let files = found.files;
    let total = files.len();
    if files.is_empty() && found.errors.is_empty() && partition.index == 1 {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        crate::out!(
            "error: no scenario files (*.toml) under {}",
            shown.join(", ")
        );
        bad += 1;
    }
    let mut scenarios = Vec::with_capacity(files.len());
    let mut positions = Vec::with_capacity(files.len());
    for (position, file) in files.into_iter().enumerate() {
        if !partition.contains(position as u64) {
            continue;
        }
        match load_scenario(&file) {
            Ok(scenario) => {
                scenarios.push(scenario);
                positions.push(position);
            }
            Err(error) => {
                crate::out!("error: {error}");
                bad += 1;
            }
        }
    }
    (scenarios, positions, bad, total)
}

/// The clause catalog for scenarios under `path`: `clauses.toml` in the
/// folder itself or the nearest folder above it (a subfolder of a scenario
/// tree uses the tree's catalog).
pub fn catalog_for(path: &std::path::Path) -> PathBuf {
    let start = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    start
        .ancestors()
        .map(|folder| folder.join("clauses.toml"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| start.join("clauses.toml"))
}

/// The clauses a seeded run of `level` counts (`dshc diff`, `dshc sim`): the
/// signals of `./scenarios/clauses.toml` when there is one, else of the
/// catalog embedded in this binary.
pub fn clause_signals(
    level: dshc_scenario::protocol::Level,
) -> anyhow::Result<dshc_fuzzing::exercised::ClauseSignals> {
    let local = std::path::Path::new("scenarios/clauses.toml");
    let path = if local.is_file() {
        local.to_path_buf()
    } else {
        crate::suite::materialized()?.join("clauses.toml")
    };
    let catalog = dshc_runner::coverage::load_catalog(&path)?;
    dshc_fuzzing::exercised::ClauseSignals::of(&catalog, level).map_err(anyhow::Error::msg)
}

/// The exit code of a suite: bad input wins over failures.
pub fn suite_exit(bad_files: usize, failed: usize) -> Exit {
    if bad_files > 0 {
        Exit::BadInput
    } else {
        Exit::failed_if(failed > 0)
    }
}
