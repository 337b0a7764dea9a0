//! The bundled scenario suite, embedded in the binary at build time (see
//! `build.rs`), so that an installed `dshc` gates an implementation from any
//! directory with the suite of its own version: `dshc check --adapter CMD`
//! with no paths runs it, and `dshc scenarios export DIR` writes it out.
//!
//! A run reads the suite from files like any other: it is written once per
//! suite version into the user's cache (`$DSHC_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/dshc`, else `~/.cache/dshc`, else the temporary folder),
//! under a folder named by the suite's digest, so that scenario ids, the
//! clause catalog and error positions are what they are in a checkout. The
//! folder appears whole or not at all: it is written beside its final name
//! and renamed into place.

use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/suite.rs"));
}

/// The embedded files: each path below `scenarios/` with its bytes.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    embedded::FILES
}

/// The number of scenario files in the suite.
pub fn scenario_count() -> usize {
    files()
        .iter()
        .filter(|(path, _)| path.ends_with(".toml") && *path != "clauses.toml")
        .count()
}

/// The folder the suite's copies live under, one per suite version.
fn cache_root() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("DSHC_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("dshc");
    }
    if let Some(home) = var("HOME") {
        return PathBuf::from(home).join(".cache").join("dshc");
    }
    std::env::temp_dir().join("dshc")
}

/// The `scenarios` folder of this version's copy of the suite, written on
/// first use.
pub fn materialized() -> anyhow::Result<PathBuf> {
    let version = format!(
        "suite-{}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        embedded::DIGEST
    );
    let root = cache_root();
    let home = root.join(&version);
    let scenarios = home.join("scenarios");
    if scenarios.is_dir() {
        return Ok(scenarios);
    }
    std::fs::create_dir_all(&root)
        .map_err(|e| anyhow::anyhow!("cannot create the suite cache {}: {e}", root.display()))?;
    // Each writer fills its own folder, then renames it into place; a
    // concurrent writer that renamed first wins, with the same contents.
    let partial = root.join(format!("{version}.partial-{}", std::process::id()));
    let written = write_tree(&partial.join("scenarios"));
    let renamed = written.and_then(|()| std::fs::rename(&partial, &home));
    if let Err(error) = renamed {
        let _ = std::fs::remove_dir_all(&partial);
        if !scenarios.is_dir() {
            anyhow::bail!(
                "cannot write the embedded suite to {}: {error}",
                home.display()
            );
        }
    }
    Ok(scenarios)
}

/// Write every embedded file below `dir`, which must not hold any of them.
fn write_tree(dir: &Path) -> std::io::Result<()> {
    for (relative, bytes) in files() {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::io::Write::write_all(&mut file, bytes)?;
    }
    Ok(())
}

/// `dshc scenarios export DIR`: write the suite to `DIR/scenarios`, which
/// must not exist yet (nothing is overwritten). Returns that folder.
pub fn export(dir: &Path) -> anyhow::Result<PathBuf> {
    let target = dir.join("scenarios");
    if target.exists() {
        anyhow::bail!(
            "{} already exists; export writes a new folder and overwrites nothing",
            target.display()
        );
    }
    write_tree(&target).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", target.display()))?;
    Ok(target)
}
