//! Captured values as step inputs: `{ "$ref" = "name" }` inside a value a
//! step passes on (an `append`'s data or surface metadata, a header, a
//! pre-step message) stands for what an earlier step's `expect.value`
//! captured under `name`. The value exists only inside the run, so the
//! case carries a reference to that step's observation instead
//! ([`crate::protocol::step_refs`]), which the implementation resolves.
//!
//! Only a capture at a fixed place of the value (object keys and array
//! indexes) can be pointed at; one under `$contains`, `$some` or another
//! operator that searches is made wherever that operator matched.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{CompileError, fail};
use crate::format::Scenario;
use crate::protocol::Command;
use crate::protocol::step_refs::{StepRef, path_text, refs_in, takes_json};

/// Where a name is captured at a fixed place: the step, and the path in
/// that step's observation.
type FixedCaptures = BTreeMap<String, (usize, Vec<Value>)>;

/// Replace every `{ "$ref" = name }` in the steps' commands (after `binds`
/// scope bindings in `commands`) by a reference to the observation of the
/// earlier step that captured `name`.
pub(super) fn bind_step_refs(
    scenario: &Scenario,
    binds: usize,
    commands: &mut [Command],
) -> Result<(), CompileError> {
    let mut fixed = FixedCaptures::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        let path = format!("steps[{index}]");
        let command = &mut commands[binds + index];
        let value = takes_json(command)
            .then(|| serde_json::to_value(&*command).ok())
            .flatten();
        if let Some(mut value) = value {
            bind_refs_in(&path, &mut value, &fixed, binds)?;
            // Every field that can hold a `$ref` takes any JSON value, so
            // the command reads back as it was, the references in place.
            if let Ok(bound) = serde_json::from_value(value) {
                *command = bound;
            }
        }
        note_captures(&mut fixed, index, step);
    }
    Ok(())
}

/// Replace the `$ref`s in one command's `value` (at `path`), each by a
/// reference to the earlier step that captured its name.
fn bind_refs_in(
    path: &str,
    value: &mut Value,
    fixed: &FixedCaptures,
    binds: usize,
) -> Result<(), CompileError> {
    let mut unbound = None;
    replace_refs(
        value,
        &mut Vec::new(),
        &mut |at, name| match fixed.get(name) {
            Some((step, observed)) => Some(
                StepRef {
                    step: binds + step,
                    path: observed.clone(),
                }
                .to_value(),
            ),
            None => {
                unbound.get_or_insert_with(|| (path_text(at), name.to_owned()));
                None
            }
        },
    );
    match unbound {
        Some((at, name)) => fail(
            &format!("{path}.{at}"),
            format!(
                "`{{ \"$ref\" = {name:?} }}` in a step input takes the value an earlier step's \
                 `expect.value` captured under {name:?}, at a fixed place (keys and indexes, no \
                 searching operator around it); no earlier step captures it so"
            ),
        ),
        None => Ok(()),
    }
}

/// Note what step `index`'s `expect.value` captures at a fixed place (the
/// first capture of a name is where a later input reads it).
fn note_captures(fixed: &mut FixedCaptures, index: usize, step: &crate::format::Step) {
    let captured = step
        .command_expect()
        .and_then(|expect| expect.value.as_ref())
        .and_then(|pattern| pattern.tree().ok())
        .map(|tree| tree.fixed_captures(&[json!("value")]))
        .unwrap_or_default();
    for (name, observed) in captured {
        fixed.entry(name).or_insert((index, observed));
    }
}

/// Replace each `{"$ref": name}` object in `value` by `with(path, name)`,
/// where it gives a value.
fn replace_refs(
    value: &mut Value,
    path: &mut Vec<Value>,
    with: &mut impl FnMut(&[Value], &str) -> Option<Value>,
) {
    if let Some(name) = ref_name(value) {
        if let Some(replacement) = with(path, &name) {
            *value = replacement;
        }
        return;
    }
    let parts: Vec<(Value, &mut Value)> = match value {
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .map(|(index, item)| (json!(index), item))
            .collect(),
        Value::Object(fields) => fields
            .iter_mut()
            .map(|(key, item)| (json!(key), item))
            .collect(),
        _ => Vec::new(),
    };
    for (part, item) in parts {
        path.push(part);
        replace_refs(item, path, with);
        path.pop();
    }
}

/// The name of a `{"$ref": name}` object.
fn ref_name(value: &Value) -> Option<String> {
    let object: &Map<String, Value> = value.as_object()?;
    match (object.len(), object.get("$ref")) {
        (1, Some(Value::String(name))) => Some(name.clone()),
        _ => None,
    }
}

/// Every step reference of a case (a compiled one, or one a file states in
/// the protocol's own form) is well formed and points at an earlier command.
pub(super) fn check_step_refs(
    index: usize,
    path: &str,
    command: &Command,
) -> Result<(), CompileError> {
    let refs = match refs_in(command) {
        Ok(refs) => refs,
        Err(message) => return fail(path, message),
    };
    match refs.iter().find(|r| r.step >= index) {
        Some(r) => fail(
            path,
            format!(
                "a step input takes command {}'s {}, which does not run before it",
                r.step,
                r.path_text()
            ),
        ),
        None => Ok(()),
    }
}
