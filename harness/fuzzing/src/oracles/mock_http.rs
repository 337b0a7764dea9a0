//! Mock-provider HTTP oracle: the trust boundary where a client's bytes
//! reach `dshc serve` and every loopback provider. Whatever a client sends
//! on one connection, the server answers and closes within bounded virtual
//! time, never panics, and what it writes is a sequence of well-formed
//! HTTP/1.1 responses: one per request the provider logged, with the logged
//! status, every provider error a DeepSeek error object, and at most one
//! more at the end, hyper's answer to a request it could not parse.
//!
//! An input's first byte picks how much of the request the fuzzer writes:
//! all of it, the headers and body after a fixed request line, or only the
//! body of a well-formed chat-completions request, so that coverage reaches
//! body validation and the script as well as the HTTP parser.
//!
//! The fuzz target `mock_http`, the corpus replay under `cargo test` and the
//! seeded test all call [`check_http_bytes`].

use std::time::Duration;

use mock_provider::{FaultKind, MockProvider, Script, ScriptEntry, ServerLimits, serve_connection};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Virtual time a connection may take to be answered and closed.
const CONNECTION_DEADLINE_MS: u64 = 600_000;

/// A body limit small enough for fuzzed inputs to cross.
const FUZZ_MAX_BODY_BYTES: usize = 4096;

/// Send `data` (shaped by its first byte) on one connection to a fresh mock
/// provider and check what comes back.
///
/// # Panics
/// When the server panics, does not close in time, or answers with bytes
/// that break a property above.
pub fn check_http_bytes(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let request = shape_request(mode, rest);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let provider = fuzz_provider();
    let written = runtime.block_on(exchange(&provider, request));
    check_responses(&provider, &written);
}

fn shape_request(mode: u8, rest: &[u8]) -> Vec<u8> {
    match mode % 3 {
        0 => rest.to_vec(),
        1 => [b"POST /chat/completions HTTP/1.1\r\n".as_slice(), rest].concat(),
        _ => {
            let head = format!(
                "POST /chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                rest.len()
            );
            [head.as_bytes(), rest].concat()
        }
    }
}

fn fuzz_provider() -> MockProvider {
    let script = Script::new(vec![
        ScriptEntry::content(["Hel", "lo"]),
        ScriptEntry::fault(FaultKind::RateLimit),
        ScriptEntry::content(["again"]),
    ]);
    let limits = ServerLimits {
        max_body_bytes: FUZZ_MAX_BODY_BYTES,
        ..ServerLimits::default()
    };
    MockProvider::with_limits(script, limits).expect("the fuzz script is valid")
}

/// Write `request`, close the write half, and read until the server closes.
async fn exchange(provider: &MockProvider, request: Vec<u8>) -> Vec<u8> {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let server_task = tokio::spawn(serve_connection(server, provider.clone()));
    let deadline = Duration::from_millis(CONNECTION_DEADLINE_MS);
    let answered = mock_provider::sim_time::timeout(deadline, async move {
        let (mut reader, mut writer) = tokio::io::split(&mut client);
        let write = async {
            // The server may close before reading everything; that is its right.
            let _ = writer.write_all(&request).await;
            let _ = writer.shutdown().await;
        };
        let mut written = Vec::new();
        let read = reader.read_to_end(&mut written);
        let (_, read) = tokio::join!(write, read);
        read.map(|_| written)
    })
    .await;
    let written = match answered {
        Ok(Ok(written)) => written,
        Ok(Err(error)) => panic!("reading the answer failed: {error}"),
        Err(_) => panic!("the connection was neither answered nor closed in {deadline:?}"),
    };
    match server_task.await {
        Ok(_) => written,
        Err(error) => panic!("the server task failed: {error}"),
    }
}

/// One response as written on the wire.
struct WireResponse {
    status: u16,
    body: Vec<u8>,
}

fn check_responses(provider: &MockProvider, written: &[u8]) {
    let logged = provider.requests();
    let methods: Vec<&str> = logged.iter().map(|r| r.method.as_str()).collect();
    let responses = parse_responses(written, &methods).unwrap_or_else(|problem| {
        panic!(
            "malformed answer ({problem}): {:?}",
            String::from_utf8_lossy(&written[..written.len().min(2000)])
        )
    });
    assert!(
        responses.len() == logged.len() || responses.len() == logged.len() + 1,
        "{} responses for {} logged requests",
        responses.len(),
        logged.len()
    );
    for (response, request) in responses.iter().zip(&logged) {
        let status = request.outcome.status();
        assert_eq!(
            response.status, status,
            "the status sent is the status logged"
        );
        if status >= 400 && request.method != "HEAD" {
            let body: Value = serde_json::from_slice(&response.body)
                .unwrap_or_else(|e| panic!("a {status} body that is not JSON ({e})"));
            assert!(
                body.pointer("/error/message").is_some_and(Value::is_string),
                "a {status} body without error.message: {body}"
            );
        }
    }
    if let Some(extra) = responses.get(logged.len()) {
        assert!(
            (400..=599).contains(&extra.status),
            "hyper's own answer is an error, not {}",
            extra.status
        );
    }
}

/// Split the server's bytes into responses. Interim `1xx` responses are
/// skipped; a response to `HEAD` has no body; a body with neither a length
/// nor chunking runs to the end.
fn parse_responses(mut bytes: &[u8], methods: &[&str]) -> Result<Vec<WireResponse>, String> {
    let mut responses = Vec::new();
    while !bytes.is_empty() {
        let end = find(bytes, b"\r\n\r\n").ok_or("a head without its blank line")?;
        let head = std::str::from_utf8(&bytes[..end]).map_err(|_| "a head that is not UTF-8")?;
        bytes = &bytes[end + 4..];
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .or_else(|| status_line.strip_prefix("HTTP/1.0 "))
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| format!("a bad status line {status_line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        for line in lines {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("a bad header line {line:?}"))?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| "a bad content-length")?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            }
        }
        if (100..200).contains(&status) {
            continue;
        }
        let is_head = methods.get(responses.len()) == Some(&"HEAD");
        let body = if is_head || status == 204 || status == 304 {
            Vec::new()
        } else if chunked {
            let (body, rest) = dechunk(bytes)?;
            bytes = rest;
            body
        } else if let Some(length) = length {
            let body = bytes
                .get(..length)
                .ok_or("a body shorter than its length")?;
            bytes = &bytes[length..];
            body.to_vec()
        } else {
            std::mem::take(&mut bytes).to_vec()
        };
        responses.push(WireResponse { status, body });
    }
    Ok(responses)
}

fn dechunk(mut bytes: &[u8]) -> Result<(Vec<u8>, &[u8]), String> {
    let mut body = Vec::new();
    loop {
        let end = find(bytes, b"\r\n").ok_or("a chunk size without its line end")?;
        let size_text = std::str::from_utf8(&bytes[..end]).map_err(|_| "a bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        bytes = &bytes[end + 2..];
        if size == 0 {
            let rest = bytes
                .strip_prefix(b"\r\n")
                .ok_or("no blank line after the last chunk")?;
            return Ok((body, rest));
        }
        let chunk = bytes.get(..size).ok_or("a chunk shorter than its size")?;
        body.extend_from_slice(chunk);
        bytes = bytes[size..]
            .strip_prefix(b"\r\n")
            .ok_or("a chunk without its line end")?;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
