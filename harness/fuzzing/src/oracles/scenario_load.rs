//! Scenario-loading oracle: the trust boundary where a file's bytes become
//! a case. Whatever the bytes, loading gives a scenario or one error whose
//! position lies inside the text, never a panic; a scenario that loads runs
//! on the reference to one outcome, the same outcome twice.
//!
//! The fuzz target `scenario_load`, the corpus replay under `cargo test` and
//! the seeded test all call [`check_scenario_bytes`].

use std::path::Path;

use dshc_scenario::load::{LoadError, parse_scenario, utf8_text};

use dshc_runner::check::{check, describe};

/// The virtual-time budget a fuzzed loop case runs with. A stalled case
/// costs one tick per busy millisecond of its budget (up to
/// [`dshc_runner::limits::MAX_VIRTUAL_TIME_MS`]); a minute of virtual time keeps
/// an execution short while still reaching every stall and timeout path.
pub const FUZZ_BUDGET_MS: u64 = 60_000;

/// The path fuzzed text is loaded as; its id is `fuzz/input`.
const FUZZ_PATH: &str = "scenarios/fuzz/input.toml";

/// Load `data` as a scenario file and, if it loads, run it on the reference.
///
/// # Panics
/// When loading or running panics, when an error's position is outside the
/// text, or when two runs of one case differ.
pub fn check_scenario_bytes(data: &[u8]) {
    let path = Path::new(FUZZ_PATH);
    let text = match utf8_text(data.to_vec()) {
        Ok(text) => text,
        Err((line, column)) => {
            let valid = String::from_utf8_lossy(data);
            assert_position_inside(&valid, line, column, "invalid UTF-8");
            return;
        }
    };
    let mut loaded = match parse_scenario(path, &text) {
        Ok(loaded) => loaded,
        Err(error) => {
            check_load_error(&text, &error);
            return;
        }
    };
    assert_eq!(loaded.id, "fuzz/input", "the id comes from the path");
    if let Some(world) = loaded.case.world.as_mut() {
        world.simulation.budget_ms = world.simulation.budget_ms.min(FUZZ_BUDGET_MS);
    }
    let first = check(&loaded);
    let second = check(&loaded);
    assert_eq!(
        first, second,
        "the reference gave two outcomes for one case"
    );
    let _ = describe(&loaded, &first);
}

fn check_load_error(text: &str, error: &LoadError) {
    assert!(!error.message.is_empty(), "a load error says what is wrong");
    assert_eq!(
        error.path,
        Path::new(FUZZ_PATH),
        "a load error names its file"
    );
    match (error.line, error.column) {
        (Some(line), Some(column)) => assert_position_inside(text, line, column, &error.message),
        (None, None) => {}
        (line, column) => panic!("half a position ({line:?}, {column:?}): {}", error.message),
    }
    let shown = error.to_string();
    assert!(
        shown.starts_with(FUZZ_PATH),
        "a load error is shown after its file: {shown}"
    );
}

/// A 1-based line and character column lie in `text`, or just past its end.
fn assert_position_inside(text: &str, line: usize, column: usize, message: &str) {
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        (1..=lines.len()).contains(&line),
        "line {line} outside a text of {} lines: {message}",
        lines.len()
    );
    let width = lines[line - 1].chars().count();
    assert!(
        (1..=width + 1).contains(&column),
        "column {column} outside line {line} of {width} characters: {message}"
    );
}
