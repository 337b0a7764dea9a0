//! Seeded differential runs: generation is a pure function of (seed, case),
//! the reference agrees with itself, and shrinking reduces a disagreement to
//! a minimal scenario.

use dshc_fuzzing::diff::{Comparison, compare_once, shrink};
use dshc_fuzzing::generate::assembly::generate;
use dshc_runner::adapter::{Implementation, Ran, Reference};
use dshc_scenario::protocol::{AssemblyCommand, Case, Command, ImplementationInfo as Info};

#[test]
fn the_same_seed_generates_the_same_cases() {
    for case in 0..200 {
        let first = toml::to_string(&generate(7, case)).unwrap();
        let second = toml::to_string(&generate(7, case)).unwrap();
        assert_eq!(first, second, "case {case} of seed 7 is not reproducible");
    }
    let distinct: std::collections::BTreeSet<String> = (0..50)
        .map(|case| toml::to_string(&generate(7, case)).unwrap())
        .collect();
    assert_eq!(
        distinct.len(),
        50,
        "cases of one seed differ from each other"
    );
    assert_ne!(
        toml::to_string(&generate(7, 0)).unwrap(),
        toml::to_string(&generate(8, 0)).unwrap()
    );
}

#[test]
fn generated_cases_compile_and_the_reference_agrees_with_itself() {
    let mut reference = Reference;
    for case in 0..500 {
        let scenario = generate(11, case);
        assert_eq!(
            compare_once(&scenario, "self", &mut reference),
            Comparison::Agree,
            "case {case}"
        );
    }
}

#[test]
fn generated_cases_exercise_scopes_listeners_and_failures() {
    let (mut listeners, mut scoped, mut errors, mut prompts) = (0, 0, 0, 0);
    for case in 0..300 {
        let scenario = generate(3, case);
        let loaded = dshc_scenario::load::parse_scenario(
            std::path::Path::new("g.toml"),
            &toml::to_string(&scenario).unwrap(),
        )
        .expect("generated scenarios round-trip through TOML");
        let result = dshc_reference::run_case(&loaded.case).expect("a compiled case is valid");
        listeners += scenario
            .steps
            .iter()
            .filter(|s| matches!(s.command, Command::Assembly(AssemblyCommand::Listen(_))))
            .count();
        scoped += scenario
            .steps
            .iter()
            .filter(|s| matches!(&s.command, Command::Assembly(AssemblyCommand::Assemble(a)) if a.scope.is_some()))
            .count();
        errors += result
            .observations
            .iter()
            .filter(|o| o.error.is_some())
            .count();
        prompts += result
            .observations
            .iter()
            .filter(|o| o.prompt.is_some())
            .count();
    }
    assert!(
        listeners > 100 && scoped > 100 && errors > 50 && prompts > 100,
        "{listeners} {scoped} {errors} {prompts}"
    );
}

/// The reference, except that any prompt containing "é" is observed with a
/// trailing "!": a planted bug for the shrinker to find.
struct PlantedBug;

impl Implementation for PlantedBug {
    fn info(&mut self) -> Option<Info> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        let mut result = dshc_reference::run_case(case).expect("a compiled case is valid");
        for observation in &mut result.observations {
            if let Some(dshc_scenario::protocol::Rendered::Text(text)) = &mut observation.prompt
                && text.contains('é')
            {
                text.push('!');
            }
        }
        Ran::Observed(Box::new(result))
    }
}

#[test]
fn shrinking_keeps_the_disagreement_and_drops_everything_else() {
    let mut planted = PlantedBug;
    let (case, scenario) = (0..2_000)
        .map(|case| (case, generate(5, case)))
        .find(|(_, scenario)| {
            matches!(
                compare_once(scenario, "x", &mut planted),
                Comparison::Disagree { .. }
            )
        })
        .expect("some generated case renders an é");
    let minimal = shrink(&scenario, &mut planted, 5_000);
    assert!(
        matches!(
            compare_once(&minimal, "x", &mut planted),
            Comparison::Disagree { .. }
        ),
        "case {case}: the shrunk scenario still disagrees"
    );
    let registrations = minimal
        .steps
        .iter()
        .filter(|s| !matches!(s.command, Command::Assembly(AssemblyCommand::Assemble(_))))
        .count();
    assert!(
        registrations <= 1,
        "case {case}: shrunk to {:#?}",
        minimal.steps
    );
    assert!(minimal.steps.len() <= scenario.steps.len());
}

/// The reference at the loop level, except that an assistant text chunk
/// containing "tests" loses its last character: a planted bug in one event.
struct PlantedLoopBug;

impl Implementation for PlantedLoopBug {
    fn info(&mut self) -> Option<Info> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        let mut result = dshc_reference::run_case(case).expect("a compiled case is valid");
        if let Some(run) = result.run.as_mut() {
            for event in &mut run.log {
                let Some(chunk) = event.pointer_mut("/data/chunk") else {
                    continue;
                };
                if chunk["type"] == "text-delta"
                    && let Some(text) = chunk["text"].as_str().filter(|t| t.contains("tests"))
                {
                    let shorter: String = text.chars().take(text.chars().count() - 1).collect();
                    chunk["text"] = serde_json::Value::String(shorter);
                }
            }
        }
        Ran::Observed(Box::new(result))
    }
}

#[test]
fn loop_sessions_agree_with_themselves_and_a_planted_event_is_named_and_shrunk() {
    use dshc_fuzzing::generate::session::generate_session;
    let mut reference = Reference;
    for case in 0..60 {
        assert_eq!(
            compare_once(&generate_session(3, case), "self", &mut reference),
            Comparison::Agree,
            "session {case}"
        );
    }
    let mut planted = PlantedLoopBug;
    let (case, scenario, first) = (0..500)
        .find_map(|case| {
            let scenario = generate_session(3, case);
            match compare_once(&scenario, "x", &mut planted) {
                Comparison::Disagree { first, .. } => Some((case, scenario, first)),
                _ => None,
            }
        })
        .expect("some generated session streams \"tests\"");
    assert!(
        first.starts_with("the agent's log, event") && first.contains("text-delta"),
        "session {case}: {first}"
    );
    let minimal = shrink(&scenario, &mut planted, 2_000);
    assert!(
        matches!(
            compare_once(&minimal, "x", &mut planted),
            Comparison::Disagree { .. }
        ),
        "session {case}: the shrunk scenario still disagrees"
    );
    assert!(minimal.steps.len() <= scenario.steps.len());
}
