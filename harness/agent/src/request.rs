//! `buildRequest` (spec 07), once per attempt: the seed config, the
//! `agent/request` waterfall, `prepareCall` against the route, the
//! canonical header, the request itself, and the `request/header` and
//! `request/context` events the attempt logs before it streams.
//!
//! It exists because header logging is where resume and replay are decided
//! (initial, resume, change): each rule of 07 §1–2 is one helper here, and
//! the ones that are plain functions of their inputs are tested beside them.

use std::rc::Rc;

use serde_json::{Map, Value, json};

use dshc_model::header::{canonical_header_owned, header_equals, request_proposal};
use dshc_model::js::object;
use dshc_model::llm::prepare_call;
use dshc_model::session::SurfaceMeta;
use dshc_model::{AbortSignal, JsError};

use crate::agent::Agent;
use crate::context::{AdapterRoute, throw_if_aborted};
use crate::listeners::{LocalFuture, RequestPayload};
use crate::tools::ToolSchemas;
use dshc_model::session::event_kind;

/// The proposal as `prepareCall` resolved it (07 H5–H6).
#[cfg_attr(test, derive(Clone))]
struct ResolvedCall {
    /// The resolved config (the proposal itself when no route serves it).
    config: Value,
    /// Which fields the adapter defaulted (none without a route).
    adapter_defaults: Option<Value>,
    /// The model's context window, if known.
    context_window: Option<u64>,
}

/// The seed config (07 H2). Before this agent logged a header: the route
/// from the options, `reasoningEffort` carried over from a persisted header
/// of the same route that did not default it, and the explicit output cap.
/// After: the latest header's proposal (`requestProposal`).
fn seed_config(
    header_logged: bool,
    persisted: Option<&Value>,
    (provider, model): (&str, &str),
    max_tokens: Option<u64>,
) -> Value {
    if header_logged {
        return request_proposal(persisted.unwrap_or(&Value::Null));
    }
    let mut seed = Map::new();
    seed.insert("provider".into(), json!(provider));
    seed.insert("model".into(), json!(model));
    if let Some(header) = persisted {
        let config = &header["config"];
        let same_route = config["provider"] == json!(provider) && config["model"] == json!(model);
        let defaulted = header["adapterDefaults"]["reasoningEffort"] == json!(true);
        if same_route
            && !defaulted
            && let Some(effort) = config.get("reasoningEffort")
        {
            seed.insert("reasoningEffort".into(), effort.clone());
        }
    }
    if let Some(max_tokens) = max_tokens {
        seed.insert("maxTokens".into(), json!(max_tokens));
    }
    Value::Object(seed)
}

/// Whether a proposal names both its provider and its model (07 H4).
fn names_route(proposed: &Value) -> bool {
    let filled = |key: &str| {
        proposed
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    filled("provider") && filled("model")
}

/// `canonicalHeader` (07 H7): the config, the adapter defaults, the step's
/// system text (absent when empty) and tools (absent when none).
fn canonical_header(resolved: ResolvedCall, system: &str, tools: &[Value]) -> Value {
    let mut header = Map::new();
    header.insert("config".into(), resolved.config);
    if let Some(defaults) = resolved.adapter_defaults {
        header.insert("adapterDefaults".into(), defaults);
    }
    if !system.is_empty() {
        header.insert("system".into(), json!(system));
    }
    if !tools.is_empty() {
        header.insert("tools".into(), Value::Array(tools.to_vec()));
    }
    canonical_header_owned(header)
}

/// The request (07 H11): the canonical header's config, system and tools
/// with the attempt's messages and the session id. The header's parts move
/// into it.
fn request_of(header: Value, messages: Vec<Value>, session_id: String) -> Value {
    let Value::Object(mut header) = header else {
        unreachable!("a canonical header is an object")
    };
    let mut request = match header.remove("config") {
        Some(Value::Object(config)) => config,
        _ => Map::new(),
    };
    request.insert("messages".into(), Value::Array(messages));
    if let Some(system) = header.remove("system") {
        request.insert("system".into(), system);
    }
    if let Some(tools) = header.remove("tools") {
        request.insert("tools".into(), tools);
    }
    request.insert("sessionId".into(), json!(session_id));
    Value::Object(request)
}

/// Why this attempt logs a `request/header`, if it does (07 H9): this agent's
/// first header always (`initial` on a fresh log, `resume` over a persisted
/// one), later ones only on a `change`.
fn header_reason(header_logged: bool, has_baseline: bool, changed: bool) -> Option<&'static str> {
    if !header_logged {
        Some(if has_baseline { "resume" } else { "initial" })
    } else if changed {
        Some("change")
    } else {
        None
    }
}

/// `request/context {provider, model, contextWindow?}` of a resolved call
/// (07 H10).
fn request_context(resolved: &ResolvedCall) -> Value {
    let mut context = Map::new();
    context.insert("provider".into(), resolved.config["provider"].clone());
    context.insert("model".into(), resolved.config["model"].clone());
    if let Some(window) = resolved.context_window {
        context.insert("contextWindow".into(), json!(window));
    }
    Value::Object(context)
}

/// Whether `next` must be logged over the latest `request/context`: any of
/// its three fields differs (07 H10).
fn context_differs(previous: Option<&Value>, next: &Value) -> bool {
    previous.is_none_or(|p| {
        ["provider", "model", "contextWindow"]
            .iter()
            .any(|key| p.get(key) != next.get(key))
    })
}

impl Agent {
    /// `buildRequest` (07 §1), once per attempt.
    pub(crate) async fn build_request(
        &self,
        turn: u64,
        step: u64,
        tools: &ToolSchemas,
        system: &str,
        messages: Vec<Value>,
        signal: &AbortSignal,
    ) -> Result<(Value, Option<AdapterRoute>), JsError> {
        let proposed = self.propose_config(turn, step, signal).await?;
        let (route, resolved) = self.resolve_call(&proposed, signal).await?;
        throw_if_aborted(signal)?;
        let context = request_context(&resolved);
        let header = canonical_header(resolved, system, &tools.schemas);
        self.log_request_header(&header, tools.loggable)?;
        self.log_request_context(context)?;
        // The request is the canonical header's config, system and tools
        // with the messages.
        let request = request_of(header, messages, self.0.session.id());
        throw_if_aborted(signal)?;
        Ok((request, route))
    }

    /// The seed through the `agent/request` waterfall (07 H2–H4); the
    /// proposal must name a provider and a model.
    async fn propose_config(
        &self,
        turn: u64,
        step: u64,
        signal: &AbortSignal,
    ) -> Result<Value, JsError> {
        let options = &self.0.options;
        let seed = seed_config(
            self.0.header_logged.get(),
            self.0.session.request_header().as_deref(),
            (
                options.provider.as_deref().unwrap_or_default(),
                options.model.as_deref().unwrap_or_default(),
            ),
            self.0.max_tokens,
        );
        let default: Rc<dyn Fn() -> LocalFuture<Result<Value, JsError>>> = Rc::new(move || {
            let seed = seed.clone();
            Box::pin(async move { Ok(seed) })
        });
        let payload = RequestPayload {
            turn,
            step,
            signal: signal.clone(),
        };
        let proposed = self.0.listeners.request.dispatch(payload, default).await?;
        throw_if_aborted(signal)?;
        if !names_route(&proposed) {
            return Err(JsError::error(format!(
                "agent \"{}\" has no provider/model: set AgentOptions.provider and AgentOptions.model or supply both via the agent/request waterfall",
                self.0.id
            )));
        }
        Ok(proposed)
    }

    /// `prepareCall` (07 H5–H6): the proposal's route and the model info it
    /// gives; with no route registered the proposal stands as the config.
    async fn resolve_call(
        &self,
        proposed: &Value,
        signal: &AbortSignal,
    ) -> Result<(Option<AdapterRoute>, ResolvedCall), JsError> {
        let provider = proposed["provider"].as_str().unwrap_or_default();
        let route = self.0.context.adapters.borrow().get(provider).cloned();
        let model = proposed["model"].as_str().unwrap_or_default();
        let info = match &route {
            None => None,
            Some(AdapterRoute::Wire(wire)) => Some(
                wire.models
                    .get(model)
                    .unwrap_or(&wire.default_model)
                    .clone(),
            ),
            Some(AdapterRoute::Scripted(scripted)) => Some(scripted.resolve(model, signal).await?),
        };
        let resolved = match &info {
            None => ResolvedCall {
                config: proposed.clone(),
                adapter_defaults: None,
                context_window: None,
            },
            Some(info) => {
                let prepared = prepare_call(proposed, info)?;
                ResolvedCall {
                    config: prepared.config,
                    adapter_defaults: Some(prepared.adapter_defaults),
                    context_window: prepared.context_window,
                }
            }
        };
        Ok((route, resolved))
    }

    /// Log `header` as `request/header` when 07 H9 says so; a header that
    /// must be logged but carries non-JSON tool schemas fails the attempt.
    fn log_request_header(&self, header: &Value, loggable: bool) -> Result<(), JsError> {
        let baseline = self.0.session.request_header();
        let changed = baseline.as_ref().is_none_or(|b| !header_equals(b, header));
        let logged = self.0.header_logged.get();
        let Some(reason) = header_reason(logged, baseline.is_some(), changed) else {
            return Ok(());
        };
        if !loggable {
            return Err(JsError::error(
                "session event \"request/header\" carries non-JSON-serializable data",
            ));
        }
        let logged = self.append(
            event_kind::REQUEST_HEADER,
            object([("header", header.clone()), ("reason", json!(reason))]),
            SurfaceMeta::default(),
        )?;
        // The write side of change-only header logging: what was logged is
        // now the header in force, so the next attempt compares with it. The
        // judge checks the read side on every implementation's log
        // (`[header-logging]`).
        assert!(
            self.0
                .session
                .request_header()
                .is_some_and(|in_force| header_equals(&in_force, &logged.data["header"])),
            "a logged request/header is the header in force"
        );
        self.0.header_logged.set(true);
        Ok(())
    }

    /// Log the call's `request/context` when it differs from the latest.
    fn log_request_context(&self, context: Value) -> Result<(), JsError> {
        if context_differs(self.0.session.request_context().as_deref(), &context) {
            self.append(event_kind::REQUEST_CONTEXT, context, SurfaceMeta::default())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn persisted(config: Value, adapter_defaults: Value) -> Value {
        json!({"config": config, "adapterDefaults": adapter_defaults})
    }

    #[test]
    fn a_fresh_seed_is_the_route_and_the_output_cap() {
        assert_eq!(
            seed_config(false, None, ("p", "m"), Some(512)),
            json!({"provider": "p", "model": "m", "maxTokens": 512})
        );
        assert_eq!(
            seed_config(false, None, ("", ""), None),
            json!({"provider": "", "model": ""})
        );
    }

    #[test]
    fn a_resumed_seed_keeps_only_an_explicit_effort_of_the_same_route() {
        let explicit = persisted(
            json!({"provider": "p", "model": "m", "reasoningEffort": "low", "temperature": 0.5}),
            json!({}),
        );
        // Same route: the effort survives, the temperature does not (H2).
        assert_eq!(
            seed_config(false, Some(&explicit), ("p", "m"), None),
            json!({"provider": "p", "model": "m", "reasoningEffort": "low"})
        );
        // Another model: nothing carries over.
        assert_eq!(
            seed_config(false, Some(&explicit), ("p", "other"), None),
            json!({"provider": "p", "model": "other"})
        );
        // An effort the adapter defaulted is not the user's choice.
        let defaulted = persisted(
            json!({"provider": "p", "model": "m", "reasoningEffort": "high"}),
            json!({"reasoningEffort": true}),
        );
        assert_eq!(
            seed_config(false, Some(&defaulted), ("p", "m"), None),
            json!({"provider": "p", "model": "m"})
        );
    }

    #[test]
    fn after_the_first_header_the_seed_is_its_proposal() {
        let header = persisted(
            json!({"provider": "p", "model": "m", "reasoningEffort": "high", "maxTokens": 9}),
            json!({"reasoningEffort": true}),
        );
        // The options no longer matter; defaulted fields are dropped.
        assert_eq!(
            seed_config(true, Some(&header), ("x", "y"), Some(1)),
            json!({"provider": "p", "model": "m", "maxTokens": 9})
        );
    }

    #[test]
    fn a_proposal_must_name_provider_and_model() {
        assert!(names_route(&json!({"provider": "p", "model": "m"})));
        assert!(!names_route(&json!({"provider": "p", "model": ""})));
        assert!(!names_route(&json!({"provider": "p", "model": 1})));
        assert!(!names_route(&json!({"model": "m"})));
    }

    #[test]
    fn the_header_drops_empty_parts_and_the_request_follows_it() {
        let resolved = ResolvedCall {
            config: json!({"provider": "p", "model": "m"}),
            adapter_defaults: Some(json!({"reasoningEffort": false})),
            context_window: None,
        };
        let header = canonical_header(resolved.clone(), "", &[]);
        assert_eq!(header, json!({"config": {"provider": "p", "model": "m"}}));
        let tools = [json!({"name": "read"})];
        let header = canonical_header(resolved, "sys", &tools);
        assert_eq!(header["system"], "sys");
        assert_eq!(header["tools"], json!(tools));
        let request = request_of(header, vec![json!({"role": "user"})], "s-1".into());
        assert_eq!(
            request,
            json!({"provider": "p", "model": "m", "messages": [{"role": "user"}],
                   "system": "sys", "tools": tools, "sessionId": "s-1"})
        );
    }

    #[test]
    fn header_reasons_follow_h9() {
        assert_eq!(header_reason(false, false, true), Some("initial"));
        // An agent's first header is logged even when nothing changed.
        assert_eq!(header_reason(false, true, false), Some("resume"));
        assert_eq!(header_reason(true, true, true), Some("change"));
        assert_eq!(header_reason(true, true, false), None);
    }

    #[test]
    fn request_context_is_logged_when_any_field_differs() {
        let resolved = ResolvedCall {
            config: json!({"provider": "p", "model": "m", "maxTokens": 3}),
            adapter_defaults: None,
            context_window: Some(1000),
        };
        let context = request_context(&resolved);
        assert_eq!(
            context,
            json!({"provider": "p", "model": "m", "contextWindow": 1000})
        );
        assert!(context_differs(None, &context));
        assert!(!context_differs(Some(&context.clone()), &context));
        let without_window = json!({"provider": "p", "model": "m"});
        assert!(context_differs(Some(&without_window), &context));
        assert!(context_differs(Some(&context), &without_window));
    }
}
