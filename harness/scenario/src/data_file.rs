//! Reading the data files dshc is given besides scenarios: clause catalogs,
//! expected-failure lists, provider scripts and session logs. One place, so
//! every such file gets the same `file:line:column` errors.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::load::line_column;
use serde::de::DeserializeOwned;

/// A data file that could not be used.
#[derive(Debug)]
pub struct DataFileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DataFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for DataFileError {}

impl DataFileError {
    /// An error about the file as a whole.
    pub fn new(path: &Path, message: impl Into<String>) -> Self {
        DataFileError {
            path: path.to_path_buf(),
            position: None,
            message: message.into(),
        }
    }
}

/// The text of a data file: a regular file of at most
/// [`crate::load::MAX_FILE_BYTES`], in UTF-8.
pub fn read_text(path: &Path) -> Result<String, DataFileError> {
    let bytes = crate::load::read_regular_file(path, crate::load::MAX_FILE_BYTES)
        .map_err(|message| DataFileError::new(path, message))?;
    crate::load::utf8_text(bytes).map_err(|position| DataFileError {
        path: path.to_path_buf(),
        position: Some(position),
        message: "not valid UTF-8".into(),
    })
}

/// A TOML data file, deserialized.
pub fn read_toml<T: DeserializeOwned>(path: &Path) -> Result<T, DataFileError> {
    let source = read_text(path)?;
    parse_toml(path, &source)
}

/// TOML text, deserialized; errors carry the position.
pub fn parse_toml<T: DeserializeOwned>(path: &Path, source: &str) -> Result<T, DataFileError> {
    toml::from_str(source).map_err(|e| DataFileError {
        path: path.to_path_buf(),
        position: e.span().map(|span| line_column(source, span.start)),
        message: e.message().trim_end().to_string(),
    })
}

/// JSON text, deserialized; errors carry the position.
pub fn parse_json<T: DeserializeOwned>(path: &Path, source: &str) -> Result<T, DataFileError> {
    serde_json::from_str(source).map_err(|e| DataFileError {
        path: path.to_path_buf(),
        position: Some((e.line(), e.column())),
        message: e.to_string(),
    })
}

/// Replace the file at `path` with `text`, or leave it as it was: the text is
/// written to a temporary file beside it, synced, then renamed over it, so a
/// full disk or a killed process never leaves a truncated original. A
/// symlink at `path` is replaced by the file, never written through; the
/// temporary file is created new (`O_EXCL`), so a link planted at its name
/// is not followed either.
pub fn replace_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".dshc-{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    // Something already at the temporary's name is not ours to remove.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    drop(file);
    let replaced = written.and_then(|()| std::fs::rename(&temporary, path));
    if replaced.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::replace_file;

    #[test]
    fn replacing_a_file_writes_the_new_text_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("dshc-replace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        let path = dir.join("scenario.toml");
        std::fs::write(&path, "old").expect("written");
        replace_file(&path, "new").expect("replaced");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .expect("listed")
            .map(|entry| entry.expect("an entry").file_name())
            .collect();
        assert_eq!(names, ["scenario.toml"]);
        std::fs::remove_dir_all(&dir).expect("removed");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_replaced_never_written_through() {
        let dir = std::env::temp_dir().join(format!("dshc-replace-link-{}", std::process::id()));
        let outside = dir.join("outside");
        let folder = dir.join("folder");
        std::fs::create_dir_all(&outside).expect("a scratch folder");
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        let target = outside.join("target.toml");
        std::fs::write(&target, "outside").expect("written");
        let link = folder.join("scenario.toml");
        std::os::unix::fs::symlink(&target, &link).expect("linked");
        replace_file(&link, "new").expect("replaced");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "outside");
        assert_eq!(std::fs::read_to_string(&link).expect("read"), "new");
        assert!(!std::fs::symlink_metadata(&link).expect("stat").is_symlink());
        // A link planted at the temporary file's name is not followed.
        let plain = folder.join("plain.toml");
        std::fs::write(&plain, "old").expect("written");
        let planted = folder.join(format!(".plain.toml.dshc-{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&target, &planted).expect("linked");
        assert!(replace_file(&plain, "new").is_err());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "outside");
        assert_eq!(std::fs::read_to_string(&plain).expect("read"), "old");
        std::fs::remove_dir_all(&dir).expect("removed");
    }

    #[test]
    fn a_failed_replacement_keeps_the_original() {
        let dir = std::env::temp_dir().join(format!("dshc-replace-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        // A folder where the file should be: the rename fails, and the
        // folder and its content stay as they were.
        let path = dir.join("taken");
        std::fs::create_dir_all(path.join("inside")).expect("a folder");
        assert!(replace_file(&path, "new").is_err());
        assert!(path.join("inside").is_dir());
        let names: Vec<_> = std::fs::read_dir(&dir)
            .expect("listed")
            .map(|entry| entry.expect("an entry").file_name())
            .collect();
        assert_eq!(names, ["taken"]);
        std::fs::remove_dir_all(&dir).expect("removed");
    }
}
