//! The agent loop around the assembly (spec 05–08): turns, proposed steps,
//! the inbox claim, one assembly per proposed step, runtime-context
//! projection, per-step render, per-attempt request build, header logging,
//! streaming, retries, tools, failures and cancellation.
//!
//! The driver is `async` and single-threaded. Its only waits are real ones
//! (a listener that blocks, the provider's stream), on `tokio::time`, which
//! is virtual under turmoil; ids come from a counter. So a scenario and a
//! seed determine every byte of the session log.
//!
//! The loop is split by role: `context` (what every agent of a run shares,
//! [`LoopContext`]), `agent` (the handle and its state), `driver` (the phase
//! machine: turns, steps, attempts), `request` (`buildRequest` and header
//! logging), `stream` (one attempt's chunks) and `tools`; the last four each
//! add their part of `impl Agent`. Their public items are re-exported here.

mod agent;
mod context;
mod driver;
pub mod listeners;
pub mod plugin_config;
mod plugin_world;
pub mod plugins;
pub mod posix_path;
mod request;
pub mod scripted_route;
mod stream;
mod tools;
pub mod transport;

pub use agent::{
    Agent, AgentOptions, AgentStatus, LaidOutSection, LlmStreamAnswer, LlmStreamFn, LoopContext,
    PromptLayout, RouteActor, ToolCall, ToolOutcome, ToolRunner, WeakAgent,
};
pub use context::{AdapterRoute, Ids, LlmCall, LoopLimits, WireRoute, logger_warn, user_message};
