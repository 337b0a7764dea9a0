//! A progress line for long runs on a terminal; silent when stderr is not
//! one (CI, pipes), so logs stay clean.

use std::io::IsTerminal;

/// Progress over `total` items.
pub struct Progress {
    total: u64,
    enabled: bool,
}

impl Progress {
    /// Progress over `total` items, shown only on an interactive terminal.
    pub fn new(total: u64) -> Self {
        Progress {
            total,
            enabled: std::io::stderr().is_terminal() && std::env::var_os("CI").is_none(),
        }
    }

    /// Show that `done` items are done (redrawn every tenth item).
    pub fn tick(&self, done: u64) {
        const WIDTH: u64 = 30;
        if self.enabled && done.is_multiple_of(10) {
            let filled = (done * WIDTH).checked_div(self.total).unwrap_or(WIDTH) as usize;
            let bar = format!(
                "{}{}",
                "#".repeat(filled),
                ".".repeat(WIDTH as usize - filled.min(WIDTH as usize))
            );
            eprint!("\r[{bar}] {done}/{}", self.total);
        }
    }

    /// Erase the line before other output.
    pub fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[K");
        }
    }
}
