//! tmux-context (10 TM1–TM5): a prepend `agent/pre-step` listener that, on
//! the first step of a turn, prepends the agent's tmux location when it
//! changed since the last injection.
//!
//! It exists so the harness can check the step-1-only rule, the interval
//! floor, failure containment and change suppression against the raw log.
//! Stand-in (99 §2): the shell query (`tmux display-message` plus the tty
//! check) is a scripted result in the shared world: a pane, a non-zero exit,
//! or an executor rejection.

use std::rc::Rc;

use super::config::{PluginName, TmuxContextConfig, TmuxPane, TmuxQuery};
use super::{
    latest_plugin_message, on_pre_step, refresh_interval, snapshot_source, text_message, warn,
    within_interval,
};
use crate::Agent;
use crate::listeners::Decision;
use dshc_model::JsError;
use dshc_model::js::quote;
use dshc_model::session::Clock;

/// The plugin's name, also its `source.plugin` and section name.
pub const NAME: &str = "tmux-context";

/// The stable state block compared for suppression.
pub fn render_state(pane: &TmuxPane) -> String {
    format!(
        "session {}, window {} {}, pane {} {}\nwindow active={}, pane active={}, layout {}",
        pane.session,
        pane.window_index,
        quote(&pane.window_name),
        pane.pane_index,
        pane.pane_id,
        pane.window_active,
        pane.pane_active,
        pane.layout
    )
}

/// The full reading, with the volatile turn line first.
pub fn render_reading(pane: &TmuxPane, turn: u64) -> String {
    format!("tmux location (turn {turn}):\n{}", render_state(pane))
}

/// The state block of a reading: the text after its first line (empty when
/// there is no newline).
pub fn state_of_reading(text: &str) -> String {
    text.split_once('\n')
        .map(|(_, state)| state.to_string())
        .unwrap_or_default()
}

/// `queryTmuxLocation`: the pane, or `None` on any failure. Executor
/// rejections are logged as warnings.
fn query(agent: &Agent) -> Option<TmuxPane> {
    let result = agent
        .context()
        .plugin_world
        .with(|world| world.tmux.clone());
    match result {
        Some(TmuxQuery::Pane(pane)) if !pane.pane_id.is_empty() => Some(pane),
        Some(TmuxQuery::Rejected(message)) => {
            warn(
                agent,
                NAME,
                format!("tmux location query failed: {message}; injecting no location this turn"),
            );
            None
        }
        _ => None,
    }
}

/// `apply(ctx, config)`: validate, then register the prepend listener.
pub fn install(agent: &Agent, spec: &TmuxContextConfig, clock: Clock) -> Result<(), JsError> {
    let interval = refresh_interval(NAME, spec.refresh_interval_ms)?;
    let shell = spec.shell;
    let clock = Rc::new(clock);
    on_pre_step(
        agent,
        PluginName::TmuxContext,
        true,
        move |agent, payload, next| {
            let clock = clock.clone();
            async move {
                let decision = next.call().await?;
                let Decision::Enter(messages) = decision else {
                    return Ok(Decision::Reject);
                };
                if payload.signal.is_aborted() || payload.step != 1 || !shell {
                    return Ok(Decision::Enter(messages));
                }
                // `latestInjectedState`: the latest injection whose first block
                // is not text counts as no injection at all.
                let previous = agent.session().with_events(|events| {
                    latest_plugin_message(events, NAME).and_then(|event| {
                        let block = &event.data["content"][0];
                        (block["type"] == "text").then(|| {
                            let text = block["text"].as_str().unwrap_or_default();
                            (state_of_reading(text), event.time)
                        })
                    })
                });
                if within_interval(interval, previous.as_ref().map(|p| p.1), (clock)()) {
                    return Ok(Decision::Enter(messages));
                }
                let Some(pane) = query(&agent) else {
                    return Ok(Decision::Enter(messages));
                };
                let state = render_state(&pane);
                if previous.as_ref().is_some_and(|p| p.0 == state) {
                    return Ok(Decision::Enter(messages));
                }
                let text = render_reading(&pane, payload.turn);
                let message =
                    text_message(&agent.context().ids, &text, snapshot_source(NAME, &text));
                Ok(Decision::Enter(
                    std::iter::once(message).chain(messages).collect(),
                ))
            }
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_text() {
        let pane = TmuxPane {
            session: "main".into(),
            window_index: "1".into(),
            window_name: "edit \"x\"".into(),
            pane_index: "0".into(),
            pane_id: "%3".into(),
            window_active: "1".into(),
            pane_active: "0".into(),
            layout: "b25d,80x24,0,0,3".into(),
        };
        let text = render_reading(&pane, 4);
        assert_eq!(
            text,
            "tmux location (turn 4):\nsession main, window 1 \"edit \\\"x\\\"\", pane 0 %3\nwindow active=1, pane active=0, layout b25d,80x24,0,0,3"
        );
        assert_eq!(state_of_reading(&text), render_state(&pane));
        assert_eq!(state_of_reading("no newline"), "");
    }
}
