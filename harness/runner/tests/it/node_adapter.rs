//! The node adapter tested on its own, in the README's test command: its
//! type check (`tsc --checkJs` over every `.mjs` file) and its `node --test`
//! unit tests, through `adapters/node-dsh/test.sh` (which installs the
//! pinned npm packages on first use, as `run` does).

use std::path::Path;
use std::process::Command;

#[test]
fn the_node_adapter_type_checks_and_passes_its_unit_tests() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters/node-dsh/test.sh");
    let output = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{stderr}",
        script.display(),
        output.status
    );
    // node's test runner closes with its counts; at least one test ran and
    // none failed.
    let count = |label: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(&format!("# {label} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    assert!(
        count("pass").is_some_and(|n| n > 0),
        "no test passed:\n{stdout}"
    );
    assert_eq!(count("fail"), Some(0), "{stdout}");
}
