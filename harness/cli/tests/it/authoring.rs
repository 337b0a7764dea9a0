//! The authoring tools' contract: `dshc migrate` (format upgrades that keep
//! what a file asserts, and go on past a file they cannot rewrite) and `dshc
//! show` (everything an expectation can assert, printed). Split from
//! `cli.rs`, whose helpers they share.

use std::path::Path;

use super::cli::{Scratch, bundled, code, run, stderr, stdout};

#[test]
fn migrate_goes_on_past_a_file_it_cannot_read_and_summarises() {
    let scratch = Scratch::new("migrate-unreadable");
    let v1 = "format = 1\ntitle = \"t\"\ncovers = [\"03:R4\"]\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = \"p\"\n";
    let first = scratch.write("old/a.toml", v1);
    let broken = scratch.write("old/b.toml", "");
    std::fs::write(&broken, b"format = 1\ntitle = \"\xff\"\n").expect("written");
    let last = scratch.write("old/c.toml", v1);
    let output = run(&["migrate", "old"], &scratch.root);
    assert_eq!(code(&output), 2, "{}{}", stdout(&output), stderr(&output));
    assert!(stderr(&output).contains("b.toml"), "{}", stderr(&output));
    assert!(
        stdout(&output).ends_with("2 migrated, 0 already current, 1 left as they were\n"),
        "{}",
        stdout(&output)
    );
    for file in [first, last] {
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.starts_with("format = 2"), "{}: {text}", file.display());
    }
    // A format 1 file whose TOML does not parse: one positioned line from
    // both, and advice that works once the TOML is fixed.
    scratch.write(
        "bad/f.toml",
        "format = 1\ntitle = \"t\"\ncovers = [\"x\"\n[[steps]]\n",
    );
    let migrated = run(&["migrate", "bad"], &scratch.root);
    assert_eq!(code(&migrated), 2);
    assert!(
        stderr(&migrated).starts_with("error: bad/f.toml:4:1: not valid TOML: missing comma"),
        "{}",
        stderr(&migrated)
    );
    assert_eq!(
        stderr(&migrated).lines().count(),
        1,
        "{}",
        stderr(&migrated)
    );
    let loaded = run(&["run", "bad/f.toml"], &scratch.root);
    assert!(
        stdout(&loaded).contains("bad/f.toml:4:1: missing comma between array elements, expected `,` (this is a format 1 file: once the TOML is fixed, `dshc migrate bad/f.toml` upgrades it)"),
        "{}",
        stdout(&loaded)
    );
}

#[test]
fn migrate_keeps_a_file_it_cannot_rewrite_equivalently_and_says_which() {
    let scratch = Scratch::new("migrate");
    let head = "format = 1\ntitle = \"t\"\ncovers = [\"03:R4\"]\n\n[[steps]]\ndo = \"assemble\"\n";
    let good = scratch.write(
        "old/good.toml",
        &format!("{head}expect.sections = [{{ name = \"a\" }}]\n"),
    );
    let typo_text = format!("{head}expect.promt = \"p\"\n");
    let typo = scratch.write("old/typo.toml", &typo_text);
    let operator_text = format!("{head}expect.prompt = {{ \"$contains\" = \"x\" }}\n");
    let operator = scratch.write("old/operator.toml", &operator_text);
    let output = run(&["migrate", "old"], &scratch.root);
    assert_eq!(code(&output), 2, "{}{}", stdout(&output), stderr(&output));
    assert!(
        stdout(&output).ends_with("1 migrated, 0 already current, 2 left as they were\n"),
        "{}",
        stdout(&output)
    );
    let errors = stderr(&output);
    assert!(
        errors.contains("old/typo.toml: the rewritten file would not load (")
            && errors.contains("promt"),
        "{errors}"
    );
    assert!(
        errors.contains("old/operator.toml: cannot be kept equivalent: `steps[0].expect.prompt` has the key \"$contains\""),
        "{errors}"
    );
    let read = |path: &Path| std::fs::read_to_string(path).expect("readable");
    assert_eq!(read(&typo), typo_text, "left as it was");
    assert_eq!(read(&operator), operator_text, "left as it was");
    assert!(read(&good).starts_with("format = 2"), "{}", read(&good));
    let check = run(&["run", "old/good.toml"], &scratch.root);
    assert_ne!(
        code(&check),
        2,
        "the migrated file loads: {}",
        stdout(&check)
    );
}

#[test]
fn show_prints_every_part_of_a_loop_run_an_expectation_can_assert() {
    let scratch = Scratch::new("show-loop");
    let scenario = bundled("loop/listeners/session_observer_sees_each_appended_event.toml");
    let output = run(&["show", scenario.to_str().unwrap()], &scratch.root);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    for heading in [
        "# observations, one per command\n",
        "# session log\n",
        "# agent agent: {\"status\":\"idle\",\"status_transitions\":[\"running\",\"idle\"],\"pending\":[0,0],\"agent_errors\":[]}\n",
        "# live events, which the log does not hold\n",
        "# journal: what `record` ops recorded\n{\"listener\":\"watch\",\"call\":1,",
        "# llm_requests: what scripted routes' stream() received\n{\"provider\":\"mock\",",
    ] {
        assert!(text.contains(heading), "missing {heading:?} in:\n{text}");
    }
}
