//! Tools as the loop sees them (05 §4, 08 C5, 99 §2): the step's tool
//! schemas, the tool calls an assistant message carries, and their
//! execution with the scripted runtime (`tool/call`, the body, the
//! `tool/result`, then the result's additional contexts queued for the next
//! step).
//!
//! It exists to keep the abort rules of tool execution (a call that never
//! started versus one the signal interrupted) in one place, apart from the
//! attempt loop that decides whether tools run at all.

use std::rc::Rc;

use serde_json::{Map, Value, json};

use dshc_model::inbox::Target;
use dshc_model::session::SurfaceMeta;
use dshc_model::{AbortSignal, JsError, ToolSchema};

use crate::agent::{Agent, ToolCall, ToolOutcome};
use crate::context::user_message;
use dshc_model::session::event_kind;

/// The step's tool schemas, as the request and its header carry them.
pub(crate) struct ToolSchemas {
    /// `{name, description?, parameters?}` per tool, in request order.
    pub(crate) schemas: Vec<Value>,
    /// Whether the header can log them. A schema whose description or
    /// parameters is `undefined` cannot be logged: the session's append
    /// accepts only lossless JSON, and the header carries the schemas as
    /// assembled.
    pub(crate) loggable: bool,
}

impl ToolSchemas {
    /// The schemas of the assembled `tools` (rendered once per step).
    pub(crate) fn of(tools: &[Rc<ToolSchema>]) -> ToolSchemas {
        let loggable = tools
            .iter()
            .all(|tool| tool.description.is_some() && tool.parameters.is_some());
        let schemas = tools
            .iter()
            .map(|tool| {
                let mut object = Map::new();
                object.insert("name".into(), json!(tool.name));
                if let Some(description) = &tool.description {
                    object.insert("description".into(), json!(description));
                }
                if let Some(parameters) = &tool.parameters {
                    object.insert("parameters".into(), parameters.clone());
                }
                Value::Object(object)
            })
            .collect();
        ToolSchemas { schemas, loggable }
    }
}

/// The `tool-call` blocks of an assistant message, in order.
pub(crate) fn tool_calls(message: &Value) -> Vec<Value> {
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool-call")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// dsh-tools: the result of a call that never started, because the signal
/// had already aborted (08 C5).
fn skipped_before_dispatch() -> ToolOutcome {
    ToolOutcome {
        text: "Error: tool call aborted before dispatch".into(),
        is_error: true,
        ..ToolOutcome::default()
    }
}

/// dsh-tools: what a started call whose signal aborted while it ran ends
/// as; only its additional contexts survive.
fn aborted_while_running(ran: ToolOutcome) -> ToolOutcome {
    ToolOutcome {
        text: "Error: tool call aborted".into(),
        is_error: true,
        additional_contexts: ran.additional_contexts,
        ..ToolOutcome::default()
    }
}

/// The tool-result user message of call `id`.
fn tool_result_message(id: &str, outcome: &ToolOutcome, message_id: String) -> Value {
    let content = match &outcome.content {
        Some(blocks) => Value::Array(blocks.clone()),
        None => json!([{"type": "text", "text": outcome.text}]),
    };
    json!({
        "source": {"kind": "tool", "callId": id},
        "content": [{"type": "tool-result", "toolCallId": id, "content": content, "isError": outcome.is_error}],
        "role": "user",
        "id": message_id,
    })
}

/// `tool/result {turn, step, message, error?}`: the error is the abort's
/// when the call was cut short, else the harness error the tool threw.
fn tool_result_data(
    turn: u64,
    step: u64,
    message: Value,
    abort_code: Option<&str>,
    error_info: Option<&Value>,
) -> Value {
    let mut data = Map::new();
    data.insert("turn".into(), json!(turn));
    data.insert("step".into(), json!(step));
    data.insert("message".into(), message);
    if let Some(code) = abort_code {
        data.insert("error".into(), json!({"name": "AbortError", "code": code}));
    } else if let Some(info) = error_info {
        data.insert("error".into(), info.clone());
    }
    Value::Object(data)
}

impl Agent {
    /// Tool execution with the scripted runtime: serial, each call logged as
    /// `tool/call`, run (taking its scripted virtual time), then logged as
    /// `tool/result`. Once the signal aborts, no further call starts: each
    /// gets a synthetic call and `aborted before dispatch` result (08 C5),
    /// while a call already started still commits its result.
    pub(crate) async fn run_tools(
        &self,
        turn: u64,
        step: u64,
        calls: &[Value],
        signal: &AbortSignal,
    ) -> Result<bool, JsError> {
        let mut concluded = false;
        for call in calls {
            concluded |= self.run_tool(turn, step, call, signal).await?;
        }
        Ok(concluded)
    }

    /// One call: `tool/call`, its body (or its skip), `tool/result`, then
    /// its additional contexts. `Ok(true)` when it concludes the turn.
    async fn run_tool(
        &self,
        turn: u64,
        step: u64,
        call: &Value,
        signal: &AbortSignal,
    ) -> Result<bool, JsError> {
        // A call block missing its id, name or arguments (a route's own
        // `block-end`) would log them as `undefined`, which dsh-session's
        // append refuses: the turn fails with nothing logged for the call.
        if ["id", "name", "arguments"]
            .iter()
            .any(|key| call.get(key).is_none())
        {
            return Err(JsError::error(format!(
                "session event \"{}\" carries non-JSON-serializable data",
                event_kind::TOOL_CALL
            )));
        }
        let id = call["id"].as_str().unwrap_or_default();
        let name = call["name"].as_str().unwrap_or_default();
        let arguments = call["arguments"].as_str().unwrap_or_default();
        let call_event = self.append(
            event_kind::TOOL_CALL,
            json!({"turn": turn, "step": step, "callId": id, "name": name, "arguments": arguments}),
            SurfaceMeta::default(),
        )?;
        let (outcome, abort_code) = self.call_tool(id, name, arguments, signal).await;
        // A body defers its contexts as messages it builds before it
        // returns, so their ids come before its result message's.
        let contexts = self.context_messages(id, &outcome.additional_contexts);
        let message = tool_result_message(id, &outcome, self.0.context.ids.next("msg"));
        self.append(
            event_kind::TOOL_RESULT,
            tool_result_data(turn, step, message, abort_code, outcome.error_info.as_ref()),
            SurfaceMeta::append_citing(vec![call_event.seq]),
        )?;
        self.queue_additional_contexts(contexts)?;
        Ok(outcome.concludes_turn)
    }

    /// Run the call's body unless the signal already aborted, with the abort
    /// code its result logs when the signal cut it short.
    async fn call_tool(
        &self,
        id: &str,
        name: &str,
        arguments: &str,
        signal: &AbortSignal,
    ) -> (ToolOutcome, Option<&'static str>) {
        if signal.is_aborted() {
            return (skipped_before_dispatch(), Some("ABORTED_BEFORE_DISPATCH"));
        }
        let outcome = (self.0.context.tools)(ToolCall {
            name: name.to_string(),
            arguments: arguments.to_string(),
            call_id: id.to_string(),
            signal: signal.clone(),
            agent: self.downgrade(),
        })
        .await;
        if signal.is_aborted() {
            (aborted_while_running(outcome), Some("ABORTED"))
        } else {
            (outcome, None)
        }
    }

    /// Call `id`'s additional contexts as the tool-sourced user messages its
    /// body defers.
    fn context_messages(&self, id: &str, texts: &[String]) -> Vec<Value> {
        texts
            .iter()
            .map(|text| {
                user_message(
                    &self.0.context.ids,
                    json!([{"type": "text", "text": text}]),
                    json!({"kind": "tool", "callId": id}),
                )
            })
            .collect()
    }

    /// A result's additional contexts, each at the end of the next-step
    /// inbox.
    fn queue_additional_contexts(&self, contexts: Vec<Value>) -> Result<(), JsError> {
        for context in contexts {
            let end = self.0.inbox.next_step().len();
            self.0
                .inbox
                .splice(Target::NextStep, end, 0, vec![context])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str, description: Option<&str>, parameters: Option<Value>) -> Rc<ToolSchema> {
        Rc::new(ToolSchema {
            name: name.into(),
            description: description.map(str::to_string),
            parameters,
        })
    }

    #[test]
    fn schemas_keep_order_and_drop_undefined_fields() {
        let tools = [
            schema("read", Some("Read a file"), Some(json!({"type": "object"}))),
            schema("bash", None, Some(json!({}))),
        ];
        let schemas = ToolSchemas::of(&tools);
        assert_eq!(
            schemas.schemas,
            vec![
                json!({"name": "read", "description": "Read a file", "parameters": {"type": "object"}}),
                json!({"name": "bash", "parameters": {}}),
            ]
        );
        // One `undefined` field makes the whole set unloggable.
        assert!(!schemas.loggable);
        assert!(ToolSchemas::of(&tools[..1]).loggable);
        assert!(ToolSchemas::of(&[]).loggable);
    }

    #[test]
    fn tool_calls_are_the_tool_call_blocks_in_order() {
        let message = json!({"content": [
            {"type": "text", "text": "x"},
            {"type": "tool-call", "id": "a"},
            {"type": "reasoning", "text": "y"},
            {"type": "tool-call", "id": "b"},
        ]});
        let ids: Vec<Value> = tool_calls(&message)
            .into_iter()
            .map(|call| call["id"].clone())
            .collect();
        assert_eq!(ids, [json!("a"), json!("b")]);
        assert!(tool_calls(&json!({"content": "text"})).is_empty());
    }

    #[test]
    fn a_thrown_error_becomes_an_error_result() {
        let mut error = JsError::error("disk full");
        let plain = ToolOutcome::thrown(&error);
        assert_eq!(plain.text, "Error: disk full");
        assert!(plain.is_error);
        assert_eq!(plain.error_info, None);
        error.code = Some("EFULL".into());
        let coded = ToolOutcome::thrown(&error);
        assert_eq!(
            coded.error_info,
            Some(json!({"name": error.name, "code": "EFULL"}))
        );
        assert_eq!(
            ToolOutcome::thrown(&JsError::error("")).text,
            "Error: tool call failed"
        );
    }

    #[test]
    fn an_interrupted_call_keeps_only_its_additional_contexts() {
        let ran = ToolOutcome {
            text: "done".into(),
            error_info: Some(json!({"name": "Error", "code": "X"})),
            additional_contexts: vec!["ctx".into()],
            concludes_turn: true,
            ..ToolOutcome::default()
        };
        let aborted = aborted_while_running(ran);
        assert_eq!(
            aborted,
            ToolOutcome {
                text: "Error: tool call aborted".into(),
                is_error: true,
                additional_contexts: vec!["ctx".into()],
                ..ToolOutcome::default()
            }
        );
        assert!(skipped_before_dispatch().additional_contexts.is_empty());
    }

    #[test]
    fn the_abort_code_takes_precedence_over_the_thrown_error() {
        let info = json!({"name": "Error", "code": "X"});
        let message = json!({"id": "msg-1"});
        let aborted = tool_result_data(1, 2, message.clone(), Some("ABORTED"), Some(&info));
        assert_eq!(
            aborted["error"],
            json!({"name": "AbortError", "code": "ABORTED"})
        );
        assert_eq!(
            tool_result_data(1, 2, message.clone(), None, Some(&info))["error"],
            info
        );
        let clean = tool_result_data(1, 2, message, None, None);
        assert_eq!(
            clean,
            json!({"turn": 1, "step": 2, "message": {"id": "msg-1"}})
        );
    }

    #[test]
    fn a_result_message_cites_its_call() {
        let outcome = ToolOutcome {
            text: "ok".into(),
            ..ToolOutcome::default()
        };
        assert_eq!(
            tool_result_message("call-1", &outcome, "msg-7".into()),
            json!({
                "source": {"kind": "tool", "callId": "call-1"},
                "content": [{"type": "tool-result", "toolCallId": "call-1", "content": [{"type": "text", "text": "ok"}], "isError": false}],
                "role": "user",
                "id": "msg-7",
            })
        );
    }
}
