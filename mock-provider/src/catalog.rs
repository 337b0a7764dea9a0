//! The models the mock serves and their limits, so `/models` lists them, a
//! context overflow quotes the requested model's own window, and a script can
//! add or replace models without editing code.
//!
//! The built-in catalog holds the models DeepSeek serves today: the V4 pair
//! the upstream DeepSeek adapter ships in its own catalog (1,000,000-token
//! windows). The legacy ids `deepseek-chat` and `deepseek-reasoner` were
//! retired on 2026-07-24 and are not listed; a script that emulates the API
//! before that day adds them under `models`. A model the catalog does not
//! list is still served (ports and tests use their own ids) with
//! [`DEFAULT_CONTEXT_WINDOW_TOKENS`], unless the script turns on
//! [`crate::script::Validation::known_model`], which answers DeepSeek's
//! `Model Not Exist`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Window of a model the catalog does not list (upstream's `defaultContextWindow`).
pub const DEFAULT_CONTEXT_WINDOW_TOKENS: u64 = 1_000_000;

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    /// The model id clients send as `model` (and `/models` lists).
    pub id: String,
    /// Prompt plus completion tokens the model accepts; a request asking for
    /// more is answered with DeepSeek's context-length 400.
    pub context_window: u64,
    /// The largest `max_tokens` the model accepts; more (or 0) is answered
    /// with DeepSeek's `Invalid max_tokens value` 400. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// `owned_by` in `/models` (default `deepseek`).
    #[serde(default = "default_owner")]
    pub owned_by: String,
}

fn default_owner() -> String {
    "deepseek".to_owned()
}

/// The built-in models, in the order `/models` lists them.
pub fn builtin_models() -> Vec<CatalogModel> {
    // The output limit is the range DeepSeek's `Invalid max_tokens value`
    // error quotes for V4 (docs/mock-provider.md cites it): [1, 393216].
    [
        ("deepseek-v4-flash", 1_000_000, 393_216),
        ("deepseek-v4-pro", 1_000_000, 393_216),
    ]
    .into_iter()
    .map(|(id, context_window, max_output_tokens)| CatalogModel {
        id: id.to_owned(),
        context_window,
        max_output_tokens: Some(max_output_tokens),
        owned_by: default_owner(),
    })
    .collect()
}

/// The catalog a script serves: the built-in models, each replaced by a
/// script model of the same id, then the script's other models in order.
pub fn effective_catalog(script_models: &[CatalogModel]) -> Vec<CatalogModel> {
    let mut models: Vec<CatalogModel> = builtin_models()
        .into_iter()
        .map(|builtin| {
            script_models
                .iter()
                .find(|model| model.id == builtin.id)
                .cloned()
                .unwrap_or(builtin)
        })
        .collect();
    for model in script_models {
        if !models.iter().any(|known| known.id == model.id) {
            models.push(model.clone());
        }
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_models_replace_and_extend_the_builtin_ones() {
        let custom = |id: &str, window| CatalogModel {
            max_output_tokens: None,
            id: id.into(),
            context_window: window,
            owned_by: "me".into(),
        };
        let catalog = effective_catalog(&[
            custom("port-model", 8_192),
            custom("deepseek-v4-pro", 64),
            custom("deepseek-chat", 131_072),
        ]);
        let ids: Vec<&str> = catalog.iter().map(|model| model.id.as_str()).collect();
        // The retired legacy ids are listed only when a script adds them.
        assert_eq!(
            ids,
            [
                "deepseek-v4-flash",
                "deepseek-v4-pro",
                "port-model",
                "deepseek-chat"
            ]
        );
        assert_eq!(catalog[1].context_window, 64);
        assert_eq!(catalog[1].owned_by, "me");
        assert_eq!(catalog[0].context_window, DEFAULT_CONTEXT_WINDOW_TOKENS);
    }
}
