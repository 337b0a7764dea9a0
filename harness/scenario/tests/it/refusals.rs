//! Every refusal of the scenario compiler and loader is named by a test.
//!
//! [`REFUSALS`] lists them all, each by a fragment of its message as the
//! source writes it, with how it is triggered: a fixture under
//! `tests/invalid/`, a minimal scenario whose first line
//! `# expect: <error>` states the whole error it is refused with
//! (`file:line:column: path: message`, the file relative to this crate); or,
//! for the few no scenario file can trigger, a call through the API here.
//! The list is checked against the source: each `fail(` call under
//! `src/compile/` is one entry, so a new refusal without a test fails
//! [`every_refusal_in_the_source_is_listed`].

use std::path::{Path, PathBuf};

use dshc_scenario::compile::{compile, validate_case};
use dshc_scenario::format::Scenario;
use dshc_scenario::load::{LoadError, MAX_FILE_BYTES, load_scenario};
use dshc_scenario::protocol::Case;

/// How a refusal is triggered.
enum Trigger {
    /// By the fixture `tests/invalid/<name>.toml`; the error contains the
    /// refusal's fragment.
    Fixture(&'static str),
    /// By the fixture `tests/invalid/<name>.toml`, with a message that comes
    /// from elsewhere (a pattern, the mock provider's script, the TOML
    /// parser): the fragment names the place that passes it on.
    Forwarded(&'static str),
    /// Only through the API: `why` no file can trigger it, `error` triggers
    /// it and gives its whole error, which must equal `expected`.
    Api {
        why: &'static str,
        error: fn() -> String,
        expected: &'static str,
    },
}

/// One refusal: the source file under `src/`, a fragment of the refusal as
/// written there (its message, or for a forwarded one the place that passes
/// it on), and its trigger.
struct Refusal {
    file: &'static str,
    fragment: &'static str,
    trigger: Trigger,
}

const fn fixture(file: &'static str, fragment: &'static str, name: &'static str) -> Refusal {
    Refusal {
        file,
        fragment,
        trigger: Trigger::Fixture(name),
    }
}

const COMMANDS: &str = "compile/commands.rs";
const EXPECT: &str = "compile/expect.rs";
const MOD: &str = "compile/mod.rs";
const WORLD: &str = "compile/world.rs";
const STEP_INPUTS: &str = "compile/step_inputs.rs";
const LOAD: &str = "load.rs";
const PROVIDERS: &str = "protocol/providers.rs";
const EVENT_TYPES: &str = "compile/event_types.rs";
const LOOP_OPS: &str = "protocol/loop_ops.rs";
const PLAIN_JSON: &str = "protocol/plain_json.rs";

/// Every refusal, by source file.
const REFUSALS: &[Refusal] = &[
    // A field that holds JSON, whatever its command.
    fixture(
        PLAIN_JSON,
        "JSON has no NaN or Infinity, and this field holds JSON",
        "route_model_metadata_with_an_infinite_number",
    ),
    fixture(
        PLAIN_JSON,
        "JSON has no NaN or Infinity, and this field holds JSON",
        "message_content_with_nan",
    ),
    // Each command, and the ids it defines.
    // A provider table, as it is read.
    fixture(
        PROVIDERS,
        "a provider sets exactly one of",
        "provider_with_two_outcomes",
    ),
    fixture(
        PROVIDERS,
        "`sequence` needs at least one value",
        "provider_with_an_empty_sequence",
    ),
    fixture(
        PROVIDERS,
        "`cause` only goes with `throws`",
        "provider_cause_without_throws",
    ),
    fixture(COMMANDS, "`on_call` counts from 1", "effect_on_call_zero"),
    fixture(
        COMMANDS,
        "fold_header takes an array of events",
        "fold_header_event_without_a_header_table",
    ),
    fixture(
        COMMANDS,
        "`computes` gives text; a tool provider returns",
        "tool_provider_that_computes_text",
    ),
    fixture(
        COMMANDS,
        "`event_types` filters a `session/event` observer",
        "event_types_on_a_listener_that_is_no_observer",
    ),
    // Event types: each one a run can log.
    fixture(
        EVENT_TYPES,
        "no run of this scenario logs an event of type",
        "select_names_an_event_type_no_run_logs",
    ),
    // A listener's or tool body's op, as it is read.
    fixture(
        LOOP_OPS,
        "a clock_jump act moves the clock at most",
        "clock_jump_act_beyond_a_day",
    ),
    fixture(
        LOOP_OPS,
        "a message table sets exactly one of `text` and `content`",
        "listener_message_with_text_and_content",
    ),
    // A table read as itself names a missing field, where an untagged
    // choice said only that nothing matched.
    Refusal {
        file: LOOP_OPS,
        fragment: "|CodedThrow { message, code }|",
        trigger: Trigger::Forwarded("thrown_llm_error_without_a_code"),
    },
    fixture(
        PROVIDERS,
        "a `sequence` value is what the provider returns",
        "sequence_value_of_the_wrong_kind",
    ),
    fixture(
        COMMANDS,
        "an effect sets exactly one of `register` and `dispose`",
        "effect_with_neither_register_nor_dispose",
    ),
    fixture(
        COMMANDS,
        "`set_field` cannot set an assembly list; use the list ops",
        "listener_set_field_on_an_assembly_list",
    ),
    fixture(
        COMMANDS,
        "an owner's registrations are global",
        "owner_registration_with_a_scope",
    ),
    fixture(
        COMMANDS,
        "no registration has id ",
        "dispose_of_an_unknown_id",
    ),
    fixture(
        COMMANDS,
        "a tool call receives no `",
        "tool_body_records_a_field_it_does_not_receive",
    ),
    fixture(
        COMMANDS,
        " listener receives no `",
        "loop_listener_records_a_field_it_does_not_receive",
    ),
    fixture(
        WORLD,
        "this backward jump could take the clock ",
        "clock_jump_before_the_epoch",
    ),
    // The expectations.
    Refusal {
        file: EXPECT,
        fragment: "error.path",
        trigger: Trigger::Forwarded("pattern_is_invalid"),
    },
    fixture(
        EXPECT,
        "`pending` is [next-turn, next-step]: 2 numbers, not ",
        "pending_is_not_a_pair",
    ),
    fixture(
        EXPECT,
        "`agents` has no agent with id ",
        "expected_agent_is_not_in_agents",
    ),
    fixture(
        EXPECT,
        " names a capture nothing binds (",
        "ref_names_a_capture_nothing_binds",
    ),
    // The scenario as a whole, and its level.
    Refusal {
        file: MOD,
        fragment: "scenario format 1 is no longer read; `dshc migrate <file>` rewrites it as ",
        trigger: Trigger::Api {
            why: "the loader refuses a format 1 file before compiling it, naming the file \
                  (load.rs, fixture format_1_is_refused); this one is for scenarios built in code",
            error: compile_format_1,
            expected: "format: scenario format 1 is no longer read; `dshc migrate <file>` \
                       rewrites it as format 2, keeping what it asserts",
        },
    },
    fixture(
        MOD,
        "unsupported scenario format ",
        "format_3_is_unsupported",
    ),
    fixture(MOD, "name at least one spec clause", "covers_is_empty"),
    fixture(
        MOD,
        "a scenario whose config fails to load has no steps",
        "config_error_with_steps",
    ),
    fixture(
        MOD,
        "agent, provider, adapter, simulation, tool_results, routes and expect need `level = ",
        "loop_part_without_level_loop",
    ),
    fixture(
        MOD,
        "this step needs `level = ",
        "loop_step_without_level_loop",
    ),
    fixture(
        MOD,
        "an assemble listener's `record` is assembly level only",
        "loop_assemble_listener_records",
    ),
    Refusal {
        file: MOD,
        fragment: "a loop case needs its world",
        trigger: Trigger::Api {
            why: "compiling a loop scenario always builds its world; only a case from \
                  elsewhere (`dshc adapter` reads them from any client) can lack one",
            error: validate_loop_case_without_world,
            expected: "world: a loop case needs its world",
        },
    },
    // The loop world.
    Refusal {
        file: WORLD,
        fragment: "world.provider.validate()",
        trigger: Trigger::Forwarded("provider_script_is_invalid"),
    },
    fixture(WORLD, "a string, or `{ ", "agent_model_is_not_a_string"),
    fixture(
        WORLD,
        "an image's data is canonical base64",
        "attachment_data_is_not_canonical_base64",
    ),
    fixture(
        WORLD,
        "a message has either `text` or `content`",
        "message_with_text_and_content",
    ),
    fixture(WORLD, "no agent has id ", "command_names_an_unknown_agent"),
    fixture(
        WORLD,
        "no route in `routes` has provider ",
        "route_command_names_an_unknown_route",
    ),
    fixture(
        WORLD,
        "so `route` is below",
        "register_route_index_beyond_the_routes_of_that_name",
    ),
    fixture(
        WORLD,
        "so it cannot be disposed (configured: ",
        "plugin_dispose_of_an_unconfigured_plugin",
    ),
    fixture(
        WORLD,
        "is not `pending`, so there is nothing to settle",
        "settle_model_of_a_model_that_is_not_pending",
    ),
    fixture(
        WORLD,
        "`settle_model` has exactly one of `returns` and `rejects`",
        "settle_model_with_returns_and_rejects",
    ),
    fixture(
        WORLD,
        "a route's act cannot record",
        "route_act_that_records",
    ),
    fixture(
        WORLD,
        "a route's act is one act op: ",
        "route_act_that_is_no_act_op",
    ),
    fixture(
        COMMANDS,
        "an llm/stream listener is synchronous: it cannot sleep",
        "llm_stream_listener_that_sleeps",
    ),
    fixture(
        COMMANDS,
        "a session append hook runs synchronously inside `session.append`",
        "session_append_hook_that_sleeps",
    ),
    fixture(
        STEP_INPUTS,
        "no earlier step captures it so",
        "step_input_ref_captured_later",
    ),
    fixture(
        STEP_INPUTS,
        "which does not run before it",
        "step_input_from_a_later_step",
    ),
    Refusal {
        file: STEP_INPUTS,
        fragment: "Err(message) => return fail(path, message)",
        trigger: Trigger::Forwarded("step_input_from_of_the_wrong_shape"),
    },
    fixture(
        WORLD,
        "a route pauses with a `{ sleep_ms = N }` part, not an act",
        "route_act_that_sleeps",
    ),
    fixture(
        WORLD,
        " ms of virtual time per case",
        "simulation_budget_over_the_limit",
    ),
    fixture(
        WORLD,
        "the clock could pass ",
        "clock_could_pass_the_end_of_date",
    ),
    fixture(
        WORLD,
        "give either `parts` or the shorthands",
        "route_response_with_parts_and_shorthands",
    ),
    fixture(
        WORLD,
        "a response that hangs raises no error",
        "route_response_that_hangs_and_raises",
    ),
    fixture(WORLD, "a part is an object", "route_part_is_not_an_object"),
    fixture(
        WORLD,
        "a part has a string `type`, or is a pause",
        "route_part_without_a_type",
    ),
    fixture(
        WORLD,
        "status, provider_retry_after_ms and request_id need a `code`",
        "scripted_error_facts_without_a_code",
    ),
    fixture(
        WORLD,
        "an LlmError message is non-empty",
        "scripted_error_with_an_empty_message",
    ),
    fixture(
        WORLD,
        "an LlmError code is non-empty",
        "scripted_error_with_an_empty_code",
    ),
    fixture(
        WORLD,
        "a status is from 100 through 599",
        "scripted_error_status_out_of_range",
    ),
    fixture(
        WORLD,
        "a retry-after is positive",
        "scripted_error_retry_after_zero",
    ),
    fixture(
        WORLD,
        "a request id is non-empty",
        "scripted_error_with_an_empty_request_id",
    ),
    // The loader.
    fixture(
        LOAD,
        "scenario format 1 is no longer read; `dshc migrate ",
        "format_1_is_refused",
    ),
    Refusal {
        file: LOAD,
        fragment: "let message = error.message().trim_end()",
        trigger: Trigger::Forwarded("unknown_step_field"),
    },
    Refusal {
        file: LOAD,
        fragment: "cannot read: ",
        trigger: Trigger::Api {
            why: "about the path, not a file's contents: nothing is there",
            error: load_missing_file,
            expected: "<tmp>/missing.toml: cannot read: No such file or directory (os error 2)",
        },
    },
    Refusal {
        file: LOAD,
        fragment: "is a folder, not a file",
        trigger: Trigger::Api {
            why: "about the path, not a file's contents: a folder named like a scenario",
            error: load_folder,
            expected: "<tmp>/folder.toml: is a folder, not a file",
        },
    },
    Refusal {
        file: LOAD,
        fragment: " is not a regular file",
        trigger: Trigger::Api {
            why: "about the path, not a file's contents: a socket named like a scenario",
            error: load_socket,
            expected: "<tmp>/socket.toml: cannot read: a socket is not a regular file",
        },
    },
    Refusal {
        file: LOAD,
        fragment: "-byte limit for files dshc reads",
        trigger: Trigger::Api {
            why: "a 4 MiB fixture is not worth committing; the file is written here",
            error: load_oversized_file,
            expected: "<tmp>/large.toml: larger than the 4194304-byte limit for files dshc reads",
        },
    },
    fixture(
        LOAD,
        "not valid UTF-8 (a scenario is UTF-8 text)",
        "not_utf8",
    ),
];

/// The sources the refusals live in, by path below `src/`.
const SOURCES: &[(&str, &str)] = &[
    (COMMANDS, include_str!("../../src/compile/commands.rs")),
    (
        EVENT_TYPES,
        include_str!("../../src/compile/event_types.rs"),
    ),
    (EXPECT, include_str!("../../src/compile/expect.rs")),
    (MOD, include_str!("../../src/compile/mod.rs")),
    (WORLD, include_str!("../../src/compile/world.rs")),
    (
        STEP_INPUTS,
        include_str!("../../src/compile/step_inputs.rs"),
    ),
    (LOAD, include_str!("../../src/load.rs")),
    (PROVIDERS, include_str!("../../src/protocol/providers.rs")),
    (LOOP_OPS, include_str!("../../src/protocol/loop_ops.rs")),
    (PLAIN_JSON, include_str!("../../src/protocol/plain_json.rs")),
];

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn source(file: &str) -> &'static str {
    SOURCES
        .iter()
        .find(|(name, _)| *name == file)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("no source {file}"))
}

/// The fixture's name, for the two triggers that have one.
fn fixture_name(trigger: &Trigger) -> Option<&'static str> {
    match trigger {
        Trigger::Fixture(name) | Trigger::Forwarded(name) => Some(name),
        Trigger::Api { .. } => None,
    }
}

/// Load a fixture; its error as displayed, the path relative to this crate,
/// and what its first line says it should be.
fn fixture_error(name: &str) -> (String, String) {
    let path = crate_dir()
        .join("tests/invalid")
        .join(format!("{name}.toml"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let expected = std::str::from_utf8(first_line)
        .ok()
        .and_then(|line| line.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{name}.toml: the first line is not `# expect: <error>`"))
        .to_string();
    let actual = match load_scenario(&path) {
        Ok(_) => "(loads without an error)".to_string(),
        Err(error) => error
            .to_string()
            .replace(&format!("{}/", crate_dir().display()), ""),
    };
    (expected, actual)
}

#[test]
fn every_fixture_is_refused_with_its_expected_error() {
    let mut wrong = Vec::new();
    for refusal in REFUSALS {
        let Some(name) = fixture_name(&refusal.trigger) else {
            continue;
        };
        let (expected, actual) = fixture_error(name);
        if actual != expected {
            wrong.push(format!(
                "{name}.toml\n  expected: {expected}\n  actual:   {actual}"
            ));
        } else if matches!(refusal.trigger, Trigger::Fixture(_))
            && !actual.contains(refusal.fragment)
        {
            wrong.push(format!(
                "{name}.toml is refused, but not with {:?}: {actual}",
                refusal.fragment
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_refusal_no_file_can_trigger_is_triggered_through_the_api() {
    for refusal in REFUSALS {
        if let Trigger::Api {
            why,
            error,
            expected,
        } = &refusal.trigger
        {
            assert!(!why.is_empty());
            let actual = error();
            assert_eq!(&actual, expected, "{}", refusal.fragment);
            assert!(actual.contains(refusal.fragment), "{actual}");
        }
    }
}

#[test]
fn every_fixture_is_listed_once() {
    let mut listed: Vec<&str> = REFUSALS
        .iter()
        .filter_map(|r| fixture_name(&r.trigger))
        .collect();
    listed.sort_unstable();
    let before = listed.len();
    listed.dedup();
    assert_eq!(before, listed.len(), "a fixture is listed twice");
    let mut found: Vec<String> = std::fs::read_dir(crate_dir().join("tests/invalid"))
        .expect("tests/invalid")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    let listed: Vec<String> = listed.iter().map(|name| format!("{name}.toml")).collect();
    assert_eq!(
        found, listed,
        "tests/invalid holds exactly the listed fixtures"
    );
}

#[test]
fn every_refusal_in_the_source_is_listed() {
    // The compiler's sources are exactly the ones read here.
    let mut compile_files: Vec<String> = std::fs::read_dir(crate_dir().join("src/compile"))
        .expect("src/compile")
        .map(|entry| {
            format!(
                "compile/{}",
                entry.expect("an entry").file_name().to_string_lossy()
            )
        })
        .collect();
    compile_files.sort();
    let mut read: Vec<String> = SOURCES
        .iter()
        .map(|(name, _)| name.to_string())
        .filter(|name| name.starts_with("compile/"))
        .collect();
    read.sort();
    assert_eq!(
        compile_files, read,
        "SOURCES lists every file of src/compile"
    );
    // Each listed refusal is in its source; a compiler refusal exactly once.
    for refusal in REFUSALS {
        let occurrences = source(refusal.file).matches(refusal.fragment).count();
        assert!(
            occurrences == 1 || (refusal.file == LOAD && occurrences > 0),
            "{}: {:?} occurs {occurrences} times",
            refusal.file,
            refusal.fragment
        );
    }
    // Each refusal of the compiler is one `fail(` call, and each is listed.
    for (file, text) in SOURCES
        .iter()
        .filter(|(name, _)| name.starts_with("compile/"))
    {
        let calls = text.matches("fail(").count();
        let listed = REFUSALS.iter().filter(|r| r.file == *file).count();
        assert_eq!(
            calls, listed,
            "{file} has {calls} `fail(` calls and {listed} listed refusals: \
             give a new refusal a fixture in tests/invalid and an entry in REFUSALS"
        );
    }
}

/// A format 1 scenario built in code, compiled.
fn compile_format_1() -> String {
    let scenario: Scenario =
        toml::from_str("format = 1\ntitle = \"t\"\ncovers = [\"01:R1.1\"]\n").expect("parses");
    match compile("old", &scenario) {
        Ok(_) => "(compiles)".into(),
        Err(error) => error.to_string(),
    }
}

/// A loop case with no world, as a client could send one.
fn validate_loop_case_without_world() -> String {
    let case: Case = serde_json::from_value(serde_json::json!({
        "id": "x", "level": "loop", "config": {}, "commands": []
    }))
    .expect("a case");
    match validate_case(&case) {
        Ok(()) => "(valid)".into(),
        Err(error) => error.to_string(),
    }
}

/// A fresh folder for one API trigger.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dshc-refusals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

/// Load `path` from the scratch folder `dir`, then remove the folder.
fn load_in(dir: &Path, path: &Path) -> String {
    let shown = match load_scenario(path) {
        Ok(_) => "(loads)".to_string(),
        Err(LoadError { path, message, .. }) => format!(
            "{}: {message}",
            path.display()
                .to_string()
                .replace(&dir.display().to_string(), "<tmp>")
        ),
    };
    let _ = std::fs::remove_dir_all(dir);
    shown
}

fn load_missing_file() -> String {
    let dir = scratch("missing");
    load_in(&dir, &dir.join("missing.toml"))
}

fn load_folder() -> String {
    let dir = scratch("folder");
    let folder = dir.join("folder.toml");
    std::fs::create_dir(&folder).expect("a folder");
    load_in(&dir, &folder)
}

fn load_socket() -> String {
    let dir = scratch("socket");
    let socket = dir.join("socket.toml");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("a socket");
    load_in(&dir, &socket)
}

fn load_oversized_file() -> String {
    let dir = scratch("large");
    let file = dir.join("large.toml");
    let size = usize::try_from(MAX_FILE_BYTES + 1).expect("fits");
    std::fs::write(&file, vec![b'#'; size]).expect("written");
    load_in(&dir, &file)
}
