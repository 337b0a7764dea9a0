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
                println!("{}", serde_json::to_string_pretty(request)?);
            }
        }
        Some(run) => {
            if !args.log {
                println!("# observations, one per command");
                for (index, observation) in result.observations.iter().enumerate() {
                    println!("# [{index}] {}", serde_json::to_string(observation)?);
                }
                println!("# session log");
            }
            for event in &run.log {
                println!("{}", dshc_model::js::stringify(event));
            }
            if let Some(failure) = &run.failure {
                eprintln!("run failed: {failure}");
            }
        }
        None => println!("{}", serde_json::to_string_pretty(&result)?),
    }
    Ok(Exit::Passed)
}
