//! `mock-provider`: a scripted, deterministic, DeepSeek-compatible chat-completions
//! provider, so dshc can drive the prompt-assembly loop's provider traffic (streams,
//! usage, prefix-cache accounting, transport faults) without a network or credentials.
//!
//! Layers, from pure to I/O:
//!
//! * [`tokenizer`] — the deterministic stand-in tokenizer;
//! * [`prompt_cache`] — canonical prompt + computed prefix-cache hits (64-token units);
//! * [`script`] — the serde/JSON-Schema script format, one [`ScriptEntry`] per request;
//! * [`render`] — pure rendering of an entry into a [`ResponsePlan`] (exact SSE bytes,
//!   pauses, faults);
//! * [`sse`] — a spec-strict SSE splitter for tests;
//! * [`provider`] — [`MockProvider`]: routing, validation, script cursor, cache, request log;
//! * `server` (feature `server`, on by default) — hyper HTTP/1.1 over any
//!   `AsyncRead + AsyncWrite`, with `serve_tokio` and (feature `turmoil`)
//!   `serve_turmoil` accept loops;
//! * `sim_time` (feature `server`) — every timer of a simulation, registered, so
//!   `sim_time::run` (feature `turmoil`) skips idle time.
//!
//! Nothing reads the wall clock or an unseeded random source; `created` and ids come
//! from the script and the request order, and all waits are
//! tokio timers, armed through `sim_time`.
//!
//! ```
//! use mock_provider::{IncomingRequest, MockProvider, Script, ScriptEntry, sse::data_payloads};
//!
//! let provider = MockProvider::new(Script::new(vec![ScriptEntry::content(["Hel", "lo"])])).unwrap();
//! let plan = provider.handle(IncomingRequest::post_json(
//!     "/chat/completions",
//!     &serde_json::json!({"model": "deepseek-v4-flash", "stream": true,
//!                         "messages": [{"role": "user", "content": "hi"}]}),
//! ));
//! let payloads = data_payloads(&plan.body_bytes());
//! assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
//! assert_eq!(provider.requests().len(), 1);
//! ```

pub mod catalog;
pub mod prompt_cache;
pub mod provider;
pub mod render;
pub mod request_rules;
pub mod script;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod sim_time;
pub mod sse;
pub mod tokenizer;
pub mod wire;

pub use catalog::{CatalogModel, DEFAULT_CONTEXT_WINDOW_TOKENS};
pub use prompt_cache::{
    CACHE_UNIT_TOKENS, PromptAccounting, PromptCache, PromptElement, PromptElementKind,
    canonical_fim_prompt, canonical_prompt, prompt_elements,
};
pub use provider::{
    Checkpoint, IncomingRequest, LoggedRequest, MockProvider, MockProviderBuilder, RequestObserver,
    RequestOutcome, Route, SCRIPT_EXHAUSTED_STATUS, ServerLimits, anthropic_chat_body,
};
pub use render::{
    BodyAction, RenderContext, ResponsePlan, WireFormat, render_response, stream_events,
};
pub use request_rules::RuleViolation;
pub use script::{
    Balance, CompletionCounts, Dialect, Endpoint, FaultKind, Fragments, MatchInput, RequestMatch,
    Script, ScriptEntry, ScriptError, ScriptToolCall, UsagePlacement, Validation,
};
#[cfg(feature = "turmoil")]
pub use server::serve_turmoil;
#[cfg(feature = "server")]
pub use server::{serve_connection, serve_tokio};
pub use wire::{CompletionTokensDetails, ErrorBody, ErrorDetail, PromptTokensDetails, Usage};
