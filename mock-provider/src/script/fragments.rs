//! Text fragments, each sent as its own chunk: a list of strings, or one string in
//! the script (one fragment), with the JSON Schema that says so.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Text fragments, each sent as its own chunk. Deserializes from a list of strings or
/// from a single string (one fragment); serializes as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments(pub Vec<String>);

impl Fragments {
    /// No fragments.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fragments joined with no separator (the text the client reassembles).
    pub fn concat(&self) -> String {
        self.0.concat()
    }

    /// The fragments in order.
    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.0.iter()
    }
}

impl<S: Into<String>> FromIterator<S> for Fragments {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Self(iter.into_iter().map(Into::into).collect())
    }
}

impl Serialize for Fragments {
    fn serialize<Ser: Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Fragments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a string or a list of strings")]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        Ok(match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(fragment) => Self(vec![fragment]),
            OneOrMany::Many(fragments) => Self(fragments),
        })
    }
}

impl JsonSchema for Fragments {
    fn schema_name() -> Cow<'static, str> {
        "Fragments".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Text fragments, one chunk each: a list of strings, or one string (one fragment).",
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::script::ScriptEntry;

    fn parse(json: &str) -> ScriptEntry {
        serde_json::from_str(json).expect("entry parses")
    }

    #[test]
    fn fragments_accept_a_single_string() {
        let entry = parse(r#"{"content": "Hello", "reasoning": ["a", "b"]}"#);
        assert_eq!(entry.content.0, vec!["Hello"]);
        assert_eq!(entry.reasoning.0, vec!["a", "b"]);
        let round_trip = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            round_trip,
            serde_json::json!({"reasoning": ["a", "b"], "content": ["Hello"]})
        );
    }
}
