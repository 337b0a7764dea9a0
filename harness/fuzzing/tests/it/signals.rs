//! The clause catalog's `signals` (`dshc_fuzzing::signals`), which `dshc diff`
//! and `dshc sim` count generated cases by: each is well formed, and each is
//! shown by a bundled scenario covering its clause, run on the reference, so
//! a signal that names a field wrong, or shows something the clause is not
//! about, fails here rather than counting nothing (or the wrong thing).

use std::collections::BTreeMap;
use std::path::Path;

use dshc_fuzzing::exercised::ClauseSignals;
use dshc_fuzzing::signals::{Shown, Signal};
use dshc_runner::coverage::load_catalog;
use dshc_scenario::protocol::Level;

#[test]
fn every_signal_is_shown_by_a_scenario_covering_its_clause() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let catalog = load_catalog(&root.join("clauses.toml")).expect("the catalog loads");
    for level in [Level::Assembly, Level::Loop] {
        ClauseSignals::of(&catalog, level).expect("every signal parses");
    }
    let discovery = dshc_scenario::load::discover(&[root]);
    let mut covering: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    let loaded: Vec<_> = discovery
        .files
        .iter()
        .map(|file| dshc_scenario::load::load_scenario(file).expect("a bundled scenario loads"))
        .collect();
    for scenario in &loaded {
        for clause in &scenario.scenario.covers {
            covering.entry(clause.as_str()).or_default().push(scenario);
        }
    }
    let mut results = BTreeMap::new();
    let mut unshown = Vec::new();
    for clause in catalog.iter().filter(|c| !c.signals.is_empty()) {
        let scenarios = covering
            .get(clause.id.as_str())
            .cloned()
            .unwrap_or_default();
        for text in &clause.signals {
            let signal = Signal::parse(text).expect("parses");
            let shown = scenarios.iter().any(|loaded| {
                let result = results.entry(loaded.id.clone()).or_insert_with(|| {
                    dshc_reference::run_case(&loaded.case).expect("the reference runs it")
                });
                Shown::of_result(&loaded.scenario, result).shows(&signal)
            });
            if !shown {
                unshown.push(format!("{} {text}", clause.id));
            }
        }
    }
    assert!(
        unshown.is_empty(),
        "signals no scenario covering their clause shows:\n{}",
        unshown.join("\n")
    );
}

#[test]
fn a_fault_signal_is_shown_by_exactly_the_faults_a_script_has() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/loop/wire/retry_after_http_date.toml");
    let loaded = dshc_scenario::load::load_scenario(&path).expect("a bundled scenario loads");
    let result = dshc_reference::run_case(&loaded.case).expect("the reference runs it");
    let shown = Shown::of_result(&loaded.scenario, &result);
    let shows = |text: &str| shown.shows(&Signal::parse(text).expect("parses"));
    // Its one scripted fault is a 429.
    assert!(shows("fault:rate_limit"));
    for other in [
        "fault:server_error",
        "fault:stall",
        "fault:rate",
        "fault:RateLimit",
    ] {
        assert!(!shows(other), "{other}");
    }
}
