//! Fuzz SSE decoding and translation: any response body, cut into any reads,
//! decodes as upstream's parser does, and as the mock provider's splitter does.
//! The body lives in `dshc_fuzzing::oracles::sse_decode` so that stable
//! `cargo test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::sse_decode::check_sse_bytes(data);
});
