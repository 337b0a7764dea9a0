//! An HTTP error entry (`rate_limit`, `server_error`, `context_overflow`,
//! `http_error`) as the OpenAI-shaped JSON error body DeepSeek sends (or the
//! scripted `error_body`), with its status and headers; and `no_content`'s
//! bodiless 204.

use bytes::Bytes;

use super::{BodyAction, RenderContext, ResponsePlan, push_request_id};
use crate::request_rules::context_length_message;
use crate::script::{FaultKind, ScriptEntry};
use crate::wire::ErrorBody;

/// The HTTP error answer of `entry`: status, `Retry-After`, the JSON error body.
pub(super) fn render_http_error(entry: &ScriptEntry, context: &RenderContext) -> ResponsePlan {
    let kind = entry.fault.unwrap_or(FaultKind::ServerError);
    let (status, default_message, default_type, code) = match kind {
        FaultKind::RateLimit => (
            429,
            "Rate limit reached for requests. Please slow down and retry later.".to_owned(),
            "rate_limit_error",
            Some("rate_limit_exceeded"),
        ),
        FaultKind::ContextOverflow => {
            let completion = context.max_tokens.unwrap_or(0);
            (
                400,
                context_length_message(
                    context.context_window,
                    context.usage.prompt_tokens,
                    completion,
                ),
                "invalid_request_error",
                // DeepSeek repeats the type as the code.
                Some("invalid_request_error"),
            )
        }
        FaultKind::HttpError => {
            let status = entry.status.unwrap_or(500);
            (
                status,
                format!("HTTP error {status} (scripted)"),
                error_type_for_status(status),
                None,
            )
        }
        _ => (
            500,
            "The server had an error while processing your request. Sorry about that!".to_owned(),
            "server_error",
            Some("internal_server_error"),
        ),
    };
    let body = ErrorBody::new(
        entry.message.clone().unwrap_or(default_message),
        entry.error_type.as_deref().unwrap_or(default_type),
        code,
    );
    let mut plan = ResponsePlan::error(status, &body);
    if let Some(verbatim) = &entry.error_body {
        plan.body = vec![BodyAction::Send(Bytes::from(verbatim.clone()))];
    }
    plan.head_delay_ms = entry.delay_ms;
    let retry_after = entry
        .retry_after_s
        .map(|seconds| seconds.to_string())
        .or_else(|| entry.retry_after.clone());
    if let Some(value) = retry_after {
        plan.headers.push(("retry-after".to_owned(), value));
    }
    push_request_id(entry, &mut plan.headers);
    plan
}

/// `no_content`: `204 No Content`, with no body and no content type, after
/// the entry's `delay_ms`.
pub(super) fn render_no_content(entry: &ScriptEntry) -> ResponsePlan {
    let mut headers = Vec::new();
    push_request_id(entry, &mut headers);
    ResponsePlan {
        head_delay_ms: entry.delay_ms,
        status: 204,
        headers,
        body: Vec::new(),
        closes_before_head: false,
    }
}

/// `close_before_head`: nothing but the close, after `delay_ms`.
pub(super) fn render_close_before_head(entry: &ScriptEntry) -> ResponsePlan {
    ResponsePlan {
        head_delay_ms: entry.delay_ms,
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        closes_before_head: true,
    }
}

/// The `error.type` used for a status when the script does not set one.
pub fn error_type_for_status(status: u16) -> &'static str {
    match status {
        401 | 403 => "authentication_error",
        402 => "insufficient_quota",
        404 => "not_found_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::render::render_response;
    use crate::render::test_support::context;
    use crate::script::{FaultKind, ScriptEntry};

    #[test]
    fn a_scripted_error_body_is_sent_verbatim_and_no_content_has_no_body() {
        let verbatim = ScriptEntry {
            status: Some(503),
            error_body: Some("upstream connect error".into()),
            request_id: Some(String::new()),
            ..ScriptEntry::fault(FaultKind::HttpError)
        };
        let plan = render_response(&verbatim, &context());
        assert_eq!(plan.status, 503);
        assert_eq!(&plan.body_bytes()[..], b"upstream connect error");
        assert_eq!(plan.header("x-request-id"), Some(""));

        let no_content = ScriptEntry {
            delay_ms: 7,
            ..ScriptEntry::fault(FaultKind::NoContent)
        };
        let plan = render_response(&no_content, &context());
        assert_eq!(plan.status, 204);
        assert_eq!(plan.head_delay_ms, 7);
        assert!(plan.body.is_empty());
        assert_eq!(plan.header("content-type"), None);

        let closed = ScriptEntry {
            delay_ms: 3,
            ..ScriptEntry::fault(FaultKind::CloseBeforeHead)
        };
        let plan = render_response(&closed, &context());
        assert!(plan.closes_before_head);
        assert_eq!(plan.head_delay_ms, 3);
        assert!(plan.headers.is_empty() && plan.body.is_empty());
        assert!(!render_response(&no_content, &context()).closes_before_head);
    }

    #[test]
    fn http_errors_have_openai_shaped_bodies() {
        let rate_limited = ScriptEntry {
            retry_after_s: Some(2),
            request_id: Some("req-9".into()),
            ..ScriptEntry::fault(FaultKind::RateLimit)
        };
        let plan = render_response(&rate_limited, &context());
        assert_eq!(plan.status, 429);
        assert_eq!(plan.header("retry-after"), Some("2"));
        assert_eq!(plan.header("x-request-id"), Some("req-9"));
        assert_eq!(plan.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(body["error"]["type"], "rate_limit_error");
        assert!(body["error"]["param"].is_null());

        let plan = render_response(&ScriptEntry::fault(FaultKind::ServerError), &context());
        assert_eq!(plan.status, 500);
        assert_eq!(plan.header("retry-after"), None);

        let dated = ScriptEntry {
            retry_after: Some("Thu, 01 Jan 2026 00:00:02 GMT".into()),
            ..ScriptEntry::fault(FaultKind::ServerError)
        };
        let plan = render_response(&dated, &context());
        assert_eq!(
            plan.header("retry-after"),
            Some("Thu, 01 Jan 2026 00:00:02 GMT")
        );

        let plan = render_response(&ScriptEntry::fault(FaultKind::ContextOverflow), &context());
        assert_eq!(plan.status, 400);
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("maximum context length is 131072 tokens"),
            "{message}"
        );
        assert_eq!(body["error"]["code"], "invalid_request_error");
        assert!(message.contains(
            "you requested 256100 tokens (100 in the messages, 256000 in the completion)"
        ));
        assert_eq!(body["error"]["type"], "invalid_request_error");

        let custom = ScriptEntry {
            status: Some(402),
            message: Some("Insufficient Balance".into()),
            delay_ms: 30,
            ..ScriptEntry::fault(FaultKind::HttpError)
        };
        let plan = render_response(&custom, &context());
        assert_eq!((plan.status, plan.head_delay_ms), (402, 30));
        let body: Value = serde_json::from_slice(&plan.body_bytes()).unwrap();
        assert_eq!(
            body,
            json!({"error": {"message": "Insufficient Balance", "type": "insufficient_quota",
                             "param": null, "code": null}})
        );
    }
}
