//! The scenario's plugin data as the agent's own plugin types: the agent
//! never sees the scenario format, so the reference converts here.
//!
//! The two sides mirror each other (the price of the layering). Each
//! conversion destructures the scenario type exhaustively and builds the
//! agent type with a struct literal, so a field added on either side and
//! not carried across fails to compile instead of being dropped.

use dshc_agent::plugins as agent;
use dshc_scenario::protocol as spec;

/// `[plugins]` as the agent's config.
pub(crate) fn plugins_config(plugins: &spec::PluginsSpec) -> agent::PluginsConfig {
    let spec::PluginsSpec {
        order,
        time_context,
        tmux_context,
        agent_instructions,
        session_reference,
    } = plugins;
    agent::PluginsConfig {
        order: order
            .iter()
            .flatten()
            .map(|name| plugin_name(*name))
            .collect(),
        time_context: time_context.as_ref().map(
            |spec::TimeContextSpec {
                 time_zone,
                 refresh_interval_ms,
                 process_time_zone,
                 zones,
             }| agent::TimeContextConfig {
                time_zone: time_zone.clone(),
                refresh_interval_ms: refresh_interval_ms.map(|n| n.0),
                process_time_zone: process_time_zone.clone(),
                zones: zones.clone(),
            },
        ),
        tmux_context: tmux_context.as_ref().map(
            |spec::TmuxContextSpec {
                 refresh_interval_ms,
                 shell,
                 query,
             }| agent::TmuxContextConfig {
                refresh_interval_ms: refresh_interval_ms.map(|n| n.0),
                shell: *shell,
                query: query.as_ref().map(tmux_query),
            },
        ),
        agent_instructions: agent_instructions.as_ref().map(agent_instructions_config),
        session_reference: session_reference.as_ref().map(
            |spec::SessionReferenceSpec {
                 max_references,
                 max_reference_bytes,
                 sessions,
             }| agent::SessionReferenceConfig {
                max_references: max_references.map(|n| n.0),
                max_reference_bytes: max_reference_bytes.map(|n| n.0),
                sessions: sessions
                    .iter()
                    .map(|(id, session)| (id.clone(), referenced_session(session)))
                    .collect(),
            },
        ),
    }
}

fn agent_instructions_config(
    config: &spec::AgentInstructionsSpec,
) -> agent::AgentInstructionsConfig {
    let spec::AgentInstructionsSpec {
        max_bytes,
        max_source_bytes,
        project_root_markers,
        instruction_file_candidates,
        local_instruction_file_candidates,
        dsh_home,
        fs,
        files,
        dirs,
    } = config;
    agent::AgentInstructionsConfig {
        max_bytes: *max_bytes,
        max_source_bytes: *max_source_bytes,
        project_root_markers: project_root_markers.clone(),
        instruction_file_candidates: instruction_file_candidates.clone(),
        local_instruction_file_candidates: local_instruction_file_candidates.clone(),
        dsh_home: dsh_home.clone(),
        fs: *fs,
        files: files.clone(),
        dirs: dirs.clone(),
    }
}

pub(crate) fn plugin_name(name: spec::PluginName) -> agent::PluginName {
    match name {
        spec::PluginName::TimeContext => agent::PluginName::TimeContext,
        spec::PluginName::TmuxContext => agent::PluginName::TmuxContext,
        spec::PluginName::AgentInstructions => agent::PluginName::AgentInstructions,
        spec::PluginName::SessionReference => agent::PluginName::SessionReference,
    }
}

fn tmux_query(query: &spec::TmuxQuery) -> agent::TmuxQuery {
    match query {
        spec::TmuxQuery::Pane(spec::TmuxPane {
            session,
            window_index,
            window_name,
            pane_index,
            pane_id,
            window_active,
            pane_active,
            layout,
        }) => agent::TmuxQuery::Pane(agent::TmuxPane {
            session: session.clone(),
            window_index: window_index.clone(),
            window_name: window_name.clone(),
            pane_index: pane_index.clone(),
            pane_id: pane_id.clone(),
            window_active: window_active.clone(),
            pane_active: pane_active.clone(),
            layout: layout.clone(),
        }),
        spec::TmuxQuery::Exit(code) => agent::TmuxQuery::Exit(*code),
        spec::TmuxQuery::Rejected(message) => agent::TmuxQuery::Rejected(message.clone()),
    }
}

fn referenced_session(session: &spec::ReferencedSession) -> agent::ReferencedSession {
    let spec::ReferencedSession {
        cwd,
        captured_through_seq,
        messages,
        read_error,
    } = session;
    agent::ReferencedSession {
        cwd: cwd.clone(),
        captured_through_seq: *captured_through_seq,
        messages: messages
            .iter()
            .map(
                |spec::SurfaceMessage { role, text, source }| agent::SurfaceMessage {
                    role: match role {
                        spec::SurfaceRole::User => agent::SurfaceRole::User,
                        spec::SurfaceRole::Assistant => agent::SurfaceRole::Assistant,
                        spec::SurfaceRole::Tool => agent::SurfaceRole::Tool,
                    },
                    text: text.clone(),
                    source: source.clone(),
                },
            )
            .collect(),
        read_error: read_error.clone(),
    }
}

/// A `do = "plugin"` command as a change of the plugins' inputs; `None`
/// for `dispose`, which changes none.
pub(crate) fn input_change(action: &spec::PluginAction) -> Option<agent::InputChange> {
    Some(match action {
        spec::PluginAction::Tmux(query) => agent::InputChange::Tmux(tmux_query(query)),
        spec::PluginAction::WriteFile(spec::WriteFileAction { path, content }) => {
            agent::InputChange::WriteFile {
                path: path.clone(),
                content: content.clone(),
            }
        }
        spec::PluginAction::RemoveFile(path) => agent::InputChange::RemoveFile(path.clone()),
        spec::PluginAction::SetSession(spec::SetSessionAction { id, session }) => {
            agent::InputChange::SetSession {
                id: id.clone(),
                session: referenced_session(session),
            }
        }
        spec::PluginAction::Dispose(_) => return None,
    })
}
