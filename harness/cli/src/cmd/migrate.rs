//! `dshc migrate`: rewrite format 1 scenario files as format 2 in place,
//! keeping what they assert (`dshc_scenario::migrate`).

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
    let (mut migrated, mut current) = (0, 0);
    // A file that cannot be read or rewritten is reported and the others
    // go on; the summary counts it.
    for file in files {
        let text = match read_text(&file) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("error: {error}");
                bad += 1;
                continue;
            }
        };
        match dshc_scenario::migrate::migrate(&text) {
            Ok(new_text) => match dshc_scenario::data_file::replace_file(&file, &new_text) {
                Ok(()) => {
                    crate::out!("migrated {}", file.display());
                    migrated += 1;
                }
                Err(error) => {
                    eprintln!(
                        "error: {}: cannot rewrite it (kept as it was): {error}",
                        file.display()
                    );
                    bad += 1;
                }
            },
            Err(dshc_scenario::migrate::MigrateError::NotFormatOne(_)) => current += 1,
            // `file:line:column: message`, as every load error reads.
            Err(error) => {
                match &error {
                    dshc_scenario::migrate::MigrateError::Toml {
                        position: Some((line, column)),
                        ..
                    } => eprintln!("error: {}:{line}:{column}: {error}", file.display()),
                    _ => eprintln!("error: {}: {error}", file.display()),
                }
                bad += 1;
            }
        }
    }
    crate::out!("{migrated} migrated, {current} already current, {bad} failed");
    Ok(if bad > 0 {
        Exit::BadInput
    } else {
        Exit::Passed
    })
}
