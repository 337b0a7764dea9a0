//! Resume (`Session::from_seed`) takes a stored log as the JSON it is: an
//! event is kept exactly as it was logged, even one whose data looks like the
//! `$js` encoding the scenario format uses for non-JSON values, and a log
//! resumes as `Session.create` takes the same events as JSON.

use std::rc::Rc;

use dshc_model::js::JsValue;
use dshc_model::session::event_kind;
use dshc_model::session::{Event, Session, SessionMeta, SurfaceMeta, SurfaceOp};
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

/// Resume folds another session's events as `Session.create` folds the same
/// events' JSON: the same log, the same surface. Each event is checked as
/// the model holds it, and one that was itself seeded keeps its JSON as it
/// came (its key order, `ignorable`).
#[test]
fn resume_folds_a_log_as_create_folds_its_json() {
    let user = |id: &str, text: &str| {
        json!({"role": "user", "content": [{"type": "text", "text": text}],
               "id": id, "source": {"kind": "user"}})
    };
    let old = Session::new("s", None, Rc::new(|| 7));
    let replace = SurfaceMeta {
        surface_op: Some(SurfaceOp::Replace { start: 0, end: 1 }),
        source_event_seqs: Some(vec![1, 0]),
    };
    let appended = [
        (user("m0", "a"), SurfaceMeta::append()),
        (user("m1", "b"), SurfaceMeta::append()),
        (user("m2", "a and b"), replace),
        (user("m3", "c"), SurfaceMeta::append()),
    ];
    for (message, meta) in appended {
        old.append(event_kind::USER_MESSAGE, message, meta)
            .expect("a user message appends");
    }
    let stored = old.events();
    let mut as_json: Vec<Value> = stored.iter().map(Event::to_json).collect();
    // A seeded event may carry what a live one cannot, in any key order.
    let last = as_json[3].as_object().expect("an event is an object");
    let mut reordered: serde_json::Map<String, Value> = last
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    reordered.insert("ignorable".into(), json!(true));
    as_json[3] = Value::Object(reordered);

    let created = |seed: &[Value]| {
        let seed: Vec<JsValue> = seed.iter().map(JsValue::from_encoded).collect();
        Session::create("s", &SessionMeta::default(), Some(&seed), Rc::new(|| 9))
            .expect("the seed is a session log")
    };
    let from_json = created(&as_json);
    let resumed = Session::from_seed("s", None, from_json.events(), Rc::new(|| 9))
        .expect("a created session's log resumes");
    let resumed_again = Session::from_seed("s", None, resumed.events(), Rc::new(|| 9))
        .expect("a resumed session's log resumes");
    let json_of =
        |session: &Session| -> Vec<Value> { session.events().iter().map(Event::to_json).collect() };
    assert_eq!(json_of(&resumed), json_of(&from_json));
    assert_eq!(json_of(&resumed_again), json_of(&from_json));
    assert_eq!(json_of(&resumed)[3], as_json[3]);
    let keys = |event: &Value| -> Vec<String> {
        event
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(keys(&json_of(&resumed_again)[3]), keys(&as_json[3]));
    // The replace shadowed m0 and m1: the model sees m2, then m3.
    let ids = |session: &Session| -> Vec<Value> {
        session
            .derive_messages()
            .iter()
            .map(|m| m["id"].clone())
            .collect()
    };
    assert_eq!(ids(&from_json), [json!("m2"), json!("m3")]);
    assert_eq!(ids(&resumed), ids(&from_json));
    assert_eq!(ids(&resumed_again), ids(&from_json));

    // A live event (not seeded) is folded as the model holds it.
    let live =
        Session::from_seed("s", None, stored.clone(), Rc::new(|| 9)).expect("a live log resumes");
    let stored_json: Vec<Value> = stored.iter().map(Event::to_json).collect();
    assert_eq!(json_of(&live)[..stored.len()], stored_json[..]);
    assert_eq!(ids(&live), ids(&from_json));

    // A replace whose start is not on the surface is refused as create
    // refuses its JSON, with the same words.
    let mut broken = stored;
    broken[2].surface_op = Some(SurfaceOp::Replace { start: 3, end: 1 });
    let broken_json: Vec<JsValue> = broken
        .iter()
        .map(|event| JsValue::from_encoded(&event.to_json()))
        .collect();
    let typed = Session::from_seed("s", None, broken, Rc::new(|| 9)).err();
    let as_json = Session::create(
        "s",
        &SessionMeta::default(),
        Some(&broken_json),
        Rc::new(|| 9),
    )
    .err();
    assert!(typed.is_some());
    assert_eq!(typed, as_json);
}

/// Reading an event from JSON it owns gives what reading it borrowed gives,
/// errors included.
#[test]
fn an_owned_event_json_reads_as_a_borrowed_one() {
    let values = [
        json!({"type": "custom/note", "seq": 3, "time": 9, "data": {"a": [1, 2]}}),
        json!({"data": "first", "type": "t", "seq": 0, "time": 0, "sourceEventSeqs": [0],
               "surfaceOp": {"op": "replace", "start": 0, "end": 0}, "ignorable": true}),
        json!({"type": "t", "seq": 0, "time": 0}),
        json!({"type": "t", "seq": -1, "time": 0, "data": null}),
        json!({"type": "t", "seq": 0, "time": 0, "data": 1, "surfaceOp": "sideways"}),
        json!(["not", "an", "object"]),
    ];
    for value in values {
        assert_eq!(
            Event::from_owned_json(value.clone()),
            Event::from_json(&value),
            "{value}"
        );
    }
}
