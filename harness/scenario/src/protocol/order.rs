//! A section or context `order` that survives JSON.
//!
//! Scenarios must be able to state non-finite orders (to test that they are
//! rejected), but JSON has no NaN or infinity. On the wire a finite order is a
//! number and a non-finite one is the string `NaN`, `Infinity` or
//! `-Infinity`, as JavaScript's `String(order)` prints it. A file may also
//! state an order as any JavaScript number of the format ([`JsNumber`]:
//! TOML's `nan` and `inf`, or `{ "$js" = "Infinity" }`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::js_json::JsNumber;

/// A numeric sort key, possibly non-finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Order(pub f64);

impl Serialize for Order {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = self.0;
        if value.is_finite() {
            serializer.serialize_f64(value)
        } else if value.is_nan() {
            serializer.serialize_str("NaN")
        } else if value > 0.0 {
            serializer.serialize_str("Infinity")
        } else {
            serializer.serialize_str("-Infinity")
        }
    }
}

impl<'de> Deserialize<'de> for Order {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(
            untagged,
            expecting = "a number, or `NaN`, `Infinity` or `-Infinity` (in TOML also nan and inf, or `{ \"$js\" = \"Infinity\" }`)"
        )]
        enum Raw {
            Number(JsNumber),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(JsNumber(value)) => Ok(Order(value)),
            Raw::Text(text) => match text.as_str() {
                "NaN" => Ok(Order(f64::NAN)),
                "Infinity" => Ok(Order(f64::INFINITY)),
                "-Infinity" => Ok(Order(f64::NEG_INFINITY)),
                other => Err(serde::de::Error::custom(format!(
                    "order must be a number, `NaN`, `Infinity` or `-Infinity`, not {other:?}"
                ))),
            },
        }
    }
}

impl JsonSchema for Order {
    fn schema_name() -> Cow<'static, str> {
        "Order".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A number; in TOML also nan/inf, in JSON the strings NaN, Infinity, -Infinity.",
            "anyOf": [
                { "type": "number" },
                { "enum": ["NaN", "Infinity", "-Infinity"] },
                {
                    "type": "object",
                    "properties": { "$js": { "enum": ["NaN", "Infinity", "-Infinity", "-0"] } },
                    "required": ["$js"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_orders_round_trip_through_json() {
        for value in [1.5, -0.0, f64::INFINITY, f64::NEG_INFINITY] {
            let json = serde_json::to_string(&Order(value)).unwrap();
            assert_eq!(
                serde_json::from_str::<Order>(&json).unwrap(),
                Order(value),
                "{json}"
            );
        }
        let nan: Order =
            serde_json::from_str(&serde_json::to_string(&Order(f64::NAN)).unwrap()).unwrap();
        assert!(nan.0.is_nan());
        assert!(serde_json::from_str::<Order>("\"soon\"").is_err());
        let js: Order = serde_json::from_str(r#"{"$js": "-Infinity"}"#).unwrap();
        assert_eq!(js, Order(f64::NEG_INFINITY));
        assert!(serde_json::from_str::<Order>(r#"{"$js": "undefined"}"#).is_err());
    }
}
