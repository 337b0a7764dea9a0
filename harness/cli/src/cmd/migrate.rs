//! `dshc migrate`: rewrite format 1 scenario files as format 2 in place,
//! keeping what they assert (`dshc_scenario::migrate`). A file whose rewrite
//! would not load, or would not assert the same, is named and left as it was.

use std::path::PathBuf;

use dshc_scenario::data_file::read_text;
use dshc_scenario::load::discover;

use crate::Exit;

/// `dshc migrate PATHS..`.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario files or folders; format 1 files among them are rewritten.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let found = discover(&args.paths);
    let (files, errors) = (found.files, found.errors);
    let mut bad = errors.len();
    for error in &errors {
        eprintln!("error: {error}");
    }
    let (mut migrated, mut current, mut kept) = (0, 0, 0);
    for file in files {
        let text = read_text(&file)?;
        match dshc_scenario::migrate::migrate_checked(&file, &text) {
            Ok(new_text) => {
                dshc_scenario::data_file::replace_file(&file, &new_text)?;
                crate::out!("migrated {}", file.display());
                migrated += 1;
            }
            Err(dshc_scenario::migrate::MigrateError::NotFormatOne(_)) => current += 1,
            Err(error @ dshc_scenario::migrate::MigrateError::Toml(_)) => {
                eprintln!("error: {}: {error}", file.display());
                bad += 1;
            }
            Err(error) => {
                eprintln!("error: {}: {error}; left as it was", file.display());
                kept += 1;
                bad += 1;
            }
        }
    }
    crate::out!("{migrated} migrated, {current} already current, {kept} left as they were");
    Ok(if bad > 0 {
        Exit::BadInput
    } else {
        Exit::Passed
    })
}
