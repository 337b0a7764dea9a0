//! The DeepSeek adapter's I/O half: one HTTP request per attempt to a
//! chat-completions endpoint, turned into harness stream chunks.
//!
//! HTTP runs over turmoil's simulated TCP or a real tokio socket; everything
//! else (serialization, SSE, translation, error mapping) is the pure
//! [`dshc_deepseek`]. Every way the request can fail becomes one
//! terminal `finish` chunk, as upstream's `adapterStream` does. Waiting is
//! `tokio::time` only: virtual under turmoil.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use dshc_deepseek::{
    DeepSeekDefaults, SseDecoder, SseItem, Translator, end_of_stream_error, failure_chunk,
    http_error, request_headers, request_transport_error, serialize_request, stream_error,
};
use dshc_model::JsError;

/// Where the provider listens.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// A host in turmoil's simulated network.
    Simulated {
        /// turmoil host name.
        host: String,
        /// Port.
        port: u16,
    },
    /// A real socket address.
    Socket(std::net::SocketAddr),
}

impl Endpoint {
    fn base_url(&self) -> String {
        match self {
            Endpoint::Simulated { host, port } => format!("http://{host}:{port}"),
            Endpoint::Socket(addr) => format!("http://{addr}"),
        }
    }
}

/// How the adapter reaches its provider and with what settings.
#[derive(Clone, Debug)]
pub struct Connection {
    /// Endpoint.
    pub endpoint: Endpoint,
    /// Deployment thinking defaults.
    pub defaults: DeepSeekDefaults,
    /// Idle watchdog between stream reads.
    pub stream_idle_timeout_ms: u64,
    /// Bearer token.
    pub api_key: String,
    /// `x-deepseek-harness-user-id`.
    pub user_id: String,
}

type Response = hyper::Response<Incoming>;

async fn send(
    connection: &Connection,
    body: String,
    headers: Vec<(String, String)>,
) -> Result<Response, String> {
    let request = {
        let mut builder = hyper::Request::post("/chat/completions").header("host", "provider");
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?
    };
    macro_rules! exchange {
        ($stream:expr) => {{
            let stream = $stream.map_err(|e| e.to_string())?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
            tokio::task::spawn_local(async move {
                let _ = conn.await;
            });
            sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())
        }};
    }
    match &connection.endpoint {
        Endpoint::Simulated { host, port } => {
            exchange!(turmoil::net::TcpStream::connect((host.as_str(), *port)).await)
        }
        Endpoint::Socket(addr) => exchange!(tokio::net::TcpStream::connect(addr).await),
    }
}

struct Streaming {
    body: Incoming,
    decoder: SseDecoder,
    translator: Translator,
}

enum State {
    Start,
    Streaming(Box<Streaming>),
    Done,
}

/// A chunk stream for one attempt: call [`ChunkStream::next`] until `None`.
pub struct ChunkStream {
    connection: Rc<Connection>,
    request: Rc<Value>,
    aborted: Box<dyn Fn() -> bool>,
    state: State,
    pending: VecDeque<Value>,
}

impl ChunkStream {
    /// A stream for this harness request. `aborted` reports whether the
    /// caller's signal fired (failures then become `aborted` finishes).
    pub fn new(
        connection: Rc<Connection>,
        request: Rc<Value>,
        aborted: Box<dyn Fn() -> bool>,
    ) -> ChunkStream {
        ChunkStream {
            connection,
            request,
            aborted,
            state: State::Start,
            pending: VecDeque::new(),
        }
    }

    /// End the stream with one failure chunk. Errors go through the
    /// adapter's catch order first (idle timeout, caller abort, `LlmError`
    /// as is, anything else TRANSPORT), as `DeepSeekAdapter.stream` does.
    fn fail(&mut self, error: JsError, idle_timed_out: bool) -> Option<Value> {
        self.state = State::Done;
        Some(self.failure(error, idle_timed_out))
    }

    fn failure(&self, error: JsError, idle_timed_out: bool) -> Value {
        let aborted = (self.aborted)();
        let timeout_ms = idle_timed_out.then_some(self.connection.stream_idle_timeout_ms);
        let error = stream_error(
            error,
            &self.connection.endpoint.base_url(),
            aborted,
            timeout_ms,
        );
        failure_chunk(&error, aborted)
    }

    /// The next chunk, or `None` after the last.
    pub async fn next(&mut self) -> Option<Value> {
        let idle = Duration::from_millis(self.connection.stream_idle_timeout_ms);
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            match &mut self.state {
                State::Done => return None,
                State::Start => {
                    let body = match serialize_request(&self.request, &self.connection.defaults) {
                        Ok(body) => body.to_string(),
                        Err(error) => return self.fail(error, false),
                    };
                    let session_id = self.request["sessionId"].as_str().map(str::to_string);
                    let compaction = self.request["purpose"] == "compaction";
                    let headers = request_headers(
                        &self.connection.api_key,
                        &self.connection.user_id,
                        session_id.as_deref(),
                        compaction,
                    );
                    let base_url = self.connection.endpoint.base_url();
                    let sent =
                        tokio::time::timeout(idle, send(&self.connection, body, headers)).await;
                    let response = match sent {
                        Err(_) => return self.fail(JsError::error("idle"), true),
                        Ok(Err(cause)) => {
                            let error = request_transport_error(&base_url)
                                .with_cause(JsError::error(cause));
                            return self.fail(error, false);
                        }
                        Ok(Ok(response)) => response,
                    };
                    let status = response.status().as_u16();
                    if !(200..300).contains(&status) {
                        let headers: Vec<(String, String)> = response
                            .headers()
                            .iter()
                            .map(|(n, v)| {
                                (
                                    n.as_str().to_string(),
                                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                )
                            })
                            .collect();
                        let body = response
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        return self.fail(http_error(status, &headers, &body), false);
                    }
                    self.state = State::Streaming(Box::new(Streaming {
                        body: response.into_body(),
                        decoder: SseDecoder::default(),
                        translator: Translator::default(),
                    }));
                }
                State::Streaming(streaming) => {
                    let Streaming {
                        body,
                        decoder,
                        translator,
                    } = &mut **streaming;

                    let frame = match tokio::time::timeout(idle, body.frame()).await {
                        Err(_) => return self.fail(JsError::error("idle"), true),
                        Ok(None) => return self.fail(end_of_stream_error(), false),
                        Ok(Some(Err(cause))) => {
                            return self.fail(JsError::error(cause.to_string()), false);
                        }
                        Ok(Some(Ok(frame))) => frame,
                    };
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    let mut chunks = Vec::new();
                    let mut error = None;
                    for item in decoder.push(&data) {
                        let SseItem::Data(payload) = item else {
                            continue;
                        };
                        // Chunks translated before a failure inside a payload still go out.
                        if let Err(e) = translator.push_payload_into(&payload, &mut chunks) {
                            error = Some(e);
                            break;
                        }
                        if translator.is_done() {
                            break;
                        }
                    }
                    let done = translator.is_done();
                    self.pending.extend(chunks);
                    if let Some(error) = error {
                        let failure = self.failure(error, false);
                        self.pending.push_back(failure);
                        self.state = State::Done;
                    } else if done {
                        self.state = State::Done;
                    }
                }
            }
        }
    }
}
