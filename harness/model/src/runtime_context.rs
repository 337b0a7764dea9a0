//! The runtime-context projection (spec 06): decide, once per proposed step,
//! whether the rendered context snapshot must be re-asserted to the model.
//!
//! The projection never commits its own candidate: it only follows owned
//! messages that actually reach the log, so a dropped or rejected candidate
//! is proposed again at the next step.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Value, json};

use super::assembly::PromptEntry;
use super::render::SNAPSHOT_PREAMBLE;
use super::session::{Event, Session, SurfaceOp};
use crate::session::event_kind;

/// The plugin id that owns runtime-context snapshot messages.
pub const SOURCE: &str = "@deepseek-ai/dsh-system-prompt";
/// The tombstone text.
pub const CLEARED: &str =
    "Current runtime context: none. Earlier runtime-context snapshots no longer apply.";

/// What is retained on the surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retained {
    /// No owned snapshot was ever seen.
    Never,
    /// One existed but none is retained on the surface.
    Cleared,
    /// This snapshot is retained.
    Snapshot {
        /// Its event seq.
        seq: u64,
        /// Its text when the content is exactly one text block.
        text: Option<String>,
    },
}

/// Whether a user message is owned by the projection.
pub fn is_owned(message: &Value) -> bool {
    message["source"]["kind"] == "plugin" && message["source"]["plugin"] == SOURCE
}

/// Whether an owned message's text is what the projection renders for its
/// own source (the joined `sections` after the preamble, or the tombstone
/// when it has none), that is, no pre-step listener rewrote it (06 RC4). The
/// projection compares the next rendering with the logged text, so it may
/// legitimately log the same rewritten text again.
pub fn renders_own_source(message: &Value, text: &str) -> bool {
    match message["source"]["sections"].as_array() {
        Some(sections) => {
            let body: Vec<&str> = sections.iter().filter_map(|s| s["text"].as_str()).collect();
            text == format!("{SNAPSHOT_PREAMBLE}{}", body.join("\n\n"))
        }
        None => text == CLEARED,
    }
}

fn text_of(message: &Value) -> Option<String> {
    let content = message.get("content")?.as_array()?;
    match content.as_slice() {
        [block] if block["type"] == "text" => block["text"].as_str().map(str::to_string),
        _ => None,
    }
}

/// The projection state, following the session's events.
#[derive(Clone)]
pub struct RuntimeContextProjection {
    retained: Rc<RefCell<Retained>>,
}

impl RuntimeContextProjection {
    /// Restore from the log (RC1), then follow new events (RC2).
    pub fn attach(session: &Session) -> RuntimeContextProjection {
        let surface = session.surface_nodes();
        let retained = session.with_events(|events| {
            let mut retained = Retained::Never;
            for event in events.iter().rev() {
                if event.kind != event_kind::USER_MESSAGE || !is_owned(&event.data) {
                    continue;
                }
                if retained == Retained::Never {
                    retained = Retained::Cleared;
                }
                if surface.contains(&event.seq) {
                    retained = Retained::Snapshot {
                        seq: event.seq,
                        text: text_of(&event.data),
                    };
                    break;
                }
            }
            retained
        });
        let projection = RuntimeContextProjection {
            retained: Rc::new(RefCell::new(retained)),
        };
        let state = projection.retained.clone();
        session.subscribe(Rc::new(move |event: &Event| {
            follow(&state, event);
            Ok(())
        }));
        projection
    }

    /// The current state.
    pub fn retained(&self) -> Retained {
        self.retained.borrow().clone()
    }

    /// Whether logging `message` now would break change-only snapshot
    /// logging: an owned message that renders its own source and repeats
    /// the retained snapshot, or a tombstone when no snapshot ever existed.
    pub fn would_repeat(&self, message: &Value) -> bool {
        if !is_owned(message) {
            return false;
        }
        match (&*self.retained.borrow(), text_of(message)) {
            (
                Retained::Snapshot {
                    text: Some(retained),
                    ..
                },
                Some(text),
            ) => *retained == text && renders_own_source(message, &text),
            (Retained::Never, Some(text)) => text == CLEARED,
            _ => false,
        }
    }

    /// The candidate message content and source for this step, or `None`
    /// (the table of 06 §3). The caller mints the message id.
    pub fn project(&self, current: &str, sections: &[PromptEntry]) -> Option<(Value, Value)> {
        let retained = self.retained.borrow();
        if *retained == Retained::Never && current.is_empty() {
            return None;
        }
        let snapshot = if current.is_empty() { CLEARED } else { current };
        if let Retained::Snapshot {
            text: Some(text), ..
        } = &*retained
            && text == snapshot
        {
            return None;
        }
        let content = json!([{"type": "text", "text": snapshot}]);
        let source = if sections.is_empty() {
            json!({"kind": "plugin", "plugin": SOURCE})
        } else {
            let sections: Vec<Value> = sections
                .iter()
                .map(|s| json!({"name": &*s.name, "text": s.text.as_deref().unwrap_or_default()}))
                .collect();
            json!({"kind": "plugin", "plugin": SOURCE, "form": "snapshot", "sections": sections})
        };
        Some((content, source))
    }
}

fn follow(state: &RefCell<Retained>, event: &Event) {
    if event.kind == event_kind::USER_MESSAGE && is_owned(&event.data) {
        *state.borrow_mut() = Retained::Snapshot {
            seq: event.seq,
            text: text_of(&event.data),
        };
        return;
    }
    let replaces = matches!(event.surface_op, Some(SurfaceOp::Replace { .. }));
    let mut retained = state.borrow_mut();
    if let Retained::Snapshot { seq, .. } = &*retained
        && replaces
        && event
            .source_event_seqs
            .as_ref()
            .is_some_and(|seqs| seqs.contains(seq))
    {
        *retained = Retained::Cleared;
    }
}
