//! agent-instructions' discovery (10 AI1): the normalized config, the
//! project root, the root-to-cwd chain, the candidate files and the
//! user-global one, scope keys, bounded reads and the baseline load.
//!
//! It exists to keep everything that reads the (fake) file system apart
//! from the reconciliation that compares what it found with what the
//! session shows.

use std::collections::BTreeMap;

use serde_json::json;

use super::SIMULATED_HOME;
use crate::plugins::config::AgentInstructionsConfig;
use crate::plugins::instructions_render::{InstructionFile, Rendered, render_baseline};
use crate::plugins::posix_path::{basename, dirname, is_absolute, join, relative, resolve};
use crate::plugins::{FakeFs, Stat};

pub(super) const USER_GLOBAL_DIRECTORY: &str = "user-global";
pub(super) const USER_GLOBAL_FILE: &str = "AGENTS.md";

/// Normalized config.
#[derive(Clone, Debug)]
pub(super) struct Resolved {
    pub(super) dsh_home: String,
    pub(super) markers: Vec<String>,
    pub(super) candidates: Vec<String>,
    pub(super) local_candidates: Vec<String>,
    pub(super) max_bytes: u64,
    pub(super) max_source_bytes: u64,
    pub(super) fs: bool,
}

fn resolve_candidates(candidates: &Option<Vec<String>>, fallback: &[&str]) -> Vec<String> {
    candidates
        .clone()
        .unwrap_or_else(|| fallback.iter().map(|s| s.to_string()).collect())
        .into_iter()
        .filter(|c| !matches!(c.as_str(), "" | "." | "..") && !c.contains(['/', '\\']))
        .collect()
}

pub(super) fn resolve_config(spec: &AgentInstructionsConfig) -> Resolved {
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

pub(super) fn user_global_display(dsh_home: &str) -> String {
    let display = if dsh_home == format!("{SIMULATED_HOME}/.dsh") {
        "~/.dsh"
    } else {
        "$DSH_HOME"
    };
    format!("{display}/{USER_GLOBAL_FILE}")
}

pub(super) fn scope_for_display(display: &str) -> String {
    if display == "~/.dsh/AGENTS.md" || display == "$DSH_HOME/AGENTS.md" {
        USER_GLOBAL_DIRECTORY.into()
    } else {
        dirname(display)
    }
}

/// `<directory>\0<candidate>`.
pub(super) fn scope_key(directory: &str, candidate: &str) -> String {
    format!("{directory}\0{candidate}")
}

pub(super) fn instruction_scope_key(display: &str) -> String {
    scope_key(&scope_for_display(display), &basename(display))
}

pub(super) fn decode_scope_key(scope: &str) -> (&str, &str) {
    scope.split_once('\0').unwrap_or((scope, ""))
}

/// A file found by discovery, before reading.
#[derive(Clone, Debug)]
pub(super) struct Probed {
    pub(super) absolute_path: String,
    pub(super) display_path: String,
    pub(super) version: u64,
    pub(super) size: u64,
}

/// A file read.
#[derive(Clone, Debug)]
pub(super) struct Loaded {
    pub(super) file: InstructionFile,
    pub(super) version: u64,
}

pub(super) fn trimmed_digest(content: &str) -> String {
    sha1_hex(content.trim().as_bytes())
}

pub(super) fn find_project_root(fs: &FakeFs, cwd: &str, markers: &[String]) -> String {
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
pub(super) fn ancestor_chain(root: &str, cwd: &str) -> Vec<String> {
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
pub(super) fn descendant_dirs_between(root: &str, touched: &str) -> Vec<String> {
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

pub(super) fn relative_scope(project_root: &str, dir: &str) -> String {
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

pub(super) fn read_bounded(fs: &FakeFs, probed: &Probed, max_source_bytes: u64) -> Option<Loaded> {
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
pub(super) struct BaselineSet {
    pub(super) rendered: Rendered,
    pub(super) observed: Vec<Loaded>,
    pub(super) included: Vec<Loaded>,
}

impl Resolved {
    /// The baseline's identity: what, besides the files, decides its
    /// content (the project root as seen from `cwd`, and the config).
    pub(super) fn identity(&self, cwd: &str, project_root: &str) -> String {
        json!({
            "projectRoot": relative(cwd, project_root),
            "projectRootMarkers": self.markers,
            "maxBytes": self.max_bytes,
            "maxSourceBytes": self.max_source_bytes,
            "instructionFileCandidates": self.candidates,
            "localInstructionFileCandidates": self.local_candidates,
        })
        .to_string()
    }

    /// The candidate files that exist, user-global first, then from the
    /// project root down to `cwd`, each path once.
    fn discover(&self, fs: &FakeFs, cwd: &str, project_root: &str) -> Vec<Probed> {
        let mut files: Vec<Probed> = Vec::new();
        let mut add = |probed: Probed| {
            if !files
                .iter()
                .any(|f| f.absolute_path == probed.absolute_path)
            {
                files.push(probed);
            }
        };
        let user_global = join(&self.dsh_home, USER_GLOBAL_FILE);
        if let Some(probed) = probe_file(fs, &user_global, user_global_display(&self.dsh_home)) {
            add(probed);
        }
        for dir in ancestor_chain(project_root, cwd) {
            for candidates in [&self.candidates, &self.local_candidates] {
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
    pub(super) fn load_baseline(
        &self,
        fs: &FakeFs,
        cwd: &str,
        project_root: &str,
        replace: bool,
    ) -> Option<BaselineSet> {
        if self.max_bytes == 0 || self.max_source_bytes == 0 {
            return None;
        }
        let loaded: Vec<Loaded> = self
            .discover(fs, cwd, project_root)
            .iter()
            .filter_map(|probed| read_bounded(fs, probed, self.max_source_bytes))
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
        let rendered = render_baseline(&deduped, self.max_bytes, replace);
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

    /// The file a scope key names, if it exists.
    pub(super) fn probe_scope(
        &self,
        fs: &FakeFs,
        scope: &str,
        project_root: &str,
    ) -> Option<Probed> {
        let (directory, candidate) = decode_scope_key(scope);
        let base = match directory {
            USER_GLOBAL_DIRECTORY => self.dsh_home.clone(),
            "." => project_root.to_string(),
            other => join(project_root, other),
        };
        let absolute_path = join(&base, candidate);
        let display = if directory == USER_GLOBAL_DIRECTORY {
            user_global_display(&self.dsh_home)
        } else {
            relative(project_root, &absolute_path)
        };
        probe_file(fs, &absolute_path, display)
    }
}

/// `createHash('sha1').update(data).digest('hex')`.
pub(super) fn sha1_hex(data: &[u8]) -> String {
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
}
