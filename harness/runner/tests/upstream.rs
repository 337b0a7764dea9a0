//! The upstream gate: every scenario runs on the published upstream packages
//! through `adapters/node-dsh/` (which installs its pinned npm packages on
//! first use), and every case passes or is listed, with a reason, in
//! `adapters/node-dsh/expected-failures.toml`. A listed case that passes
//! fails too, so the list never goes stale. Loop cases run on a real upstream
//! agent loop against the harness's loopback provider; the adapter may skip
//! one it cannot run faithfully (it says why), an assembly case never.

use std::path::Path;

use dshc_harness::adapter::process::{AdapterProcess, Limits};
use dshc_harness::adapter::{External, Implementation};
use dshc_harness::runner::{CaseReport, Verdict, check_with, describe, load_expected_failures};
use dshc_scenario::load::{discover, load_scenario};

#[test]
fn upstream_passes_every_scenario_or_lists_it_as_an_expected_failure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let adapter = root.join("adapters/node-dsh/run");
    let expected = load_expected_failures(&root.join("adapters/node-dsh/expected-failures.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let found = discover(&[root.join("scenarios")]);
    let (files, errors) = (found.files, found.errors);
    assert!(errors.is_empty(), "{errors:?}");
    let mut implementation = External::new(AdapterProcess::new(
        &adapter.display().to_string(),
        Limits::default(),
    ));
    let mut problems = Vec::new();
    let mut passed = 0;
    let mut loop_passed = 0;
    for file in files {
        let scenario = load_scenario(&file).unwrap_or_else(|e| panic!("{e}"));
        let outcome = check_with(&scenario, &mut implementation);
        let report = CaseReport {
            position: 0,
            id: scenario.id.clone(),
            covers: Vec::new(),
            expected_failure: expected
                .iter()
                .find(|e| e.id == scenario.id)
                .map(|e| e.reason.clone()),
            outcome,
            cache_breaks: Vec::new(),
        };
        match report.verdict() {
            Verdict::Passed | Verdict::ExpectedFailure => {
                passed += 1;
                if scenario.case.level == dshc_scenario::protocol::Level::Loop {
                    loop_passed += 1;
                }
            }

            Verdict::UnexpectedPass => problems.push(format!(
                "{}: passes but is listed as an expected failure",
                scenario.id
            )),
            _ => problems.push(describe(&scenario, &report.outcome)),
        }
    }
    assert!(
        !implementation.real_time(),
        "node-dsh offers virtual_time/1: its loop results are compared exactly"
    );
    implementation.stop();
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(passed >= 80, "only {passed} scenarios ran on upstream");
    assert!(
        loop_passed >= 100,
        "only {loop_passed} loop scenarios ran on the upstream agent loop"
    );
}
