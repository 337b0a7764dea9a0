//! The session's images: an attachment service holding a few stored images
//! (now and then one whose read fails), prompts and tool results that show
//! them (now and then one the service does not hold, or one whose reference
//! misstates its size), the agents' model accepting images or not, and a
//! small request bound now and then, so the image path, its refusals and its
//! omitted images all come up.

use serde_json::{Value, json};

use super::Generator;
use dshc_scenario::protocol::*;

/// Stored images: their media type, canonical base64 and decoded size.
const STORED: &[(&str, &str, u64)] = &[
    ("image/png", "iVBORw0KGgo=", 8),
    ("image/jpeg", "/9j/4A==", 4),
    ("image/gif", "R0lGODlh", 6),
    ("image/webp", "UklGRg==", 4),
];

/// The model the agents use unless their options say otherwise.
const AGENTS_MODEL: &str = "deepseek-v4-flash";

/// What a session's images are, once drawn.
#[derive(Clone, Debug, Default)]
pub(super) struct ImageWorld {
    /// The service's images (`None`: the deployment has no service).
    held: Option<Vec<AttachmentSpec>>,
    /// The references image blocks may carry.
    refs: Vec<Value>,
    /// Whether the agents' model is listed as accepting images.
    accepted: bool,
    /// `max_request_image_bytes`, when drawn.
    bound: Option<u64>,
}

impl Generator {
    /// The session's images, if the swarm keeps them.
    pub(super) fn image_world(&mut self) -> Option<ImageWorld> {
        if !self.roll("images") {
            return None;
        }
        let count = 1 + self.rng.below(3) as usize;
        let mut held = Vec::new();
        let mut refs = Vec::new();
        for index in 0..count {
            let (media_type, data, bytes) = *self.rng.pick(STORED);
            let id = format!("img-{index}");
            let error = self.rng.percent(8).then(|| AttachmentFailure {
                code: "ATTACHMENT_CORRUPT".into(),
                message: "Stored image failed its digest check.".into(),
            });
            // Mostly the true size; now and then one the bound misjudges.
            let stated = match self.rng.below(10) {
                0 => json!(bytes * 1_000),
                1 => Value::Null,
                _ => json!(bytes),
            };
            let mut attachment = json!({"attachmentId": id, "mediaType": media_type});
            if !stated.is_null() {
                attachment["bytes"] = stated;
            }
            attachment["width"] = json!(1);
            attachment["height"] = json!(1);
            refs.push(attachment);
            held.push(AttachmentSpec {
                id,
                media_type: media_type.into(),
                data: data.into(),
                error,
            });
        }
        if self.rng.percent(5) {
            refs.push(json!({"attachmentId": "missing", "mediaType": "image/png", "bytes": 8, "width": 1, "height": 1}));
        }
        Some(ImageWorld {
            held: self.rng.percent(90).then_some(held),
            refs,
            accepted: self.rng.percent(85),
            bound: self.rng.percent(25).then(|| *self.rng.pick(&[8, 16, 40])),
        })
    }

    /// An image block, when the session has images and the draw says so.
    fn image_block(&mut self, percent: u64) -> Option<Value> {
        let refs = self.images.as_ref()?.refs.clone();
        self.rng
            .percent(percent)
            .then(|| json!({"type": "image", "attachment": self.rng.pick(&refs).clone()}))
    }

    /// A prompt's content with an image, now and then: its text, then the
    /// image (or the image first).
    pub(super) fn prompt_content(&mut self, text: &str) -> Option<Vec<Value>> {
        let image = self.image_block(40)?;
        let text = json!({"type": "text", "text": text});
        Some(if self.rng.percent(70) {
            vec![text, image]
        } else {
            vec![image, text]
        })
    }

    /// A tool result's content with an image, now and then: the image alone
    /// or after a text.
    pub(super) fn tool_content(&mut self, text: &str) -> Option<Vec<Value>> {
        let image = self.image_block(30)?;
        Some(if self.rng.percent(50) {
            vec![image]
        } else {
            vec![json!({"type": "text", "text": text}), image]
        })
    }

    /// The deployment's side of the images: the agents' model listed as
    /// accepting them, the service, the bound.
    pub(super) fn image_settings(&self, adapter: &mut AdapterSpec) {
        let Some(images) = &self.images else {
            return;
        };
        if images.accepted {
            let modalities = Some(vec![Modality::Text, Modality::Image]);
            match adapter.models.iter_mut().find(|m| m.id == AGENTS_MODEL) {
                Some(model) => model.input_modalities = modalities,
                None => adapter.models.push(ModelSpec {
                    id: AGENTS_MODEL.into(),
                    context_window: None,
                    max_tokens: None,
                    input_modalities: modalities,
                }),
            }
        }
        adapter.attachments = images.held.clone();
        adapter.max_request_image_bytes = images.bound;
    }
}
