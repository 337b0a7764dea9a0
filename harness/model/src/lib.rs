//! The reference model: the prompt registry, `assemble()`, strict rendering
//! and canonical tool order, restated from upstream at 0.1.0-rc.8.
//!
//! **Architecture invariant:** the model does no I/O and never reads a clock.
//! Everything it needs (scopes, providers, listeners, signals) is passed in,
//! and its collections iterate in insertion or key order, never hash order.

pub mod assembled;
pub mod assembly;
pub mod header;
pub mod inbox;
pub mod js;
pub mod llm;
pub mod registry;
pub mod render;
pub mod runtime_context;
pub mod scope;
pub mod session;
pub mod signal;
pub mod table;
pub mod tool_order;
pub mod waterfall;

pub use assembled::{
    AgentFacts, AssembleContext, AssembleEvent, AssembleListener, Assembly, AssemblyRef, Next,
    PromptEntry, ProvidedSchema, ToolProviderResult, ToolSchema, Variables,
};
pub use js::JsError;
pub use registry::{Config, Disposer, ListenerOptions, NamedText, Registry, Text};
pub use scope::ScopeKey;
pub use signal::AbortSignal;
