//! The seeded search as cargo-mutants' test of the model crate
//! (`mutation/model --search`, mutation/README.md): how many of the mutants
//! the scenario suite catches `dshc diff` finds too. The reference built
//! with a mutant runs in process; the unmutated reference runs as the
//! adapter, `dshc adapter` from `DSHC_SEARCH_ADAPTER` (a binary built
//! before mutating). Both levels' seeded cases are compared as `dshc diff`
//! compares them ([`compare_once`]), `DSHC_SEARCH_CASES` of each (2,000 by
//! default) of seed `DSHC_SEARCH_SEED` (1); the first case that disagrees or
//! cannot run finds the mutant, and fails the test.
//!
//! Ignored by default: it is a measurement, not a check of this tree, and
//! needs the unmutated binary.

use dshc_fuzzing::diff::{Comparison, compare_once, summary};
use dshc_fuzzing::generate::{assembly, session};
use dshc_runner::adapter::External;
use dshc_runner::adapter::process::{AdapterProcess, Limits};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number"))
    })
}

#[test]
#[ignore = "a measurement: mutation/model --search runs it, with DSHC_SEARCH_ADAPTER set"]
fn the_seeded_search_finds_no_disagreement_with_the_unmutated_reference() {
    let adapter = std::env::var("DSHC_SEARCH_ADAPTER")
        .expect("DSHC_SEARCH_ADAPTER: the unmutated `dshc adapter` command line");
    let seed = setting("DSHC_SEARCH_SEED", 1);
    let cases = setting("DSHC_SEARCH_CASES", 2000);
    let mut unmutated = External::new(AdapterProcess::new(&adapter, Limits::default()));
    for level in ["assembly", "loop"] {
        for case in 0..cases {
            let scenario = match level {
                "assembly" => assembly::generate(seed, case),
                _ => session::generate_session(seed, case),
            };
            let id = format!("search/{level}/{seed}/{case}");
            let found = match compare_once(&scenario, &id, &mut unmutated) {
                Comparison::Agree => continue,
                Comparison::NotRun(reason) => format!("not run: {reason}"),
                Comparison::Disagree { differences, .. } => summary(&differences),
            };
            unmutated.stop();
            panic!("the search found the mutant at {level} case {case} of seed {seed}: {found}");
        }
    }
    unmutated.stop();
}
