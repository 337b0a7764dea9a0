//! The reference implementation of a case: the in-process twin of an
//! external adapter, and the same implementation speaking the protocol
//! (`dshc adapter`, [`serve`], loop cases on the harness's clock through
//! `virtual_time`) and timed ([`bench`]).
//!
//! [`run_case`] validates a case (as `dshc adapter` receives cases from
//! anywhere) and runs it at its level: the assembly level on a fresh
//! registry ([`assembly_level`]), the loop level around a real reference
//! agent in turmoil's simulated time and network ([`loop_level`]). Both go
//! through one command driver ([`driver`]) and the same scripted building
//! blocks ([`scripted`]).

mod assembly_level;
pub mod bench;
mod channel;
mod driver;
mod loop_level;
mod loop_listeners;
mod plugins;
pub mod scripted;
pub mod serve;
mod virtual_time;

use dshc_scenario::compile::{CompileError, validate_case};
use dshc_scenario::protocol::{Case, CaseResult, ImplementationInfo, Level};

pub use dshc_agent::LoopLimits;
pub use loop_level::{PROVIDER_HOST, PROVIDER_PORT, provider_requests, provider_simulation};

/// Run one case on the reference. A case that fails the checks a compiled
/// scenario passes is refused with the reason, never run.
pub fn run_case(case: &Case) -> Result<CaseResult, CompileError> {
    run_case_with_limits(case, crate::LOOP_LIMITS)
}

/// [`run_case`] for `dshc adapter` under `virtual_time/1`: a loop case
/// runs as in process, except that its provider requests go to the
/// harness over `link` and their answers are replayed on the simulated
/// network ([`virtual_time`]).
pub(crate) fn run_case_on_harness_clock(
    case: &Case,
    link: &virtual_time::HarnessLink,
) -> Result<CaseResult, CompileError> {
    validate_case(case)?;
    Ok(match case.level {
        Level::Assembly => assembly_level::run_assembly_case(case),
        Level::Loop => virtual_time::run_loop_case(case, crate::LOOP_LIMITS, link),
    })
}

/// [`run_case`] with other loop limits: how the limits themselves are
/// tested without running a thousand steps.
pub fn run_case_with_limits(
    case: &Case,
    limits: dshc_agent::LoopLimits,
) -> Result<CaseResult, CompileError> {
    run_case_ticking(case, limits, Ticks::CaseGrid)
}

/// How a loop case's simulation steps time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ticks {
    /// On the coarsest grid that divides every duration the case states,
    /// and every millisecond if a timer falls off it (`loop_level::grid`):
    /// the same bytes as [`Ticks::EveryMs`], for fewer steps.
    CaseGrid,
    /// [`Ticks::CaseGrid`] with the grid already taken from this case by
    /// [`Ticks::of_case`]: a case run more than once walks it once.
    Grid(std::time::Duration),
    /// One millisecond a step: what the grid is checked against.
    EveryMs,
}

impl Ticks {
    /// [`Ticks::CaseGrid`] for `case`, its grid taken now.
    pub fn of_case(case: &Case) -> Ticks {
        Ticks::Grid(loop_level::grid::tick_of(case))
    }
}

/// [`run_case_with_limits`], its loop simulation stepping as `ticks` says.
pub fn run_case_ticking(
    case: &Case,
    limits: dshc_agent::LoopLimits,
    ticks: Ticks,
) -> Result<CaseResult, CompileError> {
    validate_case(case)?;
    Ok(run_compiled_case(case, limits, ticks))
}

/// [`run_case_ticking`] for a case `dshc_scenario::compile::compile` has
/// just returned, which made the checks [`run_case`] would make again: how
/// `dshc sim` runs each generated session twice on one check.
pub fn run_compiled_case(case: &Case, limits: dshc_agent::LoopLimits, ticks: Ticks) -> CaseResult {
    match case.level {
        Level::Assembly => assembly_level::run_assembly_case(case),
        Level::Loop => loop_level::run_loop_case(case, limits, ticks),
    }
}

/// The loop's bounds on one run: provider attempts per step (retries),
/// steps in all (tool rounds), turns in all (follow-ups) and the bytes of
/// all its requests (each carries the history, so their sum grows
/// quadratically with the steps; 16 MiB is a few hundred rounds of short
/// messages, a few seconds of work). Reaching one fails the turn and ends
/// the run: no agent starts another turn
/// (`limit reached: max_attempts_per_step = 100`).
pub const LOOP_LIMITS: dshc_agent::LoopLimits = dshc_agent::LoopLimits {
    max_attempts_per_step: 100,
    max_steps: 1_000,
    max_turns: 1_000,
    max_request_bytes: 16 << 20,
};

/// The reference's self-description.
pub fn reference_info() -> ImplementationInfo {
    ImplementationInfo {
        name: "dshc-reference".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        language: "rust".into(),
        homepage: None,
    }
}

/// The levels the reference implements: both, in process and over the
/// protocol (`dshc adapter` runs loop cases on the harness's clock).
pub fn reference_levels() -> Vec<Level> {
    vec![Level::Assembly, Level::Loop]
}
