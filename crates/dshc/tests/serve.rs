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
    let dir = std::env::temp_dir().join(format!("dshc-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, script).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dshc"))
        .args(["serve", "--script", path.to_str().unwrap(), "--port", "0"])
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
