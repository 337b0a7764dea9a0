//! What the criterion benches measure: the shared fixtures in
//! `benches/fixtures/` (the same files `dshc bench` sends every
//! implementation), the copy bound, and a loop scenario for steps per second.
//!
//! They live in a library so the benches and their sanity tests build the
//! very same registries.

use std::path::PathBuf;
use std::rc::Rc;

use dshc_model::render::{EntryKind, SNAPSHOT_PREAMBLE, interpolate_into};
use dshc_model::{Assembly, PromptEntry, ToolSchema, Variables};
use dshc_reference::bench::BenchRig;
use dshc_reference::bench::fixture::load_fixture;

/// The folder of the shared fixtures.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The rig of fixture `id` (`standard`, `scaling-100`, …).
pub fn rig(id: &str) -> BenchRig {
    let fixture =
        load_fixture(&fixtures_dir().join(format!("{id}.toml"))).expect("a valid fixture");
    BenchRig::new(&fixture.case).expect("the fixture builds")
}

/// The least work any correct implementation must do per step, given the
/// final assembly: interpolate every section and context (their texts and
/// variables may differ at every step, since providers run each time), join
/// them, and hand out the tool list, whose schemas can be shared and copied
/// only on write. No registry walk, no shadowing, no sorting, no provider
/// calls, no schema copies.
pub struct CopyBound {
    sections: Vec<PromptEntry>,
    contexts: Vec<PromptEntry>,
    variables: Variables,
    tools: Vec<Rc<ToolSchema>>,
}

impl CopyBound {
    /// Take the final sections, contexts, variables and schemas of a step.
    pub fn of(assembly: Assembly) -> CopyBound {
        CopyBound {
            sections: assembly.sections,
            contexts: assembly.contexts,
            variables: assembly.variables,
            tools: assembly.tools,
        }
    }

    /// Interpolate and join; share the schemas.
    pub fn run(&self) -> (String, String, Vec<Rc<ToolSchema>>) {
        let join = |entries: &[PromptEntry], kind, prefix: &str| {
            let mut out = String::from(prefix);
            for entry in entries {
                let before = out.len();
                if before > prefix.len() {
                    out.push_str("\n\n");
                }
                let start = out.len();
                let text = entry.text.as_deref();
                if interpolate_into(&mut out, &entry.name, text, &self.variables, kind).is_err()
                    || out.len() == start
                {
                    out.truncate(before);
                }
            }
            if out.len() == prefix.len() {
                out.clear();
            }
            out
        };
        (
            join(&self.sections, EntryKind::Section, ""),
            join(&self.contexts, EntryKind::Context, SNAPSHOT_PREAMBLE),
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
