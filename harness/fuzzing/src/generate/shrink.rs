//! Greedy shrinking of a failing scenario, and writing the result as a
//! regression file. `dshc diff` and `dshc sim` both shrink here, with their
//! own test of "still fails".

use std::path::{Path, PathBuf};

use dshc_scenario::format::Scenario;
use dshc_scenario::protocol::{
    AssemblyCommand, Command, ContextCommand, ListenerOp, Provided, ProviderSpec, SectionCommand,
    SequenceItem, TextSpec, VariableCommand,
};

/// Every one-step simplification of a scenario, most drastic first: drop a
/// step, drop a provider response, reset the config and scopes, drop a
/// listener op, strip effects, sequences and scopes, shorten texts.
pub fn candidates(scenario: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut with = |change: &dyn Fn(&mut Scenario)| {
        let mut candidate = scenario.clone();
        change(&mut candidate);
        if candidate.steps != scenario.steps
            || candidate.config != scenario.config
            || candidate.scopes != scenario.scopes
            || candidate.provider != scenario.provider
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
    for index in 0..scenario.steps.len() {
        if let Command::Assembly(AssemblyCommand::Listen(listen)) = &scenario.steps[index].command {
            for op in 0..listen.ops.len() {
                with(&|s| {
                    if let Command::Assembly(AssemblyCommand::Listen(l)) =
                        &mut s.steps[index].command
                    {
                        l.ops.remove(op);
                    }
                });
            }
            with(&|s| {
                if let Command::Assembly(AssemblyCommand::Listen(l)) = &mut s.steps[index].command {
                    l.prepend = false;
                    l.global = false;
                    l.scope = None;
                }
            });
        }
        with(&|s| s.steps[index].command = simplify(&s.steps[index].command));
        for shorter in shorter_texts(&scenario.steps[index].command) {
            with(&|s| s.steps[index].command = shorter.clone());
        }
    }
    out
}

/// Greedily take the first candidate that still fails, until none does or
/// `max_attempts` candidates were tried.
pub fn shrink(
    scenario: &Scenario,
    max_attempts: usize,
    mut still_fails: impl FnMut(&Scenario) -> bool,
) -> Scenario {
    let mut current = scenario.clone();
    let mut attempts = 0;
    'progress: loop {
        for candidate in candidates(&current) {
            if attempts >= max_attempts {
                break 'progress;
            }
            attempts += 1;
            if dshc_scenario::compile::compile("shrinking", &candidate).is_ok()
                && still_fails(&candidate)
            {
                current = candidate;
                continue 'progress;
            }
        }
        break;
    }
    current
}

/// Writing a regression file failed.
#[derive(Debug, thiserror::Error)]
pub enum RegressionError {
    /// The scenario does not serialize to TOML.
    #[error("cannot write the scenario as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The written scenario does not load back, or blessing it failed.
    #[error("the regression scenario is unusable: {0}")]
    Unusable(String),
}

/// Write `text` as `<dir>/<stem>.toml`; returns the path.
pub fn write_file(dir: &Path, stem: &str, text: &str) -> Result<PathBuf, RegressionError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RegressionError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(format!("{stem}.toml"));
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(path)
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
        Provided::Returns(_) | Provided::ContextField(_) | Provided::Undefined => {}
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
