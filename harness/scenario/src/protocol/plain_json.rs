//! Fields that hold plain JSON (content blocks, sources, stream parts,
//! model metadata, set maps, parameters) refuse the numbers JSON has no form
//! for.
//!
//! TOML states `nan`, `inf` and `-inf`; `serde_json::Value` reads them as
//! `null`, so such a number would reach every implementation as `null`
//! without a word. These fields are read through [`value`], [`option`],
//! [`list`] and [`map`] (`#[serde(deserialize_with)]`), which build the same
//! `Value` but refuse a non-finite number where it stands, so the loader
//! points at its line and column. A field that takes a JavaScript number or
//! value reads it with `js_json` instead, where those numbers cross the
//! protocol as themselves.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Number, Value};

/// The refusal, for the message the loader shows.
pub const NON_FINITE: &str = "JSON has no NaN or Infinity, and this field holds JSON: the number would reach the implementation as null";

/// A JSON value read without loss.
struct Plain(Value);

impl<'de> Deserialize<'de> for Plain {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PlainVisitor).map(Plain)
    }
}

struct PlainVisitor;

impl<'de> Visitor<'de> for PlainVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{value}: {NON_FINITE}")))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Plain::deserialize(deserializer).map(|plain| plain.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Plain(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some((key, Plain(item))) = access.next_entry::<String, Plain>()? {
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

/// A plain JSON value.
pub fn value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    Plain::deserialize(deserializer).map(|plain| plain.0)
}

/// An optional plain JSON value (with `#[serde(default)]`).
pub fn option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Option::<Plain>::deserialize(deserializer).map(|plain| plain.map(|plain| plain.0))
}

/// A list of plain JSON values.
pub fn list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Value>, D::Error> {
    Vec::<Plain>::deserialize(deserializer)
        .map(|items| items.into_iter().map(|plain| plain.0).collect())
}

/// An optional list of plain JSON values (with `#[serde(default)]`).
pub fn option_list<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<Value>>, D::Error> {
    Option::<Vec<Plain>>::deserialize(deserializer)
        .map(|items| items.map(|items| items.into_iter().map(|plain| plain.0).collect()))
}

/// An object of plain JSON values, its keys in the order written.
pub fn map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    match value(deserializer)? {
        Value::Object(object) => Ok(object),
        other => Err(de::Error::invalid_type(unexpected(&other), &"an object")),
    }
}

/// An optional object of plain JSON values (with `#[serde(default)]`).
pub fn option_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    match value(deserializer)? {
        Value::Null => Ok(None),
        Value::Object(object) => Ok(Some(object)),
        other => Err(de::Error::invalid_type(unexpected(&other), &"an object")),
    }
}

/// What serde calls a value of the wrong type.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Value, json};

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "super::value")]
        value: Value,
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let holder: Holder =
            toml::from_str("value = { a = [1, 2.5, \"x\", true, { b = -3 }] }").unwrap();
        assert_eq!(holder.value, json!({"a": [1, 2.5, "x", true, {"b": -3}]}));
    }

    #[test]
    fn refuses_every_non_finite_number_wherever_it_stands() {
        for text in [
            "value = inf",
            "value = [1, -inf]",
            "value = { a = { b = nan } }",
        ] {
            let error = toml::from_str::<Holder>(text).err().expect("refused");
            assert!(
                error.message().contains(super::NON_FINITE),
                "{text}: {error}"
            );
        }
    }
}
