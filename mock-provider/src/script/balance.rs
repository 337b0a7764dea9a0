//! What `GET /user/balance` reports, and the decimal amounts it is written in
//! (hundredths, no sign), checked and summed without floating point.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::default_true;

/// What `GET /user/balance` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Balance {
    /// `is_available` (default true).
    #[serde(default = "default_true")]
    pub is_available: bool,
    /// `currency` (default `CNY`).
    #[serde(default = "default_currency")]
    pub currency: String,
    /// `granted_balance`, as the decimal string the API sends (default `10.00`).
    #[serde(default = "default_granted")]
    pub granted_balance: String,
    /// `topped_up_balance` (default `100.00`); `total_balance` is the sum.
    #[serde(default = "default_topped_up")]
    pub topped_up_balance: String,
}

fn default_currency() -> String {
    "CNY".to_owned()
}

fn default_granted() -> String {
    "10.00".to_owned()
}

fn default_topped_up() -> String {
    "100.00".to_owned()
}

impl Default for Balance {
    fn default() -> Self {
        Self {
            is_available: true,
            currency: default_currency(),
            granted_balance: default_granted(),
            topped_up_balance: default_topped_up(),
        }
    }
}

/// An amount like `10.00` in hundredths (at most two decimals, no sign).
pub(super) fn parse_cents(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 2 {
        return None;
    }
    let fraction_cents: u64 = format!("{fraction:0<2}").parse().ok()?;
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(fraction_cents)
}

/// The sum of two amounts (see [`Balance`]), written with two decimals.
pub(crate) fn add_decimal_strings(left: &str, right: &str) -> Option<String> {
    let cents = parse_cents(left)?.checked_add(parse_cents(right)?)?;
    Some(format!("{}.{:02}", cents / 100, cents % 100))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;

    #[test]
    fn balances_add_up_in_hundredths() {
        assert_eq!(
            add_decimal_strings("10.00", "100.5").as_deref(),
            Some("110.50")
        );
        assert_eq!(add_decimal_strings("0.07", "3").as_deref(), Some("3.07"));
        for bad in ["", "-1", "1.234", "1,00", ".5"] {
            assert_eq!(parse_cents(bad), None, "{bad:?}");
        }
        let script = Script {
            balance: Some(Balance {
                granted_balance: "ten".into(),
                ..Balance::default()
            }),
            ..Script::default()
        };
        assert!(
            script
                .validate()
                .unwrap_err()
                .to_string()
                .contains("granted_balance")
        );
    }
}
