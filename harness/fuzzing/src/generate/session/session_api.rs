//! The session API between turns, while the agent is idle: a read of the
//! session, an append of an event that is not on the surface, the pre-step
//! waterfall fired directly, or a compaction through `append` whose range
//! is a step input (`step_refs/1`): the first surface node a read returned.

use serde_json::json;

use super::Generator;
use dshc_model::session::event_kind;
use dshc_scenario::protocol::*;

impl Generator {
    /// One use of the session API while the agent is idle (its commands
    /// start at command `at`): read it, append an event that is not on the
    /// surface, fire the pre-step waterfall, or compact through `append`:
    /// read the surface, then replace its first node with a summary citing
    /// it, the node's seq taken from the read (a step input, `step_refs/1`).
    pub(super) fn session_api(&mut self, at: usize) -> Vec<Command> {
        let read = Command::Loop(LoopCommand::ReadSession(ReadSessionCommand::default()));
        match self.rng.below(4) {
            0 => vec![read],
            1 => vec![Command::Loop(LoopCommand::Append(AppendCommand {
                agent: None,
                kind: "note".into(),
                data: JsJson(json!({"text": self.words(3)})),
                surface_op: None,
                source_event_seqs: None,
            }))],
            2 => vec![Command::Loop(LoopCommand::FirePreStep(
                FirePreStepCommand {
                    agent: None,
                    turn: 1,
                    step: 1,
                    messages: Vec::new(),
                },
            ))],
            _ => {
                let first = step_refs::StepRef {
                    step: at,
                    path: vec![json!("value"), json!("surface"), json!(0)],
                }
                .to_value();
                let summary = json!({
                    "role": "user",
                    "id": self.id("summary"),
                    "source": {"kind": "compaction"},
                    "content": [{"type": "text", "text": self.words(3)}],
                });
                vec![
                    read,
                    Command::Loop(LoopCommand::Append(AppendCommand {
                        agent: None,
                        kind: event_kind::USER_MESSAGE.into(),
                        data: JsJson(summary),
                        surface_op: Some(JsJson(
                            json!({"op": "replace", "start": first, "end": first}),
                        )),
                        source_event_seqs: Some(JsJson(json!([first]))),
                    })),
                ]
            }
        }
    }
}
