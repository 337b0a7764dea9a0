//! `dshc coverage`: spec clauses against the scenarios that cover them, then
//! the uncovered ones.

use std::path::PathBuf;

use dshc_runner::coverage::{Coverage, load_catalog};
use dshc_scenario::protocol::Level;

use super::{default_paths, load_all, parse_level};
use crate::Exit;

/// `dshc coverage [PATHS..]`.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario folders (default: the suite embedded in this binary).
    paths: Vec<PathBuf>,
    /// The clause catalog (default: the nearest clauses.toml at or above the first path).
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Only report uncovered clauses of this level.
    #[arg(long, value_parser = parse_level)]
    level: Option<Level>,
    /// Exit 1 when a clause is uncovered.
    #[arg(long)]
    strict: bool,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let paths = default_paths(args.paths)?;
    let catalog_path = args
        .catalog
        .unwrap_or_else(|| super::catalog_for(&paths[0]));
    let catalog = load_catalog(&catalog_path)?;
    let (scenarios, bad) = load_all(&paths);
    let coverage = Coverage::compute(&catalog, &scenarios);
    let width = catalog.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for (clause, ids) in &coverage.rows {
        let cell = match (&clause.excluded, ids.is_empty()) {
            (Some(reason), true) => format!("excluded: {reason}"),
            (_, true) => "UNCOVERED".to_string(),
            (_, false) => ids.join(", "),
        };
        crate::out!("{:width$}  {:>3}  {cell}", clause.id, ids.len());
    }
    for (scenario, clause) in &coverage.unknown {
        eprintln!(
            "error: {scenario} covers {clause}, which is not in {}",
            catalog_path.display()
        );
    }
    let uncovered = coverage.uncovered(args.level);
    crate::out!();
    if uncovered.is_empty() {
        crate::out!(
            "every clause{} is covered",
            args.level.map(|_| " of this level").unwrap_or_default()
        );
    } else {
        crate::out!("uncovered clauses:");
        for clause in &uncovered {
            crate::out!("  {}  {}", clause.id, clause.text);
        }
    }
    Ok(if bad > 0 || !coverage.unknown.is_empty() {
        Exit::BadInput
    } else {
        Exit::failed_if(args.strict && !uncovered.is_empty())
    })
}
