//! `Date.parse`, for the dates HTTP carries (a `Retry-After` that is not a
//! number of seconds): what V8 reads in the ECMAScript date-time format and
//! in the legacy forms HTTP uses (RFC 7231's IMF-fixdate, RFC 850, asctime),
//! with the time zone taken as UTC where the text names none (as V8 does
//! with `TZ=UTC`, which the harness and CI run with). V8's legacy parser
//! reads still other texts (`"1.5"` is 5 January 2001 to it, `GMT+0100` an
//! offset, `10:60` ten o'clock, `2030 01-Jan-27` a day of 2030); this one
//! gives `NaN` for those, as for every text it does not read.

use super::is_js_space;

/// `Date.parse(text)`: milliseconds since the epoch, or `NaN`.
pub fn date_parse(text: &str) -> f64 {
    let text = text.trim_matches(is_js_space);
    iso_date_time(text)
        .or_else(|| legacy_date(text))
        .unwrap_or(f64::NAN)
}

/// Milliseconds since the epoch of a UTC date and time (ECMAScript's
/// MakeDay and MakeTime, so a day past its month's end runs into the next).
fn utc_ms(
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    ms: u32,
) -> Option<f64> {
    if !(1..=12).contains(&month) || day > 31 || hour > 24 || minute > 59 || second > 59 {
        return None;
    }
    if hour == 24 && (minute, second, ms) != (0, 0, 0) {
        return None;
    }
    let days = days_from_civil(year, month) + i64::from(day) - 1;
    let ms = days as f64 * 86_400_000.0
        + f64::from(hour) * 3_600_000.0
        + f64::from(minute) * 60_000.0
        + f64::from(second) * 1000.0
        + f64::from(ms);
    // TimeClip: beyond 8.64e15 ms a date is invalid.
    (ms.abs() <= 8.64e15).then_some(ms)
}

/// Days from 1970-01-01 to the first of `month` of `year` (proleptic
/// Gregorian).
fn days_from_civil(year: i64, month: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A number written in ASCII digits alone: no sign, which `str::parse`
/// would take.
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Consume exactly `n` ASCII digits from the front of `text`.
fn digits(text: &mut &str, n: usize) -> Option<u32> {
    let value = number(text.get(..n)?)?;
    *text = &text[n..];
    Some(value)
}

/// Consume `prefix` from the front of `text`.
fn eat(text: &mut &str, prefix: char) -> bool {
    match text.strip_prefix(prefix) {
        Some(rest) => {
            *text = rest;
            true
        }
        None => false,
    }
}

/// The ECMAScript date-time string format: `YYYY[-MM[-DD]]` (or a signed
/// six-digit year), then optionally `THH:mm[:ss[.sss]]` and `Z` or
/// `±HH:mm` (V8 takes `t` and `z` too). A date alone is UTC; a time
/// without an offset is local time, UTC here.
fn iso_date_time(text: &str) -> Option<f64> {
    let mut rest = text;
    let year = match rest.chars().next()? {
        sign @ ('+' | '-') => {
            rest = &rest[1..];
            let magnitude = i64::from(digits(&mut rest, 6)?);
            if sign == '-' && magnitude == 0 {
                return None;
            }
            if sign == '-' { -magnitude } else { magnitude }
        }
        _ => i64::from(digits(&mut rest, 4)?),
    };
    let month = if eat(&mut rest, '-') {
        digits(&mut rest, 2)?
    } else {
        1
    };
    // A dash here follows a month: without one, the month's own dash test
    // would have taken it.
    let day = if eat(&mut rest, '-') {
        digits(&mut rest, 2)?
    } else {
        1
    };
    if day == 0 {
        return None;
    }
    let (mut hour, mut minute, mut second, mut ms, mut offset_minutes) = (0, 0, 0, 0, 0i64);
    if eat(&mut rest, 'T') || eat(&mut rest, 't') {
        hour = digits(&mut rest, 2)?;
        if !eat(&mut rest, ':') {
            return None;
        }
        minute = digits(&mut rest, 2)?;
        if eat(&mut rest, ':') {
            second = digits(&mut rest, 2)?;
            if eat(&mut rest, '.') {
                let fraction: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if fraction.is_empty() {
                    return None;
                }
                rest = &rest[fraction.len()..];
                ms = fraction
                    .chars()
                    .chain("00".chars())
                    .take(3)
                    .collect::<String>()
                    .parse()
                    .ok()?;
            }
        }
        if eat(&mut rest, 'Z') || eat(&mut rest, 'z') {
        } else if let Some(sign @ ('+' | '-')) = rest.chars().next() {
            rest = &rest[1..];
            let hours = i64::from(digits(&mut rest, 2)?);
            if !eat(&mut rest, ':') {
                return None;
            }
            let minutes = i64::from(digits(&mut rest, 2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            offset_minutes = (hours * 60 + minutes) * if sign == '-' { -1 } else { 1 };
        }
    }
    if !rest.is_empty() {
        return None;
    }
    Some(utc_ms(year, month, day, hour, minute, second, ms)? - offset_minutes as f64 * 60_000.0)
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The legacy forms HTTP dates take, whatever their order: a weekday
/// (ignored), a day (the first when none is given), a month name, a year
/// (two digits: 1950–2049), a time
/// `HH:mm[:ss]`, and a zone (`GMT`, `UTC`, `UT`, `Z` or `±hhmm`; none is
/// UTC), separated by spaces, commas or dashes (`01-Jan-26`).
fn legacy_date(text: &str) -> Option<f64> {
    let (mut day, mut month, mut year) = (None, None, None);
    let (mut time, mut offset_minutes) = (None, 0i64);
    let tokens = text
        .split(|c: char| c == ',' || is_js_space(c))
        .filter(|token| !token.is_empty());
    for token in tokens {
        let lower = token.to_ascii_lowercase();
        if let Some(sign @ ('+' | '-')) = token.chars().next() {
            let digits_only = &token[1..];
            if digits_only.len() != 4 || !digits_only.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let hours: i64 = digits_only[..2].parse().ok()?;
            let minutes: i64 = digits_only[2..].parse().ok()?;
            offset_minutes = (hours * 60 + minutes) * if sign == '-' { -1 } else { 1 };
        } else if token.contains(':') {
            // Each part is a number of any length (`10:0020` is 10:20).
            let parts: Vec<&str> = token.split(':').collect();
            let (hour, minute, second) = match parts[..] {
                [hour, minute] => (number(hour)?, number(minute)?, 0),
                [hour, minute, second] => (number(hour)?, number(minute)?, number(second)?),
                _ => return None,
            };
            if time.replace((hour, minute, second)).is_some() {
                return None;
            }
        } else if token.contains('-') {
            // `01-Jan-26`: a day, a month and a year joined by dashes.
            let mut parts = token.split('-');
            let (Some(d), Some(m), Some(y), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            // A month named before is replaced (`Jan 01-Feb-27` is in
            // February); a day or year before is refused.
            if day.is_some() || year.is_some() {
                return None;
            }
            day = Some(number(d)?);
            month = Some(month_of(&m.to_ascii_lowercase())?);
            year = Some(year_of(y)?);
        } else if token.bytes().all(|b| b.is_ascii_digit()) {
            if token.len() <= 2 && day.is_none() {
                day = Some(token.parse().ok()?);
            } else if year.is_none() {
                year = Some(year_of(token)?);
            } else {
                return None;
            }
        } else if let Some(m) = month_of(&lower) {
            if month.replace(m).is_some() {
                return None;
            }
        } else if ["gmt", "utc", "ut", "z"].contains(&lower.as_str()) {
            offset_minutes = 0;
        } else if !WEEKDAYS.iter().any(|w| lower.starts_with(w)) {
            return None;
        }
    }
    let (hour, minute, second) = time.unwrap_or((0, 0, 0));
    // A month and year without a day (`Jan 2026`) are its first day.
    let day = day.unwrap_or(1);
    if day == 0 {
        return None;
    }
    Some(utc_ms(year?, month?, day, hour, minute, second, 0)? - offset_minutes as f64 * 60_000.0)
}

/// A month named by its first three letters or more (`jan`, `january`).
fn month_of(word: &str) -> Option<u32> {
    let index = MONTHS
        .iter()
        .position(|m| word.len() >= 3 && word.starts_with(m))?;
    Some(index as u32 + 1)
}

/// A year: four digits as written, two digits in 1950–2049.
fn year_of(text: &str) -> Option<i64> {
    let year: i64 = number(text)?;
    Some(match text.len() {
        1 | 2 if year < 50 => 2000 + year,
        1 | 2 => 1900 + year,
        _ => year,
    })
}
