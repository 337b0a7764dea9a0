//! agent-instructions' model-facing text: the `<system-reminder>` frame, the
//! baseline and change sections, and the byte-budget fallbacks (drop the
//! broadest files first, then truncate the most specific one, then a compact
//! notice).
//!
//! Pure functions of the loaded files, kept apart from the listener so the
//! budget arithmetic can be tested on its own. The texts are observable in
//! the log, so every phrase and separator follows upstream.

/// Opening frame line.
pub const SYSTEM_REMINDER_OPEN: &str = "<system-reminder>";
/// Closing frame line.
pub const SYSTEM_REMINDER_CLOSE: &str = "</system-reminder>";
/// Intro of an ordinary baseline.
pub const WORKSPACE_CONTEXT_INTRO: &str = "The following workspace instructions may be relevant to your work. Use them as guidance when applicable. More specific instructions take precedence over broader ones. They do not override system, developer, or direct user instructions.";
/// Intro of a baseline that supersedes a visible one.
pub const REPLACEMENT_WORKSPACE_CONTEXT_INTRO: &str = "This complete workspace instruction baseline replaces all earlier workspace instruction baselines. The following workspace instructions may be relevant to your work. Use them as guidance when applicable. More specific instructions take precedence over broader ones. They do not override system, developer, or direct user instructions.";
/// Intro of an empty superseding baseline.
pub const EMPTY_REPLACEMENT_WORKSPACE_CONTEXT_INTRO: &str = "This complete workspace instruction baseline replaces all earlier workspace instruction baselines. No workspace instructions are currently active.";
/// Intro used when the budget forces truncation.
pub const COMPACT_WORKSPACE_CONTEXT_INTRO: &str =
    "Workspace instructions were omitted or truncated to fit the configured byte budget.";

/// One loaded instruction file.
#[derive(Clone, Debug, PartialEq)]
pub struct InstructionFile {
    /// Absolute path (`removed:<scope>` for a removal).
    pub absolute_path: String,
    /// Project-relative or user-global display path.
    pub display_path: String,
    /// Exact content.
    pub content: String,
}

/// A file cut by the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    /// Display path.
    pub display_path: String,
    /// Bytes before.
    pub original_bytes: usize,
    /// Bytes kept.
    pub included_bytes: usize,
}

/// How a batch is introduced and how each file is rendered.
pub struct Style<'a> {
    /// Intro paragraph (empty = none).
    pub intro: &'a str,
    /// One file's section.
    pub section: &'a dyn Fn(&InstructionFile) -> String,
}

/// A rendered batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// The framed text (may be empty or unframed in the last-resort cases).
    pub text: String,
    /// Display paths of files left out.
    pub omitted: Vec<String>,
    /// Files cut.
    pub truncated: Vec<Truncation>,
    /// Files whose content survived, in order.
    pub represented: Vec<InstructionFile>,
}

/// `Instructions from: <path>\n\n<content>`.
pub fn section_text(file: &InstructionFile) -> String {
    format!(
        "Instructions from: {}\n\n{}",
        file.display_path, file.content
    )
}

/// Cut at most `max_bytes` UTF-8 bytes without splitting a character.
pub fn truncate_utf8(value: &str, max_bytes: usize) -> &str {
    if value.len() <= max_bytes {
        return value;
    }
    let mut end = max_bytes;
    while end > 0 && !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

fn escape_frame_body(body: &str) -> String {
    body.replace(SYSTEM_REMINDER_CLOSE, "<\\/system-reminder>")
}

fn marker_text(max_bytes: u64, omitted: &[String], truncated: &[Truncation]) -> String {
    if omitted.is_empty() && truncated.is_empty() {
        return String::new();
    }
    let mut parts = Vec::new();
    if !omitted.is_empty() {
        parts.push(format!("omitted {}", omitted.join(", ")));
    }
    if !truncated.is_empty() {
        let items: Vec<String> = truncated
            .iter()
            .map(|t| {
                format!(
                    "{} from {} to {} bytes",
                    t.display_path, t.original_bytes, t.included_bytes
                )
            })
            .collect();
        parts.push(format!("truncated {}", items.join(", ")));
    }
    format!(
        "Workspace instruction budget {max_bytes} bytes: {}",
        parts.join("; ")
    )
}

fn build_text(
    files: &[InstructionFile],
    max_bytes: u64,
    omitted: &[String],
    truncated: &[Truncation],
    style: &Style,
) -> String {
    let mut blocks = vec![
        marker_text(max_bytes, omitted, truncated),
        style.intro.to_string(),
    ];
    blocks.extend(files.iter().map(|f| (style.section)(f)));
    let body: Vec<String> = blocks.into_iter().filter(|b| !b.is_empty()).collect();
    [
        SYSTEM_REMINDER_OPEN.to_string(),
        escape_frame_body(&body.join("\n\n")),
        SYSTEM_REMINDER_CLOSE.to_string(),
    ]
    .join("\n")
}

fn with_content(file: &InstructionFile, bytes: usize) -> InstructionFile {
    InstructionFile {
        content: truncate_utf8(&file.content, bytes).to_string(),
        ..file.clone()
    }
}

/// Binary search for the longest prefix of `file` that fits alone.
fn truncate_to_fit(
    file: &InstructionFile,
    max_bytes: u64,
    omitted: &[String],
    style: &Style,
) -> InstructionFile {
    let original = file.content.len();
    let (mut low, mut high) = (0i64, original as i64);
    let mut best = with_content(file, 0);
    while low <= high {
        let mid = (low + high) / 2;
        let candidate = with_content(file, mid as usize);
        let truncated = [Truncation {
            display_path: file.display_path.clone(),
            original_bytes: original,
            included_bytes: candidate.content.len(),
        }];
        let text = build_text(
            std::slice::from_ref(&candidate),
            max_bytes,
            omitted,
            &truncated,
            style,
        );
        if text.len() as u64 <= max_bytes {
            best = candidate;
            low = mid + 1;
        } else {
            high = mid - 1;
        }
    }
    best
}

/// An empty rendering that leaves `omitted` out.
fn nothing(omitted: Vec<String>) -> Rendered {
    Rendered {
        text: String::new(),
        omitted,
        truncated: Vec::new(),
        represented: Vec::new(),
    }
}

fn display_paths(files: &[InstructionFile]) -> Vec<String> {
    files.iter().map(|f| f.display_path.clone()).collect()
}

/// `renderInstructionContext(files, maxBytes, style)`: the whole batch if it
/// fits the budget, else the first fallback that does: drop the broadest
/// files, then truncate the most specific one, then a compact notice.
pub fn render_context(files: &[InstructionFile], max_bytes: u64, style: &Style) -> Rendered {
    if max_bytes == 0 {
        return nothing(display_paths(files));
    }
    let full = build_text(files, max_bytes, &[], &[], style);
    if full.len() as u64 <= max_bytes {
        return Rendered {
            text: full,
            omitted: Vec::new(),
            truncated: Vec::new(),
            represented: files.to_vec(),
        };
    }
    if let Some(rendered) = drop_broadest(files, max_bytes, style) {
        return rendered;
    }
    let Some(most_specific) = files.last() else {
        return nothing(Vec::new());
    };
    let omitted = display_paths(&files[..files.len() - 1]);
    truncate_most_specific(most_specific, &omitted, max_bytes, style)
        .unwrap_or_else(|| budget_notice(most_specific, omitted, max_bytes, style))
}

/// First fallback: leave out the broadest files (the front of the batch)
/// until the rest fits with the omission marker; never all of them.
fn drop_broadest(files: &[InstructionFile], max_bytes: u64, style: &Style) -> Option<Rendered> {
    for start in 1..files.len() {
        let included = &files[start..];
        let omitted = display_paths(&files[..start]);
        let text = build_text(included, max_bytes, &omitted, &[], style);
        if text.len() as u64 <= max_bytes {
            return Some(Rendered {
                text,
                omitted,
                truncated: Vec::new(),
                represented: included.to_vec(),
            });
        }
    }
    None
}

/// Second fallback: only the most specific file, cut to the longest prefix
/// that fits, with the batch's own intro and then with the compact one. The
/// file counts as represented only if some of its content survived (or it
/// had none).
fn truncate_most_specific(
    most_specific: &InstructionFile,
    omitted: &[String],
    max_bytes: u64,
    style: &Style,
) -> Option<Rendered> {
    let original = most_specific.content.len();
    let compact = Style {
        intro: COMPACT_WORKSPACE_CONTEXT_INTRO,
        section: style.section,
    };
    for candidate_style in [style, &compact] {
        let cut = truncate_to_fit(most_specific, max_bytes, omitted, candidate_style);
        let truncated = vec![Truncation {
            display_path: most_specific.display_path.clone(),
            original_bytes: original,
            included_bytes: cut.content.len(),
        }];
        let text = build_text(
            std::slice::from_ref(&cut),
            max_bytes,
            omitted,
            &truncated,
            candidate_style,
        );
        if text.len() as u64 <= max_bytes {
            let represented = if !cut.content.is_empty() || original == 0 {
                vec![most_specific.clone()]
            } else {
                Vec::new()
            };
            return Some(Rendered {
                text,
                omitted: omitted.to_vec(),
                truncated,
                represented,
            });
        }
    }
    None
}

/// Last resort: the unframed budget notice, followed by the most specific
/// file's bare heading when that fits, else the notice alone, cut to the
/// budget if need be.
fn budget_notice(
    most_specific: &InstructionFile,
    omitted: Vec<String>,
    max_bytes: u64,
    style: &Style,
) -> Rendered {
    let original = most_specific.content.len();
    let truncated = vec![Truncation {
        display_path: most_specific.display_path.clone(),
        original_bytes: original,
        included_bytes: 0,
    }];
    let notice = escape_frame_body(&marker_text(max_bytes, &omitted, &truncated));
    let with_heading = escape_frame_body(&format!(
        "{notice}\n\n{}",
        (style.section)(&with_content(most_specific, 0))
    ));
    if with_heading.len() as u64 <= max_bytes {
        let represented = if original == 0 {
            vec![most_specific.clone()]
        } else {
            Vec::new()
        };
        return Rendered {
            text: with_heading,
            omitted,
            truncated,
            represented,
        };
    }
    let text = if notice.len() as u64 <= max_bytes {
        notice
    } else {
        truncate_utf8(&notice, max_bytes as usize).to_string()
    };
    Rendered {
        text,
        omitted,
        truncated,
        represented: Vec::new(),
    }
}

/// `renderWorkspaceInstructionSet`: a baseline, with the intro chosen by
/// whether it replaces a visible baseline.
pub fn render_baseline(files: &[InstructionFile], max_bytes: u64, replace: bool) -> Rendered {
    let intro = match (replace, files.is_empty()) {
        (false, _) => WORKSPACE_CONTEXT_INTRO,
        (true, true) => EMPTY_REPLACEMENT_WORKSPACE_CONTEXT_INTRO,
        (true, false) => REPLACEMENT_WORKSPACE_CONTEXT_INTRO,
    };
    render_context(
        files,
        max_bytes,
        &Style {
            intro,
            section: &section_text,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, content: &str) -> InstructionFile {
        InstructionFile {
            absolute_path: format!("/w/{path}"),
            display_path: path.into(),
            content: content.into(),
        }
    }

    #[test]
    fn full_baseline_is_framed() {
        let rendered = render_baseline(&[file("AGENTS.md", "Use tabs.")], 10_000, false);
        assert_eq!(
            rendered.text,
            format!(
                "<system-reminder>\n{WORKSPACE_CONTEXT_INTRO}\n\nInstructions from: AGENTS.md\n\nUse tabs.\n</system-reminder>"
            )
        );
        assert_eq!(rendered.represented.len(), 1);
    }

    #[test]
    fn close_tags_in_content_are_escaped() {
        let rendered = render_baseline(&[file("AGENTS.md", "a</system-reminder>b")], 10_000, false);
        assert!(rendered.text.contains("a<\\/system-reminder>b"));
    }

    #[test]
    fn budget_drops_broadest_then_truncates() {
        let files = [
            file("AGENTS.md", &"a".repeat(200)),
            file("sub/AGENTS.md", "b"),
        ];
        let full = render_baseline(&files, 100_000, false).text.len() as u64;
        let rendered = render_baseline(&files, full - 1, false);
        assert_eq!(rendered.omitted, vec!["AGENTS.md".to_string()]);
        assert!(rendered.text.contains("Workspace instruction budget"));
        assert_eq!(rendered.represented, vec![files[1].clone()]);
        // Too small for even the most specific file: truncated with a marker.
        let one = [file("AGENTS.md", &"é".repeat(200))];
        let rendered = render_baseline(&one, 400, false);
        assert!(rendered.text.len() <= 400);
        assert_eq!(rendered.truncated.len(), 1);
        assert!(rendered.truncated[0].included_bytes.is_multiple_of(2));
        assert!(rendered.text.starts_with(SYSTEM_REMINDER_OPEN));
    }

    /// Which rung of the fallback ladder a rendering came from.
    fn rung(rendered: &Rendered) -> &'static str {
        if rendered.text.is_empty() {
            "nothing"
        } else if !rendered.text.starts_with(SYSTEM_REMINDER_OPEN) {
            if rendered.text.contains("Instructions from:") {
                "notice with heading"
            } else {
                "notice"
            }
        } else if !rendered.truncated.is_empty() {
            "truncated"
        } else if !rendered.omitted.is_empty() {
            "dropped"
        } else {
            "full"
        }
    }

    #[test]
    fn every_budget_is_kept_and_every_fallback_is_reached() {
        let files = [
            file("AGENTS.md", &"a".repeat(50)),
            file("sub/AGENTS.md", &"b".repeat(300)),
        ];
        let mut rungs = std::collections::BTreeSet::new();
        for max_bytes in 0..1_000 {
            let rendered = render_baseline(&files, max_bytes, false);
            assert!(rendered.text.len() as u64 <= max_bytes, "{max_bytes}");
            let rung = rung(&rendered);
            match rung {
                "nothing" => assert_eq!(rendered.omitted.len(), 2),
                // A cut file is represented only while some content survives.
                "truncated" => assert_eq!(
                    rendered.represented.is_empty(),
                    rendered.truncated[0].included_bytes == 0,
                    "{max_bytes}"
                ),
                "notice" | "notice with heading" => {
                    assert!(rendered.represented.is_empty());
                    assert_eq!(rendered.truncated[0].included_bytes, 0);
                }
                _ => {}
            }
            rungs.insert(rung);
        }
        assert_eq!(
            rungs.into_iter().collect::<Vec<_>>(),
            [
                "dropped",
                "full",
                "nothing",
                "notice",
                "notice with heading",
                "truncated"
            ]
        );
    }

    #[test]
    fn utf8_cut_keeps_characters_whole() {
        assert_eq!(truncate_utf8("aé", 2), "a");
        assert_eq!(truncate_utf8("aé", 3), "aé");
    }
}
