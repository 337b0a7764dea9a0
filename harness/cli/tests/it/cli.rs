//! The CLI contract: exit codes 0 (passed), 1 (failed), 2 (bad input) for
//! each subcommand, file-system oddities that once hung or misled dshc, and
//! snapshots (insta) of what a person reads. CI never accepts snapshots
//! (`INSTA_UPDATE=no` under `CI`); `cargo insta review` does, locally.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub(crate) fn dshc() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dshc"));
    command.env_remove("DSHC_BLESS").stdin(Stdio::null());
    command
}

pub(crate) fn run(args: &[&str], dir: &Path) -> Output {
    dshc()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("dshc runs")
}

pub(crate) fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A scratch folder with a `scenarios/` tree: a passing and a failing
/// scenario, the clause catalog, and nothing else.
pub(crate) struct Scratch {
    pub(crate) root: PathBuf,
}

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let root = std::env::temp_dir().join(format!("dshc-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("scenarios/assembly")).expect("scratch folder");
        std::fs::write(
            root.join("scenarios/clauses.toml"),
            "[[clause]]\nid = \"03:R4\"\ntext = \"renderPrompt joins sections with a blank line\"\n",
        )
        .expect("catalog");
        Scratch { root }
    }

    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("folder");
        }
        std::fs::write(&path, text).expect("file");
        path
    }

    pub(crate) fn with_scenarios(name: &str) -> Scratch {
        let scratch = Scratch::new(name);
        scratch.write("scenarios/assembly/pass.toml", &prompt_scenario("A\n\nB"));
        scratch
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub(crate) fn prompt_scenario(expected: &str) -> String {
    format!(
        "format = 2\ntitle = \"two sections join with a blank line\"\ncovers = [\"03:R4\"]\n[config]\ninclude_harness_identity = false\n\n[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = \"A\"\n\n[[steps]]\ndo = \"section\"\nname = \"b\"\norder = 2\ntext = \"B\"\n\n[[steps]]\ndo = \"assemble\"\nexpect.prompt = {}\n",
        serde_json::to_string(expected).expect("a string")
    )
}

pub(crate) fn reference_adapter() -> String {
    format!("exec '{}' adapter", env!("CARGO_BIN_EXE_dshc"))
}

#[test]
fn run_exits_0_on_pass_1_on_failure_2_on_bad_input() {
    let scratch = Scratch::with_scenarios("run");
    let passed = run(&["run", "scenarios"], &scratch.root);
    assert_eq!(code(&passed), 0, "{}", stdout(&passed));
    insta::assert_snapshot!("run_passed", stdout(&passed));

    scratch.write("scenarios/assembly/fail.toml", &prompt_scenario("A\nB"));
    let failed = run(&["run", "scenarios"], &scratch.root);
    assert_eq!(code(&failed), 1);
    insta::assert_snapshot!("run_failed", stdout(&failed));
    // `-v` lists every case, passing ones too, as `check` does.
    let verbose = run(&["run", "-v", "scenarios"], &scratch.root);
    assert_eq!(code(&verbose), 1);
    let listing = stdout(&verbose);
    assert!(listing.contains("pass     assembly/pass\n"), "{listing}");
    assert!(listing.contains("FAIL assembly/fail "), "{listing}");
    assert!(
        !stdout(&failed).contains("pass "),
        "without -v, only failures"
    );

    scratch.write(
        "scenarios/assembly/bad.toml",
        "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[[steps]]\ndo = \"assemble\"\nexpect.promt = \"x\"\n",
    );
    let bad = run(&["run", "scenarios"], &scratch.root);
    assert_eq!(code(&bad), 2);
    insta::assert_snapshot!("run_bad_input", stdout(&bad));
}

#[test]
fn load_errors_name_file_line_and_column() {
    let scratch = Scratch::new("errors");
    for (name, text) in [
        ("syntax", "format = 2\ntitle = \n"),
        (
            "unknown_step",
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[[steps]]\ndo = \"nope\"\n",
        ),
        (
            "bad_matcher",
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[[steps]]\ndo = \"assemble\"\nexpect.prompt.\"$contian\" = \"x\"\n",
        ),
        (
            "format_one",
            "format = 1\ntitle = \"t\"\ncovers = [\"03:R4\"]\n",
        ),
        (
            "no_level",
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n\n[provider]\nresponses = []\n",
        ),
        (
            "text_value",
            "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\n[[steps]]\ndo = \"section\"\nname = \"a\"\norder = 1\ntext = 5\n",
        ),
    ] {
        scratch.write(&format!("scenarios/assembly/{name}.toml"), text);
    }
    scratch.write(
        "scenarios/assembly/utf8.toml",
        "format = 2\ntitle = \"x\"\n",
    );
    std::fs::write(
        scratch.root.join("scenarios/assembly/utf8.toml"),
        b"format = 2\ntitle = \"\xff\"\n",
    )
    .expect("file");
    let output = run(&["run", "scenarios"], &scratch.root);
    assert_eq!(code(&output), 2);
    insta::assert_snapshot!("load_errors", stdout(&output));
}

#[test]
fn check_through_the_reference_adapter_and_its_reports() {
    let scratch = Scratch::with_scenarios("check");
    scratch.write("scenarios/assembly/fail.toml", &prompt_scenario("A\nB"));
    let adapter = reference_adapter();
    let output = run(
        &[
            "check",
            "--adapter",
            &adapter,
            "scenarios",
            "--report-dir",
            "reports",
        ],
        &scratch.root,
    );
    assert_eq!(code(&output), 1, "{}{}", stdout(&output), stderr(&output));
    insta::assert_snapshot!("check_output", stdout(&output));
    let read = |name: &str| {
        std::fs::read_to_string(scratch.root.join("reports").join(name)).expect("a report")
    };
    insta::assert_snapshot!("check_report_md", read("dshc-reference.md"));
    insta::assert_snapshot!("check_report_junit", read("dshc-reference.junit.xml"));
    let mut json: serde_json::Value =
        serde_json::from_str(&read("dshc-reference.json")).expect("JSON");
    // What changes with the build and the checkout, not with the run.
    json["implementation"]["version"] = "[version]".into();
    json["command"] = "[command]".into();
    insta::assert_snapshot!(
        "check_report_json",
        serde_json::to_string_pretty(&json).expect("JSON")
    );
    std::fs::remove_file(scratch.root.join("scenarios/assembly/fail.toml")).expect("removed");
    let passed = run(
        &["check", "--adapter", &adapter, "scenarios"],
        &scratch.root,
    );
    assert_eq!(code(&passed), 0, "{}", stdout(&passed));
    let missing = run(&["check", "--adapter", &adapter, "nowhere"], &scratch.root);
    assert_eq!(code(&missing), 2);
}

#[test]
fn check_writes_reports_for_a_subfolder_using_the_tree_s_catalog() {
    let scratch = Scratch::with_scenarios("subfolder");
    let adapter = reference_adapter();
    let output = run(
        &[
            "check",
            "--adapter",
            &adapter,
            "scenarios/assembly",
            "--report-dir",
            "reports",
        ],
        &scratch.root,
    );
    assert_eq!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
    for name in [
        "dshc-reference.json",
        "dshc-reference.junit.xml",
        "dshc-reference.md",
    ] {
        assert!(
            scratch.root.join("reports").join(name).is_file(),
            "{name} written"
        );
    }
}

#[test]
fn coverage_show_schema_and_help_read_well() {
    let scratch = Scratch::with_scenarios("coverage");
    let coverage = run(&["coverage", "scenarios", "--strict"], &scratch.root);
    assert_eq!(code(&coverage), 0);
    insta::assert_snapshot!("coverage", stdout(&coverage));
    let show = run(&["show", "scenarios/assembly/pass.toml"], &scratch.root);
    assert_eq!(code(&show), 0);
    insta::assert_snapshot!("show_assembly", stdout(&show));
    let schema = run(&["schema"], &scratch.root);
    assert_eq!(code(&schema), 0);
    assert!(stdout(&schema).contains("\"Pattern\""));
    let help = run(&["--help"], &scratch.root);
    assert_eq!(code(&help), 0);
    insta::assert_snapshot!("help", stdout(&help));
    let usage = run(&["run", "--no-such-flag"], &scratch.root);
    assert_eq!(code(&usage), 2);
}

#[test]
fn every_subcommand_maps_bad_input_to_2() {
    let scratch = Scratch::new("bad-input");
    for args in [
        vec!["run", "missing"],
        vec!["check", "--adapter", "true", "missing"],
        vec!["coverage", "missing"],
        vec!["show", "missing.toml"],
        vec!["replay", "missing.jsonl"],
        vec!["serve", "--script", "missing.toml"],
        vec!["report", "missing.json"],
        vec!["migrate", "missing"],
        vec!["diff", "--adapter", "true"],
        vec!["sim"],
        vec!["sim", "--seed", "1", "--jobs", "100000"],
        vec![
            "check",
            "--adapter",
            "true",
            "--jobs",
            "100000",
            "scenarios",
        ],
    ] {
        let output = run(&args, &scratch.root);
        assert_eq!(
            code(&output),
            2,
            "{args:?}: {}{}",
            stdout(&output),
            stderr(&output)
        );
    }
}

#[test]
fn sim_and_diff_replay_a_single_case_even_at_the_end_of_the_range() {
    let scratch = Scratch::new("ranges");
    let sim = run(
        &["sim", "--seed", "1", "--session", "18446744073709551615"],
        &scratch.root,
    );
    assert_eq!(code(&sim), 0, "{}", stdout(&sim));
    assert!(stdout(&sim).contains("\n1 sessions"), "{}", stdout(&sim));
    let adapter = reference_adapter();
    let diff = run(
        &[
            "diff",
            "--adapter",
            &adapter,
            "--seed",
            "1",
            "--case",
            "18446744073709551615",
        ],
        &scratch.root,
    );
    assert_eq!(code(&diff), 0, "{}", stdout(&diff));
    assert!(stdout(&diff).contains("\n1 cases"), "{}", stdout(&diff));
}

#[test]
fn diff_and_sim_print_every_command_kind_of_their_level_with_how_often_it_ran() {
    use dshc_fuzzing::exercised::kinds_of_level;
    use dshc_scenario::protocol::Level;
    let scratch = Scratch::new("exercised");
    let adapter = reference_adapter();
    let diff = run(
        &[
            "diff",
            "--adapter",
            &adapter,
            "--seed",
            "1",
            "--cases",
            "40",
            "-j",
            "1",
        ],
        &scratch.root,
    );
    let sim = run(
        &["sim", "--seed", "1", "--sessions", "8", "-j", "1"],
        &scratch.root,
    );
    for (output, level) in [(diff, Level::Assembly), (sim, Level::Loop)] {
        assert_eq!(code(&output), 0, "{}", stdout(&output));
        let printed = stdout(&output);
        let rows: Vec<&str> = printed.lines().collect();
        for kind in kinds_of_level(level) {
            assert!(
                rows.iter()
                    .any(|row| row.split_whitespace().next() == Some(kind.as_str())),
                "{kind} is not listed:\n{printed}"
            );
        }
        assert!(
            rows.last()
                .is_some_and(|last| last.contains("command kind")),
            "{printed}"
        );
    }
}

#[test]
fn diff_finds_shrinks_and_replays_the_same_disagreement_for_any_job_count() {
    // The reference, with one error message altered on the way out: the
    // first case that reports it disagrees (case 4 of seed 19), and later
    // cases, finished first by other jobs, must not change what is reported.
    let adapter = format!(
        "'{}' adapter | sed -u 's/already registered/already registeredx/'",
        env!("CARGO_BIN_EXE_dshc")
    );
    let mut seen = Vec::new();
    for jobs in ["1", "3"] {
        let scratch = Scratch::new(&format!("diff-jobs-{jobs}"));
        let args = [
            "diff",
            "--adapter",
            &adapter,
            "--seed",
            "19",
            "--cases",
            "200",
            "-j",
            jobs,
        ];
        let output = run(&args, &scratch.root);
        assert_eq!(code(&output), 1, "{}{}", stdout(&output), stderr(&output));
        let regression = std::fs::read_to_string(
            scratch
                .root
                .join("scenarios/regressions/diff_seed19_case4.toml"),
        )
        .expect("the shrunk disagreement is written");
        seen.push((stdout(&output), regression));
    }
    assert_eq!(seen[0], seen[1], "-j 1 and -j 3 report the same");
    let printed = &seen[0].0;
    assert!(
        printed.starts_with("seed 19 swarm odds: listen ")
            && printed.lines().nth(1).is_some_and(
                |line| line.starts_with("case 4 of seed 19: the implementations disagree")
            ),
        "{printed}"
    );
    // The printed replay command, pasted into a shell, finds it again.
    let replay = printed
        .lines()
        .last()
        .and_then(|line| line.trim().strip_prefix("dshc "))
        .expect("a replay command");
    let scratch = Scratch::new("diff-replay");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' {replay}", env!("CARGO_BIN_EXE_dshc")))
        .current_dir(&scratch.root)
        .output()
        .expect("sh runs");
    assert_eq!(code(&output), 1, "{}{}", stdout(&output), stderr(&output));
    assert!(
        stdout(&output).contains("\ncase 4 of seed 19: the implementations disagree"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_closed_stdout_ends_dshc_quietly() {
    let scratch = Scratch::with_scenarios("pipe");
    let mut child = dshc()
        .args(["schema"])
        .current_dir(&scratch.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawned");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("finished");
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

#[test]
fn fifos_devices_and_symlink_loops_never_hang_a_run() {
    let scratch = Scratch::with_scenarios("fs");
    let fifo = scratch.root.join("scenarios/assembly/fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    std::os::unix::fs::symlink(
        scratch.root.join("scenarios"),
        scratch.root.join("scenarios/assembly/loop"),
    )
    .expect("a symlink loop");
    std::os::unix::fs::symlink(
        "/dev/zero",
        scratch.root.join("scenarios/assembly/zero.toml"),
    )
    .expect("a link to a device");
    let output = run(&["run", "scenarios"], &scratch.root);
    assert_eq!(code(&output), 2, "{}", stdout(&output));
    let text = stdout(&output);
    assert!(
        text.contains("fifo.toml: a FIFO named like a scenario"),
        "{text}"
    );
    assert!(
        text.contains("zero.toml: a device named like a scenario"),
        "{text}"
    );
    assert!(text.contains("already walked"), "{text}");
    assert!(text.contains("1 passed, 0 failed"), "{text}");
    let direct = run(&["show", "scenarios/assembly/fifo.toml"], &scratch.root);
    assert_eq!(code(&direct), 2);
    assert!(stderr(&direct).contains("a FIFO"), "{}", stderr(&direct));
    let listed = run(&["run", "scenarios/assembly/fifo.toml"], &scratch.root);
    assert_eq!(code(&listed), 2);
    assert!(
        stdout(&listed).contains("a FIFO is neither"),
        "{}",
        stdout(&listed)
    );
    let empty = scratch.root.join("empty");
    std::fs::create_dir_all(&empty).expect("folder");
    let none = run(&["run", "empty"], &scratch.root);
    assert_eq!(code(&none), 2);
    assert!(
        stdout(&none).contains("no scenario files"),
        "{}",
        stdout(&none)
    );
    let upper = scratch.write("upper/UPPER.TOML", &prompt_scenario("A\n\nB"));
    let found = run(
        &[
            "run",
            &upper.parent().expect("a folder").display().to_string(),
        ],
        &scratch.root,
    );
    assert_eq!(code(&found), 0, "{}", stdout(&found));
}

#[test]
fn blessing_says_when_a_scenario_still_fails() {
    let scratch = Scratch::new("bless");
    scratch.write(
        "scenarios/loop/still.toml",
        "format = 2\ntitle = \"t\"\ncovers = [\"03:R4\"]\nlevel = \"loop\"\n[provider]\nresponses = [{ content = [\"ok\"] }]\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[expect]\nrequest_count = 7\nevents = [{ type = \"tool/call\" }]\n",
    );
    let output = dshc()
        .args(["run", "scenarios"])
        .current_dir(&scratch.root)
        .env("DSHC_BLESS", "1")
        .env_remove("CI")
        .output()
        .expect("dshc runs");
    let text = stdout(&output);
    assert!(text.contains("but it still fails"), "{text}");
    let rewritten =
        std::fs::read_to_string(scratch.root.join("scenarios/loop/still.toml")).expect("file");
    assert!(rewritten.contains("request_count = 1"), "{rewritten}");
    let refused = dshc()
        .args(["run", "scenarios"])
        .current_dir(&scratch.root)
        .env("DSHC_BLESS", "1")
        .env("CI", "true")
        .output()
        .expect("dshc runs");
    assert_eq!(code(&refused), 2, "blessing is refused under CI");
}

#[test]
fn the_reference_adapter_answers_an_invalid_case_with_errored_not_a_panic() {
    use std::io::Write;
    let mut child = dshc()
        .arg("adapter")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawned");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            concat!(
                r#"{"seq":0,"cmd":"start","version":1}"#,
                "\n",
                r#"{"seq":1,"cmd":"run","case":{"id":"x","level":"assembly","config":{},"commands":[{"do":"followup","text":"hi"}]}}"#,
                "\n",
                r#"{"seq":2,"cmd":"stop"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .expect("written");
    drop(stdin);
    let output = child.wait_with_output().expect("finished");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let replies = stdout(&output);
    let second = replies.lines().nth(1).expect("a reply to the case");
    assert!(second.starts_with(r#"{"seq":1,"errored":"#), "{second}");
    assert!(second.contains("needs `level = \\\"loop\\\"`"), "{second}");
}

/// The scenario files below `dir`, counted by walking it: every `.toml`
/// but the clause catalog.
fn scenario_files(dir: &Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            count += scenario_files(&path);
        } else if path.extension().is_some_and(|e| e == "toml")
            && path.file_name().is_some_and(|n| n != "clauses.toml")
        {
            count += 1;
        }
    }
    count
}

#[test]
fn the_reference_adapter_passes_every_bundled_scenario_at_both_levels() {
    let root = bundled("..");
    let output = run(
        &["check", "--adapter", &reference_adapter(), "scenarios"],
        &root,
    );
    assert_eq!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    // Nothing skipped: the closing line names no other count.
    let count = scenario_files(&root.join("scenarios"));
    assert_eq!(
        text.lines().last(),
        Some(format!("{count} passed, 0 failed").as_str()),
        "{text}"
    );
    assert!(
        text.lines().all(|line| !line.starts_with("skipped")),
        "{text}"
    );
}

#[test]
fn over_the_protocol_every_loop_scenario_observes_exactly_what_the_reference_does_in_process() {
    use dshc_runner::adapter::process::{AdapterProcess, Limits};
    use dshc_runner::adapter::{External, Implementation, Ran};
    let files = dshc_scenario::load::discover(&[bundled("loop")]).files;
    assert_eq!(files.len(), scenario_files(&bundled("loop")));
    let mut adapter = External::new(AdapterProcess::new(&reference_adapter(), Limits::default()));
    let mut differing = Vec::new();
    for file in &files {
        let scenario = dshc_scenario::load::load_scenario(file).expect("a bundled scenario");
        let in_process = dshc_reference::run_case(&scenario.case).expect("a valid case");
        // The whole result, the traffic the harness's bridge saw included.
        let served = match adapter.run(&scenario.case) {
            Ran::Observed(result) => *result,
            Ran::NotRun(not_run) => {
                differing.push(format!("{}: not run: {not_run}", scenario.case.id));
                continue;
            }
        };
        let (a, b) = (
            serde_json::to_string(&in_process).expect("JSON"),
            serde_json::to_string(&served).expect("JSON"),
        );
        if let Some(at) = a.bytes().zip(b.bytes()).position(|(x, y)| x != y) {
            let around = |s: &str| s[at.saturating_sub(80)..(at + 80).min(s.len())].to_owned();
            differing.push(format!(
                "{} at byte {at}:\n  in process: {}\n  over the protocol: {}",
                scenario.case.id,
                around(&a),
                around(&b)
            ));
        } else if a != b {
            differing.push(format!(
                "{}: one result is a prefix of the other",
                scenario.case.id
            ));
        }
    }
    adapter.stop();
    assert_eq!(adapter.starts(), 1, "one adapter process served every case");
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}

/// The bundled scenario of a changing middle section (`clock`), and a stable one.
pub(crate) fn bundled(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(relative)
}

#[test]
fn cache_report_names_the_section_that_breaks_the_cache() {
    let here = std::env::temp_dir();
    let changing = bundled("loop/cache/changed_section_breaks_the_cache_where_it_starts.toml");
    let output = run(&["cache-report", changing.to_str().unwrap()], &here);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(
            "request 3 (deepseek-v4-flash, 511 bytes, 0 cached tokens): BREAKS from request 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("system prompt, section \"clock\" (global layer, registration \"clock\")"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("1 cache break"), "{text}");
    // As a CI lint it fails the run.
    let denied = run(
        &["cache-report", "--deny-breaks", changing.to_str().unwrap()],
        &here,
    );
    assert_eq!(code(&denied), 1);

    let stable = bundled("loop/cache/cache_hits_grow_across_tool_round_trip_and_later_turn.toml");
    let output = run(
        &["cache-report", "--deny-breaks", stable.to_str().unwrap()],
        &here,
    );
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    assert!(stdout(&output).trim_end().ends_with("no cache break"));
}

#[test]
fn cache_report_reads_a_session_log_too() {
    let scratch = Scratch::new("cache-log");
    let changing = bundled("loop/cache/changed_section_breaks_the_cache_where_it_starts.toml");
    let log = run(
        &["show", "--log", changing.to_str().unwrap()],
        &scratch.root,
    );
    assert_eq!(code(&log), 0);
    let log_path = scratch.write("session.jsonl", &stdout(&log));
    let output = run(
        &["cache-report", "--json", log_path.to_str().unwrap()],
        &scratch.root,
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let verdicts: Vec<&str> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["first", "extends", "break"]);
    // A log has no section layout: the break is named by its place in the system text.
    assert_eq!(
        report["requests"][2]["cache_break"]["element"],
        serde_json::json!({"kind": "system", "index": 0, "offset": 84})
    );
}

#[test]
fn partitions_merge_into_the_whole_runs_report() {
    let scratch = Scratch::new("partitions");
    for (name, expected) in [
        ("a", "A\n\nB"),
        ("b", "wrong"),
        ("c", "A\n\nB"),
        ("d/e", "A\n\nB"),
        ("d-f", "also wrong"),
    ] {
        scratch.write(
            &format!("scenarios/assembly/{name}.toml"),
            &prompt_scenario(expected),
        );
    }
    scratch.write("scenarios/assembly/broken.toml", "format = 2\ntitle = ");
    let adapter = reference_adapter();
    let check = |partition: &str, dir: &str| {
        run(
            &[
                "check",
                "--adapter",
                &adapter,
                "scenarios",
                "--partition",
                partition,
                "--report-dir",
                dir,
            ],
            &scratch.root,
        )
    };
    let whole = check("1/1", "whole");
    assert_eq!(code(&whole), 2, "{}", stdout(&whole));
    let mut parts = Vec::new();
    for k in 1..=3 {
        let dir = format!("part{k}");
        let output = check(&format!("{k}/3"), &dir);
        assert!(matches!(code(&output), 0..=2), "{}", stderr(&output));
        parts.push(format!("{dir}/dshc-reference.json"));
    }
    let mut args = vec!["report", "--merge", "merged.json"];
    args.extend(parts.iter().map(String::as_str));
    let merged = run(&args, &scratch.root);
    assert_eq!(code(&merged), 0, "{}", stderr(&merged));
    let read = |path: &str| std::fs::read_to_string(scratch.root.join(path)).expect("a report");
    assert_eq!(read("merged.json"), read("whole/dshc-reference.json"));
    // Merging a partition twice is refused.
    let twice = run(
        &["report", "--merge", "x.json", &parts[0], &parts[0]],
        &scratch.root,
    );
    assert_eq!(code(&twice), 2);
    assert!(
        stderr(&twice).contains("merge each partition once"),
        "{}",
        stderr(&twice)
    );
    an_incomplete_or_mixed_set_does_not_merge(&scratch, &parts);
}

/// `report --merge` refuses one partition of three and a mixed set, and
/// counts the summary from the cases, whatever a report says.
fn an_incomplete_or_mixed_set_does_not_merge(scratch: &Scratch, parts: &[String]) {
    let read = |path: &str| std::fs::read_to_string(scratch.root.join(path)).expect("a report");
    // One partition of three is not the whole run, nor a set with one
    // partition of another split.
    let partial = run(&["report", "--merge", "x.json", &parts[0]], &scratch.root);
    assert_eq!(code(&partial), 2);
    assert!(
        stderr(&partial).contains("partitions 2, 3 of 3 are missing"),
        "{}",
        stderr(&partial)
    );
    let mixed = run(
        &[
            "report",
            "--merge",
            "x.json",
            &parts[0],
            &parts[1],
            "whole/dshc-reference.json",
        ],
        &scratch.root,
    );
    assert_eq!(code(&mixed), 2);
    assert!(
        stderr(&mixed).contains("is of another run"),
        "{}",
        stderr(&mixed)
    );
    // A summary written by hand is not taken: the merge counts the cases.
    let mut doctored: serde_json::Value = serde_json::from_str(&read(&parts[0])).expect("json");
    doctored["summary"]["passed"] = serde_json::json!(1000);
    scratch.write("doctored.json", &doctored.to_string());
    let recounted = run(
        &[
            "report",
            "--merge",
            "recounted.json",
            "doctored.json",
            &parts[1],
            &parts[2],
        ],
        &scratch.root,
    );
    assert_eq!(code(&recounted), 0, "{}", stderr(&recounted));
    assert_eq!(read("recounted.json"), read("whole/dshc-reference.json"));
}

#[test]
fn jobs_change_no_byte_of_the_output_or_the_reports() {
    let scratch = Scratch::new("jobs");
    for index in 0..12 {
        let expected = if index % 5 == 3 { "wrong" } else { "A\n\nB" };
        scratch.write(
            &format!("scenarios/assembly/case{index:02}.toml"),
            &prompt_scenario(expected),
        );
    }
    let adapter = reference_adapter();
    let check = |jobs: &str| {
        let dir = format!("jobs{jobs}");
        let output = run(
            &[
                "check",
                "--adapter",
                &adapter,
                "scenarios",
                "--jobs",
                jobs,
                "--report-dir",
                &dir,
            ],
            &scratch.root,
        );
        let report = std::fs::read_to_string(scratch.root.join(&dir).join("dshc-reference.json"))
            .expect("a report");
        (code(&output), stdout(&output), report)
    };
    let serial = check("1");
    assert_eq!(serial.0, 1, "{}", serial.1);
    assert!(
        serial.1.contains("FAIL     assembly/case03"),
        "{}",
        serial.1
    );
    for jobs in ["2", "5"] {
        assert_eq!(check(jobs), serial, "--jobs {jobs}");
    }
}

#[test]
fn bench_compares_implementations_and_fails_on_a_regression() {
    let scratch = Scratch::new("bench");
    let fixture = bundled("../benches/fixtures/standard.toml");
    let adapter = reference_adapter();
    let output = run(
        &[
            "bench",
            "--adapter",
            "reference",
            "--adapter",
            &adapter,
            "--fixture",
            fixture.to_str().unwrap(),
            "--iterations",
            "5",
            "--batches",
            "3",
            "--json",
            "bench.json",
        ],
        &scratch.root,
    );
    assert_eq!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.root.join("bench.json")).unwrap())
            .unwrap();
    let results = report["fixtures"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "in-process and over the protocol");
    assert_eq!(results[0]["output_bytes"], results[1]["output_bytes"]);
    assert_eq!(results[0]["steps"], 15);
    assert!(results.iter().all(|r| r["ratio"].as_f64().unwrap() >= 1.0));
    assert!(stdout(&output).contains("standard"), "{}", stdout(&output));

    // A baseline far faster than anything real: every median is a regression.
    let mut fast = report.clone();
    for result in fast["fixtures"][0]["results"].as_array_mut().unwrap() {
        result["median_ns"] = serde_json::json!(1.0);
    }
    scratch.write("fast.json", &fast.to_string());
    let regressed = run(
        &[
            "bench",
            "--fixture",
            fixture.to_str().unwrap(),
            "--iterations",
            "5",
            "--batches",
            "3",
            "--baseline",
            "fast.json",
        ],
        &scratch.root,
    );
    assert_eq!(code(&regressed), 1);
    assert!(
        stderr(&regressed).contains("regression: standard on dshc-reference"),
        "{}",
        stderr(&regressed)
    );
    // The same file as baseline and output: compared as it was, then written.
    scratch.write("same.json", &fast.to_string());
    let same = [
        "bench",
        "--fixture",
        fixture.to_str().unwrap(),
        "--iterations",
        "5",
        "--batches",
        "3",
        "--json",
        "same.json",
        "--baseline",
        "same.json",
    ];
    let compared = run(&same, &scratch.root);
    assert_eq!(code(&compared), 1, "{}", stderr(&compared));
    assert!(stderr(&compared).contains("regression: standard on dshc-reference"));
    // A baseline of another version matches no row: that is no silent pass.
    let mut other = report.clone();
    for result in other["fixtures"][0]["results"].as_array_mut().unwrap() {
        result["implementation"] = serde_json::json!("dshc-reference 0.0.1");
    }
    scratch.write("other.json", &other.to_string());
    let unmatched = run(
        &same[..7]
            .iter()
            .copied()
            .chain(["--baseline", "other.json"])
            .collect::<Vec<_>>(),
        &scratch.root,
    );
    assert_eq!(code(&unmatched), 1, "{}", stderr(&unmatched));
    assert!(
        stderr(&unmatched).contains("the baseline has no row"),
        "{}",
        stderr(&unmatched)
    );
}
