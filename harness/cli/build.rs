//! Embeds the bundled scenario suite (`scenarios/`: the scenario files, the
//! clause catalog and the schema) in the binary, so that an installed `dshc`
//! carries the suite of the version it was built from.
//!
//! It writes `suite.rs` into `OUT_DIR`: every file below `scenarios/`, in
//! byte order of its relative path, as `(path, include_bytes!(..))`, and a
//! digest of all of them that names the suite's version in the cache.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let suite_dir = manifest_dir.join("../../scenarios");
    println!("cargo:rerun-if-changed={}", suite_dir.display());
    let mut files = Vec::new();
    collect(&suite_dir, &suite_dir, &mut files);
    files.sort();
    // FNV-1a over each path and content, with lengths, so that no two
    // different suites share a digest by concatenation.
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for chunk in [&(bytes.len() as u64).to_le_bytes()[..], bytes] {
            for byte in chunk {
                digest ^= u64::from(*byte);
                digest = digest.wrapping_mul(0x0100_0000_01b3);
            }
        }
    };
    let mut source = String::from(
        "/// Every file of the bundled suite, below `scenarios/`.\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for relative in &files {
        let absolute = suite_dir.join(relative);
        let bytes = std::fs::read(&absolute).expect("a suite file is readable");
        feed(relative.as_bytes());
        feed(&bytes);
        let absolute = absolute.canonicalize().expect("a suite file has a path");
        writeln!(
            source,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .expect("writing to a string");
    }
    source.push_str("];\n");
    writeln!(
        source,
        "/// A digest of every path and byte of [`FILES`].\npub const DIGEST: u64 = {digest:#018x};"
    )
    .expect("writing to a string");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("suite.rs");
    std::fs::write(out, source).expect("OUT_DIR is writable");
}

/// Every regular file below `dir`, as `/`-separated paths relative to `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).expect("the suite folder is readable");
    for entry in entries {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.is_file() {
            let relative = path.strip_prefix(root).expect("below the root");
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
}
