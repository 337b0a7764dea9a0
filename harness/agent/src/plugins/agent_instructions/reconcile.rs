//! agent-instructions' reconciliation (10 AI3): the transitions a typed
//! source carries (`set`, `replace`, `remove` per scope), the versions cached
//! per scope, and `reconcileInstructionContext`, which compares the state
//! the session shows with the files and renders what changed.
//!
//! It exists because this comparison is the subtle part of the plugin:
//! which scopes to look at, when a cached version spares a read, when a
//! duplicate or a vanished file retracts what was shown. Each of those
//! rules is one function here.

use std::collections::BTreeMap;

use indexmap::{IndexMap, IndexSet};
use serde_json::{Map, Value, json};

use super::NAME;
use super::discovery::{
    Loaded, Resolved, USER_GLOBAL_DIRECTORY, USER_GLOBAL_FILE, ancestor_chain, decode_scope_key,
    descendant_dirs_between, instruction_scope_key, read_bounded, relative_scope,
    scope_for_display, scope_key, sha1_hex, trimmed_digest,
};
use crate::plugins::FakeFs;
use crate::plugins::instructions_render::{InstructionFile, Style, render_context};
use dshc_model::session::Session;
use dshc_model::session::event_kind;

/// One reconciliation transition, as the typed source carries it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Change {
    pub(super) action: String,
    pub(super) scope: String,
    pub(super) path: String,
    pub(super) digest: Option<String>,
}

impl Change {
    pub(super) fn to_json(&self) -> Value {
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

pub(super) fn is_workspace_source(source: &Value) -> bool {
    source["kind"] == NAME && source["changes"].is_array()
}

/// The well-formed changes of a typed source.
pub(super) fn source_changes(source: &Value) -> Vec<Change> {
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

/// Metadata cached per scope to skip re-reading unchanged files.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct VersionState {
    pub(super) path: String,
    pub(super) version: u64,
    pub(super) digest: String,
    pub(super) trimmed_digest: String,
}

/// Baseline transitions and version states keyed by scope.
pub(super) fn baseline_state(
    files: &[Loaded],
) -> (IndexMap<String, Change>, IndexMap<String, VersionState>) {
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

/// One transition to render, with the file content it shows.
struct Item {
    change: Change,
    file: InstructionFile,
}

/// The version state a transition leaves for its scope (`None`: forgotten).
pub(super) struct VersionUpdate {
    pub(super) change: Change,
    pub(super) state: Option<VersionState>,
}

/// A rendered batch of transitions.
pub(super) struct Update {
    pub(super) text: String,
    pub(super) changes: Vec<Change>,
    pub(super) version_updates: Vec<VersionUpdate>,
}

/// What a reconciliation compares and where it looks.
pub(super) struct ReconcileOptions<'a> {
    pub(super) authority: &'a [Value],
    pub(super) scope_messages: &'a [Value],
    pub(super) include_baseline_scopes: bool,
    pub(super) excluded_baseline_scopes: Option<&'a IndexSet<String>>,
    pub(super) touched_paths: &'a [String],
    pub(super) project_root: &'a str,
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

/// `reconcileInstructionContext`: compare the visible state with the
/// files and render the transitions.
pub(super) fn reconcile(
    resolved: &Resolved,
    versions: &mut IndexMap<String, VersionState>,
    session: &Session,
    fs: &FakeFs,
    options: &ReconcileOptions,
) -> Option<Update> {
    let effective = effective_changes(session, options.authority);
    let cwd = session.cwd().unwrap_or_else(|| "/".into());
    let baseline_scopes = baseline_scopes(resolved, options.project_root, &cwd);
    let scopes = scopes_to_check(resolved, options, &baseline_scopes, &effective, &cwd);
    let mut pass = Pass {
        resolved,
        fs,
        root: options.project_root,
        versions,
        seen_paths: IndexSet::new(),
        kept_trimmed: BTreeMap::new(),
        found: Transitions::default(),
    };
    for (directory, directory_scopes) in &by_directory(&scopes) {
        let mut probed_scopes = Vec::new();
        for scope in directory_scopes {
            let excluded = options
                .excluded_baseline_scopes
                .is_some_and(|e| e.contains(scope));
            if excluded && baseline_scopes.contains(scope) {
                pass.exclude(scope, effective.get(scope));
            } else {
                probed_scopes.push(scope);
            }
        }
        // The fake file system is never "unavailable", so upstream's
        // per-directory rollback never happens here.
        for scope in probed_scopes {
            let previous = effective.get(scope).filter(|p| !p.is_remove());
            pass.check(directory, scope, previous);
        }
    }
    pass.found.render(resolved.max_bytes)
}

/// The transition in force per scope: the visible workspace sources' in
/// log order, then the authority's (the claimed messages and a baseline
/// being composed), later ones replacing earlier ones.
fn effective_changes(session: &Session, authority: &[Value]) -> IndexMap<String, Change> {
    let visible: IndexSet<u64> = session.surface_nodes().into_iter().collect();
    let mut effective: IndexMap<String, Change> = IndexMap::new();
    session.with_events(|events| {
        for event in events {
            if event.kind != event_kind::USER_MESSAGE || !is_workspace_source(&event.data["source"])
            {
                continue;
            }
            if visible.contains(&event.seq) {
                for change in source_changes(&event.data["source"]) {
                    effective.insert(change.scope.clone(), change);
                }
            }
        }
    });
    for message in authority {
        if is_workspace_source(&message["source"]) {
            for change in source_changes(&message["source"]) {
                effective.insert(change.scope.clone(), change);
            }
        }
    }
    effective
}

/// Every candidate's scope in `directory`.
fn add_directory_scopes(resolved: &Resolved, target: &mut IndexSet<String>, directory: &str) {
    for candidate in resolved.candidates.iter().chain(&resolved.local_candidates) {
        target.insert(scope_key(directory, candidate));
    }
}

/// The scopes a baseline covers: the user-global file, then every
/// candidate of every directory from the project root down to `cwd`.
fn baseline_scopes(resolved: &Resolved, root: &str, cwd: &str) -> IndexSet<String> {
    let mut scopes = IndexSet::new();
    scopes.insert(scope_key(USER_GLOBAL_DIRECTORY, USER_GLOBAL_FILE));
    for dir in ancestor_chain(root, cwd) {
        add_directory_scopes(resolved, &mut scopes, &relative_scope(root, &dir));
    }
    scopes
}

/// The scopes to compare with the files, in order: the baseline's when the
/// visible baseline is kept (otherwise the baseline being composed covers
/// them, and they are skipped), those the pending messages name, those in
/// force (for a directory, all its candidates), and all candidates of the
/// directories crossed on the way to a touched file.
fn scopes_to_check(
    resolved: &Resolved,
    options: &ReconcileOptions,
    baseline_scopes: &IndexSet<String>,
    effective: &IndexMap<String, Change>,
    cwd: &str,
) -> IndexSet<String> {
    let root = options.project_root;
    let mut scopes: IndexSet<String> = IndexSet::new();
    if options.include_baseline_scopes {
        scopes.extend(baseline_scopes.iter().cloned());
    }
    let skip = |scope: &str| !options.include_baseline_scopes && baseline_scopes.contains(scope);
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
            add_directory_scopes(resolved, &mut scopes, directory);
        }
    }
    for touched in options.touched_paths {
        for dir in descendant_dirs_between(cwd, touched) {
            add_directory_scopes(resolved, &mut scopes, &relative_scope(root, &dir));
        }
    }
    scopes
}

/// `scopes` grouped by directory, directories and scopes in first-seen
/// order.
fn by_directory(scopes: &IndexSet<String>) -> IndexMap<String, Vec<String>> {
    let mut by_directory: IndexMap<String, Vec<String>> = IndexMap::new();
    for scope in scopes {
        let (directory, _) = decode_scope_key(scope);
        by_directory
            .entry(directory.to_string())
            .or_default()
            .push(scope.clone());
    }
    by_directory
}

/// Record `digest` as kept in `directory`; `true` when it already was (the
/// file duplicates an earlier one there, so it shows nothing).
fn already_kept(
    kept: &mut BTreeMap<String, IndexSet<String>>,
    directory: &str,
    digest: &str,
) -> bool {
    !kept
        .entry(directory.to_string())
        .or_default()
        .insert(digest.to_string())
}

/// The transitions a pass found, with the version states they leave.
#[derive(Default)]
struct Transitions {
    items: Vec<Item>,
    updates: Vec<VersionUpdate>,
}

impl Transitions {
    /// Retract what `scope` showed from `path`.
    fn remove(&mut self, scope: &str, path: &str) {
        let change = Change {
            action: "remove".into(),
            scope: scope.into(),
            path: path.into(),
            digest: None,
        };
        self.items.push(Item {
            change: change.clone(),
            file: InstructionFile {
                absolute_path: format!("removed:{scope}"),
                display_path: path.into(),
                content: String::new(),
            },
        });
        self.updates.push(VersionUpdate {
            change,
            state: None,
        });
    }

    /// Show `file` under `change` (a `set` or `replace`).
    fn show(&mut self, change: Change, file: InstructionFile, state: VersionState) {
        self.items.push(Item {
            change: change.clone(),
            file,
        });
        self.updates.push(VersionUpdate {
            change,
            state: Some(state),
        });
    }

    /// Render the batch within `max_bytes`: only the transitions the
    /// budget kept are reported, with their version updates.
    fn render(self, max_bytes: u64) -> Option<Update> {
        if self.items.is_empty() {
            return None;
        }
        let (text, changes) = render_changes(&self.items, max_bytes);
        if text.is_empty() || changes.is_empty() {
            return None;
        }
        let version_updates = self
            .updates
            .into_iter()
            .filter(|u| changes.contains(&u.change))
            .collect();
        Some(Update {
            text,
            changes,
            version_updates,
        })
    }
}

/// One reconciliation pass over the scopes, directory by directory.
struct Pass<'a> {
    resolved: &'a Resolved,
    fs: &'a FakeFs,
    root: &'a str,
    versions: &'a mut IndexMap<String, VersionState>,
    /// Files already compared: a file is compared under its first scope.
    seen_paths: IndexSet<String>,
    /// Trimmed digests kept, per directory.
    kept_trimmed: BTreeMap<String, IndexSet<String>>,
    found: Transitions,
}

impl Pass<'_> {
    /// An excluded baseline scope: retract what it shows, or forget its
    /// version when it shows nothing.
    fn exclude(&mut self, scope: &str, previous: Option<&Change>) {
        match previous {
            Some(previous) if !previous.is_remove() => self.found.remove(scope, &previous.path),
            _ => {
                self.versions.shift_remove(scope);
            }
        }
    }

    /// A scope that yields nothing now: retract what it showed, or forget
    /// the version nothing showed.
    fn retract(&mut self, scope: &str, previous: Option<&Change>) {
        match previous {
            Some(previous) => self.found.remove(scope, &previous.path),
            None => {
                self.versions.shift_remove(scope);
            }
        }
    }

    /// Compare `scope`'s file with what the session shows for it
    /// (`previous`, never a removal): an unchanged cached version is not
    /// read again; a missing, unreadable or duplicate file retracts; new or
    /// changed content is shown as `set` or `replace`.
    fn check(&mut self, directory: &str, scope: &str, previous: Option<&Change>) {
        let Some(probed) = self.resolved.probe_scope(self.fs, scope, self.root) else {
            self.retract(scope, previous);
            return;
        };
        if !self.seen_paths.insert(probed.absolute_path.clone()) {
            return;
        }
        if let (Some(cached), Some(previous)) = (self.versions.get(scope), previous)
            && cached.path == probed.display_path
            && cached.version == probed.version
            && previous.path == cached.path
            && previous.digest.as_deref() == Some(cached.digest.as_str())
        {
            if already_kept(&mut self.kept_trimmed, directory, &cached.trimmed_digest) {
                self.found.remove(scope, &previous.path);
            }
            return;
        }
        let Some(loaded) = read_bounded(self.fs, &probed, self.resolved.max_source_bytes) else {
            return;
        };
        let digest = sha1_hex(loaded.file.content.as_bytes());
        let trimmed = trimmed_digest(&loaded.file.content);
        if already_kept(&mut self.kept_trimmed, directory, &trimmed) {
            self.retract(scope, previous);
            return;
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
            self.versions.insert(scope.to_string(), next_version);
            return;
        }
        let change = Change {
            action: if previous.is_none() { "set" } else { "replace" }.into(),
            scope: scope.to_string(),
            path: loaded.file.display_path.clone(),
            digest: Some(digest),
        };
        self.found.show(change, loaded.file, next_version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn default_config() -> Resolved {
        super::super::discovery::resolve_config(&crate::plugins::config::AgentInstructionsConfig {
            max_bytes: 10_000,
            max_source_bytes: None,
            project_root_markers: None,
            instruction_file_candidates: None,
            local_instruction_file_candidates: None,
            dsh_home: None,
            fs: true,
            files: IndexMap::new(),
            dirs: Vec::new(),
        })
    }

    fn new_pass<'a>(
        resolved: &'a Resolved,
        fs: &'a FakeFs,
        versions: &'a mut IndexMap<String, VersionState>,
    ) -> Pass<'a> {
        Pass {
            resolved,
            fs,
            root: "/repo",
            versions,
            seen_paths: IndexSet::new(),
            kept_trimmed: BTreeMap::new(),
            found: Transitions::default(),
        }
    }

    fn shown(pass: &Pass) -> Vec<(String, String)> {
        pass.found
            .items
            .iter()
            .map(|item| (item.change.action.clone(), item.change.path.clone()))
            .collect()
    }

    fn previous(path: &str, content: &str) -> Change {
        Change {
            action: "set".into(),
            scope: String::new(),
            path: path.into(),
            digest: Some(sha1_hex(content.as_bytes())),
        }
    }

    #[test]
    fn scopes_are_grouped_by_directory_in_first_seen_order() {
        let scopes: IndexSet<String> = [
            scope_key("sub", "AGENTS.md"),
            scope_key(".", "AGENTS.md"),
            scope_key("sub", "CLAUDE.md"),
        ]
        .into_iter()
        .collect();
        let grouped: Vec<(String, Vec<String>)> = by_directory(&scopes).into_iter().collect();
        assert_eq!(
            grouped,
            [
                (
                    "sub".to_string(),
                    vec![scope_key("sub", "AGENTS.md"), scope_key("sub", "CLAUDE.md")]
                ),
                (".".to_string(), vec![scope_key(".", "AGENTS.md")]),
            ]
        );
    }

    #[test]
    fn a_duplicate_in_its_directory_shows_nothing_and_retracts() {
        let mut fs = FakeFs::default();
        fs.write("/repo/AGENTS.md", "Use tabs.");
        fs.write("/repo/CLAUDE.md", "  Use tabs.\n");
        let (resolved, mut versions) = (default_config(), IndexMap::new());
        let mut pass = new_pass(&resolved, &fs, &mut versions);
        pass.check(".", &scope_key(".", "AGENTS.md"), None);
        pass.check(".", &scope_key(".", "CLAUDE.md"), None);
        assert_eq!(shown(&pass), [("set".into(), "AGENTS.md".into())]);
        // Had the duplicate been shown before, it is now retracted.
        let shown_before = previous("CLAUDE.md", "  Use tabs.\n");
        let (resolved, mut versions) = (default_config(), IndexMap::new());
        let mut pass = new_pass(&resolved, &fs, &mut versions);
        pass.check(".", &scope_key(".", "AGENTS.md"), None);
        pass.check(".", &scope_key(".", "CLAUDE.md"), Some(&shown_before));
        assert_eq!(
            shown(&pass),
            [
                ("set".into(), "AGENTS.md".into()),
                ("remove".into(), "CLAUDE.md".into())
            ]
        );
    }

    #[test]
    fn changed_content_replaces_and_unchanged_content_only_caches() {
        let mut fs = FakeFs::default();
        fs.write("/repo/AGENTS.md", "new");
        let scope = scope_key(".", "AGENTS.md");
        let (resolved, mut versions) = (default_config(), IndexMap::new());
        let mut pass = new_pass(&resolved, &fs, &mut versions);
        pass.check(".", &scope, Some(&previous("AGENTS.md", "old")));
        assert_eq!(shown(&pass), [("replace".into(), "AGENTS.md".into())]);
        let (resolved, mut versions) = (default_config(), IndexMap::new());
        let mut pass = new_pass(&resolved, &fs, &mut versions);
        pass.check(".", &scope, Some(&previous("AGENTS.md", "new")));
        assert!(shown(&pass).is_empty());
        assert_eq!(versions[&scope].digest, sha1_hex(b"new"));
    }

    #[test]
    fn a_cached_version_is_not_read_again() {
        let mut fs = FakeFs::default();
        fs.write("/repo/AGENTS.md", "actual");
        let Some(crate::plugins::Stat::File { version, .. }) = fs.stat("/repo/AGENTS.md") else {
            panic!("written");
        };
        // The cache and the shown transition agree on a digest the file no
        // longer has; with the version unchanged, the file is not read, so
        // nothing is found.
        let shown_before = previous("AGENTS.md", "cached");
        let scope = scope_key(".", "AGENTS.md");
        let mut versions = IndexMap::from([(
            scope.clone(),
            VersionState {
                path: "AGENTS.md".into(),
                version,
                digest: sha1_hex(b"cached"),
                trimmed_digest: trimmed_digest("cached"),
            },
        )]);
        let resolved = default_config();
        let mut pass = new_pass(&resolved, &fs, &mut versions);
        pass.check(".", &scope, Some(&shown_before));
        assert!(shown(&pass).is_empty());
        // A missing file retracts what was shown.
        let gone = previous("CLAUDE.md", "gone");
        pass.check(".", &scope_key(".", "CLAUDE.md"), Some(&gone));
        assert_eq!(shown(&pass), [("remove".into(), "CLAUDE.md".into())]);
    }
}
