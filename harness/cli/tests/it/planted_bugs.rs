//! Planted bugs: every mutation of `examples/mutant_adapter.rs` (the
//! reference served over the adapter protocol with one porting bug) is found
//! by `dshc diff` within 2,000 cases, and the regression file it writes
//! fails on that adapter, passes on the reference (in process and through
//! `dshc adapter`), and names in its description every expectation it
//! states.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The mutant adapter, built beside the `dshc` binary by `cargo test`.
fn mutant_adapter() -> PathBuf {
    let dshc = Path::new(env!("CARGO_BIN_EXE_dshc"));
    let path = dshc
        .parent()
        .expect("the binary's folder")
        .join("examples/mutant_adapter");
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` builds the package's examples, or `cargo build -p dshc --examples`",
        path.display()
    );
    path
}

fn dshc(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dshc"))
        .args(args)
        .env_remove("DSHC_BLESS")
        .stdin(Stdio::null())
        .current_dir(dir)
        .output()
        .expect("dshc runs")
}

fn shown(output: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The mutations the adapter offers (`--list`), each with its level.
fn mutations() -> Vec<String> {
    let output = Command::new(mutant_adapter())
        .arg("--list")
        .output()
        .expect("the mutant adapter runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split('\t').next())
        .map(str::to_owned)
        .collect()
}

/// The expectation keys a scenario states, as the judge names them.
fn stated_keys(scenario: &dshc_scenario::format::Scenario) -> Vec<String> {
    let mut keys = Vec::new();
    if scenario.config_error.is_some() {
        keys.push("config_error".to_string());
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        if let Some(Value::Object(expect)) = step
            .expect
            .as_ref()
            .and_then(|e| serde_json::to_value(e).ok())
        {
            keys.extend(
                expect
                    .keys()
                    .map(|key| format!("steps[{index}].expect.{key}")),
            );
        }
    }
    if let Some(Value::Object(expect)) = scenario
        .expect
        .as_ref()
        .and_then(|e| serde_json::to_value(e).ok())
    {
        for (key, value) in &expect {
            match (key.as_str(), value) {
                ("agents", Value::Object(agents)) => {
                    for (id, fields) in agents {
                        for field in fields.as_object().into_iter().flat_map(|f| f.keys()) {
                            keys.push(format!("expect.agents.{id}.{field}"));
                        }
                    }
                }
                _ => keys.push(format!("expect.{key}")),
            }
        }
    }
    keys
}

fn scratch(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("dshc-planted-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("scratch folder");
    root
}

/// One planted bug from search to a checked regression file.
fn found_and_reproduced(mutation: &str) -> Result<(), String> {
    let root = scratch(mutation);
    let adapter = format!("'{}' {mutation}", mutant_adapter().display());
    let level = if mutation.starts_with("loop-") {
        "loop"
    } else {
        "assembly"
    };
    let diff = dshc(
        &[
            "diff",
            "--adapter",
            &adapter,
            "--level",
            level,
            "--seed",
            "1",
            "--cases",
            "2000",
            "-j",
            "1",
        ],
        &root,
    );
    if diff.status.code() != Some(1) {
        return Err(format!(
            "{mutation}: dshc diff did not find it:\n{}",
            shown(&diff)
        ));
    }
    let folder = root.join("scenarios/regressions");
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(|e| format!("{mutation}: {e}\n{}", shown(&diff)))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    let [file] = files.as_slice() else {
        return Err(format!("{mutation}: wrote {files:?}\n{}", shown(&diff)));
    };
    let file_arg = file.to_str().expect("a UTF-8 path");
    let on_mutant = dshc(&["check", "--adapter", &adapter, file_arg], &root);
    if on_mutant.status.code() != Some(1) {
        return Err(format!(
            "{mutation}: the file does not fail on the mutant:\n{}",
            shown(&on_mutant)
        ));
    }
    let reference_adapter = format!("'{}' adapter", env!("CARGO_BIN_EXE_dshc"));
    for args in [
        vec!["run", file_arg],
        vec!["check", "--adapter", &reference_adapter, file_arg],
    ] {
        let on_reference = dshc(&args, &root);
        if on_reference.status.code() != Some(0) {
            return Err(format!(
                "{mutation}: {args:?} fails on the reference:\n{}",
                shown(&on_reference)
            ));
        }
    }
    let text = std::fs::read_to_string(file).expect("the file reads");
    let loaded = dshc_scenario::load::parse_scenario(file, &text).map_err(|e| e.to_string())?;
    let description = loaded.scenario.description.clone().unwrap_or_default();
    let keys = stated_keys(&loaded.scenario);
    if keys.is_empty() {
        return Err(format!(
            "{mutation}: the file states no expectation:\n{text}"
        ));
    }
    let unnamed: Vec<&String> = keys
        .iter()
        .filter(|k| !description.contains(k.as_str()))
        .collect();
    if !unnamed.is_empty() {
        return Err(format!(
            "{mutation}: the description does not name {unnamed:?}:\n{text}"
        ));
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

#[test]
fn every_planted_bug_is_found_and_its_regression_file_fails_on_it_and_passes_on_the_reference() {
    let mutations = mutations();
    assert!(
        mutations.len() >= 15 && mutations.iter().any(|m| m.starts_with("loop-")),
        "{mutations:?}"
    );
    let failures: Vec<String> = mutations
        .iter()
        .filter_map(|mutation| found_and_reproduced(mutation).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
