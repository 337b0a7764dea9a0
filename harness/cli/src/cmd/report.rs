//! `dshc report`: merge JSON reports of several implementations into one
//! Markdown table of clauses × implementations (and with `--html` one HTML
//! page), or join one run's partitions into its whole report.

use std::path::PathBuf;

use dshc_runner::coverage::load_catalog;
use dshc_runner::report::html::{PageReport, html_page, read_scenario_source};
use dshc_runner::report::{ReportDigest, markdown_matrix, merge_partition_reports};
use dshc_scenario::data_file::{parse_json, read_text};

use crate::Exit;

/// `dshc report REPORTS..`.
#[derive(clap::Args)]
pub struct Args {
    /// JSON reports written by `dshc check --report-dir`.
    reports: Vec<PathBuf>,
    /// Instead of the table: join the reports of one implementation's
    /// partitions (`dshc check --partition k/n`) into the whole run's JSON
    /// report, written to FILE.
    #[arg(long, value_name = "FILE")]
    merge: Option<PathBuf>,
    /// Also write the merged HTML page (the one `dshc check --report-dir`
    /// writes as index.html) to FILE; the Markdown table is still printed.
    #[arg(long, value_name = "FILE", conflicts_with = "merge")]
    html: Option<PathBuf>,
    /// The clause catalog [default: ./scenarios/clauses.toml when there is
    /// one, else the catalog of the suite embedded in this binary].
    #[arg(long)]
    catalog: Option<PathBuf>,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if let Some(out) = &args.merge {
        let mut reports = Vec::new();
        for path in &args.reports {
            let report: serde_json::Value = parse_json(path, &read_text(path)?)?;
            reports.push(report);
        }
        let merged = merge_partition_reports(&reports)?;
        dshc_scenario::data_file::replace_file(out, &merged)
            .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", out.display()))?;
        return Ok(Exit::Passed);
    }
    let catalog_path = match args.catalog {
        Some(path) => path,
        None => {
            let local = PathBuf::from("scenarios/clauses.toml");
            if local.is_file() {
                local
            } else {
                crate::suite::materialized()?.join("clauses.toml")
            }
        }
    };
    let catalog = load_catalog(&catalog_path)?;
    let mut digests = Vec::new();
    let mut pages = Vec::new();
    for path in &args.reports {
        let text = read_text(path)?;
        let digest: ReportDigest = parse_json(path, &text)?;
        digests.push(digest);
        if args.html.is_some() {
            let page: PageReport = parse_json(path, &text)?;
            pages.push(page);
        }
    }
    if let Some(out) = &args.html {
        let page = html_page(&catalog, &pages, &read_scenario_source);
        dshc_scenario::data_file::replace_file(out, &page)
            .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", out.display()))?;
    }
    crate::out_raw!("{}", markdown_matrix(&catalog, &digests));
    Ok(Exit::Passed)
}
