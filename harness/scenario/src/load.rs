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
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let start = components
        .iter()
        .rposition(|c| c == "scenarios")
        .map_or(0, |i| i + 1);
    components[start..].join("/")
}

/// One step of an error path: a key, or an array index.
enum Segment {
    Key(String),
    Index(usize),
}

/// `steps[3].expect.prompt["$regex"]` → key `steps`, index 3, key `expect`, ...
fn segments(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]").unwrap_or(after.len());
            out.push(Segment::Key(after[..end].to_string()));
            rest = after.get(end + 2..).unwrap_or_default();
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            if let Ok(index) = after[..end].parse() {
                out.push(Segment::Index(index));
            }
            rest = after.get(end + 1..).unwrap_or_default();
        } else {
            let rest_trimmed = rest.strip_prefix('.').unwrap_or(rest);
            let end = rest_trimmed.find(['.', '[']).unwrap_or(rest_trimmed.len());
            if end > 0 {
                out.push(Segment::Key(rest_trimmed[..end].to_string()));
            }
            rest = &rest_trimmed[end..];
        }
    }
    out
}

/// The byte span of the deepest part of `error_path` the document has
/// (a compile error's path, e.g. `steps[2].expect.prompt["$regex"]`).
fn span_of_path(source: &str, error_path: &str) -> Option<std::ops::Range<usize>> {
    use toml_edit::{Item, Value};
    enum Node<'a> {
        Item(&'a Item),
        Value(&'a Value),
        Table(&'a toml_edit::Table),
    }
    let document = source.parse::<toml_edit::Document<String>>().ok()?;
    let mut node = Node::Table(document.as_table());
    let mut span = None;
    for segment in segments(error_path) {
        let as_value: Option<&Value> = match &node {
            Node::Item(Item::Value(value)) => Some(value),
            Node::Value(value) => Some(value),
            _ => None,
        };
        let next = match (&node, as_value, &segment) {
            (Node::Table(table), _, Segment::Key(key)) => table.get(key).map(Node::Item),
            (Node::Item(Item::Table(table)), _, Segment::Key(key)) => {
                table.get(key).map(Node::Item)
            }
            (Node::Item(Item::ArrayOfTables(tables)), _, Segment::Index(index)) => {
                tables.get(*index).map(Node::Table)
            }
            (_, Some(Value::InlineTable(table)), Segment::Key(key)) => {
                table.get(key).map(Node::Value)
            }
            (_, Some(Value::Array(array)), Segment::Index(index)) => {
                array.get(*index).map(Node::Value)
            }
            _ => None,
        };
        let Some(next) = next else { break };
        let next_span = match &next {
            Node::Item(item) => item.span(),
            Node::Value(value) => value.span(),
            Node::Table(table) => table.span(),
        };
        if next_span.is_some() {
            span = next_span;
        }
        node = next;
    }
    span
}

/// An error inside step `i` that names its field (`text: invalid type ...`,
/// see [`crate::format::split_field_path`]): where that field is, and the
/// message with the whole path (`steps[i].text: invalid type ...`).
fn step_field_error(
    source: &str,
    span: &std::ops::Range<usize>,
    message: &str,
) -> Option<(usize, String)> {
    let (field, rest) = crate::format::split_field_path(message)?;
    let document = source.parse::<toml_edit::Document<String>>().ok()?;
    let steps = document.get("steps")?.as_array_of_tables()?;
    let index = steps.iter().position(|step| {
        step.span()
            .is_some_and(|step| step.start <= span.start && span.start <= step.end)
    })?;
    let path = format!("steps[{index}].{field}");
    let start = if rest.starts_with("unknown field `") {
        refine_span(source, span.clone(), rest)
    } else {
        span_of_path(source, &path)?.start
    };
    Some((start, format!("{path}: {rest}")))
}

/// Serde reports errors inside a tagged step at the step's table. For an
/// unknown field, point at the field's key inside that table instead: the
/// first key of that name, however it is written (bare, quoted, dotted,
/// empty), between the table's start and the next table header.
fn refine_span(source: &str, span: std::ops::Range<usize>, message: &str) -> usize {
    // After a path when the key is not one a path can name (`a b: ...`).
    let Some(field) = message
        .split_once("unknown field `")
        .and_then(|(_, rest)| rest.split('`').next())
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
    let Ok(document) = source.parse::<toml_edit::Document<String>>() else {
        return span.start;
    };
    let mut starts = Vec::new();
    key_starts(document.as_table(), field, &mut starts);
    starts
        .into_iter()
        .filter(|start| (span.start..end).contains(start))
        .min()
        .unwrap_or(span.start)
}

/// Where each key named `field` starts, in `table` and every table below it.
fn key_starts(table: &dyn toml_edit::TableLike, field: &str, starts: &mut Vec<usize>) {
    use toml_edit::{Item, Value};
    fn value_starts(value: &Value, field: &str, starts: &mut Vec<usize>) {
        match value {
            Value::InlineTable(table) => key_starts(table, field, starts),
            Value::Array(array) => array
                .iter()
                .for_each(|value| value_starts(value, field, starts)),
            _ => {}
        }
    }
    for (name, item) in table.iter() {
        if name == field {
            let key_span = table.get_key_value(name).and_then(|(key, _)| key.span());
            starts.extend(key_span.map(|span| span.start));
        }
        match item {
            Item::Table(inner) => key_starts(inner, field, starts),
            Item::ArrayOfTables(tables) => tables
                .iter()
                .for_each(|inner| key_starts(inner, field, starts)),
            Item::Value(value) => value_starts(value, field, starts),
            Item::None => {}
        }
    }
}

/// The position of the first key of the document named in `keys`.
fn first_key_position(source: &str, keys: &[&str]) -> Option<(usize, usize)> {
    let document = source.parse::<toml_edit::Document<String>>().ok()?;
    let table = document.as_table();
    let start = table
        .iter()
        .filter(|(key, _)| keys.contains(key))
        .filter_map(|(key, item)| {
            table
                .key(key)
                .and_then(|k| k.span())
                .or_else(|| item.span())
        })
        .map(|span| span.start)
        .min()?;
    Some(line_column(source, start))
}

/// A format 1 file is refused before its steps are read, with the upgrade.
fn check_format(path: &Path, source: &str) -> Result<(), LoadError> {
    let Ok(document) = source.parse::<toml_edit::Document<String>>() else {
        return Ok(());
    };
    let Some(item) = document.as_table().get("format") else {
        return Ok(());
    };
    if item.as_integer() == Some(1) {
        let position = item.span().map(|span| line_column(source, span.start));
        return Err(LoadError {
            path: path.to_path_buf(),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            message: format!(
                "scenario format 1 is no longer read; `dshc migrate {}` rewrites it as format {}, \
                 keeping what it asserts",
                path.display(),
                crate::format::FORMAT_VERSION
            ),
        });
    }
    Ok(())
}

/// What the TOML reader's nesting limit (reported without a place) means for
/// a scenario.
pub(crate) fn nesting_limit_message(parser_message: &str) -> String {
    format!(
        "nested deeper than the TOML reader allows ({parser_message}): a dotted key, table or \
         array this deep is not a scenario"
    )
}

/// The first line with the most nesting (dots of a dotted key, brackets and
/// braces), and its column 1: where a nesting limit was reached.
pub(crate) fn deepest_line(source: &str) -> (usize, usize) {
    let depth = |line: &str| {
        line.chars()
            .filter(|c| matches!(c, '.' | '[' | '{'))
            .count()
    };
    let mut deepest = (1, 0);
    for (index, line) in source.lines().enumerate() {
        let here = depth(line);
        if here > deepest.1 {
            deepest = (index + 1, here);
        }
    }
    (deepest.0, 1)
}

/// For TOML that does not parse in a file whose `format = 1` line says it
/// is format 1: what to do once it parses (`dshc migrate` reads TOML too).
fn format_one_advice(path: &Path, source: &str) -> String {
    let format_one = source.lines().any(|line| {
        let line = line.trim_start();
        line.strip_prefix("format")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix('1'))
            .is_some_and(|rest| rest.trim_start().is_empty() || rest.trim_start().starts_with('#'))
    });
    match format_one {
        true => format!(
            " (this is a format 1 file: once the TOML is fixed, `dshc migrate {}` upgrades it)",
            path.display()
        ),
        false => String::new(),
    }
}

/// Parse and compile scenario text.
pub fn parse_scenario(path: &Path, source: &str) -> Result<LoadedScenario, LoadError> {
    check_format(path, source)?;
    let scenario: Scenario = toml::from_str(source).map_err(|error| {
        let advice = format_one_advice(path, source);
        let message = error.message().trim_end();
        let Some(span) = error.span() else {
            // The parser's nesting limit comes without a place: the most
            // deeply nested line is where it was reached.
            if message.contains("recursion limit") {
                let (line, column) = deepest_line(source);
                return LoadError {
                    path: path.to_path_buf(),
                    line: Some(line),
                    column: Some(column),
                    message: format!("{}{advice}", nesting_limit_message(message)),
                };
            }
            return LoadError {
                path: path.to_path_buf(),
                line: None,
                column: None,
                message: format!("{message}{advice}"),
            };
        };
        let (start, message) = match step_field_error(source, &span, message) {
            Some((field_start, message)) => (field_start, message),
            None => (refine_span(source, span, message), message.to_string()),
        };
        let (line, column) = line_column(source, start);
        LoadError {
            path: path.to_path_buf(),
            line: Some(line),
            column: Some(column),
            message: format!("{message}{advice}"),
        }
    })?;
    let id = scenario_id(path);
    let case = compile(&id, &scenario).map_err(|error| {
        let position = match error.path.as_str() {
            // `level` is missing where loop-only keys are present: point at the first.
            "level" => first_key_position(
                source,
                &[
                    "agent",
                    "provider",
                    "adapter",
                    "simulation",
                    "tool_results",
                    "plugins",
                    "expect",
                ],
            ),
            path => span_of_path(source, path).map(|span| line_column(source, span.start)),
        };
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

/// The largest file dshc reads: scenarios, catalogs, scripts, logs.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most scenario files one discovery collects.
pub const MAX_WALK_FILES: usize = 100_000;

/// What kind of thing is at a path that is not a regular file or folder.
fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let file_type = metadata.file_type();
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// The bytes of a regular file of at most `max_bytes`. A FIFO, a device or
/// a socket is refused before it is opened (reading one could block
/// forever), and a larger file is refused after `max_bytes + 1` bytes.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let metadata = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if metadata.is_dir() {
        return Err("is a folder, not a file".into());
    }
    if !metadata.is_file() {
        return Err(format!(
            "cannot read: {} is not a regular file",
            kind_of(&metadata)
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "larger than the {max_bytes}-byte limit for files dshc reads"
        ));
    }
    Ok(bytes)
}

/// UTF-8 text from bytes, or where the first invalid byte is.
pub fn utf8_text(bytes: Vec<u8>) -> Result<String, (usize, usize)> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&error.as_bytes()[..valid]).into_owned();
        line_column(&text, valid)
    })
}

/// Read, parse and compile one scenario file.
pub fn load_scenario(path: &Path) -> Result<LoadedScenario, LoadError> {
    let error = |line, column, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let bytes = read_regular_file(path, MAX_FILE_BYTES).map_err(|m| error(None, None, m))?;
    let source = utf8_text(bytes).map_err(|(line, column)| {
        error(
            Some(line),
            Some(column),
            "not valid UTF-8 (a scenario is UTF-8 text)".into(),
        )
    })?;
    parse_scenario(path, &source)
}

/// Files that live among scenarios but are not scenarios.
const METADATA_FILES: &[&str] = &["clauses.toml"];
/// Folders that hold no scenarios.
const SKIPPED_DIRS: &[&str] = &["schema"];

/// What a discovery found: the scenario files, the paths that could not be
/// used, and what was passed over on purpose (said, never silent).
#[derive(Debug, Default)]
pub struct Discovery {
    /// Scenario files, sorted, each once.
    pub files: Vec<PathBuf>,
    /// Paths that could not be used.
    pub errors: Vec<LoadError>,
    /// What was skipped, and why.
    pub notes: Vec<String>,
}

fn is_scenario_name(name: &str) -> bool {
    name.len() > 5 && name[name.len() - 5..].eq_ignore_ascii_case(".toml")
}

/// Every scenario file under the given files and folders. A path that does
/// not exist, or is not a file or folder, is an error for that path only.
/// Folders are walked once each by their canonical path, so symlink loops
/// and links to one folder cost nothing; at most [`MAX_WALK_FILES`] files
/// are collected.
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut found = Discovery::default();
    let mut visited = std::collections::BTreeSet::new();
    for path in paths {
        let error = |message: String| LoadError {
            path: path.clone(),
            line: None,
            column: None,
            message,
        };
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                found.errors.push(error("no such file or folder".into()))
            }
            Err(e) => found.errors.push(error(format!("cannot read: {e}"))),
            Ok(m) if m.is_file() => found.files.push(path.clone()),
            Ok(m) if m.is_dir() => walk(path, 0, &mut found, &mut visited),
            Ok(m) => found.errors.push(error(format!(
                "{} is neither a scenario file nor a folder",
                kind_of(&m)
            ))),
        }
    }
    found.files.sort();
    found.files.dedup();
    found
}

/// Walk `dir`, `depth` folders below a path the user gave. The catalog and
/// the schema folder at the top of a scenario tree are skipped silently (the
/// standard layout); anywhere deeper, skipping them is said.
fn walk(
    dir: &Path,
    depth: usize,
    found: &mut Discovery,
    visited: &mut std::collections::BTreeSet<PathBuf>,
) {
    let canonical = match std::fs::canonicalize(dir) {
        Ok(canonical) => canonical,
        Err(error) => {
            found.errors.push(LoadError {
                path: dir.to_path_buf(),
                line: None,
                column: None,
                message: format!("cannot read folder: {error}"),
            });
            return;
        }
    };
    if !visited.insert(canonical) {
        found.notes.push(format!(
            "{}: already walked (a link to a folder seen before)",
            dir.display()
        ));
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            found.errors.push(LoadError {
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
        if found.files.len() >= MAX_WALK_FILES {
            found.errors.push(LoadError {
                path: dir.to_path_buf(),
                line: None,
                column: None,
                message: format!(
                    "more than {MAX_WALK_FILES} scenario files; the rest are not read"
                ),
            });
            return;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let metadata = std::fs::metadata(&path);
        match metadata {
            Ok(m) if m.is_dir() => {
                if SKIPPED_DIRS.contains(&name.as_str()) {
                    if depth > 0 {
                        found.notes.push(format!(
                            "{}: skipped (a schema folder, not scenarios)",
                            path.display()
                        ));
                    }
                } else {
                    walk(&path, depth + 1, found, visited);
                }
            }
            Ok(m) if is_scenario_name(&name) => {
                if METADATA_FILES.contains(&name.as_str()) {
                    if depth > 0 {
                        found
                            .notes
                            .push(format!("{}: skipped (a clause catalog)", path.display()));
                    }
                } else if m.is_file() {
                    found.files.push(path);
                } else {
                    found.errors.push(LoadError {
                        path: path.clone(),
                        line: None,
                        column: None,
                        message: format!("{} named like a scenario; not read", kind_of(&m)),
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_reports_line_and_column() {
        let source = "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert_eq!((error.line, error.column), (Some(8), Some(8)), "{error}");
    }

    #[test]
    fn a_key_nested_past_the_parsers_limit_gets_a_position() {
        let deep = format!("{}b = 1", "a.".repeat(20_000));
        let source = format!("format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n{deep}\n");
        let error = parse_scenario(Path::new("x.toml"), &source).unwrap_err();
        assert_eq!((error.line, error.column), (Some(4), Some(1)), "{error}");
        assert!(
            error
                .message
                .starts_with("nested deeper than the TOML reader allows"),
            "{error}"
        );
    }

    #[test]
    fn unknown_field_is_an_error_with_position() {
        let source = "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"assemble\"\nexpect = { promt = \"x\" }\n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert!(error.message.contains("promt"), "{error}");
        assert_eq!((error.line, error.column), (Some(7), Some(12)), "{error}");
    }

    #[test]
    fn a_typo_in_the_expected_event_types_is_refused_at_load() {
        let head = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n\n[[steps]]\ndo = \"followup\"\ntext = \"q\"\n\n[expect]\n";
        let expected = "expect.event_types: no run of this scenario logs an event of type \"step/strat\" (did you mean \"step/start\"?)";
        for list in [
            "event_types = [\"turn/start\", \"step/strat\"]",
            "event_types = { \"$in_order\" = [\"turn/start\", \"step/strat\"] }",
            "event_types = { \"$some\" = { \"$any_of\" = [\"step/strat\"] } }",
            "event_types = { \"$not\" = { \"$contains\" = [\"step/strat\"] } }",
        ] {
            let error = error_of(&format!("{head}{list}\n"));
            assert!(error.message.starts_with(expected), "{list}: {error}");
            assert_eq!(error.line, Some(11), "{list}: {error}");
        }
        // A prefix or a length names no type.
        for list in [
            "event_types = { \"$some\" = { \"$starts_with\" = \"step/\" } }",
            "event_types = { \"$length\" = 3 }",
        ] {
            assert!(
                parse_scenario(Path::new("x.toml"), &format!("{head}{list}\n")).is_ok(),
                "{list}"
            );
        }
    }

    #[test]
    fn an_unknown_listener_op_is_named_and_pointed_at() {
        let head = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n\n[[steps]]\ndo = \"on_request\"\nid = \"r\"\n";
        let keyed = error_of(&format!(
            "{head}ops = [\n  \"next\",\n  {{ sett = {{ model = \"m2\" }} }},\n]\n"
        ));
        assert!(
            keyed.message.starts_with(
                "steps[0].ops[1]: unknown agent/request op `sett`; the ops are `next`, `set`"
            ),
            "{keyed}"
        );
        assert_eq!((keyed.line, keyed.column), (Some(11), Some(3)), "{keyed}");
        let named = error_of(&format!("{head}ops = [\"nxt\"]\n"));
        assert!(
            named
                .message
                .starts_with("steps[0].ops[0]: unknown agent/request op `nxt`"),
            "{named}"
        );
        assert_eq!((named.line, named.column), (Some(9), Some(8)), "{named}");
    }

    #[test]
    fn compile_error_points_at_the_step() {
        let source = "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"assemble\"\n\n[[steps]]\ndo = \"dispose\"\ntarget = \"nope\"\n";
        let error = parse_scenario(Path::new("x.toml"), source).unwrap_err();
        assert!(
            error.message.contains("no registration has id \"nope\""),
            "{error}"
        );
        assert_eq!(error.line, Some(8), "{error}");
    }

    fn error_of(source: &str) -> LoadError {
        parse_scenario(Path::new("x.toml"), source).expect_err("rejected")
    }

    #[test]
    fn every_load_error_has_a_position_and_names_what_was_expected() {
        let head = "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n";
        let deep = error_of(&format!(
            "{head}[[steps]]\ndo = \"assemble\"\nexpect.a.b.c = 1\n"
        ));
        assert_eq!((deep.line, deep.column), (Some(6), Some(8)), "{deep}");
        let level = error_of(&format!("{head}\n[provider]\nresponses = []\n"));
        assert_eq!(level.line, Some(5), "{level}");
        let text = error_of(&format!(
            "{head}[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = 5\n"
        ));
        assert!(
            text.message
                .contains("a string (the text) or a provider table"),
            "{text}"
        );
        assert!(text.line.is_some(), "{text}");
        let provider = error_of(&format!(
            "{head}[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = {{ retruns = \"x\" }}\n"
        ));
        assert!(
            provider.message.contains("unknown field `retruns`"),
            "{provider}"
        );
        let order = error_of(&format!(
            "{head}[[steps]]\ndo = \"section\"\nname = \"a\"\norder = \"x\"\ntext = \"t\"\n"
        ));
        assert!(order.message.contains("order must be a number"), "{order}");
        let pattern = error_of(&format!(
            "{head}[[steps]]\ndo = \"assemble\"\nexpect.prompt = {{ \"$regex\" = \"(\" }}\n"
        ));
        assert!(pattern.message.contains("invalid regex"), "{pattern}");
        assert_eq!(pattern.line, Some(6), "{pattern}");
        let old = error_of("format = 1\ntitle = \"t\"\ncovers = [\"x\"]\n");
        assert!(old.message.contains("dshc migrate x.toml"), "{old}");
        assert_eq!((old.line, old.column), (Some(1), Some(10)), "{old}");
    }

    #[test]
    fn an_unknown_field_is_found_however_its_key_is_written() {
        let position = |source: &str| {
            let error = error_of(source);
            assert!(error.message.contains("unknown field"), "{error}");
            (error.line, error.column)
        };
        // An empty key, alone and after known keys (this once never ended).
        assert_eq!(position("\"\"=\"\""), (Some(1), Some(1)));
        assert_eq!(
            position("format = 2\ntitle = \"\"\n\"\" = 1\n"),
            (Some(3), Some(1))
        );
        // A quoted key, a literal key, and one whose name first appears
        // inside another key and inside a string.
        assert_eq!(position("format = 2\n  \"a b\" = 1\n"), (Some(2), Some(3)));
        assert_eq!(position("format = 2\n'lit' = 1\n"), (Some(2), Some(1)));
        assert_eq!(
            position("format = 2\ntitle = \"tit\"\ntit = 1\n"),
            (Some(3), Some(1))
        );
        // Inside a step table: the key, not the table's header.
        let head = "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n";
        let step = error_of(&format!(
            "{head}[[steps]]\ndo = \"assemble\"\n\"\" = 1\n[[steps]]\ndo = \"assemble\"\n"
        ));
        assert!(step.message.starts_with("unknown field ``"), "{step}");
        assert_eq!((step.line, step.column), (Some(6), Some(1)), "{step}");
        let spaced = error_of(&format!(
            "{head}[[steps]]\ndo = \"assemble\"\n\"a b\" = 1\n[[steps]]\ndo = \"assemble\"\n"
        ));
        assert!(spaced.message.contains("unknown field `a b`"), "{spaced}");
        assert_eq!((spaced.line, spaced.column), (Some(6), Some(1)), "{spaced}");
    }

    #[test]
    fn invalid_utf8_is_reported_where_it_starts() {
        let dir = std::env::temp_dir().join(format!("dshc-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let path = dir.join("bad.toml");
        std::fs::write(&path, b"format = 2\ntitle = \"\xff\"\n").expect("written");
        let error = load_scenario(&path).expect_err("rejected");
        assert_eq!((error.line, error.column), (Some(2), Some(10)), "{error}");
        assert!(error.message.contains("UTF-8"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ids_are_paths_below_the_scenarios_folder() {
        assert_eq!(scenario_id(Path::new("/tmp/x/loose.toml")), "tmp/x/loose");
        assert_eq!(
            scenario_id(Path::new("/a/scenarios/assembly/x/y.toml")),
            "assembly/x/y"
        );
        assert_eq!(scenario_id(Path::new("loose.toml")), "loose");
    }
}
