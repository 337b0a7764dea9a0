//! The DeepSeek adapter's pure half (spec 09), restated from
//! `@deepseek-ai/dsh-llm-deepseek` 0.1.0-rc.8.
//!
//! This module exists because the only provider route the loop talks to,
//! `deepseek-official`, is where the assembled prompt becomes bytes on the
//! wire and where the wire's answer becomes logged `assistant/chunk`s. Both
//! directions are observable by a conformance harness, so they are restated
//! here without I/O: the request body and headers, SSE framing (as the npm
//! `eventsource-parser` 3.x implements it behind a `TextDecoderStream`), the
//! payload-to-chunk translation, usage and cache-token mapping, HTTP error
//! classification and the failure objects the adapter throws. The socket
//! side lives in `dshc_agent::transport`.
//!
//! Everything that reaches a log is a `serde_json::Value` built in upstream's
//! key order. Values copied from the wire or from the harness request are
//! passed through the way a `JSON.parse`/`JSON.stringify` round trip would
//! leave them: numbers become JavaScript numbers (`1.0` → `1`) and object keys
//! take JavaScript own-property order (array-index keys first).
//!
//! Known, deliberate divergences (all outside realistic traffic):
//! - A `Retry-After` date is read by `Date.parse` in the forms HTTP uses
//!   (`dshc_model::js::date_parse`); V8 reads still others.
//! - Payloads that `JSON.parse` accepts but `serde_json` rejects (escaped lone
//!   surrogates, numbers overflowing to `Infinity`, nesting deeper than 128)
//!   are reported as `MALFORMED_RESPONSE` when the odd part is in a member
//!   the translation reads (`choices`, `usage`, a choice's `delta` and
//!   `finish_reason`, a delta's texts and `tool_calls`); a member it does not
//!   read is only checked as JSON syntax, so there they pass, as upstream.
//! - Malformed *harness* requests (non-array `content`, `null` messages or
//!   blocks, an image block without an `attachment` object) are serialized
//!   leniently instead of throwing `TypeError`s.
//! - The 120-unit prefix in `malformed SSE payload: …` may end inside a
//!   surrogate pair; JavaScript keeps the lone surrogate, a Rust `String`
//!   holds U+FFFD instead.
//! - `TypeError` texts for odd wire JSON are V8's interpreter messages; once
//!   V8 optimizes `translate` it may say `undefined is not a function`
//!   instead. They only ever appear as the cause of a `TRANSPORT` error.
//!
//! Differentially checked against the rc.8 package under Node 20 (random SSE
//! streams with random read splits, HTTP errors and request bodies).

//!
//! Modules follow the adapter's own parts: [`config`] (W4, W5), [`request`]
//! (W1–W3, W6), [`images`] (the image path of W2), [`sse`] (W7),
//! [`translate`] (W8, W9, W11, W12), [`failure`] (W10) and [`wording`] (the
//! provider-wording classifiers). JavaScript value rules come from
//! `dshc_model::js`.

pub mod config;
pub mod failure;
pub mod images;
pub mod request;
pub mod sse;
pub mod translate;
pub mod wording;

#[cfg(test)]
mod fixtures;

pub use config::*;
pub use failure::*;
pub use images::*;
pub use request::*;
pub use sse::*;
pub use translate::*;
pub use wording::{is_context_window_exceeded_error, is_quota_exceeded_error};

use dshc_model::js::{JsError, number_json};
use dshc_model::llm::failure as failure_object;
use serde_json::{Map, Value, json};

/// The provider route this adapter serves.
pub const PROVIDER: &str = "deepseek-official";
/// Upstream's default `baseURL` (the public API).
pub const PUBLIC_BASE_URL: &str = "https://api.deepseek.com";
/// Default combined request/response context capacity.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
/// Default per-request output-token cap.
pub const DEFAULT_MAX_TOKENS: u64 = 256_000;
/// Default idle interval allowed between stream reads.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
/// The `user-agent` this reference sends. Upstream sends its own product
/// identity (`deepseek-harness/<version> (+<repository url>)`); a reference
/// implementation must not impersonate it, so the value is fixed here.
pub const USER_AGENT: &str = "dshc/0.1.0 (reference)";
/// The efforts the DeepSeek route understands, in upstream's catalog order.
pub const REASONING_EFFORTS: [&str; 4] = ["off", "low", "high", "max"];
/// The terminal SSE payload.
pub const DONE: &str = "[DONE]";

// JavaScript property access as the adapter does it.

/// `value.key` for a JSON value: only objects have the properties the
/// adapter reads; on any other value the property is `undefined` (`None`).
pub(crate) fn prop<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    let map = value.as_object()?;
    // The adapter's objects are small (a message, a tool, a request), and
    // comparing their few keys costs less than hashing `key` (serde_json's
    // maps hash with SipHash); keys are unique, so either finds the same.
    if map.len() <= SCANNED_OBJECT_LEN {
        map.iter()
            .find_map(|(name, value)| (name == key).then_some(value))
    } else {
        map.get(key)
    }
}

/// Objects up to this many keys are read by a scan of their keys.
const SCANNED_OBJECT_LEN: usize = 12;

/// `optional?.key` where `optional` may itself be missing.
pub(crate) fn prop_of<'a>(value: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    value.and_then(|v| prop(v, key))
}

/// A JSON value's elements, or nothing for a non-array.
pub(crate) fn items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Insert `key: value` only when the value is defined (what `JSON.stringify`
/// does with `undefined` properties).
pub(crate) fn insert_defined(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value {
        map.insert(key.to_string(), value.clone());
    }
}

/// An `LlmError` with the optional provider facts, in upstream's key order.
pub(crate) fn llm_error(
    message: &str,
    code: &str,
    status: Option<u16>,
    retry_after_ms: Option<f64>,
    request_id: Option<&str>,
) -> JsError {
    let mut failure = failure_object(message, code);
    let map = failure.as_object_mut().expect("failure() builds an object");
    if let Some(status) = status {
        map.insert("status".into(), json!(status));
    }
    if let Some(delay) = retry_after_ms {
        map.insert("providerRetryAfterMs".into(), number_json(delay));
    }
    if let Some(id) = request_id {
        map.insert("requestId".into(), json!(id));
    }
    JsError::llm(failure)
}
