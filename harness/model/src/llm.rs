//! The LLM runtime's parts the loop observes (spec 07 H5–H6, 05 §4): model
//! info and call preparation with adapter defaults, LLM failures, and the
//! block assembler that turns stream chunks into an assistant message.
//!
//! Chunks and messages are JSON values in upstream's shapes, because they are
//! logged verbatim (`assistant/chunk`, `assistant/message`).

use serde_json::{Map, Value, json};

use super::js::JsError;

/// A failure object: `{message, code, status?, providerRetryAfterMs?, requestId?}`.
pub fn failure(message: &str, code: &str) -> Value {
    json!({"message": message, "code": code})
}

/// What an adapter says about one model (`resolveModel`).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    /// `context.contextWindow`, when known.
    pub context_window: Option<u64>,
    /// Filled into `maxTokens` when the proposal has none.
    pub default_max_tokens: Option<u64>,
    /// Supported reasoning efforts and the default; `None` = no reasoning info.
    pub reasoning: Option<Reasoning>,
}

/// A model's reasoning efforts.
#[derive(Clone, Debug, PartialEq)]
pub struct Reasoning {
    /// Effort ids, e.g. `off`, `low`, `high`, `max`.
    pub efforts: Vec<String>,
    /// The default effort.
    pub default_effort: Option<String>,
}

/// `resolveModelInfoFor`'s checks of what an adapter's `resolveModel`
/// returned (`resolved`, a JSON object in upstream's shape), in upstream's
/// order and words: identity, context, default `maxTokens`, reasoning.
pub fn validate_model_info(
    provider: &str,
    model: &str,
    resolved: &Map<String, Value>,
) -> Result<ModelInfo, JsError> {
    let subject = format!("provider \"{provider}\" model \"{model}\"");
    let invalid = |what: &str, code: &str| {
        JsError::llm(failure(
            &format!("adapter returned {what} for {subject}"),
            code,
        ))
    };
    let text = |key: &str| resolved.get(key).and_then(Value::as_str);
    let identity_ok = text("provider") == Some(provider)
        && text("id") == Some(model)
        && text("name").is_some_and(|name| !name.is_empty())
        && resolved.get("description").is_none_or(Value::is_string);
    if !identity_ok {
        return Err(invalid(
            "invalid exact model metadata",
            "INVALID_MODEL_INFO",
        ));
    }
    let context_window = match resolved.get("context") {
        None => None,
        Some(Value::Null) => return Err(JsError::read_of_null("contextWindow")),
        Some(context) => {
            let window = context.get("contextWindow").and_then(Value::as_f64);
            match window {
                Some(window) if window == window.trunc() && window > 0.0 => Some(window as u64),
                _ => return Err(invalid("invalid context metadata", "INVALID_MODEL_CONTEXT")),
            }
        }
    };
    let default_max_tokens = match resolved.get("defaultMaxTokens") {
        None => None,
        Some(value) => match value.as_f64() {
            Some(tokens) if crate::js::is_safe_integer(tokens) && tokens > 0.0 => {
                Some(tokens as u64)
            }
            _ => {
                return Err(invalid(
                    "invalid default maxTokens",
                    "INVALID_MODEL_MAX_TOKENS",
                ));
            }
        },
    };
    let reasoning = match resolved.get("reasoning") {
        None => None,
        Some(Value::Null) => return Err(JsError::read_of_null("efforts")),
        Some(reasoning) => Some(validate_reasoning(reasoning, &invalid)?),
    };
    Ok(ModelInfo {
        context_window,
        default_max_tokens,
        reasoning,
    })
}

fn validate_reasoning(
    reasoning: &Value,
    invalid: &dyn Fn(&str, &str) -> JsError,
) -> Result<Reasoning, JsError> {
    let efforts = match reasoning.get("efforts") {
        None => return Err(JsError::read_of_undefined("length")),
        Some(Value::Null) => return Err(JsError::read_of_null("length")),
        Some(Value::Array(efforts)) => efforts,
        Some(Value::String(text)) if text.is_empty() => {
            return Err(invalid(
                "invalid reasoning metadata",
                "INVALID_MODEL_REASONING",
            ));
        }
        Some(_) => {
            return Err(JsError::type_error(
                "reasoning.efforts.map is not a function",
            ));
        }
    };
    if efforts.is_empty() {
        return Err(invalid(
            "invalid reasoning metadata",
            "INVALID_MODEL_REASONING",
        ));
    }
    let mut ids: Vec<String> = Vec::new();
    for effort in efforts {
        if effort.is_null() {
            return Err(JsError::read_of_null("id"));
        }
        let id = effort.get("id").and_then(Value::as_str);
        let name = effort.get("name").and_then(Value::as_str);
        let valid = match (id, name) {
            (Some(id), Some(name)) => {
                !id.is_empty()
                    && !name.is_empty()
                    && effort.get("description").is_none_or(Value::is_string)
                    && !ids.iter().any(|seen| seen == id)
            }
            _ => false,
        };
        let Some(id) = id.filter(|_| valid) else {
            return Err(invalid(
                "invalid or duplicate reasoning effort metadata",
                "INVALID_MODEL_REASONING",
            ));
        };
        ids.push(id.to_string());
    }
    let default_effort = match reasoning.get("defaultEffort") {
        None => None,
        Some(value) => match value
            .as_str()
            .filter(|effort| ids.iter().any(|id| id == effort))
        {
            Some(effort) => Some(effort.to_string()),
            None => {
                return Err(invalid(
                    "an unknown default reasoning effort",
                    "INVALID_MODEL_REASONING",
                ));
            }
        },
    };
    Ok(Reasoning {
        efforts: ids,
        default_effort,
    })
}

/// A prepared call (`prepareCall`'s result, minus the stream handle).
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedCall {
    /// The resolved config.
    pub config: Value,
    /// `{reasoningEffort?: true, maxTokens?: true}`.
    pub adapter_defaults: Value,
    /// `contextWindow`, if the model info has one.
    pub context_window: Option<u64>,
}

/// Resolve a proposed config against model info (`resolveCallFor` +
/// `prepareCall`): fill defaults, validate the effort, mark what was filled.
pub fn prepare_call(proposed: &Value, info: &ModelInfo) -> Result<PreparedCall, JsError> {
    let provider = proposed["provider"].as_str().unwrap_or_default();
    let model = proposed["model"].as_str().unwrap_or_default();
    let mut config = proposed.as_object().cloned().unwrap_or_default();
    if !config.contains_key("maxTokens")
        && let Some(default) = info.default_max_tokens
    {
        config.insert("maxTokens".into(), json!(default));
    }
    let requested = config
        .get("reasoningEffort")
        .and_then(Value::as_str)
        .map(str::to_string);
    let unsupported = |effort: &str| {
        JsError::llm(failure(
            &format!(
                "provider \"{provider}\" model \"{model}\" does not support reasoning effort \"{effort}\""
            ),
            "UNSUPPORTED_REASONING_EFFORT",
        ))
    };
    match &info.reasoning {
        None => {
            if let Some(requested) = &requested {
                return Err(unsupported(requested));
            }
        }
        Some(reasoning) => {
            let effective = requested
                .clone()
                .or_else(|| reasoning.default_effort.clone());
            if let Some(effective) = effective {
                if !reasoning.efforts.contains(&effective) {
                    return Err(unsupported(&effective));
                }
                if requested.as_deref() != Some(effective.as_str()) {
                    config.insert("reasoningEffort".into(), json!(effective));
                }
            }
        }
    }
    let mut adapter_defaults = Map::new();
    if proposed.get("reasoningEffort").is_none() && config.contains_key("reasoningEffort") {
        adapter_defaults.insert("reasoningEffort".into(), json!(true));
    }
    if proposed.get("maxTokens").is_none() && config.contains_key("maxTokens") {
        adapter_defaults.insert("maxTokens".into(), json!(true));
    }
    Ok(PreparedCall {
        config: Value::Object(config),
        adapter_defaults: Value::Object(adapter_defaults),
        context_window: info.context_window,
    })
}

#[derive(Clone, Debug, Default)]
struct Partial {
    block_type: String,
    text: String,
    tool_call_id: Option<String>,
    tool_call_name: Option<String>,
    tool_call_arguments: String,
    block: Option<Value>,
}

/// `BlockAssembler`: folds stream chunks into blocks, usage, finish and the
/// finish's replay state.
#[derive(Clone, Debug, Default)]
pub struct BlockAssembler {
    partials: Vec<(u64, Partial)>,
    usage: Option<Value>,
    finish: Option<Value>,
    /// The last finish chunk's `replayState` (`None`: undefined).
    replay_state: Option<Value>,
}

impl BlockAssembler {
    fn ensure(&mut self, index: u64, block_type: &str) -> &mut Partial {
        let position = match self.partials.iter().position(|(i, _)| *i == index) {
            Some(position) => position,
            None => {
                self.partials.push((
                    index,
                    Partial {
                        block_type: block_type.into(),
                        ..Partial::default()
                    },
                ));
                self.partials.len() - 1
            }
        };
        &mut self.partials[position].1
    }

    /// Feed one chunk. A `block-end` without its `block` throws as
    /// dsh-llm's assembler does when it reads the block's `type`.
    pub fn push(&mut self, chunk: &Value) -> Result<(), JsError> {
        let index = chunk["index"].as_u64().unwrap_or(0);
        match chunk["type"].as_str().unwrap_or_default() {
            "block-start" => {
                let block_type = chunk["blockType"].as_str().unwrap_or_default().to_string();
                self.ensure(index, &block_type);
            }
            kind @ ("text-delta" | "reasoning-delta") => {
                let partial = self.ensure(
                    index,
                    if kind == "text-delta" {
                        "text"
                    } else {
                        "reasoning"
                    },
                );
                if partial.block.is_none() {
                    partial
                        .text
                        .push_str(chunk["text"].as_str().unwrap_or_default());
                }
            }
            "tool-call-delta" => {
                let partial = self.ensure(index, "tool-call");
                if partial.block.is_none() {
                    partial.tool_call_id = chunk["id"].as_str().map(str::to_string);
                    if let Some(name) = chunk["name"].as_str().filter(|n| !n.is_empty()) {
                        partial.tool_call_name = Some(name.to_string());
                    }
                    partial
                        .tool_call_arguments
                        .push_str(chunk["argumentsDelta"].as_str().unwrap_or_default());
                }
            }
            "block-end" => {
                let block = match chunk.get("block") {
                    None => return Err(JsError::read_of_undefined("type")),
                    Some(Value::Null) => return Err(JsError::read_of_null("type")),
                    Some(block) => block.clone(),
                };
                let block_type = block["type"].as_str().unwrap_or_default().to_string();
                let partial = self.ensure(index, &block_type);
                if partial.block.is_none() {
                    partial.block = Some(block);
                }
            }
            "usage" => self.usage = Some(chunk["usage"].clone()),
            "finish" => {
                self.finish = Some(chunk["reason"].clone());
                self.replay_state = chunk.get("replayState").cloned();
            }
            _ => {}
        }
        Ok(())
    }

    fn assemble(index: u64, partial: &Partial) -> Value {
        if let Some(block) = &partial.block {
            return block.clone();
        }
        match partial.block_type.as_str() {
            "tool-call" => json!({
                "type": "tool-call",
                "id": partial.tool_call_id.clone().unwrap_or_else(|| format!("call-{index}")),
                "name": partial.tool_call_name.clone().unwrap_or_default(),
                "arguments": partial.tool_call_arguments,
            }),
            block_type => json!({"type": block_type, "text": partial.text}),
        }
    }

    /// Every block seen, in stream order, and whether each is kept: a
    /// `max-tokens` finish drops tool calls, which cannot run once truncated.
    /// The one keep/drop decision behind both [`BlockAssembler::blocks`] and
    /// [`BlockAssembler::replay_state`], so the two cannot disagree.
    fn assembled(&self) -> Vec<(Value, bool)> {
        let truncated = self.finish()["kind"] == "max-tokens";
        self.partials
            .iter()
            .map(|(index, partial)| {
                let block = Self::assemble(*index, partial);
                let kept = !(truncated && block["type"] == "tool-call");
                (block, kept)
            })
            .collect()
    }

    /// All blocks in stream order; a `max-tokens` finish drops tool calls.
    pub fn blocks(&self) -> Vec<Value> {
        self.assembled()
            .into_iter()
            .filter_map(|(block, kept)| kept.then_some(block))
            .collect()
    }

    /// The finish's `replayState`, in step with [`BlockAssembler::blocks`]
    /// (dsh-llm `BlockAssembler.replayState`): without per-block entries
    /// (`blocks` undefined) the envelope as streamed; with entries that do
    /// not align one to one with the blocks seen, none (`None`: undefined);
    /// when blocks were dropped, a new `{response, blocks}` keeping the
    /// entries of the kept blocks; else the envelope as streamed.
    pub fn replay_state(&self) -> Option<Value> {
        let envelope = self.replay_state.as_ref()?;
        let Some(entries) = envelope.get("blocks") else {
            return Some(envelope.clone());
        };
        let assembled = self.assembled();
        let entries = entries.as_array().filter(|e| e.len() == assembled.len())?;
        if assembled.iter().all(|(_, kept)| *kept) {
            return Some(envelope.clone());
        }
        let mut pruned = Map::new();
        if let Some(response) = envelope.get("response") {
            pruned.insert("response".into(), response.clone());
        }
        let kept = entries
            .iter()
            .zip(&assembled)
            .filter(|(_, (_, kept))| *kept)
            .map(|(entry, _)| entry.clone());
        pruned.insert("blocks".into(), Value::Array(kept.collect()));
        Some(Value::Object(pruned))
    }

    /// The prefix an interrupted stream keeps: text and reasoning blocks with
    /// non-blank text, in stream order.
    pub fn interrupted_blocks(&self) -> Vec<Value> {
        self.partials
            .iter()
            .filter(|(_, partial)| {
                let kind = partial
                    .block
                    .as_ref()
                    .and_then(|b| b["type"].as_str())
                    .unwrap_or(&partial.block_type);
                kind == "text" || kind == "reasoning"
            })
            .map(|(index, partial)| Self::assemble(*index, partial))
            .filter(|block| !block["text"].as_str().unwrap_or_default().trim().is_empty())
            .collect()
    }

    /// The usage chunk's usage, if one arrived.
    pub fn usage(&self) -> Option<&Value> {
        self.usage.as_ref()
    }

    /// The finish reason; `{kind: 'stop'}` when the stream had none.
    pub fn finish(&self) -> Value {
        self.finish
            .clone()
            .unwrap_or_else(|| json!({"kind": "stop"}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deepseek_info() -> ModelInfo {
        ModelInfo {
            context_window: Some(1_000_000),
            default_max_tokens: Some(256_000),
            reasoning: Some(Reasoning {
                efforts: ["off", "low", "high", "max"].map(String::from).to_vec(),
                default_effort: Some("high".into()),
            }),
        }
    }

    #[test]
    fn defaults_are_filled_and_marked() {
        let prepared =
            prepare_call(&json!({"provider": "p", "model": "m"}), &deepseek_info()).unwrap();
        assert_eq!(
            prepared.config,
            json!({"provider": "p", "model": "m", "maxTokens": 256000, "reasoningEffort": "high"})
        );
        assert_eq!(
            prepared.adapter_defaults,
            json!({"reasoningEffort": true, "maxTokens": true})
        );
        let explicit = prepare_call(
            &json!({"provider": "p", "model": "m", "maxTokens": 1000}),
            &deepseek_info(),
        )
        .unwrap();
        assert_eq!(explicit.adapter_defaults, json!({"reasoningEffort": true}));
    }

    #[test]
    fn unsupported_effort_is_an_llm_error() {
        let error = prepare_call(
            &json!({"provider": "p", "model": "m", "reasoningEffort": "extreme"}),
            &deepseek_info(),
        )
        .unwrap_err();
        assert_eq!(error.code.as_deref(), Some("UNSUPPORTED_REASONING_EFFORT"));
        assert_eq!(
            error.message,
            "provider \"p\" model \"m\" does not support reasoning effort \"extreme\""
        );
    }

    #[test]
    fn interrupted_blocks_keep_only_non_blank_text_and_reasoning() {
        let mut assembler = BlockAssembler::default();
        for chunk in [
            json!({"type": "block-start", "index": 0, "blockType": "text"}),
            json!({"type": "text-delta", "index": 0, "text": "Hel"}),
            json!({"type": "text-delta", "index": 0, "text": "lo"}),
            json!({"type": "block-start", "index": 1, "blockType": "tool-call"}),
            json!({"type": "tool-call-delta", "index": 1, "id": "c1", "name": "read", "argumentsDelta": "{"}),
        ] {
            assembler.push(&chunk).expect("a chunk");
        }
        assert_eq!(
            assembler.interrupted_blocks(),
            vec![json!({"type": "text", "text": "Hello"})]
        );
        assert_eq!(assembler.blocks().len(), 2);
        assert_eq!(assembler.finish(), json!({"kind": "stop"}));
    }

    fn text_and_call_finishing(reason: &str, replay_state: Value) -> BlockAssembler {
        let mut assembler = BlockAssembler::default();
        for chunk in [
            json!({"type": "text-delta", "index": 0, "text": "t"}),
            json!({"type": "tool-call-delta", "index": 1, "id": "c1", "name": "read", "argumentsDelta": "{}"}),
            json!({"type": "finish", "reason": {"kind": reason}, "replayState": replay_state}),
        ] {
            assembler.push(&chunk).expect("a chunk");
        }
        assembler
    }

    #[test]
    fn replay_state_follows_the_kept_blocks() {
        let aligned = json!({"response": {"id": "r"}, "blocks": [1, 2], "extra": true});
        let whole = text_and_call_finishing("tool-calls", aligned.clone());
        assert_eq!(whole.replay_state(), Some(aligned.clone()));
        let truncated = text_and_call_finishing("max-tokens", aligned);
        assert_eq!(
            truncated.replay_state(),
            Some(json!({"response": {"id": "r"}, "blocks": [1]}))
        );
        assert_eq!(truncated.blocks().len(), 1);
        let misaligned = text_and_call_finishing("stop", json!({"blocks": [1]}));
        assert_eq!(misaligned.replay_state(), None);
        let opaque = text_and_call_finishing("max-tokens", json!({"response": 7}));
        assert_eq!(opaque.replay_state(), Some(json!({"response": 7})));
        let no_response = text_and_call_finishing("max-tokens", json!({"blocks": ["a", "b"]}));
        assert_eq!(no_response.replay_state(), Some(json!({"blocks": ["a"]})));
        assert_eq!(BlockAssembler::default().replay_state(), None);
    }

    #[test]
    fn a_later_finish_without_replay_state_clears_it() {
        let mut assembler = text_and_call_finishing("stop", json!({"response": 1}));
        assembler
            .push(&json!({"type": "finish", "reason": {"kind": "stop"}}))
            .expect("a finish");
        assert_eq!(assembler.replay_state(), None);
    }
}
