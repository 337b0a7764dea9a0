//! time-context (10 TC1–TC4): a prepend `agent/pre-step` listener that
//! appends one durable time reading as the last message of each entering
//! step, subject to a refresh interval.
//!
//! It exists so the harness can check the reading's exact text (timestamp,
//! browser-zone policy line, elapsed time), its interval rule over the raw
//! log and its placement at the very end of the batch. Stand-in (99 §2): no
//! tz database; a zone is a name with a fixed UTC offset from the scenario,
//! `UTC` is always known, and `Intl` canonicalization is modelled as
//! case-insensitive lookup reporting the table's spelling.

use std::rc::Rc;

use serde_json::Value;

use super::config::{PluginName, TimeContextConfig};
use super::{
    latest_plugin_message, on_pre_step, refresh_interval, snapshot_source, text_message,
    within_interval,
};
use crate::Agent;
use crate::listeners::Decision;
use dshc_model::JsError;
use dshc_model::js::{cmp_utf16, quote, stringify};
use dshc_model::session::event_kind;
use dshc_model::session::{Clock, Event};

/// The plugin's name, also its `source.plugin` and section name.
pub const NAME: &str = "time-context";

/// A zone table: canonical name → offset in minutes east of UTC.
#[derive(Clone, Debug, PartialEq)]
pub struct Zones(Vec<(String, i32)>);

impl Zones {
    /// `UTC` plus the scenario's zones.
    pub fn new(table: &indexmap::IndexMap<String, String>) -> Result<Zones, JsError> {
        let mut zones = Vec::new();
        for (name, offset) in table {
            let minutes = parse_offset(offset).ok_or_else(|| {
                JsError::error(format!(
                    "time-context: zone {name:?} has an invalid fixed offset {offset:?} (want +HH:MM or -HH:MM)"
                ))
            })?;
            zones.push((name.clone(), minutes));
        }
        if !zones.iter().any(|(name, _)| name == "UTC") {
            zones.insert(0, ("UTC".into(), 0));
        }
        Ok(Zones(zones))
    }

    /// What `Intl.DateTimeFormat({timeZone}).resolvedOptions().timeZone`
    /// resolves `name` to, with its offset; `None` = a `RangeError`.
    pub fn resolve(&self, name: &str) -> Option<(String, i32)> {
        self.0
            .iter()
            .find(|(known, _)| known == name)
            .or_else(|| {
                self.0
                    .iter()
                    .find(|(known, _)| known.eq_ignore_ascii_case(name))
            })
            .cloned()
    }
}

/// `+HH:MM` / `-HH:MM` → minutes.
fn parse_offset(text: &str) -> Option<i32> {
    let bytes = text.as_bytes();
    if bytes.len() != 6 || bytes[3] != b':' {
        return None;
    }
    let sign = match bytes[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let hours: i32 = text.get(1..3)?.parse().ok()?;
    let minutes: i32 = text.get(4..6)?.parse().ok()?;
    if hours > 23 || minutes > 59 || !text[1..3].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(sign * (hours * 60 + minutes))
}

/// `formatDuration`: whole seconds as `1d 2h 3m 4s`, zero units left out
/// except seconds; negative clamps to `0s`.
pub fn format_duration(elapsed_ms: i64) -> String {
    let mut seconds = elapsed_ms.max(0) / 1000;
    let days = seconds / 86_400;
    seconds %= 86_400;
    let hours = seconds / 3600;
    seconds %= 3600;
    let minutes = seconds / 60;
    seconds %= 60;
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days}d"));
    }
    if hours > 0 {
        parts.push(format!("{hours}h"));
    }
    if minutes > 0 {
        parts.push(format!("{minutes}m"));
    }
    parts.push(format!("{seconds}s"));
    parts.join(" ")
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `formatTimestamp`: `YYYY-MM-DDTHH:MM:SS±HH:MM[Zone]` for a fixed offset
/// (`longOffset` gives `GMT` for zero, rendered `+00:00`).
pub fn format_timestamp(now_ms: u64, offset_minutes: i32, zone: &str) -> String {
    let local_seconds = (now_ms as i64).div_euclid(1000) + i64::from(offset_minutes) * 60;
    let days = local_seconds.div_euclid(86_400);
    let of_day = local_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let offset = offset_minutes.abs();
    format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{sign}{:02}:{:02}[{zone}]",
        offset / 60,
        offset % 60
    )
}

/// The browser-zone facts of one open turn.
#[derive(Clone, Debug, PartialEq)]
pub enum BrowserZone {
    /// One canonical zone.
    Resolved(String),
    /// Several, sorted.
    Mixed(Vec<String>),
    /// None.
    Missing,
}

/// `^[A-Za-z][A-Za-z0-9_+.-]*(?:\/[A-Za-z0-9_+.-]+)+$`.
fn is_iana_shaped(value: &str) -> bool {
    let mut parts = value.split('/');
    let first = parts.next().unwrap_or_default();
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_+.-".contains(c);
    let mut rest = parts.peekable();
    first
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && first.chars().all(allowed)
        && rest.peek().is_some()
        && rest.all(|part| !part.is_empty() && part.chars().all(allowed))
}

/// `browserTimeZone(message)`: the validated `clientTimeZone` of a
/// user-rpc message.
fn browser_time_zone(message: &Value, zones: &Zones) -> Result<Option<String>, JsError> {
    let source = &message["source"];
    let (Some(_), Some(value)) = (source["rpcId"].as_str(), source["clientTimeZone"].as_str())
    else {
        return Ok(None);
    };
    if source["kind"] != "user" {
        return Ok(None);
    }
    let quoted = quote(value);
    if value != "UTC" && !is_iana_shaped(value) {
        return Err(JsError::type_error(format!(
            "browser time zone must be canonical UTC or IANA Area/Location: {quoted}"
        )));
    }
    let Some((canonical, _)) = zones.resolve(value) else {
        return Err(
            JsError::type_error(format!("browser time zone is unsupported: {quoted}")).with_cause(
                JsError {
                    name: "RangeError".into(),
                    ..JsError::error(format!("Invalid time zone specified: {value}"))
                },
            ),
        );
    };
    if canonical != value {
        return Err(JsError::type_error(format!(
            "browser time zone must be canonical: {quoted}"
        )));
    }
    Ok(Some(canonical))
}

/// `deriveBrowserTimeZoneContext(messages)`.
pub fn derive_browser_zone(messages: &[Value], zones: &Zones) -> Result<BrowserZone, JsError> {
    let mut found: Vec<String> = Vec::new();
    for message in messages {
        if let Some(zone) = browser_time_zone(message, zones)?
            && !found.contains(&zone)
        {
            found.push(zone);
        }
    }
    found.sort_by(|a, b| cmp_utf16(a, b));
    Ok(match found.len() {
        0 => BrowserZone::Missing,
        1 => BrowserZone::Resolved(found.remove(0)),
        _ => BrowserZone::Mixed(found),
    })
}

/// `renderBrowserTimeZoneContext`.
pub fn browser_zone_line(zone: &BrowserZone) -> String {
    match zone {
        BrowserZone::Resolved(zone) => format!(
            "Browser time zone for this request: {zone}. Interpret otherwise-unqualified dates and times in this zone."
        ),
        BrowserZone::Mixed(zones) => format!(
            "Browser time zone for this request: mixed {}. Ask the user to clarify otherwise-unqualified dates and times.",
            stringify(&Value::from(zones.clone()))
        ),
        BrowserZone::Missing => "Browser time zone for this request: unavailable. Ask the user to clarify otherwise-unqualified dates and times.".into(),
    }
}

/// The three-line reading.
pub fn render_text(
    now: u64,
    turn: u64,
    step: u64,
    previous: Option<u64>,
    (zone, offset): (&str, i32),
    browser: &BrowserZone,
) -> String {
    let elapsed = previous.map_or("unavailable".into(), |previous| {
        format_duration(now as i64 - previous as i64)
    });
    let baseline = if step == 1 {
        "model-visible message"
    } else {
        "step context"
    };
    format!(
        "Time sampled while preparing turn {turn}, step {step}: {}\n{}\nElapsed since the preceding {baseline}: {elapsed}.",
        format_timestamp(now, offset, zone),
        browser_zone_line(browser)
    )
}

/// Step 1's baseline: the latest model-visible event in the log.
fn preceding_message_time(events: &[Event]) -> Option<u64> {
    events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.kind.as_str(),
                event_kind::USER_MESSAGE | event_kind::ASSISTANT_MESSAGE | event_kind::TOOL_RESULT
            )
        })
        .map(|e| e.time)
}

/// Later steps' baseline: the latest reading of this turn.
fn preceding_step_context_time(events: &[Event], turn: u64) -> Option<u64> {
    for event in events.iter().rev() {
        if event.kind == event_kind::TURN_START && event.data["turn"] == turn {
            return None;
        }
        if super::is_plugin_message(event, NAME) {
            return Some(event.time);
        }
    }
    None
}

/// The turn's entered `user/message`s, then the proposed messages.
fn request_messages(events: &[Event], turn: u64, proposed: &[Value]) -> Vec<Value> {
    let start = events
        .iter()
        .rposition(|e| e.kind == event_kind::TURN_START && e.data["turn"] == turn);
    let entered = start
        .map(|start| {
            events[start + 1..]
                .iter()
                .filter(|e| e.kind == event_kind::USER_MESSAGE)
                .map(|e| Value::clone(&e.data))
                .collect()
        })
        .unwrap_or_else(Vec::new);
    entered
        .into_iter()
        .chain(proposed.iter().cloned())
        .collect()
}

struct Config {
    interval: Option<u64>,
    fallback: (String, i32),
    zones: Zones,
    clock: Clock,
}

/// `apply(ctx, config)`: validate, then register the prepend listener.
pub fn install(agent: &Agent, spec: &TimeContextConfig, clock: Clock) -> Result<(), JsError> {
    let interval = refresh_interval(NAME, spec.refresh_interval_ms)?;
    let zones = Zones::new(&spec.zones)?;
    let process = spec.process_time_zone.as_deref().unwrap_or("UTC");
    let fallback = match &spec.time_zone {
        Some(zone) => zones.resolve(zone).ok_or_else(|| {
            JsError::error(format!("time-context: invalid IANA timeZone {zone:?}")).with_cause(
                JsError {
                    name: "RangeError".into(),
                    ..JsError::error(format!("Invalid time zone specified: {zone}"))
                },
            )
        })?,
        None => zones.resolve(process).ok_or_else(|| {
            JsError::error("time-context: failed to resolve the system time zone")
        })?,
    };
    let config = Rc::new(Config {
        interval,
        fallback,
        zones,
        clock,
    });
    on_pre_step(
        agent,
        PluginName::TimeContext,
        true,
        move |agent, payload, next| {
            let config = config.clone();
            async move {
                let decision = next.call().await?;
                let Decision::Enter(mut messages) = decision else {
                    return Ok(Decision::Reject);
                };
                if payload.signal.is_aborted() {
                    return Ok(Decision::Enter(messages));
                }
                let now = (config.clock)();
                let session = agent.session();
                let last = session
                    .with_events(|events| latest_plugin_message(events, NAME).map(|e| e.time));
                if within_interval(config.interval, last, now) {
                    return Ok(Decision::Enter(messages));
                }
                let (previous, request) = session.with_events(|events| {
                    let previous = if payload.step == 1 {
                        preceding_message_time(events)
                    } else {
                        preceding_step_context_time(events, payload.turn)
                    };
                    (previous, request_messages(events, payload.turn, &messages))
                });
                let browser = derive_browser_zone(&request, &config.zones)?;
                let zone = match &browser {
                    BrowserZone::Resolved(zone) => config
                        .zones
                        .resolve(zone)
                        .unwrap_or_else(|| config.fallback.clone()),
                    _ => config.fallback.clone(),
                };
                let text = render_text(
                    now,
                    payload.turn,
                    payload.step,
                    previous,
                    (&zone.0, zone.1),
                    &browser,
                );
                let ids = &agent.context().ids;
                messages.push(text_message(ids, &text, snapshot_source(NAME, &text)));
                Ok(Decision::Enter(messages))
            }
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn zones() -> Zones {
        let mut table = indexmap::IndexMap::new();
        table.insert("Asia/Shanghai".to_string(), "+08:00".to_string());
        table.insert("America/St_Johns".to_string(), "-03:30".to_string());
        Zones::new(&table).expect("valid")
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(999), "0s");
        assert_eq!(format_duration(3_723_000), "1h 2m 3s");
        assert_eq!(format_duration(86_400_000 + 5_000), "1d 5s");
        assert_eq!(format_duration(60_000), "1m 0s");
        assert_eq!(format_duration(-5_000), "0s");
    }

    #[test]
    fn timestamps_with_fixed_offsets() {
        // 2026-01-01T00:00:00Z.
        let start = 1_767_225_600_000;
        assert_eq!(
            format_timestamp(start, 0, "UTC"),
            "2026-01-01T00:00:00+00:00[UTC]"
        );
        assert_eq!(
            format_timestamp(start + 1_999, 480, "Asia/Shanghai"),
            "2026-01-01T08:00:01+08:00[Asia/Shanghai]"
        );
        assert_eq!(
            format_timestamp(start, -210, "America/St_Johns"),
            "2025-12-31T20:30:00-03:30[America/St_Johns]"
        );
        // Leap day.
        assert_eq!(
            format_timestamp(1_709_164_800_000, 0, "UTC"),
            "2024-02-29T00:00:00+00:00[UTC]"
        );
    }

    #[test]
    fn zone_resolution_and_validation() {
        let zones = zones();
        assert_eq!(zones.resolve("asia/shanghai").map(|z| z.1), Some(480));
        assert_eq!(zones.resolve("UTC"), Some(("UTC".into(), 0)));
        let user =
            |zone: &str| json!({"source": {"kind": "user", "rpcId": "r", "clientTimeZone": zone}});
        assert_eq!(
            derive_browser_zone(&[user("Asia/Shanghai"), user("Asia/Shanghai")], &zones),
            Ok(BrowserZone::Resolved("Asia/Shanghai".into()))
        );
        assert_eq!(
            derive_browser_zone(&[user("UTC"), user("Asia/Shanghai")], &zones),
            Ok(BrowserZone::Mixed(vec![
                "Asia/Shanghai".into(),
                "UTC".into()
            ]))
        );
        // No rpcId: not a browser message.
        let plain = json!({"source": {"kind": "user", "clientTimeZone": "UTC"}});
        assert_eq!(
            derive_browser_zone(&[plain], &zones),
            Ok(BrowserZone::Missing)
        );
        let error = derive_browser_zone(&[user("Shanghai")], &zones).expect_err("shape");
        assert_eq!(
            error.message,
            "browser time zone must be canonical UTC or IANA Area/Location: \"Shanghai\""
        );
        let error = derive_browser_zone(&[user("asia/shanghai")], &zones).expect_err("case");
        assert_eq!(
            error.message,
            "browser time zone must be canonical: \"asia/shanghai\""
        );
        let error = derive_browser_zone(&[user("Mars/Base")], &zones).expect_err("unknown");
        assert_eq!(
            error.message,
            "browser time zone is unsupported: \"Mars/Base\""
        );
    }

    #[test]
    fn policy_lines() {
        assert_eq!(
            browser_zone_line(&BrowserZone::Mixed(vec!["A/B".into(), "UTC".into()])),
            "Browser time zone for this request: mixed [\"A/B\",\"UTC\"]. Ask the user to clarify otherwise-unqualified dates and times."
        );
        let text = render_text(
            1_767_225_600_000 + 3_723_000,
            2,
            1,
            Some(1_767_225_600_000),
            ("UTC", 0),
            &BrowserZone::Missing,
        );
        assert_eq!(
            text,
            "Time sampled while preparing turn 2, step 1: 2026-01-01T01:02:03+00:00[UTC]\nBrowser time zone for this request: unavailable. Ask the user to clarify otherwise-unqualified dates and times.\nElapsed since the preceding model-visible message: 1h 2m 3s."
        );
    }
}
