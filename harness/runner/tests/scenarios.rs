//! Every scenario file is its own named test (libtest-mimic), so
//! `cargo test` and `cargo nextest run` list, filter and report them one by
//! one. Set `DSHC_BLESS=1` to rewrite expectations from the reference.

use std::path::{Path, PathBuf};

use dshc_harness::runner::{Outcome, check};
use dshc_scenario::load::{discover, load_scenario};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let arguments = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let found = discover(&[root]);
    let (files, errors) = (found.files, found.errors);
    let mut trials: Vec<Trial> = errors
        .into_iter()
        .map(|error| {
            Trial::test(format!("discover::{}", error.path.display()), move || {
                Err(Failed::from(error.to_string()))
            })
        })
        .collect();
    trials.extend(files.into_iter().map(trial));
    libtest_mimic::run(&arguments, trials).exit();
}

fn trial(path: PathBuf) -> Trial {
    let name = dshc_scenario::load::scenario_id(&path);
    Trial::test(name, move || {
        let scenario = load_scenario(&path).map_err(|e| Failed::from(e.to_string()))?;
        match check(&scenario) {
            Outcome::Pass => {}
            outcome => {
                let description = dshc_harness::runner::describe(&scenario, &outcome);
                return match dshc_harness::bless::bless_requested() {
                    Ok(true) => {
                        let result = dshc_harness::reference::run_case(&scenario.case)
                            .expect("a compiled case is valid");
                        let text = dshc_harness::bless::blessed_source(&scenario, &result)
                            .map_err(|e| {
                                Failed::from(format!("{description}\ncannot bless: {e}"))
                            })?;
                        std::fs::write(&scenario.path, text)
                            .map_err(|e| Failed::from(e.to_string()))?;
                        eprintln!("blessed {} (review the diff)", scenario.path.display());
                        Ok(())
                    }
                    Ok(false) => Err(Failed::from(format!(
                        "{description}\nto rewrite the expectations from the reference: DSHC_BLESS=1 cargo test -p dshc --test scenarios -- {}",
                        scenario.id
                    ))),
                    Err(message) => Err(Failed::from(format!("{description}\n{message}"))),
                };
            }
        }

        // Loop scenarios: the same scenario twice gives byte-identical results.
        if scenario.case.level == dshc_scenario::protocol::Level::Loop {
            let first = serde_json::to_string(
                &dshc_harness::reference::run_case(&scenario.case)
                    .expect("a compiled case is valid"),
            )
            .unwrap_or_default();
            let second = serde_json::to_string(
                &dshc_harness::reference::run_case(&scenario.case)
                    .expect("a compiled case is valid"),
            )
            .unwrap_or_default();
            if first != second {
                return Err(Failed::from(format!(
                    "{}: two runs differ\n{}",
                    scenario.id,
                    dshc_harness::runner::diff_text(
                        &first.replace("},{", "},\n{"),
                        &second.replace("},{", "},\n{")
                    )
                )));
            }
        }
        Ok(())
    })
}
