//! The surface: which message events of a session's log the model sees,
//! in order. dsh-session's surface plan (`planSurfaceEvent`) checks an
//! event's surface metadata against the log before it is appended; the
//! transition is applied only once the event is logged, so a hook that
//! vetoes the append leaves the surface as it was.

use serde_json::{Value, json};

use super::event_kind;
use super::{Event, SurfaceOp};
use crate::js::JsError;

const SURFACE_TYPES: [&str; 3] = [
    event_kind::USER_MESSAGE,
    event_kind::ASSISTANT_MESSAGE,
    event_kind::TOOL_RESULT,
];

#[derive(Clone, Default)]
pub(super) struct Surface {
    pub(super) nodes: Vec<u64>,
}

impl Surface {
    /// Validate and apply one event's surface transition (typed metadata,
    /// from the loop itself or another session's log): the same checks as
    /// [`Surface::apply_raw`].
    pub(super) fn apply(&mut self, event: &Event, log: &[Event]) -> Result<(), JsError> {
        let raw = RawSurfaceMeta {
            surface_op: event.surface_op.as_ref().map(SurfaceOp::to_json),
            source_event_seqs: event.source_event_seqs.as_ref().map(|seqs| json!(seqs)),
        };
        self.apply_raw(&event.kind, event.seq, &event.data, &raw, log)
            .map(|_| ())
    }

    /// [`Surface::check_raw`], then [`Surface::commit`].
    pub(super) fn apply_raw(
        &mut self,
        kind: &str,
        seq: u64,
        data: &Value,
        raw: &RawSurfaceMeta,
        log: &[Event],
    ) -> Result<(Option<SurfaceOp>, Option<Vec<u64>>), JsError> {
        let (op, sources) = self.check_raw(kind, seq, data, raw, log)?;
        self.commit_op(seq, op.as_ref());
        Ok((op, sources))
    }

    /// Apply the surface transition of an event [`Surface::check_raw`] accepted.
    pub(super) fn commit(&mut self, event: &Event) {
        self.commit_op(event.seq, event.surface_op.as_ref());
    }

    fn commit_op(&mut self, seq: u64, op: Option<&SurfaceOp>) {
        match op {
            None => {}
            Some(SurfaceOp::Append) => self.nodes.push(seq),
            Some(SurfaceOp::Replace { start, end }) => {
                let from = self.nodes.iter().position(|n| n == start).unwrap_or(0);
                let to = self.nodes.iter().position(|n| n == end).unwrap_or(from);
                self.nodes.splice(from..=to, [seq]);
            }
        }
    }

    /// dsh-session `planSurfaceEvent` over metadata as it arrived (JSON, any
    /// shape): eligibility, the op's shape, the replacement range,
    /// provenance, a tool result's rewrite rule, in upstream's order and
    /// words. Returns the metadata, typed; the surface is unchanged until
    /// [`Surface::commit`].
    pub(super) fn check_raw(
        &self,
        kind: &str,
        seq: u64,
        data: &Value,
        raw: &RawSurfaceMeta,
        log: &[Event],
    ) -> Result<(Option<SurfaceOp>, Option<Vec<u64>>), JsError> {
        let error = |message: String| Err(JsError::error(message));
        if !SURFACE_TYPES.contains(&kind) {
            if raw.surface_op.is_some() {
                return error(format!(
                    "session event \"{kind}\" is not surface-eligible and cannot carry surfaceOp"
                ));
            }
            if raw.source_event_seqs.is_some() {
                return error(format!(
                    "session event \"{kind}\" is not surface-eligible and cannot carry sourceEventSeqs"
                ));
            }
            return Ok((None, None));
        }
        let op = match &raw.surface_op {
            None => {
                return error(format!(
                    "session event \"{kind}\" is surface-eligible and requires a surfaceOp marker"
                ));
            }
            Some(Value::String(text)) if text == "append" => SurfaceOp::Append,
            Some(Value::Object(object)) => {
                let seq_of = |key: &str| {
                    object
                        .get(key)
                        .and_then(Value::as_f64)
                        .filter(|x| crate::js::is_safe_integer(*x) && *x >= 0.0)
                        .map(|x| x as u64)
                };
                match (
                    object.len(),
                    object.get("op"),
                    seq_of("start"),
                    seq_of("end"),
                ) {
                    (3, Some(op), Some(start), Some(end)) if op == "replace" => {
                        SurfaceOp::Replace { start, end }
                    }
                    _ => {
                        return error(format!(
                            "session event \"{kind}\" carries an invalid replace surfaceOp"
                        ));
                    }
                }
            }
            Some(_) => {
                return error(format!(
                    "session event \"{kind}\" carries an invalid surfaceOp"
                ));
            }
        };
        let shadowed: Vec<u64> = match &op {
            SurfaceOp::Append => Vec::new(),
            SurfaceOp::Replace { start, end } => {
                let start_index = self.nodes.iter().position(|n| n == start).ok_or_else(|| {
                    JsError::error(format!(
                        "surface replace: start seq {start} not found in surface"
                    ))
                })?;
                let end_index = self.nodes.iter().position(|n| n == end).ok_or_else(|| {
                    JsError::error(format!(
                        "surface replace: end seq {end} not found in surface"
                    ))
                })?;
                if start_index > end_index {
                    return error(format!(
                        "surface replace: start seq {start} (index {start_index}) is after end seq {end} (index {end_index})"
                    ));
                }
                self.nodes[start_index..=end_index].to_vec()
            }
        };
        let sources = provenance(kind, seq, raw.source_event_seqs.as_ref(), &shadowed)?;
        if kind == event_kind::TOOL_RESULT && matches!(op, SurfaceOp::Replace { .. }) {
            check_tool_result_rewrite(data, &shadowed, log)?;
        }
        Ok((Some(op), sources))
    }
}

/// `assertProvenance`: the cited seqs are an array of distinct, earlier,
/// non-negative safe integers that include every shadowed node.
fn provenance(
    kind: &str,
    seq: u64,
    raw: Option<&Value>,
    shadowed: &[u64],
) -> Result<Option<Vec<u64>>, JsError> {
    let mut sources: Vec<u64> = Vec::new();
    if let Some(raw) = raw {
        let Some(items) = raw.as_array() else {
            return Err(JsError::error(format!(
                "sourceEventSeqs on event at seq {seq} must be an array when present"
            )));
        };
        if items.is_empty() && kind != event_kind::ASSISTANT_MESSAGE {
            return Err(JsError::error(
                "sourceEventSeqs must not be empty except on assistant/message",
            ));
        }
        let mut not_earlier = None;
        for item in items {
            let source = item
                .as_f64()
                .filter(|x| crate::js::is_safe_integer(*x) && *x >= 0.0)
                .ok_or_else(|| {
                    JsError::error(format!(
                        "session event \"{kind}\" sourceEventSeqs must densely contain non-negative safe integers"
                    ))
                })? as u64;
            if !sources.contains(&source) {
                sources.push(source);
            }
            if not_earlier.is_none() && source >= seq {
                not_earlier = Some(source);
            }
        }
        if sources.len() != items.len() {
            return Err(JsError::error(
                "sourceEventSeqs must not contain duplicates",
            ));
        }
        if let Some(source) = not_earlier {
            return Err(JsError::error(format!(
                "sourceEventSeqs must reference earlier events: {source} >= current seq {seq}"
            )));
        }
    }
    let missing: Vec<String> = shadowed
        .iter()
        .filter(|node| !sources.contains(node))
        .map(u64::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(JsError::error(format!(
            "surface replace: sourceEventSeqs must include every shadowed surface node; missing {}",
            missing.join(", ")
        )));
    }
    Ok(raw.map(|_| {
        raw.and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    }))
}

/// `assertToolResultRewrite`: a replacing tool result rewrites exactly one
/// current tool result and changes only its result content.
fn check_tool_result_rewrite(data: &Value, shadowed: &[u64], log: &[Event]) -> Result<(), JsError> {
    if shadowed.len() != 1 {
        return Err(JsError::error(
            "tool/result surface replacement must rewrite exactly one current node",
        ));
    }
    let original = log
        .get(shadowed[0] as usize)
        .filter(|e| e.kind == event_kind::TOOL_RESULT);
    let Some(original) = original else {
        return Err(JsError::error(
            "tool/result surface replacement must target a current tool/result",
        ));
    };
    // Everything but the result block's `content` must stay: compare with
    // the message content reduced to that one block, its content nulled.
    let without_content = |data: &Value| {
        let mut data = data.clone();
        let mut block = data
            .pointer("/message/content/0")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(object) = block.as_object_mut() {
            object.insert("content".into(), Value::Null);
        }
        if let Some(message) = data.get_mut("message").and_then(Value::as_object_mut) {
            message.insert("content".into(), json!([block]));
        }
        data
    };
    if crate::js::json_equal_unordered(&without_content(&original.data), &without_content(data)) {
        Ok(())
    } else {
        Err(JsError::error(
            "tool/result surface replacement may change only content",
        ))
    }
}

/// Surface metadata as it arrived from outside the loop: raw JSON.
#[derive(Clone, Debug, Default)]
pub struct RawSurfaceMeta {
    /// `surfaceOp`, if present.
    pub surface_op: Option<Value>,
    /// `sourceEventSeqs`, if present.
    pub source_event_seqs: Option<Value>,
}

/// A log's surface folded (and validated) one event at a time, for a
/// reader that needs the surface of many prefixes of one log (replaying
/// every request of a session): each event is folded once instead of once
/// per prefix.
#[derive(Clone, Default)]
pub struct SurfaceFold {
    surface: Surface,
    folded: usize,
}

impl SurfaceFold {
    /// The surface nodes of the folded prefix.
    pub fn nodes(&self) -> &[u64] {
        &self.surface.nodes
    }

    /// Fold `events[folded..to]`. An event that does not fold stops the
    /// fold before it, so asking again fails again, as every longer prefix
    /// does.
    pub fn advance(&mut self, events: &[Event], to: usize) -> Result<(), JsError> {
        for index in self.folded..to.min(events.len()) {
            let event = &events[index];
            if event.seq != index as u64 {
                return Err(JsError::error(format!(
                    "session event seq {} is not contiguous; expected {index}",
                    event.seq
                )));
            }
            self.surface.apply(event, &events[..index])?;
            self.folded = index + 1;
        }
        Ok(())
    }
}
