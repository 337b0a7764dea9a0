//! Fuzz tool ordering (`toolOrder` validation, marker expansion, the default
//! sort) against the sort-key oracle in `dshc_fuzzing::oracles::tool_order`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dshc_fuzzing::oracles::tool_order::check_tool_order_bytes(data);
});
