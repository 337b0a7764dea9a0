//! Fuzz the strict renderer against the simple oracle renderer and its
//! properties. The body lives in `dshc_fuzzing::oracles::render` so that stable
//! `cargo test` replays the corpus through the same check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::render::check_render_bytes(data);
});
