//! The HTTP/1.1 server: one I/O-generic connection handler shared by the real-socket
//! (tokio) and simulated-network (turmoil) arms, so both run exactly the same code.
//!
//! Determinism rules applied here: hyper's automatic `Date` header is off (it reads the
//! wall clock), hyper's timers run on [`TokioTimer`] (virtual under turmoil or paused
//! tokio time), and every pause is a tokio timer armed through `sim_time`, so a simulation
//! knows every deadline.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{CONTENT_LENGTH, HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::provider::MockProvider;
use crate::render::{BodyAction, ResponsePlan};
use crate::sim_time::{self, Sleep};

/// Serve one connection (HTTP/1.1, keep-alive) until the client closes it or it fails.
///
/// Errors are also recorded in [`MockProvider::connection_errors`]. Malformed requests
/// are answered by hyper with a 4xx before the connection closes.
pub async fn serve_connection<I>(io: I, provider: MockProvider) -> Result<(), hyper::Error>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = provider.limits().clone();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .auto_date_header(false)
        .max_headers(limits.max_headers)
        .max_header_size(limits.max_header_bytes)
        .header_read_timeout(limits.header_read_timeout_ms.map(Duration::from_millis));
    let service_provider = provider.clone();
    let service = service_fn(move |request| respond(service_provider.clone(), request));
    let result = builder.serve_connection(TokioIo::new(io), service).await;
    if let Err(error) = &result {
        provider.record_connection_error(error_chain(error));
    }
    result
}

/// `error` and its sources, joined with `": "`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The first bytes an HTTP/2 client with prior knowledge sends.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// Whether the connection opens with the HTTP/2 preface, judged from the
/// first bytes (peeked, so HTTP/1.1 traffic is untouched).
async fn opens_with_http2(stream: &tokio::net::TcpStream) -> bool {
    let mut buffer = [0u8; 16];
    loop {
        let Ok(read) = stream.peek(&mut buffer).await else {
            return false;
        };
        let seen = &buffer[..read];
        if read == 0 || !HTTP2_PREFACE.starts_with(&seen[..read.min(HTTP2_PREFACE.len())]) {
            return false;
        }
        if read >= HTTP2_PREFACE.len() {
            return true;
        }
        sim_time::sleep(Duration::from_millis(1)).await;
    }
}

/// Answer an HTTP/2 client: this server speaks HTTP/1.1 only.
async fn refuse_http2(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = r#"{"error":{"message":"This server speaks HTTP/1.1 only","type":"invalid_request_error","code":"http_version_not_supported"}}"#;
    let response = format!(
        "HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Accept connections on a real tokio listener forever, serving each on its
/// own task, at most [`crate::ServerLimits::max_connections`] at once (the
/// rest wait in the listen backlog). A slow client holds its slot no longer
/// than the head timeout ([`crate::ServerLimits::header_read_timeout_ms`])
/// plus the body timeout ([`crate::ServerLimits::body_read_timeout_ms`]) per
/// request, so clients that trickle their requests delay the others, never
/// lock them out.
///
/// An accept error (too many open files, a connection reset before it was
/// accepted) is recorded and the loop goes on after a short pause; it never
/// ends the server.
pub async fn serve_tokio(
    listener: tokio::net::TcpListener,
    provider: MockProvider,
) -> std::io::Result<()> {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(
        provider.limits().max_connections.max(1),
    ));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                provider.record_connection_error(format!("accept: {error}"));
                drop(slot);
                sim_time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let provider = provider.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // A client that connects and sends nothing must not hold a slot.
            let wait_ms = provider.limits().header_read_timeout_ms.unwrap_or(30_000);
            let first =
                sim_time::timeout(Duration::from_millis(wait_ms), opens_with_http2(&stream));
            match first.await {
                Err(_) => {
                    provider.record_connection_error("no request head in time".into());
                    return;
                }
                Ok(true) => {
                    refuse_http2(stream).await;
                    return;
                }
                Ok(false) => {}
            }
            // Failures are recorded in the provider; nothing else to do here.
            let _ = serve_connection(stream, provider).await;
        });
    }
}

/// Accept connections on a turmoil (simulated) listener forever, serving each on its
/// own task of the host's runtime. Returns only if `accept` fails.
#[cfg(feature = "turmoil")]
pub async fn serve_turmoil(
    listener: turmoil::net::TcpListener,
    provider: MockProvider,
) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let provider = provider.clone();
        tokio::spawn(async move {
            let _ = serve_connection(stream, provider).await;
        });
    }
}

/// The answer to one request; an `Err` (a scripted `close_before_head`)
/// has hyper close the connection without writing any response.
async fn respond(
    provider: MockProvider,
    request: Request<Incoming>,
) -> Result<Response<PlanBody>, ConnectionDropped> {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let limit = provider.limits().max_body_bytes;
    let declared_length = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let plan = if declared_length.is_some_and(|length| length > limit as u64) {
        provider.handle_oversized(method, path, headers)
    } else {
        let collecting = Limited::new(body, limit).collect();
        let collected = match provider.limits().body_read_timeout_ms {
            Some(timeout_ms) => {
                match sim_time::timeout(Duration::from_millis(timeout_ms), collecting).await {
                    Ok(collected) => collected,
                    Err(_) => {
                        provider.record_connection_error(format!(
                            "reading request body: not whole within {timeout_ms} ms"
                        ));
                        let plan = provider.handle_body_timeout(method, path, headers);
                        return into_response(plan).await;
                    }
                }
            }
            None => collecting.await,
        };
        match collected {
            Ok(collected) => provider.handle(crate::IncomingRequest {
                method,
                path,
                headers,
                body: collected.to_bytes(),
            }),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                provider.handle_oversized(method, path, headers)
            }
            Err(error) => {
                provider.record_connection_error(format!(
                    "reading request body: {}",
                    error_chain(error.as_ref())
                ));
                provider.handle_unreadable(method, path, headers)
            }
        }
    };
    into_response(plan).await
}

async fn into_response(plan: ResponsePlan) -> Result<Response<PlanBody>, ConnectionDropped> {
    if plan.head_delay_ms > 0 {
        sim_time::sleep(Duration::from_millis(plan.head_delay_ms)).await;
    }
    if plan.closes_before_head {
        return Err(ConnectionDropped);
    }
    let mut response = Response::new(PlanBody::new(plan.body));
    *response.status_mut() =
        StatusCode::from_u16(plan.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in plan.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    Ok(response)
}

/// The error a [`PlanBody`] yields for [`BodyAction::DropConnection`]; hyper then
/// aborts the connection without finishing the body.
#[derive(Debug)]
pub struct ConnectionDropped;

impl fmt::Display for ConnectionDropped {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("mock-provider: scripted connection drop")
    }
}

impl std::error::Error for ConnectionDropped {}

/// How many times a body yields (pending, immediately re-woken) before a scripted drop,
/// so hyper can flush the frames already written; a flush that needs more turns than
/// this (a client not reading) may lose those frames.
const FLUSH_YIELDS_BEFORE_DROP: u8 = 3;

/// A response body that executes body actions lazily as hyper polls it: each `Send` is
/// one frame, each `Sleep` a tokio sleep, `DropConnection` an error.
pub struct PlanBody {
    actions: VecDeque<BodyAction>,
    sleeping: Option<Pin<Box<Sleep>>>,
    has_exact_length: bool,
    flush_yields_before_drop: u8,
}

impl PlanBody {
    fn new(actions: Vec<BodyAction>) -> Self {
        // A single frame (a JSON answer) gets a Content-Length; anything paced, streamed
        // or aborted is sent chunked.
        let has_exact_length = matches!(actions.as_slice(), [] | [BodyAction::Send(_)]);
        Self {
            actions: actions.into(),
            sleeping: None,
            has_exact_length,
            flush_yields_before_drop: FLUSH_YIELDS_BEFORE_DROP,
        }
    }
}

impl Body for PlanBody {
    type Data = Bytes;
    type Error = ConnectionDropped;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ConnectionDropped>>> {
        loop {
            if let Some(sleep) = self.sleeping.as_mut() {
                match sleep.as_mut().poll(context) {
                    Poll::Ready(()) => self.sleeping = None,
                    Poll::Pending => return Poll::Pending,
                }
            }
            match self.actions.pop_front() {
                None => return Poll::Ready(None),
                Some(BodyAction::Send(bytes)) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                Some(BodyAction::Sleep { delay_ms }) => {
                    self.sleeping =
                        Some(Box::pin(sim_time::sleep(Duration::from_millis(delay_ms))));
                }
                Some(BodyAction::DropConnection) => {
                    if self.flush_yields_before_drop > 0 {
                        // hyper flushes its write buffer when the body is pending; give it
                        // that chance so the events before the drop reach the client.
                        self.flush_yields_before_drop -= 1;
                        self.actions.push_front(BodyAction::DropConnection);
                        context.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    self.actions.clear();
                    return Poll::Ready(Some(Err(ConnectionDropped)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.actions.is_empty() && self.sleeping.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if !self.has_exact_length {
            return SizeHint::default();
        }
        let remaining = self
            .actions
            .iter()
            .map(|action| match action {
                BodyAction::Send(bytes) => bytes.len() as u64,
                _ => 0,
            })
            .sum();
        SizeHint::with_exact(remaining)
    }
}
