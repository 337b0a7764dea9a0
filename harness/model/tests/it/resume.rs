//! Resume (`Session::from_seed`) takes a stored log as the JSON it is: an
//! event is kept exactly as it was logged, even one whose data looks like the
//! `$js` encoding the scenario format uses for non-JSON values.

use std::rc::Rc;

use dshc_model::session::event_kind;
use dshc_model::session::{Event, Session, SurfaceMeta};
use serde_json::{Value, json};

#[test]
fn resume_keeps_stored_events_verbatim() {
    let old = Session::new("s", None, Rc::new(|| 7));
    let data = json!({"value": {"$js": "undefined"}, "n": [1, {"$js": "NaN"}]});
    old.append("custom/note", data.clone(), SurfaceMeta::default())
        .expect("a JSON payload appends");
    let stored = old.events();
    let stored_json: Vec<Value> = stored.iter().map(Event::to_json).collect();

    let resumed = Session::from_seed("s", None, stored, Rc::new(|| 9)).expect("the log resumes");
    let events: Vec<Value> = resumed.events().iter().map(Event::to_json).collect();

    assert_eq!(events[..stored_json.len()], stored_json[..]);
    let note = events
        .iter()
        .find(|event| event["type"] == "custom/note")
        .expect("the stored event is there");
    assert_eq!(note["data"], data);
    assert_eq!(
        events.last().map(|event| event["type"].clone()),
        Some(json!(event_kind::SESSION_END_SEED))
    );
}
