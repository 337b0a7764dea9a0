//! The event kinds of the session log and of the agent's live events, each
//! named once. Code compares and writes these constants; the strings
//! themselves appear only here, where the log's JSON `type` gets its words
//! (the tidy test in `harness/cli/tests/it/tidy.rs` keeps it so).
//!
//! A session also logs kinds it did not invent (a direct `append` of any
//! `custom/...` type), so a kind stays a string in [`super::Event`]; these
//! are the ones dsh and the loop give meaning to.

/// A user message: a prompt, a steer, an injection, a context snapshot.
pub const USER_MESSAGE: &str = "user/message";
/// An assistant message, derived from a step's chunks.
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
/// One streamed chunk of an attempt.
pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
/// A tool call the loop is about to run.
pub const TOOL_CALL: &str = "tool/call";
/// A tool's result.
pub const TOOL_RESULT: &str = "tool/result";
/// A turn begins.
pub const TURN_START: &str = "turn/start";
/// A turn ends, with its reason.
pub const TURN_END: &str = "turn/end";
/// A step (one provider call and its tools) begins.
pub const STEP_START: &str = "step/start";
/// A step ends.
pub const STEP_END: &str = "step/end";
/// The request header in force: initial, or a change (07 H9).
pub const REQUEST_HEADER: &str = "request/header";
/// The request's runtime context (06).
pub const REQUEST_CONTEXT: &str = "request/context";
/// The end of a seeded history.
pub const SESSION_END_SEED: &str = "session/end-seed";
/// A header delta: a kind dsh's session refuses in a seed or an append.
pub const REQUEST_HEADER_DELTA: &str = "request/header-delta";
/// A change of the agent's inbox: an item queued, claimed or discarded.
pub const AGENT_INBOX_SPLICED: &str = "agent/inbox/spliced";
/// Live, not logged: the agent's status changed.
pub const AGENT_STATUS: &str = "agent/status";
/// Live, not logged: an agent error.
pub const AGENT_ERROR: &str = "agent/error";
/// Live, not logged: a warning the logger received.
pub const LOGGER_WARN: &str = "logger/warn";

/// Every kind above, for checks that a name is one of them.
pub const ALL: &[&str] = &[
    USER_MESSAGE,
    ASSISTANT_MESSAGE,
    ASSISTANT_CHUNK,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_START,
    TURN_END,
    STEP_START,
    STEP_END,
    REQUEST_HEADER,
    REQUEST_CONTEXT,
    SESSION_END_SEED,
    REQUEST_HEADER_DELTA,
    AGENT_INBOX_SPLICED,
    AGENT_STATUS,
    AGENT_ERROR,
    LOGGER_WARN,
];
