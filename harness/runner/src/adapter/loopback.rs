//! The mock provider on a real loopback socket, for one loop case run by an
//! external adapter.
//!
//! A loop-level case needs a provider. The reference runs the mock provider
//! on turmoil's simulated network; an external implementation talks real
//! HTTP, so for each of its loop cases the harness starts the same server
//! code ([`mock_provider::serve_tokio`]) on `127.0.0.1:0`, in a background
//! thread with its own single-threaded tokio runtime, fed the case's
//! `world.provider` script. The adapter gets the base URL in the `run`
//! request; when it has answered, the harness reads what the provider
//! received ([`LoopbackProvider::requests`]), so adapters never report
//! traffic. Dropping the value stops the server and every connection it
//! still serves (a scripted stall, say).

use std::net::TcpListener;
use std::thread::{self, JoinHandle};

use mock_provider::{MockProvider, Script};
use tokio::sync::oneshot;

use dshc_scenario::protocol::ProviderRequest;

/// The loopback provider could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoopbackError {
    /// The case's provider script is invalid.
    #[error("provider script: {0}")]
    Script(#[from] mock_provider::ScriptError),
    /// The operating system refused.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// A running loopback mock provider; stopped on drop.
pub struct LoopbackProvider {
    provider: MockProvider,
    url: String,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LoopbackProvider {
    /// Validate `script`, bind `127.0.0.1:0` and start serving. The socket is
    /// listening when this returns, so the URL can be handed out at once.
    pub fn start(script: Script) -> Result<Self, LoopbackError> {
        let provider = MockProvider::new(script)?;
        let io = |what: &'static str| move |source| LoopbackError::Io { what, source };
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .map_err(io("listen on 127.0.0.1"))?;
        let address = listener
            .local_addr()
            .map_err(io("read the provider's address"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("start the provider's runtime"))?;
        let (shutdown, stopped) = oneshot::channel::<()>();
        let served = provider.clone();
        let thread = thread::Builder::new()
            .name("dshc-loopback-provider".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = mock_provider::serve_tokio(listener, served) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here cancels the connection tasks
                // still running (a stall, a connection the client abandoned).
                drop(runtime);
            })
            .map_err(io("start the provider thread"))?;
        Ok(LoopbackProvider {
            provider,
            url: format!("http://{address}"),
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The base URL, `http://127.0.0.1:<port>` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests received so far that carried a JSON body, in order.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        dshc_reference::provider_requests(&self.provider)
    }
}

impl Drop for LoopbackProvider {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn serves_the_script_on_loopback_and_logs_the_request() {
        let script: Script = serde_json::from_value(serde_json::json!({
            "responses": [{"content": ["Hi"]}]
        }))
        .unwrap();
        let provider = LoopbackProvider::start(script).unwrap();
        let address = provider.url().trim_start_matches("http://").to_string();
        let body = r#"{"model":"m","messages":[],"stream":true}"#;
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("[DONE]"), "{response}");
        let requests = provider.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].body["model"], "m");
        drop(provider);
    }

    #[test]
    fn an_invalid_script_is_an_error() {
        let script: Script = serde_json::from_value(serde_json::json!({
            "responses": [{"fault": "stall", "after_events": 1}]
        }))
        .unwrap();
        assert!(LoopbackProvider::start(script).is_err());
    }
}
