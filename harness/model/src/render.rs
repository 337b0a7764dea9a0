//! Strict `{{name}}` rendering of sections and the runtime-context snapshot
//! (spec 03).
//!
//! Rendering is late: the loop renders the post-waterfall assembly, so this
//! module only reads an [`Assembly`] and never touches the registry. Error
//! texts are upstream's, byte for byte, because conformance compares them.

use std::rc::Rc;

use super::assembled::{Assembly, PromptEntry, Variables};
use super::js::{JsError, slice_utf16, utf16_len};

/// Which list an entry came from; it appears in error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A system prompt section.
    Section,
    /// A runtime-context entry.
    Context,
}

impl EntryKind {
    fn label(self) -> &'static str {
        match self {
            EntryKind::Section => "section",
            EntryKind::Context => "context",
        }
    }
}

/// The preamble of a non-empty runtime-context snapshot (03 R7).
pub const SNAPSHOT_PREAMBLE: &str =
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n";

/// The pattern variable names must match, as upstream prints it.
pub const VARIABLE_NAME_PATTERN: &str = "/^[a-z][a-z0-9_]*$/";

/// Whether `name` matches `^[a-z][a-z0-9_]*$`.
pub fn is_valid_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

/// Interpolate one entry's text (03 R1–R3).
///
/// `text` is `None` when a text provider returned `undefined`; upstream then
/// fails reading `indexOf` of it, and so does this.
pub fn interpolate(
    name: &str,
    text: Option<&str>,
    variables: &Variables,
    kind: EntryKind,
) -> Result<String, JsError> {
    let mut out = String::with_capacity(text.map_or(0, str::len));
    interpolate_into(&mut out, name, text, variables, kind)?;
    Ok(out)
}

/// The first position at or after `from` where `byte` occurs twice in a
/// row (`{{`, `}}`): a byte search, cheaper than a substring searcher on
/// the short texts a prompt is made of.
fn find_pair(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    let mut at = from;
    while let Some(offset) = memchr::memchr(byte, bytes.get(at..)?) {
        let found = at + offset;
        if bytes.get(found + 1) == Some(&byte) {
            return Some(found);
        }
        at = found + 1;
    }
    None
}

/// [`interpolate`], appending to `out` (on an error, `out` may hold part of
/// the text).
pub fn interpolate_into(
    out: &mut String,
    name: &str,
    text: Option<&str>,
    variables: &Variables,
    kind: EntryKind,
) -> Result<(), JsError> {
    let text = text.ok_or_else(|| JsError::read_of_undefined("indexOf"))?;
    let kind = kind.label();
    let mut last = 0;
    // `{` and `}` are ASCII, so byte positions find the same groups as
    // JavaScript's code-unit positions; only the error snippet needs units.
    let bytes = text.as_bytes();
    while let Some(open) = find_pair(bytes, last, b'{') {
        let after_open = &text[open + 2..];
        let inner_len =
            memchr::memchr2(b'{', b'}', after_open.as_bytes()).unwrap_or(after_open.len());
        let closes = after_open[inner_len..].starts_with("}}");
        if !closes {
            if find_pair(bytes, open + 2, b'}').is_some() {
                let open_units = utf16_len(&text[..open]);
                let snippet = slice_utf16(text, open_units, open_units + 16);
                return Err(JsError::error(format!(
                    "malformed prompt variable reference at \"{snippet}\u{2026}\" in {kind} \"{name}\" (references are complete simple {{{{name}}}} groups)"
                )));
            }
            out.push_str(&text[last..open + 2]);
            last = open + 2;
            continue;
        }
        let reference = &after_open[..inner_len];
        if !is_valid_variable_name(reference) {
            return Err(JsError::error(format!(
                "malformed prompt variable reference \"{{{{{reference}}}}}\" in {kind} \"{name}\" (variable names match {VARIABLE_NAME_PATTERN})"
            )));
        }
        match variables.get(reference) {
            None => {
                let known = variables.keys();
                let known = if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                };
                return Err(JsError::error(format!(
                    "unknown prompt variable \"{{{{{reference}}}}}\" in {kind} \"{name}\"; registered variables: {known}"
                )));
            }
            Some(None) => {
                return Err(JsError::error(format!(
                    "prompt variable \"{{{{{reference}}}}}\" has no value for this assembly ({kind} \"{name}\")"
                )));
            }
            Some(Some(value)) => {
                out.push_str(&text[last..open]);
                out.push_str(value);
                last = open + 2 + inner_len + 2;
            }
        }
    }
    out.push_str(&text[last..]);
    Ok(())
}

/// The system prompt text: every section interpolated in order, empty results
/// dropped, the rest joined by a blank line (03 R4). Rendered into one
/// buffer: the same text as joining [`render_prompt_sections`].
pub fn render_prompt(assembly: &Assembly) -> Result<String, JsError> {
    let capacity = assembly
        .sections
        .iter()
        .map(|section| section.text.as_deref().map_or(0, str::len) + 2)
        .sum();
    let mut out = String::with_capacity(capacity);
    join_rendered(
        &mut out,
        &assembly.sections,
        &assembly.variables,
        EntryKind::Section,
    )?;
    Ok(out)
}

/// Append `entries` interpolated, empty ones dropped, the rest joined by a
/// blank line; whether anything was appended.
fn join_rendered(
    out: &mut String,
    entries: &[PromptEntry],
    variables: &Variables,
    kind: EntryKind,
) -> Result<bool, JsError> {
    let base = out.len();
    for entry in entries {
        let before = out.len();
        if before > base {
            out.push_str("\n\n");
        }
        let start = out.len();
        interpolate_into(out, &entry.name, entry.text.as_deref(), variables, kind)?;
        if out.len() == start {
            // An empty entry is dropped, separator and all.
            out.truncate(before);
        }
    }
    Ok(out.len() > base)
}

/// The sections `render_prompt` joins: each interpolated, empty ones dropped,
/// in list order (03 R4), so a caller can tell which section each part of
/// the system text came from.
pub fn render_prompt_sections(assembly: &Assembly) -> Result<Vec<PromptEntry>, JsError> {
    let mut parts = Vec::with_capacity(assembly.sections.len());
    for section in &assembly.sections {
        let text = interpolate(
            &section.name,
            section.text.as_deref(),
            &assembly.variables,
            EntryKind::Section,
        )?;
        if !text.is_empty() {
            parts.push(PromptEntry {
                name: section.name.clone(),
                text: Some(Rc::from(text)),
            });
        }
    }
    Ok(parts)
}

/// The system text of rendered sections: their texts joined with `"\n\n"`.
pub fn join_prompt_sections(sections: &[PromptEntry]) -> String {
    let texts: Vec<&str> = sections
        .iter()
        .filter_map(|section| section.text.as_deref())
        .collect();
    texts.join("\n\n")
}

/// Each context interpolated, empty ones dropped (03 R6).
pub fn render_context_sections(assembly: &Assembly) -> Result<Vec<PromptEntry>, JsError> {
    let mut sections = Vec::with_capacity(assembly.contexts.len());
    for context in &assembly.contexts {
        let text = interpolate(
            &context.name,
            context.text.as_deref(),
            &assembly.variables,
            EntryKind::Context,
        )?;
        if !text.is_empty() {
            sections.push(PromptEntry {
                name: context.name.clone(),
                text: Some(Rc::from(text)),
            });
        }
    }
    Ok(sections)
}

/// The snapshot text for rendered context sections (03 R7): `""` when the
/// body is empty, else the preamble and the body.
pub fn join_context_sections(sections: &[PromptEntry]) -> String {
    let body: Vec<&str> = sections.iter().filter_map(|s| s.text.as_deref()).collect();
    let body = body.join("\n\n");
    if body.is_empty() {
        String::new()
    } else {
        format!("{SNAPSHOT_PREAMBLE}{body}")
    }
}

/// The complete snapshot for an assembly.
pub fn render_context_snapshot(assembly: &Assembly) -> Result<String, JsError> {
    let mut out = String::from(SNAPSHOT_PREAMBLE);
    let any = join_rendered(
        &mut out,
        &assembly.contexts,
        &assembly.variables,
        EntryKind::Context,
    )?;
    Ok(if any { out } else { String::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        let mut v = Variables::default();
        v.set("model", Some("m".into()));
        v.set("cwd", None);
        v
    }

    fn render(text: &str) -> Result<String, String> {
        interpolate("s", Some(text), &vars(), EntryKind::Section).map_err(|e| e.message)
    }

    // The decision table of spec 03 §4, row by row.
    #[test]
    fn decision_table_rows() {
        assert_eq!(render("use {{model}}"), Ok("use m".into()));
        assert_eq!(render("a {{ b"), Ok("a {{ b".into()));
        assert_eq!(render("{{{{"), Ok("{{{{".into()));
        assert_eq!(render("{{a} b"), Ok("{{a} b".into()));
        assert_eq!(
            render("{{a} }}"),
            Err("malformed prompt variable reference at \"{{a} }}\u{2026}\" in section \"s\" (references are complete simple {{name}} groups)".into())
        );
        assert!(
            render("{{{model}}}")
                .unwrap_err()
                .starts_with("malformed prompt variable reference at \"{{{model}}}\u{2026}\"")
        );
        assert_eq!(render("{{model}}}"), Ok("m}".into()));
        assert_eq!(render("}} {{model}}"), Ok("}} m".into()));
        assert_eq!(
            render("{{}}"),
            Err("malformed prompt variable reference \"{{}}\" in section \"s\" (variable names match /^[a-z][a-z0-9_]*$/)".into())
        );
        assert!(
            render("{{ model }}")
                .unwrap_err()
                .contains("\"{{ model }}\"")
        );
        for bad in ["{{Model}}", "{{_x}}", "{{1a}}"] {
            assert!(
                render(bad)
                    .unwrap_err()
                    .starts_with("malformed prompt variable reference \""),
                "{bad}"
            );
        }
        assert_eq!(
            render("{{constructor}}"),
            Err("unknown prompt variable \"{{constructor}}\" in section \"s\"; registered variables: model, cwd".into())
        );
        assert_eq!(
            render("{{cwd}}"),
            Err(
                "prompt variable \"{{cwd}}\" has no value for this assembly (section \"s\")".into()
            )
        );
        let none = Variables::default();
        assert_eq!(
            interpolate("c", Some("{{nope}}"), &none, EntryKind::Context)
                .unwrap_err()
                .message,
            "unknown prompt variable \"{{nope}}\" in context \"c\"; registered variables: (none)"
        );
    }

    #[test]
    fn substituted_values_are_not_rescanned() {
        let mut v = Variables::default();
        v.set("model", Some("{{cwd}}".into()));
        assert_eq!(
            interpolate("s", Some("{{model}}"), &v, EntryKind::Section).unwrap(),
            "{{cwd}}"
        );
    }

    #[test]
    fn malformed_snippet_is_sixteen_utf16_units() {
        let err = render("{{é{ long tail here}}").unwrap_err();
        assert!(err.contains("\"{{é{ long tail h\u{2026}\""), "{err}");
    }

    #[test]
    fn undefined_text_fails_like_reading_a_property_of_undefined() {
        let err = interpolate("s", None, &vars(), EntryKind::Section).unwrap_err();
        assert_eq!(err.name, "TypeError");
        assert_eq!(
            err.message,
            "Cannot read properties of undefined (reading 'indexOf')"
        );
    }
}
