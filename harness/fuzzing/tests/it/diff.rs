//! Seeded differential runs: generation is a pure function of (seed, case),
//! the reference agrees with itself, and shrinking reduces a disagreement to
//! a minimal scenario.

use dshc_fuzzing::diff::{Comparison, compare_once, shrink};
use dshc_fuzzing::generate::assembly::generate;
use dshc_fuzzing::regression::{Disagreement, RegressionError, write_verified};
use dshc_runner::adapter::{Implementation, Ran, Reference};
use dshc_runner::check::{Outcome, check, check_with};
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
    let minimal = shrink(&scenario, &mut planted, 5_000, &|_| false);
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
    let (case, scenario, differences) = (0..500)
        .find_map(|case| {
            let scenario = generate_session(3, case);
            match compare_once(&scenario, "x", &mut planted) {
                Comparison::Disagree { differences, .. } => Some((case, scenario, differences)),
                _ => None,
            }
        })
        .expect("some generated session streams \"tests\"");
    let leaves = differences[0].leaves();
    assert!(
        differences[0].path == "expect.log"
            && leaves
                .iter()
                .all(|leaf| leaf.path.starts_with("expect.log[")
                    && leaf.path.ends_with("].data.chunk.text")),
        "session {case}: {differences:?}"
    );
    let minimal = shrink(&scenario, &mut planted, 2_000, &|_| false);
    assert!(
        matches!(
            compare_once(&minimal, "x", &mut planted),
            Comparison::Disagree { .. }
        ),
        "session {case}: the shrunk scenario still disagrees"
    );
    assert!(minimal.steps.len() <= scenario.steps.len());
}

#[test]
fn a_regression_file_that_would_not_fail_on_the_adapter_is_refused_and_not_written() {
    let mut planted = PlantedBug;
    let scenario = (0..2_000)
        .map(|case| generate(5, case))
        .find(|scenario| {
            matches!(
                compare_once(scenario, "x", &mut planted),
                Comparison::Disagree { .. }
            )
        })
        .expect("some generated case renders an é");
    let minimal = shrink(&scenario, &mut planted, 2_000, &|_| false);
    let Comparison::Disagree {
        reference,
        other,
        differences,
    } = compare_once(&minimal, "x", &mut planted)
    else {
        panic!("the shrunk case disagrees");
    };
    let dir = std::env::temp_dir().join(format!("dshc-refused-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let found = Disagreement {
        stem: "planted".into(),
        title: "planted".into(),
        replay: "(a test)".into(),
        scenario: &minimal,
        reference: &reference,
        other: &other,
        differences: &differences,
    };
    // Checked on the reference in the adapter's place, the file passes
    // there: dshc's own bug, refused loudly and not written.
    let refused = write_verified(&dir, &found, &mut Reference);
    assert!(
        matches!(refused, Err(RegressionError::DoesNotReproduce { .. })),
        "{refused:?}"
    );
    assert!(!dir.join("planted.toml").exists());
    assert!(dir.join("planted.json").exists(), "the evidence is kept");
    let written = write_verified(&dir, &found, &mut planted).expect("reproduces on the bug");
    let text = std::fs::read_to_string(&written.scenario).unwrap();
    let loaded = dshc_scenario::load::parse_scenario(&written.scenario, &text).unwrap();
    assert!(matches!(
        check_with(&loaded, &mut planted),
        Outcome::Fail { .. }
    ));
    assert_eq!(check(&loaded), Outcome::Pass);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two planted bugs at once: an é in a prompt gains a "!", and every
/// non-empty context snapshot gains a trailing newline (observed after the
/// prompt, and not removed by shortening the é away).
struct TwoPlantedBugs;

impl Implementation for TwoPlantedBugs {
    fn info(&mut self) -> Option<Info> {
        None
    }

    fn run(&mut self, case: &Case) -> Ran {
        let Ran::Observed(mut result) = PlantedBug.run(case) else {
            unreachable!("the planted bug always observes");
        };
        for observation in &mut result.observations {
            if let Some(dshc_scenario::protocol::Rendered::Text(text)) = &mut observation.snapshot
                && !text.is_empty()
            {
                text.push('\n');
            }
        }
        Ran::Observed(result)
    }
}

#[test]
fn shrinking_keeps_the_disagreement_it_found_not_merely_some_disagreement() {
    // The context comes first, so the greedy shrinker tries dropping the é
    // section before the context: that step keeps *a* disagreement (the
    // snapshot) but loses the one found first (the prompt).
    let scenario: dshc_scenario::format::Scenario = toml::from_str(
        "format = 2\ntitle = \"two bugs\"\ncovers = [\"00:DIFF\"]\n\
         [config]\ninclude_harness_identity = false\n\
         [[steps]]\ndo = \"context\"\nname = \"c\"\norder = 1\ntext = \"x\"\n\
         [[steps]]\ndo = \"section\"\nname = \"s\"\norder = 1\ntext = \"é\"\n\
         [[steps]]\ndo = \"assemble\"\n",
    )
    .unwrap();
    let mut planted = TwoPlantedBugs;
    let classes = |scenario: &dshc_scenario::format::Scenario, planted: &mut TwoPlantedBugs| {
        match compare_once(scenario, "x", planted) {
            Comparison::Disagree { differences, .. } => {
                differences.into_iter().map(|d| d.class).collect::<Vec<_>>()
            }
            _ => Vec::new(),
        }
    };
    assert_eq!(
        classes(&scenario, &mut planted),
        ["assemble.prompt", "assemble.snapshot"]
    );
    let minimal = shrink(&scenario, &mut planted, 1_000, &|_| false);
    let kept = classes(&minimal, &mut planted);
    assert!(
        kept.iter().any(|c| c == "assemble.prompt"),
        "the shrunk case lost the prompt disagreement it was found for: {kept:?}\n{minimal:#?}"
    );
}

#[test]
fn two_thousand_cases_of_the_ci_seed_use_every_command_kind_of_the_assembly_level() {
    use dshc_fuzzing::exercised::Exercised;
    use dshc_scenario::protocol::Level;
    let mut exercised = Exercised::new(Level::Assembly, Default::default());
    for case in 0..2000 {
        exercised.add(&generate(20261129, case), &[]);
    }
    assert!(
        exercised.unexercised().is_empty(),
        "{}",
        exercised.lines().join("\n")
    );
}
