//! One connection of the bridge host: HTTP/1.1 served as the mock
//! provider serves it (`mock_provider::serve_connection`'s settings: no
//! `Date` header, tokio timers, the same limits), each request forwarded to
//! the harness and its answer played back on the simulated connection.
//!
//! The playback writes what the mock provider in process would have
//! written, when it would have: the head, each body frame, and the end
//! (`complete` finishes the body; `dropped` fails it the way the mock
//! provider's scripted drop does, a few yields to flush and then a body
//! error, so the agent's client meets the same error; `open` never ends).
//! The connection's read side is drained eagerly by its own task, so the
//! agent's close is seen the instant it arrives, even while hyper is not
//! reading: that is the `provider_abort` of an exchange still running.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use mock_provider::server::ConnectionDropped;
use mock_provider::sim_time::Sleep;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio::time::Instant;

use dshc_scenario::protocol::{BridgeEndKind, BridgeRequest, BridgeResponse};

use super::BridgeHost;

/// As the mock provider's body: how many times a scripted drop yields
/// (pending, at once re-woken) so hyper flushes the frames before it.
const FLUSH_YIELDS_BEFORE_DROP: u8 = 3;

/// One forwarded request, from its answer to its end.
struct Exchange {
    /// Its number among the case's provider requests.
    number: u64,
    /// When the agent sent it (its arrival minus the harness's `received_at_ms`).
    sent_at: Instant,
    /// The response ended (completed or dropped) as the timeline says.
    ended: Cell<bool>,
    /// The agent closed the connection first: nothing more is sent.
    withdrawn: Cell<bool>,
}

/// The exchange a connection is serving, if any.
type Slot = Rc<RefCell<Option<Rc<Exchange>>>>;

/// Serve one accepted connection until either side closes it.
pub(super) async fn connection(stream: turmoil::net::TcpStream, host: BridgeHost) {
    let slot: Slot = Rc::default();
    let closed = {
        let (host, slot) = (host.clone(), slot.clone());
        move || withdraw(&host, &slot)
    };
    let io = Drained::new(stream, closed);
    let limits = mock_provider::ServerLimits::default();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .auto_date_header(false)
        .max_headers(limits.max_headers)
        .max_header_size(limits.max_header_bytes)
        .header_read_timeout(limits.header_read_timeout_ms.map(Duration::from_millis));
    let service = service_fn(move |request| respond(host.clone(), slot.clone(), request));
    // A failed connection is the playback's own doing (a drop) or the
    // agent's (a close); either way there is nothing left to serve.
    let _ = builder.serve_connection(TokioIo::new(io), service).await;
}

/// The agent closed the connection: report the exchange it withdrew, if
/// one was still running.
fn withdraw(host: &BridgeHost, slot: &Slot) {
    let Some(exchange) = slot.borrow().clone() else {
        return;
    };
    if exchange.ended.get() || exchange.withdrawn.replace(true) {
        return;
    }
    let elapsed = Instant::now().saturating_duration_since(exchange.sent_at);
    let at_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    host.link.abort(exchange.number, at_ms);
}

async fn wait_until(at: Instant) {
    if at > Instant::now() {
        mock_provider::sim_time::sleep_until(at).await;
    }
}

/// Forward one request and play its answer back.
async fn respond(
    host: BridgeHost,
    slot: Slot,
    request: Request<Incoming>,
) -> Result<Response<Playback>, ConnectionDropped> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(|_| ConnectionDropped)?;
    let received = Instant::now();
    let forwarded = BridgeRequest {
        method: parts.method.as_str().to_owned(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                [
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                ]
            })
            .collect(),
        body: String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    };
    let (number, answer) = host.link.ask(forwarded).ok_or(ConnectionDropped)?;
    // The harness logs every request that reaches its provider; without
    // that time, the arrival stands for the sending.
    let in_flight = Duration::from_millis(answer.received_at_ms.unwrap_or(0));
    let sent_at = received.checked_sub(in_flight).unwrap_or(received);
    let exchange = Rc::new(Exchange {
        number,
        sent_at,
        ended: Cell::new(false),
        withdrawn: Cell::new(false),
    });
    *slot.borrow_mut() = Some(exchange.clone());
    // A part that arrives `at_ms` after the sending is written one latency
    // earlier.
    let latency_ms = u64::try_from(host.latency.as_millis()).unwrap_or(u64::MAX);
    let written =
        move |at_ms: u64| sent_at + Duration::from_millis(at_ms.saturating_sub(latency_ms));
    let Some(head_at_ms) = answer.head_at_ms else {
        // No head ever came: the connection fails when the harness's did,
        // or never.
        if answer.end.kind == BridgeEndKind::Open {
            std::future::pending::<()>().await;
        }
        wait_until(written(answer.end.at_ms)).await;
        exchange.ended.set(true);
        return Err(ConnectionDropped);
    };
    wait_until(written(head_at_ms)).await;
    if exchange.withdrawn.get() {
        return Err(ConnectionDropped);
    }
    Ok(head(
        &answer,
        Playback::new(&answer, head_at_ms, written, exchange),
    ))
}

/// The response head of `answer` around its body.
fn head(answer: &BridgeResponse, body: Playback) -> Response<Playback> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    // As the client saw them, framing included (`content-length` or
    // `transfer-encoding`), so hyper frames the body the same way.
    for [name, value] in &answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

enum Step {
    /// Wait until then (nothing is written).
    At(Instant),
    /// Write this frame.
    Send(Bytes),
}

/// A response body that plays an answer's frames back at their times and
/// ends as the answer did.
pub(super) struct Playback {
    steps: VecDeque<Step>,
    end: BridgeEndKind,
    sleeping: Option<Pin<Box<Sleep>>>,
    flush_yields_before_drop: u8,
    exchange: Rc<Exchange>,
}

impl Playback {
    fn new(
        answer: &BridgeResponse,
        head_at_ms: u64,
        written: impl Fn(u64) -> Instant,
        exchange: Rc<Exchange>,
    ) -> Playback {
        let mut steps = VecDeque::new();
        let mut last_ms = head_at_ms;
        for frame in &answer.frames {
            steps.push_back(Step::At(written(frame.at_ms)));
            steps.push_back(Step::Send(Bytes::from(frame.data.clone())));
            last_ms = frame.at_ms;
        }
        if answer.end.kind != BridgeEndKind::Open && answer.end.at_ms > last_ms {
            steps.push_back(Step::At(written(answer.end.at_ms)));
        }
        Playback {
            steps,
            end: answer.end.kind,
            sleeping: None,
            flush_yields_before_drop: FLUSH_YIELDS_BEFORE_DROP,
            exchange,
        }
    }
}

impl Body for Playback {
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
            if self.exchange.withdrawn.get() {
                // The agent is gone: stop sending, and let the connection go.
                self.steps.clear();
                return Poll::Ready(Some(Err(ConnectionDropped)));
            }
            match self.steps.pop_front() {
                Some(Step::At(at)) => {
                    if at > Instant::now() {
                        self.sleeping = Some(Box::pin(mock_provider::sim_time::sleep_until(at)));
                    }
                }
                Some(Step::Send(bytes)) => {
                    if self.steps.is_empty() && self.end == BridgeEndKind::Complete {
                        self.exchange.ended.set(true);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                None => return self.finish(context),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.steps.is_empty() && self.sleeping.is_none() && self.end == BridgeEndKind::Complete
    }
}

impl Playback {
    /// After the last frame: end as the answer ended.
    fn finish(
        &mut self,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ConnectionDropped>>> {
        match self.end {
            BridgeEndKind::Complete => {
                self.exchange.ended.set(true);
                Poll::Ready(None)
            }
            // Nothing more ever comes, and nothing wakes this body.
            BridgeEndKind::Open => Poll::Pending,
            BridgeEndKind::Dropped if self.flush_yields_before_drop > 0 => {
                self.flush_yields_before_drop -= 1;
                context.waker().wake_by_ref();
                Poll::Pending
            }
            BridgeEndKind::Dropped => {
                self.exchange.ended.set(true);
                Poll::Ready(Some(Err(ConnectionDropped)))
            }
        }
    }
}

/// A simulated connection whose read side a task of its own drains as
/// bytes arrive, calling back once the peer closes it (end of stream or a
/// reset); hyper reads what was drained.
struct Drained {
    write: turmoil::net::tcp::OwnedWriteHalf,
    incoming: mpsc::UnboundedReceiver<io::Result<Vec<u8>>>,
    buffered: Vec<u8>,
    consumed: usize,
    closed: bool,
    reader: tokio::task::JoinHandle<()>,
}

impl Drained {
    fn new(stream: turmoil::net::TcpStream, closed: impl FnOnce() + 'static) -> Drained {
        let (mut read, write) = stream.into_split();
        let (sender, incoming) = mpsc::unbounded_channel();
        let reader = tokio::task::spawn_local(async move {
            let mut buffer = vec![0u8; 16 * 1024];
            loop {
                match read.read(&mut buffer).await {
                    Ok(0) => break,
                    Ok(n) => {
                        if sender.send(Ok(buffer[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        let _ = sender.send(Err(error));
                        break;
                    }
                }
            }
            drop(sender);
            closed();
        });
        Drained {
            write,
            incoming,
            buffered: Vec::new(),
            consumed: 0,
            closed: false,
            reader,
        }
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        // Closed with the connection, as a whole stream is.
        self.reader.abort();
    }
}

impl AsyncRead for Drained {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.consumed < self.buffered.len() {
                let n = buf.remaining().min(self.buffered.len() - self.consumed);
                let start = self.consumed;
                buf.put_slice(&self.buffered[start..start + n]);
                self.consumed += n;
                return Poll::Ready(Ok(()));
            }
            if self.closed {
                return Poll::Ready(Ok(()));
            }
            match self.incoming.poll_recv(context) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(bytes))) => {
                    self.buffered = bytes;
                    self.consumed = 0;
                }
                Poll::Ready(Some(Err(error))) => {
                    self.closed = true;
                    return Poll::Ready(Err(error));
                }
                Poll::Ready(None) => {
                    self.closed = true;
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl AsyncWrite for Drained {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.write).poll_write(context, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_shutdown(context)
    }
}
