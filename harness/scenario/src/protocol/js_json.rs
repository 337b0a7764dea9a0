//! JavaScript values that JSON cannot carry, for scenario fields that hold
//! an arbitrary JavaScript value (an agent option, a session field).
//!
//! A value is JSON, except that an object with the single key `$js` stands
//! for one JavaScript value JSON has no form for: `{"$js": "undefined"}`,
//! `"NaN"`, `"Infinity"`, `"-Infinity"` or `"-0"`; in a TOML file also
//! `{ "$js" = "null" }` (TOML has no null), and TOML's own `nan`, `inf` and
//! `-0.0` are read as those values. Implementations decode the `$js` forms
//! (the reference in `dshc_model::js::JsValue::from_encoded`).
//!
//! [`JsNumber`] is the same encoding for a field that takes a number: a
//! JavaScript number, `NaN`, the infinities and `-0` included, so that such
//! a value crosses the protocol as itself rather than as JSON's `null`.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// The `$js` forms a file may state.
pub const JS_FORMS: [&str; 6] = ["undefined", "null", "NaN", "Infinity", "-Infinity", "-0"];

/// A JavaScript value in its JSON encoding (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct JsJson(pub Value);

impl JsJson {
    /// `undefined`.
    pub fn undefined() -> Self {
        JsJson(json!({"$js": "undefined"}))
    }

    /// Whether this is `undefined`.
    pub fn is_undefined(&self) -> bool {
        self.0 == json!({"$js": "undefined"})
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }
}

impl Serialize for JsJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

fn number(value: f64) -> Value {
    let form = if value.is_nan() {
        "NaN"
    } else if value == f64::INFINITY {
        "Infinity"
    } else if value == f64::NEG_INFINITY {
        "-Infinity"
    } else if value == 0.0 && value.is_sign_negative() {
        "-0"
    } else {
        return serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
    };
    json!({ "$js": form })
}

/// The number a `$js` form stands for, if it is a number's form.
fn number_form(form: &str) -> Option<f64> {
    match form {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        "-0" => Some(-0.0),
        _ => None,
    }
}

/// The `$js` forms of numbers.
const NUMBER_FORMS: [&str; 4] = ["NaN", "Infinity", "-Infinity", "-0"];

/// A JavaScript number, in the JSON encoding of the module docs: a finite
/// number as itself, `NaN`, `Infinity`, `-Infinity` and `-0` as
/// `{"$js": form}`. Read from a number (in TOML also `nan`, `inf`, `-0.0`)
/// or from one of those `$js` forms.
#[derive(Clone, Copy, Debug)]
pub struct JsNumber(pub f64);

/// Same number, bit for bit up to NaN's payload: `NaN` equals `NaN` and
/// `-0` differs from `0`, so a case that states one is not equal to a case
/// that states the other.
impl PartialEq for JsNumber {
    fn eq(&self, other: &Self) -> bool {
        (self.0.is_nan() && other.0.is_nan()) || self.0.to_bits() == other.0.to_bits()
    }
}

impl Serialize for JsNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        number(self.0).serialize(serializer)
    }
}

struct JsNumberVisitor;

impl<'de> Visitor<'de> for JsNumberVisitor {
    type Value = JsNumber;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(
            "a number (in TOML also nan, inf, -inf; or `{ \"$js\" = \"NaN\" }`, \"Infinity\", \"-Infinity\", \"-0\")",
        )
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<JsNumber, E> {
        Ok(JsNumber(value as f64))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<JsNumber, E> {
        Ok(JsNumber(value as f64))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<JsNumber, E> {
        Ok(JsNumber(value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsNumber, A::Error> {
        let forms = NUMBER_FORMS.map(|f| format!("{f:?}")).join(", ");
        let refused = || de::Error::custom(format!("a number's `$js` form is one of {forms}"));
        let Some((key, form)) = map.next_entry::<String, String>()? else {
            return Err(refused());
        };
        if key != "$js" || map.next_key::<String>()?.is_some() {
            return Err(refused());
        }
        number_form(&form).map(JsNumber).ok_or_else(|| {
            de::Error::custom(format!(
                "a number's `$js` form is one of {forms}, not {form:?}"
            ))
        })
    }
}

impl<'de> Deserialize<'de> for JsNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsNumberVisitor)
    }
}

impl JsonSchema for JsNumber {
    fn schema_name() -> Cow<'static, str> {
        "JsNumber".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A JavaScript number: a number (in TOML also nan, inf, -inf, -0.0), or `{\"$js\": \"NaN\" | \"Infinity\" | \"-Infinity\" | \"-0\"}`.",
            "anyOf": [
                { "type": "number" },
                {
                    "type": "object",
                    "properties": { "$js": { "enum": NUMBER_FORMS } },
                    "required": ["$js"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

struct JsJsonVisitor;

impl<'de> Visitor<'de> for JsJsonVisitor {
    type Value = JsJson;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .write_str("a value (`{ \"$js\" = \"undefined\" }` and the like for what JSON lacks)")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<JsJson, E> {
        Ok(JsJson(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<JsJson, E> {
        Ok(JsJson(Value::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<JsJson, E> {
        Ok(JsJson(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<JsJson, E> {
        Ok(JsJson(number(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<JsJson, E> {
        Ok(JsJson(Value::String(value.to_string())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<JsJson, E> {
        Ok(JsJson(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<JsJson, E> {
        Ok(JsJson(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<JsJson, D::Error> {
        JsJson::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsJson, A::Error> {
        let mut items = Vec::new();
        while let Some(JsJson(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(JsJson(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsJson, A::Error> {
        let mut object = Map::new();
        while let Some((key, JsJson(value))) = map.next_entry::<String, JsJson>()? {
            object.insert(key, value);
        }
        match object.get("$js") {
            None => Ok(JsJson(Value::Object(object))),
            Some(Value::String(form)) if object.len() == 1 && JS_FORMS.contains(&form.as_str()) => {
                if form == "null" {
                    Ok(JsJson(Value::Null))
                } else {
                    Ok(JsJson(Value::Object(object)))
                }
            }
            Some(other) => Err(de::Error::custom(format!(
                "`$js` stands alone and is one of {}, not {other}",
                JS_FORMS.map(|f| format!("{f:?}")).join(", ")
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for JsJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsJsonVisitor)
    }
}

impl JsonSchema for JsJson {
    fn schema_name() -> Cow<'static, str> {
        "JsValue".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A JavaScript value: JSON, or `{\"$js\": \"undefined\" | \"NaN\" | \"Infinity\" | \"-Infinity\" | \"-0\"}` (in TOML also \"null\", and nan, inf, -0.0)."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        value: JsJson,
    }

    fn read(toml_text: &str) -> Result<Value, String> {
        toml::from_str::<Holder>(toml_text)
            .map(|holder| holder.value.0)
            .map_err(|error| error.message().to_string())
    }

    #[test]
    fn toml_values_json_lacks_take_their_js_forms() {
        assert_eq!(read("value = nan"), Ok(json!({"$js": "NaN"})));
        assert_eq!(read("value = -inf"), Ok(json!({"$js": "-Infinity"})));
        assert_eq!(read("value = -0.0"), Ok(json!({"$js": "-0"})));
        assert_eq!(read("value = 0.5"), Ok(json!(0.5)));
        assert_eq!(read("value = { \"$js\" = \"null\" }"), Ok(Value::Null));
        assert_eq!(
            read("value = [{ \"$js\" = \"undefined\" }, 1]"),
            Ok(json!([{"$js": "undefined"}, 1]))
        );
        assert!(
            read("value = { \"$js\" = \"nope\" }")
                .unwrap_err()
                .contains("`$js`")
        );
        assert!(read("value = { \"$js\" = \"NaN\", x = 1 }").is_err());
    }

    #[derive(Debug, Deserialize)]
    struct NumberHolder {
        value: JsNumber,
    }

    fn read_number(toml_text: &str) -> Result<f64, String> {
        toml::from_str::<NumberHolder>(toml_text)
            .map(|holder| holder.value.0)
            .map_err(|error| error.message().to_string())
    }

    #[test]
    fn a_number_field_takes_every_javascript_number() {
        assert_eq!(read_number("value = inf"), Ok(f64::INFINITY));
        assert_eq!(
            read_number("value = { \"$js\" = \"-Infinity\" }"),
            Ok(f64::NEG_INFINITY)
        );
        assert!(
            read_number("value = { \"$js\" = \"NaN\" }")
                .unwrap()
                .is_nan()
        );
        assert!(read_number("value = nan").unwrap().is_nan());
        let zero = read_number("value = { \"$js\" = \"-0\" }").unwrap();
        assert!(zero == 0.0 && zero.is_sign_negative());
        assert_eq!(read_number("value = 7"), Ok(7.0));
        assert_eq!(read_number("value = 2.5"), Ok(2.5));
        let undefined = read_number("value = { \"$js\" = \"undefined\" }").unwrap_err();
        assert!(undefined.contains("not \"undefined\""), "{undefined}");
        assert!(read_number("value = { \"$js\" = \"NaN\", x = 1 }").is_err());
        assert!(read_number("value = \"Infinity\"").is_err());
    }

    #[test]
    fn a_number_crosses_json_as_itself() {
        for value in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            1.5,
            1e300,
        ] {
            let json = serde_json::to_value(JsNumber(value)).unwrap();
            let back: JsNumber = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(back, JsNumber(value), "{json}");
        }
        assert_eq!(
            serde_json::to_value(JsNumber(f64::INFINITY)).unwrap(),
            json!({"$js": "Infinity"})
        );
        assert_ne!(JsNumber(0.0), JsNumber(-0.0));
    }

    #[test]
    fn the_json_encoding_round_trips() {
        let value = json!({"a": [{"$js": "NaN"}, null, {"$js": "undefined"}], "b": "s"});
        let parsed: JsJson = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(parsed.0, value);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
    }
}
