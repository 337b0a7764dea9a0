//! Which route a request path names, and the checks every request passes before
//! its route is answered: a known path, the route's method, a body within the limit.
//! The chat API's paths may carry `/v1` or `/beta`; the Anthropic API has one
//! path, `/anthropic/v1/messages` (the SDKs append `/v1/messages` to the base).

use super::{Handled, IncomingRequest, ServerLimits};

/// What a request path asks for. Every path may carry one `/v1` or `/beta`
/// prefix (the bases OpenAI-style clients and LiteLLM use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /chat/completions`; `beta` when under `/beta` (prefix completion).
    Chat {
        /// Arrived under `/beta`.
        beta: bool,
    },
    /// `POST /completions`: fill-in-the-middle text completion.
    Fim,
    /// `GET /models`.
    Models,
    /// `GET /models/{id}`.
    Model(String),
    /// `GET /user/balance`.
    Balance,
    /// `POST /anthropic/v1/messages`: DeepSeek's Anthropic-compatible API.
    Messages,
}

/// The base of DeepSeek's Anthropic-compatible API; every answer under it
/// has Anthropic's shapes, errors included.
pub(crate) const ANTHROPIC_BASE: &str = "/anthropic";

/// Whether `path` is under the Anthropic base.
pub(crate) fn is_anthropic(path: &str) -> bool {
    path.strip_prefix(ANTHROPIC_BASE)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Route {
    /// The route of `path`, or `None` for a path the API does not have.
    /// Runs of slashes count as one (`//chat/completions`, what a base URL
    /// with a trailing slash gives), as DeepSeek's front server (openresty,
    /// nginx's `merge_slashes`) treats them. Fill-in-the-middle is served
    /// only under `/beta`, the one base DeepSeek documents it at.
    pub fn of(path: &str) -> Option<Self> {
        let merged = merge_slashes(path);
        let path = merged.as_str();
        if let Some(rest) = path.strip_prefix(ANTHROPIC_BASE) {
            return (rest == "/v1/messages").then_some(Self::Messages);
        }
        let (beta, rest) = if let Some(rest) = path.strip_prefix("/beta") {
            (true, rest)
        } else {
            (false, path.strip_prefix("/v1").unwrap_or(path))
        };
        match rest {
            "/chat/completions" => Some(Self::Chat { beta }),
            "/completions" if beta => Some(Self::Fim),
            "/models" => Some(Self::Models),
            "/user/balance" => Some(Self::Balance),
            _ => rest
                .strip_prefix("/models/")
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(|id| Self::Model(id.to_owned())),
        }
    }

    /// The path of a route that exists only under `/beta`, named in a 404.
    fn beta_only(path: &str) -> bool {
        let merged = merge_slashes(path);
        merged.strip_prefix("/v1").unwrap_or(&merged) == "/completions"
    }

    fn method(&self) -> &'static str {
        match self {
            Self::Chat { .. } | Self::Fim | Self::Messages => "POST",
            Self::Models | Self::Model(_) | Self::Balance => "GET",
        }
    }
}

/// The route of `request`, or the 404, 405 or 413 it gets instead (boxed: the
/// error is large, the path cold).
pub(super) fn admit(
    request: &IncomingRequest,
    limits: &ServerLimits,
) -> Result<Route, Box<Handled>> {
    let Some(route) = Route::of(&request.path) else {
        let hint = if Route::beta_only(&request.path) {
            ": FIM completion is a beta feature, served under the /beta base URL"
        } else {
            ""
        };
        return Err(Box::new(Handled::rejected(
            404,
            format!("No route for {} {}{hint}", request.method, request.path),
            "not_found",
            None,
        )));
    };
    let method = route.method();
    if request.method != method {
        let mut handled = Handled::rejected(
            405,
            format!(
                "Method {} is not allowed on {}; use {method}",
                request.method, request.path
            ),
            "method_not_allowed",
            None,
        );
        handled.plan.headers.push(("allow".into(), method.into()));
        return Err(Box::new(handled));
    }
    if request.body.len() > limits.max_body_bytes {
        return Err(Box::new(Handled::rejected(
            413,
            format!(
                "Request body is larger than the limit of {} bytes",
                limits.max_body_bytes
            ),
            "request_too_large",
            None,
        )));
    }
    Ok(route)
}

/// `path` with each run of slashes made one.
fn merge_slashes(path: &str) -> String {
    let mut merged = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && merged.ends_with('/')) {
            merged.push(c);
        }
    }
    merged
}
