//! Failures (09 W10): the `LlmError`s the adapter throws for HTTP
//! errors, broken streams, aborts and idle timeouts, and their logged form.

use dshc_model::js::{JsError, json_round_trip, object, to_js_string, truthy};
use dshc_model::llm::failure;
use serde_json::{Value, json};

use crate::*;

/// `STREAM_CLOSED`: the body ended without `[DONE]` (`parseSse`).
pub fn end_of_stream_error() -> JsError {
    llm_error(
        "SSE stream ended without [DONE]",
        "STREAM_CLOSED",
        None,
        None,
        None,
    )
}

/// `TRANSPORT` for a failure after the response started (the catch-all in
/// the adapter's `stream()`): `DeepSeek API stream from <baseURL> failed`.
pub fn transport_error(base_url: &str) -> JsError {
    llm_error(
        &format!("DeepSeek API stream from {base_url} failed"),
        "TRANSPORT",
        None,
        None,
        None,
    )
}

/// `TRANSPORT` for a rejected `fetch` (no response at all) while the signal
/// is not aborted: `DeepSeek API request to <baseURL> failed`.
pub fn request_transport_error(base_url: &str) -> JsError {
    llm_error(
        &format!("DeepSeek API request to {base_url} failed"),
        "TRANSPORT",
        None,
        None,
        None,
    )
}

/// `ABORTED`: the caller's signal fired.
pub fn aborted_error() -> JsError {
    llm_error(
        "DeepSeek request aborted by caller",
        "ABORTED",
        None,
        None,
        None,
    )
}

/// `TIMEOUT`: the per-read idle watchdog fired.
pub fn idle_timeout_error(timeout_ms: u64) -> JsError {
    llm_error(
        &format!("DeepSeek stream idle timeout after {timeout_ms}ms"),
        "TIMEOUT",
        None,
        None,
        None,
    )
}

/// Whether fetch gives a response of this status no body at all
/// (`response.body === null`): the Fetch standard's null body statuses, of
/// which 204 and 205 are successes.
pub fn is_null_body_status(status: u16) -> bool {
    matches!(status, 101 | 103 | 204 | 205 | 304)
}

/// `EMPTY_RESPONSE`: a 2xx response without a body.
pub fn no_body_error() -> JsError {
    llm_error(
        "DeepSeek API returned no response body",
        "EMPTY_RESPONSE",
        None,
        None,
        None,
    )
}

/// The adapter `stream()`'s catch: an idle timeout wins, then a caller
/// abort, then an `LlmError` passes through, and anything else (e.g. a
/// `TypeError` from odd wire JSON, or the plain `Error` [`http_error`]
/// returns for a non-string provider message) becomes `TRANSPORT`. The
/// original error is kept as the cause.
pub fn stream_error(
    error: JsError,
    base_url: &str,
    caller_aborted: bool,
    idle_timeout_ms: Option<u64>,
) -> JsError {
    if let Some(timeout_ms) = idle_timeout_ms {
        return idle_timeout_error(timeout_ms).with_cause(error);
    }
    if caller_aborted {
        return aborted_error().with_cause(error);
    }
    if error.name == "LlmError" {
        return error;
    }
    transport_error(base_url).with_cause(error)
}

/// `normalizeLlmFailure`: the failure an error carries (re-validated and
/// rebuilt in canonical key order), or `{message, code}` from the error
/// itself (`UNKNOWN` for errors without a code).
pub fn normalize_failure(error: &JsError) -> Value {
    if let (Some(carried), Some(code)) = (&error.failure, &error.code)
        && let Some(snapshot) = failure_snapshot(carried)
        && snapshot["code"] == code.as_str()
    {
        return snapshot;
    }
    let message = if error.message.is_empty() {
        "LLM adapter failed"
    } else {
        &error.message
    };
    failure(message, error.code.as_deref().unwrap_or("UNKNOWN"))
}

fn failure_snapshot(value: &Value) -> Option<Value> {
    let message = prop(value, "message")?.as_str().filter(|m| !m.is_empty())?;
    let code = prop(value, "code")?.as_str().filter(|c| !c.is_empty())?;
    let mut snapshot = failure(message, code);
    let map = snapshot.as_object_mut()?;
    if let Some(status) = prop(value, "status") {
        let valid = status
            .as_f64()
            .is_some_and(|s| s.fract() == 0.0 && (100.0..=599.0).contains(&s));
        if !valid {
            return None;
        }
        map.insert("status".into(), json_round_trip(status));
    }
    if let Some(delay) = prop(value, "providerRetryAfterMs") {
        if !delay.as_f64().is_some_and(|d| d.is_finite() && d > 0.0) {
            return None;
        }
        map.insert("providerRetryAfterMs".into(), json_round_trip(delay));
    }
    if let Some(id) = prop(value, "requestId") {
        id.as_str().filter(|id| !id.is_empty())?;
        map.insert("requestId".into(), id.clone());
    }
    Some(snapshot)
}

/// `adapterFailureChunk`: the terminal chunk the LLM runtime substitutes for
/// an adapter throw, `{type:'finish', reason:{kind:'aborted'|'error',
/// failure}}`; aborted iff the request signal is aborted or the code is
/// `ABORTED`.
pub fn failure_chunk(error: &JsError, aborted: bool) -> Value {
    let failure = normalize_failure(error);
    let kind = if aborted || failure["code"] == "ABORTED" {
        "aborted"
    } else {
        "error"
    };
    object([
        ("type", json!("finish")),
        (
            "reason",
            object([("kind", json!(kind)), ("failure", failure)]),
        ),
    ])
}

/// `Headers.get`: case-insensitive, repeated fields joined with `", "`.
fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim_matches([' ', '\t', '\r', '\n']))
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// `providerRetryAfterMs` for a `Retry-After` value: delta-seconds × 1000
/// for all digits, else the time from `now_ms` (`Date.now()`) to the date
/// it is (`Date.parse`); kept when finite and positive.
pub fn provider_retry_after_ms(value: Option<&str>, now_ms: f64) -> Option<f64> {
    let value = value?;
    let delay = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse::<f64>().ok()? * 1000.0
    } else {
        dshc_model::js::date_parse(value) - now_ms
    };
    (delay.is_finite() && delay > 0.0).then_some(delay)
}

/// `httpErrorCode`: `AUTH` (401/403), `INVALID_REQUEST` (413), `QUOTA` when
/// the provider's code/type/message reads as an exhausted quota, `RATE_LIMIT`
/// (429), `CONTEXT_WINDOW_EXCEEDED` or `INVALID_REQUEST` (400), `SERVER`
/// (5xx), else `HTTP_<status>`. `provider_error` is the body's `error` field.
pub fn http_error_code(status: u16, provider_error: Option<&Value>) -> String {
    if status == 401 || status == 403 {
        return "AUTH".into();
    }
    if status == 413 {
        return "INVALID_REQUEST".into();
    }
    let detail = ["code", "type", "message"]
        .iter()
        .filter_map(|key| prop_of(provider_error, key))
        .filter(|value| truthy(value))
        .map(to_js_string)
        .collect::<Vec<_>>()
        .join(" ");
    if is_quota_exceeded_error(&detail) {
        return "QUOTA".into();
    }
    if status == 429 {
        return "RATE_LIMIT".into();
    }
    if status == 400 {
        return if is_context_window_exceeded_error(&detail) {
            "CONTEXT_WINDOW_EXCEEDED".into()
        } else {
            "INVALID_REQUEST".into()
        };
    }
    if status >= 500 {
        return "SERVER".into();
    }
    format!("HTTP_{status}")
}

/// The error a non-2xx response throws. The message is the body's
/// `error.message` when it is a non-empty string, else `DeepSeek API error
/// (HTTP <status>)`; the failure carries `status`, `providerRetryAfterMs`
/// (a `Retry-After` in seconds, or a date after `now_ms`) and `requestId` (`x-request-id`, else
/// `x-deepseek-request-id`; an empty `x-request-id` does not fall back).
///
/// A truthy non-string `error.message` makes upstream's `LlmError`
/// constructor throw a plain `Error`, returned here as such; the adapter
/// then reports it as `TRANSPORT` (see [`stream_error`]). Likewise a status
/// outside 100–599.
pub fn http_error(status: u16, headers: &[(String, String)], body: &[u8], now_ms: f64) -> JsError {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let provider_error: Option<Value> = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|json| prop(&json, "error").cloned());
    let mut message = format!("DeepSeek API error (HTTP {status})");
    let mut constructible = true;
    if let Some(provided) = prop_of(provider_error.as_ref(), "message")
        && truthy(provided)
    {
        match provided.as_str() {
            Some(text) => message = text.to_string(),
            None => constructible = false,
        }
    }
    let delay = provider_retry_after_ms(header(headers, "retry-after").as_deref(), now_ms);
    let id = header(headers, "x-request-id")
        .or_else(|| header(headers, "x-deepseek-request-id"))
        .filter(|id| !id.is_empty());
    let code = http_error_code(status, provider_error.as_ref());
    if !constructible {
        return JsError::error("LlmError message must be a non-empty string");
    }
    if !(100..=599).contains(&status) {
        return JsError::error("LlmError status must be an integer from 100 through 599");
    }
    llm_error(&message, &code, Some(status), delay, id.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock the tests read: 2026-01-01T00:00:00Z.
    const NOW_MS: f64 = 1_767_225_600_000.0;

    fn http_error(status: u16, headers: &[(String, String)], body: &[u8]) -> JsError {
        super::http_error(status, headers, body, NOW_MS)
    }
    use crate::fixtures::*;

    fn error_body(message: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_request_error"}}))
            .unwrap()
    }

    #[test]
    fn http_401_and_403_are_auth() {
        for status in [401, 403] {
            let error = http_error(
                status,
                &[],
                &error_body("Authentication Fails, Your api key is invalid"),
            );
            assert_eq!(error.name, "LlmError");
            assert_eq!(
                error.failure.as_deref().cloned(),
                Some(
                    json!({"message": "Authentication Fails, Your api key is invalid", "code": "AUTH", "status": status})
                )
            );
        }
        // Even quota wording does not override AUTH.
        assert_eq!(
            http_error(401, &[], &error_body("insufficient quota"))
                .code
                .as_deref(),
            Some("AUTH")
        );
    }

    #[test]
    fn http_413_is_invalid_request() {
        let error = http_error(413, &[], b"");
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 413)", "code": "INVALID_REQUEST", "status": 413})
            )
        );
        assert_eq!(
            http_error(413, &[], &error_body("context length exceeded"))
                .code
                .as_deref(),
            Some("INVALID_REQUEST")
        );
    }

    #[test]
    fn http_429_with_retry_after_and_request_id() {
        let error = http_error(
            429,
            &headers(&[
                ("Retry-After", "7"),
                ("X-Request-Id", "req-1"),
                ("x-deepseek-request-id", "ds-1"),
            ]),
            &error_body("Rate limit reached for requests"),
        );
        assert_eq!(
            serde_json::to_string(error.failure.as_ref().unwrap()).unwrap(),
            r#"{"message":"Rate limit reached for requests","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":7000,"requestId":"req-1"}"#
        );
        let fallback = http_error(429, &headers(&[("x-deepseek-request-id", "ds-1")]), b"{}");
        assert_eq!(
            fallback.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 429)", "code": "RATE_LIMIT", "status": 429, "requestId": "ds-1"})
            )
        );
        // An empty x-request-id is not null, so there is no fallback.
        let empty = http_error(
            429,
            &headers(&[("x-request-id", ""), ("x-deepseek-request-id", "ds-1")]),
            b"",
        );
        assert!(empty.failure.unwrap().get("requestId").is_none());
        // Zero, non-integer, negative, past and unreadable values give no delay.
        for value in [
            "0",
            "1.5",
            " ",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "-3",
            "soon",
        ] {
            let error = http_error(429, &headers(&[("retry-after", value)]), b"");
            assert!(
                error.failure.unwrap().get("providerRetryAfterMs").is_none(),
                "{value}"
            );
        }
        assert_eq!(
            provider_retry_after_ms(Some("120"), NOW_MS),
            Some(120_000.0)
        );
        assert_eq!(provider_retry_after_ms(None, NOW_MS), None);
        // A date is the time from now until it.
        let date = "Thu, 01 Jan 2026 00:00:02 GMT";
        assert_eq!(provider_retry_after_ms(Some(date), NOW_MS), Some(2000.0));
        assert_eq!(provider_retry_after_ms(Some(date), NOW_MS + 2000.0), None);
    }

    #[test]
    fn http_quota_wording_wins_over_status() {
        let error = http_error(402, &[], &error_body("Insufficient Balance"));
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(json!({"message": "Insufficient Balance", "code": "QUOTA", "status": 402}))
        );
        assert_eq!(
            http_error(
                429,
                &[],
                &error_body("You exceeded your current quota, please check your plan")
            )
            .code
            .as_deref(),
            Some("QUOTA")
        );
        // The provider code alone can carry the wording.
        let by_code = serde_json::to_vec(
            &json!({"error": {"code": "insufficient_quota", "message": "nope"}}),
        )
        .unwrap();
        assert_eq!(
            http_error(429, &[], &by_code).code.as_deref(),
            Some("QUOTA")
        );
        assert_eq!(http_error(402, &[], b"").code.as_deref(), Some("HTTP_402"));
    }

    #[test]
    fn http_400_context_window_or_invalid_request() {
        let context = http_error(
            400,
            &[],
            &error_body(
                "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            ),
        );
        assert_eq!(context.code.as_deref(), Some("CONTEXT_WINDOW_EXCEEDED"));
        assert_eq!(context.failure.as_ref().unwrap()["status"], json!(400));
        let plain = http_error(
            400,
            &[],
            &error_body("Invalid request: messages[1].role is invalid"),
        );
        assert_eq!(
            plain.failure.as_deref().cloned(),
            Some(
                json!({"message": "Invalid request: messages[1].role is invalid", "code": "INVALID_REQUEST", "status": 400})
            )
        );
    }

    #[test]
    fn http_500_and_other_statuses() {
        for status in [500, 502, 503, 599] {
            assert_eq!(http_error(status, &[], b"").code.as_deref(), Some("SERVER"));
        }
        let teapot = http_error(418, &[], b"<html>");
        assert_eq!(
            teapot.failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API error (HTTP 418)", "code": "HTTP_418", "status": 418})
            )
        );
        // Body shapes without a usable message keep the default.
        for body in [
            &b"null"[..],
            b"[]",
            b"{\"error\":\"bad\"}",
            b"{\"error\":{\"message\":\"\"}}",
            b"not json",
        ] {
            assert_eq!(
                http_error(404, &[], body).message,
                "DeepSeek API error (HTTP 404)"
            );
        }
        // A truthy non-string message breaks the LlmError constructor.
        let broken = http_error(400, &[], b"{\"error\":{\"message\":42}}");
        assert_eq!(broken.name, "Error");
        assert_eq!(
            broken.message,
            "LlmError message must be a non-empty string"
        );
        assert_eq!(
            stream_error(broken, "http://p", false, None)
                .code
                .as_deref(),
            Some("TRANSPORT")
        );
    }

    #[test]
    fn failure_helpers_and_chunks() {
        assert_eq!(
            transport_error("http://h:1").failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API stream from http://h:1 failed", "code": "TRANSPORT"})
            )
        );
        assert_eq!(
            request_transport_error("http://h:1").message,
            "DeepSeek API request to http://h:1 failed"
        );
        assert_eq!(
            aborted_error().failure.as_deref().cloned(),
            Some(json!({"message": "DeepSeek request aborted by caller", "code": "ABORTED"}))
        );
        assert_eq!(
            idle_timeout_error(300_000).failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek stream idle timeout after 300000ms", "code": "TIMEOUT"})
            )
        );
        assert_eq!(
            no_body_error().failure.as_deref().cloned(),
            Some(
                json!({"message": "DeepSeek API returned no response body", "code": "EMPTY_RESPONSE"})
            )
        );
        // aborted iff the signal fired or the code is ABORTED.
        assert_eq!(
            failure_chunk(&aborted_error(), false),
            json!({"type": "finish", "reason": {"kind": "aborted", "failure": {"message": "DeepSeek request aborted by caller", "code": "ABORTED"}}})
        );
        assert_eq!(
            failure_chunk(&transport_error("u"), true)["reason"]["kind"],
            json!("aborted")
        );
        assert_eq!(
            failure_chunk(&transport_error("u"), false)["reason"]["kind"],
            json!("error")
        );
        let http = http_error(429, &headers(&[("retry-after", "2")]), b"");
        assert_eq!(
            serde_json::to_string(&failure_chunk(&http, false)).unwrap(),
            r#"{"type":"finish","reason":{"kind":"error","failure":{"message":"DeepSeek API error (HTTP 429)","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":2000}}}"#
        );
        // Errors without a carried failure normalize to UNKNOWN.
        assert_eq!(
            failure_chunk(&JsError::type_error("boom"), false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "boom", "code": "UNKNOWN"}}})
        );
        assert_eq!(
            normalize_failure(&JsError::error("")),
            json!({"message": "LLM adapter failed", "code": "UNKNOWN"})
        );
    }

    #[test]
    fn stream_error_precedence() {
        let malformed = Translator::new().push_payload("x").unwrap_err();
        let timed_out = stream_error(malformed.clone(), "u", true, Some(5));
        assert_eq!(timed_out.message, "DeepSeek stream idle timeout after 5ms");
        assert_eq!(timed_out.cause.as_deref(), Some(&malformed));
        let aborted = stream_error(malformed.clone(), "u", true, None);
        assert_eq!(aborted.code.as_deref(), Some("ABORTED"));
        assert_eq!(stream_error(malformed.clone(), "u", false, None), malformed);
    }
}
