//! `dshc show`: run one scenario on the reference and print what it
//! observed, for scenario authors.

use std::path::PathBuf;

use dshc_scenario::load::load_scenario;

use crate::Exit;

/// `dshc show FILE`.
#[derive(clap::Args)]
pub struct Args {
    /// The scenario file.
    path: PathBuf,
    /// Print the provider's received request bodies instead.
    #[arg(long, conflicts_with = "log")]
    requests: bool,
    /// Print only the session log (JSON lines, as `dshc replay` reads it).
    #[arg(long)]
    log: bool,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let scenario = load_scenario(&args.path)?;
    let result = dshc_harness::reference::run_case(&scenario.case)?;
    match &result.run {
        Some(run) if args.requests => {
            for request in &run.requests {
                crate::out!("{}", serde_json::to_string_pretty(request)?);
            }
        }
        Some(run) => {
            if !args.log {
                crate::out!("# observations, one per command");
                for (index, observation) in result.observations.iter().enumerate() {
                    crate::out!("# [{index}] {}", serde_json::to_string(observation)?);
                }
                crate::out!("# session log");
            }
            for event in &run.log {
                crate::out!("{}", dshc_model::js::stringify(event));
            }
            if let Some(failure) = &run.failure {
                eprintln!("run failed: {failure}");
            }
        }
        None => crate::out!("{}", serde_json::to_string_pretty(&result)?),
    }
    Ok(Exit::Passed)
}
