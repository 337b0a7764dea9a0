//! Fuzz the mock provider's HTTP handling: any bytes on one connection get
//! well-formed answers that match the request log, and the connection closes.
//! The body lives in `dshc_fuzzing::oracles::mock_http` so that stable
//! `cargo test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::mock_http::check_http_bytes(data);
});
