//! The image path of the request body: a request whose history holds an
//! image goes to the wire with its images as data-URL parts, read from the
//! deployment's attachment service, instead of being refused.
//!
//! It exists apart from [`crate::request`] because it needs what the text
//! path never does: the attachment service (the bytes live outside the
//! session log, which keeps only references), the catalog's input
//! modalities, and the request's image bound, over which the oldest images
//! are sent as a fixed text. The wire texts below are observable in every
//! such request body, so they are the contract's, word for word.
//!
//! Lenient where upstream would throw a `TypeError` on a malformed harness
//! request, as the text path is: an image block without an `attachment`
//! object counts as a payload of unknown size (so the bound omits it), and a
//! text block whose text is not a string is skipped.

use std::collections::BTreeMap;

use dshc_model::js::{JsError, join_element_text, object, to_number};
use serde_json::{Map, Value, json};

use crate::request::{WireBody, content_has_image, flatten_text, serialize_assistant};
use crate::*;

/// Default `maxRequestImageBytes`: 20 MiB of base64 payload per request.
pub const DEFAULT_MAX_REQUEST_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// What an image over the request's bound is sent as (dsh-llm's
/// `offloadRequestImages`).
pub const OFFLOADED_IMAGE_TEXT: &str = "[image omitted to keep the request within its image limit; older images are omitted first. If this image is still needed, read its file again when a path is available; otherwise ask the user to attach it again.]";

/// The text leading the user message that carries tool results' images.
pub const TOOL_RESULT_IMAGE_TEXT: &str = "Attached image(s) from tool result:";

/// The deployment's attachment service, as the harness world states it:
/// each `attachmentId` it holds, with the stored image or the
/// `AttachmentError` its read throws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attachments {
    held: BTreeMap<String, Result<StoredImage, AttachmentFault>>,
}

/// A stored image: its media type and its bytes in canonical base64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredImage {
    /// `image/png`, ...
    pub media_type: String,
    /// The bytes, canonical base64 (what `Buffer#toString("base64")` gives).
    pub base64: String,
}

/// The `AttachmentError` a read throws: its code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentFault {
    /// `ATTACHMENT_NOT_FOUND`, `ATTACHMENT_CORRUPT`, ...
    pub code: String,
    /// Its message.
    pub message: String,
}

/// The read of a reference that is not an object with a string
/// `attachmentId` (docs/adapter-protocol.md, "The attachment service").
const INVALID_REF: (&str, &str) = (
    "INVALID_ATTACHMENT_REF",
    "Image attachment reference is invalid.",
);
/// The read of an `attachmentId` the service does not hold.
const NOT_FOUND: (&str, &str) = ("ATTACHMENT_NOT_FOUND", "Image attachment not found.");

impl Attachments {
    /// Hold `image` under `id` (a later entry under the same id wins).
    pub fn insert(&mut self, id: &str, image: Result<StoredImage, AttachmentFault>) {
        self.held.insert(id.to_owned(), image);
    }

    /// `readImage(block.attachment)` as an `image_url` part, or the
    /// `LlmError` the adapter turns an `AttachmentError` into.
    fn image_part(&self, block: &Value) -> Result<Value, JsError> {
        let refused = |(code, message): (&str, &str)| llm_error(message, code, None, None, None);
        let id = prop(block, "attachment")
            .and_then(|attachment| prop(attachment, "attachmentId"))
            .and_then(Value::as_str)
            .ok_or_else(|| refused(INVALID_REF))?;
        match self.held.get(id) {
            None => Err(refused(NOT_FOUND)),
            Some(Err(fault)) => Err(refused((&fault.code, &fault.message))),
            Some(Ok(image)) => Ok(object([
                ("type", json!("image_url")),
                (
                    "image_url",
                    json!({"url": format!("data:{};base64,{}", image.media_type, image.base64)}),
                ),
            ])),
        }
    }
}

/// What the wire body is built from besides the harness request: the
/// deployment's thinking defaults and, for the image path, its attachment
/// service (absent: none is installed) and image bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireOptions {
    /// Thinking defaults.
    pub defaults: DeepSeekDefaults,
    /// `ctx.attachments`, when the deployment has one.
    pub attachments: Option<Attachments>,
    /// `maxRequestImageBytes`.
    pub max_request_image_bytes: u64,
    /// The catalog models whose `inputModalities` include `image`.
    pub image_models: Vec<String>,
}

impl Default for WireOptions {
    fn default() -> Self {
        WireOptions {
            defaults: DeepSeekDefaults::default(),
            attachments: None,
            max_request_image_bytes: DEFAULT_MAX_REQUEST_IMAGE_BYTES,
            image_models: Vec::new(),
        }
    }
}

/// The wire body of a request, or what the adapter's `stream()` throws
/// before sending it. A request with an image is refused for a model whose
/// catalog entry does not accept images, then for a deployment without an
/// attachment service (both `UNSUPPORTED_CONTENT`); else it takes the image
/// path. Any other request takes the text path.
pub fn wire_request<'a>(
    request: &'a Value,
    options: &WireOptions,
) -> Result<WireBody<'a>, JsError> {
    if !request_has_image(request) {
        return WireBody::text(request, &options.defaults);
    }
    let model = prop(request, "model").and_then(Value::as_str).unwrap_or("");
    if !options.image_models.iter().any(|m| m == model) {
        return Err(image_input_error(model));
    }
    let Some(attachments) = &options.attachments else {
        return Err(llm_error(
            "DeepSeek image conversion requires the durable attachment service.",
            "UNSUPPORTED_CONTENT",
            None,
            None,
            None,
        ));
    };
    serialize_request_with_images(request, attachments, options)
}

/// [`wire_request`]'s body as a JSON value.
pub fn wire_body(request: &Value, options: &WireOptions) -> Result<Value, JsError> {
    wire_request(request, options).map(|body| body.to_value())
}

/// `serializeRequestWithImages`: roles checked, the oldest images over the
/// bound replaced by text, then the system text and the history with each
/// image read from the service.
fn serialize_request_with_images<'a>(
    request: &'a Value,
    attachments: &Attachments,
    options: &WireOptions,
) -> Result<WireBody<'a>, JsError> {
    let history = items(prop(request, "messages"));
    assert_image_roles(history)?;
    let history = offload_request_images(history, options.max_request_image_bytes);
    let mut messages = Vec::new();
    if let Some(system) = prop(request, "system") {
        messages.push(object([
            ("role", json!("system")),
            ("content", system.clone()),
        ]));
    }
    messages.extend(serialize_messages_with_images(&history, attachments)?);
    WireBody::with_messages(request, messages, &options.defaults)
}

/// Only a user message can carry an image.
fn assert_image_roles(messages: &[Value]) -> Result<(), JsError> {
    for message in messages {
        let role = prop(message, "role");
        if role.and_then(Value::as_str) != Some("user")
            && content_has_image(items(prop(message, "content")))
        {
            let role = role.map_or("undefined".into(), dshc_model::js::to_js_string);
            return Err(llm_error(
                &format!(
                    "The DeepSeek chat-completions adapter cannot represent image content in a {role} message."
                ),
                "UNSUPPORTED_CONTENT",
                None,
                None,
                None,
            ));
        }
    }
    Ok(())
}

fn block_type(block: &Value) -> Option<&str> {
    prop(block, "type").and_then(Value::as_str)
}

/// The base64 length of each image's stated `bytes`, in request order and
/// nested tool results' order (NaN when not a number).
fn image_lengths(blocks: &[Value], lengths: &mut Vec<f64>) {
    for block in blocks {
        match block_type(block) {
            Some("image") => {
                let bytes = to_number(prop(block, "attachment").and_then(|a| prop(a, "bytes")));
                lengths.push((bytes / 3.0).ceil() * 4.0);
            }
            Some("tool-result") => image_lengths(items(prop(block, "content")), lengths),
            _ => {}
        }
    }
}

/// `offloadRequestImages`: while the total base64 payload is over `max`,
/// the oldest image is dropped from it; the dropped ones become
/// [`OFFLOADED_IMAGE_TEXT`] blocks. The durable history is not touched.
pub fn offload_request_images(messages: &[Value], max: u64) -> Vec<Value> {
    let mut lengths = Vec::new();
    for message in messages {
        image_lengths(items(prop(message, "content")), &mut lengths);
    }
    let mut total: f64 = lengths.iter().sum();
    let mut count = 0;
    for length in lengths {
        // As JavaScript compares: a NaN total is never within the bound.
        if total <= max as f64 {
            break;
        }
        total -= length;
        count += 1;
    }
    let mut remaining = count;
    messages
        .iter()
        .map(|message| {
            if remaining == 0 {
                return message.clone();
            }
            let mut message = message.clone();
            if let Some(Value::Array(blocks)) = message.get_mut("content") {
                replace_oldest_images(blocks, &mut remaining);
            }
            message
        })
        .collect()
}

fn replace_oldest_images(blocks: &mut [Value], remaining: &mut usize) {
    for block in blocks {
        if *remaining == 0 {
            return;
        }
        match block_type(block) {
            Some("image") => {
                *remaining -= 1;
                *block = json!({"type": "text", "text": OFFLOADED_IMAGE_TEXT});
            }
            Some("tool-result") => {
                if let Some(Value::Array(content)) = block.get_mut("content") {
                    replace_oldest_images(content, remaining);
                }
            }
            _ => {}
        }
    }
}

/// `contentParts`: text (non-empty) and image blocks as wire parts, a tool
/// result's blocks in its place.
fn content_parts(blocks: &[Value], attachments: &Attachments) -> Result<Vec<Value>, JsError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block_type(block) {
            Some("text") => match prop(block, "text") {
                Some(Value::String(text)) if !text.is_empty() => {
                    parts.push(json!({"type": "text", "text": text}));
                }
                _ => {}
            },
            Some("image") => parts.push(attachments.image_part(block)?),
            Some("tool-result") => {
                parts.extend(content_parts(items(prop(block, "content")), attachments)?);
            }
            _ => {}
        }
    }
    Ok(parts)
}

fn is_image_part(part: &Value) -> bool {
    part["type"] == "image_url"
}

/// `userContent`: the parts as an array when one is an image, else their
/// texts joined (the compact string form).
fn user_content(parts: Vec<Value>) -> Value {
    if parts.iter().any(is_image_part) {
        return Value::Array(parts);
    }
    Value::String(
        parts
            .iter()
            .map(|part| join_element_text(part.get("text")))
            .collect(),
    )
}

fn content_is_empty(content: &Value) -> bool {
    match content {
        Value::String(text) => text.is_empty(),
        Value::Array(parts) => parts.is_empty(),
        _ => false,
    }
}

/// `serializeMessagesWithImages`: as the text path, but user content keeps
/// its images as parts, and the images of consecutive tool results follow
/// them in one user message of their own.
fn serialize_messages_with_images(
    messages: &[Value],
    attachments: &Attachments,
) -> Result<Vec<Value>, JsError> {
    let mut wire = Vec::new();
    let mut pending_images: Vec<Value> = Vec::new();
    let flush = |wire: &mut Vec<Value>, pending: &mut Vec<Value>| {
        if pending.is_empty() {
            return;
        }
        let mut content = vec![json!({"type": "text", "text": TOOL_RESULT_IMAGE_TEXT})];
        content.append(pending);
        wire.push(json!({"role": "user", "content": content}));
    };
    for message in messages {
        let blocks = items(prop(message, "content"));
        match prop(message, "role").and_then(Value::as_str) {
            Some("system") => {
                flush(&mut wire, &mut pending_images);
                wire.push(json!({"role": "system", "content": flatten_text(blocks)}));
            }
            Some("assistant") => {
                flush(&mut wire, &mut pending_images);
                wire.push(serialize_assistant(blocks));
            }
            _ => {
                let (results, regular): (Vec<Value>, Vec<Value>) = blocks
                    .iter()
                    .cloned()
                    .partition(|block| block_type(block) == Some("tool-result"));
                let content = user_content(content_parts(&regular, attachments)?);
                if !content_is_empty(&content) || results.is_empty() {
                    flush(&mut wire, &mut pending_images);
                    wire.push(object([("role", json!("user")), ("content", content)]));
                }
                for result in &results {
                    let parts = content_parts(items(prop(result, "content")), attachments)?;
                    let (images, texts): (Vec<Value>, Vec<Value>) =
                        parts.into_iter().partition(is_image_part);
                    let text: String = texts
                        .iter()
                        .map(|part| join_element_text(part.get("text")))
                        .collect();
                    let text = match (text.is_empty(), images.is_empty()) {
                        (false, _) => text,
                        (true, false) => "(see attached image)".to_owned(),
                        (true, true) => "(no output)".to_owned(),
                    };
                    let mut tool = Map::new();
                    tool.insert("role".into(), json!("tool"));
                    insert_defined(&mut tool, "tool_call_id", prop(result, "toolCallId"));
                    tool.insert("content".into(), json!(text));
                    wire.push(Value::Object(tool));
                    pending_images.extend(images);
                }
            }
        }
    }
    flush(&mut wire, &mut pending_images);
    Ok(wire)
}
