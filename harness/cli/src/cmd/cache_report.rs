//! `dshc cache-report`: the prompt-cache stability lint over a scenario run,
//! a session log, or the request log of `dshc serve --log`.

use std::path::PathBuf;

use anyhow::Context;
use dshc_oracle::cache_report::{CacheReport, report, report_run};
use dshc_oracle::replay::{read_log, rebuilt_wire_bodies};
use dshc_scenario::data_file::{DataFileError, read_text};
use dshc_scenario::protocol::ProviderRequest;
use serde_json::Value;

use crate::Exit;

/// `dshc cache-report FILE`.
#[derive(clap::Args)]
pub struct Args {
    /// A scenario file (`.toml`, run on the reference or `--adapter`), a
    /// session log (JSON lines of events), or a `dshc serve --log` file.
    path: PathBuf,
    /// Run the scenario through this adapter instead of the reference.
    #[arg(long)]
    adapter: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Exit 1 when any request breaks the cache (a CI lint).
    #[arg(long)]
    deny_breaks: bool,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let path = &args.path;
    let cache_report = if path.extension().is_some_and(|e| e == "toml") {
        let result = super::show::observe(path, args.adapter.as_deref())?;
        let run = result
            .run
            .with_context(|| format!("{}: not a loop-level scenario", path.display()))?;
        report_run(&run)
    } else {
        report_of_log(path)?
    };
    if args.json {
        crate::out!("{}", serde_json::to_string_pretty(&cache_report)?);
    } else {
        crate::out!("{}", cache_report.to_text().trim_end());
    }
    let broken = cache_report.breaks().next().is_some();
    Ok(if broken && args.deny_breaks {
        Exit::Failed
    } else {
        Exit::Passed
    })
}

/// The report over a JSON-lines file: a `dshc serve --log` (objects with a
/// `request_number`) or a session log, whose requests are rebuilt from it.
fn report_of_log(path: &std::path::Path) -> anyhow::Result<CacheReport> {
    let text = read_text(path)?;
    let first: Option<Value> = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str(line).ok());
    if first.is_some_and(|line| line.get("request_number").is_some()) {
        let mut requests = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let logged: Value = serde_json::from_str(line)
                .map_err(|e| DataFileError::new(path, format!("line {}: {e}", number + 1)))?;
            if logged["body"].get("messages").is_some() {
                let headers = logged["headers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|pair| {
                        Some([pair[0].as_str()?.to_owned(), pair[1].as_str()?.to_owned()])
                    })
                    .collect();
                requests.push(ProviderRequest {
                    headers,
                    body: logged["body"].clone(),
                    cache_hit_tokens: logged["usage"]["prompt_cache_hit_tokens"].as_u64(),
                });
            }
        }
        return Ok(report(&requests, &[], &[]));
    }
    let events = read_log(&text).map_err(|e| DataFileError::new(path, e.to_string()))?;
    let wire = dshc_deepseek::WireOptions::default();
    let mut requests = Vec::new();
    for (point, body) in rebuilt_wire_bodies(&events, "replayed", &wire) {
        let body = body.map_err(|error| {
            DataFileError::new(
                path,
                format!("the request before seq {point} cannot be rebuilt: {error}"),
            )
        })?;
        // One log is one session.
        requests.push(ProviderRequest {
            headers: vec![["x-deepseek-harness-session-id".into(), "replayed".into()]],
            body,
            cache_hit_tokens: None,
        });
    }
    let log: Vec<Value> = events.iter().map(|event| event.to_json()).collect();
    Ok(report(&requests, &[], &[&log]))
}
