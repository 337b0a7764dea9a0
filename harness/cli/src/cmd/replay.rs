//! `dshc replay`: fold a session log and print the wire body of every
//! request reconstructed from it.

use std::path::PathBuf;

use dshc_oracle::replay::{read_log, rebuilt_wire_bodies};
use dshc_scenario::data_file::{DataFileError, read_text};

use crate::Exit;

/// `dshc replay LOG`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log.
    log: PathBuf,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let path = &args.log;
    let text = read_text(path)?;
    let events = read_log(&text).map_err(|e| DataFileError::new(path, e.to_string()))?;
    let mut fold = dshc_model::session::SurfaceFold::default();
    fold.advance(&events, events.len()).map_err(|error| {
        DataFileError::new(
            path,
            format!("the log's surface does not fold: {}", error.message),
        )
    })?;
    let wire = dshc_deepseek::WireOptions::default();
    for (point, body) in rebuilt_wire_bodies(&events, "replayed", &wire) {
        match body {
            Ok(body) => crate::out!("{body}"),
            Err(error) => {
                eprintln!("error: the request before seq {point} cannot be rebuilt: {error}");
                return Ok(Exit::Failed);
            }
        }
    }
    Ok(Exit::Passed)
}
