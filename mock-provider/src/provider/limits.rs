//! The limits a provider and its server arms enforce, so that malformed or
//! oversized input and a long-running server stay bounded.

/// Limits the HTTP server enforces (malformed or oversized input gets a 4xx, never a panic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest accepted request body; larger bodies get 413. Default 16 MiB.
    pub max_body_bytes: usize,
    /// Most request headers accepted; more gets 431 (from hyper). Default 100.
    pub max_headers: usize,
    /// Largest request head (request line + headers) in bytes; more gets 431. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Close a connection whose next request head does not arrive within this many
    /// milliseconds of tokio time. hyper starts this timer whenever the connection waits
    /// for a head, *including while an idle keep-alive connection waits for the next
    /// request*, so it also models a server closing idle connections. Default `None`
    /// (off): a simulated client that backs off for minutes between retries keeps its
    /// connection. Set e.g. `Some(30_000)` to model slow-head / idle-close behavior.
    pub header_read_timeout_ms: Option<u64>,
    /// Answer 408 and close the connection when a request's body has not
    /// arrived whole within this many milliseconds (tokio time, so virtual
    /// under turmoil) of its head: a client that trickles its body holds its
    /// connection slot ([`ServerLimits::max_connections`]) no longer than this.
    /// The deadline covers the whole body, not each read, so a byte every few
    /// seconds does not extend it. Default `None` (off), like
    /// [`ServerLimits::header_read_timeout_ms`]; `dshc serve` sets both.
    pub body_read_timeout_ms: Option<u64>,
    /// Most connections served at once; further ones wait in the listen
    /// backlog until one closes. Default 256.
    pub max_connections: usize,
    /// Most requests kept in the request log; the oldest are dropped
    /// first (request numbers go on counting). Default 10 000.
    pub max_logged_requests: usize,
    /// Most body bytes kept in the request log, over all logged requests;
    /// the oldest requests are dropped first. Default 64 MiB.
    pub max_logged_body_bytes: usize,
    /// Most token-id bytes the prefix cache keeps (4 a token), over all
    /// models; the prompts recorded first are evicted first. Default 256 MiB.
    pub max_cached_prompt_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 * 1024 * 1024,
            max_headers: 100,
            max_header_bytes: 64 * 1024,
            header_read_timeout_ms: None,
            body_read_timeout_ms: None,
            max_connections: 256,
            max_logged_requests: 10_000,
            max_logged_body_bytes: 64 * 1024 * 1024,
            max_cached_prompt_bytes: crate::prompt_cache::DEFAULT_MAX_CACHED_PROMPT_BYTES,
        }
    }
}
