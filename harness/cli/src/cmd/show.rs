//! `dshc show`: run one scenario on the reference (or on an adapter) and
//! print what it observed, for scenario authors.

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
    /// Run it through this adapter instead of the reference (`sh -c`),
    /// to see what another implementation observes.
    #[arg(long)]
    adapter: Option<String>,
}

/// Run one scenario on the reference, or through `adapter` (`sh -c`).
pub(crate) fn observe(
    path: &std::path::Path,
    adapter: Option<&str>,
) -> anyhow::Result<dshc_scenario::protocol::CaseResult> {
    let scenario = load_scenario(path)?;
    Ok(match adapter {
        None => dshc_reference::run_case(&scenario.case)?,
        Some(command) => {
            use dshc_runner::adapter::process::{AdapterProcess, Limits};
            use dshc_runner::adapter::{External, Implementation, Ran};
            let mut adapter = External::new(AdapterProcess::new(command, Limits::default()));
            let ran = adapter.run(&scenario.case);
            adapter.stop();
            match ran {
                Ran::Observed(result) => *result,
                Ran::NotRun(not_run) => anyhow::bail!("{not_run}"),
            }
        }
    })
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let result = observe(&args.path, args.adapter.as_deref())?;
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
            if !args.log {
                for agent in &run.agents {
                    crate::out!("# session log of agent {}", agent.id);
                    for event in &agent.log {
                        crate::out!("{}", dshc_model::js::stringify(event));
                    }
                }
            }
            if !args.log && !run.requests.is_empty() {
                crate::out!("# prompt-cache report");
                for line in dshc_oracle::cache_report::report_run(run).to_text().lines() {
                    crate::out!("# {line}");
                }
            }
            if let Some(failure) = &run.failure {
                eprintln!("run failed: {failure}");
            }
        }
        None => crate::out!("{}", serde_json::to_string_pretty(&result)?),
    }
    Ok(Exit::Passed)
}
