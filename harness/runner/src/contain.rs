//! A panic in one case is that case's `crashed` outcome, never the end of a
//! run.
//!
//! A panic is a bug, in the reference, the judge or the harness's own half of
//! an adapter exchange (the bridge's provider). One case that hits one must
//! not take the other cases, the summary and the reports down with it:
//! [`contained`] runs a piece of work and turns its panic into an error
//! naming the panic's message. The panic hook still prints where it
//! happened, to stderr.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Run `work`; a panic becomes `Err` with the panic's message.
///
/// What `work` touched is not used again after a panic: the reference builds
/// its registry and simulation per case, and the callers drop or restart
/// whatever else it held ([`crate::adapter::Implementation::recover_from_panic`]),
/// which is why asserting unwind safety is sound here.
pub fn contained<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|message| (*message).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_a_value_passes_through() {
        assert_eq!(contained(|| 7), Ok(7));
        let literal: Result<(), String> = contained(|| panic!("plain"));
        assert_eq!(literal, Err("plain".to_string()));
        let code = 3;
        let formatted: Result<(), String> = contained(|| panic!("code {code}"));
        assert_eq!(formatted, Err("code 3".to_string()));
        let opaque: Result<(), String> = contained(|| std::panic::panic_any(42u8));
        assert_eq!(opaque, Err("a panic without a message".to_string()));
    }
}
