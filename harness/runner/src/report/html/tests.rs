use super::*;

fn catalog(ids: &[&str]) -> Vec<Clause> {
    ids.iter()
        .map(|id| Clause {
            id: (*id).into(),
            text: format!("rule {id}"),
            level: Default::default(),
            excluded: None,
            signals: Vec::new(),
        })
        .collect()
}

/// A report as `dshc check` writes it, through JSON.
fn report(json: serde_json::Value) -> PageReport {
    serde_json::from_value(json).expect("a report")
}

fn hostile_report() -> PageReport {
    report(serde_json::json!({
        "implementation": {"name": "<script>alert(1)</script>", "version": "1", "language": "x"},
        "command": "run 'it'",
        "summary": {"passed": 1, "failed": 1, "skipped": 0, "expected_failures": 0, "invalid": 0},
        "cases": [
            {"position": 0, "id": "a/pass", "covers": ["03:R4"], "outcome": {"outcome": "pass"}},
            {"position": 1, "id": "a/fail", "covers": ["03:R4", "09:X"], "scenario": "scenarios/a/fail.toml",
             "outcome": {"outcome": "fail", "mismatches": [
                {"path": "steps[1].expect.prompt", "expected": "A\nB", "actual": "A\n<script>x</script>"}]}}
        ]
    }))
}

#[test]
fn adapter_text_is_escaped_everywhere() {
    let page = html_page(&catalog(&["03:R4"]), &[hostile_report()], &|_| {
        Some("title = \"</pre><script>\"".into())
    });
    assert!(!page.contains("<script"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        page.contains("&lt;/pre&gt;&lt;script&gt;"),
        "the source is escaped"
    );
    assert_eq!(escape("a\u{1b}[0m\"'&"), "a\\u{1b}[0m&quot;&#39;&amp;");
}

#[test]
fn the_matrix_has_a_row_per_clause_and_each_cell_links_to_its_cases() {
    let page = html_page(&catalog(&["03:R4", "01:A1"]), &[hostile_report()], &|_| {
        None
    });
    let matrix = &page[page.find("class=\"matrix\"").unwrap()..];
    let matrix = &matrix[..matrix.find("</table>").unwrap()];
    // Header, the two catalog clauses, then 09:X which only a case names.
    assert_eq!(matrix.matches("<tr>").count(), 4, "{matrix}");
    let covered = matrix.lines().find(|l| l.contains("03:R4")).unwrap();
    assert!(covered.contains("class=\"fail\""), "{covered}");
    assert!(covered.contains("1/2, 1 failed"), "{covered}");
    let anchor = "href=\"#r0-k0\"";
    assert!(covered.contains(anchor));
    assert!(page.contains("<tr id=\"r0-k0\">"), "the link has a target");
    let uncovered = matrix.lines().find(|l| l.contains("01:A1")).unwrap();
    assert!(uncovered.contains("class=\"none\""), "{uncovered}");
    // The clause's cases link to the failure block.
    let row = &page[page.find("<tr id=\"r0-k0\">").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("href=\"#r0-c1\""), "{row}");
    assert!(page.contains("<div class=\"case\" id=\"r0-c1\">"));
}

#[test]
fn a_failure_shows_its_diff_replay_and_source() {
    let page = html_page(&catalog(&["03:R4"]), &[hostile_report()], &|path| {
        (path == "scenarios/a/fail.toml").then(|| "format = 2\n".to_owned())
    });
    assert!(page.contains("<code>steps[1].expect.prompt</code>"));
    assert!(page.contains("<span class=\"eq\">  A</span>"), "{page}");
    assert!(page.contains("<span class=\"del\">- B</span>"));
    assert!(page.contains("<span class=\"ins\">+ &lt;script&gt;x&lt;/script&gt;</span>"));
    assert!(
        page.contains("dshc check --adapter &#39;run &#39;\\&#39;&#39;it&#39;\\&#39;&#39;&#39; scenarios/a/fail.toml"),
        "{page}"
    );
    assert!(page.contains("<pre class=\"source\">format = 2\n</pre>"));
}

#[test]
fn an_old_report_without_the_optional_fields_renders() {
    let old = report(serde_json::json!({
        "implementation": {"name": "old", "version": "0", "language": "x"},
        "cases": [
            {"id": "a/x", "covers": ["03:R4"], "outcome": {"outcome": "errored", "context": "boom"},
             "expected_failure": "upstream bug #1"},
            {"id": "a/y", "covers": ["03:R4"], "outcome": {"outcome": "timed_out", "timeout_ms": 5},
             "cache_breaks": ["request 2: section guide changed"]}
        ]
    }));
    let page = html_page(&catalog(&["03:R4"]), &[old], &|_| None);
    // Recounted: one expected failure, one failure.
    assert!(
        page.contains(
            "<td class=\"fail\"><a href=\"#r0-failures\">1</a></td><td class=\"xfail\">1</td>"
        ),
        "{page}"
    );
    assert!(page.contains("upstream bug #1") && page.contains("boom"));
    assert!(page.contains("no reply within 5 ms"));
    assert!(page.contains("request 2: section guide changed"));
    assert!(
        page.contains("scenarios/a/y.toml"),
        "the replay guesses the path from the id"
    );
}

#[test]
fn the_same_reports_give_the_same_bytes() {
    let render = || {
        html_page(
            &catalog(&["03:R4"]),
            &[hostile_report(), hostile_report()],
            &|_| None,
        )
    };
    assert_eq!(render(), render());
}
