//! What became of one case on one implementation: the closed set of
//! outcomes (Bowtie's), shared by the adapter layer, which may not get to
//! run a case, and the runner, which compares what did run.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::compare::Mismatch;

/// The result of running one case against one implementation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Every expectation held.
    Pass,
    /// Some expectations did not hold.
    Fail {
        /// What differed.
        mismatches: Vec<Mismatch>,
    },
    /// The case produced no observation.
    #[serde(untagged)]
    NotRun(NotRun),
}

/// Why a case produced no observation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum NotRun {
    /// The implementation declined the case.
    Skipped {
        /// Why.
        reason: String,
    },
    /// The adapter failed on its own or broke the protocol.
    Errored {
        /// What happened.
        context: String,
    },
    /// The adapter process died.
    Crashed {
        /// What happened.
        context: String,
    },
    /// No reply in time.
    TimedOut {
        /// The limit that passed.
        timeout_ms: u64,
    },
}

/// The kind of an outcome, without its details: what a report's `outcome`
/// tag says, read back as a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Every expectation held.
    Pass,
    /// Some expectation did not hold.
    Fail,
    /// The implementation declined the case.
    Skipped,
    /// The adapter failed or broke the protocol.
    Errored,
    /// The adapter process died.
    Crashed,
    /// No reply in time.
    TimedOut,
}

impl OutcomeKind {
    /// The serialized `outcome` tag.
    pub fn tag(self) -> &'static str {
        match self {
            OutcomeKind::Pass => "pass",
            OutcomeKind::Fail => "fail",
            OutcomeKind::Skipped => "skipped",
            OutcomeKind::Errored => "errored",
            OutcomeKind::Crashed => "crashed",
            OutcomeKind::TimedOut => "timed_out",
        }
    }
}

impl NotRun {
    /// Its kind.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            NotRun::Skipped { .. } => OutcomeKind::Skipped,
            NotRun::Errored { .. } => OutcomeKind::Errored,
            NotRun::Crashed { .. } => OutcomeKind::Crashed,
            NotRun::TimedOut { .. } => OutcomeKind::TimedOut,
        }
    }

    /// The serialized `outcome` tag.
    pub fn tag(&self) -> &'static str {
        self.kind().tag()
    }
}

impl fmt::Display for NotRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRun::Skipped { reason } => write!(f, "skipped: {reason}"),
            NotRun::Errored { context } => write!(f, "errored: {context}"),
            NotRun::Crashed { context } => write!(f, "crashed: {context}"),
            NotRun::TimedOut { timeout_ms } => write!(f, "timed out after {timeout_ms} ms"),
        }
    }
}

impl Outcome {
    /// Its kind.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Pass => OutcomeKind::Pass,
            Outcome::Fail { .. } => OutcomeKind::Fail,
            Outcome::NotRun(not_run) => not_run.kind(),
        }
    }

    /// The serialized `outcome` tag (`pass`, `fail`, `skipped`, `errored`,
    /// `crashed`, `timed_out`).
    pub fn tag(&self) -> &'static str {
        self.kind().tag()
    }

    /// A short label for people (`timed out` rather than `timed_out`).
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::NotRun(NotRun::TimedOut { .. }) => "timed out",
            other => other.tag(),
        }
    }
}
