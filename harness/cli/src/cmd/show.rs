//! `dshc show`: run one scenario on the reference (or on an adapter) and
//! print what it observed, for scenario authors.

use std::path::PathBuf;

use dshc_oracle::compare::{agent_facts, main_agent_run};
use dshc_scenario::load::load_scenario;
use dshc_scenario::protocol::LoopRun;
use serde_json::Value;

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
    use dshc_runner::adapter::process::{AdapterProcess, Limits};
    use dshc_runner::adapter::{External, Implementation, Ran, Reference};
    let scenario = load_scenario(path)?;
    // Through `Implementation::run` on both sides, so that a panic of the
    // reference is reported like an adapter's crash.
    let ran = match adapter {
        None => Reference.run(&scenario.case),
        Some(command) => {
            let mut adapter = External::new(AdapterProcess::new(command, Limits::default()));
            let ran = adapter.run(&scenario.case);
            adapter.stop();
            ran
        }
    };
    match ran {
        Ran::Observed(result) => Ok(*result),
        Ran::NotRun(not_run) => anyhow::bail!("{not_run}"),
    }
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let scenario = load_scenario(&args.path)?;
    let result = observe(&args.path, args.adapter.as_deref())?;
    match &result.run {
        Some(run) if args.requests => {
            for request in &run.requests {
                crate::out!("{}", serde_json::to_string_pretty(request)?);
            }
        }
        Some(run) if args.log => {
            for event in &run.log {
                crate::out!("{}", dshc_model::js::stringify(event));
            }
        }
        Some(run) => {
            crate::out!("# observations, one per command");
            for (index, observation) in result.observations.iter().enumerate() {
                crate::out!("# [{index}] {}", serde_json::to_string(observation)?);
            }
            let main_agent = scenario.scenario.agent.as_ref().map_or("agent", |a| &a.id);
            print_loop_run(run, main_agent)?;
        }
        None => crate::out!("{}", serde_json::to_string_pretty(&result)?),
    }
    if let Some(failure) = result.run.as_ref().and_then(|run| run.failure.as_ref()) {
        eprintln!("run failed: {failure}");
    }
    Ok(Exit::Passed)
}

/// Everything a loop expectation can assert, each part under a `#`
/// heading: every agent's log and facts (status, status transitions,
/// pending inbox, agent errors: `dshc_oracle::compare::agent_facts`, what
/// the judge compares), the live events, the `record` journal, the scripted
/// routes' calls (`llm_requests`), the provider's requests, the cache report.
fn print_loop_run(run: &LoopRun, main_agent: &str) -> anyhow::Result<()> {
    let main = main_agent_run(run, main_agent);
    for (position, agent) in std::iter::once(&main).chain(&run.agents).enumerate() {
        match position {
            0 => crate::out!("# session log"),
            _ => crate::out!("# session log of agent {}", agent.id),
        }
        for event in &agent.log {
            crate::out!("{}", dshc_model::js::stringify(event));
        }
        let facts = agent_facts(agent, &run.live_events);
        crate::out!(
            "# agent {}: {}",
            agent.id,
            dshc_model::js::stringify(&facts)
        );
    }
    let listed: [(&str, &[Value]); 3] = [
        ("live events, which the log does not hold", &run.live_events),
        ("journal: what `record` ops recorded", &run.journal),
        (
            "llm_requests: what scripted routes' stream() received",
            &run.llm_requests,
        ),
    ];
    for (heading, values) in listed {
        if values.is_empty() {
            continue;
        }
        crate::out!("# {heading}");
        for value in values {
            crate::out!("{}", dshc_model::js::stringify(value));
        }
    }
    if !run.requests.is_empty() {
        crate::out!(
            "# provider requests: {} (bodies with --requests)",
            run.requests.len()
        );
        crate::out!("# prompt-cache report");
        for line in dshc_oracle::cache_report::report_run(run).to_text().lines() {
            crate::out!("# {line}");
        }
    }
    Ok(())
}
