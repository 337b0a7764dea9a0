//! How a [`MockProvider`] is made: the builder's options, and the fresh state a
//! checked script starts from (nothing served, an empty cache and log).

use std::sync::{Arc, Mutex};

use super::{MockProvider, RequestObserver, ServerLimits, Shared, State};
use crate::catalog::effective_catalog;
use crate::prompt_cache::{ChatPromptIds, PromptCache};
use crate::request_rules::ServedCalls;
use crate::script::{Script, ScriptError};

/// Options of a [`MockProvider`] (see [`MockProvider::builder`]).
#[derive(Debug)]
pub struct MockProviderBuilder {
    script: Script,
    limits: ServerLimits,
    script_name: String,
    observer: Option<RequestObserver>,
}

impl MockProviderBuilder {
    /// The default options for `script` (see [`MockProvider::builder`]).
    pub(super) fn new(script: Script) -> Self {
        Self {
            script,
            limits: ServerLimits::default(),
            script_name: "the script".to_owned(),
            observer: None,
        }
    }

    /// The limits the server arms enforce.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How errors name the script (default "the script"), e.g. its file.
    pub fn script_name(mut self, name: impl Into<String>) -> Self {
        self.script_name = name.into();
        self
    }

    /// Call `observer` with every request as it is logged.
    pub fn observer(mut self, observer: RequestObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Check the script and start serving it.
    pub fn build(self) -> Result<MockProvider, ScriptError> {
        let Self {
            script,
            limits,
            script_name,
            observer,
        } = self;
        script.validate()?;
        Ok(MockProvider {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    catalog: effective_catalog(&script.models),
                    used: vec![false; script.responses.len()],
                    script,
                    script_name,
                    served: 0,
                    served_calls: ServedCalls::new(),
                    observer,
                    cache: PromptCache::with_max_bytes(limits.max_cached_prompt_bytes),
                    chat_prompt_ids: ChatPromptIds::default(),
                    log: std::collections::VecDeque::new(),
                    requests_seen: 0,
                    logged_body_bytes: 0,
                    max_logged_requests: limits.max_logged_requests.max(1),
                    max_logged_body_bytes: limits.max_logged_body_bytes,
                    connection_errors: Vec::new(),
                }),
                limits,
            }),
        })
    }
}
