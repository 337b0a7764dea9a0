//! The informational routes, answered from the catalog and the script's balance
//! without touching the script cursor: `GET /models`, `GET /models/{id}` and
//! `GET /user/balance`.

use bytes::Bytes;

use super::{Handled, RequestOutcome, State};
use crate::catalog::CatalogModel;
use crate::render::{BodyAction, ResponsePlan};
use crate::wire::{BalanceInfoWire, BalanceWire, ModelListWire, ModelWire, to_json};

impl State {
    /// `GET /models`: the effective catalog.
    pub(super) fn list_models(&self) -> Handled {
        info(
            200,
            to_json(&ModelListWire {
                object: "list",
                data: self.catalog.iter().map(model_wire).collect(),
            }),
        )
    }

    /// `GET /models/{id}`: one catalog model, or a 404 for an id it does not have.
    pub(super) fn describe_model(&self, id: &str) -> Handled {
        match self.catalog.iter().find(|model| model.id == id) {
            Some(model) => info(200, to_json(&model_wire(model))),
            None => Handled::rejected(
                404,
                format!("The model `{id}` does not exist"),
                "model_not_found",
                None,
            ),
        }
    }

    /// `GET /user/balance`: the script's balance (or the default), with its total.
    pub(super) fn report_balance(&self) -> Handled {
        let balance = self.script.balance.clone().unwrap_or_default();
        let total = crate::script::add_decimal_strings(
            &balance.granted_balance,
            &balance.topped_up_balance,
        )
        .unwrap_or_default();
        info(
            200,
            to_json(&BalanceWire {
                is_available: balance.is_available,
                balance_infos: vec![BalanceInfoWire {
                    currency: &balance.currency,
                    total_balance: total,
                    granted_balance: &balance.granted_balance,
                    topped_up_balance: &balance.topped_up_balance,
                }],
            }),
        )
    }
}

/// An informational answer: `body` as JSON with `status`.
fn info(status: u16, body: String) -> Handled {
    Handled {
        plan: ResponsePlan {
            head_delay_ms: 0,
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![BodyAction::Send(Bytes::from(body))],
            closes_before_head: false,
        },
        outcome: RequestOutcome::Info { status },
        body_json: None,
        prompt: None,
        usage: None,
    }
}

fn model_wire(model: &CatalogModel) -> ModelWire<'_> {
    ModelWire {
        id: &model.id,
        object: "model",
        owned_by: &model.owned_by,
    }
}
