//! A deliberately buggy implementation for testing dshc itself: `dshc
//! adapter` (the reference over the adapter protocol), with one planted bug
//! chosen on the command line: `mutant_adapter <mutation>`. It exists so
//! that a test can check that `dshc diff` finds a bug and writes a
//! regression file that fails on the buggy port and passes on the
//! reference (`harness/cli/tests/it/planted_bugs.rs`).
//!
//! Each mutation is a plausible porting bug stated over what any case
//! observes (every assembly, every command, every loop run), never tuned to
//! one scenario; the reference itself is untouched: the bug is applied to
//! each `result` reply on its way out. It is an example, not a binary of the
//! `dshc` package, so it is built by `cargo test` and never installed.
//!
//! `mutant_adapter --list` prints the mutations, one per line.

use std::io::Write;

use dshc_model::session::event_kind;
use dshc_scenario::protocol::{
    CaseResult, EntryData, Observation, ObservedError, Rendered, RenderedSections,
};
use serde_json::Value;

/// Every planted bug: its name, and what the buggy port does.
const MUTATIONS: &[(&str, &str)] = &[
    (
        "sections-reversed",
        "reports an assembly's sections in reverse order",
    ),
    (
        "last-context-dropped",
        "leaves an assembly's last context out",
    ),
    (
        "last-variable-dropped",
        "leaves an assembly's last variable out",
    ),
    ("extra-dropped", "loses an assembly's extra fields"),
    (
        "tools-reversed",
        "reports an assembly's tools in reverse order",
    ),
    ("changes-doubled", "counts every change event twice"),
    (
        "journal-last-dropped",
        "misses the last provider or listener call of every command",
    ),
    (
        "errors-plain",
        "throws a plain Error where the contract throws a TypeError or another class",
    ),
    (
        "prompt-trimmed",
        "trims trailing whitespace off every rendered prompt",
    ),
    (
        "non-ascii-escaped",
        "writes non-ASCII characters of section texts and prompts as \\uXXXX escapes",
    ),
    (
        "loop-status-flipped",
        "reports the opposite final status of a loop run",
    ),
    (
        "loop-last-event-dropped",
        "loses the last event of the session log",
    ),
    (
        "loop-pending-miscounted",
        "counts one pending next-turn item too many",
    ),
    (
        "loop-errors-unlogged",
        "never reports live agent/error events",
    ),
    (
        "loop-request-tools-reversed",
        "sends a request's tool schemas in reverse order",
    ),
];

fn main() -> std::process::ExitCode {
    let argument = std::env::args().nth(1).unwrap_or_default();
    if argument == "--list" {
        for (name, what) in MUTATIONS {
            println!("{name}\t{what}");
        }
        return std::process::ExitCode::SUCCESS;
    }
    let Some(&(mutation, _)) = MUTATIONS.iter().find(|(name, _)| *name == argument) else {
        let names: Vec<&str> = MUTATIONS.iter().map(|(name, _)| *name).collect();
        eprintln!(
            "usage: mutant_adapter <mutation>; one of: {}",
            names.join(", ")
        );
        return std::process::ExitCode::from(2);
    };
    let stdin = std::io::BufReader::new(std::io::stdin());
    let stdout = Mutating {
        mutation,
        pending: Vec::new(),
        inner: std::io::stdout(),
    };
    match dshc_reference::serve::serve(stdin, stdout) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mutant_adapter: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The adapter's stdout: each complete line is passed on, a `result` reply
/// with the mutation applied to its case result.
struct Mutating<W: Write> {
    mutation: &'static str,
    pending: Vec<u8>,
    inner: W,
}

impl<W: Write> Write for Mutating<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = mutated_line(self.mutation, &line[..line.len() - 1]);
            self.inner.write_all(&line)?;
            self.inner.write_all(b"\n")?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// One reply line with the mutation applied (other lines unchanged).
fn mutated_line(mutation: &str, line: &[u8]) -> Vec<u8> {
    let Ok(mut reply) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    // What the provider receives is observed by dshc itself, on the
    // virtual-time bridge: a request bug is planted in the request.
    if let Some(request) = reply.get_mut("provider_request") {
        if mutation == "loop-request-tools-reversed" && reversed_tools(request) {
            return serde_json::to_vec(&reply).unwrap_or_else(|_| line.to_vec());
        }
        return line.to_vec();
    }
    let Some(result) = reply.get_mut("result") else {
        return line.to_vec();
    };
    let Ok(mut case_result) = serde_json::from_value::<CaseResult>(result.take()) else {
        return line.to_vec();
    };
    mutate(mutation, &mut case_result);
    *result = serde_json::to_value(&case_result).unwrap_or(Value::Null);
    serde_json::to_vec(&reply).unwrap_or_else(|_| line.to_vec())
}

fn mutate(mutation: &str, result: &mut CaseResult) {
    if let Some(error) = &mut result.config_error {
        mutate_error(mutation, error);
    }
    for observation in &mut result.observations {
        mutate_observation(mutation, observation);
    }
    if let Some(run) = &mut result.run {
        match mutation {
            "loop-status-flipped" => {
                run.status = if run.status == "idle" {
                    "running".into()
                } else {
                    "idle".into()
                };
            }
            "loop-last-event-dropped" => {
                run.log.pop();
            }
            "loop-pending-miscounted" => run.pending[0] += 1,
            "loop-errors-unlogged" => run
                .live_events
                .retain(|event| event["type"] != event_kind::AGENT_ERROR),
            _ => {}
        }
    }
}

/// Reverse the `tools` of a `provider_request`'s JSON body (a string);
/// whether there was a body with tools to reverse.
fn reversed_tools(request: &mut Value) -> bool {
    let Some(text) = request.get("body").and_then(Value::as_str) else {
        return false;
    };
    let Ok(mut body) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) else {
        return false;
    };
    if tools.len() < 2 {
        return false;
    }
    tools.reverse();
    request["body"] = Value::String(body.to_string());
    true
}

fn mutate_error(mutation: &str, error: &mut ObservedError) {
    if mutation == "errors-plain" {
        error.name = "Error".into();
    }
}

fn mutate_observation(mutation: &str, observation: &mut Observation) {
    if let Some(error) = &mut observation.error {
        mutate_error(mutation, error);
    }
    for rendered in [&mut observation.prompt, &mut observation.snapshot]
        .into_iter()
        .flatten()
    {
        if let Rendered::Error(error) = rendered {
            mutate_error(mutation, error);
        }
    }
    if let Some(RenderedSections::Error(error)) = &mut observation.snapshot_sections {
        mutate_error(mutation, error);
    }
    match mutation {
        "changes-doubled" => observation.changes *= 2,
        "journal-last-dropped" => {
            observation.journal.pop();
        }
        "prompt-trimmed" => {
            if let Some(Rendered::Text(text)) = &mut observation.prompt {
                text.truncate(text.trim_end().len());
            }
        }
        "non-ascii-escaped" => {
            if let Some(Rendered::Text(text)) = &mut observation.prompt {
                *text = escaped(text);
            }
        }
        _ => {}
    }
    let Some(assembly) = &mut observation.assembly else {
        return;
    };
    match mutation {
        "sections-reversed" => assembly.sections.reverse(),
        "last-context-dropped" => {
            assembly.contexts.pop();
        }
        "last-variable-dropped" => {
            assembly.variables.pop();
        }
        "extra-dropped" => assembly.extra.clear(),
        "tools-reversed" => assembly.tools.reverse(),
        "non-ascii-escaped" => {
            for EntryData { text, .. } in &mut assembly.sections {
                if let Some(text) = text {
                    *text = escaped(text);
                }
            }
        }
        _ => {}
    }
}

/// `text` with every non-ASCII character as `\uXXXX` (UTF-16 units).
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}
