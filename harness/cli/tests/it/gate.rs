//! Gating a port from outside the checkout: the embedded suite run from an
//! empty directory, `dshc scenarios export`, the CI semantics of
//! `--require-level` and of a run that ran nothing, and the starter adapters
//! (Python, TypeScript) gated by `dshc check`, every case skipped with their
//! reason. The Rust starter is gated in its own crate's tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// An empty working directory and a suite cache of its own, removed after.
struct Elsewhere {
    root: PathBuf,
}

impl Elsewhere {
    fn new(name: &str) -> Elsewhere {
        let root = std::env::temp_dir().join(format!("dshc-gate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("work")).unwrap();
        Elsewhere { root }
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn dshc(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dshc"))
            .args(args)
            .current_dir(self.work())
            .env("DSHC_CACHE_DIR", self.root.join("cache"))
            .env_remove("DSHC_BLESS")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Every file below the working directory.
    fn written(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        walk(&self.work(), &mut files);
        files
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The number of scenario files in the checkout's suite.
fn suite_size() -> usize {
    let mut files = Vec::new();
    walk(&repo().join("scenarios"), &mut files);
    files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "toml") && !f.ends_with("clauses.toml"))
        .count()
}

#[test]
fn with_no_paths_check_gates_the_embedded_suite_from_any_directory_and_writes_nothing_there() {
    let elsewhere = Elsewhere::new("embedded");
    let adapter = format!("{} adapter", env!("CARGO_BIN_EXE_dshc"));
    let output = elsewhere.dshc(&["check", "--adapter", &adapter, "--require-level", "loop"]);
    let text = stdout(&output);
    let summary = text.lines().last().unwrap_or_default();
    assert_eq!(
        summary,
        format!("{} passed, 0 failed", suite_size()),
        "{text}"
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the suite embedded in dshc"));
    assert_eq!(elsewhere.written(), Vec::<PathBuf>::new());
}

#[test]
fn export_writes_the_embedded_suite_byte_for_byte_and_never_overwrites() {
    let elsewhere = Elsewhere::new("export");
    let output = elsewhere.dshc(&["scenarios", "export", "out"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let exported = elsewhere.work().join("out/scenarios");
    let mut checkout = Vec::new();
    walk(&repo().join("scenarios"), &mut checkout);
    for file in &checkout {
        let relative = file.strip_prefix(repo().join("scenarios")).unwrap();
        assert_eq!(
            std::fs::read(exported.join(relative)).unwrap(),
            std::fs::read(file).unwrap(),
            "{}",
            relative.display()
        );
    }
    assert_eq!(elsewhere.written().len(), checkout.len());
    let again = elsewhere.dshc(&["scenarios", "export", "out"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("overwrites nothing"));
}

/// `dshc check` of a starter adapter over the assembly scenarios of the
/// checkout: every case skipped with the starter's reason, and the run
/// fails because nothing ran; `--require-level` names the level.
fn assert_gated_as_a_starter(adapter: &str, reason: &str) {
    let elsewhere = Elsewhere::new(reason.split(' ').next().unwrap_or("starter"));
    let suite = repo().join("scenarios").display().to_string();
    let output = elsewhere.dshc(&["check", "--adapter", adapter, &suite]);
    let text = stdout(&output);
    let skipped: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("skipped  "))
        .collect();
    assert_eq!(skipped.len(), suite_size(), "{text}");
    assert!(
        skipped.iter().any(|l| l.contains(reason)),
        "no case skipped with {reason:?}:\n{text}"
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "a run that ran nothing fails"
    );
    assert!(
        text.contains("the implementation ran nothing, so nothing was gated"),
        "{text}"
    );

    let required = elsewhere.dshc(&[
        "check",
        "--adapter",
        adapter,
        &suite,
        "--require-level",
        "loop",
    ]);
    let text = stdout(&required);
    assert_eq!(required.status.code(), Some(1));
    assert!(
        text.contains("error: --require-level loop: ")
            && text.contains("loop-level case(s) were skipped"),
        "{text}"
    );
}

#[test]
fn the_python_starter_speaks_the_protocol_and_skips_every_case() {
    let adapter = format!(
        "python3 {}",
        repo().join("adapters/starter-python/adapter.py").display()
    );
    assert_gated_as_a_starter(&adapter, "starter-python implements nothing yet");
}

#[test]
fn the_typescript_starter_speaks_the_protocol_and_skips_every_case() {
    let adapter = repo()
        .join("adapters/starter-typescript/run")
        .display()
        .to_string();
    assert_gated_as_a_starter(&adapter, "starter-typescript implements nothing yet");
}

#[test]
fn the_expected_failures_example_in_the_gating_doc_loads_as_written() {
    let doc = std::fs::read_to_string(repo().join("docs/gating-a-port.md")).unwrap();
    let start = doc.find("```toml\n# dshc-expected-failures.toml").unwrap() + "```toml\n".len();
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    let elsewhere = Elsewhere::new("xfail-doc");
    let path = elsewhere.work().join("expected.toml");
    std::fs::write(&path, example).unwrap();
    let cases = dshc_runner::check::load_expected_failures(&path).unwrap();
    let diffs = dshc_runner::check::load_known_disagreements(&path).unwrap();
    assert_eq!((cases.len(), diffs.len()), (1, 1));
    assert!(
        repo()
            .join("scenarios")
            .join(format!("{}.toml", cases[0].id))
            .is_file(),
        "the example names a real scenario"
    );
}
