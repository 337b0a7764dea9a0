//! Tidy checks over the whole workspace's Rust sources (rust-analyzer's
//! `tidy`): the code-shape rules ARCHITECTURE.md states, enforced where a
//! change would break them rather than by review.
//!
//! - no `.rs` file over [`MAX_FILE_LINES`] lines;
//! - no function over [`MAX_FUNCTION_LINES`] lines, apart from the flat
//!   dispatches named in [`FLAT_DISPATCHES`];
//! - no module that uses a sibling module which uses it back, at any level
//!   of any crate.
//!
//! The scan is lexical (comments, strings and char literals are skipped
//! when braces are counted), which is enough for rustfmt-formatted code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be.
const MAX_FILE_LINES: usize = 1_000;
/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;
/// Functions allowed over the limit: flat dispatch `match`es whose arms are
/// one line each, as `file:function`.
const FLAT_DISPATCHES: &[&str] = &[];

/// The folders whose crates are checked.
const SOURCE_ROOTS: &[&str] = &["harness", "mock-provider", "benches", "fuzz/fuzz_targets"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, into);
            }
        } else if name.ends_with(".rs") {
            into.push(path);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = repository();
    let mut files = Vec::new();
    for dir in SOURCE_ROOTS {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            (relative.display().to_string(), text)
        })
        .collect()
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|(_, text)| text.lines().count() > MAX_FILE_LINES)
        .map(|(path, text)| format!("{path}: {} lines", text.lines().count()))
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_is_over_the_line_limit() {
    let mut long = Vec::new();
    for (path, text) in sources() {
        for function in functions(&text) {
            let key = format!("{path}:{}", function.name);
            if function.lines > MAX_FUNCTION_LINES && !FLAT_DISPATCHES.contains(&key.as_str()) {
                long.push(format!(
                    "{key} (line {}): {} lines",
                    function.line, function.lines
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_scan_measures_what_it_should() {
    let text = "fn short() {\n    let s = \"}\";\n    let c = '{';\n}\n\n\
                pub(crate) fn longer<'a>(x: &'a str) -> &'a str {\n    // }\n    /* { */\n    \
                let r = r#\"}\"#;\n    x\n}\n";
    let found = functions(text);
    let summary: Vec<(String, usize, usize)> = found
        .into_iter()
        .map(|f| (f.name, f.line, f.lines))
        .collect();
    assert_eq!(
        summary,
        vec![("short".into(), 1, 4), ("longer".into(), 6, 6)]
    );
}

#[test]
fn no_module_uses_a_sibling_that_uses_it_back() {
    let mut crates: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (path, text) in sources() {
        if let Some((krate, module)) = module_of(&path) {
            crates.entry(krate).or_default().push((module, text));
        }
    }
    let mut cycles = Vec::new();
    for (krate, modules) in &crates {
        let known: BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
        let root = modules
            .iter()
            .find(|(m, _)| m.is_empty())
            .map(|(_, text)| text.as_str());
        let reexports = root.map(root_reexports).unwrap_or_default();
        let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
        for (module, text) in modules {
            for target in references(module, text) {
                // `crate::Name` of an item the root re-exports is a use of
                // the module it comes from.
                let target = reexports.get(target.as_str()).cloned().unwrap_or(target);
                let Some(target) = resolve(&target, &known) else {
                    continue;
                };
                if let Some(edge) = sibling_edge(module, &target) {
                    edges.insert(edge);
                }
            }
        }
        for (from, to) in &edges {
            if from < to && edges.contains(&(to.clone(), from.clone())) {
                cycles.push(format!("{krate}: {from} <-> {to}"));
            }
        }
        cycles.extend(
            longer_cycles(&edges)
                .into_iter()
                .map(|c| format!("{krate}: {c}")),
        );
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn event_kinds_are_named_only_in_their_module() {
    let kinds = dshc_model::session::event_kind::ALL;
    let mut found = Vec::new();
    for (path, text) in sources() {
        // The scenario crate reads the format's words and cannot depend on
        // the model, whose module names the kinds.
        if path.ends_with("session/event_kind.rs") || path.starts_with("harness/scenario/") {
            continue;
        }
        for (line, literal) in plain_string_literals(&text) {
            if kinds.contains(&literal.as_str()) {
                found.push(format!("{path}:{line}: \"{literal}\""));
            }
        }
    }
    assert!(
        found.is_empty(),
        "event kinds written as literals (use dshc_model::session::event_kind):\n{}",
        found.join("\n")
    );
}

/// One function found by the scan.
struct Function {
    name: String,
    /// 1-based line of its `fn`.
    line: usize,
    /// Lines from the `fn` line to the closing brace, both included.
    lines: usize,
}

/// The functions with bodies in a source text, nested ones included.
fn functions(text: &str) -> Vec<Function> {
    let code = blank_literals(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        if let Some(end) = body_end(&lines, index) {
            found.push(Function {
                name,
                line: index + 1,
                lines: end - index + 1,
            });
        }
    }
    found
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        w.starts_with("pub")
            || matches!(
                *w,
                "async" | "const" | "unsafe" | "extern" | "default" | "\"C\""
            )
    });
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

/// The line of the brace closing the body that starts at or after `start`;
/// `None` for a declaration without a body (a trait method ending in `;`).
fn body_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        return Some(index);
                    }
                }
                ';' if !opened && depth == 0 => return None,
                _ => {}
            }
        }
    }
    None
}

/// What the lexical scan sets apart from code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Skipped {
    /// A comment, a raw or byte string, or a char literal.
    Other,
    /// A plain `"..."` string literal.
    PlainString,
}

/// The spans of comments and literals in `chars`, in order, as
/// `(start, end, what)`: everything else is code.
fn skipped_spans(chars: &[char]) -> Vec<(usize, usize, Skipped)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let (len, what) = if rest.starts_with(&['/', '/']) {
            let len = rest.iter().position(|c| *c == '\n').unwrap_or(rest.len());
            (len, Skipped::Other)
        } else if rest.starts_with(&['/', '*']) {
            (block_comment_len(rest), Skipped::Other)
        } else if rest[0] == '"' {
            (string_len(rest, 1), Skipped::PlainString)
        } else if rest[0] == 'r' && raw_string_hashes(rest).is_some() && !ident_before(chars, i) {
            let hashes = raw_string_hashes(rest).unwrap_or(0);
            (raw_string_len(rest, hashes), Skipped::Other)
        } else if rest[0] == 'b' && rest.get(1) == Some(&'"') && !ident_before(chars, i) {
            (1 + string_len(&rest[1..], 1), Skipped::Other)
        } else if rest[0] == '\'' {
            (char_literal_len(rest), Skipped::Other)
        } else {
            (0, Skipped::Other)
        };
        if len > 0 {
            spans.push((i, i + len, what));
            i += len;
        } else {
            i += 1;
        }
    }
    spans
}

/// The text with comments, string literals and char literals blanked out
/// (newlines kept), so that only code braces remain.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut code_from = 0;
    for (start, end, _) in skipped_spans(&chars) {
        out.extend(&chars[code_from..start]);
        out.extend(chars[start..end].iter().filter(|c| **c == '\n'));
        code_from = end;
    }
    out.extend(&chars[code_from..]);
    out
}

/// The plain `"..."` string literals of a source text (not raw or byte
/// strings, not in comments), with their 1-based line, undecoded.
fn plain_string_literals(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let line_of = |at: usize| 1 + chars[..at].iter().filter(|c| **c == '\n').count();
    skipped_spans(&chars)
        .into_iter()
        .filter(|(start, end, what)| *what == Skipped::PlainString && end - start >= 2)
        .map(|(start, end, _)| (line_of(start), chars[start + 1..end - 1].iter().collect()))
        .collect()
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

fn block_comment_len(rest: &[char]) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i + 1 < rest.len() {
        if rest[i] == '/' && rest[i + 1] == '*' {
            depth += 1;
            i += 2;
        } else if rest[i] == '*' && rest[i + 1] == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    rest.len()
}

/// The length of a `"..."` literal starting at `rest[0]`, from `from`.
fn string_len(rest: &[char], from: usize) -> usize {
    let mut i = from;
    while i < rest.len() {
        match rest[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    rest.len()
}

/// `Some(hashes)` when `rest` starts a raw string `r#*"`.
fn raw_string_hashes(rest: &[char]) -> Option<usize> {
    let hashes = rest[1..].iter().take_while(|c| **c == '#').count();
    (rest.get(1 + hashes) == Some(&'"')).then_some(hashes)
}

fn raw_string_len(rest: &[char], hashes: usize) -> usize {
    let mut i = 2 + hashes;
    while i < rest.len() {
        if rest[i] == '"'
            && rest[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    rest.len()
}

/// A char literal's length, or 0 for a lifetime (`'a`).
fn char_literal_len(rest: &[char]) -> usize {
    match rest.get(1) {
        Some('\\') => rest
            .iter()
            .skip(2)
            .position(|c| *c == '\'')
            .map_or(0, |p| p + 3),
        Some(_) if rest.get(2) == Some(&'\'') => 3,
        _ => 0,
    }
}

/// The crate folder and module path (`a::b`, `""` for the crate root) of a
/// library source file; `None` for tests, benches and binaries' extra files.
fn module_of(path: &str) -> Option<(String, String)> {
    let (krate, inner) = path.split_once("/src/")?;
    let inner = inner.strip_suffix(".rs")?;
    let module = match inner {
        "lib" | "main" => String::new(),
        _ => inner
            .strip_suffix("/mod")
            .unwrap_or(inner)
            .replace('/', "::"),
    };
    Some((krate.to_owned(), module))
}

/// Every `crate::` and `super::` path a module's text names, as absolute
/// module paths (unresolved: may name an item, not a module).
fn references(module: &str, text: &str) -> Vec<String> {
    let code = blank_literals(text);
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        found.push(path_at(&code[at + "crate::".len()..]));
    }
    let parent = module.rsplit_once("::").map_or("", |(parent, _)| parent);
    for (at, _) in code.match_indices("super::") {
        if at > 0 && code[..at].ends_with("super::") {
            continue;
        }
        let tail = path_at(&code[at + "super::".len()..]);
        let mut base = parent.to_owned();
        let mut tail = tail.as_str();
        while let Some(rest) = tail.strip_prefix("super::") {
            base = base
                .rsplit_once("::")
                .map_or(String::new(), |(p, _)| p.to_owned());
            tail = rest;
        }
        found.push(if base.is_empty() {
            tail.to_owned()
        } else {
            format!("{base}::{tail}")
        });
    }
    // `use crate::{a, b::c}` names several modules at once.
    for (at, _) in code.match_indices("crate::{") {
        let group = &code[at + "crate::{".len()..];
        let group = &group[..group.find('}').unwrap_or(group.len())];
        found.extend(group.split(',').map(|part| path_at(part.trim())));
    }
    found
}

/// The items a crate root re-exports (`pub use module::{A, B};`), each with
/// the module it comes from.
fn root_reexports(text: &str) -> BTreeMap<String, String> {
    let code = blank_literals(text);
    let mut found = BTreeMap::new();
    for statement in code.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let path = path
            .trim()
            .trim_start_matches("self::")
            .trim_start_matches("crate::");
        let (module, items) = match path.split_once("::{") {
            Some((module, items)) => (module, items.trim_end_matches('}').to_owned()),
            None => match path.rsplit_once("::") {
                Some((module, item)) => (module, item.to_owned()),
                None => continue,
            },
        };
        for item in items.split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            if !name.is_empty() && !name.contains('{') {
                found.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    found
}

/// The `a::b::c` path at the start of `text`.
fn path_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect::<String>()
        .trim_end_matches(':')
        .to_owned()
}

/// The longest known module that `path` is in or names.
fn resolve(path: &str, known: &BTreeSet<&str>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| known.contains(candidate.as_str()))
}

/// The edge between the two children of the deepest module containing both
/// `from` and `to`; `None` when one contains the other.
fn sibling_edge(from: &str, to: &str) -> Option<(String, String)> {
    let a: Vec<&str> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").collect()
    };
    let b: Vec<&str> = if to.is_empty() {
        Vec::new()
    } else {
        to.split("::").collect()
    };
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return None;
    }
    Some((a[..=common].join("::"), b[..=common].join("::")))
}

/// Cycles of three or more siblings (two-module cycles are reported apart).
fn longer_cycles(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().push(to);
    }
    let mut cycles = Vec::new();
    for start in next.keys() {
        let mut stack = vec![(*start, vec![*start])];
        while let Some((at, path)) = stack.pop() {
            for to in next.get(at).into_iter().flatten() {
                if *to == *start && path.len() > 2 && path.iter().all(|m| m >= start) {
                    cycles.push(format!("{} -> {start}", path.join(" -> ")));
                } else if !path.contains(to) && *to > *start {
                    let mut longer = path.clone();
                    longer.push(to);
                    stack.push((to, longer));
                }
            }
        }
    }
    cycles
}

/// The layering ARCHITECTURE.md states, read off `cargo tree` (each
/// package's own feature resolution, normal dependencies only): the pure
/// crates reach no async runtime, network stack or simulator, and the mock
/// provider reaches no dshc crate.
#[test]
fn the_crate_graph_keeps_its_layers() {
    let forbidden_in_pure = ["tokio", "hyper", "turmoil", "hyper-util"];
    let rules: &[(&str, &[&str])] = &[
        ("dshc-model", &forbidden_in_pure),
        ("dshc-deepseek", &forbidden_in_pure),
        ("dshc-scenario", &forbidden_in_pure),
        ("dshc-oracle", &forbidden_in_pure),
        (
            "mock-provider",
            &[
                "dshc-model",
                "dshc-deepseek",
                "dshc-scenario",
                "dshc-agent",
                "dshc-oracle",
                "dshc-reference",
                "dshc-runner",
                "dshc-fuzzing",
            ],
        ),
        ("dshc-agent", &["dshc-scenario"]),
        (
            "dshc-reference",
            &["dshc-oracle", "dshc-runner", "dshc-fuzzing"],
        ),
        (
            "dshc-oracle",
            &["dshc-reference", "dshc-agent", "dshc-runner"],
        ),
        ("dshc-runner", &["dshc-fuzzing"]),
    ];
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut broken = Vec::new();
    for (package, forbidden) in rules {
        let output = std::process::Command::new(&cargo)
            .current_dir(repository())
            .args([
                "tree",
                "--offline",
                "-e",
                "normal",
                "--prefix",
                "none",
                "-p",
                package,
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run cargo tree: {e}"));
        assert!(
            output.status.success(),
            "cargo tree -p {package}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let tree = String::from_utf8_lossy(&output.stdout);
        let reached: BTreeSet<&str> = tree
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        assert!(
            reached.contains(package),
            "{package} is not in its own tree"
        );
        for name in *forbidden {
            if reached.contains(name) {
                broken.push(format!("{package} depends on {name}"));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}
