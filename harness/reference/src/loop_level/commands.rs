//! What each loop-level command does on the reference, one method per
//! command (or listener kind), so that the level's dispatch in
//! [`super::LoopCommands`]'s `run` stays a flat table.

use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};

use dshc_agent::listeners::{Decision, LocalFuture, PreStepPayload};
use dshc_agent::{AdapterRoute, Agent, AgentStatus, user_message};
use dshc_model::js::JsValue;
use dshc_model::session::{Session, SurfaceMeta, SurfaceOp};
use dshc_model::{AbortSignal, JsError};
use dshc_scenario::protocol::{
    AppendCommand, CancelCommand, ClockJumpCommand, CompactCommand, DisposeAgentCommand,
    DisposeCommand, FirePreStepCommand, JsJson, LoopListenerCommand, ModelResolution, Observation,
    PluginAction, ReadSessionCommand, RegisterRouteCommand, ResumeCommand, RouteCommand,
    SettleModelCommand, WaitCommand, WaitIdleCommand,
};

use super::{LoopAgent, LoopCommands};
use crate::loop_listeners::ListenerWorld;
use crate::plugins::{input_change, plugin_name};
use crate::scripted;
use dshc_model::session::event_kind;

impl LoopCommands {
    /// `dispose`: a registration or assembly listener first, else a loop
    /// listener of that id on every agent.
    pub(super) fn dispose(&self, command: &DisposeCommand) -> Result<(), JsError> {
        if !scripted::try_dispose(&command.target, &Rc::downgrade(&self.assembly.world))? {
            self.remove_loop_listener(&command.target);
        }
        Ok(())
    }

    pub(super) fn cancel(&self, command: &CancelCommand) -> Result<(), JsError> {
        let reason = command
            .reason
            .clone()
            .unwrap_or_else(|| json!({"kind": "user"}));
        self.agent(&command.agent)
            .cancel(reason, command.keep_inbox)
    }

    pub(super) async fn wait(&self, command: &WaitCommand) -> Result<(), JsError> {
        // With every agent idle and no scripted sleep waiting (a contained
        // notification's may outlive its turn), nothing is in flight and no
        // timer is armed, so the clock can jump instead of the network
        // simulation stepping through every millisecond.
        if self.armed_timers.get() == 0
            && self
                .agents
                .iter()
                .all(|a| a.agent.status() == AgentStatus::Idle)
        {
            self.skipped_ms
                .set(self.skipped_ms.get().saturating_add(command.ms));
        } else {
            mock_provider::sim_time::sleep(Duration::from_millis(command.ms)).await;
        }
        Ok(())
    }

    pub(super) async fn wait_idle(&self, command: &WaitIdleCommand) -> Result<(), JsError> {
        match &command.agent {
            Some(_) => self.agent(&command.agent).when_idle().await,
            None => {
                for LoopAgent { agent, .. } in &self.agents {
                    agent.when_idle().await;
                }
            }
        }
        Ok(())
    }

    /// `compact`: a compaction message replacing a stretch of the surface.
    pub(super) fn compact(&self, command: &CompactCommand) -> Result<(), JsError> {
        let session = self.agent(&command.agent).session();
        let nodes = session.surface_nodes();
        let start = command
            .start
            .or(nodes.first().copied())
            .ok_or_else(|| JsError::error("compact: the surface is empty"))?;
        let end = command.end.or(nodes.last().copied()).unwrap_or(start);
        let from = nodes.iter().position(|n| *n == start).unwrap_or(0);
        let to = nodes
            .iter()
            .position(|n| *n == end)
            .map_or(nodes.len(), |i| i + 1);
        let shadowed = nodes.get(from..to).unwrap_or_default().to_vec();
        let message = user_message(
            &self.context.ids,
            json!([{"type": "text", "text": command.text}]),
            json!({"kind": "compaction"}),
        );
        session.append(
            event_kind::USER_MESSAGE,
            message,
            SurfaceMeta {
                surface_op: Some(SurfaceOp::Replace { start, end }),
                source_event_seqs: Some(shadowed),
            },
        )?;
        Ok(())
    }

    /// `resume`: a new agent over a session seeded from the old one's log,
    /// with the options the command overrides.
    pub(super) async fn resume(&mut self, command: &ResumeCommand) -> Result<(), JsError> {
        let position = self.position(&command.agent);
        let mut spec = self.agents[position].spec.clone();
        for (field, value) in [
            (&mut spec.provider, &command.provider),
            (&mut spec.model, &command.model),
            (&mut spec.max_tokens, &command.max_tokens),
        ] {
            if let Some(value) = value {
                *field = value.clone();
            }
        }
        let old = self.agents[position].agent.clone();
        old.when_idle().await;
        // The seed is the log as it stands; then the old agent is disposed
        // as `dispose_agent` does (its cancel clears a pending inbox, which
        // the old session logs, after the seed was taken).
        let seed = old.session().events();
        old.cancel(json!({"kind": "disposed"}), false)?;
        old.when_idle().await;
        self.drop_agent_scope(&spec.id);
        let old = old.session();
        let session = Session::from_seed(&old.id(), old.cwd(), seed, self.clock.clone())?;
        let agent = Self::new_agent(&self.context, &self.world, &spec, session, &self.clock)?;
        self.agents[position] = LoopAgent { spec, agent };
        Ok(())
    }

    pub(super) async fn dispose_agent(&self, command: &DisposeAgentCommand) -> Result<(), JsError> {
        let agent = self.agent(&command.agent).clone();
        agent.cancel(json!({"kind": "disposed"}), false)?;
        agent.when_idle().await;
        let id = self.agents[self.position(&command.agent)].spec.id.clone();
        self.drop_agent_scope(&id);
        Ok(())
    }

    /// Any `on_*` loop listener: registered on its agent by `register`.
    pub(super) fn listen<Op>(
        &self,
        command: &LoopListenerCommand<Op>,
        register: fn(&Agent, &ListenerWorld, &LoopListenerCommand<Op>),
    ) -> Result<(), JsError> {
        register(self.agent(&command.agent), &self.listener_world(), command);
        Ok(())
    }

    pub(super) fn plugin(&self, action: &PluginAction) -> Result<(), JsError> {
        if let PluginAction::Dispose(name) = action {
            let agents = self.agents.iter().map(|loop_agent| &loop_agent.agent);
            dshc_agent::plugins::dispose(agents, plugin_name(*name));
        } else if let Some(change) = input_change(action) {
            dshc_agent::plugins::change_input(&self.agents[0].agent, &change);
        }
        Ok(())
    }

    /// `append`: a direct `session.append` of JavaScript values; the
    /// observation's value is the logged event it returns.
    pub(super) fn append(
        &self,
        command: &AppendCommand,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        let js = |value: &Option<JsJson>| {
            value
                .as_ref()
                .map_or(JsValue::Undefined, |v| JsValue::from_encoded(&v.0))
        };
        let event = self.agent(&command.agent).session().append_value(
            &command.kind,
            &JsValue::from_encoded(&command.data.0),
            &js(&command.surface_op),
            &js(&command.source_event_seqs),
        )?;
        observation.value = Some(event.into_json());
        Ok(())
    }

    /// `read_session`: the session's request header and context, surface
    /// and derived messages, as the observation's value.
    pub(super) fn read_session(
        &self,
        command: &ReadSessionCommand,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        let session = self.agent(&command.agent).session();
        let mut value = serde_json::Map::new();
        if let Some(header) = session.request_header() {
            value.insert("request_header".into(), Rc::unwrap_or_clone(header));
        }
        if let Some(context) = session.request_context() {
            value.insert("request_context".into(), Rc::unwrap_or_clone(context));
        }
        value.insert("surface".into(), json!(session.surface_nodes()));
        value.insert("messages".into(), Value::Array(session.derive_messages()));
        observation.value = Some(Value::Object(value));
        Ok(())
    }

    /// `fire_pre_step`: the agent's `agent/pre-step` waterfall dispatched
    /// directly, with a default that enters the given messages.
    pub(super) async fn fire_pre_step(
        &self,
        command: &FirePreStepCommand,
        observation: &mut Observation,
    ) -> Result<(), JsError> {
        let agent = self.agent(&command.agent);
        let payload = PreStepPayload {
            messages: command.messages.clone(),
            turn: command.turn,
            step: command.step,
            signal: AbortSignal::new(),
        };
        let messages = command.messages.clone();
        let default: Rc<dyn Fn() -> LocalFuture<Result<Decision, JsError>>> = Rc::new(move || {
            let messages = messages.clone();
            Box::pin(async move { Ok(Decision::Enter(messages)) })
        });
        let decision = agent
            .listeners()
            .pre_step
            .dispatch(payload, default)
            .await?;
        observation.value = Some(match decision {
            Decision::Enter(messages) => json!({"kind": "enter", "messages": messages}),
            Decision::Reject => json!({"kind": "reject"}),
        });
        Ok(())
    }

    pub(super) fn clock_jump(&self, command: &ClockJumpCommand) -> Result<(), JsError> {
        self.jumped_ms
            .set(self.jumped_ms.get().saturating_add(command.ms));
        Ok(())
    }

    pub(super) fn register_route(&self, command: &RegisterRouteCommand) -> Result<(), JsError> {
        let route = self.route(&command.provider, command.route)?;
        self.context
            .register_route(&command.provider, AdapterRoute::Scripted(route))
    }

    /// `settle_model`: the route's pending model resolves or rejects, for
    /// the lookups waiting and every later one.
    pub(super) fn settle_model(&self, command: &SettleModelCommand) -> Result<(), JsError> {
        let resolution = match (&command.returns, &command.rejects) {
            (Some(metadata), _) => ModelResolution::Returns(metadata.clone()),
            (None, Some(error)) => ModelResolution::Rejects(error.clone()),
            (None, None) => return Err(JsError::error("settle_model settles with nothing")),
        };
        self.route(&command.provider, command.route)?
            .settle(&command.model, super::route_resolution(&resolution))
    }

    /// `unregister_route`: only a scripted route the case registered.
    pub(super) fn unregister_route(&self, command: &RouteCommand) -> Result<(), JsError> {
        if self
            .context
            .adapters
            .borrow()
            .get(&command.provider)
            .is_some_and(|r| matches!(r, AdapterRoute::Scripted(_)))
        {
            self.context.unregister_route(&command.provider);
        }
        Ok(())
    }
}
