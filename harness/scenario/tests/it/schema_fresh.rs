//! The committed JSON Schemas match the types they are generated from. If
//! this fails, regenerate with `cargo run -p dshc -- schema > scenarios/schema/scenario.v2.json`
//! and `cargo run -p dshc -- schema --protocol > docs/adapter-protocol.v1.json`.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

use std::path::Path;

fn assert_fresh(relative: &str, generated: String, command: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!("cannot read {relative} ({error}); regenerate it with `{command} > {relative}`")
    });
    assert!(
        committed == generated,
        "{relative} is stale; regenerate it with `{command} > {relative}`"
    );
}

#[test]
fn scenario_schema_is_fresh() {
    assert_fresh(
        "scenarios/schema/scenario.v2.json",
        dshc_scenario::schema::scenario_schema(),
        "cargo run -p dshc -- schema",
    );
}

#[test]
fn protocol_schema_is_fresh() {
    assert_fresh(
        "docs/adapter-protocol.v1.json",
        dshc_scenario::schema::protocol_schema(),
        "cargo run -p dshc -- schema --protocol",
    );
}
