//! Adapter-reply oracle: the trust boundary where an adapter's stdout line
//! becomes an observation. Whatever the line, parsing gives a reply or a
//! protocol error, never a panic; a reply that parses serializes back to a
//! line that parses to the same reply; a `result` reply is compared against
//! scenarios of both levels, exactly and redacted as for a real-time
//! adapter, to one outcome each.
//!
//! The fuzz target `adapter_reply`, the corpus replay under `cargo test` and
//! the seeded test all call [`check_reply_bytes`].

use std::path::Path;
use std::sync::LazyLock;

use dshc_scenario::load::{LoadedScenario, parse_scenario};
use dshc_scenario::protocol::{Case, ImplementationInfo, ReplyBody, parse_reply};

use dshc_oracle::outcome::Outcome;
use dshc_runner::adapter::{Implementation, Ran};
use dshc_runner::check::{check_with, describe};

/// Scenarios a fuzzed result is compared against: every matcher and query
/// kind, both levels. They are bundled scenarios, so they stay valid as the
/// format grows.
const SCENARIOS: [(&str, &str); 8] = [
    (
        "scenarios/assembly/matching/array_matchers.toml",
        include_str!("../../../../scenarios/assembly/matching/array_matchers.toml"),
    ),
    (
        "scenarios/assembly/matching/error_matchers.toml",
        include_str!("../../../../scenarios/assembly/matching/error_matchers.toml"),
    ),
    (
        "scenarios/assembly/matching/number_matchers.toml",
        include_str!("../../../../scenarios/assembly/matching/number_matchers.toml"),
    ),
    (
        "scenarios/assembly/matching/object_matchers.toml",
        include_str!("../../../../scenarios/assembly/matching/object_matchers.toml"),
    ),
    (
        "scenarios/assembly/matching/string_matchers.toml",
        include_str!("../../../../scenarios/assembly/matching/string_matchers.toml"),
    ),
    (
        "scenarios/loop/matching/captures.toml",
        include_str!("../../../../scenarios/loop/matching/captures.toml"),
    ),
    (
        "scenarios/loop/matching/event_queries.toml",
        include_str!("../../../../scenarios/loop/matching/event_queries.toml"),
    ),
    (
        "scenarios/loop/matching/request_matchers.toml",
        include_str!("../../../../scenarios/loop/matching/request_matchers.toml"),
    ),
];

static LOADED: LazyLock<Vec<LoadedScenario>> = LazyLock::new(|| {
    SCENARIOS
        .iter()
        .map(|(path, text)| {
            parse_scenario(Path::new(path), text).unwrap_or_else(|error| panic!("{error}"))
        })
        .collect()
});

/// An implementation that answers every case with one canned observation.
struct Canned {
    ran: Ran,
    real_time: bool,
}

impl Implementation for Canned {
    fn info(&mut self) -> Option<ImplementationInfo> {
        None
    }

    fn run(&mut self, _case: &Case) -> Ran {
        self.ran.clone()
    }

    fn real_time(&self) -> bool {
        self.real_time
    }
}

/// Parse `data` as one adapter reply line and, if it is a result, compare
/// it against the oracle's scenarios.
///
/// # Panics
/// When parsing, comparing or describing panics, when a reply does not
/// survive a round trip, or when one comparison gives two outcomes.
pub fn check_reply_bytes(data: &[u8]) {
    // The supervisor reads lines of UTF-8; anything else is refused there.
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(reply) = parse_reply(line) else {
        return;
    };
    let again = serde_json::to_string(&reply).expect("a parsed reply serializes");
    assert!(!again.contains('\n'), "a reply serializes to one line");
    assert_eq!(
        parse_reply(&again).as_ref(),
        Ok(&reply),
        "a reply survives a round trip: {again}"
    );
    let ReplyBody::Result(result) = reply.body else {
        return;
    };
    for scenario in LOADED.iter() {
        for real_time in [false, true] {
            let mut canned = Canned {
                ran: Ran::Observed(result.clone()),
                real_time,
            };
            let outcome = check_with(scenario, &mut canned);
            assert_eq!(
                outcome,
                check_with(scenario, &mut canned),
                "one observation compared twice gave two outcomes"
            );
            assert!(
                !matches!(outcome, Outcome::NotRun(_)),
                "an observation is compared, not dropped"
            );
            let _ = describe(scenario, &outcome);
        }
    }
}
