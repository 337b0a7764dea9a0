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
