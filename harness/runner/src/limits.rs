//! Every resource limit dshc applies, in one place, each named with its
//! unit. The README's "Limits" table lists them; flags that change one say
//! so in their help.
//!
//! A limit that is reached gives a clear outcome for the case or request at
//! hand (a timeout, a run failure naming the limit, an HTTP 4xx), never a
//! hang, a panic, or a failure of the whole run.

/// How long one case may take on an adapter (`dshc check --timeout-ms`).
pub const CASE_TIMEOUT_MS: u64 = 10_000;
/// How long an adapter's first `start` may stay silent, installs included
/// (`--handshake-timeout-ms`): stderr output restarts the wait; restarts
/// shake hands within the case timeout.
pub const HANDSHAKE_TIMEOUT_MS: u64 = 300_000;
/// The longest reply line an adapter may write (`--max-reply-bytes`).
pub const MAX_REPLY_BYTES: usize = 8 << 20;
/// The latest epoch milliseconds a simulated clock may reach (JavaScript's `Date` range).
pub use dshc_scenario::compile::MAX_EPOCH_MS;
/// The most busy virtual time one loop case may span (`simulation.budget_ms`
/// above it is refused at load).
pub use dshc_scenario::compile::MAX_VIRTUAL_TIME_MS;
/// The largest scenario, catalog, expected-failures, script or log file read.
pub use dshc_scenario::load::MAX_FILE_BYTES;
/// The most files one scenario walk collects (symlink loops are never followed twice).
pub use dshc_scenario::load::MAX_WALK_FILES;
/// `dshc serve`: how long a connection may wait for its next request head
/// before it is closed (idle keep-alive connections included).
pub const SERVE_HEADER_READ_TIMEOUT_MS: u64 = 30_000;
/// `dshc serve`: how long a request's body may take to arrive whole after
/// its head; later, the request gets 408 and its connection is closed, so
/// clients trickling their bodies hold the connection slots
/// (`ServerLimits::max_connections`) no longer than this.
pub const SERVE_BODY_READ_TIMEOUT_MS: u64 = 30_000;
/// `dshc serve`: the most bytes of request lines waiting for stderr. The
/// server never waits for its outputs: a line that does not fit (stderr is a
/// pipe nobody reads) is dropped, and the count is printed once stderr
/// takes lines again.
pub const SERVE_STDERR_QUEUE_BYTES: usize = 1 << 20;
/// `dshc serve --log`: the most bytes of JSON lines waiting to be written to
/// the log; a request whose line does not fit is left out of the log (its
/// `request_number` shows the gap) and the count is reported on stderr.
pub const SERVE_LOG_QUEUE_BYTES: usize = 64 << 20;
/// The most `--jobs` a command takes: each is a thread (and for `check` and
/// `diff` an adapter process), and more than the system can spawn would
/// fail the run; above it `--jobs` is refused as bad input.
pub const MAX_JOBS: usize = 256;
/// The longest report file stem an implementation's name becomes: well
/// under the 255 bytes a file name may have, with room for `.junit.xml`.
pub const MAX_FILE_STEM_CHARS: usize = 80;
/// The loop's bounds on one run: provider attempts per step (retries) and
/// steps in all (tool rounds).
pub use dshc_reference::LOOP_LIMITS;
/// The most bytes one bench fixture's `repeat`s expand to.
pub use dshc_reference::bench::fixture::MAX_FIXTURE_BYTES;
/// `dshc serve` and every mock provider: connections served at once, the
/// request log's length and bytes, the largest body (see
/// `mock_provider::ServerLimits`).
pub use mock_provider::ServerLimits;
/// How long `dshc bench` waits for one fixture's measurement from an
/// adapter (`bench --timeout-ms`).
pub const BENCH_TIMEOUT_MS: u64 = 300_000;
