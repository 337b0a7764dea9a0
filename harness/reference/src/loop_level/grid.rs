//! The coarsest tick a loop case can run on and stay the 1 ms run, byte for
//! byte.
//!
//! turmoil costs a step per tick whether or not anything happens in it, and
//! a loop step spends most of its ticks waiting out message latencies. If
//! every duration a case states (latency, delays, stalls, sleeps, tool
//! delays, timeouts, clock moves, the budget) is a multiple of g, every
//! event falls on a multiple of g, and a g ms tick leaves out only steps in
//! which nothing happens. [`tick_of`] takes g from the whole case, every
//! value the format names in milliseconds (`ms`, `*_ms`) or seconds
//! (`*_s`), so that a field added later is counted without being listed.
//! A duration no field states (a computed backoff) is caught while the run
//! goes (`mock_provider::sim_time::run_on_grid`), and the case runs again
//! at 1 ms.

use std::borrow::Cow;
use std::fmt::Display;
use std::time::Duration;

use dshc_scenario::protocol::Case;
use serde::ser::{self, Serialize};
use serde_json::Value;

/// The tick for `case`: the greatest common divisor of every duration it
/// states, 1 ms when one is fractional or the latency is zero (a message
/// then arrives one tick after it is sent, whatever the tick).
pub(crate) fn tick_of(case: &Case) -> Duration {
    let Some(world) = &case.world else {
        return mock_provider::sim_time::TICK;
    };
    if world.simulation.latency_ms == 0 {
        return mock_provider::sim_time::TICK;
    }
    Duration::from_millis(grid_of(case).max(1))
}

/// The gcd of every duration in `value` as its JSON would show it, each
/// number read under the name of the field, map key or variant that holds
/// it (an array's items under the array's): 0 if there is none, 1 if one is
/// fractional. The walk is a `Serializer`, so the case is never built as a
/// JSON value.
fn grid_of<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut grid = Grid {
        gcd_ms: 0,
        key: Cow::Borrowed(""),
        variant_outer: Vec::new(),
        map_key: Cow::Borrowed(""),
    };
    if value.serialize(&mut grid).is_err() {
        return 1;
    }
    grid.gcd_ms
}

/// The walk's state: the gcd so far, in ms (0: no duration seen yet; 1:
/// nothing to gain), and the name the value being written is held under.
struct Grid {
    gcd_ms: u64,
    key: Cow<'static, str>,
    /// The names the open tuple variants were under, innermost last.
    variant_outer: Vec<Cow<'static, str>>,
    /// A map entry's key, between `serialize_key` and `serialize_value`.
    map_key: Cow<'static, str>,
}

impl Grid {
    fn number(&mut self, value: f64) {
        // A number JSON cannot write (NaN, an infinity) is written `null`.
        if !value.is_finite() {
            return;
        }
        let Some(scale) = scale_of(&self.key) else {
            return;
        };
        let ms = value.abs() * scale;
        self.gcd_ms = if ms.fract() == 0.0 && ms < 9.0e15 {
            gcd(self.gcd_ms, ms as u64)
        } else {
            1
        };
    }

    /// Write `value` under `key`, then restore the name it was under.
    fn under<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), Failed> {
        let outer = std::mem::replace(&mut self.key, key);
        let written = value.serialize(&mut *self);
        self.key = outer;
        written
    }

    /// Write an item of an array under the array's own name.
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
        let key = self.key.clone();
        self.under(key, value)
    }
}

/// A value serde could not write; the case then keeps the 1 ms tick.
#[derive(Debug)]
struct Failed;

impl Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the case cannot be written as JSON")
    }
}

impl std::error::Error for Failed {}

impl ser::Error for Failed {
    fn custom<T: Display>(_: T) -> Failed {
        Failed
    }
}

impl ser::Serializer for &mut Grid {
    type Ok = ();
    type Error = Failed;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, _: bool) -> Result<(), Failed> {
        Ok(())
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
        self.number(v as f64);
        Ok(())
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
        self.number(v as f64);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Failed> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Failed> {
        self.number(v);
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Failed> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        self.under(Cow::Borrowed(variant), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        // The items are under the variant's name until `end` restores the
        // name the variant itself was under.
        let outer = std::mem::replace(&mut self.key, Cow::Borrowed(variant));
        self.variant_outer.push(outer);
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        Ok(self)
    }
}

/// An item of a sequence, tuple or tuple struct: under the container's name.
macro_rules! items {
    ($($kind:ident :: $method:ident),*) => {$(
        impl ser::$kind for &mut Grid {
            type Ok = ();
            type Error = Failed;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
                self.item(value)
            }
            fn end(self) -> Result<(), Failed> {
                Ok(())
            }
        }
    )*};
}

items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeTupleVariant for &mut Grid {
    type Ok = ();
    type Error = Failed;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
        self.item(value)
    }
    fn end(self) -> Result<(), Failed> {
        self.key = self.variant_outer.pop().unwrap_or(Cow::Borrowed(""));
        Ok(())
    }
}

impl ser::SerializeMap for &mut Grid {
    type Ok = ();
    type Error = Failed;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Failed> {
        // A key's name as JSON writes it: a string as it is, any other
        // scalar as text that names no duration, and a compound key refused
        // as JSON refuses it. Keys are short, so building one as a value is
        // cheap.
        self.map_key = match serde_json::to_value(key) {
            Ok(Value::String(name)) => Cow::Owned(name),
            Ok(Value::Bool(_) | Value::Number(_)) => Cow::Borrowed(""),
            Ok(Value::Null | Value::Array(_) | Value::Object(_)) | Err(_) => return Err(Failed),
        };
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
        let key = std::mem::take(&mut self.map_key);
        self.under(key, value)
    }
    fn end(self) -> Result<(), Failed> {
        Ok(())
    }
}

/// A named field of a struct or struct variant: under its own name.
macro_rules! fields {
    ($($kind:ident),*) => {$(
        impl ser::$kind for &mut Grid {
            type Ok = ();
            type Error = Failed;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                name: &'static str,
                value: &T,
            ) -> Result<(), Failed> {
                self.under(Cow::Borrowed(name), value)
            }
            fn end(self) -> Result<(), Failed> {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

/// Milliseconds per unit of a field named `name`, if it is a duration.
fn scale_of(name: &str) -> Option<f64> {
    if name == "ms" || name.ends_with("_ms") {
        Some(1.0)
    } else if name.ends_with("_s") {
        Some(1_000.0)
    } else {
        None
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_grid_divides_every_duration_in_any_field_of_its_kind() {
        assert_eq!(
            grid_of(&json!({"latency_ms": 10, "steps": [{"ms": 25}]})),
            5
        );
        assert_eq!(
            grid_of(&json!({"a": [{"delay_ms": 6}, {"stall_ms": 9}]})),
            3
        );
        assert_eq!(grid_of(&json!({"latency_ms": 20, "retry_after_s": 1})), 20);
        // A clock move back counts by its size; zero divides nothing.
        assert_eq!(
            grid_of(&json!({"ms": -40, "delay_ms": 0, "latency_ms": 10})),
            10
        );
        // Counts that are not durations are left out.
        assert_eq!(
            grid_of(&json!({"latency_ms": 10, "calls": 3, "order": 7})),
            10
        );
    }

    #[test]
    fn an_item_is_under_its_array_s_name_and_the_name_is_restored_after_it() {
        // 25 is under `waits_ms`; `n` inside the object is not a duration.
        assert_eq!(
            grid_of(&json!({"latency_ms": 10, "waits_ms": [{"n": 3}, 25]})),
            5
        );
        // After an object's fields, a sibling number is under its own name.
        assert_eq!(grid_of(&json!({"a_ms": [{"b_ms": 4}, 6], "count": 7})), 2);
    }

    #[test]
    fn typed_values_are_read_under_their_fields_variants_and_map_keys() {
        use indexmap::IndexMap;
        use serde::Serialize;

        #[derive(Serialize)]
        enum Step {
            Wait {
                ms: u64,
                times: u64,
            },
            #[serde(rename = "pause_ms")]
            Pause(u64),
            #[serde(rename = "gap_ms")]
            Gap(u64, u64),
            Count(u64),
        }
        #[derive(Serialize)]
        struct World {
            latency_ms: u64,
            steps: Vec<Step>,
            timers: IndexMap<String, u64>,
            tries: u64,
        }
        let world = World {
            latency_ms: 60,
            steps: vec![
                Step::Wait { ms: 90, times: 7 },
                Step::Pause(150),
                Step::Gap(120, 240),
                Step::Count(11),
            ],
            timers: IndexMap::from([("idle_ms".to_owned(), 300), ("runs".to_owned(), 13)]),
            tries: 17,
        };
        assert_eq!(grid_of(&world), 30);
        let world = World {
            steps: vec![Step::Gap(120, 45)],
            ..world
        };
        assert_eq!(grid_of(&world), 15);
    }

    #[test]
    fn a_fractional_duration_keeps_the_1_ms_tick() {
        assert_eq!(grid_of(&json!({"latency_ms": 10, "delay_ms": 2.5})), 1);
        assert_eq!(
            grid_of(&json!({"latency_ms": 10, "refresh_interval_ms": 1e300})),
            1
        );
    }
}
