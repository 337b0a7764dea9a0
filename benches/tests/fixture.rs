//! The bench fixture is what the bench says it is.

use dshc_benches::{CopyBound, STANDARD, registry, step};

#[test]
fn standard_fixture_has_the_documented_shape() {
    let (registry, scope) = registry(STANDARD);
    let (assembly, prompt, snapshot) = step(&registry, &scope);
    // identity + persona + 18 guides, one of them shadowed by the scope
    assert_eq!(assembly.sections.len(), 20);
    assert_eq!(assembly.tools.len(), 40);
    assert_eq!(assembly.variables.keys().len(), 10);
    assert_eq!(assembly.contexts.len(), 5);
    assert!(prompt.contains("Scoped guidance replaces the global first guide"));
    assert!(!prompt.contains("{{"), "every reference was interpolated");
    assert!(snapshot.starts_with("Current runtime context."));
    let bound = CopyBound::of(&registry, &scope);
    assert_eq!(
        bound.run().0,
        prompt,
        "the copy bound produces the same prompt"
    );
}

#[test]
fn loop_bench_scenario_runs_one_step_per_round_trip_plus_the_answer() {
    let loaded = dshc_benches::loop_scenario(9);
    let result = dshc_harness::reference::run_case(&loaded.case).expect("a compiled case is valid");
    let run = result.run.expect("a loop run");
    assert_eq!(run.failure, None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    let steps = run.log.iter().filter(|e| e["type"] == "step/start").count();
    assert_eq!(steps, 10);
    assert_eq!(run.requests.len(), 10);
    let last = run.log.last().unwrap();
    assert_eq!(last["data"]["reason"]["kind"], "completed");
}
