//! `dshc serve`: the scripted mock provider on a real loopback socket, for
//! real apps and SDKs pointed at it by base URL. It says what it receives:
//! one line per request on stderr, and the full request log as JSON lines
//! with `--log`, both written by threads of their own (`lines`), never on
//! the request path.

mod lines;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
fn open_log(log: &Path, script: &Path) -> anyhow::Result<std::fs::File> {
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

/// What is told of each request: its line on stderr (unless `--quiet`) and
/// its JSON line in `--log`, each queued for its writer thread and never
/// waited for, so an output nobody reads cannot block the server; a queue
/// that is full drops the line and counts it
/// ([`dshc_runner::limits::SERVE_STDERR_QUEUE_BYTES`],
/// [`dshc_runner::limits::SERVE_LOG_QUEUE_BYTES`]). With `--log`, a request's
/// stderr line follows its JSON line, so a line on stderr means the request
/// is in the log.
fn request_observer(args: &Args, script: &Path) -> anyhow::Result<RequestObserver> {
    use dshc_runner::limits::{SERVE_LOG_QUEUE_BYTES, SERVE_STDERR_QUEUE_BYTES};
    let stderr = lines::Queue::<String>::new(SERVE_STDERR_QUEUE_BYTES);
    lines::spawn_stderr_writer(stderr.clone(), std::io::stderr())
        .context("cannot start the stderr writer")?;
    let log = match &args.log {
        Some(log_path) => {
            let file = std::io::BufWriter::new(open_log(log_path, script)?);
            let queue = lines::Queue::<lines::LogLine>::new(SERVE_LOG_QUEUE_BYTES);
            let failed = Arc::new(AtomicBool::new(false));
            let name = log_path.display().to_string();
            lines::spawn_log_writer(queue.clone(), file, name, stderr.clone(), failed.clone())
                .context("cannot start the log writer")?;
            Some((queue, failed))
        }
        None => None,
    };
    let quiet = args.quiet;
    Ok(RequestObserver::new(move |request: &LoggedRequest| {
        let summary = (!quiet).then(|| request.summary_line());
        let summary = match &log {
            Some((queue, failed)) if !failed.load(Ordering::Relaxed) => {
                let line = lines::LogLine {
                    json: request.to_json().to_string(),
                    summary,
                };
                let bytes = line.bytes();
                // A line the log's queue refuses still gets its stderr line.
                if queue.push(line, bytes) {
                    None
                } else {
                    (!quiet).then(|| request.summary_line())
                }
            }
            _ => summary,
        };
        if let Some(summary) = summary {
            let bytes = summary.len();
            stderr.push(summary, bytes);
        }
    }))
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
    let observer = request_observer(&args, path)?;
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
