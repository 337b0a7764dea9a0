//! Every matcher at the compare level, in both directions: a scenario that
//! states a true expectation passes on the reference, and the same scenario
//! with a planted wrong expectation fails with a message naming the
//! expectation and the matcher. The scenarios are small, real ones, so this
//! tests the loader, the pattern checks and the comparison together.

use std::path::Path;

use dshc_runner::check::{Outcome, check, describe};
use dshc_scenario::load::parse_scenario;

/// An assembly case whose prompt is `Guide for x.\n\nRules: {{model}}` with
/// `model = "m1"`, two tools and one context.
fn assembly(expect: &str) -> String {
    format!(
        r#"format = 2
title = "t"
covers = ["02:A3.1"]
[config]
include_harness_identity = false

[[steps]]
do = "section"
name = "guide"
order = 1
text = "Guide for x."

[[steps]]
do = "section"
name = "rules"
order = 2
text = "Rules: {{{{model}}}}"

[[steps]]
do = "variable"
name = "model"
value = "m1"

[[steps]]
do = "context"
name = "sandbox"
order = 1
text = "on"

[[steps]]
do = "tools"
provider = {{ returns = {{ schemas = [{{ name = "read", parameters = {{ b = 1, a = 2 }} }}, {{ name = "bash" }}] }} }}

[[steps]]
do = "assemble"
{expect}
"#
    )
}

/// A loop case: one text answer, one tool round, then a text answer.
fn looped(expect: &str) -> String {
    format!(
        r#"format = 2
title = "t"
covers = ["05:ORDER"]
level = "loop"

[[provider.responses]]
tool_calls = [{{ id = "call_1", name = "read", arguments = ["{{}}"] }}]

[[provider.responses]]
content = ["Hel", "lo"]

[[tool_results]]
name = "read"
text = "file"

[[steps]]
do = "tools"
provider = {{ returns = {{ schemas = [{{ name = "read", description = "Read a file.", parameters = {{ type = "object" }} }}] }} }}

[[steps]]
do = "followup"
text = "hi"

[[steps]]
do = "wait_idle"

[expect]
{expect}
"#
    )
}

fn outcome(source: &str) -> (Outcome, String) {
    let loaded = match parse_scenario(Path::new("matching.toml"), source) {
        Ok(loaded) => loaded,
        Err(error) => panic!("does not load: {error}\n{source}"),
    };
    let outcome = check(&loaded);
    let text = describe(&loaded, &outcome);
    (outcome, text)
}

fn passes(source: &str) {
    let (outcome, text) = outcome(source);
    assert_eq!(outcome, Outcome::Pass, "{text}\n--- scenario:\n{source}");
}

/// The planted expectation fails, and the account names `parts`.
fn fails(source: &str, parts: &[&str]) {
    let (outcome, text) = outcome(source);
    assert!(
        matches!(outcome, Outcome::Fail { .. }),
        "a wrong expectation must fail:\n{source}"
    );
    for part in parts {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
}

#[test]
fn string_literals_and_string_matchers() {
    passes(&assembly(r#"expect.prompt = "Guide for x.\n\nRules: m1""#));
    fails(
        &assembly(r#"expect.prompt = "Guide for y.\n\nRules: m1""#),
        &["steps[5].expect.prompt", "- Guide for y.", "+ Guide for x."],
    );
    passes(&assembly(r#"expect.prompt."$contains" = "Rules: m1""#));
    fails(
        &assembly(r#"expect.prompt."$contains" = "Rules: m2""#),
        &["$contains \"Rules: m2\""],
    );
    passes(&assembly(
        r#"expect.prompt = { "$starts_with" = "Guide", "$ends_with" = "m1" }"#,
    ));
    fails(
        &assembly(r#"expect.prompt."$starts_with" = "Rules""#),
        &["$starts_with"],
    );
    fails(
        &assembly(r#"expect.prompt."$ends_with" = "x.""#),
        &["$ends_with"],
    );
    passes(&assembly(
        r#"expect.prompt."$regex" = "^Guide for [a-z]\\.""#,
    ));
    fails(
        &assembly(r#"expect.prompt."$regex" = "^Rules""#),
        &["$regex"],
    );
    passes(&assembly(
        r#"expect.snapshot = { "$length" = { "$gt" = 0 } }"#,
    ));
    fails(&assembly(r#"expect.snapshot."$length" = 1"#), &["$length"]);
}

#[test]
fn objects_are_partial_and_exact_equal_compare_whole() {
    // Canonical tool order puts `bash` before `read`.
    passes(&assembly(
        r#"expect.tools = [{ name = "bash" }, { name = "read" }]"#,
    ));
    fails(
        &assembly(r#"expect.tools = [{ name = "bash", description = "x" }, { name = "read" }]"#),
        &["steps[5].expect.tools[0].description", "(absent)"],
    );
    passes(&assembly(
        r#"expect.tools = [{ name = "bash" }, { "$exact" = { name = "read", parameters = { b = 1, a = 2 } } }]"#,
    ));
    fails(
        &assembly(
            r#"expect.tools = [{ name = "bash" }, { "$exact" = { name = "read", parameters = { a = 2, b = 1 } } }]"#,
        ),
        &["$exact"],
    );
    passes(&assembly(
        r#"expect.tools = [{ name = "bash" }, { "$equal" = { name = "read", parameters = { a = 2, b = 1 } } }]"#,
    ));
    fails(
        &assembly(r#"expect.variables."$equal" = { model = "m1", other = "x" }"#),
        &["$equal"],
    );
    passes(&assembly(
        r#"expect.tools = [{ parameters = { "$absent" = true } }, { description = { "$absent" = true } }]"#,
    ));
    fails(
        &assembly(r#"expect.tools = [{ name = "bash" }, { parameters = { "$absent" = true } }]"#),
        &["$absent"],
    );
    passes(&assembly(
        r#"expect.tools = [{ name = { "$type" = "string" } }, { parameters = { "$any" = true, "$type" = "object" } }]"#,
    ));
    fails(
        &assembly(r#"expect.tools = [{ name = { "$type" = "number" } }, { name = "read" }]"#),
        &["$type \"number\""],
    );
}

#[test]
fn array_matchers() {
    passes(&assembly(r#"expect.tool_names = ["bash", "read"]"#));
    fails(
        &assembly(r#"expect.tool_names = ["read"]"#),
        &["1 elements", "tool_names"],
    );
    passes(&assembly(
        r#"expect.tool_names."$contains" = ["bash", "read"]"#,
    ));
    fails(
        &assembly(r#"expect.tool_names."$contains" = ["edit"]"#),
        &["$contains"],
    );
    passes(&assembly(
        r#"expect.journal."$in_order" = ["variable model"]"#,
    ));
    passes(&assembly(
        r#"expect.sections."$in_order" = [{ name = "guide" }, { name = "rules" }]"#,
    ));
    fails(
        &assembly(r#"expect.sections."$in_order" = [{ name = "rules" }, { name = "guide" }]"#),
        &["$in_order"],
    );
    // The persona section (empty text by default) comes first.
    passes(&assembly(
        r#"expect.sections."$prefix" = [{ name = "deployment:persona" }, { name = "guide" }]"#,
    ));
    fails(
        &assembly(r#"expect.sections."$prefix" = [{ name = "rules" }]"#),
        &["sections[0].name"],
    );
    passes(&assembly(
        r#"expect.sections = { "$length" = 3, "$some" = { text = "Guide for x." } }"#,
    ));
    fails(
        &assembly(r#"expect.sections."$some" = { text = "nope" }"#),
        &["$some"],
    );
    passes(&assembly(
        r#"expect.sections."$each" = { text = { "$type" = "string" } }"#,
    ));
    fails(
        &assembly(r#"expect.sections."$each" = { name = "guide" }"#),
        &["sections[0].name"],
    );
}

#[test]
fn number_matchers() {
    passes(&assembly(r#"expect.changes = 0"#));
    passes(&assembly(
        r#"expect.changes = { "$ge" = 0, "$le" = 0, "$lt" = 1, "$eq" = 0 }"#,
    ));
    fails(&assembly(r#"expect.changes."$gt" = 0"#), &["$gt 0"]);
    fails(
        &assembly(r#"expect.changes."$between" = [1, 2]"#),
        &["$between"],
    );
    passes(&looped(
        r#"cache_hit_tokens = { "$each" = { "$multiple_of" = 64 } }"#,
    ));
    fails(
        &looped(r#"cache_hit_tokens = { "$each" = { "$multiple_of" = 7, "$gt" = 0 } }"#),
        &["cache_hit_tokens[0]"],
    );
    passes(&looped(r#"request_count = { "$between" = [2, 2] }"#));
    fails(
        &looped(r#"request_count."$lt" = 2"#),
        &["expect.request_count", "$lt 2"],
    );
}

#[test]
fn combining_matchers() {
    passes(&assembly(
        r#"expect.prompt."$not" = { "$contains" = "{{" }"#,
    ));
    fails(
        &assembly(r#"expect.prompt."$not" = { "$contains" = "Guide" }"#),
        &["$not"],
    );
    passes(&looped(r#"status."$any_of" = ["running", "idle"]"#));
    fails(
        &looped(r#"status."$any_of" = ["running", "stopped"]"#),
        &["$any_of"],
    );
}

#[test]
fn errors_by_message_class_and_code() {
    let throwing = |expect: &str| {
        format!(
            "format = 2\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n\n[[steps]]\ndo = \"section\"\nname = \"s\"\norder = nan\ntext = \"x\"\n{expect}\n"
        )
    };
    passes(&throwing(
        r#"expect.error = { "$contains" = "order must be a finite number" }"#,
    ));
    passes(&throwing(r#"expect.error = { name = "TypeError" }"#));
    fails(
        &throwing(r#"expect.error = { name = "RangeError" }"#),
        &["expect.error.name"],
    );
    fails(
        &throwing(r#"expect.error."$contains" = "tool""#),
        &["expect.error.message"],
    );
    fails(&throwing(""), &["(no error)", "TypeError"]);
    passes(&looped(
        "[[expect.query]]\nselect = \"turn/end\"\nfirst = { data = { reason = { kind = \"completed\" } } }",
    ));
}

#[test]
fn event_queries_count_position_and_order() {
    let chunk = r#"{ type = "assistant/chunk", data = { chunk = { type = "text-delta" } } }"#;
    passes(&looped(&format!(
        "[[expect.query]]\nselect = {chunk}\ncount = 2\nfirst = {{ data = {{ chunk = {{ text = \"Hel\" }} }} }}\nlast = {{ data = {{ chunk = {{ text = \"lo\" }} }} }}\nnth = {{ index = 1, event = {{ data = {{ step = 2 }} }} }}\neach = {{ data = {{ turn = 1 }} }}"
    )));
    fails(
        &looped(&format!("[[expect.query]]\nselect = {chunk}\ncount = 3")),
        &["expect.query[0].count", "nearest candidates"],
    );
    fails(
        &looped(&format!(
            "[[expect.query]]\nselect = {chunk}\nfirst = {{ data = {{ chunk = {{ text = \"lo\" }} }} }}"
        )),
        &["expect.query[0].first.data.chunk.text"],
    );
    fails(
        &looped(&format!(
            "[[expect.query]]\nselect = {chunk}\nnth = {{ index = 5, event = {{}} }}"
        )),
        &["nth.index", "2 selected"],
    );
    passes(&looped(
        "[[expect.query]]\nselect = \"tool/call\"\ncount = { \"$ge\" = 1 }\nbefore = \"tool/result\"\nafter = \"turn/start\"",
    ));
    fails(
        &looped("[[expect.query]]\nselect = \"tool/result\"\nbefore = \"tool/call\""),
        &["expect.query[0].before", "does not come before"],
    );
    fails(
        &looped("[[expect.query]]\nselect = \"turn/start\"\nafter = \"turn/end\""),
        &["expect.query[0].after"],
    );
    passes(&looped(
        "[[expect.query]]\nselect = \"step/start\"\ndirectly_after = { type = { \"$any_of\" = [\"agent/inbox/spliced\", \"step/end\"] } }",
    ));
    fails(
        &looped("[[expect.query]]\nselect = \"step/start\"\ndirectly_before = \"turn/end\""),
        &["directly_before", "is followed by"],
    );
    fails(
        &looped("[[expect.query]]\nselect = \"turn/start\"\ndirectly_after = \"turn/end\""),
        &["directly_after"],
    );
    passes(&looped(
        "[[expect.query]]\nselect = { type = \"turn/end\", data = { reason = { kind = \"error\" } } }\ncount = 0",
    ));
    fails(
        &looped(
            "[[expect.query]]\nselect = { type = \"turn/end\", data = { reason = { kind = \"error\" } } }\nfirst = {}",
        ),
        &["expect.query[0].select", "seq", ".data.reason.kind"],
    );
}

#[test]
fn captures_bind_values_for_later_expectations() {
    passes(&looped(
        "[[expect.query]]\nselect = { type = \"assistant/chunk\", data = { step = 2 } }\ncapture_each = { chunk_seqs = \"seq\" }\n\n[[expect.query]]\nselect = { type = \"assistant/message\", data = { step = 2 } }\nfirst = { sourceEventSeqs = { \"$ref\" = \"chunk_seqs\" } }",
    ));
    fails(
        &looped(
            "[[expect.query]]\nselect = { type = \"assistant/chunk\", data = { step = 1 } }\ncapture_each = { chunk_seqs = \"seq\" }\n\n[[expect.query]]\nselect = { type = \"assistant/message\", data = { step = 2 } }\nfirst = { sourceEventSeqs = { \"$ref\" = \"chunk_seqs\" } }",
        ),
        &["$ref \"chunk_seqs\""],
    );
    passes(&looped(
        "[[expect.query]]\nselect = \"tool/call\"\ncapture = { call = \"data.callId\" }\n\n[[expect.query]]\nselect = \"tool/result\"\nfirst = { data = { message = { source = { callId = { \"$ref\" = \"call\" } } } } }",
    ));
    passes(&looped(
        "[[expect.query]]\nselect = \"assistant/message\"\nfirst = { data = { message = { id = { \"$capture\" = \"reply\" } } } }\n\n[[expect.query]]\nselect = { data = { message = { id = { \"$ref\" = \"reply\" } } } }\ncount = 1",
    ));
    // A `$ref` to a name nothing binds is a load error, under `$not` too,
    // where a misspelt name would otherwise pass.
    for first in [
        "{ data = { callId = { \"$ref\" = \"never\" } } }",
        "{ data = { callId = { \"$not\" = { \"$ref\" = \"never\" } } } }",
    ] {
        let source = looped(&format!(
            "[[expect.query]]\nselect = \"tool/call\"\nfirst = {first}"
        ));
        let error = parse_scenario(Path::new("bad.toml"), &source).expect_err("refused");
        assert!(
            error
                .message
                .contains("`$ref` \"never\" names a capture nothing binds"),
            "{error}"
        );
    }
    // A capture whose own expectation fails binds nothing: the `$ref` says
    // why it may be unbound, beside that expectation's own mismatch.
    fails(
        &looped(
            "[[expect.query]]\nselect = \"tool/call\"\nfirst = { data = { name = \"write\", callId = { \"$capture\" = \"call\" } } }\n\n[[expect.query]]\nselect = \"tool/result\"\nfirst = { data = { message = { source = { callId = { \"$ref\" = \"call\" } } } } }",
        ),
        &[
            "expect.query[0].first.data.name",
            "the expectation holding its capture did not match",
        ],
    );
}

#[test]
fn requests_status_and_events_in_order() {
    passes(&looped(
        "[[expect.request]]\nindex = 1\nbody = { messages = { \"$some\" = { role = \"tool\" } } }\nheaders = { \"content-type\" = { \"$contains\" = \"json\" } }",
    ));
    fails(
        &looped(
            "[[expect.request]]\nindex = 0\nbody = { messages = { \"$some\" = { role = \"tool\" } } }",
        ),
        &["expect.request[index = 0].body.messages", "$some"],
    );
    fails(
        &looped("[[expect.request]]\nindex = 4"),
        &["expect.request[index = 4].index"],
    );
    // The second entry is about request 1, and its mismatch says so.
    fails(
        &looped(
            "[[expect.request]]\nindex = 0\n\n[[expect.request]]\nindex = 1\nbody = { model = \"nope\" }",
        ),
        &["expect.request[index = 1].body.model"],
    );
    passes(&looped(r#"status_transitions = ["running", "idle"]"#));
    fails(
        &looped(r#"status_transitions = ["idle"]"#),
        &["expect.status_transitions"],
    );
    passes(&looped(
        "events = [{ type = \"turn/start\" }, { type = \"tool/call\", data = { name = \"read\" } }, { type = \"turn/end\" }]",
    ));
    fails(
        &looped("events = [{ type = \"turn/end\" }, { type = \"turn/start\" }]"),
        &["expect.events[1]", "after the events matched before it"],
    );
    passes(&looped(
        r#"event_types."$in_order" = ["turn/start", "tool/call", "tool/result", "turn/end"]"#,
    ));
}

#[test]
fn bad_patterns_are_load_errors_with_positions() {
    let bad = assembly(r#"expect.prompt."$contian" = "x""#);
    let error = parse_scenario(Path::new("bad.toml"), &bad).expect_err("rejected");
    assert!(
        error.message.contains("unknown matcher `$contian`"),
        "{error}"
    );
    assert!(error.line.is_some(), "{error}");
    let bad = looped("pending = [0, 0, 99]");
    let error = parse_scenario(Path::new("bad.toml"), &bad).expect_err("rejected");
    assert!(error.message.contains("2 numbers, not 3"), "{error}");
    let bad = looped(r#"failure."$regex" = "(""#);
    let error = parse_scenario(Path::new("bad.toml"), &bad).expect_err("rejected");
    assert!(error.message.contains("invalid regex"), "{error}");
}

#[test]
fn a_setup_failure_decides_a_scenario_with_steps() {
    // The steps never run when setup fails, so their observations cannot be
    // compared; the expected failure alone decides.
    let source = "format = 2\ntitle = \"t\"\ncovers = [\"10:TC1\"]\nlevel = \"loop\"\n[plugins.time_context]\nrefresh_interval_ms = 0.5\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[[steps]]\ndo = \"wait_idle\"\n[expect]\nfailure = { \"$contains\" = \"refreshIntervalMs must be a non-negative safe integer, got 0.5\" }\n";
    passes(source);
    fails(
        &source.replace("got 0.5", "got 1"),
        &["expect.failure", "$contains"],
    );
    // Against a run that finished, a failure matcher is described as every
    // matcher is, not as its JSON; so is an error matcher against no error.
    fails(
        &looped(r#"failure = { "$contains" = "limit" }"#),
        &["expect.failure:\n    - $contains \"limit\"\n    + (the run finished)"],
    );
    fails(
        &assembly(r#"expect.error = { "$starts_with" = "boom" }"#),
        &["expect.error:\n    - $starts_with \"boom\"\n    + (no error)"],
    );
}

#[test]
fn limits_give_clear_outcomes_instead_of_endless_runs() {
    // An always-retry listener against an exhausted script: bounded attempts.
    let retrying = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[provider]\nresponses = []\n[[steps]]\ndo = \"on_request_error\"\nid = \"retry\"\nops = [\"retry\"]\n[[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[expect]\nfailure = \"limit reached: max_attempts_per_step = 100\"\nrequest_count = 100\n";
    passes(retrying);
    let huge_budget = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[simulation]\nbudget_ms = 1000000000000000000\n";
    let error = parse_scenario(Path::new("budget.toml"), huge_budget).expect_err("refused");
    assert!(error.message.contains("at most 86400000 ms"), "{error}");
    let late_start = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[simulation]\nstart_ms = 18446744073709551615\n";
    let error = parse_scenario(Path::new("start.toml"), late_start).expect_err("refused");
    assert!(error.message.contains("Date range"), "{error}");
    let long_wait = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[[steps]]\ndo = \"wait\"\nms = 9000000000000000000\n";
    let error = parse_scenario(Path::new("wait.toml"), long_wait).expect_err("refused");
    assert!(error.message.contains("Date range"), "{error}");
}

#[test]
fn a_listener_that_follows_up_on_every_turn_ends_the_run_at_the_turn_limit() {
    // A pre-step listener that cancels and follows up: every turn ends
    // before a step opens, at one virtual instant (scripted routes take no
    // time), so neither the step limit nor the time budget could end it.
    let source = "format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n[agent]\nprovider = \"mock\"\nmodel = \"m1\"\n[[routes]]\nprovider = \"mock\"\nresponses = [{ text = [\"ok\"] }]\n[[steps]]\ndo = \"on_pre_step\"\nid = \"again\"\nops = [{ cancel = {} }, { followup = \"again\" }]\n[[steps]]\ndo = \"followup\"\ntext = \"go\"\n[[steps]]\ndo = \"wait_idle\"\n[[steps]]\ndo = \"followup\"\ntext = \"after the limit\"\n[[steps]]\ndo = \"wait_idle\"\n";
    let loaded = parse_scenario(Path::new("turns.toml"), source).expect("loads");
    let limits = dshc_reference::LoopLimits {
        max_attempts_per_step: 100,
        max_steps: 1_000,
        max_turns: 20,
        max_request_bytes: 16 << 20,
    };
    let result = dshc_reference::run_case_with_limits(&loaded.case, limits).expect("a valid case");
    let run = result.run.expect("a loop run");
    assert_eq!(
        run.failure.as_deref(),
        Some("limit reached: max_turns = 20")
    );
    let turn_start = dshc_model::session::event_kind::TURN_START;
    let turns = run.log.iter().filter(|e| e["type"] == turn_start).count();
    // The run ended at the limit: the followup sent after it starts no turn.
    assert_eq!(turns, 20, "{} events", run.log.len());
    passes(&format!(
        "{source}[expect]\nfailure = \"limit reached: max_turns = 1000\"\n"
    ));
}

#[test]
fn the_step_limit_ends_a_run_of_endless_tool_rounds() {
    // Five tool rounds against a limit of three steps: the fourth step is
    // refused, the run fails naming the limit, and no request is sent for it.
    let mut source =
        String::from("format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n");
    for round in 0..5 {
        source.push_str(&format!(
            "[[provider.responses]]\ntool_calls = [{{ id = \"c{round}\", name = \"read\", arguments = [\"{{}}\"] }}]\n"
        ));
    }
    source.push_str(
        "[[tool_results]]\nname = \"read\"\ntext = \"file\"\n\
         [[steps]]\ndo = \"tools\"\nprovider = { returns = { schemas = [{ name = \"read\", description = \"Read.\", parameters = { type = \"object\" } }] } }\n\
         [[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[[steps]]\ndo = \"wait_idle\"\n",
    );
    let loaded = parse_scenario(Path::new("steps.toml"), &source).expect("loads");
    let limits = dshc_reference::LoopLimits {
        max_attempts_per_step: 100,
        max_steps: 3,
        max_turns: 1_000,
        max_request_bytes: 16 << 20,
    };
    let result = dshc_reference::run_case_with_limits(&loaded.case, limits).expect("a valid case");
    let run = result.run.expect("a loop run");
    assert_eq!(run.failure.as_deref(), Some("limit reached: max_steps = 3"));
    assert_eq!(run.requests.len(), 3, "no request for the refused step");
    assert_eq!(run.status, "idle", "the failed turn leaves the agent idle");
    let unlimited = dshc_reference::run_case(&loaded.case).expect("a valid case");
    let run = unlimited.run.expect("a loop run");
    assert_eq!(
        run.failure, None,
        "five rounds are far below the default limit"
    );
    assert_eq!(
        run.requests.len(),
        6,
        "five tool rounds, then a sixth request"
    );
}

/// A scenario of `rounds` tool rounds, each request carrying every round
/// before it.
fn tool_rounds(rounds: usize) -> String {
    let mut source =
        String::from("format = 2\ntitle = \"t\"\ncovers = [\"05:ORDER\"]\nlevel = \"loop\"\n");
    for round in 0..rounds {
        source.push_str(&format!(
            "[[provider.responses]]\ntool_calls = [{{ id = \"c{round}\", name = \"read\", arguments = [\"{{}}\"] }}]\n"
        ));
    }
    source.push_str(
        "[[tool_results]]\nname = \"read\"\ntext = \"a file of some length, read again and again\"\n\
         [[steps]]\ndo = \"tools\"\nprovider = { returns = { schemas = [{ name = \"read\", description = \"Read.\", parameters = { type = \"object\" } }] } }\n\
         [[steps]]\ndo = \"followup\"\ntext = \"hi\"\n[[steps]]\ndo = \"wait_idle\"\n",
    );
    source
}

#[test]
fn the_request_byte_limit_ends_a_run_whose_requests_grow_with_every_round() {
    // Each request holds the whole history, so their sum grows with the
    // square of the rounds: the byte limit ends the run long before the
    // step limit would.
    let source = tool_rounds(60);
    let loaded = parse_scenario(Path::new("rounds.toml"), &source).expect("loads");
    let limits = dshc_reference::LoopLimits {
        max_request_bytes: 40_000,
        ..dshc_reference::LOOP_LIMITS
    };
    let result = dshc_reference::run_case_with_limits(&loaded.case, limits).expect("a valid case");
    let run = result.run.expect("a loop run");
    assert_eq!(
        run.failure.as_deref(),
        Some("limit reached: max_request_bytes = 40000")
    );
    let sent = run.requests.len();
    assert!((2..60).contains(&sent), "{sent} requests");
    assert_eq!(run.status, "idle", "the failed turn leaves the agent idle");
    // The same rounds under the default limit all run.
    let unlimited = dshc_reference::run_case(&loaded.case).expect("a valid case");
    let run = unlimited.run.expect("a loop run");
    assert_eq!(run.failure, None);
    assert_eq!(
        run.requests.len(),
        61,
        "sixty tool rounds, then a last request"
    );
}
