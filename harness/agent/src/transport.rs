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
    SseDecoder, SseItem, Translator, WireOptions, end_of_stream_error, failure_chunk, http_error,
    is_null_body_status, no_body_error, request_headers, request_transport_error, stream_error,
    wire_request,
};
use dshc_model::JsError;
use dshc_model::session::Clock;

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
    /// What the body is built from besides the request: thinking defaults,
    /// the attachment service, the image bound.
    pub wire: WireOptions,
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
    body: Vec<u8>,
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
    /// `Date.now()`, for a `Retry-After` given as a date.
    clock: Clock,
    state: State,
    pending: VecDeque<Value>,
}

impl ChunkStream {
    /// A stream for this harness request. `aborted` reports whether the
    /// caller's signal fired (failures then become `aborted` finishes);
    /// `clock` is the agent's wall clock.
    pub fn new(
        connection: Rc<Connection>,
        request: Rc<Value>,
        aborted: Box<dyn Fn() -> bool>,
        clock: Clock,
    ) -> ChunkStream {
        ChunkStream {
            connection,
            request,
            aborted,
            clock,
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

    /// The idle watchdog between stream reads.
    fn idle(&self) -> Duration {
        Duration::from_millis(self.connection.stream_idle_timeout_ms)
    }

    /// The next chunk, or `None` after the last.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            let failed = match &self.state {
                State::Done => return None,
                State::Start => self.start().await,
                State::Streaming(_) => self.read_frame().await,
            };
            if failed.is_some() {
                return failed;
            }
        }
    }

    /// Send the request and, on a 2xx answer, start streaming its body. Any
    /// failure on the way ends the stream: its chunk is returned.
    async fn start(&mut self) -> Option<Value> {
        let idle = self.idle();
        let body = match wire_request(&self.request, &self.connection.wire) {
            Ok(body) => body.to_bytes(),
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
            mock_provider::sim_time::timeout(idle, send(&self.connection, body, headers)).await;
        let response = match sent {
            Err(_) => return self.fail(JsError::error("idle"), true),
            Ok(Err(cause)) => {
                let error = request_transport_error(&base_url).with_cause(JsError::error(cause));
                return self.fail(error, false);
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let (headers, body) = read_error_response(response).await;
            let now_ms = (self.clock)() as f64;
            return self.fail(http_error(status, &headers, &body, now_ms), false);
        }
        if is_null_body_status(status) {
            // fetch gives such a success `response.body === null`.
            return self.fail(no_body_error(), false);
        }
        self.state = State::Streaming(Box::new(Streaming {
            body: response.into_body(),
            decoder: SseDecoder::default(),
            translator: Translator::default(),
        }));
        None
    }

    /// Read one body frame and queue the chunks it completes. A failure (idle
    /// timeout, early end, a bad frame) ends the stream: its chunk is
    /// returned; a failure inside a payload is queued after the chunks
    /// translated before it.
    async fn read_frame(&mut self) -> Option<Value> {
        let idle = self.idle();
        let State::Streaming(streaming) = &mut self.state else {
            return None;
        };
        let Streaming {
            body,
            decoder,
            translator,
        } = &mut **streaming;
        let frame = match mock_provider::sim_time::timeout(idle, body.frame()).await {
            Err(_) => return self.fail(JsError::error("idle"), true),
            Ok(None) => return self.fail(end_of_stream_error(), false),
            Ok(Some(Err(cause))) => {
                return self.fail(JsError::error(cause.to_string()), false);
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            return None;
        };
        let (chunks, error) = translate(decoder, translator, &data);
        let done = translator.is_done();
        self.pending.extend(chunks);
        if let Some(error) = error {
            let failure = self.failure(error, false);
            self.pending.push_back(failure);
            self.state = State::Done;
        } else if done {
            self.state = State::Done;
        }
        None
    }
}

/// A non-2xx answer's headers and body, for the HTTP error it becomes.
async fn read_error_response(response: Response) -> (Vec<(String, String)>, Bytes) {
    let headers = response
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
    (headers, body)
}

/// Decode one frame's SSE data and translate its payloads into chunks, up to
/// the end of the stream or the first failing payload (whose error is
/// returned with the chunks translated before it).
fn translate(
    decoder: &mut SseDecoder,
    translator: &mut Translator,
    data: &[u8],
) -> (Vec<Value>, Option<JsError>) {
    let mut chunks = Vec::new();
    for item in decoder.push(data) {
        let SseItem::Data(payload) = item else {
            continue;
        };
        // Chunks translated before a failure inside a payload still go out.
        if let Err(e) = translator.push_payload_into(&payload, &mut chunks) {
            return (chunks, Some(e));
        }
        if translator.is_done() {
            break;
        }
    }
    (chunks, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}"#;

    #[test]
    fn a_failing_payload_keeps_the_chunks_before_it_and_stops_the_frame() {
        let (mut decoder, mut translator) = (SseDecoder::default(), Translator::default());
        let frame = format!("data: {TEXT}\n\ndata: not json\n\ndata: {TEXT}\n\n");
        let (chunks, error) = translate(&mut decoder, &mut translator, frame.as_bytes());
        let error = error.expect("the malformed payload fails");
        assert_eq!(error.code.as_deref(), Some("MALFORMED_RESPONSE"));
        // One text payload's chunks (its block opening and its delta); the
        // payload after the failure is not translated.
        let types: Vec<&str> = chunks.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(types, ["block-start", "text-delta"]);
    }

    #[test]
    fn decoding_stops_at_done() {
        let (mut decoder, mut translator) = (SseDecoder::default(), Translator::default());
        let frame = format!("data: {TEXT}\n\ndata: [DONE]\n\ndata: {TEXT}\n\n");
        let (chunks, error) = translate(&mut decoder, &mut translator, frame.as_bytes());
        assert!(error.is_none());
        assert!(translator.is_done());
        let last = chunks.last().expect("chunks");
        assert_eq!(last["type"], "finish");
        assert_eq!(chunks.iter().filter(|c| c["type"] == "finish").count(), 1);
    }

    #[test]
    fn a_frame_split_mid_event_waits_for_the_rest() {
        let (mut decoder, mut translator) = (SseDecoder::default(), Translator::default());
        let frame = format!("data: {TEXT}\n\n");
        let (head, tail) = frame.as_bytes().split_at(10);
        let (chunks, error) = translate(&mut decoder, &mut translator, head);
        assert!(chunks.is_empty() && error.is_none());
        let (chunks, error) = translate(&mut decoder, &mut translator, tail);
        assert!(error.is_none());
        assert!(!chunks.is_empty());
    }
}
