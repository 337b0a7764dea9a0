//! A value's serialization as a compact binary trace: what
//! [`crate::same_bytes`] compares instead of JSON text.
//!
//! Two runs of a loop case are compared whole for determinism, and writing
//! their JSON (escaping every string of every log, formatting every number)
//! was most of the cost of the comparison. The trace records each serde call
//! with its arguments: a tag, then the bytes of a scalar, a string's length
//! and bytes, a field's or variant's name. Values whose traces are equal make
//! the same serde calls with the same arguments, so their JSON is the same
//! bytes, key order included. The converse can fail only across types (an
//! `i64` and a `u64` of the same value), which two runs of one program never
//! differ in.

use std::fmt::Display;

use serde::ser::{self, Serialize};

/// The trace of `value`, or `None` if it cannot be serialized; `capacity`
/// bytes are reserved first (a trace's expected size, when another of it is
/// at hand).
pub(crate) fn trace_of<T: Serialize + ?Sized>(value: &T, capacity: usize) -> Option<Vec<u8>> {
    let mut trace = Trace(Vec::with_capacity(capacity));
    value.serialize(&mut trace).ok()?;
    Some(trace.0)
}

/// The trace written so far.
struct Trace(Vec<u8>);

/// One tag per kind of serde call.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Tag {
    Bool,
    I64,
    U64,
    I128,
    U128,
    F64,
    Char,
    Str,
    Bytes,
    None,
    Some,
    Unit,
    UnitStruct,
    UnitVariant,
    NewtypeStruct,
    NewtypeVariant,
    Seq,
    Tuple,
    TupleStruct,
    TupleVariant,
    Map,
    Struct,
    StructVariant,
    Key,
    Value,
    Field,
    Element,
    End,
}

impl Trace {
    fn tag(&mut self, tag: Tag) {
        self.0.push(tag as u8);
    }

    fn text(&mut self, text: &str) {
        self.0.extend_from_slice(&(text.len() as u64).to_le_bytes());
        self.0.extend_from_slice(text.as_bytes());
    }

    fn tagged(&mut self, tag: Tag, bytes: &[u8]) -> Result<(), Failed> {
        self.tag(tag);
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn named(&mut self, tag: Tag, name: &str) {
        self.tag(tag);
        self.text(name);
    }
}

/// A value serde could not write: it is the same as nothing.
#[derive(Debug)]
pub(crate) struct Failed;

impl Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the value cannot be serialized")
    }
}

impl std::error::Error for Failed {}

impl ser::Error for Failed {
    fn custom<T: Display>(_: T) -> Failed {
        Failed
    }
}

impl ser::Serializer for &mut Trace {
    type Ok = ();
    type Error = Failed;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Result<(), Failed> {
        self.tagged(Tag::Bool, &[u8::from(v)])
    }
    fn serialize_i8(self, v: i8) -> Result<(), Failed> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Failed> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Failed> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Failed> {
        self.tagged(Tag::I64, &v.to_le_bytes())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Failed> {
        self.tagged(Tag::I128, &v.to_le_bytes())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Failed> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Failed> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Failed> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Failed> {
        self.tagged(Tag::U64, &v.to_le_bytes())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Failed> {
        self.tagged(Tag::U128, &v.to_le_bytes())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Failed> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Failed> {
        self.tagged(Tag::F64, &v.to_bits().to_le_bytes())
    }
    fn serialize_char(self, v: char) -> Result<(), Failed> {
        self.tagged(Tag::Char, &u32::from(v).to_le_bytes())
    }
    fn serialize_str(self, v: &str) -> Result<(), Failed> {
        self.named(Tag::Str, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Failed> {
        self.tag(Tag::Bytes);
        self.0.extend_from_slice(&(v.len() as u64).to_le_bytes());
        self.0.extend_from_slice(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Failed> {
        self.tagged(Tag::None, &[])
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Failed> {
        self.tag(Tag::Some);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Failed> {
        self.tagged(Tag::Unit, &[])
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<(), Failed> {
        self.named(Tag::UnitStruct, name);
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Failed> {
        self.named(Tag::UnitVariant, variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        self.named(Tag::NewtypeStruct, name);
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        self.named(Tag::NewtypeVariant, variant);
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Failed> {
        self.tag(Tag::Seq);
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Failed> {
        self.tag(Tag::Tuple);
        Ok(self)
    }
    fn serialize_tuple_struct(self, name: &'static str, _: usize) -> Result<Self, Failed> {
        self.named(Tag::TupleStruct, name);
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        self.named(Tag::TupleVariant, variant);
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Failed> {
        self.tag(Tag::Map);
        Ok(self)
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Self, Failed> {
        self.named(Tag::Struct, name);
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        self.named(Tag::StructVariant, variant);
        Ok(self)
    }
}

/// An item of a sequence, tuple or tuple variant, then the container's end.
macro_rules! items {
    ($($kind:ident :: $method:ident),*) => {$(
        impl ser::$kind for &mut Trace {
            type Ok = ();
            type Error = Failed;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
                self.tag(Tag::Element);
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Failed> {
                self.tagged(Tag::End, &[])
            }
        }
    )*};
}

items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A named field of a struct or struct variant, then its end.
macro_rules! fields {
    ($($kind:ident),*) => {$(
        impl ser::$kind for &mut Trace {
            type Ok = ();
            type Error = Failed;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                name: &'static str,
                value: &T,
            ) -> Result<(), Failed> {
                self.named(Tag::Field, name);
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Failed> {
                self.tagged(Tag::End, &[])
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for &mut Trace {
    type Ok = ();
    type Error = Failed;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Failed> {
        self.tag(Tag::Key);
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
        self.tag(Tag::Value);
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Failed> {
        self.tagged(Tag::End, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::trace_of;
    use serde::Serialize;
    use serde_json::json;

    #[test]
    fn equal_traces_are_equal_json_and_each_difference_shows() {
        let same = |a: &serde_json::Value, b: &serde_json::Value| trace_of(a, 0) == trace_of(b, 0);
        assert!(same(
            &json!({"a": [1, "x", null, true, 2.5]}),
            &json!({"a": [1, "x", null, true, 2.5]})
        ));
        // Key order, a number's type, a string's end, nesting and emptiness.
        assert!(!same(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})));
        assert!(!same(&json!(1), &json!(1.0)));
        assert!(!same(&json!(-1), &json!(1)));
        assert!(!same(&json!("ab"), &json!("abc")));
        assert!(!same(&json!(["ab", "c"]), &json!(["a", "bc"])));
        assert!(!same(&json!([[1], 2]), &json!([[1, 2]])));
        assert!(!same(&json!([]), &json!({})));
        assert!(!same(&json!(null), &json!(false)));
        assert!(!same(&json!({"a": null}), &json!({})));
    }

    #[test]
    fn typed_values_differ_by_field_variant_and_skipped_field() {
        #[derive(Serialize)]
        enum Step {
            Wait { ms: u64 },
            Say(String),
            Stop,
        }
        #[derive(Serialize)]
        struct Run {
            steps: Vec<Step>,
            #[serde(skip_serializing_if = "Option::is_none")]
            failure: Option<String>,
        }
        let run = |steps, failure| trace_of(&Run { steps, failure }, 0);
        assert_eq!(
            run(vec![Step::Wait { ms: 5 }, Step::Stop], None),
            run(vec![Step::Wait { ms: 5 }, Step::Stop], None)
        );
        assert_ne!(
            run(vec![Step::Wait { ms: 5 }], None),
            run(vec![Step::Wait { ms: 6 }], None)
        );
        assert_ne!(
            run(vec![Step::Stop], None),
            run(vec![Step::Say("Stop".into())], None)
        );
        assert_ne!(run(vec![], None), run(vec![], Some(String::new())));
    }
}
