//! One module per subcommand, each with its `Args` and a `run` that returns
//! the [`Exit`] code; helpers shared by several live here.

pub mod check;
pub mod coverage;
pub mod diff;
pub mod migrate;
pub mod replay;
pub mod report;
pub mod run;
pub mod schema;
pub mod serve;
pub mod show;
pub mod sim;

use std::path::PathBuf;

use dshc_scenario::load::{LoadedScenario, discover, load_scenario};
use dshc_scenario::protocol::Level;

use crate::Exit;

/// `dshc adapter`: the reference over the protocol on stdin and stdout.
pub fn adapter() -> anyhow::Result<Exit> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    dshc_harness::adapter::serve::serve(stdin, stdout)?;
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

/// The paths given, or `scenarios` when none.
pub fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

/// Load every scenario under `paths`; each bad file is reported on stdout,
/// in file order before any result, as part of the run's output (`error:
/// file:line:column: message`). Returns the good ones and how many were bad.
pub fn load_all(paths: &[PathBuf]) -> (Vec<LoadedScenario>, usize) {
    let (files, discover_errors) = discover(paths);
    let mut bad = discover_errors.len();
    for error in &discover_errors {
        println!("error: {error}");
    }
    let mut scenarios = Vec::with_capacity(files.len());
    for file in files {
        match load_scenario(&file) {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => {
                println!("error: {error}");
                bad += 1;
            }
        }
    }
    (scenarios, bad)
}

/// The exit code of a suite: bad input wins over failures.
pub fn suite_exit(bad_files: usize, failed: usize) -> Exit {
    if bad_files > 0 {
        Exit::BadInput
    } else {
        Exit::failed_if(failed > 0)
    }
}
