//! Implementations under test: the in-process reference and external
//! adapters speaking the protocol over a child process's stdin and stdout.

pub mod process;
pub mod serve;

use crate::protocol::{Case, CaseResult, Command, Implementation as ImplementationInfo, ReplyBody};
use crate::scenario::format::Level;
use process::{AdapterFault, AdapterProcess};

/// What running one case on an implementation produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Ran {
    /// The case ran; here is what was observed.
    Observed(CaseResult),
    /// The implementation declined the case.
    Skipped(String),
    /// The adapter failed on its own, or broke the protocol.
    Errored(String),
    /// The adapter process died.
    Crashed(String),
    /// No reply in time.
    TimedOut(u64),
}

/// Something that can run cases.
pub trait Implementation {
    /// Who it is, once known.
    fn info(&mut self) -> Option<ImplementationInfo>;
    /// Run one case.
    fn run(&mut self, case: &Case) -> Ran;
}

/// The Rust reference, in process.
#[derive(Default)]
pub struct Reference;

/// The reference's self-description.
pub fn reference_info() -> ImplementationInfo {
    ImplementationInfo {
        name: "dshc-reference".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        language: "rust".into(),
        homepage: None,
    }
}

/// The levels the reference implements.
pub fn reference_levels() -> Vec<Level> {
    vec![Level::Assembly]
}

impl Implementation for Reference {
    fn info(&mut self) -> Option<ImplementationInfo> {
        Some(reference_info())
    }

    fn run(&mut self, case: &Case) -> Ran {
        Ran::Observed(crate::scripted::run_case(case))
    }
}

/// An adapter process; restarted after any fault.
pub struct External {
    process: AdapterProcess,
}

impl External {
    /// Wrap an adapter process (started lazily).
    pub fn new(process: AdapterProcess) -> Self {
        External { process }
    }

    /// Stop the process.
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// How many processes were started.
    pub fn starts(&self) -> u32 {
        self.process.starts
    }
}

fn fault(fault: AdapterFault) -> Ran {
    match fault {
        AdapterFault::Crashed(context) => Ran::Crashed(context),
        AdapterFault::TimedOut(timeout_ms) => Ran::TimedOut(timeout_ms),
        AdapterFault::Protocol(context) => Ran::Errored(format!("protocol error: {context}")),
    }
}

impl Implementation for External {
    fn info(&mut self) -> Option<ImplementationInfo> {
        let _ = self.process.ensure_started();
        self.process.implementation.clone()
    }

    fn run(&mut self, case: &Case) -> Ran {
        if let Err(error) = self.process.ensure_started() {
            return fault(error);
        }
        if !self.process.capabilities.levels.contains(&case.level) {
            return Ran::Skipped(format!(
                "the adapter does not implement the {:?} level",
                case.level
            ));
        }
        match self.process.exchange(Command::Run { case: case.clone() }) {
            Ok(ReplyBody::Result(result)) => Ran::Observed(result),
            Ok(ReplyBody::Skipped { reason }) => Ran::Skipped(reason),
            Ok(ReplyBody::Errored { context }) => Ran::Errored(context),
            Ok(other) => {
                let _ = self.process.kill();
                Ran::Errored(format!("protocol error: `run` answered with {other:?}"))
            }
            Err(error) => fault(error),
        }
    }
}
