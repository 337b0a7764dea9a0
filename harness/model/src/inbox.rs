//! The agent inbox (spec 05 §3.1, 08 C1): pending `next-turn` prompts and
//! `next-step` input, every change logged as an `agent/inbox/spliced` event
//! before the projection changes, so a log replays to the same inbox.

use std::cell::{Ref, RefCell};

use serde_json::{Map, Value, json};

use super::js::JsError;
use super::session::{Session, SurfaceMeta, event_kind};

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
///
/// Its lists sit in their own cell, borrowed only to read or to apply a
/// change, never while the change's event is told to session observers:
/// an observer reads the lists as they were before the change (the event
/// is logged first), and an observer's own change is refused by the
/// session's reentrancy rule unless it changes nothing, as in dsh.
pub struct Inbox {
    session: Session,
    lists: RefCell<Lists>,
}

#[derive(Default)]
struct Lists {
    next_turn: Vec<Value>,
    next_step: Vec<Value>,
}

impl Lists {
    fn get(&self, target: Target) -> &Vec<Value> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    fn get_mut(&mut self, target: Target) -> &mut Vec<Value> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
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
        let list = self.get_mut(target);
        if start > list.len() || start + removed > list.len() {
            return Err(JsError::error("invalid inbox splice"));
        }
        list.splice(start..start + removed, inserted);
        Ok(())
    }
}

impl Inbox {
    /// Replay the splices logged after the seed boundary (`header.seedLength`,
    /// 0 for a resumed session built from its whole log).
    pub fn replay(session: &Session, from_seq: u64) -> Result<Inbox, JsError> {
        let mut lists = Lists::default();
        session.with_events(|events| {
            for event in events.iter().skip(from_seq as usize) {
                if event.kind != event_kind::AGENT_INBOX_SPLICED {
                    continue;
                }
                lists.apply(&event.data).map_err(|error| {
                    JsError::error(format!(
                        "invalid persisted inbox splice at session seq {}",
                        event.seq
                    ))
                    .with_cause(error)
                })?;
            }
            Ok::<(), JsError>(())
        })?;
        Ok(Inbox {
            session: session.clone(),
            lists: RefCell::new(lists),
        })
    }

    /// Pending prompts.
    pub fn next_turn(&self) -> Ref<'_, [Value]> {
        Ref::map(self.lists.borrow(), |lists| lists.next_turn.as_slice())
    }

    /// Pending step input.
    pub fn next_step(&self) -> Ref<'_, [Value]> {
        Ref::map(self.lists.borrow(), |lists| lists.next_step.as_slice())
    }

    /// Whether anything is pending.
    pub fn has_pending(&self) -> bool {
        let lists = self.lists.borrow();
        !lists.next_turn.is_empty() || !lists.next_step.is_empty()
    }

    /// Apply a splice with JavaScript `Array.splice` bounds, log it, and
    /// return what was removed. `discard` marks removals as `canceled`. A
    /// splice that changes nothing logs nothing.
    fn mutate(
        &self,
        target: Target,
        start: usize,
        delete_count: usize,
        inserted: Vec<Value>,
        discard: bool,
    ) -> Result<Vec<Value>, JsError> {
        let (start, delete_count, length) = {
            let lists = self.lists.borrow();
            let list = lists.get(target);
            let length = list.len();
            let start = start.min(length);
            let delete_count = delete_count.min(length - start);
            if delete_count == 0 && inserted.is_empty() {
                return Ok(Vec::new());
            }
            // The list after the splice, beside the other list: every id once.
            let candidate = list[..start]
                .iter()
                .chain(&inserted)
                .chain(&list[start + delete_count..]);
            let other = match target {
                Target::NextTurn => &lists.next_step,
                Target::NextStep => &lists.next_turn,
            };
            let mut ids = std::collections::BTreeSet::new();
            for message in candidate.chain(other) {
                if !ids.insert(message["id"].to_string()) {
                    return Err(JsError::error(format!(
                        "message \"{}\" is already pending",
                        message["id"].as_str().unwrap_or_default()
                    )));
                }
            }
            (start, delete_count, length)
        };
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
        // No borrow is held here: observers told of the splice may read the
        // inbox, and any change of theirs that would log is refused.
        self.session.append(
            event_kind::AGENT_INBOX_SPLICED,
            Value::Object(splice),
            SurfaceMeta::default(),
        )?;
        let mut lists = self.lists.borrow_mut();
        let list = lists.get_mut(target);
        // Nothing else could change the list meanwhile: a change logs first.
        debug_assert_eq!(list.len(), length);
        Ok(list.splice(start..start + delete_count, inserted).collect())
    }

    /// `splice(target, start, deleteCount, inserted)`; removals are `canceled`.
    pub fn splice(
        &self,
        target: Target,
        start: usize,
        delete_count: usize,
        inserted: Vec<Value>,
    ) -> Result<Vec<Value>, JsError> {
        self.mutate(target, start, delete_count, inserted, true)
    }

    /// Append at the end of a list.
    pub fn append(&self, target: Target, message: Value) -> Result<(), JsError> {
        let end = self.lists.borrow().get(target).len();
        self.splice(target, end, 0, vec![message]).map(drop)
    }

    /// Claim the batch for one step: all next-step input, then (for a
    /// `next-turn` boundary) the first prompt. Pure deletions, no outcome.
    pub fn claim(&self, target: Target) -> Result<Vec<Value>, JsError> {
        let steps = self.next_step().len();
        let mut claimed = self.mutate(Target::NextStep, 0, steps, Vec::new(), false)?;
        if target == Target::NextTurn {
            claimed.extend(self.mutate(Target::NextTurn, 0, 1, Vec::new(), false)?);
        }
        Ok(claimed)
    }

    /// Durably cancel everything pending: next-step first, then next-turn.
    pub fn clear(&self) -> Result<(), JsError> {
        let steps = self.next_step().len();
        self.splice(Target::NextStep, 0, steps, Vec::new())?;
        let turns = self.next_turn().len();
        self.splice(Target::NextTurn, 0, turns, Vec::new())?;
        Ok(())
    }

    /// Remove every pending message matching `predicate` (each removal a
    /// logged, canceled splice), returning how many were removed.
    pub fn remove_where(
        &self,
        target: Target,
        predicate: impl Fn(&Value) -> bool,
    ) -> Result<usize, JsError> {
        let mut removed = 0;
        loop {
            let found = self.lists.borrow().get(target).iter().position(&predicate);
            let Some(index) = found else { break };
            self.splice(target, index, 1, Vec::new())?;
            removed += 1;
        }
        Ok(removed)
    }
}
