//! What rendering produces: a [`ResponsePlan`] of status, headers and body actions
//! (bytes, virtual-time pauses, a dropped connection) that a server arm executes and a
//! test reads back.

use bytes::Bytes;

use crate::wire::ErrorBody;

/// One step of writing a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyAction {
    /// Wait this long (tokio time) before the next action; nothing is written.
    Sleep {
        /// Milliseconds to wait.
        delay_ms: u64,
    },
    /// Write these bytes as one body frame (one SSE event or comment, or a whole JSON body).
    Send(Bytes),
    /// Abort the connection: the body never completes (a chunked body lacks its
    /// terminating chunk), and nothing after this action is sent.
    DropConnection,
}

/// A fully rendered response: what to send, when, and how it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsePlan {
    /// Wait this long (tokio time) before sending the status line and headers.
    pub head_delay_ms: u64,
    /// HTTP status code.
    pub status: u16,
    /// Response headers, in order (lowercase names).
    pub headers: Vec<(String, String)>,
    /// Body actions, in order.
    pub body: Vec<BodyAction>,
    /// Close the connection after `head_delay_ms` instead of answering: no
    /// status, headers or body is sent (`close_before_head`).
    pub closes_before_head: bool,
}

impl ResponsePlan {
    /// An HTTP error with a JSON error body.
    pub fn error(status: u16, body: &ErrorBody) -> Self {
        Self {
            head_delay_ms: 0,
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![BodyAction::Send(Bytes::from(body.to_json()))],
            closes_before_head: false,
        }
    }

    /// All bytes a patient client receives (every `Send`, concatenated).
    pub fn body_bytes(&self) -> Bytes {
        let mut all = Vec::new();
        for action in &self.body {
            if let BodyAction::Send(bytes) = action {
                all.extend_from_slice(bytes);
            }
        }
        Bytes::from(all)
    }

    /// The `Send` frames, in order.
    pub fn frames(&self) -> Vec<&Bytes> {
        self.body
            .iter()
            .filter_map(|action| match action {
                BodyAction::Send(bytes) => Some(bytes),
                _ => None,
            })
            .collect()
    }

    /// True if the body ends by dropping the connection.
    pub fn drops_connection(&self) -> bool {
        self.body.contains(&BodyAction::DropConnection)
    }

    /// Value of a response header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Sum of all waits (head delay plus every `Sleep`), in milliseconds.
    pub fn total_delay_ms(&self) -> u64 {
        self.head_delay_ms
            + self
                .body
                .iter()
                .map(|action| match action {
                    BodyAction::Sleep { delay_ms } => *delay_ms,
                    _ => 0,
                })
                .sum::<u64>()
    }
}
