//! Fuzz the judge's matching: an arbitrary expectation against an arbitrary
//! observation, its cost bounded and `$contains` checked against a search.
//! The body lives in `dshc_fuzzing::oracles::matcher` so that stable `cargo
//! test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::matcher::check_matcher_bytes(data);
});
