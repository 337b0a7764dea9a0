//! `dshc serve`: the scripted mock provider on a real loopback socket, for
//! real apps and SDKs pointed at it by base URL. It says what it receives:
//! one line per request on stderr, and the full request log as JSON lines
//! with `--log`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Context;
use dshc_scenario::data_file::{parse_json, parse_toml, read_text};
use mock_provider::{Dialect, LoggedRequest, RequestObserver, Validation};

use crate::Exit;

/// `dshc serve --script FILE`.
#[derive(clap::Args)]
pub struct Args {
    /// The script: TOML or JSON with `responses = [...]`.
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Write every request and its answer to FILE, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Print nothing per request on stderr.
    #[arg(long)]
    quiet: bool,
    /// Wire dialect, overriding the script's `dialect`.
    #[arg(long, value_enum)]
    dialect: Option<DialectArg>,
    /// Turn off every request rule (the script's `validation`).
    #[arg(long)]
    no_validation: bool,
}

/// The `--dialect` values.
#[derive(Clone, Copy, clap::ValueEnum)]
enum DialectArg {
    /// DeepSeek's API (usage on the finish chunk).
    Deepseek,
    /// OpenAI's `include_usage` behaviour.
    Openai,
}

/// The `--log` file, created: refused when it is the script itself (it
/// would destroy it) or exists as anything but a regular file (a FIFO
/// would block the server, a device such as `/dev/full` swallow the log).
fn open_log(log: &std::path::Path, script: &std::path::Path) -> anyhow::Result<std::fs::File> {
    if let Ok(metadata) = std::fs::metadata(log) {
        let same = std::fs::canonicalize(log).ok() == std::fs::canonicalize(script).ok();
        anyhow::ensure!(
            !same,
            "--log {} is the script: it would be overwritten",
            log.display()
        );
        anyhow::ensure!(
            metadata.is_file(),
            "--log {} is not a regular file (a FIFO or a device would block or lose the log)",
            log.display()
        );
    }
    std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))
}

/// Run it (until killed).
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let path = &args.script;
    let text = read_text(path)?;
    let mut script: mock_provider::Script = if path.extension().is_some_and(|e| e == "json") {
        parse_json(path, &text)?
    } else {
        parse_toml(path, &text)?
    };
    if let Some(dialect) = args.dialect {
        script.dialect = match dialect {
            DialectArg::Deepseek => Dialect::Deepseek,
            DialectArg::Openai => Dialect::Openai,
        };
    }
    if args.no_validation {
        script.validation = Validation::off();
    }
    let log_file = match &args.log {
        Some(log_path) => Some(Mutex::new(Some(std::io::BufWriter::new(open_log(
            log_path, path,
        )?)))),
        None => None,
    };
    let log_name = args.log.as_ref().map(|p| p.display().to_string());
    let quiet = args.quiet;
    let observer = RequestObserver::new(move |request: &LoggedRequest| {
        if !quiet {
            // A closed stderr must not take the server down.
            let _ = writeln!(std::io::stderr(), "{}", request.summary_line());
        }
        if let Some(file) = &log_file {
            let mut guard = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Each line is flushed whole, so a killed server leaves a valid
            // log; a failed write is reported once, and the log stops there.
            if let Some(writer) = guard.as_mut()
                && let Err(error) =
                    writeln!(writer, "{}", request.to_json()).and_then(|()| writer.flush())
            {
                let name = log_name.as_deref().unwrap_or("the log");
                let _ = writeln!(
                    std::io::stderr(),
                    "error: cannot write {name} ({error}); no more requests are logged"
                );
                *guard = None;
            }
        }
    });
    // A real server on a real clock: idle and slow connections are closed,
    // and a body that trickles in gets 408.
    let limits = mock_provider::ServerLimits {
        header_read_timeout_ms: Some(dshc_runner::limits::SERVE_HEADER_READ_TIMEOUT_MS),
        body_read_timeout_ms: Some(dshc_runner::limits::SERVE_BODY_READ_TIMEOUT_MS),
        ..mock_provider::ServerLimits::default()
    };
    let provider = mock_provider::MockProvider::builder(script)
        .limits(limits)
        .script_name(format!("script {}", path.display()))
        .observer(observer)
        .build()
        .with_context(|| format!("{}: invalid script", path.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    runtime.block_on(async move {
        let port = args.port;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
        let address = listener.local_addr()?;
        crate::out!("listening on http://{address}");
        let _ = std::io::stdout().flush();
        mock_provider::serve_tokio(listener, provider).await?;
        Ok(Exit::Passed)
    })
}
