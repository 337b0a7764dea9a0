//! Deployment configuration and model info (09 W4, W5): the route's
//! defaults, its model catalog and how a request's thinking mode resolves.

use dshc_model::js::{JsError, to_js_string};
use dshc_model::llm::{ModelInfo, Reasoning};
use serde_json::Value;

use crate::*;

/// Deployment-level thinking defaults (`config.thinking`,
/// `config.reasoningEffort`); both are usually unset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeepSeekDefaults {
    /// `"enabled"` or `"disabled"`.
    pub thinking: Option<String>,
    /// `"off"`, `"low"`, `"high"` or `"max"`.
    pub reasoning_effort: Option<String>,
}

impl DeepSeekDefaults {
    /// The load-time check `resolveAdapterOptions` makes: with thinking
    /// disabled only the `off` effort may be configured. A plain `Error`.
    pub fn validate(&self) -> Result<(), JsError> {
        let disabled = self.thinking.as_deref() == Some("disabled");
        match self.reasoning_effort.as_deref() {
            Some(effort) if disabled && effort != "off" => Err(JsError::error(
                "llm-deepseek: only reasoningEffort \"off\" can be configured when thinking is disabled",
            )),
            _ => Ok(()),
        }
    }
}

/// The largest delay a timer takes (2^31 - 1 ms), the bound of
/// `streamIdleTimeoutMs`.
const MAX_TIMER_DELAY_MS: u64 = 2_147_483_647;
/// `Number.MAX_SAFE_INTEGER`, the bound of `maxTokens`.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

impl DeepSeekConnection {
    /// What the DeepSeek plugin refuses when it loads, in its order: its
    /// config schema first, a `ValidationError` naming the first field that
    /// fails (fields in the schema's order, the catalog entry by entry), as
    /// the config loader words it; then `resolveAdapterOptions`' own checks
    /// (the thinking contradiction, then the catalog: an empty id, a
    /// duplicate), each a plain `Error`. Only what a world can state is
    /// judged: the numbers are integers, the other fields absent.
    pub fn validate(&self) -> Result<(), JsError> {
        self.validate_schema()?;
        self.defaults.validate()?;
        if self.max_request_image_bytes > MAX_SAFE_INTEGER {
            return Err(JsError::error(
                "llm-deepseek: maxRequestImageBytes must be a positive safe integer",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for model in &self.models {
            if model.id.is_empty() {
                return Err(JsError::error(
                    "llm-deepseek: catalog model ids must be non-empty",
                ));
            }
            if let Some(modalities) = &model.input_modalities {
                let distinct: std::collections::BTreeSet<&String> = modalities.iter().collect();
                if distinct.len() != modalities.len() {
                    return Err(JsError::error(format!(
                        "llm-deepseek: catalog model \"{}\" inputModalities must not contain duplicates",
                        model.id
                    )));
                }
            }
            if !seen.insert(model.id.as_str()) {
                return Err(JsError::error(format!(
                    "llm-deepseek: duplicate catalog model {}",
                    dshc_model::js::quote(&model.id)
                )));
            }
        }
        Ok(())
    }

    fn validate_schema(&self) -> Result<(), JsError> {
        let one_of = |path: &str, value: &Option<String>, allowed: &[&str]| match value {
            Some(value) if !allowed.contains(&value.as_str()) => Some(format!(
                "{path} expected {} but got {}",
                allowed
                    .iter()
                    .map(|a| dshc_model::js::quote(a))
                    .collect::<Vec<_>>()
                    .join(" | "),
                dshc_model::js::quote(value)
            )),
            _ => None,
        };
        let at_least_one = |path: &str, value: u64| {
            (value < 1).then(|| format!("{path} expected number >= 1 but got {value}"))
        };
        let at_most = |path: &str, value: u64, bound: u64| {
            (value > bound).then(|| format!("{path} expected number <= {bound} but got {value}"))
        };
        let models = self.models.iter().enumerate().flat_map(|(index, model)| {
            let path = |field: &str| format!("models[{index}].{field}");
            [
                model
                    .context_window
                    .and_then(|v| at_least_one(&path("contextWindow"), v)),
                model
                    .max_tokens
                    .and_then(|v| at_least_one(&path("maxTokens"), v)),
                model
                    .input_modalities
                    .as_ref()
                    .filter(|modalities| modalities.is_empty())
                    .map(|_| {
                        format!(
                            "{} expected array length >= 1 but got 0",
                            path("inputModalities")
                        )
                    }),
            ]
        });
        let stream_idle = self.stream_idle_timeout_ms;
        let first = [
            one_of(
                "thinking",
                &self.defaults.thinking,
                &["enabled", "disabled"],
            ),
            one_of(
                "reasoningEffort",
                &self.defaults.reasoning_effort,
                &["off", "low", "high", "max"],
            ),
            at_least_one("maxTokens", self.max_tokens),
            at_most("maxTokens", self.max_tokens, MAX_SAFE_INTEGER),
            at_least_one("defaultContextWindow", self.default_context_window),
        ]
        .into_iter()
        .chain(models)
        .chain([
            (stream_idle == 0)
                .then(|| "streamIdleTimeoutMs expected number >= 5e-324 but got 0".to_string()),
            at_most("streamIdleTimeoutMs", stream_idle, MAX_TIMER_DELAY_MS),
            at_least_one("maxRequestImageBytes", self.max_request_image_bytes),
        ])
        .flatten()
        .next();
        match first {
            None => Ok(()),
            Some(failure) => {
                // `$.a[0].b expected ... (at a.0.b)`.
                let (path, rest) = failure.split_once(' ').unwrap_or((&failure, ""));
                let dotted = path.replace('[', ".").replace(']', "");
                Err(JsError {
                    name: "ValidationError".into(),
                    ..JsError::error(format!(
                        "invalid config:\n  - $.{path} {rest} (at {dotted})"
                    ))
                })
            }
        }
    }
}

/// One advisory catalog entry (`models[]` in the plugin config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeepSeekModel {
    /// Wire model name.
    pub id: String,
    /// `contextWindow`, when the catalog states it.
    pub context_window: Option<u64>,
    /// `maxTokens`, when the catalog states it.
    pub max_tokens: Option<u64>,
    /// `inputModalities` (`"text"`, `"image"`), when the catalog states
    /// them; unstated means text only.
    pub input_modalities: Option<Vec<String>>,
}

/// The resolved connection facts the pure parts need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeepSeekConnection {
    /// `baseURL`, without the `/chat/completions` suffix.
    pub base_url: String,
    /// Thinking defaults.
    pub defaults: DeepSeekDefaults,
    /// Profile `maxTokens` (default 256 000).
    pub max_tokens: u64,
    /// `defaultContextWindow` (default 1 000 000).
    pub default_context_window: u64,
    /// The model catalog.
    pub models: Vec<DeepSeekModel>,
    /// `streamIdleTimeoutMs` (default 300 000).
    pub stream_idle_timeout_ms: u64,
    /// `maxRequestImageBytes` (default 20 MiB).
    pub max_request_image_bytes: u64,
}

impl Default for DeepSeekConnection {
    /// Upstream's defaults: the public endpoint and the two-model catalog.
    fn default() -> Self {
        let model = |id: &str| DeepSeekModel {
            id: id.into(),
            context_window: Some(DEFAULT_CONTEXT_WINDOW),
            max_tokens: None,
            input_modalities: None,
        };
        DeepSeekConnection {
            base_url: PUBLIC_BASE_URL.into(),
            defaults: DeepSeekDefaults::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            default_context_window: DEFAULT_CONTEXT_WINDOW,
            models: vec![model("deepseek-v4-flash"), model("deepseek-v4-pro")],
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_request_image_bytes: DEFAULT_MAX_REQUEST_IMAGE_BYTES,
        }
    }
}

/// `resolveModel` (W5): catalog facts with connection fallbacks, and the
/// effort list (`off` only when the deployment disables thinking).
pub fn resolve_model(connection: &DeepSeekConnection, model: &str) -> ModelInfo {
    let configured = connection.models.iter().find(|entry| entry.id == model);
    let context_window = configured
        .and_then(|entry| entry.context_window)
        .unwrap_or(connection.default_context_window);
    let default_max_tokens = configured
        .and_then(|entry| entry.max_tokens)
        .unwrap_or(connection.max_tokens);
    let reasoning = if connection.defaults.thinking.as_deref() == Some("disabled") {
        Reasoning {
            efforts: vec!["off".into()],
            default_effort: Some("off".into()),
        }
    } else {
        // Anything but off/low/max (including an unvalidated value) is high.
        let default = match connection.defaults.reasoning_effort.as_deref() {
            Some("off") => "off",
            Some("low") => "low",
            Some("max") => "max",
            _ => "high",
        };
        Reasoning {
            efforts: REASONING_EFFORTS.map(String::from).to_vec(),
            default_effort: Some(default.into()),
        }
    };
    ModelInfo {
        context_window: Some(context_window),
        default_max_tokens: Some(default_max_tokens),
        reasoning: Some(reasoning),
    }
}

/// The thinking fields one request resolves to (W4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thinking {
    /// `thinking.type` on the wire (`enabled` / `disabled`), if any.
    pub thinking: Option<String>,
    /// `reasoning_effort` on the wire, if any (never `off`).
    pub reasoning_effort: Option<String>,
}

/// `resolveThinking` (W4). `session-title` requests never think; an explicit
/// effort must be one of [`REASONING_EFFORTS`]; a deployment that disables
/// thinking rejects any effort but `off`.
pub fn resolve_thinking(request: &Value, defaults: &DeepSeekDefaults) -> Result<Thinking, JsError> {
    let disabled = || Thinking {
        thinking: Some("disabled".into()),
        reasoning_effort: None,
    };
    if prop(request, "purpose").and_then(Value::as_str) == Some("session-title") {
        return Ok(disabled());
    }
    let effort = match prop(request, "reasoningEffort") {
        None => defaults.reasoning_effort.clone(),
        Some(Value::String(effort)) if REASONING_EFFORTS.contains(&effort.as_str()) => {
            Some(effort.clone())
        }
        Some(other) => {
            return Err(llm_error(
                &format!(
                    "DeepSeek does not support reasoning effort \"{}\"",
                    to_js_string(other)
                ),
                "UNSUPPORTED_REASONING_EFFORT",
                None,
                None,
                None,
            ));
        }
    };
    if defaults.thinking.as_deref() == Some("disabled")
        && let Some(effort) = effort.as_deref()
        && effort != "off"
    {
        return Err(llm_error(
            &format!("DeepSeek deployment does not support reasoning effort \"{effort}\""),
            "UNSUPPORTED_REASONING_EFFORT",
            None,
            None,
            None,
        ));
    }
    Ok(match effort.as_deref() {
        Some("off") => disabled(),
        Some(effort @ ("low" | "high" | "max")) => Thinking {
            thinking: Some("enabled".into()),
            reasoning_effort: Some(effort.into()),
        },
        _ => Thinking {
            thinking: defaults.thinking.clone(),
            reasoning_effort: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    fn with(effort: Option<&str>, purpose: Option<&str>) -> Value {
        let mut req = request(vec![]);
        if let Some(effort) = effort {
            req["reasoningEffort"] = json!(effort);
        }
        if let Some(purpose) = purpose {
            req["purpose"] = json!(purpose);
        }
        req
    }

    #[test]
    fn thinking_resolution_cases() {
        let none = DeepSeekDefaults::default();
        assert_eq!(
            thinking(&with(None, None), &none).unwrap(),
            thinking_of(None, None)
        );
        assert_eq!(
            thinking(&with(Some("off"), None), &none).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        for effort in ["low", "high", "max"] {
            assert_eq!(
                thinking(&with(Some(effort), None), &none).unwrap(),
                thinking_of(Some("enabled"), Some(effort))
            );
        }
        // session-title short-circuits everything, even an invalid effort.
        assert_eq!(
            thinking(&with(Some("bogus"), Some("session-title")), &none).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(
                &with(Some("high"), Some("session-title")),
                &defaults(Some("enabled"), Some("max"))
            )
            .unwrap(),
            thinking_of(Some("disabled"), None)
        );
        // Other purposes do not.
        assert_eq!(
            thinking(&with(Some("high"), Some("compaction")), &none).unwrap(),
            thinking_of(Some("enabled"), Some("high"))
        );
        // Deployment defaults apply only without a request effort.
        assert_eq!(
            thinking(&with(None, None), &defaults(None, Some("low"))).unwrap(),
            thinking_of(Some("enabled"), Some("low"))
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("enabled"), None)).unwrap(),
            thinking_of(Some("enabled"), None)
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("disabled"), None)).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(&with(Some("off"), None), &defaults(Some("disabled"), None)).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(&with(None, None), &defaults(Some("disabled"), Some("off"))).unwrap(),
            thinking_of(Some("disabled"), None)
        );
        assert_eq!(
            thinking(
                &with(Some("max"), None),
                &defaults(Some("enabled"), Some("low"))
            )
            .unwrap(),
            thinking_of(Some("enabled"), Some("max"))
        );
        // Wire: `off` never appears as an effort.
        let body = body(&with(Some("off"), None));
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        assert!(body.get("reasoning_effort").is_none());
    }

    #[test]
    fn thinking_resolution_errors() {
        let mut req = request(vec![]);
        req["reasoningEffort"] = json!("medium");
        let error = thinking(&req, &DeepSeekDefaults::default()).unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(
            error.message,
            "DeepSeek does not support reasoning effort \"medium\""
        );
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_REASONING_EFFORT"));
        req["reasoningEffort"] = json!(null);
        assert_eq!(
            thinking(&req, &DeepSeekDefaults::default())
                .unwrap_err()
                .message,
            "DeepSeek does not support reasoning effort \"null\""
        );
        req["reasoningEffort"] = json!("high");
        let error = thinking(&req, &defaults(Some("disabled"), None)).unwrap_err();
        assert_eq!(
            error.message,
            "DeepSeek deployment does not support reasoning effort \"high\""
        );
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_REASONING_EFFORT"));
        // The same errors surface from serialize_request.
        assert_eq!(
            serialize_request(&req, &defaults(Some("disabled"), None))
                .unwrap_err()
                .failure
                .as_deref()
                .cloned(),
            Some(
                json!({"message": "DeepSeek deployment does not support reasoning effort \"high\"", "code": "UNSUPPORTED_REASONING_EFFORT"})
            )
        );
        // A conflicting deployment default is rejected per request too.
        assert_eq!(
            thinking(&request(vec![]), &defaults(Some("disabled"), Some("low")))
                .unwrap_err()
                .message,
            "DeepSeek deployment does not support reasoning effort \"low\""
        );
        assert_eq!(
            defaults(Some("disabled"), Some("low"))
                .validate()
                .unwrap_err()
                .message,
            "llm-deepseek: only reasoningEffort \"off\" can be configured when thinking is disabled"
        );
        assert!(defaults(Some("disabled"), Some("off")).validate().is_ok());
    }

    // ---- W5: model info ----------------------------------------------------

    #[test]
    fn model_info_defaults_and_catalog() {
        let connection = DeepSeekConnection::default();
        let info = resolve_model(&connection, "deepseek-v4-flash");
        assert_eq!(info.context_window, Some(1_000_000));
        assert_eq!(info.default_max_tokens, Some(256_000));
        let reasoning = info.reasoning.unwrap();
        assert_eq!(reasoning.efforts, ["off", "low", "high", "max"]);
        assert_eq!(reasoning.default_effort.as_deref(), Some("high"));

        let custom = DeepSeekConnection {
            default_context_window: 64_000,
            max_tokens: 8_000,
            models: vec![DeepSeekModel {
                input_modalities: None,
                id: "m".into(),
                context_window: Some(128_000),
                max_tokens: Some(4_000),
            }],
            defaults: defaults(None, Some("low")),
            ..DeepSeekConnection::default()
        };
        let known = resolve_model(&custom, "m");
        assert_eq!(known.context_window, Some(128_000));
        assert_eq!(known.default_max_tokens, Some(4_000));
        assert_eq!(
            known.reasoning.unwrap().default_effort.as_deref(),
            Some("low")
        );
        let unknown = resolve_model(&custom, "other");
        assert_eq!(unknown.context_window, Some(64_000));
        assert_eq!(unknown.default_max_tokens, Some(8_000));

        let off = DeepSeekConnection {
            defaults: defaults(Some("disabled"), None),
            ..DeepSeekConnection::default()
        };
        let reasoning = resolve_model(&off, "deepseek-v4-pro").reasoning.unwrap();
        assert_eq!(reasoning.efforts, ["off"]);
        assert_eq!(reasoning.default_effort.as_deref(), Some("off"));
        let max = DeepSeekConnection {
            defaults: defaults(Some("enabled"), Some("max")),
            ..DeepSeekConnection::default()
        };
        assert_eq!(
            resolve_model(&max, "x")
                .reasoning
                .unwrap()
                .default_effort
                .as_deref(),
            Some("max")
        );
    }

    #[test]
    fn model_info_feeds_prepare_call() {
        let info = resolve_model(&DeepSeekConnection::default(), "deepseek-v4-flash");
        let prepared = dshc_model::llm::prepare_call(
            &json!({"provider": PROVIDER, "model": "deepseek-v4-flash"}),
            &info,
        )
        .unwrap();
        assert_eq!(prepared.config["reasoningEffort"], json!("high"));
        assert_eq!(prepared.config["maxTokens"], json!(256000));
        let body = serialize_request(&prepared.config, &DeepSeekDefaults::default()).unwrap();
        assert_eq!(body["reasoning_effort"], json!("high"));
        assert_eq!(body["max_tokens"], json!(256000));
    }

    // ---- W6: headers -------------------------------------------------------
}
