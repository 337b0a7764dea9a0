//! `dshc`: the command-line front end. Glue only: each subcommand parses its
//! arguments, calls the library and prints; the work is in the harness's
//! crates (`dshc-runner`, `dshc-reference`, `dshc-oracle`, `dshc-fuzzing`,
//! `dshc-scenario`).
//!
//! Exit codes ([`Exit`]): 0 everything passed; 1 some case failed; 2 bad
//! input or usage (a malformed scenario, a missing path, an unknown flag);
//! 3 dshc caught itself in a bug (a regression file that would not
//! reproduce what it was written for).

mod cmd;
mod progress;
mod suite;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` to stdout, ending the process quietly when stdout is closed
/// (`dshc run | head`) instead of panicking.
#[macro_export]
macro_rules! out {
    () => { $crate::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to stdout, with [`out!`]'s handling of a closed stdout.
#[macro_export]
macro_rules! out_raw {
    ($($arg:tt)*) => { $crate::write_out(format_args!($($arg)*)) };
}

/// The exit status when stdout is closed under dshc: 128 + SIGPIPE, what a
/// shell reports for a process the signal ended.
const CLOSED_STDOUT_STATUS: i32 = 141;

/// Write to stdout; a reader that went away ends the process quietly.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(CLOSED_STDOUT_STATUS);
    }
}

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// How a command ended, as the process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything passed.
    Passed = 0,
    /// Some case failed.
    Failed = 1,
    /// Bad input or usage.
    BadInput = 2,
    /// dshc caught itself in a bug (a regression file that does not
    /// reproduce its finding).
    HarnessBug = 3,
}

impl Exit {
    /// `Failed` when `failed`, else `Passed`.
    pub fn failed_if(failed: bool) -> Exit {
        if failed { Exit::Failed } else { Exit::Passed }
    }
}

#[derive(Parser)]
#[command(
    name = "dshc",
    version,
    about = "Conformance and simulation harness for dsh prompt assembly"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenario files and folders on the reference model.
    Run(cmd::run::Args),
    /// Run scenarios on an implementation through an adapter and report compliance.
    Check(cmd::check::Args),
    /// Serve the reference implementation over the adapter protocol on stdin/stdout.
    Adapter,
    /// Differential run: seeded random cases on the reference and on an adapter.
    Diff(cmd::diff::Args),
    /// Seeded random loop sessions in simulated time, each checked against
    /// the loop invariants and run twice for determinism.
    Sim(cmd::sim::Args),
    /// Serve the scripted mock provider on a real loopback socket, for any
    /// OpenAI- or DeepSeek-compatible client. Runs until killed.
    Serve(cmd::serve::Args),
    /// Fold a session log (JSON lines) and print, one per line, the wire body
    /// of every request reconstructed from it.
    Replay(cmd::replay::Args),
    /// Run one scenario on the reference and print what it observed (for
    /// scenario authors): the session log as JSON lines for loop scenarios,
    /// the observations as JSON otherwise.
    Show(cmd::show::Args),
    /// The prompt-cache stability lint: per request, whether its prompt
    /// extends an earlier one, and where one breaks, the first changed byte,
    /// its prompt element and the registration that produced it.
    CacheReport(cmd::cache_report::Args),
    /// Assembly cost per step of one or more implementations on the shared
    /// fixtures, side by side, with a JSON report and a baseline check.
    Bench(cmd::bench::Args),
    /// Rewrite format 1 scenario files as the current format, keeping what they assert.
    Migrate(cmd::migrate::Args),
    /// Print spec clauses against the scenarios that cover them.
    Coverage(cmd::coverage::Args),
    /// Merge JSON reports of several implementations into one Markdown table.
    Report(cmd::report::Args),
    /// Print the JSON Schema of scenario files.
    Schema(cmd::schema::Args),
    /// The scenario suite embedded in this binary: export it, or list it.
    Scenarios(cmd::scenarios::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            let exit = if error.use_stderr() {
                Exit::BadInput
            } else {
                Exit::Passed
            };
            return ExitCode::from(exit as u8);
        }
    };
    let result = match cli.command {
        Command::Run(args) => cmd::run::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Adapter => cmd::adapter(),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Sim(args) => cmd::sim::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Show(args) => cmd::show::run(args),
        Command::CacheReport(args) => cmd::cache_report::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Migrate(args) => cmd::migrate::run(args),
        Command::Coverage(args) => cmd::coverage::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Schema(args) => cmd::schema::run(args),
        Command::Scenarios(args) => cmd::scenarios::run(args),
    };
    let exit = result.unwrap_or_else(|error| {
        eprintln!("error: {error:#}");
        Exit::BadInput
    });
    ExitCode::from(exit as u8)
}
