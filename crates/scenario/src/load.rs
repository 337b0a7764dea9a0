//! Reading scenario files: parsing with positions, compiling, discovering.
//!
//! A malformed file is reported as `file:line:column: message` and never
//! stops a run: callers get a [`LoadError`] per bad file and go on.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::compile::compile;
use crate::format::Scenario;
use crate::protocol::Case;

/// A scenario file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column in characters, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LoadError {}

/// A scenario ready to run: its id, file, parsed form and compiled case.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    /// Stable id: the path below the `scenarios` folder, without extension.
    pub id: String,
    /// The file it came from.
    pub path: PathBuf,
    /// The file's text (kept for blessing).
    pub source: String,
    /// Parsed scenario.
    pub scenario: Scenario,
    /// Compiled case.
    pub case: Case,
}

/// 1-based line and character column of a byte offset.
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset].chars().count() + 1;
    (line, column)
}

/// The id of a scenario file: its path below the last `scenarios` folder,
/// with `/` separators and no extension.
pub fn scenario_id(path: &Path) -> String {
    let components: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let start = components
        .iter()
        .rposition(|c| c == "scenarios")
        .map_or(0, |i| i + 1);
    components[start..].join("/")
}

/// Byte span of `steps[i]` (or another top-level key) for a compile error path.
fn span_of_path(source: &str, error_path: &str) -> Option<std::ops::Range<usize>> {
    let document = source.parse::<toml_edit::Document<String>>().ok()?;
    let head = error_path.split('.').next()?;
    let (key, index) = match head.split_once('[') {
        Some((key, rest)) => (key, rest.trim_end_matches(']').parse::<usize>().ok()),
        None => (head, None),
    };
    let item = document.as_table().get(key)?;
    match index {
        None => item.span(),
        Some(index) => match item {
            toml_edit::Item::ArrayOfTables(tables) => tables.get(index)?.span(),
            toml_edit::Item::Value(toml_edit::Value::Array(array)) => array.get(index)?.span(),
            _ => item.span(),
        },
    }
}

/// Serde reports errors inside a tagged step at the step's table. For an
/// unknown field, point at the field's key inside that table instead.
fn refine_span(source: &str, span: std::ops::Range<usize>, message: &str) -> usize {
    let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
    else {
        return span.start;
    };
    // The span may cover only the table header; search to the next header.
    let body_start = source[span.start..]
        .find('\n')
        .map_or(source.len(), |i| span.start + i + 1);
    let next_header = source[body_start..]
        .match_indices('\n')
        .map(|(i, _)| body_start + i + 1)
        .find(|&line| source[line..].trim_start().starts_with('['));
    let end = next_header
        .unwrap_or(source.len())
        .max(span.end.min(source.len()));
    let table = &source[span.start..end];
    let mut offset = 0;
    while let Some(found) = table[offset..].find(field) {
        let at = offset + found;
        let before_ok =
            at == 0 || !table[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after = table[at + field.len()..].trim_start_matches([' ', '\t']);
        if before_ok && (after.starts_with('=') || after.starts_with('.')) {
            return span.start + at;
        }
        offset = at + field.len();
    }
    span.start
}

/// Parse and compile scenario text.
pub fn parse_scenario(path: &Path, source: &str) -> Result<LoadedScenario, LoadError> {
    let scenario: Scenario = toml::from_str(source).map_err(|error| {
        let (line, column) = match error.span() {
            Some(span) => {
                let start = refine_span(source, span, error.message());
                let (line, column) = line_column(source, start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        LoadError {
            path: path.to_path_buf(),
            line,
            column,
            message: error.message().trim_end().to_string(),
        }
    })?;
    let id = scenario_id(path);
    let case = compile(&id, &scenario).map_err(|error| {
        let position =
            span_of_path(source, &error.path).map(|span| line_column(source, span.start));
        LoadError {
            path: path.to_path_buf(),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            message: error.to_string(),
        }
    })?;
    Ok(LoadedScenario {
        id,
        path: path.to_path_buf(),
        source: source.to_string(),
        scenario,
        case,
    })
}

/// Read, parse and compile one scenario file.
pub fn load_scenario(path: &Path) -> Result<LoadedScenario, LoadError> {
    let source = std::fs::read_to_string(path).map_err(|error| LoadError {
        path: path.to_path_buf(),
        line: None,
        column: None,
        message: format!("cannot read: {error}"),
    })?;
    parse_scenario(path, &source)
}

/// Files that live among scenarios but are not scenarios.
const METADATA_FILES: &[&str] = &["clauses.toml"];
/// Folders that hold no scenarios.
const SKIPPED_DIRS: &[&str] = &["schema"];

/// Every scenario file under the given files and folders, sorted, each once.
/// A path that does not exist is an error for that path only.
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        if path.is_file() {
            files.push(path.clone());
        } else if path.is_dir() {
            walk(path, &mut files, &mut errors);
        } else {
            errors.push(LoadError {
                path: path.clone(),
                line: None,
                column: None,
                message: "no such file or folder".into(),
            });
        }
    }
    files.sort();
    files.dedup();
    (files, errors)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<LoadError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(LoadError {
                path: dir.to_path_buf(),
                line: None,
                column: None,
                message: format!("cannot read folder: {error}"),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) {
                walk(&path, files, errors);
            }
        } else if name.ends_with(".toml") && !METADATA_FILES.contains(&name.as_str()) {
            files.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_reports_line_and_column() {
        let source = "format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert_eq!((error.line, error.column), (Some(8), Some(8)), "{error}");
    }

    #[test]
    fn unknown_field_is_an_error_with_position() {
        let source = "format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"assemble\"\nexpect = { promt = \"x\" }\n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert!(error.message.contains("promt"), "{error}");
        assert_eq!((error.line, error.column), (Some(7), Some(12)), "{error}");
    }

    #[test]
    fn compile_error_points_at_the_step() {
        let source = "format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"assemble\"\n\n[[steps]]\ndo = \"dispose\"\ntarget = \"nope\"\n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert!(
            error.message.contains("no registration has id \"nope\""),
            "{error}"
        );
        assert_eq!(error.line, Some(8), "{error}");
    }

    #[test]
    fn ids_are_paths_below_the_scenarios_folder() {
        assert_eq!(
            scenario_id(Path::new("/a/scenarios/assembly/x/y.toml")),
            "assembly/x/y"
        );
        assert_eq!(scenario_id(Path::new("loose.toml")), "loose");
    }
}
