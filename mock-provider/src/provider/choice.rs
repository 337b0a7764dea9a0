//! The script cursor: which entry answers a request (the first unused or reusable
//! one whose `when` matches), using it up, and the non-retryable answer when no
//! entry is left for a request.

use super::{Handled, IncomingRequest, RequestOutcome, SCRIPT_EXHAUSTED_STATUS, State};
use crate::render::ResponsePlan;
use crate::script::{MatchInput, ScriptEntry};
use crate::wire::ErrorBody;

impl State {
    /// The index of the entry that answers `input`, if any.
    pub(super) fn choose_entry(&self, input: &MatchInput<'_>) -> Option<usize> {
        self.script
            .responses
            .iter()
            .zip(&self.used)
            .position(|(entry, used)| {
                (entry.reuse || !used) && entry.when.as_ref().is_none_or(|when| when.matches(input))
            })
    }

    /// Use entry `index` to answer a request (a reusable entry stays unused): a
    /// copy of it, and the 1-based number of the scripted response it gives.
    pub(super) fn take_entry(&mut self, index: usize) -> (ScriptEntry, u64) {
        let entry = self.script.responses[index].clone();
        if !entry.reuse {
            self.used[index] = true;
        }
        self.served += 1;
        (entry, self.served as u64)
    }

    /// The answer when no entry is left for a request: non-retryable, naming
    /// the script and the request. `input` borrows the request's body, so the
    /// caller puts the body into the answer.
    pub(super) fn exhausted(&self, request: &IncomingRequest, input: &MatchInput<'_>) -> Handled {
        let served = self.served;
        let number = self.requests_seen + 1;
        let unused = self
            .script
            .responses
            .iter()
            .zip(&self.used)
            .filter(|(entry, used)| entry.reuse || !**used)
            .count();
        let why = if unused == 0 {
            format!(
                "all {} entries are used ({served} responses served)",
                self.script.responses.len()
            )
        } else {
            let last = input
                .messages
                .last()
                .map(crate::script::message_text)
                .unwrap_or_default();
            let shown: String = last.chars().take(60).collect();
            format!(
                "none of the {unused} unused entries matches it (model {:?}, last message {shown:?})",
                input.model
            )
        };
        let message = format!(
            "dshc mock provider: {} has no answer for request {number} ({} {}): {why}",
            self.script_name, request.method, request.path
        );
        let mut plan = ResponsePlan::error(
            SCRIPT_EXHAUSTED_STATUS,
            &ErrorBody::new(message, "invalid_request_error", Some("script_exhausted")),
        );
        // The openai SDKs (and the clients built on them) honour this header.
        plan.headers
            .push(("x-should-retry".to_owned(), "false".to_owned()));
        Handled {
            plan,
            outcome: RequestOutcome::ScriptExhausted { served },
            body_json: None,
            prompt: None,
            usage: None,
        }
    }
}
