//! Model-based property tests (proptest) of the model's stateful parts:
//! the generational table, variables, the inbox, the request-header fold
//! and equality, the runtime-context projection, and the history derived
//! from the surface. Each runs random
//! operation sequences against a plain model of what the spec says, or
//! checks a law that must hold whatever the sequence. Failures proptest
//! found are kept in `props.proptest-regressions` and replayed first.

use std::rc::Rc;

use dshc_model::assembly::Variables;
use dshc_model::header::{canonical_header, header_equals};
use dshc_model::inbox::{Inbox, Target};
use dshc_model::js::js_key_order;
use dshc_model::runtime_context::{CLEARED, RuntimeContextProjection, SOURCE};
use dshc_model::session::event_kind;
use dshc_model::session::{DerivedMessages, Session, SurfaceMeta, SurfaceOp};
use dshc_model::table::Table;
use proptest::prelude::*;
use serde_json::{Value, json};

fn session() -> Session {
    Session::new("s", None, Rc::new(|| 0))
}

// --- the generational table -----------------------------------------------

#[derive(Clone, Debug)]
enum TableOp {
    Push(Option<u8>),
    Remove(u8),
    Step,
    Compact,
}

fn table_op() -> impl Strategy<Value = TableOp> {
    prop_oneof![
        proptest::option::of(0u8..6).prop_map(TableOp::Push),
        (0u8..24).prop_map(TableOp::Remove),
        Just(TableOp::Step),
        Just(TableOp::Compact),
    ]
}

proptest! {
    /// `entries()` lists the live entries in insertion order, names are
    /// found exactly when live, and a cursor visits no entry twice, never
    /// one removed before it got there, and every entry that stayed live
    /// (entries pushed during the iteration included), until the table
    /// drains (a new generation).
    #[test]
    fn the_table_iterates_live_entries_in_insertion_order(
        ops in proptest::collection::vec(table_op(), 0..40),
    ) {
        let mut table: Table<u64> = Table::default();
        let mut model: Vec<(u64, Option<String>)> = Vec::new();
        let mut next_uid = 0u64;
        let mut cursor = table.cursor();
        let mut visited: Vec<u64> = Vec::new();
        let mut drained = false;
        let mut removed_unvisited: Vec<u64> = Vec::new();
        for op in ops {
            match op {
                TableOp::Push(name) => {
                    let name = name.map(|n| format!("n{n}"));
                    if name.as_ref().is_some_and(|n| table.contains(n)) {
                        continue; // the registry refuses duplicates before pushing
                    }
                    table.push(next_uid, name.as_deref().map(std::rc::Rc::from), next_uid);
                    model.push((next_uid, name));
                    next_uid += 1;
                }
                TableOp::Remove(uid) => {
                    let uid = u64::from(uid);
                    let was_live = model.iter().any(|(u, _)| *u == uid);
                    prop_assert_eq!(table.remove(uid), was_live);
                    model.retain(|(u, _)| *u != uid);
                    if was_live && !visited.contains(&uid) {
                        removed_unvisited.push(uid);
                    }
                    if model.is_empty() && was_live {
                        drained = true;
                    }
                }
                TableOp::Step => {
                    if let Some((_, value)) = table.next(&mut cursor) {
                        prop_assert!(!drained, "a drained table's cursor is done");
                        prop_assert!(!visited.contains(&value), "visited twice");
                        prop_assert!(!removed_unvisited.contains(&value), "visited after removal");
                        visited.push(value);
                    }
                }
                TableOp::Compact => {
                    // Compaction reuses positions: it runs only between
                    // assemblies, when no cursor is open, so the iteration
                    // starts over after it.
                    table.compact();
                    cursor = table.cursor();
                    visited.clear();
                    removed_unvisited.clear();
                    drained = false;
                }
            }
            let live: Vec<(u64, Option<String>)> =
                table.entries().map(|(name, v)| (*v, name.map(str::to_string))).collect();
            prop_assert_eq!(&live, &model);
            prop_assert_eq!(table.is_empty(), model.is_empty());
            for n in 0..6 {
                let name = format!("n{n}");
                prop_assert_eq!(
                    table.contains(&name),
                    model.iter().any(|(_, m)| m.as_deref() == Some(name.as_str()))
                );
            }
        }
        if !drained {
            while let Some((_, value)) = table.next(&mut cursor) {
                prop_assert!(!visited.contains(&value));
                visited.push(value);
            }
            for (uid, _) in &model {
                prop_assert!(visited.contains(uid), "live entry {} never visited", uid);
            }
        }
    }
}

// --- variables --------------------------------------------------------------

#[derive(Clone, Debug)]
enum VariableOp {
    Set(String, Option<String>),
    Delete(String),
}

fn variable_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("__proto__".to_string()),
        "[0-9]{1,3}",
        "[a-c]{1,2}",
        Just("01".to_string()),
    ]
}

proptest! {
    /// Variables behave as a plain JavaScript object: keys in own-property
    /// order (array indices first, then insertion order), the last value
    /// wins, `delete` removes, and `__proto__` cannot be set.
    #[test]
    fn variables_behave_as_a_plain_object(
        ops in proptest::collection::vec(
            prop_oneof![
                (variable_name(), proptest::option::of("[xy]{0,2}"))
                    .prop_map(|(k, v)| VariableOp::Set(k, v)),
                variable_name().prop_map(VariableOp::Delete),
            ],
            0..30,
        ),
    ) {
        let mut variables = Variables::default();
        let mut model: Vec<(String, Option<String>)> = Vec::new();
        for op in ops {
            match op {
                VariableOp::Set(name, value) => {
                    variables.set(&name, value.clone());
                    if name == "__proto__" {
                        continue;
                    }
                    match model.iter_mut().find(|(k, _)| *k == name) {
                        Some(entry) => entry.1 = value,
                        None => model.push((name, value)),
                    }
                }
                VariableOp::Delete(name) => {
                    variables.delete(&name);
                    model.retain(|(k, _)| *k != name);
                }
            }
            let expected_keys = js_key_order(model.iter().map(|(k, _)| k.as_str()));
            prop_assert_eq!(variables.keys(), expected_keys);
            for (key, value) in &model {
                prop_assert_eq!(variables.get(key), Some(value.as_deref()));
            }
            prop_assert_eq!(variables.get("__proto__"), None);
        }
    }
}

// --- the inbox --------------------------------------------------------------

#[derive(Clone, Debug)]
enum InboxOp {
    Append(bool, u8),
    Claim(bool),
    Clear,
    RemoveOdd(bool),
}

fn message(n: u8) -> Value {
    json!({"content": [{"type": "text", "text": format!("m{n}")}], "source": {"kind": "user"}, "role": "user", "id": format!("id-{n}")})
}

fn target(next_turn: bool) -> Target {
    if next_turn {
        Target::NextTurn
    } else {
        Target::NextStep
    }
}

// --- the derived history ---------------------------------------------------

proptest! {
    /// The history derived from an earlier derivation is the history derived
    /// afresh, whatever happened to the surface in between: appends (which
    /// it extends), replaces (which it starts over from), or an earlier
    /// derivation from before either.
    #[test]
    fn a_history_derived_from_an_earlier_one_is_derived_afresh(
        ops in prop::collection::vec((any::<bool>(), any::<u8>(), any::<u8>(), 0usize..3), 1..24),
    ) {
        let session = session();
        let mut derived: Vec<DerivedMessages> = Vec::new();
        for (step, (replace, a, b, back)) in ops.into_iter().enumerate() {
            let nodes = session.derive_messages_from(None).nodes;
            let meta = match (replace, nodes.len()) {
                (true, len) if len > 0 => {
                    let (a, b) = (usize::from(a) % len, usize::from(b) % len);
                    let (start, end) = (nodes[a.min(b)], nodes[a.max(b)]);
                    SurfaceMeta {
                        surface_op: Some(SurfaceOp::Replace { start, end }),
                        source_event_seqs: Some(nodes[a.min(b)..=a.max(b)].to_vec()),
                    }
                }
                _ => SurfaceMeta::append(),
            };
            session
                .append(event_kind::USER_MESSAGE, message(step as u8), meta)
                .expect("a user message appends");
            let earlier = derived.len().checked_sub(back + 1).map(|at| derived[at].clone());
            let from_earlier = session.derive_messages_from(earlier);
            prop_assert_eq!(&from_earlier.messages, &session.derive_messages());
            prop_assert_eq!(&from_earlier, &session.derive_messages_from(None));
            derived.push(from_earlier);
        }
    }
}

proptest! {
    /// The inbox is a fold of its logged splices: replaying the log gives
    /// the live inbox back after any sequence of operations, and an
    /// operation that fails logs nothing.
    #[test]
    fn the_inbox_is_the_fold_of_its_logged_splices(
        ops in proptest::collection::vec(
            prop_oneof![
                (any::<bool>(), 0u8..8).prop_map(|(t, n)| InboxOp::Append(t, n)),
                any::<bool>().prop_map(InboxOp::Claim),
                Just(InboxOp::Clear),
                any::<bool>().prop_map(InboxOp::RemoveOdd),
            ],
            0..30,
        ),
    ) {
        let session = session();
        let inbox = Inbox::replay(&session, 0).expect("an empty log replays");
        for op in ops {
            let before = session.len();
            let result = match op {
                InboxOp::Append(t, n) => inbox.append(target(t), message(n)).map(|_| ()),
                InboxOp::Claim(t) => inbox.claim(target(t)).map(|_| ()),
                InboxOp::Clear => inbox.clear(),
                InboxOp::RemoveOdd(t) => inbox
                    .remove_where(target(t), |m| {
                        m["id"].as_str().is_some_and(|id| id.ends_with(['1', '3', '5', '7']))
                    })
                    .map(|_| ()),
            };
            if result.is_err() {
                prop_assert_eq!(session.len(), before, "a refused operation logs nothing");
            }
            let replayed = Inbox::replay(&session, 0).expect("the log replays");
            prop_assert_eq!(&*replayed.next_turn(), &*inbox.next_turn());
            prop_assert_eq!(&*replayed.next_step(), &*inbox.next_step());
            let (turn, step) = (inbox.next_turn(), inbox.next_step());
            let mut ids: Vec<&Value> = turn.iter().chain(step.iter()).map(|m| &m["id"]).collect();
            let count = ids.len();
            ids.sort_by_key(|id| id.to_string());
            ids.dedup();
            prop_assert_eq!(ids.len(), count, "a message is pending once");
        }
    }
}

// --- the request header -----------------------------------------------------

fn header() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("m1"), Just("m2")],
        proptest::option::of(prop_oneof![Just("high"), Just("max")]),
        proptest::option::of("[a-z ]{0,6}"),
        proptest::collection::vec(prop_oneof![Just("read"), Just("bash")], 0..3),
        any::<bool>(),
    )
        .prop_map(|(model, effort, system, tools, defaulted)| {
            let mut config = json!({"provider": "p", "model": model});
            if let Some(effort) = effort {
                config["reasoningEffort"] = json!(effort);
            }
            let mut header = json!({"config": config});
            if defaulted {
                header["adapterDefaults"] = json!({"reasoningEffort": true});
            }
            if let Some(system) = system {
                header["system"] = json!(system);
            }
            let tools: Vec<Value> = tools
                .into_iter()
                .map(|name| json!({"name": name, "description": "d", "parameters": {}}))
                .collect();
            header["tools"] = Value::Array(tools);
            header
        })
}

proptest! {
    /// The canonical form is idempotent and drops empty system and tools;
    /// equality is reflexive and symmetric and agrees with canonical
    /// sameness; the fold of logged headers is the last one logged.
    #[test]
    fn header_canonical_form_equality_and_fold(a in header(), b in header(), c in header()) {
        let (ca, cb) = (canonical_header(&a), canonical_header(&b));
        prop_assert_eq!(canonical_header(&ca), ca.clone());
        prop_assert!(ca.get("system").is_none_or(|s| s != ""));
        prop_assert!(ca.get("tools").is_none_or(|t| t.as_array().is_some_and(|t| !t.is_empty())));
        prop_assert!(header_equals(&ca, &ca));
        prop_assert_eq!(header_equals(&ca, &cb), header_equals(&cb, &ca));
        if ca == cb {
            prop_assert!(header_equals(&ca, &cb));
        }
        let session = session();
        prop_assert_eq!(session.request_header(), None);
        for (reason, header) in [("initial", &a), ("change", &b), ("change", &c)] {
            let canonical = canonical_header(header);
            session
                .append(event_kind::REQUEST_HEADER, json!({"header": canonical, "reason": reason}), SurfaceMeta::default())
                .expect("logged");
            // The header in force is the last one logged, canonical, read
            // again after other events and after a header logged as it came.
            prop_assert_eq!(session.request_header(), Some(Rc::new(canonical.clone())));
            session.append("custom/note", json!({}), SurfaceMeta::default()).expect("logged");
            prop_assert_eq!(session.request_header(), Some(Rc::new(canonical.clone())));
            session
                .append(event_kind::REQUEST_HEADER, json!({"header": header, "reason": reason}), SurfaceMeta::default())
                .expect("logged");
            prop_assert_eq!(session.request_header(), Some(Rc::new(canonical.clone())));
        }
    }
}

// --- the runtime-context projection ---------------------------------------

proptest! {
    /// Logging each proposed snapshot as the loop does, the projection
    /// proposes a message only when the text differs from the retained
    /// snapshot, an empty text is the tombstone once something was logged,
    /// and nothing is proposed while nothing was ever shown and the text is
    /// empty.
    #[test]
    fn the_projection_logs_a_snapshot_only_when_it_changes(
        texts in proptest::collection::vec(prop_oneof![Just(""), Just("a"), Just("b")], 0..20),
    ) {
        let session = session();
        let projection = RuntimeContextProjection::attach(&session);
        let mut shown: Option<String> = None;
        for text in texts {
            let proposed = projection.project(text, &[]);
            let wanted = if text.is_empty() { CLEARED } else { text };
            let expect_message = match &shown {
                None => !text.is_empty(),
                Some(previous) => previous != wanted,
            };
            prop_assert_eq!(proposed.is_some(), expect_message, "text {:?} after {:?}", text, shown);
            if let Some((content, source)) = proposed {
                prop_assert_eq!(&content[0]["text"], wanted);
                prop_assert_eq!(&source["plugin"], SOURCE);
                let message = json!({"content": content, "source": source, "role": "user", "id": format!("c{}", session.len())});
                session.append(event_kind::USER_MESSAGE, message, SurfaceMeta::append()).expect("logged");
                shown = Some(wanted.to_string());
            }
        }
    }
}

// --- JSON text equality -----------------------------------------------------

/// Small JSON values whose objects draw keys from a tiny set (so two values
/// often hold the same entries in another order) and whose numbers come in
/// every form that prints alike in JavaScript (`1`, `1.0`, `-0`, `0`).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(json!(1)),
            Just(json!(1.0)),
            Just(json!(0)),
            Just(json!(-0.0)),
            Just(json!(2.5))
        ],
        prop_oneof![Just(json!("a")), Just(json!("b"))],
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::vec((prop_oneof![Just("x"), Just("y"), Just("z")], inner), 0..3)
                .prop_map(|entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
        ]
    })
}

proptest! {
    /// `same_json_text` is `JSON.stringify(a) === JSON.stringify(b)`
    /// without printing: key order counts, number forms do not.
    #[test]
    fn same_json_text_agrees_with_stringify(a in json_value(), b in json_value()) {
        let printed_alike = dshc_model::js::stringify(&a) == dshc_model::js::stringify(&b);
        prop_assert_eq!(dshc_model::js::same_json_text(&a, &b), printed_alike);
        prop_assert!(dshc_model::js::same_json_text(&a, &a));
    }
}

// --- UTF-16 string order ----------------------------------------------------

/// Characters from the ranges where UTF-16 and code-point order part:
/// ASCII, two- and three-byte characters below U+E000, U+E000..U+FFFF, and
/// supplementary ones, some sharing a high surrogate.
fn order_char() -> impl Strategy<Value = char> {
    prop_oneof![
        proptest::char::range('a', 'c'),
        proptest::char::range('\u{e9}', '\u{eb}'),
        proptest::char::range('\u{6e5}', '\u{6e6}'),
        proptest::char::range('\u{d7ff}', '\u{d7ff}'),
        proptest::char::range('\u{e000}', '\u{e001}'),
        proptest::char::range('\u{fffd}', '\u{fffd}'),
        proptest::char::range('\u{10000}', '\u{10001}'),
        proptest::char::range('\u{1f600}', '\u{1f601}'),
    ]
}

proptest! {
    /// `cmp_utf16` is JavaScript's `<` on strings: code-unit order.
    #[test]
    fn strings_compare_by_utf16_code_units(
        a in proptest::collection::vec(order_char(), 0..5),
        b in proptest::collection::vec(order_char(), 0..5),
    ) {
        let (a, b): (String, String) = (a.into_iter().collect(), b.into_iter().collect());
        prop_assert_eq!(
            dshc_model::js::cmp_utf16(&a, &b),
            a.encode_utf16().cmp(b.encode_utf16()),
            "{:?} vs {:?}", a, b
        );
    }
}
