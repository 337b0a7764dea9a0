//! agent-instructions (10 AI1–AI4): the `AGENTS.md` loader, a plain
//! `agent/pre-step` listener plus a `session/event` observer.
//!
//! It exists because its placement rules are the subtle part of the
//! pre-step lane: the workspace context goes right after the last claimed
//! message, stays pending in the `next-step` inbox when the step does not
//! happen, is recomposed (not duplicated) at every step, and file touches
//! by `read`/`write`/`edit` tools are projected into the inbox after the
//! durable `step/end`. Discovery (project root, root-to-cwd chain,
//! candidates, user-global file), digests (SHA-1), version caching and
//! reconciliation follow upstream step by step; only the file system is a
//! stand-in (the shared [`super::FakeFs`]: never "unavailable", versions
//! unique per write). Projections queued at `step/end` run in a spawned
//! local task, or inline when the next pre-step listener waits for them,
//! i.e. after that step's claim (upstream's usual order with real I/O).
//!
//! This module holds the listener, the observer, composition and the inbox
//! sync; `discovery` reads the file system, `reconcile` compares what it
//! finds with what the session shows, and `super::instructions_render`
//! writes the texts.

mod discovery;
mod reconcile;

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use indexmap::{IndexMap, IndexSet};
use serde_json::{Map, Value, json};

use super::config::{AgentInstructionsConfig, PluginName};
use super::{FakeFs, on_pre_step, warn};
use crate::listeners::Decision;
use crate::{Agent, user_message};
use discovery::{Resolved, find_project_root, resolve_config};
use dshc_model::JsError;
use dshc_model::inbox::Target;
use dshc_model::session::Event;
use dshc_model::session::event_kind;
use reconcile::{Change, ReconcileOptions, VersionState, VersionUpdate, baseline_state, reconcile};

/// The plugin's name.
pub const NAME: &str = "agent-instructions";
/// The simulated OS home directory (`os.homedir()`).
pub const SIMULATED_HOME: &str = "/home/user";
const FILE_TOUCH_TOOLS: [&str; 3] = ["read", "write", "edit"];

fn is_workspace_context(message: &Value) -> bool {
    message["source"]["kind"] == NAME
}

fn same_payload(left: &Value, right: &Value) -> bool {
    left["content"] == right["content"] && left["source"] == right["source"]
}

#[derive(Clone, Debug)]
struct Preparation {
    identity: String,
    excluded_scopes: IndexSet<String>,
}

/// Touches observed through `session/event`.
#[derive(Default)]
struct Tracker {
    calls: BTreeMap<String, (String, String)>,
    step_open: bool,
    staged: Vec<String>,
    queue: VecDeque<String>,
}

/// The plugin's per-agent state (upstream keys it by session).
struct Plugin {
    resolved: Resolved,
    versions: RefCell<IndexMap<String, VersionState>>,
    preparation: RefCell<Option<Preparation>>,
    tracker: RefCell<Tracker>,
}

fn pending_workspace(agent: &Agent) -> Vec<Value> {
    agent
        .inbox()
        .next_step()
        .iter()
        .filter(|m| is_workspace_context(m))
        .cloned()
        .collect()
}

/// `inbox.remove(id)`: a canceled splice wherever the message is pending.
fn inbox_remove(agent: &Agent, id: &Value) -> Result<(), JsError> {
    inbox_splice_at(agent, id, Vec::new())
}

fn inbox_splice_at(agent: &Agent, id: &Value, inserted: Vec<Value>) -> Result<(), JsError> {
    let location = {
        let inbox = agent.inbox();
        let find = |list: &[Value]| list.iter().position(|m| m["id"] == *id);
        find(&inbox.next_turn())
            .map(|i| (Target::NextTurn, i))
            .or_else(|| find(&inbox.next_step()).map(|i| (Target::NextStep, i)))
    };
    if let Some((target, index)) = location {
        agent.inbox().splice(target, index, 1, inserted)?;
    }
    Ok(())
}

/// A freshly rendered baseline: its text block and its transitions.
struct NewBaseline {
    block: Value,
    changes: Vec<Value>,
}

impl NewBaseline {
    /// As the authority message reconciliation must treat as shown.
    fn authority(&self, identity: &str, id: String) -> Value {
        json!({
            "content": [self.block],
            "source": {"kind": NAME, "form": "instructions", "baseline": true, "baselineIdentity": identity, "changes": self.changes},
            "role": "user",
            "id": id,
        })
    }
}

/// The transitions of a new baseline: when it replaces `replaced`, first a
/// removal of every scope that one set and the new one does not, then the
/// new baseline's own.
fn baseline_changes_json(
    replaced: Option<&Value>,
    baseline: &IndexMap<String, Change>,
) -> Vec<Value> {
    let mut changes: Vec<Value> = Vec::new();
    if let Some(replaced) = replaced {
        for change in replaced["changes"].as_array().into_iter().flatten() {
            let scope = change["scope"].as_str().unwrap_or_default();
            if change["action"] == "remove" || baseline.contains_key(scope) {
                continue;
            }
            changes.push(
                json!({"action": "remove", "scope": change["scope"], "path": change["path"]}),
            );
        }
    }
    changes.extend(baseline.values().map(Change::to_json));
    changes
}

/// The workspace-context message being composed: a baseline block and a
/// change block, each optional, with the transitions they carry.
#[derive(Default)]
struct Composed {
    content: Vec<Value>,
    changes: Vec<Value>,
    /// Whether it carries a new baseline.
    baseline: bool,
}

impl Composed {
    /// The user message, or `None` when there is nothing to show.
    fn into_message(self, agent: &Agent, identity: &str) -> Option<Value> {
        if self.content.is_empty() {
            return None;
        }
        let mut source = Map::new();
        source.insert("kind".into(), json!(NAME));
        source.insert("form".into(), json!("instructions"));
        if self.baseline {
            source.insert("baseline".into(), json!(true));
            source.insert("baselineIdentity".into(), json!(identity));
        }
        source.insert("changes".into(), Value::Array(self.changes));
        Some(user_message(
            &agent.context().ids,
            Value::Array(self.content),
            Value::Object(source),
        ))
    }
}

impl Plugin {
    /// `compose(agent, signal, claimed, pending, touchedPaths)`: the desired
    /// workspace-context message, if any.
    fn compose(
        &self,
        agent: &Agent,
        claimed: &[Value],
        pending: &[Value],
        touched: &[String],
    ) -> Option<Value> {
        let r = &self.resolved;
        if r.max_bytes == 0 || !r.fs {
            return None;
        }
        if touched.is_empty()
            && let Some(first) = pending.first()
        {
            return Some(first.clone());
        }
        let world = agent.context().plugin_world.clone();
        world.with(|world| self.compose_with(agent, &world.fs, claimed, pending, touched))
    }

    /// `compose` over `fs`: reload the baseline when it must be (none
    /// visible, a stale one, or one this plugin did not prepare), then
    /// reconcile the rest; the message carries both parts.
    fn compose_with(
        &self,
        agent: &Agent,
        fs: &FakeFs,
        claimed: &[Value],
        pending: &[Value],
        touched: &[String],
    ) -> Option<Value> {
        let session = agent.session();
        let mut composed = Composed::default();
        let mut authority: Vec<Value> = claimed.to_vec();
        let cwd = session.cwd().unwrap_or_else(|| "/".into());
        let project_root = find_project_root(fs, &cwd, &self.resolved.markers);
        let identity = self.resolved.identity(&cwd, &project_root);
        let surface = session.surface_nodes();
        let visible_baseline =
            session.with_events(|events| visible_baseline_source(events, &surface, &authority));
        let keep_visible = visible_baseline
            .as_ref()
            .is_some_and(|source| source["baselineIdentity"] == identity.as_str());
        let prepared = self.preparation.borrow().clone();
        let mut excluded = prepared
            .filter(|p| keep_visible && p.identity == identity)
            .map(|p| p.excluded_scopes);
        let mut next_preparation = None;
        if visible_baseline.is_none() || !keep_visible || excluded.is_none() {
            let (preparation, baseline) = self.prepare_baseline(
                fs,
                (&cwd, &project_root),
                &identity,
                visible_baseline.as_ref(),
                keep_visible,
            );
            excluded = Some(preparation.excluded_scopes.clone());
            next_preparation = Some(preparation);
            if let Some(baseline) = baseline {
                // Upstream builds the block as a whole user message, keeping
                // only its content, then the authority message: each mints
                // an id, so the ids after them count both.
                let ids = &agent.context().ids;
                let _ = ids.next("msg");
                composed.content.push(baseline.block.clone());
                composed.changes.extend(baseline.changes.iter().cloned());
                authority.push(baseline.authority(&identity, ids.next("msg")));
                composed.baseline = true;
            }
        }
        let options = ReconcileOptions {
            authority: &authority,
            scope_messages: pending,
            include_baseline_scopes: keep_visible,
            excluded_baseline_scopes: if keep_visible {
                excluded.as_ref()
            } else {
                None
            },
            touched_paths: touched,
            project_root: &project_root,
        };
        let update = reconcile(
            &self.resolved,
            &mut self.versions.borrow_mut(),
            session,
            fs,
            &options,
        );
        if let Some(update) = update {
            // Upstream's reconciliation hands back a whole user message (an
            // id minted) of which only the content and changes are kept.
            let _ = agent.context().ids.next("msg");
            composed
                .content
                .push(json!({"type": "text", "text": update.text}));
            composed
                .changes
                .extend(update.changes.iter().map(Change::to_json));
            self.apply_version_updates(update.version_updates);
        }
        if let Some(preparation) = next_preparation {
            *self.preparation.borrow_mut() = Some(preparation);
        }
        composed.into_message(agent, &identity)
    }

    /// `loadBaselineInstructionSet` and what follows from it: the versions
    /// of the files it includes are cached, the scopes it observed but left
    /// out are remembered as excluded, and unless the visible baseline is
    /// kept, a non-empty rendering becomes the new baseline (replacing the
    /// visible one, if any).
    fn prepare_baseline(
        &self,
        fs: &FakeFs,
        (cwd, project_root): (&str, &str),
        identity: &str,
        visible: Option<&Value>,
        keep_visible: bool,
    ) -> (Preparation, Option<NewBaseline>) {
        let replace = visible.is_some() && !keep_visible;
        let instructions = self.resolved.load_baseline(fs, cwd, project_root, replace);
        let included = instructions
            .as_ref()
            .map(|i| i.included.as_slice())
            .unwrap_or_default();
        let observed = instructions
            .as_ref()
            .map(|i| i.observed.as_slice())
            .unwrap_or_default();
        let (baseline_changes, baseline_versions) = baseline_state(included);
        let (observed_changes, _) = baseline_state(observed);
        let excluded_scopes: IndexSet<String> = observed_changes
            .keys()
            .filter(|scope| !baseline_changes.contains_key(*scope))
            .cloned()
            .collect();
        let preparation = Preparation {
            identity: identity.to_string(),
            excluded_scopes,
        };
        {
            let mut versions = self.versions.borrow_mut();
            for (scope, state) in baseline_versions {
                versions.insert(scope, state);
            }
        }
        let baseline = instructions
            .filter(|instructions| !keep_visible && !instructions.rendered.text.is_empty())
            .map(|instructions| NewBaseline {
                block: json!({"type": "text", "text": instructions.rendered.text}),
                changes: baseline_changes_json(visible.filter(|_| replace), &baseline_changes),
            });
        (preparation, baseline)
    }

    /// Record the version states a reconciliation left.
    fn apply_version_updates(&self, updates: Vec<VersionUpdate>) {
        let mut versions = self.versions.borrow_mut();
        for version_update in updates {
            match version_update.state {
                Some(state) => {
                    versions.insert(version_update.change.scope, state);
                }
                None => {
                    versions.shift_remove(&version_update.change.scope);
                }
            }
        }
    }

    /// `syncInbox`: keep exactly one pending copy of `desired` (or none).
    fn sync_inbox(
        &self,
        agent: &Agent,
        claimed: &[Value],
        desired: Option<Value>,
    ) -> Result<(), JsError> {
        let pending = pending_workspace(agent);
        let supplied = desired.as_ref().is_some_and(|desired| {
            claimed.iter().any(|m| same_payload(m, desired)) || {
                let session = agent.session();
                let surface = session.surface_nodes();
                session.with_events(|events| {
                    surface.iter().any(|seq| {
                        events.get(*seq as usize).is_some_and(|e| {
                            e.kind == event_kind::USER_MESSAGE && same_payload(&e.data, desired)
                        })
                    })
                })
            }
        });
        let Some(desired) = desired.filter(|_| !supplied) else {
            for message in &pending {
                inbox_remove(agent, &message["id"])?;
            }
            return Ok(());
        };
        if let Some(reusable) = pending.iter().find(|m| same_payload(m, &desired)) {
            for message in pending.iter().filter(|m| m["id"] != reusable["id"]) {
                inbox_remove(agent, &message["id"])?;
            }
            return Ok(());
        }
        match pending.first() {
            None => {
                agent
                    .inbox()
                    .splice(Target::NextStep, 0, 0, vec![desired])?;
            }
            Some(first) => inbox_splice_at(agent, &first["id"], vec![desired])?,
        }
        for message in pending.iter().skip(1) {
            inbox_remove(agent, &message["id"])?;
        }
        Ok(())
    }

    /// Run the queued touch projections (`composeAndSync` per touch).
    fn drain_projections(&self, agent: &Agent) {
        loop {
            let Some(path) = self.tracker.borrow_mut().queue.pop_front() else {
                return;
            };
            let pending = pending_workspace(agent);
            let desired = self.compose(agent, &[], &pending, std::slice::from_ref(&path));
            if let Err(error) = self.sync_inbox(agent, &[], desired) {
                warn(
                    agent,
                    NAME,
                    format!("workspace instruction refresh failed: {}", error.chain()),
                );
            }
        }
    }

    /// `session/event`: stage touches while a step is open, queue them at
    /// `step/end` (or at once outside a step).
    fn observe(self: &Rc<Self>, agent: &crate::WeakAgent, event: &Event) {
        if agent
            .upgrade()
            .is_none_or(|agent| super::is_disposed(&agent, PluginName::AgentInstructions))
        {
            return;
        }
        let mut spawn = false;
        {
            let mut tracker = self.tracker.borrow_mut();
            match event.kind.as_str() {
                event_kind::STEP_START => tracker.step_open = true,
                event_kind::TURN_END => tracker.step_open = false,
                event_kind::STEP_END => {
                    tracker.step_open = false;
                    let staged: Vec<String> = tracker.staged.drain(..).collect();
                    spawn = !staged.is_empty();
                    tracker.queue.extend(staged);
                }
                event_kind::TOOL_CALL => {
                    let id = event.data["callId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let name = event.data["name"].as_str().unwrap_or_default().to_string();
                    let arguments = event.data["arguments"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    tracker.calls.insert(id, (name, arguments));
                }
                event_kind::TOOL_RESULT => {
                    let message = &event.data["message"];
                    let id = message["source"]["callId"].as_str().unwrap_or_default();
                    let failed = message["content"][0]["isError"] != false;
                    let path = tracker
                        .calls
                        .remove(id)
                        .and_then(|(name, arguments)| touched_path(&name, &arguments));
                    if let Some(path) = path.filter(|_| !failed) {
                        if tracker.step_open {
                            tracker.staged.push(path);
                        } else {
                            tracker.queue.push_back(path);
                            spawn = true;
                        }
                    }
                }
                _ => {}
            }
        }
        if spawn {
            let (plugin, agent) = (self.clone(), agent.clone());
            tokio::task::spawn_local(async move {
                if let Some(agent) = agent.upgrade() {
                    plugin.drain_projections(&agent);
                }
            });
        }
    }
}

/// `filePathFromExecution`: the trimmed `file_path` argument of a
/// first-party file tool.
fn touched_path(name: &str, arguments: &str) -> Option<String> {
    if !FILE_TOUCH_TOOLS.contains(&name) {
        return None;
    }
    let parsed: Value = serde_json::from_str(arguments).ok()?;
    let path = parsed.get("file_path")?.as_str()?.trim();
    (!path.is_empty()).then(|| path.to_string())
}

/// The latest baseline source: among `authority` first, then the surface.
fn visible_baseline_source(events: &[Event], nodes: &[u64], authority: &[Value]) -> Option<Value> {
    let is_baseline = |source: &Value| source["kind"] == NAME && source["baseline"] == true;
    if let Some(message) = authority.iter().rev().find(|m| is_baseline(&m["source"])) {
        return Some(message["source"].clone());
    }
    nodes.iter().rev().find_map(|seq| {
        let event = events.get(*seq as usize)?;
        (event.kind == event_kind::USER_MESSAGE && is_baseline(&event.data["source"]))
            .then(|| event.data["source"].clone())
    })
}

/// `apply(ctx, config)`: the pre-step listener and the event observer.
pub fn install(agent: &Agent, spec: &AgentInstructionsConfig) -> Result<(), JsError> {
    let step_open = agent.session().with_events(|events| {
        events.iter().fold(false, |open, e| match e.kind.as_str() {
            event_kind::STEP_START => true,
            event_kind::STEP_END | event_kind::TURN_END => false,
            _ => open,
        })
    });
    let plugin = Rc::new(Plugin {
        resolved: resolve_config(spec),
        versions: RefCell::new(IndexMap::new()),
        preparation: RefCell::new(None),
        tracker: RefCell::new(Tracker {
            step_open,
            ..Tracker::default()
        }),
    });
    let observer = plugin.clone();
    let weak = agent.downgrade();
    agent.session().subscribe(Rc::new(move |event: &Event| {
        observer.observe(&weak, event);
        Ok(())
    }));
    on_pre_step(
        agent,
        PluginName::AgentInstructions,
        false,
        move |agent, payload, next| {
            let plugin = plugin.clone();
            async move {
                let decision = next.call().await?;
                plugin.drain_projections(&agent);
                let pending = pending_workspace(&agent);
                if payload.signal.is_aborted() {
                    return Err(JsError::abort());
                }
                let desired = plugin.compose(&agent, &payload.messages, &pending, &[]);
                if payload.signal.is_aborted() {
                    return Err(JsError::abort());
                }
                let mut messages = match decision {
                    Decision::Reject => {
                        plugin.sync_inbox(&agent, &payload.messages, desired)?;
                        return Ok(Decision::Reject);
                    }
                    Decision::Enter(messages) if payload.step == 1 && messages.is_empty() => {
                        plugin.sync_inbox(&agent, &payload.messages, desired)?;
                        return Ok(Decision::Enter(messages));
                    }
                    Decision::Enter(messages) => messages,
                };
                for message in &pending {
                    inbox_remove(&agent, &message["id"])?;
                }
                let Some(desired) = desired else {
                    return Ok(Decision::Enter(messages));
                };
                if messages.iter().any(|m| same_payload(m, &desired)) {
                    return Ok(Decision::Enter(messages));
                }
                // `messages.includes(m)` is identity upstream; an unedited claimed
                // message is the same value here.
                let index = messages
                    .iter()
                    .rposition(|m| payload.messages.contains(m))
                    .map_or(0, |i| i + 1);
                messages.insert(index, desired);
                Ok(Decision::Enter(messages))
            }
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_come_from_file_tools_only() {
        assert_eq!(
            touched_path("read", r#"{"file_path":" /w/a.rs "}"#).as_deref(),
            Some("/w/a.rs")
        );
        assert_eq!(touched_path("bash", r#"{"file_path":"/w/a.rs"}"#), None);
        assert_eq!(touched_path("edit", r#"{"file_path":"  "}"#), None);
        assert_eq!(touched_path("write", "not json"), None);
    }

    #[test]
    fn a_replacing_baseline_first_removes_what_it_no_longer_sets() {
        let set = |scope: &str, path: &str| Change {
            action: "set".into(),
            scope: scope.into(),
            path: path.into(),
            digest: Some("d".into()),
        };
        let baseline: IndexMap<String, Change> = [("kept", "AGENTS.md"), ("new", "sub/AGENTS.md")]
            .into_iter()
            .map(|(scope, path)| (scope.to_string(), set(scope, path)))
            .collect();
        let visible = json!({"changes": [
            {"action": "set", "scope": "gone", "path": "old/AGENTS.md", "digest": "x"},
            {"action": "remove", "scope": "removed", "path": "r/AGENTS.md"},
            {"action": "set", "scope": "kept", "path": "AGENTS.md", "digest": "y"},
        ]});
        assert_eq!(
            baseline_changes_json(Some(&visible), &baseline),
            [
                json!({"action": "remove", "scope": "gone", "path": "old/AGENTS.md"}),
                json!({"action": "set", "scope": "kept", "path": "AGENTS.md", "digest": "d"}),
                json!({"action": "set", "scope": "new", "path": "sub/AGENTS.md", "digest": "d"}),
            ]
        );
        // A first baseline replaces nothing.
        assert_eq!(baseline_changes_json(None, &baseline).len(), 2);
    }
}
