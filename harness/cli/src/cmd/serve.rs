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
        Some(log_path) => Some(Mutex::new(std::io::BufWriter::new(
            std::fs::File::create(log_path)
                .with_context(|| format!("cannot create {}", log_path.display()))?,
        ))),
        None => None,
    };
    let quiet = args.quiet;
    let observer = RequestObserver::new(move |request: &LoggedRequest| {
        if !quiet {
            // A closed stderr must not take the server down.
            let _ = writeln!(std::io::stderr(), "{}", request.summary_line());
        }
        if let Some(file) = &log_file {
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Each line is flushed whole, so a killed server leaves a valid log.
            let _ = writeln!(file, "{}", request.to_json()).and_then(|()| file.flush());
        }
    });
    // A real server on a real clock: idle and slow connections are closed.
    let limits = mock_provider::ServerLimits {
        header_read_timeout_ms: Some(dshc_runner::limits::SERVE_HEADER_READ_TIMEOUT_MS),
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
