//! A starter Rust adapter: it speaks the whole protocol through the
//! `dshc-adapter` kit and implements nothing, so every case is skipped with
//! a reason. Copy it into a port, and replace `run` with calls into the
//! port, one observation per command of the case.
//!
//!     dshc check --adapter path/to/starter-rust

use dshc_adapter::{Case, ImplementationInfo, Level, Port, RunOutcome};

/// The port this adapter drives: none yet.
struct Starter;

impl Port for Starter {
    fn implementation(&self) -> ImplementationInfo {
        ImplementationInfo {
            name: "starter-rust".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            language: "rust".into(),
            homepage: None,
        }
    }

    fn levels(&self) -> Vec<Level> {
        vec![Level::Assembly]
    }

    fn run(&mut self, case: &Case, _provider_url: Option<&str>) -> RunOutcome {
        RunOutcome::Skipped(format!(
            "starter-rust implements nothing yet ({} commands not run)",
            case.commands.len()
        ))
    }
}

fn main() -> std::io::Result<()> {
    dshc_adapter::serve_stdio(&mut Starter)
}
