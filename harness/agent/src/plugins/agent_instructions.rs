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

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use indexmap::{IndexMap, IndexSet};
use serde_json::{Map, Value, json};

use super::config::AgentInstructionsConfig;
use super::instructions_render::{
    InstructionFile, Rendered, Style, render_baseline, render_context,
};
use super::posix_path::{basename, dirname, is_absolute, join, relative, resolve};
use super::{FakeFs, Stat, on_pre_step, warn};
use crate::listeners::Decision;
use crate::{Agent, user_message};
use dshc_model::JsError;
use dshc_model::inbox::Target;
use dshc_model::session::Event;

/// The plugin's name.
pub const NAME: &str = "agent-instructions";
const USER_GLOBAL_DIRECTORY: &str = "user-global";
const USER_GLOBAL_FILE: &str = "AGENTS.md";
/// The simulated OS home directory (`os.homedir()`).
pub const SIMULATED_HOME: &str = "/home/user";
const FILE_TOUCH_TOOLS: [&str; 3] = ["read", "write", "edit"];

/// Normalized config.
#[derive(Clone, Debug)]
struct Resolved {
    dsh_home: String,
    markers: Vec<String>,
    candidates: Vec<String>,
    local_candidates: Vec<String>,
    max_bytes: u64,
    max_source_bytes: u64,
    fs: bool,
}

fn resolve_candidates(candidates: &Option<Vec<String>>, fallback: &[&str]) -> Vec<String> {
    candidates
        .clone()
        .unwrap_or_else(|| fallback.iter().map(|s| s.to_string()).collect())
        .into_iter()
        .filter(|c| !matches!(c.as_str(), "" | "." | "..") && !c.contains(['/', '\\']))
        .collect()
}

fn resolve_config(spec: &AgentInstructionsConfig) -> Resolved {
    let home = spec
        .dsh_home
        .clone()
        .unwrap_or_else(|| format!("{SIMULATED_HOME}/.dsh"));
    let expanded = if home == "~" {
        SIMULATED_HOME.to_string()
    } else if let Some(rest) = home.strip_prefix("~/") {
        join(SIMULATED_HOME, rest)
    } else {
        home
    };
    Resolved {
        dsh_home: resolve("/", &expanded),
        markers: spec
            .project_root_markers
            .clone()
            .unwrap_or_else(|| vec![".git".into()]),
        candidates: resolve_candidates(
            &spec.instruction_file_candidates,
            &["AGENTS.md", "CLAUDE.md"],
        ),
        local_candidates: resolve_candidates(
            &spec.local_instruction_file_candidates,
            &["AGENTS.local.md", "CLAUDE.local.md"],
        ),
        max_bytes: spec.max_bytes,
        max_source_bytes: spec.max_source_bytes.unwrap_or(1_048_576),
        fs: spec.fs,
    }
}

fn user_global_display(dsh_home: &str) -> String {
    let display = if dsh_home == format!("{SIMULATED_HOME}/.dsh") {
        "~/.dsh"
    } else {
        "$DSH_HOME"
    };
    format!("{display}/{USER_GLOBAL_FILE}")
}

fn scope_for_display(display: &str) -> String {
    if display == "~/.dsh/AGENTS.md" || display == "$DSH_HOME/AGENTS.md" {
        USER_GLOBAL_DIRECTORY.into()
    } else {
        dirname(display)
    }
}

/// `<directory>\0<candidate>`.
fn scope_key(directory: &str, candidate: &str) -> String {
    format!("{directory}\0{candidate}")
}

fn instruction_scope_key(display: &str) -> String {
    scope_key(&scope_for_display(display), &basename(display))
}

fn decode_scope_key(scope: &str) -> (&str, &str) {
    scope.split_once('\0').unwrap_or((scope, ""))
}

/// One reconciliation transition, as the typed source carries it.
#[derive(Clone, Debug, PartialEq)]
struct Change {
    action: String,
    scope: String,
    path: String,
    digest: Option<String>,
}

impl Change {
    fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("action".into(), json!(self.action));
        object.insert("scope".into(), json!(self.scope));
        object.insert("path".into(), json!(self.path));
        if let Some(digest) = &self.digest {
            object.insert("digest".into(), json!(digest));
        }
        Value::Object(object)
    }

    fn is_remove(&self) -> bool {
        self.action == "remove"
    }
}

fn is_workspace_source(source: &Value) -> bool {
    source["kind"] == NAME && source["changes"].is_array()
}

fn is_workspace_context(message: &Value) -> bool {
    message["source"]["kind"] == NAME
}

/// The well-formed changes of a typed source.
fn source_changes(source: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    for value in source["changes"].as_array().into_iter().flatten() {
        let Some(record) = value.as_object() else {
            continue;
        };
        let action = record.get("action").and_then(Value::as_str);
        if !matches!(action, Some("set" | "replace" | "remove")) {
            continue;
        }
        let (Some(scope), Some(path)) = (
            record.get("scope").and_then(Value::as_str),
            record.get("path").and_then(Value::as_str),
        ) else {
            continue;
        };
        let digest = match record.get("digest") {
            None => None,
            Some(Value::String(digest)) => Some(digest.clone()),
            Some(_) => continue,
        };
        changes.push(Change {
            action: action.unwrap_or_default().into(),
            scope: scope.into(),
            path: path.into(),
            digest,
        });
    }
    changes
}

fn same_payload(left: &Value, right: &Value) -> bool {
    left["content"] == right["content"] && left["source"] == right["source"]
}

/// Metadata cached per scope to skip re-reading unchanged files.
#[derive(Clone, Debug, PartialEq)]
struct VersionState {
    path: String,
    version: u64,
    digest: String,
    trimmed_digest: String,
}

/// A file found by discovery, before reading.
#[derive(Clone, Debug)]
struct Probed {
    absolute_path: String,
    display_path: String,
    version: u64,
    size: u64,
}

/// A file read.
#[derive(Clone, Debug)]
struct Loaded {
    file: InstructionFile,
    version: u64,
}

fn trimmed_digest(content: &str) -> String {
    sha1_hex(content.trim().as_bytes())
}

fn find_project_root(fs: &FakeFs, cwd: &str, markers: &[String]) -> String {
    let start = resolve("/", cwd);
    let mut current = start.clone();
    loop {
        if markers
            .iter()
            .any(|marker| fs.stat(&join(&current, marker)).is_some())
        {
            return current;
        }
        let parent = dirname(&current);
        if parent == current {
            return start;
        }
        current = parent;
    }
}

/// Directories from `root` down to `cwd`, inclusive.
fn ancestor_chain(root: &str, cwd: &str) -> Vec<String> {
    let mut chain = Vec::new();
    let mut current = resolve("/", cwd);
    let root = resolve("/", root);
    while current != root {
        chain.push(current.clone());
        let parent = dirname(&current);
        if parent == current {
            break;
        }
        current = parent;
    }
    chain.push(root);
    chain.reverse();
    chain
}

/// Directories below `root` crossed on the way to a touched file.
fn descendant_dirs_between(root: &str, touched: &str) -> Vec<String> {
    let root = resolve("/", root);
    let target = if is_absolute(touched) {
        resolve("/", touched)
    } else {
        resolve(&root, touched)
    };
    let target_dir = dirname(&target);
    let rel = relative(&root, &target_dir);
    if rel.is_empty() || rel.starts_with("..") || is_absolute(&rel) {
        return Vec::new();
    }
    ancestor_chain(&root, &target_dir).split_off(1)
}

fn relative_scope(project_root: &str, dir: &str) -> String {
    let scope = relative(project_root, dir);
    if scope.is_empty() { ".".into() } else { scope }
}

fn probe_file(fs: &FakeFs, absolute_path: &str, display_path: String) -> Option<Probed> {
    match fs.stat(absolute_path)? {
        Stat::File { version, size } => Some(Probed {
            absolute_path: absolute_path.to_string(),
            display_path,
            version,
            size,
        }),
        Stat::Directory => None,
    }
}

fn read_bounded(fs: &FakeFs, probed: &Probed, max_source_bytes: u64) -> Option<Loaded> {
    if probed.size > max_source_bytes {
        return None;
    }
    let file = fs.read(&probed.absolute_path)?;
    if file.content.len() as u64 > max_source_bytes {
        return None;
    }
    Some(Loaded {
        file: InstructionFile {
            absolute_path: probed.absolute_path.clone(),
            display_path: probed.display_path.clone(),
            content: file.content.clone(),
        },
        version: probed.version,
    })
}

/// The baseline as loaded: its rendering, every file read, and the files
/// the rendering represents.
struct BaselineSet {
    rendered: Rendered,
    observed: Vec<Loaded>,
    included: Vec<Loaded>,
}

/// Baseline transitions and version states keyed by scope.
fn baseline_state(files: &[Loaded]) -> (IndexMap<String, Change>, IndexMap<String, VersionState>) {
    let mut changes = IndexMap::new();
    let mut versions = IndexMap::new();
    for loaded in files {
        let digest = sha1_hex(loaded.file.content.as_bytes());
        let scope = instruction_scope_key(&loaded.file.display_path);
        changes.insert(
            scope.clone(),
            Change {
                action: "set".into(),
                scope: scope.clone(),
                path: loaded.file.display_path.clone(),
                digest: Some(digest.clone()),
            },
        );
        versions.insert(
            scope,
            VersionState {
                path: loaded.file.display_path.clone(),
                version: loaded.version,
                digest,
                trimmed_digest: trimmed_digest(&loaded.file.content),
            },
        );
    }
    (changes, versions)
}

struct Item {
    change: Change,
    file: InstructionFile,
}

struct VersionUpdate {
    change: Change,
    state: Option<VersionState>,
}

struct Update {
    text: String,
    changes: Vec<Change>,
    version_updates: Vec<VersionUpdate>,
}

struct ReconcileOptions<'a> {
    authority: &'a [Value],
    scope_messages: &'a [Value],
    include_baseline_scopes: bool,
    excluded_baseline_scopes: Option<&'a IndexSet<String>>,
    touched_paths: &'a [String],
    project_root: &'a str,
}

fn additional_section_text(file: &InstructionFile) -> String {
    let scope = scope_for_display(&file.display_path);
    [
        format!("Additional instructions from: {}", file.display_path),
        String::new(),
        format!(
            "These instructions apply to work under `{scope}`. Use them as guidance when relevant; more specific instructions take precedence. They do not override system, developer, or direct user instructions."
        ),
        String::new(),
        file.content.clone(),
    ]
    .join("\n")
}

fn changed_section_text(change: &Change, file: &InstructionFile) -> String {
    match change.action.as_str() {
        "set" => additional_section_text(file),
        "remove" => format!(
            "Instructions removed: {}\n\nThe previously loaded instructions from this file no longer apply.",
            change.path
        ),
        _ => format!(
            "Updated instructions from: {}\n\nThis file changed after it was loaded. Use the following content instead of the previously loaded instructions from this file.\n\n{}",
            change.path, file.content
        ),
    }
}

/// `renderInstructionChanges`: the batch text and the transitions it kept.
fn render_changes(items: &[Item], max_bytes: u64) -> (String, Vec<Change>) {
    let by_path: BTreeMap<&str, &Item> = items
        .iter()
        .map(|item| (item.file.absolute_path.as_str(), item))
        .collect();
    let section = |file: &InstructionFile| {
        by_path
            .get(file.absolute_path.as_str())
            .map(|item| changed_section_text(&item.change, file))
            .unwrap_or_default()
    };
    let files: Vec<InstructionFile> = items.iter().map(|i| i.file.clone()).collect();
    let rendered = render_context(
        &files,
        max_bytes,
        &Style {
            intro: "",
            section: &section,
        },
    );
    let represented: Vec<&str> = rendered
        .represented
        .iter()
        .map(|f| f.absolute_path.as_str())
        .collect();
    let changes = items
        .iter()
        .filter(|item| represented.contains(&item.file.absolute_path.as_str()))
        .map(|item| item.change.clone())
        .collect();
    (rendered.text, changes)
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

impl Plugin {
    fn identity(&self, cwd: &str, project_root: &str) -> String {
        let r = &self.resolved;
        json!({
            "projectRoot": relative(cwd, project_root),
            "projectRootMarkers": r.markers,
            "maxBytes": r.max_bytes,
            "maxSourceBytes": r.max_source_bytes,
            "instructionFileCandidates": r.candidates,
            "localInstructionFileCandidates": r.local_candidates,
        })
        .to_string()
    }

    fn discover(&self, fs: &FakeFs, cwd: &str, project_root: &str) -> Vec<Probed> {
        let r = &self.resolved;
        let mut files: Vec<Probed> = Vec::new();
        let mut add = |probed: Probed| {
            if !files
                .iter()
                .any(|f| f.absolute_path == probed.absolute_path)
            {
                files.push(probed);
            }
        };
        let user_global = join(&r.dsh_home, USER_GLOBAL_FILE);
        if let Some(probed) = probe_file(fs, &user_global, user_global_display(&r.dsh_home)) {
            add(probed);
        }
        for dir in ancestor_chain(project_root, cwd) {
            for candidates in [&r.candidates, &r.local_candidates] {
                for candidate in candidates {
                    let path = join(&dir, candidate);
                    if let Some(probed) = probe_file(fs, &path, relative(project_root, &path)) {
                        add(probed);
                    }
                }
            }
        }
        files
    }

    /// `loadBaselineInstructionSet`.
    fn load_baseline(
        &self,
        fs: &FakeFs,
        cwd: &str,
        project_root: &str,
        replace: bool,
    ) -> Option<BaselineSet> {
        let r = &self.resolved;
        if r.max_bytes == 0 || r.max_source_bytes == 0 {
            return None;
        }
        let loaded: Vec<Loaded> = self
            .discover(fs, cwd, project_root)
            .iter()
            .filter_map(|probed| read_bounded(fs, probed, r.max_source_bytes))
            .collect();
        // Trimmed-content duplicates within one directory collapse to the first.
        let mut kept_by_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut deduped: Vec<InstructionFile> = Vec::new();
        for loaded in &loaded {
            let digests = kept_by_dir
                .entry(dirname(&loaded.file.display_path))
                .or_default();
            let digest = trimmed_digest(&loaded.file.content);
            if digests.contains(&digest) {
                continue;
            }
            digests.push(digest);
            deduped.push(loaded.file.clone());
        }
        if deduped.is_empty() && !replace {
            return None;
        }
        let rendered = render_baseline(&deduped, r.max_bytes, replace);
        let included = rendered
            .represented
            .iter()
            .filter_map(|file| {
                loaded
                    .iter()
                    .find(|l| l.file.absolute_path == file.absolute_path)
                    .cloned()
            })
            .collect();
        let observed = if deduped.is_empty() {
            Vec::new()
        } else {
            loaded
        };
        Some(BaselineSet {
            rendered,
            observed,
            included,
        })
    }

    fn probe_scope(&self, fs: &FakeFs, scope: &str, project_root: &str) -> Option<Probed> {
        let (directory, candidate) = decode_scope_key(scope);
        let base = match directory {
            USER_GLOBAL_DIRECTORY => self.resolved.dsh_home.clone(),
            "." => project_root.to_string(),
            other => join(project_root, other),
        };
        let absolute_path = join(&base, candidate);
        let display = if directory == USER_GLOBAL_DIRECTORY {
            user_global_display(&self.resolved.dsh_home)
        } else {
            relative(project_root, &absolute_path)
        };
        probe_file(fs, &absolute_path, display)
    }

    /// `reconcileInstructionContext`: compare the visible state with the
    /// files and render the transitions.
    fn reconcile(&self, agent: &Agent, fs: &FakeFs, options: &ReconcileOptions) -> Option<Update> {
        let session = agent.session();
        let visible: IndexSet<u64> = session.surface_nodes().into_iter().collect();
        let mut effective: IndexMap<String, Change> = IndexMap::new();
        session.with_events(|events| {
            for event in events {
                if event.kind != "user/message" || !is_workspace_source(&event.data["source"]) {
                    continue;
                }
                if visible.contains(&event.seq) {
                    for change in source_changes(&event.data["source"]) {
                        effective.insert(change.scope.clone(), change);
                    }
                }
            }
        });
        for message in options.authority {
            if is_workspace_source(&message["source"]) {
                for change in source_changes(&message["source"]) {
                    effective.insert(change.scope.clone(), change);
                }
            }
        }
        let cwd = session.cwd().unwrap_or_else(|| "/".into());
        let root = options.project_root;
        let r = &self.resolved;
        let add_dir_scopes = |target: &mut IndexSet<String>, directory: &str| {
            for candidate in r.candidates.iter().chain(&r.local_candidates) {
                target.insert(scope_key(directory, candidate));
            }
        };
        let mut baseline_scopes = IndexSet::new();
        baseline_scopes.insert(scope_key(USER_GLOBAL_DIRECTORY, USER_GLOBAL_FILE));
        for dir in ancestor_chain(root, &cwd) {
            add_dir_scopes(&mut baseline_scopes, &relative_scope(root, &dir));
        }
        let mut scopes: IndexSet<String> = IndexSet::new();
        if options.include_baseline_scopes {
            scopes.extend(baseline_scopes.iter().cloned());
        }
        let skip =
            |scope: &str| !options.include_baseline_scopes && baseline_scopes.contains(scope);
        for message in options.scope_messages {
            if !is_workspace_source(&message["source"]) {
                continue;
            }
            for change in source_changes(&message["source"]) {
                if !skip(&change.scope) {
                    scopes.insert(change.scope);
                }
            }
        }
        for scope in effective.keys() {
            if skip(scope) {
                continue;
            }
            let (directory, _) = decode_scope_key(scope);
            if directory == USER_GLOBAL_DIRECTORY {
                scopes.insert(scope_key(USER_GLOBAL_DIRECTORY, USER_GLOBAL_FILE));
            } else {
                add_dir_scopes(&mut scopes, directory);
            }
        }
        for touched in options.touched_paths {
            for dir in descendant_dirs_between(&cwd, touched) {
                add_dir_scopes(&mut scopes, &relative_scope(root, &dir));
            }
        }

        let mut versions = self.versions.borrow_mut();
        let mut seen_paths: IndexSet<String> = IndexSet::new();
        let mut kept_trimmed: BTreeMap<String, IndexSet<String>> = BTreeMap::new();
        let mut items: Vec<Item> = Vec::new();
        let mut updates: Vec<VersionUpdate> = Vec::new();
        let push_removal =
            |items: &mut Vec<Item>, updates: &mut Vec<VersionUpdate>, scope: &str, path: &str| {
                let change = Change {
                    action: "remove".into(),
                    scope: scope.into(),
                    path: path.into(),
                    digest: None,
                };
                items.push(Item {
                    change: change.clone(),
                    file: InstructionFile {
                        absolute_path: format!("removed:{scope}"),
                        display_path: path.into(),
                        content: String::new(),
                    },
                });
                updates.push(VersionUpdate {
                    change,
                    state: None,
                });
            };
        // A scope that yields nothing now: retract what it showed, or forget
        // the version nothing showed.
        let retract = |items: &mut Vec<Item>,
                       updates: &mut Vec<VersionUpdate>,
                       versions: &mut IndexMap<String, VersionState>,
                       scope: &str,
                       previous: Option<&Change>| match previous {
            Some(previous) => push_removal(items, updates, scope, &previous.path),
            None => {
                versions.shift_remove(scope);
            }
        };
        let mut by_directory: IndexMap<String, Vec<String>> = IndexMap::new();
        for scope in &scopes {
            let (directory, _) = decode_scope_key(scope);
            by_directory
                .entry(directory.to_string())
                .or_default()
                .push(scope.clone());
        }
        for (directory, directory_scopes) in &by_directory {
            let mut probed_scopes = Vec::new();
            for scope in directory_scopes {
                let excluded = options
                    .excluded_baseline_scopes
                    .is_some_and(|e| e.contains(scope));
                if excluded && baseline_scopes.contains(scope) {
                    match effective.get(scope) {
                        Some(previous) if !previous.is_remove() => {
                            push_removal(&mut items, &mut updates, scope, &previous.path);
                        }
                        _ => {
                            versions.shift_remove(scope);
                        }
                    }
                } else {
                    probed_scopes.push(scope);
                }
            }
            // The fake file system is never "unavailable", so upstream's
            // per-directory rollback never happens here.
            for scope in probed_scopes {
                let previous = effective.get(scope).filter(|p| !p.is_remove());
                let Some(probed) = self.probe_scope(fs, scope, root) else {
                    retract(&mut items, &mut updates, &mut versions, scope, previous);
                    continue;
                };
                if !seen_paths.insert(probed.absolute_path.clone()) {
                    continue;
                }
                let mut register_trimmed = |digest: &str| {
                    !kept_trimmed
                        .entry(directory.clone())
                        .or_default()
                        .insert(digest.to_string())
                };
                if let (Some(cached), Some(previous)) = (versions.get(scope), previous)
                    && cached.path == probed.display_path
                    && cached.version == probed.version
                    && previous.path == cached.path
                    && previous.digest.as_deref() == Some(cached.digest.as_str())
                {
                    if register_trimmed(&cached.trimmed_digest.clone()) {
                        push_removal(&mut items, &mut updates, scope, &previous.path);
                    }
                    continue;
                }
                let Some(loaded) = read_bounded(fs, &probed, r.max_source_bytes) else {
                    continue;
                };
                let digest = sha1_hex(loaded.file.content.as_bytes());
                let trimmed = trimmed_digest(&loaded.file.content);
                if register_trimmed(&trimmed) {
                    retract(&mut items, &mut updates, &mut versions, scope, previous);
                    continue;
                }
                let next_version = VersionState {
                    path: loaded.file.display_path.clone(),
                    version: probed.version,
                    digest: digest.clone(),
                    trimmed_digest: trimmed,
                };
                if let Some(previous) = previous
                    && previous.path == loaded.file.display_path
                    && previous.digest.as_deref() == Some(digest.as_str())
                {
                    versions.insert(scope.clone(), next_version);
                    continue;
                }
                let change = Change {
                    action: if previous.is_none() { "set" } else { "replace" }.into(),
                    scope: scope.clone(),
                    path: loaded.file.display_path.clone(),
                    digest: Some(digest),
                };
                items.push(Item {
                    change: change.clone(),
                    file: loaded.file,
                });
                updates.push(VersionUpdate {
                    change,
                    state: Some(next_version),
                });
            }
        }
        if items.is_empty() {
            return None;
        }
        let (text, changes) = render_changes(&items, r.max_bytes);
        if text.is_empty() || changes.is_empty() {
            return None;
        }
        let version_updates = updates
            .into_iter()
            .filter(|u| changes.contains(&u.change))
            .collect();
        Some(Update {
            text,
            changes,
            version_updates,
        })
    }

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

    fn compose_with(
        &self,
        agent: &Agent,
        fs: &FakeFs,
        claimed: &[Value],
        pending: &[Value],
        touched: &[String],
    ) -> Option<Value> {
        let session = agent.session();
        let mut content: Vec<Value> = Vec::new();
        let mut changes: Vec<Value> = Vec::new();
        let mut desired_baseline = false;
        let mut authority: Vec<Value> = claimed.to_vec();
        let cwd = session.cwd().unwrap_or_else(|| "/".into());
        let project_root = find_project_root(fs, &cwd, &self.resolved.markers);
        let identity = self.identity(&cwd, &project_root);
        let surface = session.surface_nodes();
        let visible_baseline =
            session.with_events(|events| visible_baseline_source(events, &surface, &authority));
        let baseline_present = visible_baseline.is_some();
        let keep_visible = visible_baseline
            .as_ref()
            .is_some_and(|source| source["baselineIdentity"] == identity.as_str());
        let prepared = self.preparation.borrow().clone();
        let mut excluded = prepared
            .filter(|p| keep_visible && p.identity == identity)
            .map(|p| p.excluded_scopes);
        let mut next_preparation = None;
        if !baseline_present || !keep_visible || excluded.is_none() {
            let replace = baseline_present && !keep_visible;
            let instructions = self.load_baseline(fs, &cwd, &project_root, replace);
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
            excluded = Some(excluded_scopes.clone());
            next_preparation = Some(Preparation {
                identity: identity.clone(),
                excluded_scopes,
            });
            {
                let mut versions = self.versions.borrow_mut();
                for (scope, state) in baseline_versions {
                    versions.insert(scope, state);
                }
            }
            if !keep_visible
                && let Some(instructions) = &instructions
                && !instructions.rendered.text.is_empty()
            {
                let block = json!({"type": "text", "text": instructions.rendered.text});
                content.push(block.clone());
                let mut baseline_json: Vec<Value> = Vec::new();
                if replace && let Some(visible) = &visible_baseline {
                    for change in visible["changes"].as_array().into_iter().flatten() {
                        let scope = change["scope"].as_str().unwrap_or_default();
                        if change["action"] == "remove" || baseline_changes.contains_key(scope) {
                            continue;
                        }
                        baseline_json.push(json!({"action": "remove", "scope": change["scope"], "path": change["path"]}));
                    }
                }
                baseline_json.extend(baseline_changes.values().map(Change::to_json));
                changes.extend(baseline_json.iter().cloned());
                authority.push(json!({
                    "content": [block],
                    "source": {"kind": NAME, "form": "instructions", "baseline": true, "baselineIdentity": identity, "changes": baseline_json},
                    "role": "user",
                }));
                desired_baseline = true;
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
        if let Some(update) = self.reconcile(agent, fs, &options) {
            content.push(json!({"type": "text", "text": update.text}));
            changes.extend(update.changes.iter().map(Change::to_json));
            let mut versions = self.versions.borrow_mut();
            for version_update in update.version_updates {
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
        if let Some(preparation) = next_preparation {
            *self.preparation.borrow_mut() = Some(preparation);
        }
        if content.is_empty() {
            return None;
        }
        let mut source = Map::new();
        source.insert("kind".into(), json!(NAME));
        source.insert("form".into(), json!("instructions"));
        if desired_baseline {
            source.insert("baseline".into(), json!(true));
            source.insert("baselineIdentity".into(), json!(identity));
        }
        source.insert("changes".into(), Value::Array(changes));
        Some(user_message(
            &agent.context().ids,
            Value::Array(content),
            Value::Object(source),
        ))
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
                            e.kind == "user/message" && same_payload(&e.data, desired)
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
        let mut spawn = false;
        {
            let mut tracker = self.tracker.borrow_mut();
            match event.kind.as_str() {
                "step/start" => tracker.step_open = true,
                "turn/end" => tracker.step_open = false,
                "step/end" => {
                    tracker.step_open = false;
                    let staged: Vec<String> = tracker.staged.drain(..).collect();
                    spawn = !staged.is_empty();
                    tracker.queue.extend(staged);
                }
                "tool/call" => {
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
                "tool/result" => {
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
        (event.kind == "user/message" && is_baseline(&event.data["source"]))
            .then(|| event.data["source"].clone())
    })
}

/// `apply(ctx, config)`: the pre-step listener and the event observer.
pub fn install(agent: &Agent, spec: &AgentInstructionsConfig) -> Result<(), JsError> {
    let step_open = agent.session().with_events(|events| {
        events.iter().fold(false, |open, e| match e.kind.as_str() {
            "step/start" => true,
            "step/end" | "turn/end" => false,
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
    on_pre_step(agent, 3, false, move |agent, payload, next| {
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
    });
    Ok(())
}

/// `createHash('sha1').update(data).digest('hex')`.
fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_keys_and_display_paths() {
        assert_eq!(instruction_scope_key("AGENTS.md"), ".\0AGENTS.md");
        assert_eq!(
            instruction_scope_key("sub/AGENTS.local.md"),
            "sub\0AGENTS.local.md"
        );
        assert_eq!(
            instruction_scope_key("~/.dsh/AGENTS.md"),
            "user-global\0AGENTS.md"
        );
        assert_eq!(user_global_display("/home/user/.dsh"), "~/.dsh/AGENTS.md");
        assert_eq!(user_global_display("/opt/dsh"), "$DSH_HOME/AGENTS.md");
    }

    #[test]
    fn discovery_helpers() {
        let mut fs = FakeFs::default();
        fs.mkdir("/repo/.git");
        assert_eq!(
            find_project_root(&fs, "/repo/a/b", &[".git".into()]),
            "/repo"
        );
        assert_eq!(find_project_root(&fs, "/other", &[".git".into()]), "/other");
        assert_eq!(
            ancestor_chain("/repo", "/repo/a/b"),
            vec!["/repo", "/repo/a", "/repo/a/b"]
        );
        assert_eq!(
            descendant_dirs_between("/repo", "/repo/a/b/c.rs"),
            vec!["/repo/a", "/repo/a/b"]
        );
        assert!(descendant_dirs_between("/repo", "/repo/c.rs").is_empty());
        assert!(descendant_dirs_between("/repo", "/elsewhere/c.rs").is_empty());
        assert_eq!(descendant_dirs_between("/repo", "a/x.rs"), vec!["/repo/a"]);
    }

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
    fn changes_are_validated_like_upstream() {
        let source = json!({"kind": NAME, "changes": [
            {"action": "set", "scope": "s", "path": "p", "digest": "d"},
            {"action": "bogus", "scope": "s", "path": "p"},
            {"action": "remove", "scope": "s", "path": "p", "digest": 1},
            {"action": "remove", "scope": "t", "path": "q"},
        ]});
        let changes: Vec<Value> = source_changes(&source)
            .iter()
            .map(Change::to_json)
            .collect();
        assert_eq!(
            changes,
            vec![
                json!({"action": "set", "scope": "s", "path": "p", "digest": "d"}),
                json!({"action": "remove", "scope": "t", "path": "q"}),
            ]
        );
    }
}
