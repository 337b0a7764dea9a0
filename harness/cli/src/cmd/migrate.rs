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
    let bad = errors.len();
    for error in &errors {
        eprintln!("error: {error}");
    }
    // Every file is tried; one that cannot be read, parsed, rewritten
    // equivalently or written is named and left as it was, and the summary
    // counts it.
    let (mut migrated, mut current, mut kept) = (0, 0, 0);
    for file in files {
        match migrate_one(&file) {
            Ok(true) => {
                crate::out!("migrated {}", file.display());
                migrated += 1;
            }
            Ok(false) => current += 1,
            Err(message) => {
                eprintln!("error: {message}; left as it was");
                kept += 1;
            }
        }
    }
    crate::out!("{migrated} migrated, {current} already current, {kept} left as they were");
    Ok(if bad + kept > 0 {
        Exit::BadInput
    } else {
        Exit::Passed
    })
}

/// Migrate one file in place: `Ok(true)` when it was rewritten, `Ok(false)`
/// when it is not format 1, else why it was left as it was.
fn migrate_one(file: &std::path::Path) -> Result<bool, String> {
    use dshc_scenario::migrate::MigrateError;
    let text = read_text(file).map_err(|error| error.to_string())?;
    let new_text = match dshc_scenario::migrate::migrate_checked(file, &text) {
        Ok(new_text) => new_text,
        Err(MigrateError::NotFormatOne(_)) => return Ok(false),
        // `file:line:column: message`, as every load error reads.
        Err(
            error @ MigrateError::Toml {
                position: Some((line, column)),
                ..
            },
        ) => return Err(format!("{}:{line}:{column}: {error}", file.display())),
        Err(error) => return Err(format!("{}: {error}", file.display())),
    };
    dshc_scenario::data_file::replace_file(file, &new_text)
        .map_err(|error| format!("{}: cannot rewrite it: {error}", file.display()))?;
    Ok(true)
}
