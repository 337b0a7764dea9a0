//! `dshc scenarios`: the suite embedded in this binary, for people who want
//! to read or extend it (`export`), or to see what it holds (`list`).

use std::path::PathBuf;

use crate::{Exit, suite};

/// `dshc scenarios export DIR | list`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write the embedded suite (scenarios, clause catalog, schema) to
    /// DIR/scenarios, which must not exist yet.
    Export {
        /// The folder to write `scenarios/` into.
        dir: PathBuf,
    },
    /// Print the path of every embedded file, one per line.
    List,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    match args.action {
        Action::Export { dir } => {
            let written = suite::export(&dir)?;
            crate::out!(
                "wrote {} files ({} scenarios) to {}",
                suite::files().len(),
                suite::scenario_count(),
                written.display()
            );
        }
        Action::List => {
            for (path, _) in suite::files() {
                crate::out!("scenarios/{path}");
            }
        }
    }
    Ok(Exit::Passed)
}
