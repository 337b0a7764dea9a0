//! The agent inbox (spec 05 §3.1, 08 C1): pending `next-turn` prompts and
//! `next-step` input, every change logged as an `agent/inbox/spliced` event
//! before the projection changes, so a log replays to the same inbox.

use serde_json::{Map, Value, json};

use super::js::JsError;
use super::session::{Session, SurfaceMeta};

/// Which pending list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Prompts, one per turn.
    NextTurn,
    /// Input for the next step boundary.
    NextStep,
}

impl Target {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::NextTurn => "next-turn",
            Target::NextStep => "next-step",
        }
    }

    fn parse(text: &str) -> Option<Target> {
        match text {
            "next-turn" => Some(Target::NextTurn),
            "next-step" => Some(Target::NextStep),
            _ => None,
        }
    }
}

/// The inbox projection over a session's splice events.
pub struct Inbox {
    session: Session,
    next_turn: Vec<Value>,
    next_step: Vec<Value>,
}

impl Inbox {
    /// Replay the splices logged after the seed boundary (`header.seedLength`,
    /// 0 for a resumed session built from its whole log).
    pub fn replay(session: &Session, from_seq: u64) -> Result<Inbox, JsError> {
        let mut inbox = Inbox {
            session: session.clone(),
            next_turn: Vec::new(),
            next_step: Vec::new(),
        };
        let splices: Vec<(u64, Value)> = session.with_events(|events| {
            events
                .iter()
                .skip(from_seq as usize)
                .filter(|event| event.kind == "agent/inbox/spliced")
                .map(|event| (event.seq, event.data.clone()))
                .collect()
        });
        for (seq, data) in splices {
            inbox.apply(&data).map_err(|error| {
                JsError::error(format!(
                    "invalid persisted inbox splice at session seq {seq}"
                ))
                .with_cause(error)
            })?;
        }
        Ok(inbox)
    }

    fn list(&mut self, target: Target) -> &mut Vec<Value> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Pending prompts.
    pub fn next_turn(&self) -> &[Value] {
        &self.next_turn
    }

    /// Pending step input.
    pub fn next_step(&self) -> &[Value] {
        &self.next_step
    }

    /// Whether anything is pending.
    pub fn has_pending(&self) -> bool {
        !self.next_turn.is_empty() || !self.next_step.is_empty()
    }

    fn apply(&mut self, splice: &Value) -> Result<(), JsError> {
        let target = splice["target"]
            .as_str()
            .and_then(Target::parse)
            .ok_or_else(|| JsError::error("invalid inbox splice"))?;
        let start = splice["start"]
            .as_u64()
            .ok_or_else(|| JsError::error("invalid inbox splice"))? as usize;
        let removed = splice
            .get("removedCount")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let inserted = splice["inserted"].as_array().cloned().unwrap_or_default();
        let list = self.list(target);
        if start > list.len() || start + removed > list.len() {
            return Err(JsError::error("invalid inbox splice"));
        }
        list.splice(start..start + removed, inserted);
        Ok(())
    }

    /// Apply a splice with JavaScript `Array.splice` bounds, log it, and
    /// return what was removed. `discard` marks removals as `canceled`.
    fn mutate(
        &mut self,
        target: Target,
        start: usize,
        delete_count: usize,
        inserted: Vec<Value>,
        discard: bool,
    ) -> Result<Vec<Value>, JsError> {
        let length = self.list(target).len();
        let start = start.min(length);
        let delete_count = delete_count.min(length - start);
        if delete_count == 0 && inserted.is_empty() {
            return Ok(Vec::new());
        }
        let mut candidate = self.list_ref(target).clone();
        candidate.splice(start..start + delete_count, inserted.iter().cloned());
        let other = match target {
            Target::NextTurn => &self.next_step,
            Target::NextStep => &self.next_turn,
        };
        let mut ids = std::collections::BTreeSet::new();
        for message in candidate.iter().chain(other) {
            let id = message["id"].to_string();
            if !ids.insert(id) {
                return Err(JsError::error(format!(
                    "message \"{}\" is already pending",
                    message["id"].as_str().unwrap_or_default()
                )));
            }
        }
        let mut splice = Map::new();
        splice.insert("target".into(), json!(target.as_str()));
        splice.insert("start".into(), json!(start));
        if delete_count > 0 {
            splice.insert("removedCount".into(), json!(delete_count));
        }
        splice.insert("inserted".into(), Value::Array(inserted.clone()));
        if discard && delete_count > 0 {
            splice.insert("outcome".into(), json!("canceled"));
        }
        self.session.append(
            "agent/inbox/spliced",
            Value::Object(splice),
            SurfaceMeta::default(),
        )?;
        let removed: Vec<Value> = self
            .list(target)
            .splice(start..start + delete_count, inserted)
            .collect();
        // Paired with the check above: the list is the candidate that was
        // validated and logged.
        debug_assert_eq!(self.list_ref(target), &candidate);
        Ok(removed)
    }

    fn list_ref(&self, target: Target) -> &Vec<Value> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    /// `splice(target, start, deleteCount, inserted)`; removals are `canceled`.
    pub fn splice(
        &mut self,
        target: Target,
        start: usize,
        delete_count: usize,
        inserted: Vec<Value>,
    ) -> Result<Vec<Value>, JsError> {
        self.mutate(target, start, delete_count, inserted, true)
    }

    /// Append at the end of a list.
    pub fn append(&mut self, target: Target, message: Value) -> Result<(), JsError> {
        let end = self.list_ref(target).len();
        self.splice(target, end, 0, vec![message]).map(drop)
    }

    /// Claim the batch for one step: all next-step input, then (for a
    /// `next-turn` boundary) the first prompt. Pure deletions, no outcome.
    pub fn claim(&mut self, target: Target) -> Result<Vec<Value>, JsError> {
        let steps = self.next_step.len();
        let mut claimed = self.mutate(Target::NextStep, 0, steps, Vec::new(), false)?;
        if target == Target::NextTurn {
            claimed.extend(self.mutate(Target::NextTurn, 0, 1, Vec::new(), false)?);
        }
        Ok(claimed)
    }

    /// Durably cancel everything pending: next-step first, then next-turn.
    pub fn clear(&mut self) -> Result<(), JsError> {
        let steps = self.next_step.len();
        self.splice(Target::NextStep, 0, steps, Vec::new())?;
        let turns = self.next_turn.len();
        self.splice(Target::NextTurn, 0, turns, Vec::new())?;
        Ok(())
    }

    /// Remove every pending message matching `predicate` (each removal a
    /// logged, canceled splice), returning how many were removed.
    pub fn remove_where(
        &mut self,
        target: Target,
        predicate: impl Fn(&Value) -> bool,
    ) -> Result<usize, JsError> {
        let mut removed = 0;
        while let Some(index) = self.list_ref(target).iter().position(&predicate) {
            self.splice(target, index, 1, Vec::new())?;
            removed += 1;
        }
        Ok(removed)
    }
}
