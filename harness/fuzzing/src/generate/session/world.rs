//! The session's world: a second agent on a scripted route, the context
//! plugins, and the steps that act on them between turns (routes coming and
//! going, a moved tmux pane, a disposed plugin).

use indexmap::IndexMap;
use serde_json::json;

use super::Generator;
use dshc_scenario::protocol::*;

/// The optional parts of a session's world: a second agent on a scripted
/// route, and context plugins (time and tmux: the agent-instructions
/// plugin's messages take other ids upstream, see `world_parts`).
#[derive(Clone, Debug, Default)]
pub(super) struct WorldParts {
    pub(super) agents: Vec<AgentSpec>,
    pub(super) routes: Vec<RouteSpec>,
    pub(super) plugins: Option<PluginsSpec>,
    /// Whether the routes' pending model lookup was settled (`settle_model`).
    pub(super) settled: bool,
}

/// The second agent's id and its route.
pub(super) const BETA: &str = "beta";
pub(super) const ROUTE: &str = "mock";

impl Generator {
    /// What the tmux query answers: a pane, or not inside tmux.
    pub(super) fn tmux_query(&mut self) -> TmuxQuery {
        if self.rng.percent(25) {
            return TmuxQuery::Exit(1);
        }
        TmuxQuery::Pane(TmuxPane {
            session: "main".into(),
            window_index: self.rng.below(3).to_string(),
            window_name: self.words(1),
            pane_index: "0".into(),
            pane_id: format!("%{}", self.rng.below(4)),
            window_active: "1".into(),
            pane_active: "1".into(),
            layout: "even-horizontal".into(),
        })
    }

    /// The second agent and its route, and the plugins. Not the
    /// agent-instructions plugin: its message takes id `msg-2` on the
    /// reference and `msg-4` upstream (`dshc diff --level loop --seed
    /// 20261129`, case 26, with it), a difference left to investigate.
    pub(super) fn world_parts(&mut self) -> WorldParts {
        let mut world = WorldParts::default();
        if self.roll("second_agent") {
            world.agents.push(AgentSpec {
                id: BETA.into(),
                provider: JsJson(json!(ROUTE)),
                model: JsJson(json!("m1")),
                ..AgentSpec::default()
            });
            let model = match self.rng.below(3) {
                _ if self.roll("pending_model") => ModelResolution::Pending,
                0 => ModelResolution::default(),
                1 => ModelResolution::Returns(serde_json::Map::from_iter([
                    ("context".to_string(), json!({"contextWindow": 64_000})),
                    ("defaultMaxTokens".to_string(), json!(2_048)),
                ])),
                _ => ModelResolution::Rejects(ScriptedError {
                    message: "no such model".into(),
                    code: Some("SERVER".into()),
                    status: None,
                    provider_retry_after_ms: None,
                    request_id: None,
                }),
            };
            let responses = (0..12).map(|_| self.route_response()).collect();
            world.routes.push(RouteSpec {
                provider: ROUTE.into(),
                registered: true,
                model: model.clone(),
                models: IndexMap::new(),
                responses,
            });
            // Another route with its own script, for the same name: it can
            // be registered once the first one is unregistered.
            if self.rng.percent(40) {
                let responses = (0..12)
                    .map(|_| RouteResponse {
                        text: vec![format!("other {}", self.words(2))],
                        ..RouteResponse::default()
                    })
                    .collect();
                world.routes.push(RouteSpec {
                    provider: ROUTE.into(),
                    registered: false,
                    model,
                    models: IndexMap::new(),
                    responses,
                });
            }
        }
        let mut plugins = PluginsSpec::default();
        if self.roll("time_context") {
            plugins.time_context = Some(TimeContextSpec::default());
        }
        if self.roll("tmux_context") {
            let query = self.rng.percent(70).then(|| self.tmux_query());
            plugins.tmux_context = Some(TmuxContextSpec {
                refresh_interval_ms: None,
                shell: true,
                query,
            });
        }
        self.more_plugins(&mut plugins);
        if plugins != PluginsSpec::default() {
            world.plugins = Some(plugins);
        }
        world
    }

    /// One response of the second agent's route: two text pieces, and, as
    /// the swarm rolls, an act between them inside the stream, or a stream
    /// that ends badly.
    fn route_response(&mut self) -> RouteResponse {
        let delay_ms = self.duration_ms(0, 10);
        let (first, second) = (self.words(2), self.words(1));
        if !self.roll("route_act") {
            // Now and then a finish that hands the message state to replay
            // to this adapter (a provider's response id, say).
            if self.rng.percent(30) {
                let delta = |text: String| json!({"type": "text-delta", "index": 0, "text": text});
                let state = json!({"response": {"id": self.id("resp")}});
                return RouteResponse {
                    delay_ms,
                    parts: vec![
                        delta(first),
                        delta(second),
                        json!({"type": "finish", "reason": {"kind": "stop"}, "replayState": state}),
                    ],
                    ..RouteResponse::default()
                };
            }
            return RouteResponse {
                delay_ms,
                text: vec![first, second],
                ..RouteResponse::default()
            };
        }
        let tick = self.tick_ms as i64;
        let delta = |text: String| json!({"type": "text-delta", "index": 0, "text": text});
        let parts = match self.rng.below(6) {
            // Streams a route may end badly: a text block closed with no
            // finish, a tool call streamed without an id, a throw after
            // the first delta.
            3 => vec![
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
                delta(first),
                json!({"type": "block-end", "index": 0}),
            ],
            4 => vec![
                json!({"type": "block-start", "index": 0, "blockType": "tool-call"}),
                json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "name": first, "arguments": "{}"}}),
                json!({"type": "finish", "reason": {"kind": "tool-calls"}}),
            ],
            5 => vec![delta(first), json!({"act": {"throw": second}})],
            roll => {
                let act = match roll {
                    0 => json!({"steer": self.words(2)}),
                    1 => json!({"cancel": {}}),
                    _ => json!({"clock_jump": tick}),
                };
                vec![
                    delta(first),
                    json!({ "act": act }),
                    delta(second),
                    json!({"type": "finish", "reason": {"kind": "stop"}}),
                ]
            }
        };
        RouteResponse {
            delay_ms,
            parts,
            ..RouteResponse::default()
        }
    }

    /// Between turns, the world's parts: the second agent runs a turn, its
    /// route is unregistered or registered again, the tmux pane changes.
    pub(super) fn world_steps(&mut self, steps: &mut Vec<Command>) {
        // The second agent runs a turn while the first is idle: two agents
        // acting at one virtual instant mint their message ids in an order
        // the reference does not model as upstream's microtasks interleave.
        if !self.world.agents.is_empty() && self.rng.percent(60) {
            steps.push(Command::Loop(LoopCommand::Followup(MessageCommand {
                agent: Some(BETA.into()),
                text: Some(self.words(3)),
                content: None,
                source: None,
            })));
            // A pending lookup holds the turn until it is settled, for
            // every route of the name (they share the model's resolution).
            let pending = self.world.routes.first().map(|route| &route.model)
                == Some(&ModelResolution::Pending);
            if pending && !self.world.settled {
                self.world.settled = true;
                steps.push(Command::Loop(LoopCommand::Wait(WaitCommand {
                    ms: self.duration_ms(0, 20),
                })));
                for route in 0..self.world.routes.len() {
                    steps.push(Command::Loop(LoopCommand::SettleModel(
                        SettleModelCommand {
                            provider: ROUTE.into(),
                            route,
                            model: "m1".into(),
                            returns: Some(serde_json::Map::from_iter([(
                                "defaultMaxTokens".to_string(),
                                json!(1_024),
                            )])),
                            rejects: None,
                        },
                    )));
                }
            }
            steps.push(Command::Loop(LoopCommand::WaitIdle(WaitIdleCommand {
                agent: None,
            })));
        }
        if !self.world.routes.is_empty() && self.roll("routes") {
            // A name registered twice is refused: the steps alternate, and
            // each registration takes one of the routes of that name. Half
            // the time a registered name is swapped at once: unregistered,
            // then taken by a route drawn anew (maybe another one).
            let route = self.rng.below(self.world.routes.len() as u64) as usize;
            let registered = self.world.routes[0].registered;
            let register = LoopCommand::RegisterRoute(RegisterRouteCommand {
                provider: ROUTE.into(),
                route,
            });
            if registered {
                steps.push(Command::Loop(LoopCommand::UnregisterRoute(RouteCommand {
                    provider: ROUTE.into(),
                })));
                if self.rng.percent(50) {
                    steps.push(Command::Loop(register));
                } else {
                    self.world.routes[0].registered = false;
                }
            } else {
                steps.push(Command::Loop(register));
                self.world.routes[0].registered = true;
            }
        }
        let tmux = self
            .world
            .plugins
            .as_ref()
            .is_some_and(|p| p.tmux_context.is_some());
        if tmux && self.rng.percent(50) {
            let action = PluginAction::Tmux(self.tmux_query());
            steps.push(Command::Loop(LoopCommand::Plugin(action)));
        }
        let live: Vec<PluginName> = PluginName::ALL
            .into_iter()
            .filter(|name| {
                self.world
                    .plugins
                    .as_ref()
                    .is_some_and(|p| p.configures(*name))
                    && !self.disposed_plugins.contains(name)
            })
            .collect();
        if !live.is_empty() && self.roll("dispose_plugin") {
            let name = *self.rng.pick(&live);
            self.disposed_plugins.push(name);
            steps.push(Command::Loop(LoopCommand::Plugin(PluginAction::Dispose(
                name,
            ))));
        }
    }
}
