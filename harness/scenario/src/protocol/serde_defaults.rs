//! Serde `default` and `skip_serializing_if` helpers the protocol types
//! share, so a default such as "registered unless said otherwise" is written
//! once. (Serde takes these as function paths, not values.)

/// `#[serde(default = "yes")]`: a flag that is on unless the file says otherwise.
pub(super) fn yes() -> bool {
    true
}

/// `skip_serializing_if` for a flag whose default is `true`.
pub(super) fn is_true(value: &bool) -> bool {
    *value
}

/// `skip_serializing_if` for a count or delay whose default is 0.
pub(super) fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// `skip_serializing_if` for an index whose default is 0.
pub(super) fn is_zero_usize(value: &usize) -> bool {
    *value == 0
}
