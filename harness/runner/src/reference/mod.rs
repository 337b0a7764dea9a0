//! The reference implementation of a case: the in-process twin of an
//! external adapter.
//!
//! [`run_case`] validates a case (as `dshc adapter` receives cases from
//! anywhere) and runs it at its level: the assembly level on a fresh
//! registry ([`assembly_level`]), the loop level around a real reference
//! agent in turmoil's simulated time and network ([`loop_level`]). Both go
//! through one command driver ([`driver`]) and the same scripted building
//! blocks ([`scripted`]).

pub(crate) mod assembly_level;
pub(crate) mod driver;
mod loop_level;
mod loop_listeners;
mod plugins;
pub mod scripted;

use dshc_scenario::compile::{CompileError, validate_case};
use dshc_scenario::protocol::{Case, CaseResult, Level};

pub use loop_level::{PROVIDER_HOST, PROVIDER_PORT, provider_requests, provider_simulation};

/// Run one case on the reference. A case that fails the checks a compiled
/// scenario passes is refused with the reason, never run.
pub fn run_case(case: &Case) -> Result<CaseResult, CompileError> {
    run_case_with_limits(case, crate::limits::LOOP_LIMITS)
}

/// [`run_case`] with other loop limits: how the limits themselves are
/// tested without running a thousand steps.
pub fn run_case_with_limits(
    case: &Case,
    limits: dshc_agent::LoopLimits,
) -> Result<CaseResult, CompileError> {
    validate_case(case)?;
    Ok(match case.level {
        Level::Assembly => assembly_level::run_assembly_case(case),
        Level::Loop => loop_level::run_loop_case(case, limits),
    })
}
