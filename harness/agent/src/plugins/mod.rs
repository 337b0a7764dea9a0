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
pub mod config;
pub mod instructions_render;
pub mod posix_path;
pub mod session_reference;
pub mod time_context;
pub mod tmux_context;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::rc::Rc;

use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::listeners::{Continuation, Decision, LocalFuture, PreStepPayload};
use crate::{Agent, Ids, user_message};
pub use config::*;
use dshc_model::JsError;
use dshc_model::js::{is_safe_integer, number_to_string};
use dshc_model::session::event_kind;
use dshc_model::session::{Clock, Event};

/// One file of the fake file system.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeFile {
    /// UTF-8 content.
    pub content: String,
    /// Provider version; unique per write.
    pub version: u64,
}

/// What `stat` reports.
#[derive(Clone, Debug, PartialEq)]
pub enum Stat {
    /// A file with its version and byte size.
    File {
        /// Provider version.
        version: u64,
        /// UTF-8 bytes.
        size: u64,
    },
    /// A directory.
    Directory,
}

/// The `ctx.fs` stand-in: absolute paths to contents, plus directories.
/// A path's parents exist implicitly. Nothing is ever "unavailable".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FakeFs {
    files: BTreeMap<String, FakeFile>,
    dirs: BTreeSet<String>,
    versions: u64,
}

impl FakeFs {
    /// Create or overwrite a file; its version changes.
    pub fn write(&mut self, path: &str, content: &str) {
        self.versions += 1;
        let file = FakeFile {
            content: content.to_string(),
            version: self.versions,
        };
        self.files.insert(posix_path::resolve("/", path), file);
    }

    /// Delete a file (no-op when absent).
    pub fn remove(&mut self, path: &str) {
        self.files.remove(&posix_path::resolve("/", path));
    }

    /// Declare a directory.
    pub fn mkdir(&mut self, path: &str) {
        self.dirs.insert(posix_path::resolve("/", path));
    }

    /// `stat(resolve(path))`; `None` when nothing is there.
    pub fn stat(&self, path: &str) -> Option<Stat> {
        let path = posix_path::resolve("/", path);
        if let Some(file) = self.files.get(&path) {
            return Some(Stat::File {
                version: file.version,
                size: file.content.len() as u64,
            });
        }
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        let is_parent = |p: &String| p.starts_with(&prefix);
        if path == "/" || self.dirs.contains(&path) || self.files.keys().any(is_parent) {
            return Some(Stat::Directory);
        }
        if self.dirs.iter().any(is_parent) {
            return Some(Stat::Directory);
        }
        None
    }

    /// The content of a file.
    pub fn read(&self, path: &str) -> Option<&FakeFile> {
        self.files.get(&posix_path::resolve("/", path))
    }
}

/// Everything the plugins read from outside the session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct World {
    /// agent-instructions' file system.
    pub fs: FakeFs,
    /// What tmux-context's shell query returns.
    pub tmux: Option<TmuxQuery>,
    /// Other sessions, for session-reference.
    pub sessions: IndexMap<String, ReferencedSession>,
}

/// The [`World`] shared by every agent of a run (a resumed agent sees the
/// files and panes the previous one left), created from the scenario on the
/// first [`install`].
#[derive(Clone, Default)]
pub struct SharedWorld(Rc<RefCell<Option<World>>>);

impl SharedWorld {
    fn init(&self, spec: &PluginsConfig) {
        let mut slot = self.0.borrow_mut();
        if slot.is_some() {
            return;
        }
        let mut world = World::default();
        if let Some(instructions) = &spec.agent_instructions {
            for (path, content) in &instructions.files {
                world.fs.write(path, content);
            }
            for dir in &instructions.dirs {
                world.fs.mkdir(dir);
            }
        }
        world.tmux = spec.tmux_context.as_ref().and_then(|t| t.query.clone());
        if let Some(references) = &spec.session_reference {
            world.sessions = references.sessions.clone();
        }
        *slot = Some(world);
    }

    /// Read the world.
    pub fn with<T>(&self, read: impl FnOnce(&World) -> T) -> T {
        let slot = self.0.borrow();
        let empty = World::default();
        read(slot.as_ref().unwrap_or(&empty))
    }

    fn with_mut<T>(&self, write: impl FnOnce(&mut World) -> T) -> T {
        let mut slot = self.0.borrow_mut();
        write(slot.get_or_insert_with(World::default))
    }
}

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
    for name in registration_order(spec)? {
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

/// Register a pre-step listener whose body gets a strong agent handle.
fn on_pre_step<F, Fut>(agent: &Agent, id: u64, prepend: bool, body: F)
where
    F: Fn(Agent, Rc<PreStepPayload>, Continuation<PreStepPayload, Decision>) -> Fut + 'static,
    Fut: Future<Output = Result<Decision, JsError>> + 'static,
{
    let weak = agent.downgrade();
    let body = Rc::new(body);
    agent.listeners().pre_step.on(
        LISTENER_BASE + id,
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
