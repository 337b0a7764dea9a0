//! A request as it arrives, and the fields of a chat or FIM body the mock acts on,
//! with the 400 messages a body of the wrong shape gets.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::script::Endpoint;

/// A request as the provider sees it, transport-independent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// URI path without the query, e.g. `/chat/completions`.
    pub path: String,
    /// Headers in arrival order as (lowercase name, value) pairs; values that are not
    /// UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Bytes,
}

impl IncomingRequest {
    /// A `POST` of `body` as JSON to `path`, with a JSON content type (for in-process use).
    pub fn post_json(path: &str, body: &Value) -> Self {
        Self {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(body.to_string()),
        }
    }
}

/// The fields of a chat or FIM body the mock acts on.
pub(super) struct ParsedRequest {
    pub(super) model: String,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
    /// `max_tokens`, else `max_completion_tokens`.
    pub(super) max_tokens: Option<u64>,
    /// FIM's prompt as one message of role `prompt`; `None` for chat, whose
    /// messages are read from the body where they lie ([`Self::messages`]).
    fim_prompt: Option<[Value; 1]>,
}

impl ParsedRequest {
    /// The fields of `body`, or the message of the 400 a body of the wrong shape gets.
    pub(super) fn from_body(body: &Value, endpoint: Endpoint) -> Result<Self, String> {
        let Some(object) = body.as_object() else {
            return Err("The request body must be a JSON object".into());
        };
        let missing = |field: &str| {
            format!(
                "Failed to deserialize the JSON body into the target type: missing field `{field}`"
            )
        };
        let model = match object.get("model") {
            None => return Err(missing("model")),
            Some(Value::String(model)) => model.clone(),
            Some(_) => return Err("`model` must be a string".into()),
        };
        let fim_prompt = match endpoint {
            Endpoint::Chat => match object.get("messages") {
                None => return Err(missing("messages")),
                Some(Value::Array(_)) => None,
                Some(_) => return Err("`messages` must be an array".into()),
            },
            Endpoint::Fim => {
                let prompt = match object.get("prompt") {
                    None => return Err(missing("prompt")),
                    Some(Value::String(prompt)) => prompt.clone(),
                    Some(_) => return Err("`prompt` must be a string".into()),
                };
                if !matches!(
                    object.get("suffix"),
                    None | Some(Value::Null | Value::String(_))
                ) {
                    return Err("`suffix` must be a string".into());
                }
                Some([json!({"role": "prompt", "content": prompt})])
            }
        };
        if !matches!(
            object.get("tools"),
            None | Some(Value::Null | Value::Array(_))
        ) {
            return Err("`tools` must be an array".into());
        }
        let stream = match object.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(stream)) => *stream,
            Some(_) => return Err("`stream` must be a boolean".into()),
        };
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let max_tokens = object
            .get("max_tokens")
            .or_else(|| object.get("max_completion_tokens"))
            .and_then(Value::as_u64);
        Ok(Self {
            model,
            stream,
            include_usage,
            max_tokens,
            fim_prompt,
        })
    }

    /// The messages the script's matchers see: a chat body's `messages`
    /// (`body` is the body this request was parsed from), or FIM's prompt
    /// as one message.
    pub(super) fn messages<'a>(&'a self, body: &'a Value) -> &'a [Value] {
        match (&self.fim_prompt, body.get("messages")) {
            (Some(prompt), _) => prompt,
            (None, Some(Value::Array(messages))) => messages,
            (None, _) => &[],
        }
    }
}
