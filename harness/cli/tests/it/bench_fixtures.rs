//! The bench fixtures are what they say they are.

use dshc_benches::{CopyBound, rig};
use dshc_model::session::event_kind;

#[test]
fn the_copy_bound_renders_what_a_step_renders() {
    for id in ["standard", "shadowing", "listeners", "scaling-100"] {
        let rig = rig(id);
        let step = rig.step().expect("a step");
        let (prompt, snapshot, tools) = CopyBound::of(rig.assemble().unwrap()).run();
        assert_eq!(prompt, step.prompt, "{id}");
        assert_eq!(snapshot, step.snapshot, "{id}");
        assert_eq!(tools.len(), step.tools, "{id}");
    }
}

#[test]
fn the_scaling_series_grows_sections_and_tools_together() {
    for size in [10usize, 100, 1000] {
        let step = rig(&format!("scaling-{size}")).step().unwrap();
        assert_eq!(step.tools, size);
        // every guidance section but the one the scope shadows
        assert_eq!(step.prompt.matches("Guidance ").count(), size - 1);
        assert!(
            step.prompt
                .contains("Scoped guidance replaces the global first guide")
        );
    }
}

#[test]
fn shadowing_and_listeners_change_the_assembly() {
    let shadowed = rig("shadowing").step().unwrap();
    assert!(
        shadowed
            .prompt
            .contains("Agent guidance 0 replaces the static one.")
    );
    assert!(
        shadowed
            .prompt
            .contains("Team guidance 8 replaces the provided one.")
    );
    assert!(shadowed.prompt.contains("The agent's own section."));
    let listened = rig("listeners").step().unwrap();
    // The first-registered listener is outermost: it adds its section after
    // the inner ones (the reorder among them) have run, so it comes last.
    assert!(
        listened.prompt.ends_with("Added by a listener."),
        "{}",
        listened.prompt
    );
    assert!(listened.snapshot.contains("Listener context."));
}

#[test]
fn loop_bench_scenario_runs_one_step_per_round_trip_plus_the_answer() {
    let loaded = dshc_benches::loop_scenario(9);
    let result = dshc_reference::run_case(&loaded.case).expect("a compiled case is valid");
    let run = result.run.expect("a loop run");
    assert_eq!(run.failure, None);
    let world = loaded.case.world.as_ref().expect("a loop case has a world");
    let violations = dshc_oracle::invariants::judge_loop_run(world, &run);
    assert!(violations.is_empty(), "{violations:?}");
    let steps = run
        .log
        .iter()
        .filter(|e| e["type"] == event_kind::STEP_START)
        .count();
    assert_eq!(steps, 10);
    assert_eq!(run.requests.len(), 10);
    let last = run.log.last().unwrap();
    assert_eq!(last["data"]["reason"]["kind"], "completed");
}
