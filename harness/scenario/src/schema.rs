//! The JSON Schemas committed to the repository: scenario files and adapter
//! protocol messages. A test checks the committed copies are fresh.

use schemars::generate::SchemaSettings;

use crate::format::Scenario;
use crate::protocol::{Reply, Request};

/// A schema as committed: pretty JSON and a final newline.
///
/// # Panics
///
/// If the schema does not serialize. It cannot fail: a schema is a JSON
/// value, whose keys are strings. Were it to, an empty "schema" written to
/// the committed file would be worse than the panic.
fn pretty(schema: &schemars::Schema) -> String {
    let mut text = serde_json::to_string_pretty(schema)
        .expect("a JSON Schema is a JSON value with string keys, so it serializes");
    text.push('\n');
    text
}

/// The scenario file schema (`scenarios/schema/scenario.v2.json`).
///
/// # Panics
///
/// Never in practice; see `pretty`.
pub fn scenario_schema() -> String {
    let generator = SchemaSettings::draft2020_12().into_generator();
    pretty(&generator.into_root_schema_for::<Scenario>())
}

/// The adapter protocol schema (`docs/adapter-protocol.v1.json`): requests and replies.
///
/// # Panics
///
/// Never in practice; see `pretty`.
pub fn protocol_schema() -> String {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let request = generator.subschema_for::<Request>();
    let reply = generator.subschema_for::<Reply>();
    let mut root = schemars::json_schema!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dshc adapter protocol v1",
        "description": "One JSON object per line. The harness writes Request lines to the adapter's stdin; the adapter writes Reply lines to its stdout.",
        "$defs": {},
    });
    let definitions = generator.take_definitions(true);
    let mut defs = serde_json::Map::new();
    for (name, schema) in definitions {
        defs.insert(name, schema);
    }
    // `subschema_for` registers a named type under `$defs` and returns a
    // `$ref` to it; only a type it inlined needs inserting here (inserting
    // the `$ref` itself would replace the definition with a self-reference).
    for (name, schema) in [("Request", request), ("Reply", reply)] {
        defs.entry(name.to_string())
            .or_insert_with(|| schema.to_value());
    }
    root.insert("$defs".into(), serde_json::Value::Object(defs));
    root.insert(
        "oneOf".into(),
        serde_json::json!([{ "$ref": "#/$defs/Request" }, { "$ref": "#/$defs/Reply" }]),
    );
    pretty(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `dshc schema` prints is a whole schema, never an empty stand-in.
    #[test]
    fn both_schemas_are_json_objects_ending_in_one_newline() {
        for text in [scenario_schema(), protocol_schema()] {
            assert!(text.ends_with("}\n"), "{text}");
            let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert!(value.get("$schema").is_some() && value.get("$defs").is_some());
        }
    }
}
