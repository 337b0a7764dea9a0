//! The HTML report in a real browser: `dshc check --report-dir` and `dshc
//! report --html` write pages that headless Chromium (Debian's package,
//! installed by `.ci/install-chromium.sh`) renders with the clause matrix,
//! one row per clause and one column per implementation, and a failing
//! case's diff; a screenshot of the merged page is kept as an artifact
//! (`target/report-screenshot.png`). Without Chromium the test fails, naming
//! the script that installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const CHROMIUM: &str = "/usr/bin/chromium";
const INSTALL_SCRIPT: &str = ".ci/install-chromium.sh";
/// The longest one page may take to render.
const RENDER_TIMEOUT: Duration = Duration::from_secs(60);

/// Two sections, `A` and `B <script>` (text an adapter could send back),
/// expected to render as `expected`.
fn scenario(expected: &str) -> String {
    format!(
        "format = 2\ntitle = \"two sections join with a blank line\"\ncovers = [\"03:R4\"]\n\
         [config]\ninclude_harness_identity = false\n\n\
         [[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \"A\"\n\n\
         [[steps]]\ndo = \"section\"\nname = \"b\"\norder = 2\ntext = \"B <script>\"\n\n\
         [[steps]]\ndo = \"assemble\"\nexpect.prompt = {}\n",
        serde_json::to_string(expected).unwrap()
    )
}

const CATALOG: &str = "[[clause]]\nid = \"03:R4\"\ntext = \"renderPrompt joins sections with a blank line\"\n\
                       [[clause]]\nid = \"03:R9\"\ntext = \"a clause no scenario here covers\"\n";

/// Chromium, headless, in a fresh profile; `mode` is `--dump-dom` or
/// `--screenshot=PATH`. Returns stdout.
#[expect(
    clippy::disallowed_methods,
    reason = "a deadline on a real browser process, polled on the wall clock"
)]
fn chromium(page: &Path, mode: &str, profile: &Path) -> String {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the browser test needs Debian's chromium package; \
         install it with {INSTALL_SCRIPT} (as root, or with sudo)"
    );
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let deadline = std::time::Instant::now() + RENDER_TIMEOUT;
    loop {
        if child.try_wait().expect("chromium waits").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not render {} within {RENDER_TIMEOUT:?}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reader").expect("chromium's output")
}

/// The element `<tag ... class="class" ...>` .. `</tag>` of a dumped DOM.
fn element<'a>(dom: &'a str, tag: &str, class: &str) -> &'a str {
    let start = dom
        .find(&format!("<{tag} class=\"{class}\""))
        .unwrap_or_else(|| panic!("no <{tag} class={class}> in the DOM:\n{dom}"));
    let rest = &dom[start..];
    let end = rest.find(&format!("</{tag}>")).expect("closed");
    &rest[..end]
}

/// The cells of each row of a table, as (class, text without tags).
fn rows(table: &str) -> Vec<Vec<(String, String)>> {
    table
        .split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<t")
                .skip(1)
                .filter(|cell| cell.starts_with('d') || cell.starts_with('h'))
                .map(|cell| {
                    let class = cell
                        .split("class=\"")
                        .nth(1)
                        .and_then(|rest| rest.split('"').next())
                        .unwrap_or("")
                        .to_owned();
                    let mut text = String::new();
                    let mut in_tag = true;
                    for c in cell.chars() {
                        match c {
                            '<' => in_tag = true,
                            '>' => in_tag = false,
                            c if !in_tag => text.push(c),
                            _ => {}
                        }
                    }
                    (class, text.trim().to_owned())
                })
                .collect()
        })
        .collect()
}

fn screenshot_path() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target>/tmp`; the artifact goes in `<target>`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target folder")
        .join("report-screenshot.png")
}

#[test]
fn the_report_page_renders_in_chromium_with_the_matrix_and_the_diff() {
    let root = std::env::temp_dir().join(format!("dshc-report-page-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("scenarios/assembly")).unwrap();
    std::fs::write(root.join("scenarios/clauses.toml"), CATALOG).unwrap();
    std::fs::write(
        root.join("scenarios/assembly/pass.toml"),
        scenario("A\n\nB <script>"),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/assembly/fail.toml"),
        scenario("A\n\nC"),
    )
    .unwrap();
    let dshc = env!("CARGO_BIN_EXE_dshc");
    let check = Command::new(dshc)
        .args(["check", "--adapter", &format!("exec '{dshc}' adapter")])
        .args(["scenarios", "--report-dir", "reports", "--jobs", "1"])
        .current_dir(&root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1), "one case fails: {check:?}");
    // A second implementation, as another run's report reads: the same
    // cases, all passing.
    let first = std::fs::read_to_string(root.join("reports/dshc-reference.json")).unwrap();
    let mut second: serde_json::Value = serde_json::from_str(&first).unwrap();
    second["implementation"]["name"] = "second".into();
    second["summary"]["passed"] = 2.into();
    second["summary"]["failed"] = 0.into();
    for case in second["cases"].as_array_mut().unwrap() {
        case["outcome"] = serde_json::json!({"outcome": "pass"});
    }
    std::fs::write(root.join("second.json"), second.to_string()).unwrap();
    let merge = Command::new(dshc)
        .args(["report", "reports/dshc-reference.json", "second.json"])
        .args([
            "--catalog",
            "scenarios/clauses.toml",
            "--html",
            "merged.html",
        ])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(0), "{merge:?}");

    let profile = root.join("chromium-profile");
    for (page, implementations) in [("reports/index.html", 1), ("merged.html", 2)] {
        let dom = chromium(&root.join(page), "--dump-dom", &profile);
        assert!(!dom.contains("<script"), "adapter text stays text: {dom}");
        let matrix = rows(element(&dom, "table", "matrix"));
        // The header, then one row per clause of the catalog.
        assert_eq!(matrix.len(), 1 + 2, "{page}: {matrix:?}");
        let header: Vec<&str> = matrix[0].iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(header.len(), 1 + implementations + 1, "{page}: {header:?}");
        assert!(header[1].starts_with("dshc-reference "), "{header:?}");
        assert_eq!(matrix[1][0].1, "03:R4");
        assert_eq!(
            matrix[1][1],
            ("fail".to_owned(), "1/2, 1 failed".to_owned())
        );
        assert_eq!(matrix[2][0].1, "03:R9");
        assert_eq!(matrix[2][1].0, "none", "no scenario covers 03:R9");
        if implementations == 2 {
            assert!(header[2].starts_with("second "), "{header:?}");
            assert_eq!(matrix[1][2], ("pass".to_owned(), "2/2".to_owned()));
        }
        // The failing case: the mismatch's path and its line diff.
        let failure = element(&dom, "div", "case");
        assert!(failure.contains("assembly/fail"), "{failure}");
        assert!(failure.contains("steps[2].expect.prompt"), "{failure}");
        let diff = element(failure, "pre", "diff");
        assert!(diff.contains("<span class=\"del\">- C</span>"), "{diff}");
        assert!(
            diff.contains("<span class=\"ins\">+ B &lt;script&gt;</span>"),
            "{diff}"
        );
        assert!(
            failure.contains("dshc check --adapter"),
            "the replay command"
        );
    }
    let screenshot = screenshot_path();
    let _ = std::fs::remove_file(&screenshot);
    chromium(
        &root.join("merged.html"),
        &format!("--screenshot={}", screenshot.display()),
        &profile,
    );
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG"),
        "a PNG at {}",
        screenshot.display()
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn bench_writes_its_charts_and_a_page_that_holds_them() {
    let root = std::env::temp_dir().join(format!("dshc-bench-page-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/fixtures");
    let mut command = Command::new(env!("CARGO_BIN_EXE_dshc"));
    command.args([
        "bench",
        "--iterations",
        "2",
        "--batches",
        "3",
        "--report-dir",
        "out",
    ]);
    for id in ["standard", "scaling-10", "scaling-100"] {
        command
            .arg("--fixture")
            .arg(fixtures.join(format!("{id}.toml")));
    }
    let bench = command.current_dir(&root).output().unwrap();
    assert_eq!(bench.status.code(), Some(0), "{bench:?}");
    let out = root.join("out");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    for svg in [
        "fixture-standard.svg",
        "fixture-scaling-10.svg",
        "fixture-scaling-100.svg",
        "scaling.svg",
    ] {
        let chart = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(chart.starts_with("<svg"), "{svg}");
        assert!(page.contains(chart.trim_end()), "{svg} stands in the page");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(report["fixtures"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&root);
}
