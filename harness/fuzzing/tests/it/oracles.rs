//! The fuzz oracles on stable: replay every corpus and artifact file, then
//! run each oracle over seeded random inputs. A fuzzer finding that is kept
//! in `fuzz/artifacts/` is therefore a regression test under `cargo test`.

use std::path::Path;

use dshc_fuzzing::oracles::adapter_reply::check_reply_bytes;
use dshc_fuzzing::oracles::matcher::check_matcher_bytes;
use dshc_fuzzing::oracles::mock_http::check_http_bytes;
use dshc_fuzzing::oracles::render::check_render_bytes;
use dshc_fuzzing::oracles::scenario_load::check_scenario_bytes;
use dshc_fuzzing::oracles::sse_decode::check_sse_bytes;
use dshc_fuzzing::oracles::tool_order::check_tool_order_bytes;
use dshc_fuzzing::oracles::{run_mutated, run_seeded};

/// Every file in the target's committed corpus and artifacts, sorted.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = Vec::new();
    for folder in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(folder).join(target)) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            if file
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            inputs.push(std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())));
        }
    }
    inputs
}

/// Replay a target's corpus through its oracle; how many inputs there were.
fn replay(target: &str, oracle: fn(&[u8])) -> usize {
    let inputs = corpus(target);
    for input in &inputs {
        oracle(input);
    }
    inputs.len()
}

#[test]
fn render_corpus_replays() {
    assert!(
        replay("render", check_render_bytes) > 0,
        "the render corpus is empty"
    );
}

#[test]
fn tool_order_corpus_replays() {
    assert!(
        replay("tool_order", check_tool_order_bytes) > 0,
        "the tool_order corpus is empty"
    );
}

#[test]
fn matcher_corpus_replays() {
    assert!(
        replay("matcher", check_matcher_bytes) > 0,
        "the matcher corpus is empty"
    );
}

#[test]
fn matcher_oracle_holds_on_seeded_and_mutated_inputs() {
    run_seeded(0x5EED_0007, 5_000, check_matcher_bytes);
    run_mutated(0x5EED_0008, &corpus("matcher"), 2_000, check_matcher_bytes);
}

/// The seeded matcher inputs reach matches, misses, broken expectations and
/// the `$contains` search, or the test above would pass vacuously.
#[test]
fn seeded_matcher_inputs_reach_every_outcome() {
    use arbitrary::{Arbitrary, Unstructured};
    use dshc_fuzzing::oracles::matcher::MatcherInput;
    use dshc_oracle::matching::Matcher;
    use dshc_scenario::pattern::Pattern;
    let mut rng = dshc_fuzzing::generate::rng::SplitMix64::new(0x5EED_0007);
    // [matched, missed, broken, a top-level `$contains` over an array]
    let mut counts = [0usize; 4];
    for _ in 0..5_000 {
        let len = rng.below(256) as usize;
        let bytes = rng.bytes(len);
        let Ok(input) = MatcherInput::arbitrary_take_rest(Unstructured::new(&bytes)) else {
            continue;
        };
        let mut matcher = Matcher::new();
        for (name, value) in &input.captured {
            matcher.bind(name, value.clone(), "").expect("bound once");
        }
        let pattern = Pattern::new(input.pattern.clone());
        let slot = match matcher.check(&pattern, input.actual.as_ref()) {
            Ok(()) => 0,
            Err(miss) if miss.broken => 2,
            Err(_) => 1,
        };
        counts[slot] += 1;
        let contains = input.pattern.get("$contains").is_some_and(|a| a.is_array());
        if contains && input.actual.as_ref().is_some_and(|v| v.is_array()) {
            counts[3] += 1;
        }
    }
    // A broken expectation needs a captured argument its operator cannot
    // take: rarer by construction.
    let at_least = [200, 200, 10, 200];
    assert!(
        counts.iter().zip(at_least).all(|(&n, least)| n >= least),
        "outcome counts [matched, missed, broken, contains] = {counts:?}"
    );
}

#[test]
fn render_oracle_holds_on_seeded_inputs() {
    run_seeded(0x5EED_0001, 5_000, check_render_bytes);
}

#[test]
fn tool_order_oracle_holds_on_seeded_inputs() {
    run_seeded(0x5EED_0002, 5_000, check_tool_order_bytes);
}

/// The seeded inputs must reach every branch the oracle distinguishes, or the
/// seeded test above would pass vacuously.
#[test]
fn seeded_render_inputs_reach_every_outcome() {
    use arbitrary::{Arbitrary, Unstructured};
    use dshc_fuzzing::oracles::render::{Refusal, RenderInput, simple_render};
    let mut rng = dshc_fuzzing::generate::rng::SplitMix64::new(0x5EED_0001);
    let mut counts = [0usize; 5];
    for _ in 0..5_000 {
        let len = rng.below(256) as usize;
        let bytes = rng.bytes(len);
        let Ok(input) = RenderInput::arbitrary_take_rest(Unstructured::new(&bytes)) else {
            continue;
        };
        let slot = match simple_render(&input.text, &input.variables) {
            Ok(_) => 0,
            Err(Refusal::MalformedAt(_)) => 1,
            Err(Refusal::MalformedName(_)) => 2,
            Err(Refusal::Unknown(_)) => 3,
            Err(Refusal::NoValue(_)) => 4,
        };
        counts[slot] += 1;
    }
    assert!(
        counts.iter().all(|&n| n >= 50),
        "outcome counts [ok, malformed-at, malformed-name, unknown, no-value] = {counts:?}"
    );
}

#[test]
fn seeded_tool_order_inputs_reach_every_rule() {
    use arbitrary::{Arbitrary, Unstructured};
    use dshc_fuzzing::oracles::tool_order::{Decided, ToolOrderInput, check_tool_order};
    let mut rng = dshc_fuzzing::generate::rng::SplitMix64::new(0x5EED_0002);
    let mut counts = std::collections::BTreeMap::<Decided, usize>::new();
    for _ in 0..5_000 {
        let len = rng.below(256) as usize;
        let bytes = rng.bytes(len);
        let Ok(input) = ToolOrderInput::arbitrary_take_rest(Unstructured::new(&bytes)) else {
            continue;
        };
        *counts.entry(check_tool_order(&input)).or_default() += 1;
    }
    assert_eq!(counts.len(), 5, "rules reached: {counts:?}");
    assert!(
        counts.values().all(|&n| n >= 50),
        "rules reached: {counts:?}"
    );
}

/// The trust-boundary targets: corpus replay, seeded random bytes, and
/// seeded mutations of the corpus.
/// A fuzz target's name, its oracle, and the seed its stable runs use.
type Target = (&'static str, fn(&[u8]), u64);

const BOUNDARY_TARGETS: [Target; 4] = [
    ("scenario_load", check_scenario_bytes, 0x5EED_0003),
    ("adapter_reply", check_reply_bytes, 0x5EED_0004),
    ("sse_decode", check_sse_bytes, 0x5EED_0005),
    ("mock_http", check_http_bytes, 0x5EED_0006),
];

#[test]
fn boundary_corpora_replay() {
    for (target, oracle, _) in BOUNDARY_TARGETS {
        assert!(replay(target, oracle) > 0, "the {target} corpus is empty");
    }
}

#[test]
fn boundary_oracles_hold_on_seeded_inputs() {
    for (_, oracle, seed) in BOUNDARY_TARGETS {
        run_seeded(seed, 2_000, oracle);
    }
}

#[test]
fn boundary_oracles_hold_on_mutated_corpora() {
    for (target, oracle, seed) in BOUNDARY_TARGETS {
        run_mutated(seed, &corpus(target), 1_000, oracle);
    }
}

/// Every bundled scenario passes the loading oracle: it loads, and the
/// reference gives it one outcome, twice.
#[test]
fn bundled_scenarios_hold_under_the_loading_oracle() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let discovery = dshc_scenario::load::discover(&[scenarios]);
    assert!(
        discovery.files.len() > 300,
        "found {}",
        discovery.files.len()
    );
    for file in &discovery.files {
        check_scenario_bytes(&std::fs::read(file).expect("a bundled scenario reads"));
    }
}
