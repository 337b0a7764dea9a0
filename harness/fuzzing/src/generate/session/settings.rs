//! The session's settings: the DeepSeek deployment, the first agent's
//! options and session meta, and the plugin config; and, stated apart from
//! how they are drawn, which of them setup refuses ([`refused_at_creation`],
//! [`refused_deployment`]), so a refusal is judged on any scenario.

use serde_json::json;

use super::Generator;
use dshc_scenario::protocol::*;

/// `maxTokens` values `createAgent` takes: positive safe integers, up to
/// the largest.
const VALID_MAX_TOKENS: &[u64] = &[64, 4_096, 9_007_199_254_740_991];

/// Whether dsh-llm-deepseek refuses this deployment: with thinking
/// disabled, a default reasoning effort other than `off`.
pub(super) fn refused_deployment(adapter: &AdapterSpec) -> bool {
    adapter.thinking.as_deref() == Some("disabled")
        && adapter
            .reasoning_effort
            .as_deref()
            .is_some_and(|e| e != "off")
}

/// Whether `createAgent` refuses these options, as dsh-agent-loop and
/// dsh-session validate them: `maxTokens` a positive safe integer, and the
/// session header's `cwd` absolute, `origin` `"subagent"` and
/// `delegationDepth` a non-negative safe integer (each when given).
pub(super) fn refused_at_creation(agent: &AgentSpec) -> bool {
    const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;
    fn given(value: &JsJson) -> Option<&serde_json::Value> {
        (!value.is_undefined()).then_some(&value.0)
    }
    // A JavaScript number: `2.0` is the integer 2.
    let safe_integer_from = |value: &serde_json::Value, least: f64| {
        value
            .as_f64()
            .is_some_and(|n| n.fract() == 0.0 && (least..=MAX_SAFE_INTEGER).contains(&n))
    };
    given(&agent.max_tokens).is_some_and(|v| !safe_integer_from(v, 1.0))
        || given(&agent.cwd).is_some_and(|v| !v.as_str().is_some_and(|c| c.starts_with('/')))
        || given(&agent.origin).is_some_and(|v| v.as_str() != Some("subagent"))
        || given(&agent.delegation_depth).is_some_and(|v| !safe_integer_from(v, 0.0))
}

impl Generator {
    /// The first agent, with options and session meta off their defaults
    /// as the swarm rolls: valid ones change its requests and log, invalid
    /// ones fail its creation.
    pub(super) fn first_agent(&mut self) -> Option<AgentSpec> {
        if !self.roll("agent_options") {
            return None;
        }
        let mut agent = AgentSpec::default();
        if self.rng.percent(50) {
            agent.max_tokens = JsJson(if self.rng.percent(25) {
                // Values `createAgent` refuses.
                let refused = [
                    json!(0),
                    json!(-1),
                    json!(1.5),
                    json!(9_007_199_254_740_992_u64),
                    json!("8"),
                ];
                self.rng.pick(&refused).clone()
            } else {
                json!(*self.rng.pick(VALID_MAX_TOKENS))
            });
        }
        match self.rng.below(10) {
            0 => agent.provider = JsJson::undefined(),
            1 => agent.provider = JsJson(json!("")),
            2 => agent.model = JsJson::undefined(),
            _ => {}
        }
        if self.rng.percent(25) {
            agent.parent_session = JsJson(json!("parent"));
        }
        if self.rng.percent(25) {
            agent.origin = JsJson(json!(*self.rng.pick(&["subagent", "subagent", "main"])));
        }
        if self.rng.percent(25) {
            agent.delegation_depth = JsJson(json!(*self.rng.pick(&[0.0, 2.0, 1.5])));
        }
        if self.rng.percent(25) {
            agent.agent_preset = JsJson(json!("reviewer"));
        }
        if self.rng.percent(15) {
            agent.cwd = JsJson(json!(*self.rng.pick(&["/work/sub", "relative"])));
        }
        Some(agent)
    }

    /// The deployment's settings, as the swarm rolls: a catalog that lists
    /// the agents' model or another, a default window and cap, a default
    /// effort and thinking (a combination the adapter refuses now and then).
    pub(super) fn deployment(&mut self) -> AdapterSpec {
        let mut adapter = AdapterSpec {
            stream_idle_timeout_ms: Some(60_000),
            ..AdapterSpec::default()
        };
        if !self.roll("deployment") {
            return adapter;
        }
        if self.rng.percent(50) {
            let id = *self.rng.pick(&["deepseek-v4-flash", "deepseek-v4-pro"]);
            adapter.models.push(ModelSpec {
                id: id.into(),
                context_window: self.rng.percent(70).then_some(64_000),
                max_tokens: self.rng.percent(70).then_some(8_192),
                input_modalities: None,
            });
        }
        if self.rng.percent(40) {
            adapter.default_context_window = Some(*self.rng.pick(&[128_000, 32_000]));
        }
        if self.rng.percent(40) {
            adapter.max_tokens = Some(*self.rng.pick(&[4_096, 100_000]));
        }
        if self.rng.percent(60) {
            let effort = *self.rng.pick(&["off", "low", "high", "max"]);
            adapter.reasoning_effort = Some(effort.into());
        }
        if self.rng.percent(40) {
            let thinking = *self.rng.pick(&["enabled", "disabled"]);
            adapter.thinking = Some(thinking.into());
        }
        adapter
    }

    /// The plugin config: identity, runtime context and persona.
    pub(super) fn config(&mut self) -> ConfigSpec {
        ConfigSpec {
            include_harness_identity: Some(self.rng.percent(50)),
            include_runtime_context: if self.rng.percent(10) {
                Some(false)
            } else {
                None
            },
            persona: if self.rng.percent(50) {
                Some(self.words(5))
            } else {
                None
            },
            tool_order: None,
        }
    }
}
