//! Fuzz scenario loading: any bytes as a scenario file load to a scenario or
//! one positioned error, and a scenario that loads runs on the reference to
//! one outcome.
//! The body lives in `dshc_fuzzing::oracles::scenario_load` so that stable
//! `cargo test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::scenario_load::check_scenario_bytes(data);
});
