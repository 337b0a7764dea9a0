//! Session append hooks (`on_session_append`): a hook on the first agent's
//! session that vetoes one kind of event on one of its appends (or on
//! every one), now and then by appending itself (refused as a reentrant
//! append), now and then recording what it saw first; sometimes disposed
//! again between turns. Each loop event kind comes up, so every append
//! site's failure path is exercised: the inbox's sends, claims and clears,
//! the turn and step boundaries, the request header and context, chunks,
//! messages, tool calls and results.

use super::{Generator, listener, record};
use dshc_model::session::event_kind;
use dshc_scenario::protocol::*;

/// What a generated hook throws; a step error that starts with it is the
/// veto the session was scripted to have, not a bug.
pub(super) const VETO: &str = "vetoed by a session hook";

/// The event kinds a hook may veto: every kind the loop itself appends.
const VETOED: &[&str] = &[
    event_kind::AGENT_INBOX_SPLICED,
    event_kind::TURN_START,
    event_kind::STEP_START,
    event_kind::USER_MESSAGE,
    event_kind::REQUEST_HEADER,
    event_kind::REQUEST_CONTEXT,
    event_kind::ASSISTANT_CHUNK,
    event_kind::ASSISTANT_MESSAGE,
    event_kind::TOOL_CALL,
    event_kind::TOOL_RESULT,
    event_kind::STEP_END,
    event_kind::TURN_END,
];

impl Generator {
    /// The session's append hook, if the swarm keeps one.
    pub(super) fn session_hook(&mut self) -> Option<Command> {
        if !self.roll("session_hooks") {
            return None;
        }
        let kind = *self.rng.pick(VETOED);
        let calls = (!self.rng.percent(10)).then(|| vec![1 + self.rng.below(4) as u32]);
        let mut ops = Vec::new();
        if self.rng.percent(40) {
            ops.push(record(&[RecordField::Event, RecordField::LastEvent]));
        }
        ops.push(match self.rng.below(10) {
            0 => ActOp::Steer(MessageArg::Text("from a hook".into())),
            1 => ActOp::Throw(ThrowArg::Coded {
                message: format!("{VETO}: {kind}"),
                code: "VETOED".into(),
            }),
            _ => ActOp::Throw(ThrowArg::Message(format!("{VETO}: {kind}"))),
        });
        Some(Command::Loop(LoopCommand::OnSessionAppend(
            LoopListenerCommand {
                calls,
                event_types: Some(vec![kind.to_string()]),
                ..listener("hook", self.rng.percent(50), ops)
            },
        )))
    }
}
