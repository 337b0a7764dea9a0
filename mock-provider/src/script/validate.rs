//! The checks a script passes before it is served: each entry's fields must fit
//! together (a stream field on an HTTP error, a fault missing its parameter, …), and
//! the balance and models must be well formed. Each error names the fields at fault.

use super::balance::parse_cents;
use super::{FaultKind, Script, ScriptEntry};

/// A script that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// An entry combines fields that do not fit together.
    #[error("script entry {index}: {message}")]
    InvalidEntry {
        /// 0-based position in `responses`.
        index: usize,
        /// What is wrong, naming the fields.
        message: String,
    },
    /// A script-level field is wrong.
    #[error("script: {0}")]
    Invalid(String),
}

impl Script {
    /// Check every entry (see [`ScriptEntry::validate`]), the balance and the models.
    pub fn validate(&self) -> Result<(), ScriptError> {
        for (index, entry) in self.responses.iter().enumerate() {
            entry
                .validate()
                .map_err(|message| ScriptError::InvalidEntry { index, message })?;
        }
        if let Some(balance) = &self.balance {
            for (field, value) in [
                ("granted_balance", &balance.granted_balance),
                ("topped_up_balance", &balance.topped_up_balance),
            ] {
                if parse_cents(value).is_none() {
                    return Err(ScriptError::Invalid(format!(
                        "balance.{field} {value:?} is not a decimal amount like \"10.00\""
                    )));
                }
            }
        }
        for model in &self.models {
            if model.id.is_empty() || model.context_window == 0 {
                return Err(ScriptError::Invalid(format!(
                    "models: {:?} needs a non-empty id and a context_window above 0",
                    model.id
                )));
            }
        }
        Ok(())
    }
}

impl ScriptEntry {
    /// Check that the fields fit together; the error names the offending fields.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let fault_name = self.fault.map_or("none", FaultKind::name);
        if self.is_streamless() {
            self.check_no_stream_fields(fault_name)?;
        }
        if !self.is_http_error() {
            self.check_no_http_error_fields()?;
        }
        if self.error_body.is_some() && (self.message.is_some() || self.error_type.is_some()) {
            return Err(
                "`error_body` is the whole body, so `message` and `error_type` cannot shape it"
                    .into(),
            );
        }
        self.check_status(fault_name)?;
        self.check_fault_parameters(fault_name)?;
        self.check_tool_calls()?;
        self.check_request_id()
    }

    /// An HTTP error entry sets none of the fields that describe a stream.
    fn check_no_stream_fields(&self, fault_name: &str) -> Result<(), String> {
        let stream_only = [
            ("reasoning", !self.reasoning.is_empty()),
            ("content", !self.content.is_empty()),
            ("tool_calls", !self.tool_calls.is_empty()),
            ("finish_reason", self.finish_reason.is_some()),
            ("completion_tokens", self.completion_tokens.is_some()),
            ("reasoning_tokens", self.reasoning_tokens.is_some()),
            ("usage", self.usage.is_some()),
            ("prompt_tokens_details", !self.prompt_tokens_details),
            ("role_chunk", !self.role_chunk),
            ("keep_alive_before", !self.keep_alive_before.is_empty()),
            ("created_s", self.created_s.is_some()),
            ("after_events", self.after_events.is_some()),
            ("stall_ms", self.stall_ms.is_some()),
            ("malformed_payload", self.malformed_payload.is_some()),
        ];
        if let Some((field, _)) = stream_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "`{field}` describes a stream, but fault `{fault_name}` answers without one"
            ));
        }
        Ok(())
    }

    /// A stream entry sets none of the fields of an HTTP error.
    fn check_no_http_error_fields(&self) -> Result<(), String> {
        for (field, set) in [
            ("retry_after_s", self.retry_after_s.is_some()),
            ("retry_after", self.retry_after.is_some()),
            ("message", self.message.is_some()),
            ("error_type", self.error_type.is_some()),
            ("error_body", self.error_body.is_some()),
        ] {
            if set {
                return Err(format!(
                    "`{field}` only applies to HTTP error faults (rate_limit, server_error, context_overflow, http_error)"
                ));
            }
        }
        Ok(())
    }

    /// `status` is set exactly for `http_error`, and is an error status.
    fn check_status(&self, fault_name: &str) -> Result<(), String> {
        match (self.fault, self.status) {
            (Some(FaultKind::HttpError), None) => {
                return Err("fault `http_error` needs `status` (400-599)".into());
            }
            (Some(FaultKind::HttpError), Some(status)) if !(400..=599).contains(&status) => {
                return Err(format!(
                    "`status` {status} is not an error status (400-599)"
                ));
            }
            (Some(FaultKind::HttpError), Some(_)) => {}
            (_, Some(_)) => {
                return Err(format!(
                    "`status` only applies to fault `http_error` (fault is `{fault_name}`)"
                ));
            }
            (_, None) => {}
        }
        Ok(())
    }

    /// A stream fault has the parameters it needs (`after_events`, `stall_ms`) and
    /// none that belong to another fault.
    fn check_fault_parameters(&self, fault_name: &str) -> Result<(), String> {
        let fault = self.fault;
        let needs_after_events = matches!(
            fault,
            Some(FaultKind::DropConnection | FaultKind::Stall | FaultKind::MalformedJson)
        );
        if needs_after_events && self.after_events.is_none() {
            return Err(format!("fault `{fault_name}` needs `after_events`"));
        }
        if self.after_events.is_some()
            && !needs_after_events
            && fault != Some(FaultKind::MissingDone)
        {
            return Err(format!(
                "`after_events` only applies to stream faults (fault is `{fault_name}`)"
            ));
        }
        match (fault == Some(FaultKind::Stall), self.stall_ms.is_some()) {
            (true, false) => return Err("fault `stall` needs `stall_ms`".into()),
            (false, true) => {
                return Err(format!(
                    "`stall_ms` only applies to fault `stall` (fault is `{fault_name}`)"
                ));
            }
            _ => {}
        }
        if self.malformed_payload.is_some() && fault != Some(FaultKind::MalformedJson) {
            return Err(format!(
                "`malformed_payload` only applies to fault `malformed_json` (fault is `{fault_name}`)"
            ));
        }
        Ok(())
    }

    /// Every scripted tool call has a name, and an id if it sets one.
    fn check_tool_calls(&self) -> Result<(), String> {
        for (position, call) in self.tool_calls.iter().enumerate() {
            if call.name.is_empty() {
                return Err(format!("tool_calls[{position}].name is empty"));
            }
            if call.id.as_deref() == Some("") {
                return Err(format!("tool_calls[{position}].id is empty"));
            }
        }
        Ok(())
    }

    /// A scripted request id can be sent as a header (an empty value too).
    fn check_request_id(&self) -> Result<(), String> {
        if let Some(request_id) = &self.request_id
            && !request_id.bytes().all(|byte| byte.is_ascii_graphic())
        {
            return Err(format!(
                "`request_id` {request_id:?} must be visible ASCII (it is sent as a header)"
            ));
        }
        if let Some(value) = &self.retry_after {
            if self.retry_after_s.is_some() {
                return Err(
                    "`retry_after` is the header as written, `retry_after_s` a number of \
                            seconds: give one"
                        .into(),
                );
            }
            if !value
                .bytes()
                .all(|byte| byte.is_ascii_graphic() || byte == b' ')
            {
                return Err(format!(
                    "`retry_after` {value:?} must be visible ASCII and spaces (it is sent as a header)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::script::{Script, ScriptEntry};

    fn parse(json: &str) -> ScriptEntry {
        serde_json::from_str(json).expect("entry parses")
    }

    #[test]
    fn validation_rejects_nonsense_combinations() {
        let cases = [
            (r#"{"fault": "rate_limit", "content": "x"}"#, "`content`"),
            (r#"{"content": "x", "retry_after_s": 1}"#, "`retry_after_s`"),
            (r#"{"fault": "http_error"}"#, "needs `status`"),
            (
                r#"{"fault": "http_error", "status": 200}"#,
                "not an error status",
            ),
            (
                r#"{"fault": "rate_limit", "status": 429}"#,
                "`status` only applies",
            ),
            (r#"{"fault": "drop_connection"}"#, "needs `after_events`"),
            (r#"{"after_events": 2}"#, "`after_events` only applies"),
            (
                r#"{"fault": "stall", "after_events": 1}"#,
                "needs `stall_ms`",
            ),
            (r#"{"stall_ms": 5}"#, "`stall_ms` only applies"),
            (
                r#"{"malformed_payload": "x"}"#,
                "`malformed_payload` only applies",
            ),
            (r#"{"tool_calls": [{"name": ""}]}"#, "name is empty"),
            (r#"{"request_id": "a b"}"#, "visible ASCII"),
            (
                r#"{"content": "x", "retry_after": "soon"}"#,
                "`retry_after` only applies",
            ),
            (
                r#"{"fault": "rate_limit", "retry_after": "1", "retry_after_s": 1}"#,
                "give one",
            ),
            (
                r#"{"fault": "rate_limit", "retry_after": "a\nb"}"#,
                "visible ASCII and spaces",
            ),
            (r#"{"error_body": "{}"}"#, "`error_body` only applies"),
            (
                r#"{"fault": "http_error", "status": 500, "error_body": "{}", "message": "m"}"#,
                "`error_body` is the whole body",
            ),
            (
                r#"{"fault": "no_content", "content": "x"}"#,
                "`content` describes a stream, but fault `no_content` answers without one",
            ),
            (
                r#"{"fault": "no_content", "retry_after_s": 1}"#,
                "`retry_after_s` only applies",
            ),
        ];
        for (json, expected) in cases {
            let error = parse(json).validate().unwrap_err();
            assert!(error.contains(expected), "{json}: {error}");
        }
        let script = Script::new(vec![ScriptEntry::stream(), parse(r#"{"stall_ms": 5}"#)]);
        let error = script.validate().unwrap_err();
        assert!(error.to_string().starts_with("script entry 1: "), "{error}");
    }

    #[test]
    fn validation_accepts_each_fault_kind() {
        for json in [
            r#"{"fault": "rate_limit", "retry_after_s": 2}"#,
            r#"{"fault": "server_error", "message": "boom", "delay_ms": 5}"#,
            r#"{"fault": "context_overflow"}"#,
            r#"{"fault": "http_error", "status": 402, "message": "Insufficient Balance"}"#,
            r#"{"content": ["a"], "fault": "drop_connection", "after_events": 1}"#,
            r#"{"content": ["a"], "fault": "stall", "after_events": 1, "stall_ms": 60000}"#,
            r#"{"content": ["a"], "fault": "malformed_json", "after_events": 0}"#,
            r#"{"content": ["a"], "fault": "missing_done"}"#,
            r#"{"fault": "no_content", "delay_ms": 5, "request_id": ""}"#,
            r#"{"fault": "http_error", "status": 503, "error_body": "not json"}"#,
            r#"{"content": ["a"], "fault": "missing_done", "after_events": 2}"#,
        ] {
            assert_eq!(parse(json).validate(), Ok(()), "{json}");
        }
    }
}
