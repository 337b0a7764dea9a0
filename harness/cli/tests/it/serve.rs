//! `dshc serve` is the real arm of the mock provider: a real process on a
//! real loopback socket, answering a real HTTP client with a correct SSE
//! stream, and answering malformed HTTP with a 4xx. Real clients' sessions
//! against it are in `real_clients.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;

use dshc_agent::transport::{ChunkStream, Connection, Endpoint};
use dshc_deepseek::WireOptions;
use serde_json::{Value, json};

pub(super) struct Served {
    child: Child,
    pub(super) address: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(name: &str, script: &str) -> Served {
    serve_with(name, script, "", "--quiet").0
}

/// `dshc serve` run by `sh -c`, after `prelude` (e.g. `ulimit -n 32;`), with
/// `extra` arguments; also returns its stderr.
pub(super) fn serve_with(
    name: &str,
    script: &str,
    prelude: &str,
    extra: &str,
) -> (Served, BufReader<std::process::ChildStderr>) {
    let path = scratch_dir().join(format!("{name}.toml"));
    std::fs::write(&path, script).unwrap();
    let command = format!(
        "{prelude} exec '{}' serve --script '{}' --port 0 {extra}",
        env!("CARGO_BIN_EXE_dshc"),
        path.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dshc serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("listening on http://")
        .expect("it prints its address")
        .parse()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    (Served { child, address }, stderr)
}

pub(super) fn scratch_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dshc-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chunks_from(address: SocketAddr, request: Value) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let connection = Rc::new(Connection {
            endpoint: Endpoint::Socket(address),
            wire: WireOptions::default(),
            stream_idle_timeout_ms: 10_000,
            api_key: "sk-test".into(),
            user_id: "user".into(),
        });
        let mut stream = ChunkStream::new(
            connection,
            request.into(),
            Box::new(|| false),
            std::rc::Rc::new(|| 0),
        );
        let mut chunks = Vec::new();
        while let Some(chunk) = stream.next().await {
            chunks.push(chunk);
        }
        chunks
    })
}

#[test]
fn a_real_client_gets_a_correct_sse_stream_over_loopback() {
    let served = serve(
        "stream",
        r#"responses = [
  { reasoning = ["Think", "ing"], content = ["Hel", "lo"], tool_calls = [{ id = "call_1", name = "read", arguments = ["{\"pa", "th\":\"a\"}"] }], finish_reason = "tool_calls" },
]"#,
    );
    let request = json!({
        "provider": "deepseek-official", "model": "deepseek-v4-flash", "maxTokens": 100,
        "messages": [{"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "msg-1"}],
        "system": "You are terse.", "sessionId": "s-1",
    });
    let chunks = chunks_from(served.address, request);
    let kinds: Vec<&str> = chunks.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "block-start",
            "reasoning-delta",
            "reasoning-delta",
            "block-start",
            "text-delta",
            "text-delta",
            "block-start",
            "tool-call-delta",
            "tool-call-delta",
            "block-end",
            "block-end",
            "block-end",
            "usage",
            "finish"
        ]
    );
    assert_eq!(
        chunks[9]["block"],
        json!({"type": "reasoning", "text": "Thinking"})
    );
    assert_eq!(
        chunks[10]["block"],
        json!({"type": "text", "text": "Hello"})
    );
    assert_eq!(
        chunks[11]["block"],
        json!({"type": "tool-call", "id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"})
    );
    assert_eq!(
        chunks[13],
        json!({"type": "finish", "reason": {"kind": "tool-calls"}})
    );
    let usage = &chunks[12]["usage"];
    assert!(
        usage["inputTokens"].as_u64().unwrap() > 0 && usage["outputTokens"].as_u64().unwrap() > 0
    );
}

#[test]
fn malformed_http_gets_a_4xx_and_the_server_keeps_serving() {
    let served = serve("malformed", "responses = [{ content = \"ok\" }]");

    let mut socket = std::net::TcpStream::connect(served.address).unwrap();
    socket.write_all(b"this is not HTTP\r\n\r\n").unwrap();
    let mut reply = String::new();
    let _ = socket.read_to_string(&mut reply);
    let status: u16 = reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    assert!((400..500).contains(&status), "{reply}");
    let request = json!({"provider": "p", "model": "m", "messages": [], "sessionId": "s"});
    let chunks = chunks_from(served.address, request);
    assert_eq!(chunks.last().unwrap()["type"], "finish");
    assert_eq!(
        chunks[1],
        json!({"type": "text-delta", "index": 0, "text": "ok"})
    );
}

/// One plain HTTP/1.1 exchange on a fresh connection; the raw response.
fn raw_exchange(address: SocketAddr, request: &[u8]) -> String {
    let mut stream = std::net::TcpStream::connect(address).expect("connects");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

const POST: &[u8] = b"POST /chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 71\r\nconnection: close\r\n\r\n{\"model\":\"m\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";

#[test]
fn every_request_is_a_line_on_stderr_and_a_json_line_in_the_log() {
    let log_path = scratch_dir().join("requests.jsonl");
    let (served, mut stderr) = serve_with(
        "logged",
        "responses = [{ content = \"ok\" }]",
        "",
        &format!("--log '{}'", log_path.display()),
    );
    let models = raw_exchange(
        served.address,
        b"GET /models HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-live-0123456789abcdef\r\nx-api-key: ak-live-secret\r\nconnection: close\r\n\r\n",
    );
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    assert!(raw_exchange(served.address, POST).starts_with("HTTP/1.1 200"));
    let exhausted = raw_exchange(served.address, POST);
    assert!(exhausted.starts_with("HTTP/1.1 400"), "{exhausted}");
    assert!(
        exhausted.contains("has no answer for request 3"),
        "{exhausted}"
    );

    let lines: Vec<String> = (0..3)
        .map(|_| {
            let mut line = String::new();
            stderr.read_line(&mut line).unwrap();
            line.trim_end().to_owned()
        })
        .collect();
    assert_eq!(lines[0], "#1 GET /models 200");
    assert!(
        lines[1].starts_with("#2 POST /chat/completions 200 entry 0 (json) cache 0/"),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[2],
        "#3 POST /chat/completions 400 script exhausted after 1 responses"
    );
    // A request's stderr line is printed once its log line is written.
    let log: Vec<Value> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(log.len(), 3);
    assert_eq!(log[1]["body"]["model"], "m");
    assert_eq!(log[1]["outcome"]["kind"], "scripted");
    assert_eq!(log[2]["status"], 400);
    assert_eq!(log[2]["outcome"]["kind"], "script_exhausted");
    assert!(log[1]["prompt"]["prompt_tokens"].as_u64().unwrap() > 0);
    // Credentials never reach the file; their schemes do.
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!text.contains("sk-live-0123456789abcdef") && !text.contains("ak-live-secret"));
    assert_eq!(
        log[0]["headers"][1],
        json!(["authorization", "Bearer [redacted]"])
    );
    assert_eq!(log[0]["headers"][2], json!(["x-api-key", "[redacted]"]));
}

#[test]
fn a_server_whose_stderr_nobody_reads_answers_every_request() {
    let log_path = scratch_dir().join("unread-stderr.jsonl");
    // stderr is a pipe this test does not read until the end: 64 KiB of
    // pipe and the 1 MiB queue hold about 70 of these 16 KiB lines.
    let (served, stderr) = serve_with(
        "unread-stderr",
        "responses = [{ content = \"ok\" }]",
        "",
        &format!("--log '{}'", log_path.display()),
    );
    let id = "m".repeat(16 * 1024);
    let request = format!("GET /models/{id} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    for n in 0..150 {
        let response = raw_exchange(served.address, request.as_bytes());
        assert!(
            response.starts_with("HTTP/1.1 404"),
            "request {n} got no answer: {:?}",
            response.get(..100)
        );
    }
    // Once stderr is read, the dropped lines are counted there.
    let (found, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if line.contains("lines were not printed (stderr was not read)") {
                let _ = found.send(line);
                break;
            }
        }
    });
    let note = lines
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a note on the dropped lines");
    assert!(note.starts_with("dshc serve: "), "{note}");
}

#[test]
fn a_log_that_is_the_script_or_not_a_regular_file_is_refused() {
    let dir = scratch_dir().join("log-refused");
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let script = "[[responses]]\ncontent = \"hi\"\n";
    std::fs::write(dir.join("s.toml"), script).expect("written");
    for log in ["s.toml", "/dev/full"] {
        let output = Command::new(env!("CARGO_BIN_EXE_dshc"))
            .args(["serve", "--script", "s.toml", "--port", "0", "--log", log])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("dshc runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{log}: {stderr}");
        assert!(stderr.contains(&format!("--log {log}")), "{stderr}");
    }
    let kept = std::fs::read_to_string(dir.join("s.toml")).expect("read");
    assert_eq!(kept, script, "the script is intact");
}

#[test]
fn an_http2_preface_gets_505_not_silence() {
    let served = serve("http2", "responses = []");
    let response = raw_exchange(served.address, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert!(
        response.starts_with("HTTP/1.1 505 HTTP Version Not Supported"),
        "{response}"
    );
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "a real server on a real socket: its accept loop needs real time to run"
)]
fn running_out_of_file_descriptors_does_not_end_the_server() {
    let (served, _stderr) = serve_with(
        "emfile",
        "responses = [{ content = [\"ok\"] }, { content = [\"ok\"] }]",
        "ulimit -n 24;",
        "--quiet",
    );
    // Far more connections than descriptors: accepts fail with EMFILE.
    let idle: Vec<_> = (0..60)
        .filter_map(|_| std::net::TcpStream::connect(served.address).ok())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(idle);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let response = raw_exchange(served.address, POST);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}
