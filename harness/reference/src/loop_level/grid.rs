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

use std::time::Duration;

use dshc_scenario::protocol::Case;
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
    let mut grid = Grid(0);
    match serde_json::to_value(case) {
        Ok(value) => grid.walk(None, &value),
        Err(_) => grid.0 = 1,
    }
    Duration::from_millis(grid.0.max(1))
}

/// The gcd so far, in ms (0: no duration seen yet; 1: nothing to gain).
struct Grid(u64);

impl Grid {
    fn walk(&mut self, key: Option<&str>, value: &Value) {
        if self.0 == 1 {
            return;
        }
        match value {
            Value::Object(fields) => {
                for (name, field) in fields {
                    self.walk(Some(name), field);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(key, item);
                }
            }
            Value::Number(number) => {
                if let Some(scale) = key.and_then(scale_of) {
                    self.add(number.as_f64().map(|n| n.abs() * scale));
                }
            }
            _ => {}
        }
    }

    fn add(&mut self, ms: Option<f64>) {
        let whole = ms
            .filter(|ms| ms.fract() == 0.0 && *ms < 9.0e15)
            .map(|ms| ms as u64);
        self.0 = match whole {
            Some(ms) => gcd(self.0, ms),
            None => 1,
        };
    }
}

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

    fn grid_of(value: Value) -> u64 {
        let mut grid = Grid(0);
        grid.walk(None, &value);
        grid.0
    }

    #[test]
    fn the_grid_divides_every_duration_in_any_field_of_its_kind() {
        assert_eq!(grid_of(json!({"latency_ms": 10, "steps": [{"ms": 25}]})), 5);
        assert_eq!(grid_of(json!({"a": [{"delay_ms": 6}, {"stall_ms": 9}]})), 3);
        assert_eq!(grid_of(json!({"latency_ms": 20, "retry_after_s": 1})), 20);
        // A clock move back counts by its size; zero divides nothing.
        assert_eq!(
            grid_of(json!({"ms": -40, "delay_ms": 0, "latency_ms": 10})),
            10
        );
        // Counts that are not durations are left out.
        assert_eq!(
            grid_of(json!({"latency_ms": 10, "calls": 3, "order": 7})),
            10
        );
    }

    #[test]
    fn a_fractional_duration_keeps_the_1_ms_tick() {
        assert_eq!(grid_of(json!({"latency_ms": 10, "delay_ms": 2.5})), 1);
        assert_eq!(
            grid_of(json!({"latency_ms": 10, "refresh_interval_ms": 1e300})),
            1
        );
    }
}
