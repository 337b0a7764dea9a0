//! The few `node:path` (POSIX) functions agent-instructions' discovery and
//! display rules are written in: `resolve`, `join`, `dirname`, `basename`,
//! `relative`. Display paths and scope keys are observable in the log, so
//! their corner cases (`.`, `..`, the root) follow Node.

/// Collapse `.`/`..` segments and duplicate slashes (`path.normalize`
/// without the trailing-slash rule, which no caller here needs). A path
/// with nothing to collapse, as most are, is returned as it is.
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let body = if absolute { &path[1..] } else { path };
    if !body.is_empty()
        && body
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
    {
        return path.to_owned();
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in body.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.last().is_some_and(|s| *s != "..") {
                    segments.pop();
                } else if !absolute {
                    segments.push("..");
                }
            }
            other => segments.push(other),
        }
    }
    let mut normal = String::with_capacity(path.len() + 1);
    if absolute {
        normal.push('/');
    }
    for (index, segment) in segments.iter().enumerate() {
        if index > 0 {
            normal.push('/');
        }
        normal.push_str(segment);
    }
    if normal.is_empty() {
        normal.push('.');
    }
    normal
}

/// `path.isAbsolute`.
pub fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
}

/// `path.resolve(base, path)`: `path` if absolute, else against `base`
/// (itself absolute).
pub fn resolve(base: &str, path: &str) -> String {
    if is_absolute(path) {
        normalize(path)
    } else {
        normalize(&format!("{base}/{path}"))
    }
}

/// `path.join(a, b)`.
pub fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => ".".into(),
        (true, false) => normalize(b),
        (false, true) => normalize(a),
        (false, false) => normalize(&format!("{a}/{b}")),
    }
}

/// `path.dirname`.
pub fn dirname(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.starts_with('/') { "/" } else { "." }.into();
    }
    match trimmed.rfind('/') {
        None => ".".into(),
        Some(0) => "/".into(),
        Some(index) => trimmed[..index].trim_end_matches('/').to_string(),
    }
}

/// `path.basename`.
pub fn basename(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or_default().to_string()
}

/// `path.relative(from, to)` for absolute paths.
pub fn relative(from: &str, to: &str) -> String {
    let from = normalize(from);
    let to = normalize(to);
    if from == to {
        return String::new();
    }
    let from_segments: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let to_segments: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = from_segments
        .iter()
        .zip(&to_segments)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<&str> = vec![".."; from_segments.len() - common];
    parts.extend(&to_segments[common..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_posix_semantics() {
        assert_eq!(dirname("AGENTS.md"), ".");
        assert_eq!(dirname("sub/AGENTS.md"), "sub");
        assert_eq!(dirname("/work"), "/");
        assert_eq!(dirname("/"), "/");
        assert_eq!(dirname("/work/sub/a.rs"), "/work/sub");
        assert_eq!(basename("sub/AGENTS.md"), "AGENTS.md");
        assert_eq!(join("/work", "AGENTS.md"), "/work/AGENTS.md");
        assert_eq!(join("/work", "."), "/work");
        assert_eq!(join("/work/sub", ".."), "/work");
        assert_eq!(resolve("/work", "sub/../x.rs"), "/work/x.rs");
        assert_eq!(resolve("/work", "/etc//x"), "/etc/x");
        assert_eq!(relative("/work", "/work"), "");
        assert_eq!(relative("/work", "/work/sub/AGENTS.md"), "sub/AGENTS.md");
        assert_eq!(relative("/work/sub", "/work"), "..");
        assert_eq!(relative("/work/a", "/work/b/c"), "../b/c");
        assert_eq!(relative("/", "/work"), "work");
    }

    /// Node's `path.posix.join` and `path.posix.resolve` on paths with
    /// something to collapse, or nothing.
    #[test]
    fn normalizing_follows_node() {
        let cases = [
            (join("a", "../.."), ".."),
            (join("", "x"), "x"),
            (join("a/b", "../../.."), ".."),
            (join("./a", "./b"), "a/b"),
            (join("a//b", "c"), "a/b/c"),
            (join("..", "a"), "../a"),
            (join("a", ".."), "."),
            (resolve("/", ".."), "/"),
            (resolve("/w", "../../x"), "/x"),
            (resolve("/w/", "./"), "/w"),
            (resolve("/w", "a/b"), "/w/a/b"),
            (resolve("/w", "//"), "/"),
        ];
        for (normal, node) in cases {
            assert_eq!(normal, node);
        }
    }
}
