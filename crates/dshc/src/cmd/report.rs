//! `dshc report`: merge JSON reports of several implementations into one
//! Markdown table of clauses × implementations.

use std::path::PathBuf;

use dshc_harness::coverage::load_catalog;
use dshc_harness::files::{parse_json, read_text};
use dshc_harness::report::{ReportDigest, markdown_matrix};

use crate::Exit;

/// `dshc report REPORTS..`.
#[derive(clap::Args)]
pub struct Args {
    /// JSON reports written by `dshc check --report-dir`.
    reports: Vec<PathBuf>,
    /// The clause catalog.
    #[arg(long, default_value = "scenarios/clauses.toml")]
    catalog: PathBuf,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let catalog = load_catalog(&args.catalog)?;
    let mut digests = Vec::new();
    for path in &args.reports {
        let digest: ReportDigest = parse_json(path, &read_text(path)?)?;
        digests.push(digest);
    }
    crate::out_raw!("{}", markdown_matrix(&catalog, &digests));
    Ok(Exit::Passed)
}
