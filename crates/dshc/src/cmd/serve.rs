//! `dshc serve`: the scripted mock provider on a real loopback socket.

use std::path::PathBuf;

use anyhow::Context;
use dshc_harness::files::{parse_json, parse_toml, read_text};

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
}

/// Run it (until killed).
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let path = &args.script;
    let text = read_text(path)?;
    let script: mock_provider::Script = if path.extension().is_some_and(|e| e == "json") {
        parse_json(path, &text)?
    } else {
        parse_toml(path, &text)?
    };
    // A real server on a real clock: idle and slow connections are closed.
    let limits = mock_provider::ServerLimits {
        header_read_timeout_ms: Some(dshc_harness::limits::SERVE_HEADER_READ_TIMEOUT_MS),
        ..mock_provider::ServerLimits::default()
    };
    let provider = mock_provider::MockProvider::with_limits(script, limits)
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
        use std::io::Write;
        let _ = std::io::stdout().flush();
        mock_provider::serve_tokio(listener, provider).await?;
        Ok(Exit::Passed)
    })
}
