//! Seeded differential runs (`dshc diff`): generated cases run on the
//! reference and on an adapter; the first disagreement is shrunk to a minimal
//! scenario and written as a regression file with a one-line replay command.

use std::path::{Path, PathBuf};

use crate::adapter::{Implementation, Ran};
use crate::oracle::compare::same_result;
use crate::protocol::CaseResult;
use crate::scenario::compile::compile;
use crate::scenario::format::{ListenerOp, ProviderSpec, Scenario, Step, TextSpec};
use crate::scripted::run_case;

/// How one generated case compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Comparison {
    /// Both implementations observed the same.
    Agree,
    /// The adapter could not run the case (skipped, errored, crashed, timed out).
    NotRun(String),
    /// They disagree; the adapter's result is attached.
    Disagree {
        /// What the reference observed.
        reference: Box<CaseResult>,
        /// What the adapter observed.
        other: Box<CaseResult>,
    },
}

/// Run one scenario on both sides and compare.
pub fn compare_once(scenario: &Scenario, id: &str, other: &mut dyn Implementation) -> Comparison {
    let case = match compile(id, scenario) {
        Ok(case) => case,
        Err(error) => {
            return Comparison::NotRun(format!("generated case does not compile: {error}"));
        }
    };
    let reference = run_case(&case);
    match other.run(&case) {
        Ran::Observed(result) if same_result(&result, &reference) => Comparison::Agree,
        Ran::Observed(result) => Comparison::Disagree {
            reference: Box::new(reference),
            other: result,
        },
        Ran::Skipped(reason) => Comparison::NotRun(format!("skipped: {reason}")),
        Ran::Errored(context) => Comparison::NotRun(format!("errored: {context}")),
        Ran::Crashed(context) => Comparison::NotRun(format!("crashed: {context}")),
        Ran::TimedOut(ms) => Comparison::NotRun(format!("timed out after {ms} ms")),
    }
}

fn disagrees(scenario: &Scenario, other: &mut dyn Implementation) -> bool {
    matches!(
        compare_once(scenario, "shrinking", other),
        Comparison::Disagree { .. }
    )
}

/// Every one-step simplification of a scenario, most drastic first.
fn candidates(scenario: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut with = |change: &dyn Fn(&mut Scenario)| {
        let mut candidate = scenario.clone();
        change(&mut candidate);
        if candidate.steps != scenario.steps
            || candidate.config != scenario.config
            || candidate.scopes != scenario.scopes
        {
            out.push(candidate);
        }
    };
    for index in (0..scenario.steps.len()).rev() {
        with(&|s| {
            s.steps.remove(index);
        });
    }
    with(&|s| s.config = Default::default());
    with(&|s| s.config.persona = None);
    with(&|s| s.config.tool_order = None);
    with(&|s| s.config.include_harness_identity = Some(false));
    with(&|s| s.config.include_runtime_context = None);
    with(&|s| s.scopes.clear());
    for index in 0..scenario.steps.len() {
        if let Step::Listen(listen) = &scenario.steps[index] {
            for op in 0..listen.ops.len() {
                with(&|s| {
                    if let Step::Listen(l) = &mut s.steps[index] {
                        l.ops.remove(op);
                    }
                });
            }
            with(&|s| {
                if let Step::Listen(l) = &mut s.steps[index] {
                    l.prepend = false;
                    l.global = false;
                    l.scope = None;
                }
            });
        }
        with(&|s| s.steps[index] = simplify_step(&s.steps[index]));
        for shorter in shorter_texts(&scenario.steps[index]) {
            with(&|s| s.steps[index] = shorter.clone());
        }
    }
    out
}

fn simplify_provider<T: Clone>(spec: &mut ProviderSpec<T>) {
    spec.effects.clear();
    spec.cause = None;
    if let Some(sequence) = spec.sequence.take() {
        spec.returns = sequence.into_iter().next();
    }
}

/// Drop effects, sequences and scopes from one step.
fn simplify_step(step: &Step) -> Step {
    let mut step = step.clone();
    match &mut step {
        Step::Section(s) => {
            s.scope = None;
            s.complete = false;
            if let TextSpec::Provider(p) = &mut s.text {
                simplify_provider(p);
            }
        }
        Step::Context(s) => {
            s.scope = None;
            if let TextSpec::Provider(p) = &mut s.text {
                simplify_provider(p);
            }
        }
        Step::Variable(s) => {
            s.scope = None;
            if let TextSpec::Provider(p) = &mut s.value {
                simplify_provider(p);
            }
        }
        Step::Tools(s) => {
            s.scope = None;
            simplify_provider(&mut s.provider);
        }
        Step::Suppress(s) => s.scope = None,
        Step::Assemble(s) => s.scope = None,
        _ => {}
    }
    step
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
        TextSpec::Provider(p) => match &p.returns {
            Some(t) => shorter(t)
                .into_iter()
                .map(|t| {
                    let mut p = p.clone();
                    p.returns = Some(t);
                    TextSpec::Provider(p)
                })
                .collect(),
            None => Vec::new(),
        },
    }
}

fn shorter_texts(step: &Step) -> Vec<Step> {
    match step {
        Step::Section(s) => shorter_text_specs(&s.text)
            .into_iter()
            .map(|text| Step::Section(crate::scenario::format::SectionStep { text, ..s.clone() }))
            .collect(),
        Step::Context(s) => shorter_text_specs(&s.text)
            .into_iter()
            .map(|text| Step::Context(crate::scenario::format::ContextStep { text, ..s.clone() }))
            .collect(),
        Step::Variable(s) => shorter_text_specs(&s.value)
            .into_iter()
            .map(|value| {
                Step::Variable(crate::scenario::format::VariableStep { value, ..s.clone() })
            })
            .collect(),
        Step::Listen(l) => l
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
                    Step::Listen(l)
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Greedily simplify while the disagreement persists, up to `max_attempts` runs.
pub fn shrink(
    scenario: &Scenario,
    other: &mut dyn Implementation,
    max_attempts: usize,
) -> Scenario {
    let mut current = scenario.clone();
    let mut attempts = 0;
    'progress: loop {
        for candidate in candidates(&current) {
            if attempts >= max_attempts {
                break 'progress;
            }
            attempts += 1;
            if compile("shrinking", &candidate).is_ok() && disagrees(&candidate, other) {
                current = candidate;
                continue 'progress;
            }
        }
        break;
    }
    current
}

/// Write a shrunk disagreement as a regression scenario, expectations taken
/// from the reference and marked for review. Returns the file written.
pub fn write_regression(
    dir: &Path,
    seed: u64,
    case: u64,
    adapter: &str,
    scenario: &Scenario,
    other: &CaseResult,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("diff_seed{seed}_case{case}.toml"));
    let mut scenario = scenario.clone();
    scenario.title = format!("dshc diff disagreement: seed {seed}, case {case}");
    let other_json = serde_json::to_string_pretty(other).unwrap_or_default();
    scenario.description = Some(format!(
        "Found by `dshc diff --adapter '{adapter}' --seed {seed} --case {case}` and shrunk.\n\
         The expectations below are the reference's observations: decide from the spec and the\n\
         upstream source which side is right before committing this file.\n\
         The adapter observed:\n{other_json}\n"
    ));
    let source = toml::to_string_pretty(&scenario).map_err(|e| e.to_string())?;
    let loaded =
        crate::scenario::load::parse_scenario(&path, &source).map_err(|e| e.to_string())?;
    let reference = run_case(&loaded.case);
    let blessed = crate::scenario::bless::blessed_source(&loaded, &reference)?;
    std::fs::write(&path, blessed).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
