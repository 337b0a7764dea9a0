//! Payload translation (09 W8, W9) and usage (W11, W12): SSE payloads
//! become the adapter's stream parts, in upstream's block order.

use dshc_model::js::{
    JsError, iterate, json_round_trip, number_json, object, slice_utf16, to_js_string, to_number,
    truthy,
};
use serde_json::{Map, Value, json};

use crate::*;

/// `mapFinishReason`: `stop`, `tool_calls`, `length`, or an error finish
/// whose code is the wire value upper-cased.
pub fn map_finish_reason(reason: &str) -> Value {
    match reason {
        "stop" => json!({"kind": "stop"}),
        "tool_calls" => json!({"kind": "tool-calls"}),
        "length" => json!({"kind": "max-tokens"}),
        other => json!({
            "kind": "error",
            "failure": {
                "message": format!("model stopped: {other}"),
                "code": other.to_uppercase(),
            },
        }),
    }
}

/// `mapUsage` (W12): disjoint harness counts. `cacheRead` is
/// `prompt_tokens_details.cached_tokens ?? prompt_cache_hit_tokens`;
/// `inputTokens = prompt_tokens − (cacheRead ?? 0)`; `cacheReadTokens` and
/// `reasoningTokens` appear only when the wire defined them (a wire `null`
/// counts as defined, as in JavaScript).
pub fn map_usage(wire: &Value) -> Value {
    let cached = prop_of(prop(wire, "prompt_tokens_details"), "cached_tokens");
    let cache_read = match cached {
        Some(value) if !value.is_null() => Some(value),
        _ => prop(wire, "prompt_cache_hit_tokens"),
    };
    let reasoning = prop_of(prop(wire, "completion_tokens_details"), "reasoning_tokens");
    let subtrahend = match cache_read {
        None | Some(Value::Null) => 0.0,
        Some(value) => to_number(Some(value)),
    };
    let mut usage = Map::with_capacity(4);
    usage.insert(
        "inputTokens".into(),
        number_json(to_number(prop(wire, "prompt_tokens")) - subtrahend),
    );
    if let Some(output) = prop(wire, "completion_tokens") {
        usage.insert("outputTokens".into(), json_round_trip(output));
    }
    if let Some(cache_read) = cache_read {
        usage.insert("cacheReadTokens".into(), json_round_trip(cache_read));
    }
    if let Some(reasoning) = reasoning {
        usage.insert("reasoningTokens".into(), json_round_trip(reasoning));
    }
    Value::Object(usage)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    Text,
    Reasoning,
    ToolCall,
}

#[derive(Clone, Debug)]
struct OpenBlock {
    index: usize,
    kind: BlockKind,
    text: String,
    call_id: Option<Value>,
    name: Option<Value>,
}

impl OpenBlock {
    /// `closeBlock`.
    fn close(&self) -> Value {
        match self.kind {
            BlockKind::Text => json!({"type": "text", "text": self.text}),
            BlockKind::Reasoning => json!({"type": "reasoning", "text": self.text}),
            BlockKind::ToolCall => object([
                ("type", json!("tool-call")),
                ("id", nullish_or_empty(self.call_id.as_ref())),
                ("name", nullish_or_empty(self.name.as_ref())),
                ("arguments", json!(self.text)),
            ]),
        }
    }
}

/// `value ?? ""`, as a JSON value.
fn nullish_or_empty(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => json!(""),
        Some(value) => json_round_trip(value),
    }
}

/// A `Map` key under `SameValueZero`, for the wire's tool-call `index`.
#[derive(Clone, Debug, PartialEq)]
enum ToolKey {
    Undefined,
    Null,
    Bool(bool),
    Number(u64),
    Text(String),
    /// Objects and arrays: each parsed value is a distinct identity.
    Identity(usize),
}

/// Stateful SSE-payload → harness-chunk translator (`translate`), one per
/// response. Feed it each [`SseItem::Data`] in order until [`Self::is_done`].
///
/// Deltas come out as they arrive; `block-end`s (in open order), the latest
/// `usage` and exactly one `finish` are deferred to `[DONE]`. A `stop` (or
/// absent) finish with no block at all is an `EMPTY_RESPONSE` error finish.
/// After `[DONE]` or an error, further payloads are ignored (upstream stops
/// reading).
#[derive(Clone, Debug, Default)]
pub struct Translator {
    blocks: Vec<OpenBlock>,
    text: Option<usize>,
    reasoning: Option<usize>,
    tools: Vec<(ToolKey, usize)>,
    identities: usize,
    pending_finish: Option<Value>,
    pending_usage: Option<Value>,
    done: bool,
    failed: bool,
}

impl Translator {
    /// A fresh translator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` was translated (the stream is complete).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Translate one payload. On error the chunks this payload yielded
    /// before the throw are dropped; use [`Self::push_payload_into`] to keep
    /// them (only `TypeError`s from structurally odd wire JSON throw
    /// mid-payload; `MALFORMED_RESPONSE` never does).
    pub fn push_payload(&mut self, payload: &str) -> Result<Vec<Value>, JsError> {
        let mut out = Vec::new();
        self.push_payload_into(payload, &mut out)?;
        Ok(out)
    }

    /// Translate one payload, appending chunks to `out` as upstream's
    /// generator yields them, so chunks yielded before a failure stay in
    /// `out`. Errors: `LlmError MALFORMED_RESPONSE` for non-JSON, or a plain
    /// `TypeError` where upstream's code would throw one (e.g. a `null`
    /// choice); the adapter reports the latter as `TRANSPORT` (see
    /// [`stream_error`]).
    pub fn push_payload_into(
        &mut self,
        payload: &str,
        out: &mut Vec<Value>,
    ) -> Result<(), JsError> {
        if self.done || self.failed {
            return Ok(());
        }
        if payload == DONE {
            self.done = true;
            self.finish(out);
            return Ok(());
        }
        let chunk = parse_chunk(payload).map_err(|_| {
            self.failed = true;
            llm_error(
                &format!("malformed SSE payload: {}", slice_utf16(payload, 0, 120)),
                "MALFORMED_RESPONSE",
                None,
                None,
                None,
            )
        })?;
        self.translate(&chunk, out)
            .inspect_err(|_| self.failed = true)
    }

    fn open(&mut self, kind: BlockKind, out: &mut Vec<Value>) -> usize {
        let index = self.blocks.len();
        self.blocks.push(OpenBlock {
            index,
            kind,
            text: String::new(),
            call_id: None,
            name: None,
        });
        let block_type = match kind {
            BlockKind::Text => "text",
            BlockKind::Reasoning => "reasoning",
            BlockKind::ToolCall => "tool-call",
        };
        out.push(json!({"type": "block-start", "index": index, "blockType": block_type}));
        index
    }

    fn tool_key(&mut self, index: Option<&Value>) -> ToolKey {
        match index {
            None => ToolKey::Undefined,
            Some(Value::Null) => ToolKey::Null,
            Some(Value::Bool(b)) => ToolKey::Bool(*b),
            Some(Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                ToolKey::Number(if x == 0.0 { 0 } else { x.to_bits() })
            }
            Some(Value::String(s)) => ToolKey::Text(s.clone()),
            Some(_) => {
                self.identities += 1;
                ToolKey::Identity(self.identities)
            }
        }
    }

    fn translate(&mut self, chunk: &Value, out: &mut Vec<Value>) -> Result<(), JsError> {
        if chunk.is_null() {
            return Err(JsError::read_of_null("choices"));
        }
        for choice in iterate(prop(chunk, "choices"))?.iter() {
            if choice.is_null() {
                return Err(JsError::read_of_null("delta"));
            }
            let delta = prop(choice, "delta");
            if let Some(Value::String(reasoning)) = prop_of(delta, "reasoning_content")
                && !reasoning.is_empty()
            {
                let position = match self.reasoning {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::Reasoning, out);
                        self.reasoning = Some(position);
                        position
                    }
                };
                self.blocks[position].text.push_str(reasoning);
                out.push(json!({"type": "reasoning-delta", "index": position, "text": reasoning}));
            }
            if let Some(Value::String(content)) = prop_of(delta, "content")
                && !content.is_empty()
            {
                let position = match self.text {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::Text, out);
                        self.text = Some(position);
                        position
                    }
                };
                self.blocks[position].text.push_str(content);
                out.push(json!({"type": "text-delta", "index": position, "text": content}));
            }
            for call in iterate(prop_of(delta, "tool_calls"))?.iter() {
                if call.is_null() {
                    return Err(JsError::read_of_null("index"));
                }
                let key = self.tool_key(prop(call, "index"));
                let known = self.tools.iter().find(|(k, _)| *k == key).map(|(_, p)| *p);
                let position = match known {
                    Some(position) => position,
                    None => {
                        let position = self.open(BlockKind::ToolCall, out);
                        self.tools.push((key, position));
                        position
                    }
                };
                let function = prop(call, "function");
                let block = &mut self.blocks[position];
                if let Some(id) = prop(call, "id") {
                    block.call_id = Some(id.clone());
                }
                if let Some(name) = prop_of(function, "name") {
                    block.name = Some(name.clone());
                }
                let fragment = match prop_of(function, "arguments") {
                    None | Some(Value::Null) => json!(""),
                    Some(fragment) => fragment.clone(),
                };
                block.text.push_str(&to_js_string(&fragment));
                let mut delta_chunk = Map::with_capacity(5);
                delta_chunk.insert("type".into(), json!("tool-call-delta"));
                delta_chunk.insert("index".into(), json!(position));
                delta_chunk.insert("id".into(), nullish_or_empty(block.call_id.as_ref()));
                if let Some(name) = &block.name {
                    delta_chunk.insert("name".into(), json_round_trip(name));
                }
                delta_chunk.insert("argumentsDelta".into(), json_round_trip(&fragment));
                out.push(Value::Object(delta_chunk));
            }
            if let Some(Value::String(reason)) = prop(choice, "finish_reason") {
                self.pending_finish = Some(map_finish_reason(reason));
            }
        }
        if let Some(usage) = prop(chunk, "usage")
            && truthy(usage)
        {
            self.pending_usage = Some(map_usage(usage));
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Value>) {
        for block in &self.blocks {
            out.push(object([
                ("type", json!("block-end")),
                ("index", json!(block.index)),
                ("block", block.close()),
            ]));
        }
        if let Some(usage) = self.pending_usage.take() {
            out.push(object([("type", json!("usage")), ("usage", usage)]));
        }
        let reason = self
            .pending_finish
            .take()
            .unwrap_or_else(|| json!({"kind": "stop"}));
        let reason = if reason["kind"] == "stop" && self.blocks.is_empty() {
            json!({
                "kind": "error",
                "failure": {
                    "message": "model returned a completed response with no content",
                    "code": "EMPTY_RESPONSE",
                },
            })
        } else {
            reason
        };
        out.push(object([("type", json!("finish")), ("reason", reason)]));
    }
}

/// Decode and translate a whole response body given as its reads: the chunks
/// yielded, and the error that ended the stream early (`STREAM_CLOSED` when
/// the reads end without `[DONE]`). Errors are as the inner generators throw
/// them, before [`stream_error`]'s mapping.
pub fn translate_reads<'a, I>(reads: I) -> (Vec<Value>, Option<JsError>)
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut decoder = SseDecoder::new();
    let mut translator = Translator::new();
    let mut chunks = Vec::new();
    for read in reads {
        for item in decoder.push(read) {
            let SseItem::Data(payload) = item else {
                continue;
            };
            if let Err(error) = translator.push_payload_into(&payload, &mut chunks) {
                return (chunks, Some(error));
            }
            if translator.is_done() {
                return (chunks, None);
            }
        }
    }
    (chunks, Some(end_of_stream_error()))
}

/// A payload as `JSON.parse` reads it, keeping only what
/// [`Translator::translate`] looks at: the chunk's `choices` and `usage`,
/// each choice's `delta` and `finish_reason`, and each delta's
/// `reasoning_content`, `content` and `tool_calls`. Every other member is
/// still read as JSON (malformed text anywhere is an error) but not built
/// as a value; a chunk, choice or delta that is not an object is kept
/// whole. What is kept is exactly what the full parse gives there.
fn parse_chunk(payload: &str) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(payload);
    let chunk = serde::de::DeserializeSeed::deserialize(Pruned(Keep::Chunk), &mut deserializer)?;
    deserializer.end()?;
    Ok(chunk)
}

/// Which part of a chunk a value is, for [`parse_chunk`].
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Kept whole.
    All,
    /// A payload.
    Chunk,
    /// A chunk's `choices`: each element a choice.
    Choices,
    /// An element of `choices`.
    Choice,
    /// A choice's `delta`.
    Delta,
}

impl Keep {
    /// The members an object in this place keeps, and what each is.
    fn members(self) -> &'static [(&'static str, Keep)] {
        match self {
            Keep::Chunk => &[("choices", Keep::Choices), ("usage", Keep::All)],
            Keep::Choice => &[("delta", Keep::Delta), ("finish_reason", Keep::All)],
            Keep::Delta => &[
                ("reasoning_content", Keep::All),
                ("content", Keep::All),
                ("tool_calls", Keep::All),
            ],
            Keep::All | Keep::Choices => &[],
        }
    }
}

/// The value in place `.0`, parsed with what it keeps.
struct Pruned(Keep);

impl<'de> serde::de::DeserializeSeed<'de> for Pruned {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Keep::All => serde::Deserialize::deserialize(deserializer),
            keep => deserializer.deserialize_any(PrunedVisitor(keep)),
        }
    }
}

/// A member name, matched against the kept ones without being copied.
struct MemberName(&'static [(&'static str, Keep)]);

impl<'de> serde::de::DeserializeSeed<'de> for MemberName {
    /// The kept member's name and place; `None` for a member to skip.
    type Value = Option<(&'static str, Keep)>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for MemberName {
    type Value = Option<(&'static str, Keep)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().copied().find(|(kept, _)| *kept == name))
    }
}

/// Builds what the full parse builds (as serde_json's own `Value` visitor
/// does), but an object keeps only the members its place reads.
struct PrunedVisitor(Keep);

impl<'de> serde::de::Visitor<'de> for PrunedVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let item = if self.0 == Keep::Choices {
            Keep::Choice
        } else {
            Keep::All
        };
        let mut items = Vec::new();
        while let Some(value) = seq.next_element_seed(Pruned(item))? {
            items.push(value);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let members = self.0.members();
        let mut object = Map::new();
        if members.is_empty() {
            // An object where an array was read: kept whole.
            while let Some((name, value)) = map.next_entry::<String, Value>()? {
                object.insert(name, value);
            }
            return Ok(Value::Object(object));
        }
        while let Some(kept) = map.next_key_seed(MemberName(members))? {
            match kept {
                Some((name, place)) => {
                    let value = map.next_value_seed(Pruned(place))?;
                    object.insert(name.to_owned(), value);
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    const SCENARIO: [&str; 4] = [
        r#"{"choices":[{"delta":{"reasoning_content":""}}]}"#,
        r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":20}}"#,
        "[DONE]",
    ];

    const SCENARIO_CHUNKS: [&str; 5] = [
        r#"{"type":"block-start","index":0,"blockType":"text"}"#,
        r#"{"type":"text-delta","index":0,"text":"Hi"}"#,
        r#"{"type":"block-end","index":0,"block":{"type":"text","text":"Hi"}}"#,
        r#"{"type":"usage","usage":{"inputTokens":20,"outputTokens":5,"cacheReadTokens":80}}"#,
        r#"{"type":"finish","reason":{"kind":"stop"}}"#,
    ];

    #[test]
    fn scenario_empty_reasoning_then_text_with_usage() {
        assert_eq!(texts(&translate_all(&SCENARIO)), SCENARIO_CHUNKS);
    }

    #[test]
    fn scenario_through_sse_bytes_split_everywhere() {
        let stream = sse(&SCENARIO);
        let bytes = stream.as_bytes();
        for split in 0..=bytes.len() {
            let (a, b) = bytes.split_at(split);
            let (chunks, error) = translate_reads([a, b]);
            assert!(error.is_none(), "split at {split}");
            assert_eq!(texts(&chunks), SCENARIO_CHUNKS, "split at {split}");
        }
    }

    #[test]
    fn scenario_cached_tokens_win_over_cache_hit_tokens() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":20,"prompt_tokens_details":{"cached_tokens":64}}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[3],
            json!({"type": "usage", "usage": {"inputTokens": 36, "outputTokens": 5, "cacheReadTokens": 64}})
        );
    }

    fn finish_for(reason: &str) -> Value {
        let payload =
            format!(r#"{{"choices":[{{"delta":{{"content":"x"}},"finish_reason":"{reason}"}}]}}"#);
        translate_all(&[&payload, "[DONE]"]).pop().unwrap()
    }

    #[test]
    fn finish_reason_mappings() {
        assert_eq!(
            finish_for("stop"),
            json!({"type": "finish", "reason": {"kind": "stop"}})
        );
        assert_eq!(
            finish_for("tool_calls"),
            json!({"type": "finish", "reason": {"kind": "tool-calls"}})
        );
        assert_eq!(
            finish_for("length"),
            json!({"type": "finish", "reason": {"kind": "max-tokens"}})
        );
        assert_eq!(
            finish_for("insufficient_system_resource")["reason"]["failure"],
            json!({"message": "model stopped: insufficient_system_resource", "code": "INSUFFICIENT_SYSTEM_RESOURCE"})
        );
        // No finish_reason at all is a stop; the latest string one wins.
        assert_eq!(
            translate_all(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"]).pop(),
            Some(json!({"type": "finish", "reason": {"kind": "stop"}}))
        );
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":null}]}"#,
                "[DONE]"
            ])
            .pop(),
            Some(json!({"type": "finish", "reason": {"kind": "stop"}}))
        );
    }

    #[test]
    fn scenario_content_filter_is_an_error_finish() {
        assert_eq!(
            serde_json::to_string(&finish_for("content_filter")).unwrap(),
            r#"{"type":"finish","reason":{"kind":"error","failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}}"#
        );
    }

    #[test]
    fn scenario_done_without_blocks_is_empty_response() {
        let expected = json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "model returned a completed response with no content", "code": "EMPTY_RESPONSE"}}});
        assert_eq!(translate_all(&["[DONE]"]), vec![expected.clone()]);
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{"reasoning_content":"","content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#,
                "[DONE]",
            ]),
            vec![
                json!({"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 0}}),
                expected
            ]
        );
        // Only a stop is degenerate: other finishes keep their meaning.
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
                "[DONE]"
            ]),
            vec![json!({"type": "finish", "reason": {"kind": "max-tokens"}})]
        );
        assert_eq!(
            translate_all(&[
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]"
            ]),
            vec![json!({"type": "finish", "reason": {"kind": "tool-calls"}})]
        );
    }

    #[test]
    fn reasoning_text_and_tool_calls_open_blocks_in_first_seen_order() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"reasoning_content":"Let me ","content":null}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"look."}}]}"#,
            r#"{"choices":[{"delta":{"content":"Reading.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"ls","arguments":"{}"}},{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_cache_hit_tokens":0,"completion_tokens_details":{"reasoning_tokens":4}}}"#,
            "[DONE]",
        ]);
        let expected = [
            r#"{"type":"block-start","index":0,"blockType":"reasoning"}"#,
            r#"{"type":"reasoning-delta","index":0,"text":"Let me "}"#,
            r#"{"type":"reasoning-delta","index":0,"text":"look."}"#,
            r#"{"type":"block-start","index":1,"blockType":"text"}"#,
            r#"{"type":"text-delta","index":1,"text":"Reading."}"#,
            r#"{"type":"block-start","index":2,"blockType":"tool-call"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":""}"#,
            r#"{"type":"block-start","index":3,"blockType":"tool-call"}"#,
            r#"{"type":"tool-call-delta","index":3,"id":"call_b","name":"ls","argumentsDelta":"{}"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":"{\"p\":"}"#,
            r#"{"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":"1}"}"#,
            r#"{"type":"block-end","index":0,"block":{"type":"reasoning","text":"Let me look."}}"#,
            r#"{"type":"block-end","index":1,"block":{"type":"text","text":"Reading."}}"#,
            r#"{"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_a","name":"read","arguments":"{\"p\":1}"}}"#,
            r#"{"type":"block-end","index":3,"block":{"type":"tool-call","id":"call_b","name":"ls","arguments":"{}"}}"#,
            r#"{"type":"usage","usage":{"inputTokens":50,"outputTokens":9,"cacheReadTokens":0,"reasoningTokens":4}}"#,
            r#"{"type":"finish","reason":{"kind":"tool-calls"}}"#,
        ];
        assert_eq!(texts(&chunks), expected);
    }

    #[test]
    fn tool_call_delta_omits_unknown_name_and_defaults_id() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c9","function":{"name":"x"}}]}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[1],
            json!({"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{"})
        );
        assert_eq!(
            chunks[2],
            json!({"type": "tool-call-delta", "index": 0, "id": "c9", "name": "x", "argumentsDelta": ""})
        );
        assert_eq!(
            chunks[3],
            json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c9", "name": "x", "arguments": "{"}})
        );
        // No finish_reason: a stop, and a tool-call block makes it non-empty.
        assert_eq!(
            chunks[4],
            json!({"type": "finish", "reason": {"kind": "stop"}})
        );
    }

    #[test]
    fn latest_usage_wins_and_usage_only_trailer_is_accepted() {
        let chunks = translate_all(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2}}"#,
            r#"{"choices":[],"usage":null}"#,
            "[DONE]",
        ]);
        assert_eq!(
            chunks[3],
            json!({"type": "usage", "usage": {"inputTokens": 12, "outputTokens": 2}})
        );
        // No usage at all: no usage chunk.
        let chunks = translate_all(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"]);
        assert!(chunks.iter().all(|c| c["type"] != "usage"));
    }

    #[test]
    fn usage_mapping() {
        // Both cached fields present: the OpenAI-compatible one wins.
        assert_eq!(
            serde_json::to_string(&map_usage(&json!({
                "prompt_tokens": 1000,
                "completion_tokens": 20,
                "prompt_cache_hit_tokens": 900,
                "prompt_cache_miss_tokens": 100,
                "prompt_tokens_details": {"cached_tokens": 896},
                "completion_tokens_details": {"reasoning_tokens": 7},
            })))
            .unwrap(),
            r#"{"inputTokens":104,"outputTokens":20,"cacheReadTokens":896,"reasoningTokens":7}"#
        );
        assert_eq!(
            serde_json::to_string(&map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 80})
            ))
            .unwrap(),
            r#"{"inputTokens":20,"outputTokens":5,"cacheReadTokens":80}"#
        );
        // Neither cached field: no cacheReadTokens; miss tokens are ignored.
        assert_eq!(
            map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_miss_tokens": 100})
            ),
            json!({"inputTokens": 100, "outputTokens": 5})
        );
        // `cached_tokens: null` falls back to the DeepSeek field.
        assert_eq!(
            map_usage(&json!({
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_cache_hit_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": null},
            })),
            json!({"inputTokens": 70, "outputTokens": 5, "cacheReadTokens": 30})
        );
        // A wire null is defined in JavaScript: it is kept and subtracts 0.
        assert_eq!(
            map_usage(
                &json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": null})
            ),
            json!({"inputTokens": 100, "outputTokens": 5, "cacheReadTokens": null})
        );
        // Missing prompt_tokens is NaN, which JSON writes as null; a missing
        // completion_tokens is undefined and vanishes.
        assert_eq!(
            map_usage(&json!({"completion_tokens": 5})),
            json!({"inputTokens": null, "outputTokens": 5})
        );
        assert_eq!(
            map_usage(&json!({"prompt_tokens": 5})),
            json!({"inputTokens": 5})
        );
    }

    #[test]
    fn members_the_translation_does_not_read_are_only_checked_as_syntax() {
        // JSON.parse (Node 20) accepts all four payloads; serde_json refuses
        // the odd values where it builds them, so only the last, whose lone
        // surrogate is in a text the translation reads, is malformed here.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let payloads = [
            r#"{"id":"\ud800","choices":[]}"#.to_owned(),
            r#"{"created":1e400,"choices":[]}"#.to_owned(),
            format!(r#"{{"x":{deep},"choices":[]}}"#),
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#.to_owned(),
        ];
        let malformed: Vec<bool> = payloads
            .iter()
            .map(|payload| {
                let mut out = Vec::new();
                Translator::default()
                    .push_payload_into(payload, &mut out)
                    .is_err_and(|error| error.code.as_deref() == Some("MALFORMED_RESPONSE"))
            })
            .collect();
        assert_eq!(malformed, [false, false, false, true]);
        // Still JSON: a syntax error anywhere is malformed.
        let mut out = Vec::new();
        let error = Translator::default()
            .push_payload_into(r#"{"id":[1,,2],"choices":[]}"#, &mut out)
            .unwrap_err();
        assert_eq!(error.code.as_deref(), Some("MALFORMED_RESPONSE"));
    }

    #[test]
    fn malformed_payload_is_malformed_response_with_a_120_unit_prefix() {
        let error = Translator::new().push_payload("{not json").unwrap_err();
        assert_eq!(error.name, "LlmError");
        assert_eq!(
            error.failure.as_deref().cloned(),
            Some(
                json!({"message": "malformed SSE payload: {not json", "code": "MALFORMED_RESPONSE"})
            )
        );
        let long = format!("{}{}", "x".repeat(119), "🎉 and more");
        let error = Translator::new().push_payload(&long).unwrap_err();
        // 119 units plus the first half of a surrogate pair.
        assert_eq!(
            error.message,
            format!("malformed SSE payload: {}\u{FFFD}", "x".repeat(119))
        );
        let long = "y".repeat(500);
        assert_eq!(
            Translator::new().push_payload(&long).unwrap_err().message,
            format!("malformed SSE payload: {}", "y".repeat(120))
        );
        let error = Translator::new().push_payload("").unwrap_err();
        assert_eq!(error.message, "malformed SSE payload: ");
        // Only the exact sentinel terminates.
        let error = Translator::new().push_payload("[DONE] ").unwrap_err();
        assert_eq!(error.code.as_deref(), Some("MALFORMED_RESPONSE"));
    }

    #[test]
    fn malformed_payload_after_deltas_keeps_the_deltas() {
        let stream = sse(&[r#"{"choices":[{"delta":{"content":"Hi"}}]}"#, "oops"]);
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert_eq!(chunks.len(), 2);
        let error = error.unwrap();
        assert_eq!(error.message, "malformed SSE payload: oops");
        assert_eq!(
            failure_chunk(&error, false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "malformed SSE payload: oops", "code": "MALFORMED_RESPONSE"}}})
        );
    }

    #[test]
    fn scenario_missing_done_is_stream_closed_after_the_deltas() {
        let stream = sse(&[
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
        ]);
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert_eq!(
            chunks,
            vec![
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
                json!({"type": "text-delta", "index": 0, "text": "Hel"}),
                json!({"type": "text-delta", "index": 0, "text": "lo"}),
            ]
        );
        let error = error.unwrap();
        assert_eq!(error, end_of_stream_error());
        assert_eq!(error.message, "SSE stream ended without [DONE]");
        assert_eq!(
            failure_chunk(&error, false),
            json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}}})
        );
        // A [DONE] without its blank line is not an event.
        let (_, error) = translate_reads([b"data: [DONE]\n".as_slice()]);
        assert_eq!(error.unwrap().code.as_deref(), Some("STREAM_CLOSED"));
    }

    #[test]
    fn done_stops_translation() {
        let mut translator = Translator::new();
        assert!(!translator.is_done());
        translator
            .push_payload(r#"{"choices":[{"delta":{"content":"x"}}]}"#)
            .unwrap();
        assert_eq!(translator.push_payload("[DONE]").unwrap().len(), 2);
        assert!(translator.is_done());
        assert_eq!(
            translator.push_payload("garbage").unwrap(),
            Vec::<Value>::new()
        );
        // Events after [DONE] in the same read are never translated.
        let stream = format!(
            "{}data: garbage\n\n",
            sse(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"])
        );
        let (chunks, error) = translate_reads([stream.as_bytes()]);
        assert!(error.is_none());
        // block-start, text-delta, block-end, finish.
        assert_eq!(chunks.len(), 4);
    }

    #[test]
    fn odd_wire_json_throws_type_errors_where_upstream_does() {
        let mut translator = Translator::new();
        let mut out = Vec::new();
        let error = translator
            .push_payload_into(r#"{"choices":[{"delta":{"content":"a"}},null]}"#, &mut out)
            .unwrap_err();
        assert_eq!(error.name, "TypeError");
        assert_eq!(
            error.message,
            "Cannot read properties of null (reading 'delta')"
        );
        assert_eq!(out.len(), 2, "chunks before the throw were already yielded");
        assert_eq!(
            Translator::new().push_payload("null").unwrap_err().message,
            "Cannot read properties of null (reading 'choices')"
        );
        assert_eq!(
            Translator::new()
                .push_payload(r#"{"choices":{}}"#)
                .unwrap_err()
                .message,
            "object is not iterable (cannot read property Symbol(Symbol.iterator))"
        );
        // Primitives without the properties are simply empty.
        assert_eq!(
            Translator::new().push_payload("5").unwrap(),
            Vec::<Value>::new()
        );
        assert_eq!(
            Translator::new()
                .push_payload(r#"{"choices":"ab","usage":0}"#)
                .unwrap(),
            Vec::<Value>::new()
        );
        // The adapter reports such throws as TRANSPORT with the cause kept.
        let wrapped = stream_error(error, "http://p", false, None);
        assert_eq!(wrapped.message, "DeepSeek API stream from http://p failed");
        assert_eq!(wrapped.code.as_deref(), Some("TRANSPORT"));
        assert_eq!(
            wrapped.chain(),
            "DeepSeek API stream from http://p failed: Cannot read properties of null (reading 'delta')"
        );
    }

    // ---- W10: HTTP and other failures ---------------------------------------
}
