//! `dshc schema`: print the committed JSON Schemas.

use crate::Exit;

/// `dshc schema [--protocol]`.
#[derive(clap::Args)]
pub struct Args {
    /// Print the adapter protocol schema instead.
    #[arg(long)]
    protocol: bool,
}

/// Run it.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if args.protocol {
        crate::out_raw!("{}", dshc_scenario::schema::protocol_schema());
    } else {
        crate::out_raw!("{}", dshc_scenario::schema::scenario_schema());
    }
    Ok(Exit::Passed)
}
