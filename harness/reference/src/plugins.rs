//! The scenario's plugin data as the agent's own plugin types: the agent
//! never sees the scenario format, so the reference converts here.

use dshc_agent::plugins as agent;
use dshc_scenario::protocol as spec;

/// `[plugins]` as the agent's config.
pub(crate) fn plugins_config(plugins: &spec::PluginsSpec) -> agent::PluginsConfig {
    agent::PluginsConfig {
        order: plugins
            .order
            .iter()
            .flatten()
            .map(|name| plugin_name(*name))
            .collect(),
        time_context: plugins
            .time_context
            .as_ref()
            .map(|t| agent::TimeContextConfig {
                time_zone: t.time_zone.clone(),
                refresh_interval_ms: t.refresh_interval_ms.map(|n| n.0),
                process_time_zone: t.process_time_zone.clone(),
                zones: t.zones.clone(),
            }),
        tmux_context: plugins
            .tmux_context
            .as_ref()
            .map(|t| agent::TmuxContextConfig {
                refresh_interval_ms: t.refresh_interval_ms.map(|n| n.0),
                shell: t.shell,
                query: t.query.as_ref().map(tmux_query),
            }),
        agent_instructions: plugins.agent_instructions.as_ref().map(|a| {
            agent::AgentInstructionsConfig {
                max_bytes: a.max_bytes,
                max_source_bytes: a.max_source_bytes,
                project_root_markers: a.project_root_markers.clone(),
                instruction_file_candidates: a.instruction_file_candidates.clone(),
                local_instruction_file_candidates: a.local_instruction_file_candidates.clone(),
                dsh_home: a.dsh_home.clone(),
                fs: a.fs,
                files: a.files.clone(),
                dirs: a.dirs.clone(),
            }
        }),
        session_reference: plugins.session_reference.as_ref().map(|s| {
            agent::SessionReferenceConfig {
                max_references: s.max_references.map(|n| n.0),
                max_reference_bytes: s.max_reference_bytes.map(|n| n.0),
                sessions: s
                    .sessions
                    .iter()
                    .map(|(id, session)| (id.clone(), referenced_session(session)))
                    .collect(),
            }
        }),
    }
}

fn plugin_name(name: spec::PluginName) -> agent::PluginName {
    match name {
        spec::PluginName::TimeContext => agent::PluginName::TimeContext,
        spec::PluginName::TmuxContext => agent::PluginName::TmuxContext,
        spec::PluginName::AgentInstructions => agent::PluginName::AgentInstructions,
        spec::PluginName::SessionReference => agent::PluginName::SessionReference,
    }
}

fn tmux_query(query: &spec::TmuxQuery) -> agent::TmuxQuery {
    match query {
        spec::TmuxQuery::Pane(pane) => agent::TmuxQuery::Pane(agent::TmuxPane {
            session: pane.session.clone(),
            window_index: pane.window_index.clone(),
            window_name: pane.window_name.clone(),
            pane_index: pane.pane_index.clone(),
            pane_id: pane.pane_id.clone(),
            window_active: pane.window_active.clone(),
            pane_active: pane.pane_active.clone(),
            layout: pane.layout.clone(),
        }),
        spec::TmuxQuery::Exit(code) => agent::TmuxQuery::Exit(*code),
        spec::TmuxQuery::Rejected(message) => agent::TmuxQuery::Rejected(message.clone()),
    }
}

fn referenced_session(session: &spec::ReferencedSession) -> agent::ReferencedSession {
    agent::ReferencedSession {
        cwd: session.cwd.clone(),
        captured_through_seq: session.captured_through_seq,
        messages: session
            .messages
            .iter()
            .map(|m| agent::SurfaceMessage {
                role: match m.role {
                    spec::SurfaceRole::User => agent::SurfaceRole::User,
                    spec::SurfaceRole::Assistant => agent::SurfaceRole::Assistant,
                    spec::SurfaceRole::Tool => agent::SurfaceRole::Tool,
                },
                text: m.text.clone(),
                source: m.source.clone(),
            })
            .collect(),
        read_error: session.read_error.clone(),
    }
}

/// A `do = "plugin"` command as a change of the plugins' inputs.
pub(crate) fn input_change(action: &spec::PluginAction) -> agent::InputChange {
    match action {
        spec::PluginAction::Tmux(query) => agent::InputChange::Tmux(tmux_query(query)),
        spec::PluginAction::WriteFile(write) => agent::InputChange::WriteFile {
            path: write.path.clone(),
            content: write.content.clone(),
        },
        spec::PluginAction::RemoveFile(path) => agent::InputChange::RemoveFile(path.clone()),
        spec::PluginAction::SetSession(set) => agent::InputChange::SetSession {
            id: set.id.clone(),
            session: referenced_session(&set.session),
        },
    }
}
