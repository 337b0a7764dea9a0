//! The context plugins of spec 10 as `agent/pre-step` listeners.
//!
//! Upstream ships four opt-in packages that add sourced `user/message`s to a
//! step through the pre-step waterfall (time, tmux, `AGENTS.md` files,
//! references to other sessions). Their placement rules interact (10 P1, §6),
//! so the harness runs real implementations of all four on the real loop,
//! with only their outside inputs replaced by scenario data: the
//! [`SharedWorld`] (a fake file system, the tmux query result, other
//! sessions' surfaces) and the virtual clock.

pub mod agent_instructions;
pub mod base64url;
pub mod instructions_render;
pub mod session_reference;
pub mod time_context;
pub mod tmux_context;

use std::future::Future;
use std::rc::Rc;

use serde_json::{Value, json};

use crate::listeners::{Continuation, Decision, LocalFuture, PreStepPayload};
pub use crate::plugin_config as config;
pub use crate::plugin_config::*;
pub use crate::plugin_world::{FakeFile, FakeFs, SharedWorld, Stat, World};
pub use crate::posix_path;
use crate::{Agent, Ids, user_message};
use dshc_model::JsError;
use dshc_model::js::{is_safe_integer, number_to_string};
use dshc_model::session::event_kind;
use dshc_model::session::{Clock, Event};

/// The default registration order (10 §6: the prepend ones time → tmux →
/// session-reference).
const DEFAULT_ORDER: [PluginName; 4] = [
    PluginName::AgentInstructions,
    PluginName::TimeContext,
    PluginName::TmuxContext,
    PluginName::SessionReference,
];

fn configured(spec: &PluginsConfig, name: PluginName) -> bool {
    match name {
        PluginName::TimeContext => spec.time_context.is_some(),
        PluginName::TmuxContext => spec.tmux_context.is_some(),
        PluginName::AgentInstructions => spec.agent_instructions.is_some(),
        PluginName::SessionReference => spec.session_reference.is_some(),
    }
}

fn registration_order(spec: &PluginsConfig) -> Result<Vec<PluginName>, JsError> {
    let mut order = Vec::new();
    for name in &spec.order {
        if !configured(spec, *name) {
            return Err(JsError::error(format!(
                "plugins.order names {name:?}, which is not configured"
            )));
        }
        if !order.contains(name) {
            order.push(*name);
        }
    }
    for name in DEFAULT_ORDER {
        if configured(spec, name) && !order.contains(&name) {
            order.push(name);
        }
    }
    Ok(order)
}

/// Register the configured plugins on a new agent, in registration order.
/// A plugin that rejects its config fails here (a setup failure).
pub fn install(agent: &Agent, spec: &PluginsConfig, clock: &Clock) -> Result<(), JsError> {
    let world = agent.context().plugin_world.clone();
    world.init(spec);
    let disposed = world.with(|world| world.disposed.clone());
    for name in registration_order(spec)? {
        if disposed.contains(&name) {
            continue;
        }
        match name {
            PluginName::TimeContext => {
                if let Some(config) = &spec.time_context {
                    time_context::install(agent, config, clock.clone())?;
                }
            }
            PluginName::TmuxContext => {
                if let Some(config) = &spec.tmux_context {
                    tmux_context::install(agent, config, clock.clone())?;
                }
            }
            PluginName::AgentInstructions => {
                if let Some(config) = &spec.agent_instructions {
                    agent_instructions::install(agent, config)?;
                }
            }
            PluginName::SessionReference => {
                if let Some(config) = &spec.session_reference {
                    session_reference::install(agent, config)?;
                }
            }
        }
    }
    Ok(())
}

/// Dispose plugin `name`, as disposing its fiber does upstream: its
/// listeners leave every agent of `agents` (the run's live ones), and no
/// agent created later installs it. Its messages already logged stay.
pub fn dispose<'a>(agents: impl IntoIterator<Item = &'a Agent>, name: PluginName) {
    for agent in agents {
        agent.listeners().pre_step.remove(listener_id(name));
        agent.context().plugin_world.with_mut(|world| {
            world.disposed.insert(name);
        });
    }
}

/// Whether plugin `name` was disposed in this run.
fn is_disposed(agent: &Agent, name: PluginName) -> bool {
    agent
        .context()
        .plugin_world
        .with(|world| world.disposed.contains(&name))
}

/// Change a plugin's outside inputs.
pub fn change_input(agent: &Agent, change: &InputChange) {
    let world = &agent.context().plugin_world;
    world.with_mut(|world| match change {
        InputChange::Tmux(query) => world.tmux = Some(query.clone()),
        InputChange::WriteFile { path, content } => world.fs.write(path, content),
        InputChange::RemoveFile(path) => world.fs.remove(path),
        InputChange::SetSession { id, session } => {
            world.sessions.insert(id.clone(), session.clone());
        }
    });
}

// ---------------------------------------------------------------------------
// Shared pieces.

/// Listener ids of the plugins (distinct from scripted listeners' hashes).
const LISTENER_BASE: u64 = 0x706c_7567_696e_0000;

/// The id of plugin `name`'s pre-step listener.
fn listener_id(name: PluginName) -> u64 {
    LISTENER_BASE
        + match name {
            PluginName::TimeContext => 1,
            PluginName::TmuxContext => 2,
            PluginName::AgentInstructions => 3,
            PluginName::SessionReference => 4,
        }
}

/// Register plugin `name`'s pre-step listener, whose body gets a strong
/// agent handle.
fn on_pre_step<F, Fut>(agent: &Agent, name: PluginName, prepend: bool, body: F)
where
    F: Fn(Agent, Rc<PreStepPayload>, Continuation<PreStepPayload, Decision>) -> Fut + 'static,
    Fut: Future<Output = Result<Decision, JsError>> + 'static,
{
    let weak = agent.downgrade();
    let body = Rc::new(body);
    agent.listeners().pre_step.on(
        listener_id(name),
        prepend,
        Rc::new(
            move |payload: Rc<PreStepPayload>,
                  next: Continuation<PreStepPayload, Decision>|
                  -> LocalFuture<Result<Decision, JsError>> {
                let Some(agent) = weak.upgrade() else {
                    return next.call();
                };
                let body = body.clone();
                Box::pin(async move { body(agent, payload, next).await })
            },
        ),
    );
}

/// `createUserMessage({content: [{type: 'text', text}], source})`.
fn text_message(ids: &Ids, text: &str, source: Value) -> Value {
    user_message(ids, json!([{"type": "text", "text": text}]), source)
}

/// `{kind: 'plugin', plugin, form: 'snapshot', sections: [{name: plugin, text}]}`.
fn snapshot_source(plugin: &str, text: &str) -> Value {
    json!({"kind": "plugin", "plugin": plugin, "form": "snapshot", "sections": [{"name": plugin, "text": text}]})
}

/// Whether an event is a `user/message` this plugin injected.
fn is_plugin_message(event: &Event, plugin: &str) -> bool {
    event.kind == event_kind::USER_MESSAGE
        && event.data["source"]["kind"] == "plugin"
        && event.data["source"]["plugin"] == plugin
}

/// The latest `user/message` of this plugin in the raw log (shadowed ones
/// included).
fn latest_plugin_message<'a>(events: &'a [Event], plugin: &str) -> Option<&'a Event> {
    events.iter().rev().find(|e| is_plugin_message(e, plugin))
}

/// The load-time refresh-interval check shared by time and tmux:
/// `<plugin>: refreshIntervalMs must be a non-negative safe integer, got <v>`.
fn refresh_interval(plugin: &str, value: Option<f64>) -> Result<Option<u64>, JsError> {
    match value {
        None => Ok(None),
        Some(v) if is_safe_integer(v) && v >= 0.0 => Ok(Some(v as u64)),
        Some(v) => Err(JsError::type_error(format!(
            "{plugin}: refreshIntervalMs must be a non-negative safe integer, got {}",
            number_to_string(v)
        ))),
    }
}

/// Whether the latest injection at `last` is recent enough to skip: not in
/// the future and less than `interval` old (`interval` > 0).
fn within_interval(interval: Option<u64>, last: Option<u64>, now: u64) -> bool {
    match (interval, last) {
        (Some(interval), Some(last)) if interval > 0 => now >= last && now - last < interval,
        _ => false,
    }
}

/// Record a plugin's `ctx.logger.warn` as a live event.
fn warn(agent: &Agent, plugin: &str, message: String) {
    agent.context().live_events.borrow_mut().push(json!({
        "type": event_kind::LOGGER_WARN,
        "agent": agent.session().id(),
        "data": {"plugin": plugin, "message": message},
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_interval_validation() {
        assert_eq!(refresh_interval("time-context", None), Ok(None));
        assert_eq!(refresh_interval("time-context", Some(0.0)), Ok(Some(0)));
        let error = refresh_interval("tmux-context", Some(2.5)).expect_err("fractional");
        assert_eq!(error.name, "TypeError");
        assert_eq!(
            error.message,
            "tmux-context: refreshIntervalMs must be a non-negative safe integer, got 2.5"
        );
        assert!(refresh_interval("x", Some(9_007_199_254_740_992.0)).is_err());
        assert!(refresh_interval("x", Some(-0.0)).is_ok());
    }

    #[test]
    fn interval_floor() {
        assert!(within_interval(Some(60_000), Some(1_000), 11_000));
        assert!(!within_interval(Some(60_000), Some(1_000), 61_000));
        assert!(!within_interval(Some(0), Some(1_000), 1_000));
        assert!(!within_interval(Some(60_000), None, 1_000));
        // A latest injection in the future never suppresses.
        assert!(!within_interval(Some(60_000), Some(5_000), 1_000));
    }

    #[test]
    fn fake_fs_directories_are_implicit() {
        let mut fs = FakeFs::default();
        fs.write("/work/sub/AGENTS.md", "x");
        fs.mkdir("/work/.git");
        assert_eq!(fs.stat("/work"), Some(Stat::Directory));
        assert_eq!(fs.stat("/work/.git"), Some(Stat::Directory));
        assert_eq!(fs.stat("/work/su"), None);
        assert_eq!(
            fs.stat("/work/sub/AGENTS.md"),
            Some(Stat::File {
                version: 1,
                size: 1
            })
        );
        fs.write("/work/sub/AGENTS.md", "yy");
        assert_eq!(
            fs.stat("/work/sub/AGENTS.md"),
            Some(Stat::File {
                version: 2,
                size: 2
            })
        );
    }
}
