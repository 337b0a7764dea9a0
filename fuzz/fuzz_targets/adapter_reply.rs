//! Fuzz adapter reply parsing: any line an adapter writes parses to a reply or
//! a protocol error, survives a round trip, and compares to one outcome.
//! The body lives in `dshc_fuzzing::oracles::adapter_reply` so that stable
//! `cargo test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::adapter_reply::check_reply_bytes(data);
});
