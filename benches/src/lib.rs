//! Fixtures for the criterion benches: registries shaped like a real
//! deployment (identity, persona, guidance sections, tool schemas with
//! realistic JSON parameters, variables, runtime contexts, one scoped layer).
//!
//! They live in a library so the bench and its sanity test build the very
//! same registry.

use std::rc::Rc;

use dshc_model::render::{render_context_snapshot, render_prompt};
use dshc_model::{
    AssembleContext, Assembly, Config, NamedText, ProvidedSchema, Registry, ScopeKey, Text,
    ToolProviderResult, ToolSchema,
};
use serde_json::{Value, json};

/// The shape of a bench registry.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Sections besides identity and persona.
    pub sections: usize,
    /// Tool schemas, split over four providers.
    pub tools: usize,
    /// Variables.
    pub variables: usize,
    /// Runtime contexts.
    pub contexts: usize,
}

/// The issue's reference shape: 20 sections in all, 40 tools, 10 variables, 5 contexts.
pub const STANDARD: Shape = Shape {
    sections: 18,
    tools: 40,
    variables: 10,
    contexts: 5,
};

/// JSON parameters like a real coding tool's: several typed properties,
/// an enum, a nested object and an array.
pub fn parameters(index: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": format!("Absolute path of the file to operate on (tool {index}).") },
            "mode": { "type": "string", "enum": ["read", "write", "append"], "description": "How to open the file." },
            "range": {
                "type": "object",
                "properties": {
                    "start": { "type": "integer", "minimum": 1 },
                    "end": { "type": "integer", "minimum": 1 }
                },
                "required": ["start"]
            },
            "patterns": { "type": "array", "items": { "type": "string" }, "maxItems": 16 },
            "timeout_ms": { "type": "integer", "default": 30000 }
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

fn schema(index: usize) -> ProvidedSchema {
    ProvidedSchema {
        name: format!("tool_{index:04}"),
        description: Some(format!(
            "Tool number {index}: reads, edits or searches files in the workspace and reports the result."
        )),
        parameters: Some(parameters(index)),
        extra: serde_json::Map::new(),
        unclonable: None,
    }
}

/// Build a registry of this shape plus the scope whose layer shadows one
/// section. Texts mix static strings, providers and `{{variable}}` references.
pub fn registry(shape: Shape) -> (Registry, ScopeKey) {
    let registry = Registry::new(Config {
        persona: "You are a careful senior engineer. Prefer small, reviewed changes.".into(),
        ..Config::default()
    })
    .expect("valid config");
    for index in 0..shape.variables {
        let value = format!("value-{index}");
        registry
            .variable(
                None,
                &format!("var_{index}"),
                Rc::new(move |_, _| Ok(Some(value.clone()))),
            )
            .expect("valid variable");
    }
    for index in 0..shape.sections {
        let body = format!(
            "Guidance {index}: keep edits minimal, explain each change, and run the tests in {{{{var_{}}}}} before you finish.",
            index % shape.variables.max(1)
        );
        let text = if shape.variables == 0 {
            Text::Static(format!("Guidance {index}: keep edits minimal."))
        } else if index % 2 == 0 {
            Text::Static(body)
        } else {
            Text::Provider(Rc::new(move |_, _| Ok(Some(body.clone()))))
        };
        registry
            .section(
                None,
                NamedText {
                    name: format!("guide:{index:04}"),
                    order: (index % 7) as f64 * 10.0,
                    text,
                    complete: false,
                },
            )
            .expect("valid section");
    }
    let providers = 4usize;
    for provider in 0..providers {
        let schemas: Vec<ProvidedSchema> = (0..shape.tools)
            .filter(|i| i % providers == provider)
            .map(schema)
            .collect();
        // Like a real provider: the same schema objects every call.
        let result = ToolProviderResult {
            schemas: schemas.into(),
            known_names: None,
        };

        registry.tools(None, Rc::new(move |_, _| Ok(Some(result.clone()))));
    }
    for index in 0..shape.contexts {
        let text = format!("context {index}: sandbox on, approvals required for network access");
        registry
            .context(
                None,
                NamedText {
                    name: format!("ctx:{index}"),
                    order: index as f64,
                    text: Text::Static(text),
                    complete: false,
                },
            )
            .expect("valid context");
    }
    let scope = ScopeKey::new("agent");
    registry
        .section(
            Some(&scope),
            NamedText {
                name: "guide:0000".into(),
                order: 0.0,
                text: Text::Static(
                    "Scoped guidance replaces the global first guide for this agent.".into(),
                ),
                complete: false,
            },
        )
        .expect("valid scoped section");
    (registry, scope)
}

/// One step's assembly work: assemble for the scope, render the prompt and
/// the runtime-context snapshot. Returns the pieces so nothing is optimized away.
pub fn step(registry: &Registry, scope: &ScopeKey) -> (Assembly, String, String) {
    let context = AssembleContext {
        scope: Some(scope.clone()),
        ..AssembleContext::default()
    };
    let assembly = futures::executor::block_on(registry.assemble(context)).expect("assembles");
    let prompt = render_prompt(&assembly).expect("renders");
    let snapshot = render_context_snapshot(&assembly).expect("renders");
    (assembly, prompt, snapshot)
}

/// The copy bound for a step: the final section texts, context texts and
/// tool schemas, which a baseline only concatenates and clones.
pub struct CopyBound {
    /// Rendered section texts.
    pub sections: Vec<String>,
    /// Rendered context texts.
    pub contexts: Vec<String>,
    /// Final schemas.
    pub tools: Vec<ToolSchema>,
}

impl CopyBound {
    /// Take the final texts and schemas of a real step.
    pub fn of(registry: &Registry, scope: &ScopeKey) -> CopyBound {
        let (assembly, prompt, _) = step(registry, scope);
        CopyBound {
            sections: prompt.split("\n\n").map(str::to_string).collect(),
            contexts: assembly
                .contexts
                .iter()
                .filter_map(|c| c.text.clone())
                .collect(),
            tools: assembly.tools,
        }
    }

    /// Concatenate the texts and clone the schemas: no registry, no sorting,
    /// no interpolation.
    pub fn run(&self) -> (String, String, Vec<ToolSchema>) {
        (
            self.sections.join("\n\n"),
            self.contexts.join("\n\n"),
            self.tools.clone(),
        )
    }
}

/// A loop scenario of one turn with `rounds` tool round trips and a final
/// answer (`rounds + 1` steps), for the steps-per-second bench.
pub fn loop_scenario(rounds: usize) -> dshc_scenario::load::LoadedScenario {
    let mut responses = String::new();
    for round in 0..rounds {
        responses.push_str(&format!(
            "  {{ content = [\"Reading file {round}.\"], tool_calls = [{{ name = \"read\", arguments = [\"{{\\\"path\\\":\", \"\\\"{round}.txt\\\"}}\"] }}], finish_reason = \"tool_calls\" }},\n"
        ));
    }
    responses.push_str("  { content = [\"All \", \"done.\"] },\n");
    let source = format!(
        r#"format = 2
title = "bench"
covers = ["05:ORDER"]
level = "loop"

[config]
persona = "You are a careful senior engineer."

[provider]
responses = [
{responses}]

[[tool_results]]
name = "read"
text = "fn main() {{}}"

[[steps]]
do = "tools"
provider = {{ returns = {{ schemas = [{{ name = "read", description = "Read a file.", parameters = {{ type = "object", properties = {{ path = {{ type = "string" }} }} }} }}] }} }}

[[steps]]
do = "context"
name = "sandbox"
order = 0
text = "sandbox: on"

[[steps]]
do = "followup"
text = "Read the files and summarize."
"#
    );
    dshc_scenario::load::parse_scenario(std::path::Path::new("bench.toml"), &source)
        .expect("a valid bench scenario")
}
