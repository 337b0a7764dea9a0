//! Greedy shrinking of a failing scenario. `dshc diff` and `dshc sim` both
//! shrink here, each with its own test of "still fails" that keeps the
//! finding itself (the same disagreement, the same violation): a step that
//! loses it is never taken. Scope bindings, further agents and listener or
//! tool ops the finding does not need are dropped one by one.

use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{
    AssemblyCommand, Command, ContextCommand, ListenerOp, Provided, ProviderSpec, SectionCommand,
    SequenceItem, TextSpec, VariableCommand,
};

/// Every one-step simplification of a scenario, most drastic first: drop a
/// step, drop a provider response, reset the config and scopes, drop a scope
/// binding, a further agent, a scripted tool result, a listener or tool op,
/// strip effects, sequences and scopes, shorten texts.
pub fn candidates(scenario: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut with = |change: &dyn Fn(&mut Scenario)| {
        let mut candidate = scenario.clone();
        change(&mut candidate);
        if candidate.steps != scenario.steps
            || candidate.config != scenario.config
            || candidate.scopes != scenario.scopes
            || candidate.provider != scenario.provider
            || candidate.agents != scenario.agents
            || candidate.tool_results != scenario.tool_results
        {
            out.push(candidate);
        }
    };
    for index in (0..scenario.steps.len()).rev() {
        with(&|s| {
            s.steps.remove(index);
        });
    }
    let responses = scenario.provider.as_ref().map_or(0, |p| p.responses.len());
    for index in (0..responses).rev() {
        with(&|s| {
            if let Some(provider) = &mut s.provider {
                provider.responses.remove(index);
            }
        });
    }
    with(&|s| s.config = Default::default());
    with(&|s| s.config.persona = None);
    with(&|s| s.config.tool_order = None);
    with(&|s| s.config.include_harness_identity = Some(false));
    with(&|s| s.config.include_runtime_context = None);
    with(&|s| s.scopes.clear());
    for index in (0..scenario.scopes.len()).rev() {
        with(&|s| {
            s.scopes.remove(index);
        });
    }
    for index in (0..scenario.agents.len()).rev() {
        with(&|s| {
            s.agents.remove(index);
        });
    }
    for index in (0..scenario.tool_results.len()).rev() {
        with(&|s| {
            s.tool_results.remove(index);
        });
    }
    for (index, result) in scenario.tool_results.iter().enumerate() {
        for fewer in without_each_op(result) {
            with(&|s| s.tool_results[index] = fewer.clone());
        }
    }
    for index in 0..scenario.steps.len() {
        for fewer in without_each_op(&scenario.steps[index].command) {
            with(&|s| s.steps[index].command = fewer.clone());
        }
        if let Command::Assembly(AssemblyCommand::Listen(_)) = &scenario.steps[index].command {
            with(&|s| {
                if let Command::Assembly(AssemblyCommand::Listen(l)) = &mut s.steps[index].command {
                    l.prepend = false;
                    l.global = false;
                    l.scope = None;
                }
            });
        }
        with(&|s| s.steps[index].command = simplify(&s.steps[index].command));
        let mut shorter = shorter_texts(&scenario.steps[index].command);
        if shorter.is_empty() {
            shorter = shorter_plain_text(&scenario.steps[index].command);
        }
        for command in shorter {
            with(&|s| s.steps[index].command = command.clone());
        }
    }
    out
}

/// Greedily take the first candidate that still fails, until none does or
/// `max_attempts` candidates were tried. A scenario once taken is never
/// taken again, so two simplifications that undo each other (the default
/// config, then the identity section switched off) cannot cycle and spend
/// the attempts.
pub fn shrink(
    scenario: &Scenario,
    max_attempts: usize,
    mut still_fails: impl FnMut(&Scenario) -> bool,
) -> Scenario {
    let text = |s: &Scenario| serde_json::to_string(s).unwrap_or_default();
    let mut current = scenario.clone();
    let mut taken = std::collections::BTreeSet::from([text(&current)]);
    let mut attempts = 0;
    'progress: loop {
        for candidate in candidates(&current) {
            if attempts >= max_attempts {
                break 'progress;
            }
            let candidate_text = text(&candidate);
            if taken.contains(&candidate_text) {
                continue;
            }
            attempts += 1;
            if dshc_scenario::compile::compile("shrinking", &candidate).is_ok()
                && still_fails(&candidate)
            {
                taken.insert(candidate_text);
                current = candidate;
                continue 'progress;
            }
        }
        break;
    }
    current
}

/// `value` once for each element of its `ops` list, without that element:
/// every listener kind and tool body of either level holds its acts in
/// `ops`, so one rule over the data drops any of them.
fn without_each_op<T>(value: &T) -> Vec<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let Ok(json) = serde_json::to_value(value) else {
        return Vec::new();
    };
    let count = json
        .get("ops")
        .and_then(serde_json::Value::as_array)
        .map_or(0, Vec::len);
    (0..count)
        .rev()
        .filter_map(|op| {
            let mut fewer = json.clone();
            fewer.get_mut("ops")?.as_array_mut()?.remove(op);
            serde_json::from_value(fewer).ok()
        })
        .collect()
}

fn simplify_provider<T: Clone>(spec: &mut ProviderSpec<T>) {
    spec.effects.clear();
    match &mut spec.provided {
        Provided::Throws { cause, .. } => *cause = None,
        Provided::Sequence(sequence) => {
            spec.provided = match sequence.first() {
                Some(SequenceItem::Value(value)) => Provided::Returns(value.clone()),
                _ => Provided::Undefined,
            };
        }
        Provided::Returns(_)
        | Provided::ContextField(_)
        | Provided::Computes(_)
        | Provided::Undefined => {}
    }
}

/// Drop effects, sequences and scopes from one command.
fn simplify(command: &Command) -> Command {
    let mut command = command.clone();
    match &mut command {
        Command::Assembly(AssemblyCommand::Section(s)) => {
            s.scope = None;
            s.complete = false;
            if let TextSpec::Provider(p) = &mut s.text {
                simplify_provider(p);
            }
        }
        Command::Assembly(AssemblyCommand::Context(s)) => {
            s.scope = None;
            if let TextSpec::Provider(p) = &mut s.text {
                simplify_provider(p);
            }
        }
        Command::Assembly(AssemblyCommand::Variable(s)) => {
            s.scope = None;
            if let TextSpec::Provider(p) = &mut s.value {
                simplify_provider(p);
            }
        }
        Command::Assembly(AssemblyCommand::Tools(s)) => {
            s.scope = None;
            simplify_provider(&mut s.provider);
        }
        Command::Assembly(AssemblyCommand::Suppress(s)) => s.scope = None,
        Command::Assembly(AssemblyCommand::Assemble(s)) => s.scope = None,
        _ => {}
    }
    command
}

/// Halve long texts and drop single characters from short ones.
fn shorter(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    if chars.is_empty() {
        return out;
    }
    out.push(String::new());
    if chars.len() > 1 {
        let half = chars.len() / 2;
        out.push(chars[..half].iter().collect());
        out.push(chars[half..].iter().collect());
    }
    if chars.len() <= 12 {
        for skip in 0..chars.len() {
            out.push(
                chars
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, c)| *c)
                    .collect(),
            );
        }
    }
    out
}

/// The shorter forms of a command's own plain `text` (a loop message:
/// `followup`, `steer`, `inject`), read off its data like [`without_each_op`].
fn shorter_plain_text(command: &Command) -> Vec<Command> {
    let Ok(json) = serde_json::to_value(command) else {
        return Vec::new();
    };
    let Some(text) = json.get("text").and_then(serde_json::Value::as_str) else {
        return Vec::new();
    };
    shorter(text)
        .into_iter()
        .filter_map(|t| {
            let mut candidate = json.clone();
            candidate["text"] = serde_json::Value::String(t);
            serde_json::from_value(candidate).ok()
        })
        .collect()
}

fn shorter_text_specs(text: &TextSpec) -> Vec<TextSpec> {
    match text {
        TextSpec::Static(t) => shorter(t).into_iter().map(TextSpec::Static).collect(),
        TextSpec::Provider(p) => match &p.provided {
            Provided::Returns(t) => shorter(t)
                .into_iter()
                .map(|t| {
                    TextSpec::Provider(ProviderSpec {
                        provided: Provided::Returns(t),
                        effects: p.effects.clone(),
                    })
                })
                .collect(),
            _ => Vec::new(),
        },
    }
}

fn shorter_texts(command: &Command) -> Vec<Command> {
    match command {
        Command::Assembly(AssemblyCommand::Section(s)) => shorter_text_specs(&s.text)
            .into_iter()
            .map(|text| {
                Command::Assembly(AssemblyCommand::Section(SectionCommand {
                    text,
                    ..s.clone()
                }))
            })
            .collect(),
        Command::Assembly(AssemblyCommand::Context(s)) => shorter_text_specs(&s.text)
            .into_iter()
            .map(|text| {
                Command::Assembly(AssemblyCommand::Context(ContextCommand {
                    text,
                    ..s.clone()
                }))
            })
            .collect(),
        Command::Assembly(AssemblyCommand::Variable(s)) => shorter_text_specs(&s.value)
            .into_iter()
            .map(|value| {
                Command::Assembly(AssemblyCommand::Variable(VariableCommand {
                    value,
                    ..s.clone()
                }))
            })
            .collect(),
        Command::Assembly(AssemblyCommand::Listen(l)) => l
            .ops
            .iter()
            .enumerate()
            .filter_map(|(i, op)| match op {
                ListenerOp::SetSectionText(t) => Some((i, t.text.clone())),
                _ => None,
            })
            .flat_map(|(i, text)| {
                shorter(&text).into_iter().map(move |t| {
                    let mut l = l.clone();
                    if let ListenerOp::SetSectionText(spec) = &mut l.ops[i] {
                        spec.text = t;
                    }
                    Command::Assembly(AssemblyCommand::Listen(l))
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_scenario::protocol::LoopCommand;

    fn scenario(text: &str) -> Scenario {
        toml::from_str(text).expect("a scenario")
    }

    #[test]
    fn each_scope_binding_and_each_op_can_be_dropped_alone() {
        let original = scenario(
            "format = 2\ntitle = \"t\"\ncovers = []\n\
             [[scopes]]\nname = \"leaf\"\nparent = \"mid\"\n\
             [[scopes]]\nname = \"mid\"\nparent = \"root\"\n\
             [[steps]]\ndo = \"listen\"\nid = \"l\"\n\
             ops = [{ set_field = { name = \"a\", value = \"1\" } }, { set_field = { name = \"b\", value = \"2\" } }]\n\
             [[steps]]\ndo = \"assemble\"\nscope = \"leaf\"\n",
        );
        let all = candidates(&original);
        let scopes: Vec<usize> = all.iter().map(|c| c.scopes.len()).collect();
        assert!(
            scopes.iter().filter(|&&n| n == 1).count() >= 2,
            "{scopes:?}"
        );
        let ops = |s: &Scenario| match &s.steps[0].command {
            Command::Assembly(AssemblyCommand::Listen(l)) => l.ops.len(),
            _ => 0,
        };
        let one_op = all
            .iter()
            .filter(|c| c.steps.len() == 2 && ops(c) == 1)
            .count();
        assert_eq!(one_op, 2, "each of the two ops is dropped alone");
    }

    #[test]
    fn a_loop_message_is_shortened_too() {
        let original = scenario(
            "format = 2\ntitle = \"t\"\ncovers = []\nlevel = \"loop\"\n\
             [[steps]]\ndo = \"followup\"\ntext = \"hello there\"\n",
        );
        let texts: Vec<String> = candidates(&original)
            .iter()
            .filter_map(|c| match &c.steps.first()?.command {
                Command::Loop(LoopCommand::Followup(message)) => serde_json::to_value(message).ok(),
                _ => None,
            })
            .filter_map(|v| v["text"].as_str().map(str::to_owned))
            .collect();
        assert!(texts.iter().any(|t| t.is_empty()), "{texts:?}");
        assert!(texts.iter().any(|t| t == "hello"), "{texts:?}");
    }
}
