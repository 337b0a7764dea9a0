//! The scriptable failures: HTTP errors answered instead of a stream, and transport
//! faults struck inside one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A scriptable failure.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// HTTP 429 `rate_limit_error`, with `Retry-After` when `retry_after_s` is set.
    RateLimit,
    /// HTTP 500 `server_error`.
    ServerError,
    /// HTTP 400 `invalid_request_error` whose message mentions the maximum context
    /// length (the adapter maps it to `CONTEXT_WINDOW_EXCEEDED`).
    ContextOverflow,
    /// Any HTTP error: `status` (400–599) with an OpenAI-shaped JSON body.
    HttpError,
    /// Abort the connection after `after_events` events: the body never completes.
    DropConnection,
    /// Send nothing for `stall_ms` after `after_events` events, then continue.
    Stall,
    /// Send one `data:` event with a non-JSON payload after `after_events` events, then
    /// continue.
    MalformedJson,
    /// End the body cleanly without `data: [DONE]`.
    MissingDone,
    /// Answer `204 No Content`: a success status with no body, which a fetch
    /// client sees as `response.body === null`.
    NoContent,
    /// Read the request, then close the connection without any response (after
    /// `delay_ms`): the client's request itself fails, as when a proxy or the
    /// server goes away.
    CloseBeforeHead,
}

impl FaultKind {
    /// True for faults answered with an HTTP error instead of a stream.
    pub fn is_http_error(self) -> bool {
        matches!(
            self,
            Self::RateLimit | Self::ServerError | Self::ContextOverflow | Self::HttpError
        )
    }

    /// The fault's name as a script writes it (`rate_limit`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::RateLimit => "rate_limit",
            Self::ServerError => "server_error",
            Self::ContextOverflow => "context_overflow",
            Self::HttpError => "http_error",
            Self::DropConnection => "drop_connection",
            Self::Stall => "stall",
            Self::MalformedJson => "malformed_json",
            Self::MissingDone => "missing_done",
            Self::NoContent => "no_content",
            Self::CloseBeforeHead => "close_before_head",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FaultKind;

    #[test]
    fn a_fault_is_named_as_a_script_writes_it() {
        let every = [
            FaultKind::RateLimit,
            FaultKind::ServerError,
            FaultKind::ContextOverflow,
            FaultKind::HttpError,
            FaultKind::DropConnection,
            FaultKind::Stall,
            FaultKind::MalformedJson,
            FaultKind::MissingDone,
            FaultKind::NoContent,
            FaultKind::CloseBeforeHead,
        ];
        for kind in every {
            let written = serde_json::to_value(kind).expect("a fault serializes");
            assert_eq!(written.as_str(), Some(kind.name()), "{kind:?}");
            let read: FaultKind = serde_json::from_value(written).expect("and reads back");
            assert_eq!(read, kind);
        }
    }
}
