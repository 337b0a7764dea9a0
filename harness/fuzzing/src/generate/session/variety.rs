//! The loop's rarer paths, each behind a swarm feature of its own: the
//! clause print of `dshc sim` showed no session reaching them. The
//! agent-instructions and session-reference plugins (a file of
//! instructions, another session a prompt cites), listeners that decide a
//! turn (a pre-step that rejects, injects or cancels on one call, a
//! turn-stopping one that follows up), answers cut off at `max_tokens`,
//! prompts with a source of their own, and a resume onto another model.

use serde_json::json;

use super::{Generator, listener};
use dshc_scenario::protocol::*;

/// The session the session-reference plugin holds besides the agent's own.
const OTHER_SESSION: &str = "s2";

/// `dsh-session:` and the base64url of `"s2"` (JSON): how a prompt cites it.
const OTHER_SESSION_URI: &str = "dsh-session:InMyIg";

impl Generator {
    /// Configure, as the swarm rolls, agent-instructions (an `AGENTS.md` at
    /// the project root the agent works in) and session-reference (one
    /// other session, of a question and an answer).
    pub(super) fn more_plugins(&mut self, plugins: &mut PluginsSpec) {
        if self.roll("agent_instructions") {
            let spec = json!({
                "max_bytes": 4096,
                "dirs": ["/work/.git"],
                "files": {"/work/AGENTS.md": format!("{}\n", self.words(5))},
            });
            plugins.agent_instructions = serde_json::from_value(spec).ok();
        }
        if self.roll("session_reference") {
            let spec = json!({
                "sessions": {OTHER_SESSION: {"messages": [
                    {"role": "user", "text": self.words(3)},
                    {"role": "assistant", "text": self.words(3)},
                ]}},
            });
            plugins.session_reference = serde_json::from_value(spec).ok();
        }
    }

    /// A prompt's text, citing the other session now and then when the
    /// session-reference plugin holds one.
    pub(super) fn prompt_text(&mut self, turn: u64) -> String {
        let cites = self
            .world
            .plugins
            .as_ref()
            .is_some_and(|plugins| plugins.session_reference.is_some());
        let words = self.words(4);
        if cites && self.rng.percent(50) {
            format!("task {turn}: {words} (see {OTHER_SESSION_URI})")
        } else {
            format!("task {turn}: {words}")
        }
    }

    /// A prompt's source: the user's, now and then with the client's time
    /// zone (which time-context reads), as the swarm rolls.
    pub(super) fn prompt_source(&mut self) -> Option<serde_json::Value> {
        if !self.roll("message_sources") {
            return None;
        }
        let zone = *self.rng.pick(&[
            "Europe/Paris",
            "Asia/Shanghai",
            "America/New_York",
            "Mars/Base",
        ]);
        Some(json!({"kind": "user", "clientTimeZone": zone}))
    }

    /// Listeners that decide a turn, as the swarm rolls: a pre-step one that
    /// rejects, injects a message or cancels on one of its calls, and a
    /// turn-stopping one that follows up once.
    pub(super) fn deciding_listeners(&mut self) -> Vec<Command> {
        let mut steps = Vec::new();
        if !self.roll("deciding_listeners") {
            return steps;
        }
        let calls = Some(vec![1 + self.rng.below(3) as u32]);
        let ops = match self.rng.below(3) {
            0 => vec![PreStepOp::Reject],
            1 => vec![
                PreStepOp::Act(ActOp::Inject(MessageArg::Text(self.words(3)))),
                PreStepOp::Next,
            ],
            _ => vec![
                PreStepOp::Next,
                PreStepOp::Act(ActOp::Cancel(CancelArgs {
                    reason: Some(json!({"kind": "policy"})),
                    keep_inbox: self.rng.percent(50),
                })),
            ],
        };
        steps.push(Command::Loop(LoopCommand::OnPreStep(LoopListenerCommand {
            calls,
            ..listener("decide", self.rng.percent(50), ops)
        })));
        if self.rng.percent(50) {
            let followup = ActOp::Followup(MessageArg::Text(self.words(3)));
            steps.push(Command::Loop(LoopCommand::OnTurnStopping(
                LoopListenerCommand {
                    calls: Some(vec![1]),
                    ..listener("more", false, vec![followup])
                },
            )));
        }
        steps
    }

    /// Between turns, as the swarm rolls: a tool provider whose schema takes
    /// the name reserved for `toolOrder`'s rest entry, so every later
    /// assembly fails (04 T5) and each turn with it, until the provider is
    /// disposed after the next turn.
    pub(super) fn reserved_tool_name(&mut self) -> Option<(Command, Command)> {
        if !self.roll("tool_order_failure") {
            return None;
        }
        let id = self.id("reserved");
        let schema = SchemaSpec {
            name: dshc_model::tool_order::TOOL_ORDER_REST.into(),
            description: None,
            parameters: None,
            extra: None,
            unclonable_symbol: None,
        };
        let register = Command::Assembly(AssemblyCommand::Tools(ToolsCommand {
            id: Some(id.clone()),
            scope: None,
            provider: ProviderSpec::returning(ToolsResultSpec {
                schemas: vec![schema],
                known_names: None,
            }),
        }));
        let dispose = Command::Assembly(AssemblyCommand::Dispose(DisposeCommand { target: id }));
        Some((register, dispose))
    }

    /// A resume onto the other model of the catalog, as the swarm rolls.
    pub(super) fn resume(&mut self) -> ResumeCommand {
        let model = self
            .roll("resume_options")
            .then(|| JsJson(json!("deepseek-v4-pro")));
        ResumeCommand {
            model,
            ..ResumeCommand::default()
        }
    }
}
