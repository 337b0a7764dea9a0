//! Step inputs taken from an earlier step's observation (extension
//! `step_refs/1`).
//!
//! A scenario may capture a value an implementation returned (say the `seq`
//! of an event an `append` logged) and use it as a later step's input (the
//! `start` of a surface replacement), as upstream's own tests pass one
//! call's result to the next. The value exists only inside the run, so the
//! case cannot carry it: it carries a reference, `{"$from": {"step": i,
//! "path": [...]}}`, which the implementation replaces, just before running
//! the command, with what its own observation of command `i` holds at
//! `path` (object keys and array indexes). The compiler writes these from
//! the file's `{ "$ref" = "name" }` ([`crate::compile`]); [`resolve`] is the
//! one resolution the reference and `dshc adapter` use.

use serde_json::{Value, json};

use super::{AssemblyCommand, Command, LoopCommand, Observation};

/// Whether a command takes any JSON value somewhere, the only place a
/// reference can stand: a message's content and source, a cancel's reason,
/// an `append`'s data and surface metadata, a pre-step's messages, a header.
pub fn takes_json(command: &Command) -> bool {
    matches!(
        command,
        Command::Loop(
            LoopCommand::Followup(_)
                | LoopCommand::Steer(_)
                | LoopCommand::Inject(_)
                | LoopCommand::Cancel(_)
                | LoopCommand::Append(_)
                | LoopCommand::FirePreStep(_)
        ) | Command::Assembly(
            AssemblyCommand::CanonicalHeader(_)
                | AssemblyCommand::HeaderEquals(_)
                | AssemblyCommand::FoldHeader(_)
        )
    )
}

/// The key of a step reference object.
pub const FROM: &str = "$from";

/// A step input's reference: command `step`'s observation, at `path`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRef {
    /// The index of the earlier command (among the case's commands).
    pub step: usize,
    /// Object keys (strings) and array indexes (numbers), from the
    /// observation's root.
    pub path: Vec<Value>,
}

impl StepRef {
    /// The reference as it appears in a case.
    pub fn to_value(&self) -> Value {
        json!({ FROM: { "step": self.step, "path": self.path } })
    }

    /// `value` read as a reference: `None` when it is not one, an error
    /// when it is one of the wrong shape.
    pub fn of(value: &Value) -> Option<Result<StepRef, String>> {
        let object = value.as_object()?;
        let from = object.get(FROM)?;
        let shape = || {
            format!(
                "a step reference is `{{\"{FROM}\": {{\"step\": <earlier command index>, \"path\": [keys and indexes]}}}}` and nothing else, not {value}"
            )
        };
        let (Some(step), Some(path), 1, 2) = (
            from.get("step").and_then(Value::as_u64),
            from.get("path").and_then(Value::as_array),
            object.len(),
            from.as_object().map_or(0, |f| f.len()),
        ) else {
            return Some(Err(shape()));
        };
        if !path.iter().all(|p| p.is_string() || p.is_u64()) {
            return Some(Err(shape()));
        }
        Some(Ok(StepRef {
            step: step as usize,
            path: path.clone(),
        }))
    }

    /// The path as a reader writes it: `value.surface[0]`.
    pub fn path_text(&self) -> String {
        path_text(&self.path)
    }
}

/// A path as a reader writes it: keys joined by dots, indexes in brackets.
pub fn path_text(path: &[Value]) -> String {
    let mut text = String::new();
    for part in path {
        match part {
            Value::String(key) if text.is_empty() => text.push_str(key),
            Value::String(key) => {
                text.push('.');
                text.push_str(key);
            }
            other => text.push_str(&format!("[{other}]")),
        }
    }
    text
}

/// Visit every value of `value`, depth first, where `visit` returns `false`
/// (a reference is not looked into).
fn walk(
    value: &mut Value,
    visit: &mut impl FnMut(&mut Value) -> Result<bool, String>,
) -> Result<(), String> {
    if !visit(value)? {
        return Ok(());
    }
    match value {
        Value::Array(items) => items.iter_mut().try_for_each(|item| walk(item, visit)),
        Value::Object(fields) => fields.values_mut().try_for_each(|field| walk(field, visit)),
        _ => Ok(()),
    }
}

/// Every step reference in a command, in the order written.
pub fn refs_in(command: &Command) -> Result<Vec<StepRef>, String> {
    if !takes_json(command) {
        return Ok(Vec::new());
    }
    let mut value = serde_json::to_value(command).map_err(|e| e.to_string())?;
    let mut found = Vec::new();
    walk(&mut value, &mut |v| match StepRef::of(v) {
        None => Ok(true),
        Some(reference) => {
            found.push(reference?);
            Ok(false)
        }
    })?;
    Ok(found)
}

/// Whether any command of `commands` takes a value from an earlier one.
pub fn uses_step_refs<'a>(commands: impl IntoIterator<Item = &'a Command>) -> bool {
    commands
        .into_iter()
        .any(|command| refs_in(command).is_ok_and(|refs| !refs.is_empty()))
}

/// `command` with each reference replaced by what `observations` (those of
/// the commands before it, in order) hold there. A reference to nothing is
/// the command's error, in words every implementation uses.
pub fn resolve(command: &Command, observations: &[Observation]) -> Result<Command, String> {
    if !takes_json(command) {
        return Ok(command.clone());
    }
    let mut value = serde_json::to_value(command).map_err(|e| e.to_string())?;
    let mut resolved = false;
    walk(&mut value, &mut |v| {
        let Some(reference) = StepRef::of(v) else {
            return Ok(true);
        };
        let reference = reference?;
        let found = observations
            .get(reference.step)
            .and_then(|observation| serde_json::to_value(observation).ok())
            .and_then(|observed| lookup(&observed, &reference.path).cloned());
        *v = found.ok_or_else(|| {
            format!(
                "a step input takes command {}'s {}, which its observation does not hold",
                reference.step,
                reference.path_text()
            )
        })?;
        resolved = true;
        Ok(false)
    })?;
    if !resolved {
        return Ok(command.clone());
    }
    serde_json::from_value(value).map_err(|e| format!("a step input, once resolved: {e}"))
}

/// The value at `path` in `value`.
fn lookup<'v>(value: &'v Value, path: &[Value]) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, part| match part {
        Value::String(key) => value.get(key),
        Value::Number(index) => value.get(usize::try_from(index.as_u64()?).ok()?),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AssemblyCommand, FoldHeaderCommand, JsJson};

    fn fold(events: Value) -> Command {
        Command::Assembly(AssemblyCommand::FoldHeader(FoldHeaderCommand {
            events: JsJson(events),
            baseline: None,
        }))
    }

    #[test]
    fn a_reference_is_replaced_by_the_value_the_observation_holds() {
        let reference = StepRef {
            step: 0,
            path: vec![json!("value"), json!("log"), json!(1)],
        };
        let command = fold(json!([reference.to_value()]));
        assert_eq!(refs_in(&command).unwrap(), vec![reference]);
        let observation = Observation {
            value: Some(json!({"log": ["a", {"type": "x"}]})),
            ..Observation::default()
        };
        assert_eq!(
            resolve(&command, &[observation]).unwrap(),
            fold(json!([{"type": "x"}]))
        );
    }

    #[test]
    fn a_reference_to_nothing_is_an_error_naming_the_path() {
        let command = fold(json!([StepRef {
            step: 0,
            path: vec![json!("value"), json!(3)]
        }
        .to_value()]));
        assert_eq!(
            resolve(&command, &[Observation::default()]).unwrap_err(),
            "a step input takes command 0's value[3], which its observation does not hold"
        );
        assert!(resolve(&command, &[]).is_err());
    }

    #[test]
    fn a_reference_of_the_wrong_shape_is_refused() {
        for wrong in [
            json!({"$from": {"step": 0}}),
            json!({"$from": {"step": 0, "path": [true]}}),
            json!({"$from": {"step": 0, "path": []}, "more": 1}),
        ] {
            assert!(StepRef::of(&wrong).unwrap().is_err(), "{wrong}");
        }
        assert!(StepRef::of(&json!({"step": 0})).is_none());
    }
}
