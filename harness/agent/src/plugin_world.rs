//! What the context plugins read from outside the session, as one world
//! every agent of a run shares: a fake file system for agent-instructions,
//! the tmux query's answer, other sessions for session-reference.
//!
//! It lives apart from the plugins so that the loop's shared context
//! ([`crate::LoopContext`]) can hold it without depending on the plugins,
//! which act on agents.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use indexmap::IndexMap;

use crate::plugin_config::{PluginName, PluginsConfig, ReferencedSession, TmuxQuery};
use crate::posix_path;

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
    /// The plugins disposed so far (`dispose`): agents created later leave
    /// them out.
    pub disposed: BTreeSet<PluginName>,
}

/// The [`World`] shared by every agent of a run (a resumed agent sees the
/// files and panes the previous one left), created from the scenario on the
/// first [`install`].
#[derive(Clone, Default)]
pub struct SharedWorld(Rc<RefCell<Option<World>>>);

impl SharedWorld {
    pub(crate) fn init(&self, spec: &PluginsConfig) {
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

    pub(crate) fn with_mut<T>(&self, write: impl FnOnce(&mut World) -> T) -> T {
        let mut slot = self.0.borrow_mut();
        write(slot.get_or_insert_with(World::default))
    }
}
