//! `dshc serve` is the real arm of the mock provider: a real process on a
//! real loopback socket, answering a real HTTP client with a correct SSE
//! stream, and answering malformed HTTP with a 4xx.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;

use dshc_agent::transport::{ChunkStream, Connection, Endpoint};
use dshc_deepseek::DeepSeekDefaults;
use serde_json::{Value, json};

struct Served {
    child: Child,
    address: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(name: &str, script: &str) -> Served {
    serve_with(name, script, "")
}

/// `dshc serve` run by `sh -c`, after `prelude` (e.g. `ulimit -n 32;`).
fn serve_with(name: &str, script: &str, prelude: &str) -> Served {
    let dir = std::env::temp_dir().join(format!("dshc-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, script).unwrap();
    let command = format!(
        "{prelude} exec '{}' serve --script '{}' --port 0",
        env!("CARGO_BIN_EXE_dshc"),
        path.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &command])
        .stdout(Stdio::piped())
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
    Served { child, address }
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
            defaults: DeepSeekDefaults::default(),
            stream_idle_timeout_ms: 10_000,
            api_key: "sk-test".into(),
            user_id: "user".into(),
        });
        let mut stream = ChunkStream::new(connection, request, Box::new(|| false), Box::new(|| {}));
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
    let served = serve_with(
        "emfile",
        "responses = [{ content = [\"ok\"] }, { content = [\"ok\"] }]",
        "ulimit -n 24;",
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
