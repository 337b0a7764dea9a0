//! Serde helpers the protocol types share: `default` and
//! `skip_serializing_if` functions, so a default such as "registered unless
//! said otherwise" is written once (serde takes these as function paths, not
//! values), and the reader of a value that is a string or a table.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};

/// `#[serde(default = "yes")]`: a flag that is on unless the file says otherwise.
pub(super) fn yes() -> bool {
    true
}

/// `skip_serializing_if` for a flag whose default is `true`.
pub(super) fn is_true(value: &bool) -> bool {
    *value
}

/// `skip_serializing_if` for a count, delay or index whose default is 0.
pub(super) fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Read a value that is either a string (`text`) or a table read as a `T`
/// (`table`): the table is deserialized as itself, so an error inside it
/// names its own field or rule, where an untagged enum would only say that
/// no variant matched. `expecting` completes "invalid type: ..., expected".
pub(super) fn string_or_table<'de, D, T, V>(
    deserializer: D,
    expecting: fn(&mut std::fmt::Formatter<'_>) -> std::fmt::Result,
    text: fn(String) -> V,
    table: fn(T) -> V,
) -> Result<V, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Either<T, V> {
        expecting: fn(&mut std::fmt::Formatter<'_>) -> std::fmt::Result,
        text: fn(String) -> V,
        table: fn(T) -> V,
        read: PhantomData<T>,
    }
    impl<'de, T: Deserialize<'de>, V> Visitor<'de> for Either<T, V> {
        type Value = V;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            (self.expecting)(f)
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<V, E> {
            Ok((self.text)(text.to_string()))
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(self.table)
        }
    }
    deserializer.deserialize_any(Either {
        expecting,
        text,
        table,
        read: PhantomData,
    })
}
